#!/usr/bin/env bash
# The Python package (docs/python.md): `pip install .` into a fresh venv, then the plugin's own tests
# (python/tests: the plugin, the API, in-process results equal to the CLI on every committed vector,
# random_cases equal to `engram vectors random` for one seed per suite) and the examples (examples/python).
#
#   scripts/test_python.sh [ENGRAM_CLI]     (default build/release/conformance/engram)
#
# The wheel's build tree is kept in build/python-<wheel tag> and every compile goes through ccache (the root
# CMakeLists.txt sets CMAKE_<LANG>_COMPILER_LAUNCHER), so that a warm rebuild takes seconds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cli="$(realpath "${1:-build/release/conformance/engram}")"
start=$(date +%s)
venv=build/python-venv
rm -rf "$venv"
python3 -m venv "$venv"
# The build requirements go into the venv itself (--no-build-isolation), so that nanobind's sources lie at
# the same path in every run and ccache serves their objects too (pip's isolated build environment is a new
# temporary directory each time). The CMake tree is build/python-<wheel tag> (pyproject.toml build-dir).
"$venv/bin/pip" install --quiet --disable-pip-version-check pytest numpy scikit-build-core nanobind
deps=$(date +%s)
# The release build's C++ compiler, by the same name: ccache keys an object on the compiler's name too (c++ and
# g++ are one program but two keys), so that the wheel is served the release build's objects of the libraries
# (same flags: pyproject.toml) and compiles only its own (python/src, nanobind).
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/release/CMakeCache.txt 2>/dev/null || true)
CXX="${CXX:-${cxx:-c++}}" "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation .
built=$(date +%s)
echo "python: fresh venv and its requirements $((deps - start)) s, wheel built and installed $((built - deps)) s"
# Run from outside the source tree, so that `import engram` is the installed package.
(cd build && ENGRAM_CLI="$cli" "$root/$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests" \
  "$root/examples/python")
echo "python: tests $(( $(date +%s) - built )) s; stage took $(( $(date +%s) - start )) s"
