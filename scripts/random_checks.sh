#!/usr/bin/env bash
# The random-case checks of the docs' statements (ctest random_checks.*; spec/conformance.md §CONF.7):
#   random_checks.sh facts   ENGRAM            docs/porting.md's per-type statements and facts on random
#                                              cases of every suite with a generator (scripts/random_facts.py)
#   random_checks.sh adapter ENGRAM            the numpy port (conformance/python/engram_numpy_port)
#                                              on N random cases of every suite with a generator
#   random_checks.sh plugin  ENGRAM PLUGIN     the reference plug-in on the same cases
# N is $ENGRAM_RANDOM_CASES, else $ENGRAM_RANDOM_CASES_CI (what the ctest passes: fewer cases, for the
# CI budget), else 1000 (the full count: ENGRAM_RANDOM_CASES=1000 ctest -R random_checks). The seed is
# $ENGRAM_RANDOM_SEED, else 1. Needs ENGRAM_PYTHON (a python3 with numpy and tokenizers) for facts and
# adapter: exits 77 (skipped) without it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: random_checks.sh facts|adapter|plugin ENGRAM [PLUGIN]}
engram=${2:?the engram program}
n=${ENGRAM_RANDOM_CASES:-${ENGRAM_RANDOM_CASES_CI:-1000}}
seed=${ENGRAM_RANDOM_SEED:-1}
py=${ENGRAM_PYTHON:-}
if [ "$mode" != plugin ] && [ -z "$py" ]; then
  echo "random_checks: set ENGRAM_PYTHON to a python3 with numpy and tokenizers (skipped)"
  exit 77
fi

# The suites with a generator, as engram names them (one case each, written and listed).
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
"$engram" vectors random --out "$probe/v" --count 1 2>/dev/null
suites=$(cd "$probe/v/v1" && ls | sed 's/\.json$//')

conform() {  # runs engram conform on the random cases; every suite with a generator must pass all N
  local out="$probe/conform.out" rc=0
  "$engram" conform --vectors "$root/vectors" "$@" --random "$n" --seed "$seed" --random-only >"$out" 2>&1 || rc=$?
  grep -E '^random:[a-z_0-9]+: |^conformance:' "$out" || true
  local missing=""
  for s in $suites; do
    grep -qE "^random:$s: $n passed, 0 failed, 0 skipped" "$out" || missing="$missing $s"
  done
  if [ "$rc" -ne 0 ] || [ -n "$missing" ]; then
    tail -n 40 "$out"
    echo "random_checks: $mode: exit $rc; suites without $n passing random cases:${missing:- none}" >&2
    exit 1
  fi
  echo "random_checks: $mode: $n random cases (seed $seed) of each of $(echo $suites | wc -w) suites passed"
}

case "$mode" in
  facts) exec "$py" "$root/scripts/random_facts.py" --engram "$engram" --cases "$n" --seed "$seed" ;;
  adapter) conform --exec "env PYTHONPATH=$root/conformance/python $py -m engram_numpy_port" ;;
  plugin) conform --lib "${3:?the reference plug-in}" ;;
  *) echo "usage: random_checks.sh facts|adapter|plugin ENGRAM [PLUGIN]" >&2; exit 2 ;;
esac
