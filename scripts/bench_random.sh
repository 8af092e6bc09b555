#!/usr/bin/env bash
# The reference side of randomized conformance (spec/conformance.md §CONF.7):
# how many cases per second the generators draw and compute (expected values
# included), per suite, and, for scale, a whole `engram conform --random` run
# against the in-tree reference plug-in and the example adapter (generation +
# protocol + comparison).
# Figures, not assertions: this machine is shared and noisy.
#
# Usage: scripts/bench_random.sh [N]            (default N = 20000 cases per suite)
#        ENGRAM_BIN=path/to/engram ENGRAM_PLUGIN=path/to/libengram_reference_plugin.so scripts/bench_random.sh
set -euo pipefail

N="${1:-20000}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ENGRAM_BIN:-$ROOT/build/release/conformance/engram}"
PLUGIN="${ENGRAM_PLUGIN:-$ROOT/build/release/conformance/libengram_reference_plugin.so}"
if [[ ! -x "$BIN" ]]; then
  echo "bench_random.sh: no engram binary at $BIN (build the release preset or set ENGRAM_BIN)" >&2
  exit 1
fi

printf '%-12s %10s %18s %22s %22s\n' suite cases "cases/s (1 thread)" "cases/s (T threads)" "cases/s (1, with JSON)"
for suite in multipliers layout hash_v41 hash_demo; do
  "$BIN" bench random --suite "$suite" --cases "$N" --seed 1 |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("%-12s %10d %18.0f %18.0f (%d) %22.0f" % (d["suite"], d["cases"], d["cases_per_second"], d["cases_per_second_threads"], d["threads"], d["cases_per_second_with_json"]))'
done

# End to end: `engram conform --random` through the C-ABI plug-in (drawing,
# the runner's pipeline to the plug-in host, the reference plug-in computing,
# comparison), and through the example adapter (a Python process). gate_v41
# and the adapter run N/10 cases: their cases cost ten times more.
e2e() {  # label, cases, conform arguments...
  local label=$1 n=$2
  shift 2
  local start end
  start=$(date +%s.%N)
  "$BIN" conform --vectors "$ROOT/vectors" "$@" --random "$n" --seed 1 --random-only >/dev/null 2>&1
  end=$(date +%s.%N)
  python3 -c "import sys; n=int(sys.argv[1]); s=float(sys.argv[3])-float(sys.argv[2]); print('conform --random %d %s (end to end): %.1f s, %.0f cases/s' % (n, sys.argv[4], s, n/s))" "$n" "$start" "$end" "$label"
}
if [[ -f "$PLUGIN" ]]; then
  for suite in hash_v41 hash_demo hash_state gate_v41; do
    n=$N
    [[ $suite == gate_v41 ]] && n=$((N / 10))
    e2e "--suite $suite (reference plug-in)" "$n" --lib "$PLUGIN" --suite "$suite"
  done
fi
PY="${ENGRAM_PYTHON:-$ROOT/.venv/bin/python}"
if [[ -x "$PY" ]]; then
  e2e "--suite hash_v41 (example adapter, --exec)" $((N / 10)) --exec "$PY $ROOT/conformance/examples/numpy_adapter.py" --suite hash_v41
fi
