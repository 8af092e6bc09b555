#!/usr/bin/env python3
"""engram.hash in-process vs the numpy implementation vs `engram bench hash`, in one run (docs/python.md).

    python scripts/bench_python.py --engram build/release/conformance/engram [--tokens 1000000] [--reps 9]

Hashes --tokens random compressed ids through the DeepSeek-V4.1-Flash layout (2 layers, 24 columns) the way
`engram bench hash` does: 65536 positions per call into a reused output buffer, one HashState (chunked); also
the whole sequence in one engram.hash call into a fresh array (one call). The CLI and the in-process runs
alternate, --reps times each, so that a loaded machine slows both alike; the ratios are of the medians, and the
median of the per-repetition ratios is given beside them. The numpy side is
conformance/crosscheck/numpy_hash.py --bench (its three variants; needs sympy). Then the binding overhead per
call for T = 1 (a decode step): engram.hash(layout, one id) and HashState.append(one id, out), the median of
repeated timings. Prints one JSON object with the ratios. A benchmark, not a timed test: the goals (>= 90% of
`engram bench hash`, < 5 us per call) are reported, never asserted.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import engram_conformance as engram
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHUNK = 65536


def splitmix_ids(n, v):
    """The ids `engram bench hash` draws (SplitMix64 from 0x5EED, mod V), so both sides hash the same ids."""
    state = 0x5EED
    out = np.empty(n, dtype=np.uint64)
    # vectorised SplitMix64: state_k = seed + k * gamma
    k = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(state) + k * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    out[:] = z % np.uint64(v)
    return out.astype(np.int64)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engram", required=True, help="the engram CLI (build/release/conformance/engram)")
    ap.add_argument("--tokens", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=9, help="alternating repetitions of each side (default 9)")
    ap.add_argument("--numpy-python", default=sys.executable,
                    help="the Python that runs numpy_hash.py --bench (needs numpy and sympy)")
    args = ap.parse_args()
    n = args.tokens
    layout = engram.Layout("v4.1")
    ids = splitmix_ids(n, layout.compressed_vocab_size)

    # In-process, chunked as the CLI: one state, 65536 ids per call into a reused buffer.
    out = np.empty((CHUNK, 2, layout.columns), dtype=np.int64)
    def chunked():
        s = engram.HashState(layout)
        for at in range(0, n, CHUNK):
            part = ids[at:at + CHUNK]
            s.append(part, out[:len(part)])
    chunked()  # the output buffer's pages, as the CLI's are before its timer starts

    # Alternating: the CLI (its own timer, the hashing calls only), then the same work in-process.
    cli_tps, chunked_tps, whole_tps = [], [], []
    for _ in range(args.reps):
        r = subprocess.run([args.engram, "bench", "hash", "--tokens", str(n), "--chunk", str(CHUNK)], check=True,
                           capture_output=True, text=True)
        cli_tps.append(json.loads(r.stdout)["tokens_per_second"])
        chunked_tps.append(n / timed(chunked))
        whole_tps.append(n / timed(lambda: engram.hash(layout, ids)))
    # numpy, the same algorithm (conformance/crosscheck/numpy_hash.py --bench)
    numpy_result = None
    try:
        r = subprocess.run([args.numpy_python, os.path.join(ROOT, "conformance/crosscheck/numpy_hash.py"), "--bench",
                            str(n)], check=True, capture_output=True, text=True)
        numpy_result = json.loads(r.stdout)
    except (subprocess.CalledProcessError, OSError, ValueError) as e:
        numpy_result = {"error": str(e)}

    # Per-call overhead for T = 1.
    one = np.array([12345], dtype=np.int64)
    out1 = np.empty((1, 2, layout.columns), dtype=np.int64)
    state = engram.HashState(layout, rollback_capacity=0)

    def per_call(fn, calls=20000):
        samples = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            samples.append((time.perf_counter() - t0) / calls * 1e6)
        return sorted(samples)[len(samples) // 2]
    us_hash = per_call(lambda: engram.hash(layout, one))
    us_append = per_call(lambda: state.append(one, out1))
    us_core = per_call(lambda: engram._core.hash(layout, one, None))

    med = statistics.median
    tps_chunked, tps_whole, tps_cli = med(chunked_tps), med(whole_tps), med(cli_tps)
    result = {
        "tokens": n,
        "reps": args.reps,
        "cli_bench_hash_tokens_per_second": tps_cli,
        "in_process_chunked_tokens_per_second": tps_chunked,
        "in_process_one_call_tokens_per_second": tps_whole,
        "ratio_in_process_chunked_to_cli": tps_chunked / tps_cli,
        "ratio_in_process_one_call_to_cli": tps_whole / tps_cli,
        "median_of_ratios_in_process_chunked_to_cli": med([a / b for a, b in zip(chunked_tps, cli_tps)]),
        "per_call_us_T1": {"engram.hash": us_hash, "HashState.append(out=)": us_append, "_core.hash": us_core},
        "goals": {"throughput >= 0.9 x cli": tps_chunked / tps_cli >= 0.9, "per call < 5 us": us_append < 5},
    }
    if numpy_result and "error" not in numpy_result:
        for name in ("published", "rolling", "chunked"):
            key = next((k for k in numpy_result if k.startswith(name) and "per_second" in k), None)
            if key:
                result[f"numpy_{name}_tokens_per_second"] = numpy_result[key]
                result[f"ratio_in_process_chunked_to_numpy_{name}"] = tps_chunked / numpy_result[key]
    else:
        result["numpy"] = numpy_result
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
