#!/usr/bin/env python3
"""Cross-check data for spec/random.md (§RNG.1-§RNG.4), produced by numpy itself.

numpy is the oracle for the multipliers Engram draws:
    np.random.default_rng(seed + 10007 * layer_id).integers(0, bound, size=max_ngram, dtype=np.int64)
This script draws many (seed, layer_id, V) cases and many direct
Generator.integers(low, high) cases, deterministically from a fixed seed, and
writes numpy's answers to a JSON file:

    {"numpy_version": "...",
     "multipliers": [{"seed", "layer_id", "V", "max_ngram", "values": [...]}],
     "integers":    [{"seed", "low", "high", "n", "values": [...]}]}

The C++ test NumpyCrosscheck.FileIfPresent (reference/random_test.cc) reads the
file named by the environment variable ENGRAM_NUMPY_CROSSCHECK and asserts that
the reference reproduces every value.

Coverage of the bounded-integer paths (§RNG.3, rng = high - 1 - low):
  * rng == 0           constant       -> multipliers with V >= 2^62 (bound 1), integers(k, k+1)
  * rng <  2^32 - 1    Lemire 32-bit  -> multipliers with 2^30 <= V < 2^62, integers with small widths
  * rng == 2^32 - 1    masked 32-bit  -> integers(low, low + 2^32) only: bound = 2^32 needs
                                         (2^63-1) // (2V) == 2^32, which no integer V satisfies
  * rng == 2^64 - 1    raw 64-bit     -> integers(-2^63, 2^63) only (high 2^63 is a JSON number > INT64_MAX)
  * otherwise          Lemire 64-bit  -> multipliers with V < 2^30, integers with wide ranges

Usage: numpy_multipliers.py --out FILE [--cases N] [--seed S]
"""

import argparse
import json
import random

import numpy as np

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
LAYER_STRIDE = 10007  # §RNG.4


def multiplier_bound(v):
    """§RNG.4 bound = max(1, (INT64_MAX // V) // 2)."""
    return max(1, (INT64_MAX // v) // 2)


def numpy_multipliers(seed, layer_id, v, max_ngram):
    """§RNG.4 exactly as Engram computes them, with numpy."""
    rng = np.random.default_rng(seed + LAYER_STRIDE * layer_id)
    r = rng.integers(0, multiplier_bound(v), size=max_ngram, dtype=np.int64)
    return [int(2 * int(x) + 1) for x in r]


def numpy_integers(seed, low, high, n):
    """§RNG.3 Generator.integers(low, high, size=n, dtype=int64), endpoint=False."""
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.integers(low, high, size=n, dtype=np.int64)]


def path_of(rng):
    """§RNG.3 the path numpy takes for inclusive width minus one `rng`."""
    if rng == 0:
        return "constant"
    if rng < 2**32 - 1:
        return "lemire32"
    if rng == 2**32 - 1:
        return "masked32"
    if rng == 2**64 - 1:
        return "raw64"
    return "lemire64"


def multiplier_cases(r, count):
    """(seed, layer_id, V, max_ngram) tuples: fixed edge cases, then random ones."""
    cases = [
        (0, 1, 99092, 4),  # the published V4.1 layer 1
        (0, 14, 99092, 4),  # the published V4.1 layer 14
        (0, 0, 1, 4),  # largest bound, 2^62 - 1
        (7, 3, 2**62, 4),  # bound 1: constant path
        (7, 3, INT64_MAX, 4),  # bound 1: constant path
        (5, 2, 2**30 - 1, 6),  # bound 2^32 + 4: Lemire 64 just above the 32-bit range
        (5, 2, 2**30, 6),  # bound 2^32 - 1: Lemire 32 at its upper edge
        (5, 2, 2**30 + 1, 6),  # Lemire 32
        (2**62, 3, 99092, 3),  # layer seed above 2^62
        (INT64_MAX - 10007 * 5, 5, 12345, 2),  # layer seed exactly INT64_MAX
        (INT64_MAX, 7, 12345, 2),  # layer seed above INT64_MAX (still a uint64)
    ]
    while len(cases) < count:
        kind = r.randrange(4)
        if kind == 0:  # Lemire 64: typical vocabulary sizes
            v = r.randrange(1, 2**30)
        elif kind == 1:  # Lemire 32: bound below 2^32 (log-uniform, or most would land on bound 1)
            v = min(2**62 - 1, max(2**30, int(2 ** r.uniform(30, 62))))
        elif kind == 2:  # constant: bound 1
            v = r.randrange(2**62, INT64_MAX + 1)
        else:  # log-uniform over the whole range
            v = max(1, int(2 ** r.uniform(0, 63)) % (INT64_MAX + 1))
        seed = r.choice([0, r.randrange(0, 1000), r.randrange(0, 2**32), r.randrange(0, 2**62)])
        layer_id = r.randrange(0, 64)
        max_ngram = r.randrange(1, 9)
        cases.append((seed, layer_id, v, max_ngram))
    return cases


def integer_cases(r, count):
    """(seed, low, high, n) tuples covering every §RNG.3 path."""
    cases = [
        (3, -7, -6, 3),  # constant
        (5, 0, 1000, 8),  # Lemire 32
        (7, -5, 2**32 - 5, 6),  # masked 32
        (7, 0, 2**32, 6),  # masked 32
        (9, INT64_MIN, 2**63, 4),  # raw 64 (high = 2^63)
        (11, 0, 2**32 + 1, 5),  # Lemire 64 just above the 32-bit range
        (13, INT64_MIN, INT64_MAX, 5),  # Lemire 64, rng = 2^64 - 2
        (13, INT64_MIN + 1, 2**63, 5),  # Lemire 64, rng = 2^64 - 2 via high = 2^63
        (17, 0, 2**63, 5),  # Lemire 64, high = 2^63
        (19, 0, 3, 50),  # Lemire 32, many rejections possible
        (23, 0, 2**32 - 1, 7),  # Lemire 32 at its upper edge (rng = 2^32 - 2)
    ]
    while len(cases) < count:
        seed = r.randrange(0, 2**63)
        n = r.randrange(1, 12)
        kind = r.randrange(5)
        if kind == 0:  # constant
            low = r.randrange(INT64_MIN, INT64_MAX)
            high = low + 1
        elif kind == 1:  # Lemire 32
            width = r.randrange(2, 2**32)
            low = r.randrange(INT64_MIN, 2**63 - width + 1)
            high = low + width
        elif kind == 2:  # masked 32
            low = r.randrange(INT64_MIN, 2**63 - 2**32 + 1)
            high = low + 2**32
        elif kind == 3:  # raw 64
            low, high = INT64_MIN, 2**63
        else:  # Lemire 64
            width = r.randrange(2**32 + 1, 2**64)
            low = r.randrange(INT64_MIN, 2**63 - width + 1)
            high = low + width
        cases.append((seed, low, high, n))
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--cases", type=int, default=1000, help="cases of each kind (default 1000)")
    parser.add_argument("--seed", type=int, default=20240101, help="seed for choosing the cases")
    args = parser.parse_args()

    r = random.Random(args.seed)
    multipliers = []
    for seed, layer_id, v, max_ngram in multiplier_cases(r, args.cases):
        values = numpy_multipliers(seed, layer_id, v, max_ngram)
        multipliers.append({"seed": seed, "layer_id": layer_id, "V": v, "max_ngram": max_ngram, "values": values})

    integers = []
    path_counts = {}
    for seed, low, high, n in integer_cases(r, args.cases):
        path = path_of(high - 1 - low)
        path_counts[path] = path_counts.get(path, 0) + 1
        integers.append({"seed": seed, "low": low, "high": high, "n": n, "values": numpy_integers(seed, low, high, n)})
    for m in multipliers:
        path = path_of(multiplier_bound(m["V"]) - 1)
        path_counts["multipliers/" + path] = path_counts.get("multipliers/" + path, 0) + 1

    # Every path must be exercised, or the file checks less than it claims.
    for path in ["constant", "lemire32", "masked32", "raw64", "lemire64"]:
        assert path_counts.get(path, 0) > 0, path
    for path in ["constant", "lemire32", "lemire64"]:
        assert path_counts.get("multipliers/" + path, 0) > 0, path

    with open(args.out, "w") as f:
        json.dump({"numpy_version": np.__version__, "multipliers": multipliers, "integers": integers}, f)
    print(f"wrote {args.out}: {len(multipliers)} multiplier cases, {len(integers)} integer cases "
          f"(numpy {np.__version__}); paths: {dict(sorted(path_counts.items()))}")


if __name__ == "__main__":
    main()
