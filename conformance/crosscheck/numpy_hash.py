#!/usr/bin/env python3
"""Cross-check data for spec/hash.md (§HASH.2-§HASH.4) and spec/layout.md (§LAY.2-§LAY.4),
computed by an independent numpy implementation.

This file is written from DeepSeek's code as read (spec/sources.md [SRC-V41], [SRC-DEMO]) in the array style of the
published Python programs, NOT translated from reference/hash.cc:
  * multipliers: np.random.default_rng(seed + 10007 * layer_id).integers(0, bound,
    size=max_ngram, dtype=np.int64) * 2 + 1, bound = max(1, (INT64_MAX // V) // 2)  (§RNG.4)
  * primes: find_next_prime(start, seen) with sympy.isprime, `seen` spanning all layers (§LAY.2)
  * demo-v1: shifted copies of the id array made with np.pad(constant=pad), then
    mix = t0*m0 ^ t1*m1 ^ ..., row = mix % p + offset (numpy int64: products wrap silently,
    `%` is floor-mod so every residue is in [0, p))
  * v4.1: the same, but slot k reads pad when the cumulative mask
    blocked_k = blocked_{k-1} | (pos < k) | (shift_k == DEAD) is set.

Modes
  --out FILE     write {"numpy_version", "sympy_version", "cases": [{"profile", "config",
                 "compressed_vocab_size", "compressed_pad", "ids", "rows"}]} where rows is
                 [position][layer][column] and "config" is a JSON object that the C++
                 ParseConfig accepts. Read by NumpyCrosscheck.HashFileIfPresent
                 (reference/hash_test.cc) through the environment variable
                 ENGRAM_NUMPY_HASH_CROSSCHECK.
  --bench N      time this numpy implementation hashing N random compressed ids (V = 99092)
                 through the real V4.1 layout (2 layers, max 4, 8 heads); best of 3; prints
                 {"numpy_tokens_per_second": ...}.

Usage: numpy_hash.py --out FILE [--cases N] [--seed S]
       numpy_hash.py --bench N
"""

import argparse
import json
import random
import sys
import time
import warnings

import numpy as np
import sympy
from sympy import isprime

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
DEAD = -1
LAYER_STRIDE = 10007

# The shipped DeepSeek-V4.1-Flash inference config.json (spec/sources.md [SRC-V41-CONFIG]).
V41_FLASH = {
    "engram_layer_ids": [1, 14],
    "engram_vocab_size": 16000000,
    "engram_num_embeddings": [384006168, 384016682],
    "engram_max_ngram_size": 4,
    "engram_n_heads": 8,
    "engram_head_dim": 256,
    "engram_pad_id": 2,
    "engram_compressed_vocab_size": 99092,
    "dim": 5120,
    "hc_mult": 4,
    "norm_eps": 1e-20,
    "vocab_size": 129280,
}
V41_V = 99092
V41_PAD = 2


# ---------------------------------------------------------------------------
# Layout (§RNG.4, §LAY.2, §LAY.3)
# ---------------------------------------------------------------------------


def find_next_prime(start, seen_primes):
    """The smallest candidate > start that sympy says is prime and that is not taken yet."""
    candidate = start + 1
    while True:
        if isprime(candidate) and candidate not in seen_primes:
            return candidate
        candidate += 1


def build_layout(layer_ids, max_ngram, heads, bases, seed, vocab):
    """Returns [(layer_id, multipliers np.int64[max_ngram], primes [order][head], offsets [col])]."""
    bound = max(1, (INT64_MAX // vocab) // 2)
    seen = set()
    layers = []
    for layer_id in layer_ids:
        rng = np.random.default_rng(seed + LAYER_STRIDE * layer_id)
        r = rng.integers(0, bound, size=max_ngram, dtype=np.int64)
        mult = r * 2 + 1  # bound <= 2^62 - 1, so 2r+1 < 2^63: no wrap
        primes = []
        for n in range(2, max_ngram + 1):
            start = bases[n - 2] - 1
            heads_primes = []
            for _ in range(heads):
                p = find_next_prime(start, seen)
                seen.add(p)
                heads_primes.append(p)
                start = p
            primes.append(heads_primes)
        flat = [p for order in primes for p in order]
        offsets = np.concatenate([[0], np.cumsum(np.array(flat, dtype=np.int64))[:-1]]).astype(np.int64)
        layers.append((layer_id, mult.astype(np.int64), primes, offsets, int(sum(flat))))
    return layers


# ---------------------------------------------------------------------------
# Hash (§HASH.2-§HASH.4), one sequence at a time as a [1, T] batch
# ---------------------------------------------------------------------------


def shifted_copies(x, max_ngram, fill):
    """shift_k(x)[:, t] = x[:, t-k], the first k columns = fill (the published np.pad idiom)."""
    _, t = x.shape
    out = [x]
    for k in range(1, max_ngram):
        out.append(np.pad(x, ((0, 0), (k, 0)), mode="constant", constant_values=fill)[:, :t])
    return out


def window_tokens(x, profile, max_ngram, pad):
    """The max_ngram token arrays the hash reads, after padding / blocking."""
    if profile == "demo-v1":
        return shifted_copies(x, max_ngram, pad)
    # v4.1: cumulative blocking mask over the shifts.
    _, t = x.shape
    pos = np.arange(t, dtype=np.int64)[None, :]
    raw = shifted_copies(x, max_ngram, pad)
    blocked = np.zeros(x.shape, dtype=bool)
    tokens = []
    for k in range(max_ngram):
        blocked = blocked | (pos < k) | (raw[k] == DEAD)
        tokens.append(np.where(blocked, np.int64(pad), raw[k]))
    return tokens


def hash_rows(ids, profile, pad, layers, max_ngram, heads):
    """rows[t][layer][col] as a numpy int64 array of shape [T, L, C]."""
    x = np.asarray(ids, dtype=np.int64).reshape(1, -1)
    t = x.shape[1]
    cols = (max_ngram - 1) * heads
    out = np.zeros((t, len(layers), cols), dtype=np.int64)
    if t == 0:
        return out
    tokens = window_tokens(x, profile, max_ngram, pad)
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for li, (_, mult, primes, offsets, _) in enumerate(layers):
            col_hashes = []
            for n in range(2, max_ngram + 1):
                mix = tokens[0] * mult[0]
                for k in range(1, n):
                    mix = np.bitwise_xor(mix, tokens[k] * mult[k])
                for p in primes[n - 2]:
                    col_hashes.append(mix % np.int64(p))
            stacked = np.stack(col_hashes, axis=2)[0]  # [T, C]
            out[:, li, :] = stacked + offsets[None, :]
    return out


# ---------------------------------------------------------------------------
# Random cases
# ---------------------------------------------------------------------------


def random_case(r, profile):
    max_ngram = r.choice([2, 2, 3, 3, 3, 4, 4, 5, 6])
    heads = r.choice([1, 1, 2, 3, 4, 8])
    n_layers = r.choice([1, 1, 2, 3])
    layer_ids = r.sample(range(0, 64), n_layers)
    if r.random() < 0.1:
        layer_ids[0] = r.randrange(0, 10**9)
    # Vocabulary: mostly small (collisions), sometimes the real one, sometimes huge (tiny bound).
    vocab = r.choice([1, 2, 3, 5, 17, 100, 1000, 99092, r.randrange(1, 10**6), 2**31 + 11, 2**62, INT64_MAX])
    if r.random() < 0.7:
        vocab = r.randrange(1, 200)
    pad = r.randrange(0, min(vocab, 50))
    # Small bases so collisions happen; some larger.
    def a_base():
        c = r.random()
        if c < 0.6:
            return r.randrange(2, 40)
        if c < 0.9:
            return r.randrange(2, 100000)
        return r.randrange(10**9, 10**12)

    length = r.choice([0, 1, 2, 3, 5, 8, 13, 21, 34, 40])

    if profile == "v4.1":
        base = a_base()
        bases = [base] * (max_ngram - 1)
        seed = 0
        ids = []
        for _ in range(length):
            c = r.random()
            if c < 0.2:
                ids.append(DEAD)
            elif c < 0.3:
                ids.append(pad)
            else:
                ids.append(r.randrange(0, vocab) if vocab < 2**62 else r.choice([0, 1, vocab - 1, r.randrange(0, 2**62)]))
        layers = build_layout(layer_ids, max_ngram, heads, bases, seed, vocab)
        config = {
            "engram_layer_ids": layer_ids,
            "engram_vocab_size": base,
            "engram_max_ngram_size": max_ngram,
            "engram_n_heads": heads,
            "engram_head_dim": 4,
            "engram_pad_id": pad,
            "engram_compressed_vocab_size": vocab,
            # From this script's own prime sums: also cross-checks §LAY.4 in the C++ reference.
            "engram_num_embeddings": [layer[4] for layer in layers],
        }
        if r.random() < 0.3:  # the HF shape: keys under text_config
            config = {"text_config": config, "model_type": "deepseek_v4"}
    else:
        bases = [a_base() for _ in range(max_ngram - 1)]
        seed = r.choice([0, 0, 1, 7, r.randrange(0, 2**31)])
        ids = []
        for _ in range(length):
            c = r.random()
            if c < 0.15:
                ids.append(r.randrange(-5, 0))
            elif c < 0.25:
                ids.append(r.randrange(INT64_MIN, -(2**40)))  # products wrap
            elif c < 0.3:
                ids.append(r.choice([INT64_MIN, INT64_MIN + 1, -(2**62), -(2**62) - 1, -(2**62) + 1]))
            elif c < 0.4:
                ids.append(pad)
            else:
                ids.append(r.randrange(0, vocab) if vocab < 2**62 else r.choice([0, vocab - 1, r.randrange(0, 2**62)]))
        layers = build_layout(layer_ids, max_ngram, heads, bases, seed, vocab)
        config = {
            "layer_ids": layer_ids,
            "max_ngram_size": max_ngram,
            "n_head_per_ngram": heads,
            "n_embed_per_ngram": heads * 2,
            "engram_vocab_size": bases,
            "pad_id": pad,
            "seed": seed,
        }
    rows = hash_rows(ids, profile, pad, layers, max_ngram, heads)
    return {
        "profile": profile,
        "config": config,
        "compressed_vocab_size": vocab,
        "compressed_pad": pad,
        "ids": ids,
        "rows": rows.tolist(),
    }


def v41_flash_case(r, length, dead_rate):
    layers = build_layout([1, 14], 4, 8, [16000000] * 3, 0, V41_V)
    sums = [layer[4] for layer in layers]
    assert sums == V41_FLASH["engram_num_embeddings"], sums
    ids = [DEAD if r.random() < dead_rate else r.randrange(0, V41_V) for _ in range(length)]
    rows = hash_rows(ids, "v4.1", V41_PAD, layers, 4, 8)
    return {
        "profile": "v4.1",
        "config": dict(V41_FLASH),
        "compressed_vocab_size": V41_V,
        "compressed_pad": V41_PAD,
        "ids": ids,
        "rows": rows.tolist(),
    }


def demo_default_case(r, length):
    """engram_demo_v1.py defaults (bases 646400, layers [1, 15], max 3, 8 heads, seed 0), V = 99092."""
    layers = build_layout([1, 15], 3, 8, [646400, 646400], 0, V41_V)
    ids = [r.randrange(-3, V41_V) if r.random() < 0.9 else r.randrange(INT64_MIN, 0) for _ in range(length)]
    rows = hash_rows(ids, "demo-v1", V41_PAD, layers, 3, 8)
    return {
        "profile": "demo-v1",
        "config": {"layer_ids": [1, 15]},
        "compressed_vocab_size": V41_V,
        "compressed_pad": V41_PAD,
        "ids": ids,
        "rows": rows.tolist(),
    }


def make_cases(count, seed):
    r = random.Random(seed)
    cases = [
        v41_flash_case(r, 64, 0.0),
        v41_flash_case(r, 64, 0.2),
        v41_flash_case(r, 200, 0.05),
        demo_default_case(r, 64),
    ]
    while len(cases) < count:
        cases.append(random_case(r, "v4.1" if len(cases) % 2 == 0 else "demo-v1"))
    return cases


# ---------------------------------------------------------------------------
# Bench
# ---------------------------------------------------------------------------


def hash_rows_rolling(tokens, layers, max_ngram, heads, out):
    """The benchmark's numpy hash: same algorithm, but one rolling XOR per order (no recomputation)."""
    for li, (_, mult, primes, offsets, _) in enumerate(layers):
        mix = tokens[0] * mult[0]
        col = 0
        for n in range(2, max_ngram + 1):
            mix = np.bitwise_xor(mix, tokens[n - 1] * mult[n - 1])
            for p in primes[n - 2]:
                out[:, li, col] = mix[0] % np.int64(p) + offsets[col]
                col += 1
    return out


def bench(n, chunk=65536):
    """Time three numpy implementations of the same algorithm on n random ids (V4.1 layout), best of 3.

    published: hash_rows above, the array style of the published Python (shifted copies, every
    order's mix recomputed, per-head `%`, np.stack), the whole sequence at once;
    rolling:   one rolling XOR per order (as DeepSeek's v4.1 code does), the whole sequence at once;
    chunked:   rolling, `chunk` positions per call into a preallocated output (what `engram bench
               hash` does on the C++ side).
    """
    layers = build_layout([1, 14], 4, 8, [16000000] * 3, 0, V41_V)
    ids = np.random.default_rng(0x5EED).integers(0, V41_V, size=n, dtype=np.int64)

    def published():
        return hash_rows(ids, "v4.1", V41_PAD, layers, 4, 8)

    def rolling():
        x = ids.reshape(1, -1)
        out = np.empty((n, len(layers), 24), dtype=np.int64)
        return hash_rows_rolling(window_tokens(x, "v4.1", 4, V41_PAD), layers, 4, 8, out)

    def chunked():
        out = np.empty((min(chunk, n), len(layers), 24), dtype=np.int64)
        for at in range(0, n, chunk):
            x = ids[at:at + chunk].reshape(1, -1)
            # a fresh sequence per chunk keeps the numpy side simple; it only makes numpy's job easier
            hash_rows_rolling(window_tokens(x, "v4.1", 4, V41_PAD), layers, 4, 8, out[:x.shape[1]])
        return out

    result = {"numpy_version": np.__version__, "tokens": n, "layers": 2, "columns": 24, "chunk": chunk}
    for name, fn in (("published", published), ("rolling", rolling), ("chunked", chunked)):
        best = None
        for _ in range(3):
            t0 = time.perf_counter()
            rows = fn()
            elapsed = time.perf_counter() - t0
            del rows
            best = elapsed if best is None else min(best, elapsed)
        result[f"{name}_seconds"] = best
        result[f"{name}_tokens_per_second"] = n / best if best > 0 else float("inf")
    # The strongest numpy variant is the one the ratio is quoted against.
    result["numpy_tokens_per_second"] = max(result[f"{k}_tokens_per_second"] for k in ("published", "rolling", "chunked"))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the cross-check cases to this JSON file")
    ap.add_argument("--cases", type=int, default=240, help="number of cases (default 240)")
    ap.add_argument("--seed", type=int, default=20260509, help="case generator seed")
    ap.add_argument("--bench", type=int, metavar="N", help="time hashing N ids through the V4.1 layout")
    args = ap.parse_args()
    if args.bench is None and args.out is None:
        ap.error("give --out FILE or --bench N")
    if args.bench is not None:
        print(json.dumps(bench(args.bench)))
        return 0
    cases = make_cases(args.cases, args.seed)
    doc = {"numpy_version": np.__version__, "sympy_version": sympy.__version__, "cases": cases}
    with open(args.out, "w") as f:
        json.dump(doc, f)
    n_v41 = sum(1 for c in cases if c["profile"] == "v4.1")
    n_rows = sum(len(c["ids"]) for c in cases)
    print(f"wrote {len(cases)} cases ({n_v41} v4.1, {len(cases) - n_v41} demo-v1, {n_rows} positions) to {args.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
