#!/usr/bin/env bash
# Byte-for-byte comparison of two vector directories: v1/, schema/ and MANIFEST.sha256 (spec §VEC.8).
# Usage: scripts/compare_vectors.sh REGENERATED COMMITTED
set -euo pipefail
a=$1 b=$2
status=0
diff -r "$a/v1" "$b/v1" >/dev/null || { echo "FAIL: $a/v1 and $b/v1 differ:" >&2; diff -rq "$a/v1" "$b/v1" >&2 || true; status=1; }
diff -r "$a/schema" "$b/schema" >/dev/null || { echo "FAIL: $a/schema and $b/schema differ" >&2; status=1; }
cmp -s "$a/MANIFEST.sha256" "$b/MANIFEST.sha256" || { echo "FAIL: MANIFEST.sha256 differs" >&2; status=1; }
exit $status
