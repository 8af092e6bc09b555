#!/usr/bin/env python3
"""ctest `ports.portlib.identity_map`: the token map the Python adapters hand a port that maps raw ids itself
(engram_adapter.portlib.identity_map; conformance/python on PYTHONPATH), checked on its laws without any port:
the whole identity up to IDENTITY_FULL_MAX ids; beyond, the prefix the ids need plus one pad entry;
`unsupported` for an id >= V, and for an id at or above IDENTITY_PREFIX_MAX (a dense int64 map that long took
the official code's adapters into crashes and timeouts in the full run of 2026-12-03)."""
import sys

from engram_adapter.portlib import IDENTITY_FULL_MAX, IDENTITY_PREFIX_MAX, Unsupported, identity_map


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
    failed = [what for ok, what in checks if not ok]
    for what in failed:
        print("FAIL:", what)
    print(f"portlib identity_map: {len(checks) - len(failed)} of {len(checks)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
