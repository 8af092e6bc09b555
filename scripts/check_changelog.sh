#!/usr/bin/env bash
# spec/vectors.md §VEC.11: vectors/CHANGELOG.md is the per-tcId changelog from the previous released
# vector set to the committed one. The previous set is read from git at the commit that holds it (its
# MANIFEST.sha256 digest is listed in vectors/RELEASED under its specVersion).
#   scripts/check_changelog.sh                      the changelog is current, the old set is listed
#   scripts/check_changelog.sh ENGRAM PLUGIN        also: the old set stays verifiable and runnable with
#                                                   this tool (vectors verify; conform on three suites)
set -euo pipefail
cd "$(dirname "$0")/.."
previous=63af6cf   # the released set 0.1.0 (MANIFEST.sha256 sha256 b6fb46e4...)
if ! git rev-parse -q --verify "$previous^{commit}" >/dev/null 2>&1; then
  echo "check_changelog: skipped: commit $previous (the released 0.1.0 vectors) is not in this clone (shallow?)" >&2
  exit 0
fi
python3 scripts/vectors_changelog.py "git:$previous" vectors --check vectors/CHANGELOG.md
old=$(git show "$previous:vectors/MANIFEST.sha256" | sha256sum | cut -d' ' -f1)
grep -q "^$old  " vectors/RELEASED || { echo "check_changelog: $previous's manifest $old is not listed in vectors/RELEASED" >&2; exit 1; }
if [ $# -eq 2 ]; then
  engram=$(realpath "$1"); plugin=$(realpath "$2")
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  git archive "$previous" vectors | tar -x -C "$tmp"
  "$engram" vectors verify "$tmp/vectors" | grep -q "vectors verified: OK (released set 0.1.0" ||
    { echo "check_changelog: the released 0.1.0 set does not verify with this tool" >&2; exit 1; }
  "$engram" conform --vectors "$tmp/vectors" --lib "$plugin" --suite layout --suite hash_v41 --suite gate_demo |
    grep -q "conformance: OK: .*released set 0.1.0, an earlier one" ||
    { echo "check_changelog: the released 0.1.0 set does not run with this tool" >&2; exit 1; }
  echo "check_changelog: the released 0.1.0 set verifies (as the released bytes) and runs with this tool"
fi
echo "check_changelog: vectors/CHANGELOG.md is current (from $previous, released $(grep "^$old  " vectors/RELEASED | cut -d' ' -f3))"
