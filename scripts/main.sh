#!/usr/bin/env bash
# The main job: set up, build, regenerate the golden vectors from scratch,
# check that they reproduce the committed bytes, verify every expected value
# against the reference, validate the schemas, and print a summary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup.sh
scripts/build.sh release
engram=build/release/conformance/engram
py=.venv/bin/python

regen=build/vectors-regen
rm -rf "$regen"
echo "== regenerating the vectors into $regen"
"$engram" vectors generate --out "$regen" --schemas vectors/schema
echo "== comparing with the committed vectors (byte for byte)"
scripts/compare_vectors.sh "$regen" vectors
echo "identical: $(ls "$regen"/v1 | wc -l) suite files, MANIFEST.sha256 and schemas"
echo "== verifying the committed vectors against the reference"
"$engram" vectors verify vectors
echo "== validating against the JSON Schemas"
"$py" scripts/lint_vectors.py vectors
echo "== summary"
"$py" - <<'PY'
import json, pathlib
total = 0
for p in sorted(pathlib.Path("vectors/v1").glob("*.json")):
    d = json.loads(p.read_text())
    valid = sum(1 for g in d["testGroups"] for t in g["tests"] if t["result"] == "valid")
    total += d["numberOfTests"]
    print(f"  {p.name:20s} {d['numberOfTests']:5d} tests ({valid} valid, {d['numberOfTests'] - valid} invalid), "
          f"{len(d['notes'])} flags, spec {d['specVersion']}")
print(f"  {'total':20s} {total:5d} tests")
PY
"$engram" layout --config conformance/configs/v41-flash.json --compressed-vocab-size 99092 |
  "$py" -c "import json,sys; d=json.load(sys.stdin); print('  V4.1 layout: ' + ', '.join(f\"layer {l['layer_id']}: {l['num_embeddings']} rows, multipliers {l['multipliers']}\" for l in d['layers']))"
echo "main job: OK"
