#!/usr/bin/env bash
# Installs a wheel of scripts/build_wheel.sh into a clean Debian root and uses it there: a debootstrap'ed
# bookworm (minbase, with python3, python3-venv and python3-numpy only: no -dev package, no ICU), made once
# (about 60 MB from the Debian mirror) and kept. In the root: the installed module resolves ICU and libcrypto to
# the wheel's own copies (ldd), hashes, builds a token map (ICU's normaliser), decodes FP8, checks a manifest's
# SHA-256 and verifies a suite through python -m engram_conformance (OpenSSL), and runs the held-out probes.
#
#   scripts/check_wheel_root.sh WHEEL [ROOT]     (default ROOT build/debian-root; needs root and debootstrap)
set -euo pipefail
root_dir="$(cd "$(dirname "$0")/.." && pwd)"
wheel="$(realpath "$1")"
chroot_dir="${2:-$root_dir/build/debian-root}"
if [ ! -x "$chroot_dir/usr/bin/python3" ]; then
  debootstrap --variant=minbase --include=python3,python3-venv,python3-numpy bookworm "$chroot_dir" \
    http://deb.debian.org/debian >/dev/null
fi
rm -rf "$chroot_dir/check" && mkdir -p "$chroot_dir/check"
cp "$wheel" "$chroot_dir/check/"
cp "$root_dir/scripts/python_probes.py" "$chroot_dir/check/"
cat > "$chroot_dir/check/run.sh" <<'INNER'
set -eu
cd /check
echo "root: $(. /etc/os-release; echo "$PRETTY_NAME"), python $(python3 -c 'import sys; print(sys.version.split()[0])')"
echo "root: -dev packages: $(dpkg-query -W -f '${Package}\n' | grep -c -- '-dev$' || true); ICU packages: $(dpkg-query -W -f '${Package}\n' | grep -c '^libicu' || true)"
python3 -m venv --system-site-packages /check/venv
/check/venv/bin/pip install --quiet --no-index --no-deps /check/*.whl
so=$(/check/venv/bin/python -c 'import engram_conformance._core as c; print(c.__file__)')
ldd "$so" | grep -E 'icu|crypto|ssl' | sed 's/^/root: ldd: /'
if ldd "$so" | grep -E 'icu|crypto' | grep -q -v 'engram_conformance.libs'; then echo "root: FAIL: a system ICU/OpenSSL"; exit 1; fi
/check/venv/bin/python - <<'PY'
import json, engram
lay = engram.Layout("v4.1")
rows = engram.hash(lay, [5, 0, 98000, -1, 17])
tok = {"added_tokens": [{"id": 5, "content": "<s>", "special": True}], "decoder": {"type": "ByteLevel"},
       "model": {"type": "BPE", "vocab": {"a": 0, "\u0120a": 1, "A": 2, "\u00c3": 3, "\u0120": 4}, "merges": []}}
tm = engram.token_map(json.dumps(tok))
bits = engram.decode_rows(list(range(32)), [127])
print(f"root: hash {rows.shape}, token map {tm.map.tolist()} (V {tm.compressed_size}), decode {bits[:3].tolist()}, "
      f"vectors: {engram.vectors.kind()}")
PY
/check/venv/bin/python -m engram_conformance vectors verify "$(/check/venv/bin/python -c 'import engram_conformance as e; print(e.vectors.directory())')" --suite layout | tail -n 1 | sed 's/^/root: /'
/check/venv/bin/python /check/python_probes.py | tail -n 1 | sed 's/^/root: /'
INNER
chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/bin:/bin LANG=C.UTF-8 /bin/sh /check/run.sh
