#!/usr/bin/env bash
# Configures and builds the release preset (tests included). Usage: scripts/build.sh [preset]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
preset=${1:-release}
cd "$root"
# The presets generate Ninja files (CMakePresets.json). A build tree an earlier checkout configured with
# another generator (Unix Makefiles, as older checkouts did) cannot be reconfigured in place: its cache is removed and
# the tree configured afresh (ccache still holds its objects).
cache=build/$preset/CMakeCache.txt
if [ -f "$cache" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
  echo "build: build/$preset was configured with $(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$cache"); configuring it afresh for Ninja" >&2
  rm -rf "$cache" "build/$preset/CMakeFiles"
fi
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
