#!/usr/bin/env bash
# spec/vectors.md §VEC.11: vectors/CHANGELOG.md is the per-tcId changelog from the previous released
# vector set to the committed one; vectors/CHANGELOG-<version>.md keep the earlier steps. Each released
# set is read from git at the commit that holds it (its MANIFEST.sha256 digest is listed in
# vectors/RELEASED under its specVersion).
#   scripts/check_changelog.sh                      the changelogs are current, the old sets are listed
#   scripts/check_changelog.sh ENGRAM PLUGIN        also: every old set stays verifiable and runnable with
#                                                   this tool (vectors verify; conform on three suites)
set -euo pipefail
cd "$(dirname "$0")/.."
# "<commit> <specVersion>" of every released set before the committed one, oldest first.
released=("63af6cf 0.1.0" "4ab6283 0.2.0" "fd369e8 0.3.0")
if ! git rev-parse -q --verify "63af6cf^{commit}" >/dev/null 2>&1; then
  echo "check_changelog: skipped: commit 63af6cf (the released 0.1.0 vectors) is not in this clone (shallow?)" >&2
  exit 0
fi
# The earlier steps, each from one released set to the next.
for ((i = 1; i < ${#released[@]}; ++i)); do
  read -r from _ <<<"${released[i-1]}"; read -r to version <<<"${released[i]}"
  python3 scripts/vectors_changelog.py "git:$from" "git:$to" --check "vectors/CHANGELOG-$version.md"
done
# The step to the committed set.
read -r previous _ <<<"${released[-1]}"
python3 scripts/vectors_changelog.py "git:$previous" vectors --check vectors/CHANGELOG.md
for entry in "${released[@]}"; do
  read -r commit version <<<"$entry"
  old=$(git show "$commit:vectors/MANIFEST.sha256" | sha256sum | cut -d' ' -f1)
  grep -q "^$old  $version\$" vectors/RELEASED ||
    { echo "check_changelog: $commit's manifest $old is not listed in vectors/RELEASED as $version" >&2; exit 1; }
done
if [ $# -eq 2 ]; then
  engram=$(realpath "$1"); plugin=$(realpath "$2")
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  for entry in "${released[@]}"; do
    read -r commit version <<<"$entry"
    rm -rf "$tmp/vectors"
    git archive "$commit" vectors | tar -x -C "$tmp"
    "$engram" vectors verify "$tmp/vectors" | grep -q "vectors verified: OK (released set $version" ||
      { echo "check_changelog: the released $version set does not verify with this tool" >&2; exit 1; }
    "$engram" conform --vectors "$tmp/vectors" --lib "$plugin" --suite layout --suite hash_v41 --suite gate_demo |
      grep -q "conformance: OK: .*released set $version, an earlier one" ||
      { echo "check_changelog: the released $version set does not run with this tool" >&2; exit 1; }
    echo "check_changelog: the released $version set verifies (as the released bytes) and runs with this tool"
  done
fi
echo "check_changelog: vectors/CHANGELOG.md is current (from $previous, released ${released[-1]#* })"
