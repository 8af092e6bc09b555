#!/usr/bin/env bash
# The Python package (docs/python.md): its wheel built once and installed into a venv, then the package's own
# tests (python/tests: the plugin, the API and its argument checks, python -m engram_conformance, in-process results equal to
# the CLI on every committed vector, random_cases equal to `engram vectors random`), the examples
# (examples/python) and the held-out argument probes (scripts/python_probes.py); and the committed type stub
# (python/engram_conformance/_core.pyi) is nanobind.stubgen's output for the module built. Where the system Python has
# torch (Debian's python3-torch), the torch tests run with it as well; elsewhere they are skipped, saying so.
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
pip_q=(--quiet --disable-pip-version-check)
# The venvs and their requirements are kept between runs (creating them took 35-60 s of pip); the package is
# reinstalled from this tree's wheel every time. The build requirements live in the venv (--no-build-isolation),
# so that nanobind's sources lie at the same path in every run.
# nanobind is pinned: its stub generator wrote python/engram_conformance/_core.pyi, which is checked below.
venv=build/python-venv
nanobind_version=3.1.0
if ! "$venv/bin/python" -c "import pytest, numpy, scikit_build_core, nanobind
assert nanobind.__version__ == '$nanobind_version'" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install "${pip_q[@]}" pytest numpy scikit-build-core "nanobind==$nanobind_version"
fi
deps=$(date +%s)
# The release build's C++ compiler, by the same name: ccache keys an object on the compiler's name too (c++ and
# g++ are one program but two keys), so that the wheel is served the release build's objects of the libraries
# (same flags: pyproject.toml) and compiles only its own (python/src, nanobind).
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/release/CMakeCache.txt 2>/dev/null || true)
rm -rf build/python-dist
CXX="${CXX:-${cxx:-c++}}" "$venv/bin/pip" wheel "${pip_q[@]}" --no-build-isolation --no-deps -w build/python-dist .
wheel=$(ls build/python-dist/engram_conformance-*.whl)
"$venv/bin/pip" install "${pip_q[@]}" --force-reinstall --no-deps "$wheel"
# The committed stub is what nanobind's stub generator gives for the module just built (python/CMakeLists.txt
# target _core_stub, in the wheel's build tree build/python-<wheel tag>).
tree="build/python-$(basename "$wheel" .whl | cut -d- -f3-)"
cmake --build "$tree" --target _core_stub > build/python-stub.log || { cat build/python-stub.log; exit 1; }
if ! diff -u python/engram_conformance/_core.pyi "$tree/python/_core.pyi"; then
  echo "python: python/engram_conformance/_core.pyi is not what nanobind.stubgen gives; to take the generated one:"
  echo "  cp $tree/python/_core.pyi python/engram_conformance/_core.pyi"
  exit 1
fi
# The libraries' functions stay local to the module (python/CMakeLists.txt, --exclude-libs): an exported one is
# called through the PLT, as the hash's DivisionFreeMod::Mod is once per column (docs/python.md, "Performance").
exported=$(nm -D --defined-only "$tree"/python/_core.*.so | grep -Ec ' _ZNK?6engram' || true)
if [ "$exported" != 0 ]; then
  echo "python: the module exports $exported functions of namespace engram (python/CMakeLists.txt --exclude-libs)"
  exit 1
fi
built=$(date +%s)
echo "python: venv $((deps - start)) s, wheel built and installed, stub checked $((built - deps)) s ($(du -k "$wheel" | cut -f1) KiB)"
# Run from outside the source tree, so that `import engram_conformance` is the installed package.
(cd build && ENGRAM_CLI="$cli" "$root/$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests" \
  "$root/examples/python")
"$venv/bin/python" scripts/python_probes.py > build/python-probes.txt || { cat build/python-probes.txt; exit 1; }
tail -n 1 build/python-probes.txt
tested=$(date +%s)
if /usr/bin/python3 -c "import torch" 2>/dev/null; then
  # The system's torch with the system's numpy (the venv's numpy 2 would not do for an older torch).
  tvenv=build/python-venv-torch
  if ! "$tvenv/bin/python" -c "import pytest, torch" 2>/dev/null; then
    rm -rf "$tvenv"
    /usr/bin/python3 -m venv --system-site-packages "$tvenv"
    "$tvenv/bin/pip" install "${pip_q[@]}" pytest
  fi
  "$tvenv/bin/pip" install "${pip_q[@]}" --force-reinstall --no-deps "$wheel"
  (cd build && "$root/$tvenv/bin/python" -m pytest -q -p no:cacheprovider "$root/python/tests/test_torch.py" \
    "$root/examples/python/test_torch_port.py")
else
  echo "python: /usr/bin/python3 has no torch: the torch tests ran skipped"
fi
echo "python: tests $((tested - built)) s, torch $(( $(date +%s) - tested )) s; stage took $(( $(date +%s) - start )) s"
