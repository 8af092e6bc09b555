#!/usr/bin/env bash
# Builds the C-ABI plug-in of pestopoppa/llama.cpp's DeepSeek-V4.1 Engram host side from a checkout:
#   conformance/ports/pestopoppa/build.sh CHECKOUT OUT.so
# The port's src/llama-dsv41-engram.{h,cpp} are compiled unchanged; the llama.cpp and ggml headers they include
# are shim/'s declarations of the names they use (plugin.cc defines what they call), so the two files alone build.
# Needs the release build (scripts/build.sh release) for the reference's layout code (the plug-in's input).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: conformance/ports/pestopoppa/build.sh CHECKOUT OUT.so" >&2; exit 2; }
checkout=$1; out=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
build=${ENGRAM_BUILD_DIR:-$root/build/release}
for f in src/llama-dsv41-engram.cpp src/llama-dsv41-engram.h; do
  [ -f "$checkout/$f" ] || { echo "pestopoppa: $checkout/$f: not found (a checkout of pestopoppa/llama.cpp?)" >&2; exit 2; }
done
for f in "$build/reference/libengram_reference.a" "$build/base/libengram_base.a"; do
  [ -f "$f" ] || { echo "pestopoppa: $f: not found (run scripts/build.sh release first, or set ENGRAM_BUILD_DIR)" >&2; exit 2; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the two files alone in a directory of their own: a quoted include looks beside the file first, and a full
# checkout's src/ holds llama.cpp's real headers, which need the whole tree
mkdir "$tmp/src"
cp "$checkout/src/llama-dsv41-engram.cpp" "$checkout/src/llama-dsv41-engram.h" "$tmp/src/"
# the port as llama.cpp builds it: C++17, asserts kept (GGML_ASSERT is not compiled out in llama.cpp)
c++ -std=c++17 -O2 -fPIC -c "$tmp/src/llama-dsv41-engram.cpp" -I"$here/shim" -o "$tmp/llama-dsv41-engram.o"
# -z defs: every symbol the port calls is defined here (a missing one fails the build, not a test)
c++ -std=c++20 -O2 -fPIC -shared -Wl,-z,defs -o "$out" \
  "$here/plugin.cc" "$root/conformance/plugins/plugin_inputs.cc" "$tmp/llama-dsv41-engram.o" \
  -I"$root/conformance/include" -I"$root" -I"$tmp/src" -I"$here/shim" \
  "$build/reference/libengram_reference.a" "$build/base/libengram_base.a" -lcrypto -licuuc -licui18n -lpthread
