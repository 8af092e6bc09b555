#!/usr/bin/env bash
# Builds the lucebox C-ABI plug-in against the port's own deepseek4_engram.cpp from a checkout of Luce-Org/lucebox:
#   conformance/ports/lucebox/build.sh CHECKOUT OUT.so
# Needs the release build (scripts/build.sh release) for the reference's layout code (the plug-in's input).
# The port's file builds without ggml (its header only forward-declares the ggml types of the apply, which lives in
# deepseek4_engram_apply.cpp and is not compiled here).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: conformance/ports/lucebox/build.sh CHECKOUT OUT.so" >&2; exit 2; }
checkout=$1; out=$2
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${ENGRAM_BUILD_DIR:-$root/build/release}
src=server/src/deepseek4
for f in "$src/deepseek4_engram.cpp" "$src/deepseek4_engram.h"; do
  [ -f "$checkout/$f" ] || { echo "lucebox: $checkout/$f: not found (a checkout of Luce-Org/lucebox?)" >&2; exit 2; }
done
for f in "$build/reference/libengram_reference.a" "$build/base/libengram_base.a"; do
  [ -f "$f" ] || { echo "lucebox: $f: not found (run scripts/build.sh release first, or set ENGRAM_BUILD_DIR)" >&2; exit 2; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the port as its repository builds it: C++17, its own include root (server/src)
c++ -std=c++17 -O2 -fPIC -c "$checkout/$src/deepseek4_engram.cpp" -I"$checkout/server/src" -o "$tmp/deepseek4_engram.o"
c++ -std=c++20 -O2 -fPIC -shared -o "$out" \
  "$(dirname "$0")/plugin.cc" "$root/conformance/plugins/plugin_inputs.cc" "$tmp/deepseek4_engram.o" \
  -I"$root/conformance/include" -I"$root" -I"$checkout/server/src" \
  "$build/reference/libengram_reference.a" "$build/base/libengram_base.a" -lcrypto -licuuc -licui18n -lpthread
