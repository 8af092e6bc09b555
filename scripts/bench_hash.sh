#!/usr/bin/env bash
# Hashing throughput of the C++ reference against the independent numpy
# implementation (conformance/crosscheck/numpy_hash.py), both through the
# shipped V4.1 layout (2 layers, max n-gram 4, 8 heads, V = 99092) on the same
# number of random compressed ids. Ratios, not absolute figures.
#
# Usage: scripts/bench_hash.sh [N]            (default N = 1000000)
#        ENGRAM_BIN=path/to/engram scripts/bench_hash.sh [N]
#        PYTHON=python3 (the interpreter with numpy and sympy)
set -euo pipefail

N="${1:-1000000}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ENGRAM_BIN:-$ROOT/build/release/conformance/engram}"
PY="${PYTHON:-python3}"

if [[ ! -x "$BIN" ]]; then
  echo "bench_hash.sh: no engram binary at $BIN (build the release preset or set ENGRAM_BIN)" >&2
  exit 1
fi

cpp_json="$("$BIN" bench hash --tokens "$N")"
numpy_json="$("$PY" "$ROOT/conformance/crosscheck/numpy_hash.py" --bench "$N")"

"$PY" - "$N" "$cpp_json" "$numpy_json" <<'PY'
import json
import sys

n = int(sys.argv[1])
cpp = json.loads(sys.argv[2])
npy = json.loads(sys.argv[3])
c = float(cpp["tokens_per_second"])
p = float(npy["numpy_tokens_per_second"])
print(json.dumps({
    "tokens": n,
    "cpp_tokens_per_second": c,
    "numpy_tokens_per_second": p,
    "ratio_cpp_over_numpy": c / p if p > 0 else None,
    "cpp": cpp,
    "numpy": npy,
}, indent=2))
print(f"C++ reference: {c:,.0f} tokens/s", file=sys.stderr)
for k in ("published", "rolling", "chunked"):
    v = float(npy[k + "_tokens_per_second"])
    print(f"  numpy {k:9s}: {v:13,.0f} tokens/s   ratio C++/numpy: {c / v:5.2f}x", file=sys.stderr)
PY
