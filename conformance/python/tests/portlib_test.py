#!/usr/bin/env python3
"""ctest `ports.portlib.identity_map` (named for its first check): what the Python adapters share
(engram_adapter.portlib, engram_adapter.torch_gate; conformance/python on PYTHONPATH), checked on its laws without
any port.

- identity_map, the token map handed to a port that maps raw ids itself: the whole identity up to
  IDENTITY_FULL_MAX ids; beyond, the prefix the ids need plus one pad entry; `unsupported` for an id >= V, and for
  an id at or above IDENTITY_PREFIX_MAX (a dense int64 map that long took the official code's adapters into crashes
  and timeouts in the full run of 2026-12-03).
- lookup_table, a lookup test's rows as the table a port holds: the distinct in-table rows' bytes in order of
  first use, and every row id outside the table still outside the port's table.
- torch_gate.stream_gates, the gate read off a port that returns only x + gate * value at every position (with
  torch, when it is installed)."""
import importlib.util
import sys

from engram_adapter.portlib import IDENTITY_FULL_MAX, IDENTITY_PREFIX_MAX, Unsupported, identity_map, lookup_table


def refused(v, ids, pad):
    try:
        identity_map(v, ids, pad)
    except Unsupported as e:
        return str(e)
    return None


def main():
    checks = [
        (identity_map(5, [0, 4], 4) == (5, 4), "V 5: the whole identity, the pad as given"),
        (identity_map(IDENTITY_FULL_MAX, [], 0) == (IDENTITY_FULL_MAX, 0), "V = IDENTITY_FULL_MAX: the whole identity"),
        (identity_map(1 << 30, [3, 7], (1 << 30) - 1) == (8, 8), "V 2^30: the prefix of 8 ids, then the pad entry"),
        (identity_map(1 << 30, [IDENTITY_PREFIX_MAX - 1], 0) == (IDENTITY_PREFIX_MAX, IDENTITY_PREFIX_MAX),
         "V 2^30: an id of IDENTITY_PREFIX_MAX - 1 still gets its prefix"),
        (refused(1 << 30, [1 << 30], 0) is not None, "an id >= V with a huge V: unsupported"),
        (refused(1 << 30, [IDENTITY_PREFIX_MAX], 0) is not None, "an id of IDENTITY_PREFIX_MAX: unsupported"),
        ("dense table" in (refused(1309193879, [1309193000], 0) or ""), "the refusal says why (the dense table)"),
    ]
    for module, more in (("numpy", lookup_checks), ("torch", gate_checks)):
        if importlib.util.find_spec(module) is not None:
            checks += more()
        else:
            print(f"note: no {module} here: {more.__name__} not run")
    failed = [what for ok, what in checks if not ok]
    for what in failed:
        print("FAIL:", what)
    print(f"portlib: {len(checks) - len(failed)} of {len(checks)} checks passed")
    return 1 if failed else 0


def synthetic(ids, rows=10):
    import engram_numpy_port
    table = {"layout": "synthetic", "seed": 7, "rows": rows, "headDim": 32}
    return lookup_table("SyntheticLookupTest", {"table": table}, {"rowIds": ids}, engram_numpy_port.table_of)


def lookup_checks():
    import engram_numpy_port
    d, raw, local = synthetic([5, 5, 0])
    codes, scales = engram_numpy_port.table_of({"layout": "synthetic", "seed": 7, "rows": 10, "headDim": 32}).raw([5, 0])
    _, _, outside = synthetic([0, 10, -1, 12])
    _, one, alone = synthetic([-3])
    try:
        lookup_table("PackedLookupTest", {"rows": 4, "headDim": 32}, {"rowIds": [4], "rowBytes": []}, None)
        given = None
    except Unsupported as e:
        given = str(e)
    return [
        (d == 32 and local == [0, 0, 1], "repeated ids: one row each, in order of first use"),
        (raw == [(codes[0].tobytes(), scales[0].tobytes()), (codes[1].tobytes(), scales[1].tobytes())],
         "the rows' bytes are the synthetic table's"),
        (outside == [0, 1, -1, 3], "ids outside the table stay outside it (10 -> 1, 12 -> 3, -1 as it is)"),
        (len(one) == 1 and alone == [-3], "only ids outside: a table of one row, the id still outside it"),
        (given is not None, "a row id outside the table with no bytes given: unsupported"),
    ]


def gate_checks():
    import torch
    from engram_adapter.torch_gate import stream_gates
    # [position][copy]; each gate well above 2^-40 |x| (the reading's resolution: gate * 2^s next to x)
    gates = torch.tensor([[0.25, 0.7311], [3e-5, 0.0]], dtype=torch.float32)
    x = torch.tensor([[[1.5, -2.0], [3e4, 0.5]], [[1e-3, 7.0], [float("nan"), 2.0]]], dtype=torch.float32)

    def port(xs, kv):  # x + gate * value, the value the kv's last two entries
        return xs + gates[:, :, None] * kv[:, None, -2:]
    got = stream_gates(port, x, torch.zeros((2, 4)), 2, 2, 2)
    want = [float(g) for g in gates.reshape(-1)]
    close = all(abs(float.fromhex(a) - b) <= 2.0 ** -22 * abs(b) for a, b in zip(got, want))

    def unreadable(xs):
        try:
            stream_gates(lambda a, kv: a, xs, torch.zeros((1, 2)), 2, 1, 2)
        except Unsupported as e:
            return str(e)
        return None
    return [
        (len(got) == 4 and close, f"the gates read off x + gate * value: {got} for {want}"),
        (unreadable(torch.full((1, 1, 2), float("inf"))) is not None, "a copy with no finite element: unsupported"),
        (unreadable(torch.full((1, 1, 2), 2.0 ** 100)) is not None, "|x| near the float32 range: unsupported"),
    ]


if __name__ == "__main__":
    sys.exit(main())
