#!/usr/bin/env bash
# The packaging test (as fmt tests its own): install the release build into a
# temporary prefix and use it from outside the tree as a port would — the CLI
# and the reference plug-in on the installed vectors, a consumer built with
# find_package(engram) and another with pkg-config, both giving `engram
# hash`'s rows — then the same from the .deb that `cpack -G DEB` makes.
# Usage: scripts/test_packaging.sh [BUILD_DIR]   (default build/release, already built)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=$(cd "${1:-build/release}" && pwd)
py=.venv/bin/python
[ -x "$py" ] || py=python3
work=$(mktemp -d "${TMPDIR:-/tmp}/engram-packaging.XXXXXX")
deb_installed=""
cleanup() {
  if [ -n "$deb_installed" ]; then dpkg -P engram >/dev/null 2>&1 || echo "packaging: could not remove the engram package" >&2; fi
  rm -rf "$work"
}
trap cleanup EXIT

ids=(10 20 30 40 5 99091)
ids_csv=$(IFS=,; echo "${ids[*]}")
rows_of_cli() {  # the rows `engram hash` prints, as compact JSON
  "$1" hash --config "$2" --compressed-vocab-size 99092 --ids "$ids_csv" |
    "$py" -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["rows"], separators=(",", ":")))'
}
compact() { "$py" -c 'import json, sys; print(json.dumps(json.load(sys.stdin), separators=(",", ":")))'; }

# Checks an installed tree: PREFIX, then how a consumer finds it (a CMake
# prefix path, and a pkg-config path).
check_prefix() {
  local prefix=$1 label=$2
  local engram=$prefix/bin/engram share=$prefix/share/engram
  local plugin
  plugin=$(find "$prefix" -name 'libengram_reference_plugin.so' -path '*/engram/*' | head -n 1)
  [ -n "$plugin" ] || { echo "packaging ($label): no reference plug-in under $prefix" >&2; exit 1; }
  "$engram" --version >/dev/null
  # The installed files are the built ones (every digest of the manifest is checked); recomputing
  # them all again would repeat the vector stage's full verify with the same code: one suite shows
  # that the installed CLI finds its schemas and recomputes.
  "$engram" vectors verify "$share/vectors" --suite hash_v41 >/dev/null
  # Every suite through the installed plug-in; the two accumulated vectors of 10^7 positions (6 of the run's
  # 6.4 s) is left to the ctest row LIM-02, which runs it through the same plug-in code with its memory bound:
  # here the 10^3- and 10^5-position vectors of both profiles show that the installed plug-in streams them.
  local verdict
  verdict=$("$engram" conform --vectors "$share/vectors" --lib "$plugin" --accumulate-max 100000 | tail -n 1)
  case "$verdict" in "conformance: OK:"*) ;; *) echo "packaging ($label): conform on the installed vectors: $verdict" >&2; exit 1 ;; esac
  local want
  want=$(rows_of_cli "$engram" "$share/configs/v41-flash.json")

  local cbuild=$work/consumer-$label
  cmake -S packaging/consumer -B "$cbuild" -DCMAKE_BUILD_TYPE=Release ${3:+-DCMAKE_PREFIX_PATH="$3"} >/dev/null
  cmake --build "$cbuild" >/dev/null
  local got
  got=$("$cbuild/consumer" "$share/configs/v41-flash.json" 99092 "${ids[@]}" | compact)
  [ "$got" = "$want" ] || { echo "packaging ($label): find_package consumer rows differ from engram hash" >&2; exit 1; }

  local pcdir
  pcdir=$(dirname "$(find "$prefix" -name engram.pc | head -n 1)")
  # shellcheck disable=SC2046
  g++ -std=c++20 -O1 packaging/consumer/consumer.cc -o "$work/pc-consumer-$label" -DENGRAM_CONFIGS_DIR="\"$share/configs\"" \
    $(PKG_CONFIG_PATH="$pcdir" pkg-config ${4:-} --cflags --libs engram)
  got=$("$work/pc-consumer-$label" "$share/configs/v41-flash.json" 99092 "${ids[@]}" | compact)
  [ "$got" = "$want" ] || { echo "packaging ($label): pkg-config consumer rows differ from engram hash" >&2; exit 1; }
  echo "packaging ($label): CLI, plug-in ($verdict), find_package and pkg-config consumers: OK"
}

# 1. cmake --install into a temporary prefix.
cmake --install "$build" --prefix "$work/prefix" >/dev/null
check_prefix "$work/prefix" prefix "$work/prefix"

# 2. The .deb, installed with dpkg where this user may (CI runs as root) and no
# engram package is installed already (it is purged afterwards), else unpacked.
(cd "$build" && cpack -G DEB -B "$work/deb" >/dev/null)
deb=$(ls "$work"/deb/*.deb)
echo "packaging: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB; Depends: $(dpkg-deb -f "$deb" Depends)"
installed=$(dpkg-query -W -f='${Status}' engram 2>/dev/null || true)
if [ "$(id -u)" -eq 0 ] && [ "$installed" != "install ok installed" ]; then
  dpkg -i "$deb" >/dev/null
  deb_installed=yes
  check_prefix /usr deb ""
else
  dpkg-deb -x "$deb" "$work/debroot"
  # An unpacked .deb is not at its prefix: pkg-config is told where it is.
  check_prefix "$work/debroot/usr" deb-unpacked "$work/debroot/usr" --define-prefix
fi
