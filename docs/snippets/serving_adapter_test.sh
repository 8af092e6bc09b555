#!/usr/bin/env bash
# ctest docs.serving_adapter: the worked example of docs/porting.md section 11 passes suite serving_v41, its fixed
# vectors and 200 random cases. Needs a python3 with numpy (ENGRAM_PYTHON, else python3); exit 77 (skipped) without.
# Usage: serving_adapter_test.sh ENGRAM_BIN SOURCE_DIR
set -euo pipefail
engram=$1 root=$2
py=${ENGRAM_PYTHON:-python3}
if ! "$py" -c 'import numpy' 2>/dev/null; then
  echo "docs.serving_adapter: $py has no numpy (set ENGRAM_PYTHON)" >&2
  exit 77
fi
"$engram" conform --vectors "$root/vectors" --suite serving_v41 --random 200 --seed 1 \
  --exec "env PYTHONPATH=$root/conformance/python $py $root/docs/snippets/serving_adapter.py"
