#!/usr/bin/env bash
# spec/vectors.md §VEC.11: vectors/CHANGELOG.md is the per-tcId changelog from the last released vector
# set before the committed one to the committed one; vectors/CHANGELOG-<version>.md keep the earlier
# steps, each leading to a release. The releases come from vectors/RELEASED (scripts/release_vectors.py
# finds the commit holding each; the first line of a version is the one the steps use).
#   scripts/check_changelog.sh                      the changelogs are current, the releases consistent
#   scripts/check_changelog.sh ENGRAM PLUGIN        also: every released set stays verifiable and runnable
#                                                   with this tool (vectors verify; conform on three suites)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
  echo "check_changelog: skipped: a shallow clone lacks the released sets' commits" >&2
  exit 0
fi
python3 scripts/release_vectors.py --check
# "<commit> <version>", the first listing of each version, oldest first.
list=$(python3 scripts/release_vectors.py --list)
mapfile -t released < <(awk '!seen[$2]++ {print $1, $2}' <<<"$list")
committed=$(sha256sum vectors/MANIFEST.sha256 | cut -d' ' -f1)
steps=${#released[@]}
# When the committed set is the last release, the step to it is CHANGELOG.md, not a CHANGELOG-<v>.md.
awk -v v="${released[-1]#* }" '$2 == v {print $3}' <<<"$list" | grep -qx "$committed" && steps=$((steps - 1))
for ((i = 1; i < steps; ++i)); do
  read -r from _ <<<"${released[i-1]}"; read -r to version <<<"${released[i]}"
  python3 scripts/vectors_changelog.py "git:$from" "git:$to" --check "vectors/CHANGELOG-$version.md"
done
read -r previous previous_version <<<"${released[steps-1]}"
python3 scripts/vectors_changelog.py "git:$previous" vectors --check vectors/CHANGELOG.md
if [ $# -eq 2 ]; then
  engram=$(realpath "$1"); plugin=$(realpath "$2")
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  for entry in "${released[@]}"; do
    read -r commit version <<<"$entry"
    [ "$(git show "$commit:vectors/MANIFEST.sha256" | sha256sum | cut -d' ' -f1)" = "$committed" ] && continue
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
echo "check_changelog: vectors/CHANGELOG.md is current (from $previous, released $previous_version)"
