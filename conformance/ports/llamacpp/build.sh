#!/usr/bin/env bash
# Builds the llama.cpp C-ABI plug-in against the port's own src/llama-engram.cpp from a checkout of llama.cpp at
# pull request 19654:
#   conformance/ports/llamacpp/build.sh CHECKOUT OUT.so
# Needs the release build (scripts/build.sh release) for the reference's layout code (the plug-in's input).
# The port's file builds alone: its header includes only the C++ standard library.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: conformance/ports/llamacpp/build.sh CHECKOUT OUT.so" >&2; exit 2; }
checkout=$1; out=$2
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=${ENGRAM_BUILD_DIR:-$root/build/release}
for f in src/llama-engram.cpp src/llama-engram.h; do
  [ -f "$checkout/$f" ] || { echo "llamacpp: $checkout/$f: not found (a checkout of llama.cpp at pull request 19654?)" >&2; exit 2; }
done
for f in "$build/reference/libengram_reference.a" "$build/base/libengram_base.a"; do
  [ -f "$f" ] || { echo "llamacpp: $f: not found (run scripts/build.sh release first, or set ENGRAM_BUILD_DIR)" >&2; exit 2; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the port as llama.cpp builds it: C++17, its src/ on the include path (asserts kept, as in a debug build)
c++ -std=c++17 -O2 -fPIC -c "$checkout/src/llama-engram.cpp" -I"$checkout/src" -o "$tmp/llama-engram.o"
c++ -std=c++20 -O2 -fPIC -shared -o "$out" \
  "$(dirname "$0")/plugin.cc" "$root/conformance/plugins/plugin_inputs.cc" "$tmp/llama-engram.o" \
  -I"$root/conformance/include" -I"$root" -I"$checkout/src" \
  "$build/reference/libengram_reference.a" "$build/base/libengram_base.a" -lcrypto -licuuc -licui18n -lpthread
