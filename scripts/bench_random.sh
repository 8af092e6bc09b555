#!/usr/bin/env bash
# The reference side of randomized conformance (spec/conformance.md §CONF.7):
# how many cases per second the generators draw and compute (expected values
# included), per suite, and, for scale, a whole `engram conform --random` run
# against the in-tree reference plug-in (generation + protocol + comparison).
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

if [[ -f "$PLUGIN" ]]; then
  start=$(date +%s.%N)
  "$BIN" conform --vectors "$ROOT/vectors" --lib "$PLUGIN" --random "$N" --seed 1 --random-only --suite hash_v41 >/dev/null 2>&1
  end=$(date +%s.%N)
  python3 -c "import sys; n=int(sys.argv[1]); s=float(sys.argv[3])-float(sys.argv[2]); print('conform --random %d --suite hash_v41 (reference plug-in, end to end): %.1f s, %.0f cases/s' % (n, s, n/s))" "$N" "$start" "$end"
fi
