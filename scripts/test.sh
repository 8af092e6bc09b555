#!/usr/bin/env bash
# Runs every test: set up, build, the numpy/sympy cross-check oracles, the
# GoogleTest/RapidCheck suites (ctest), and the vector checks of the main job.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
scripts/build.sh release
py=.venv/bin/python
xdir=build/crosscheck
mkdir -p "$xdir"

echo "== cross-check oracles (real numpy, sympy)"
"$py" conformance/crosscheck/numpy_multipliers.py --out "$xdir/multipliers.json"
"$py" conformance/crosscheck/numpy_hash.py --out "$xdir/hash.json"
export ENGRAM_NUMPY_CROSSCHECK="$root/$xdir/multipliers.json"
export ENGRAM_NUMPY_HASH_CROSSCHECK="$root/$xdir/hash.json"

echo "== unit and property tests"
ctest --preset release -j "$(nproc)"

echo "== vectors: regenerate, compare, verify, lint"
engram=build/release/conformance/engram
regen=build/vectors-regen
rm -rf "$regen"
"$engram" vectors generate --out "$regen" --schemas vectors/schema >/dev/null 2>&1
scripts/compare_vectors.sh "$regen" vectors
"$engram" vectors verify vectors >/dev/null
"$py" scripts/lint_vectors.py vectors >/dev/null
echo "vectors: reproducible, verified, schema-valid"
