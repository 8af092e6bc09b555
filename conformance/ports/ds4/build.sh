#!/usr/bin/env bash
# Builds the ds4 C-ABI plug-in against the port's own ds4_engram.c from a checkout:
#   conformance/ports/ds4/build.sh CHECKOUT OUT.so
# Needs the release build (scripts/build.sh release) for the reference's layout code (the plug-in's input).
set -euo pipefail
checkout=$1; out=$2
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${ENGRAM_BUILD_DIR:-$root/build/release}
for f in ds4_engram.c ds4_engram.h; do
  [ -f "$checkout/$f" ] || { echo "ds4: $checkout/$f: not found (a checkout of antirez/ds4?)" >&2; exit 2; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -O1 -fPIC -c "$checkout/ds4_engram.c" -I"$checkout" -o "$tmp/ds4_engram.o"
c++ -std=c++20 -O1 -fPIC -shared -o "$out" \
  "$(dirname "$0")/plugin.cc" "$root/conformance/plugins/plugin_inputs.cc" "$tmp/ds4_engram.o" \
  -I"$root/conformance/include" -I"$root" -I"$checkout" \
  "$build/reference/libengram_reference.a" "$build/base/libengram_base.a" -lcrypto -licuuc -licui18n -lpthread
