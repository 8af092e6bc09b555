#!/usr/bin/env python3
"""Held-out probes of the Python API's argument checks: a list kept out of python/tests/test_validation.py.

The tests' own table (test_validation.PROBES) was written beside the code; this one was written apart from it
and is run as a separate check, so that it says whether the rules hold beyond the cases they were written for.
Each probe must raise TypeError (a wrong Python type) or engram.Error (a value the rule refuses) whose message
names the argument, never nanobind's "incompatible function arguments", never a silent result.

    python scripts/python_probes.py      # with the package installed; exit 1 when a probe is not refused
"""
import sys

import numpy as np

import engram_conformance as engram
LAY = engram.Layout("v4.1")
U16 = np.zeros(8, dtype=np.uint16)
PARAMS = dict(hc=1, hidden=2, **{"in": 2}, kernel=2, dilation=1, key_w=np.ones((1, 2, 2)), key_b=np.zeros((1, 2)),
              norm1_w=np.ones((1, 2)), norm2_w=np.ones((1, 2)), value_w=np.ones((2, 2)), value_b=np.zeros(2),
              conv_norm_w=np.ones((1, 2)), conv_w=np.ones((2, 2)))
E, T = engram.Error, TypeError


def p(**kw):
    return dict(PARAMS, **kw)


# (name the message must contain, call, the exception type)
PROBES = [
    ("compressed_vocab_size", lambda: engram.Layout("demo-v1", compressed_vocab_size=[99092]), T),
    ("18446744073709551615", lambda: engram.Layout("v4.1", compressed_vocab_size=np.uint64(2**64 - 1)), E),
    ("compressed_pad", lambda: engram.Layout("v4.1", compressed_pad="2.0"), E),
    ("compressed_pad", lambda: engram.Layout("v4.1", compressed_pad=np.float32(2)), T),
    ("config", lambda: engram.Layout(None), T),
    ("profile", lambda: engram.Layout("v4.1", profile=b"v4.1"), T),
    ("ids", lambda: engram.hash(LAY, np.array([1, 2], dtype=np.float16)), T),
    ("9223372036854775808", lambda: engram.hash(LAY, np.array([2**63], dtype=np.uint64)), E),
    ("ids", lambda: engram.hash(LAY, [None]), T),
    ("ids", lambda: engram.hash(LAY, [[1]]), E),
    ("ids", lambda: engram.hash(LAY, np.array([1 + 0j])), T),
    ("ids", lambda: engram.hash(LAY, {"a": 1}), T),
    ("ids", lambda: engram.hash(LAY, b"\x01\x02"), T),
    ("out", lambda: engram.hash(LAY, [1], out=[[[0] * 24] * 2]), T),
    ("out", lambda: engram.hash(LAY, [1], out=np.zeros((1, 2, 24), dtype=np.uint64)), T),
    ("ids", lambda: engram.hash(LAY, np.ma.masked_array([1, 2])), T),
    ("rollback_capacity", lambda: engram.HashState(LAY, "2.5"), E),
    ("rollback_capacity", lambda: engram.HashState(LAY, np.bool_(True)), T),
    ("k", lambda: engram.HashState(LAY).rollback(-1), E),
    ("18446744073709551616", lambda: engram.HashState(LAY).rollback(2**64), E),
    ("ids", lambda: engram.HashState(LAY).append([1.0]), T),
    ("ids", lambda: engram.HashState(LAY).append(np.array([2**63], dtype=np.uint64)), E),
    ("codes", lambda: engram.decode_rows(np.full(32, 255.0, dtype=np.float32), [1]), T),
    ("scales", lambda: engram.decode_rows([1] * 32, [-1]), E),
    ("codes", lambda: engram.decode_rows([True] * 32, [1]), T),
    ("codes", lambda: engram.decode_rows(np.zeros(32, dtype=np.uint16) + 300, [1]), E),
    ("codes", lambda: engram.decode_rows("abc", [1]), T),
    ("world", lambda: engram.tp_shard(100, True), T),
    ("rank", lambda: engram.tp_shard(100, 4, -1), E),
    ("rank", lambda: engram.tp_shard(100, 4, 1.0), T),
    ("rows", lambda: engram.tp_shard(2**62 + 1, 4), E),
    ("rows", lambda: engram.tp_shard(None, 4), T),
    ("rank", lambda: engram.head_shard(24, 2, 2), E),
    ("columns", lambda: engram.head_shard(24.0, 2, 0), T),
    ("dot", lambda: engram.gate_v41(None), T),
    ("dot", lambda: engram.gate_v41(10**400), E),
    ("precision", lambda: engram.gate_demo(0.5, "float"), E),
    ("h", lambda: engram.fuse_v41_stream(np.ones(8, dtype=np.float32), U16, U16, U16, U16, 1e-6), T),
    ("k_weight", lambda: engram.fuse_v41_stream(U16, U16, U16, U16, [65536] * 8, 1e-6), E),
    ("eps", lambda: engram.fuse_v41_stream(U16, U16, U16, U16, U16, float("inf")), E),
    ("masked", lambda: engram.fuse_v41_stream(U16, U16, U16, U16, U16, 1e-6, masked="yes"), T),
    ("precision", lambda: engram.fuse_v41_stream(U16, U16, U16, U16, U16, 1e-6, precision=None), T),
    ("h", lambda: engram.fuse_v41_stream(np.zeros(8, dtype=np.uint8), U16, U16, U16, U16, 1e-6), T),
    ("hc", lambda: engram.DemoParams(**p(hc="1.0")), E),
    ("dilation", lambda: engram.DemoParams(**p(dilation=-1)), E),
    ("conv_w", lambda: engram.DemoParams(**p(conv_w=np.ma.ones((2, 2)))), T),
    ("precision", lambda: engram.short_conv(np.zeros((1, 2)), PARAMS, precision="f64"), E),
    ("value", lambda: engram.short_conv([["x", "y"]], PARAMS), T),
    ("hidden", lambda: engram.demo_forward(np.zeros((1, 2)), "hidden", PARAMS), T),
    ("position", lambda: engram.explain(LAY, [1, 2], position=-1), E),
    ("position", lambda: engram.explain(LAY, [1, 2], position=True), T),
    ("ids", lambda: engram.explain(LAY, np.ones(2, dtype=bool)), T),
    ("n", lambda: engram.random_cases("hash_v41", 1, 3.0), T),
    ("seed", lambda: engram.random_cases("hash_v41", 2**63, 3), E),
    ("suite", lambda: engram.random_cases(5, 1, 3), T),
    ("tokenizer_json", lambda: engram.token_map(None), T),
    ("/", lambda: engram.token_map("/"), E),
    ("compressedVocabSize", lambda: engram.Layout.from_group({"config": "v4.1"}), E),
    ("history", lambda: engram.HashState.import_(LAY, {"position": "x"}), E),
]


def main() -> int:
    bad = 0
    for i, (name, call, exc) in enumerate(PROBES, 1):
        try:
            result = call()
        except Exception as e:  # noqa: BLE001 - what was raised is the point
            ok = type(e) is exc and name in str(e) and "incompatible function arguments" not in str(e)
            what = f"{type(e).__name__}: {str(e)[:110]}"
        else:
            ok, what = False, f"no error: returned {str(result)[:80]!r}"
        bad += not ok
        print(f"{'ok  ' if ok else 'MISS'} {i:2d} want {exc.__name__} naming {name!r}: {what}")
    print(f"python probes (held out): {len(PROBES) - bad} refused as expected, {bad} not, of {len(PROBES)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
