#!/usr/bin/env bash
# Builds the libFuzzer targets (in the preset `asan`: clang, ASan+UBSan, beside the test suites) and runs
# each for SECONDS (default 30), starting from seed corpora taken from the committed vectors and example configs. Prints one line per target;
# exits non-zero on the first finding (the crashing input is kept under build/fuzz/findings/).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-30}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(config token_map history contract safetensors protocol)
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null
py=.venv/bin/python
[ -x "$py" ] || py=python3
corpus=build/fuzz/corpus
mkdir -p build/fuzz/findings
"$py" - "$corpus" <<'PY'
import json, os, pathlib, sys
out = pathlib.Path(sys.argv[1])
def put(target, name, data):
    d = out / target; d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())
for p in pathlib.Path("conformance/configs").glob("*.json"):
    put("config", p.name, p.read_text())
v = pathlib.Path("vectors/v1")
for i, t in enumerate(json.loads((v / "layout.json").read_text())["testGroups"][0]["tests"]):
    put("config", f"layout{i}.json", json.dumps(t["config"]))
for i, g in enumerate(json.loads((v / "token_map.json").read_text())["testGroups"]):
    put("token_map", f"tok{i}.json", g["tokenizerJson"])
put("token_map", "map.json", "[0,1,2,1,3]")
for i, g in enumerate(json.loads((v / "hash_state.json").read_text())["testGroups"]):
    for j, t in enumerate(g["tests"]):
        for k, seg in enumerate(t.get("segments", [])[:2]):
            put("history", f"h{i}_{j}_{k}.bin", bytes.fromhex(seg["historyInBinary"]))
            put("history", f"h{i}_{j}_{k}.json", json.dumps(dict(format="engram-hash-history", version=1,
                layoutFingerprint=g["layoutFingerprint"], **seg["historyIn"])))
for name in ("layout.json", "multipliers.json"):
    put("contract", name, (v / name).read_text())
# Every other suite's verifier: one group of each (with its first tests), small enough to mutate quickly.
for p in sorted(v.glob("*.json")):
    d = json.loads(p.read_text())
    if p.name in ("layout.json", "multipliers.json", "accumulated.json") or not d.get("testGroups"):
        continue
    g = dict(d["testGroups"][0], tests=d["testGroups"][0]["tests"][:4])
    put("contract", "suite_" + p.name, json.dumps(dict(d, testGroups=[g])))
put("safetensors", "empty.bin", b"")
header = json.dumps({"embed.weight": {"dtype": "F8_E4M3", "shape": [2, 256], "data_offsets": [0, 512]},
                     "embed.scale": {"dtype": "F8_E8M0", "shape": [2, 8], "data_offsets": [512, 528]}}).encode()
put("safetensors", "small.safetensors", len(header).to_bytes(8, "little") + header + bytes(range(256)) * 2 + bytes([127] * 16))
put("safetensors", "packed.bin", bytes(264 * 2))
for i, t in enumerate(json.loads((v / "hash_v41.json").read_text())["testGroups"][1]["tests"][:8]):
    put("protocol", f"t{i}.json", json.dumps(t))
# Float outputs with the group's tolerance (§FUS.9): a few tests of each fusion suite, group attached.
for name in ("gate_v41", "gate_demo", "short_conv_demo", "fp8_decode", "table_lookup"):
    for gi, g in enumerate(json.loads((v / f"{name}.json").read_text())["testGroups"][:3]):
        group = {k: x for k, x in g.items() if k != "tests"}
        for ti, t in enumerate(g["tests"][:3]):
            put("protocol", f"{name}_{gi}_{ti}.json", json.dumps(dict(t, group=group)))
PY
# Inputs that once crashed a target stay in its corpus (conformance/fuzz/regressions/<target>/).
for t in "${targets[@]}"; do
  [ -d "conformance/fuzz/regressions/$t" ] && mkdir -p "$corpus/$t" && cp conformance/fuzz/regressions/$t/* "$corpus/$t/"
done
# The targets run side by side, one per core (each still gets SECONDS of wall time on a core of its
# own), and report in the order given.
run_one() {
  local t=$1 log=build/fuzz/fuzz_$1.log
  if build/asan/conformance/fuzz/fuzz_$t "$corpus/$t" -max_total_time="$seconds" -rss_limit_mb=4096 \
       -artifact_prefix=build/fuzz/findings/$t- >"$log" 2>&1; then
    echo "fuzz_$t: ${seconds}s, no finding ($(grep -o 'stat::number_executed_runs: *[0-9]*' "$log" | grep -o '[0-9]*$' || grep -oE '#[0-9]+' "$log" | tail -1) runs)" >"$log.verdict"
  else
    { echo "fuzz_$t: FINDING (see $log and build/fuzz/findings/)"; tail -30 "$log"; } >"$log.verdict"
    return 1
  fi
}
jobs_max=$(nproc)
for t in "${targets[@]}"; do
  rm -f "build/fuzz/fuzz_$t.log.verdict"
  while (( $(jobs -rp | wc -l) >= jobs_max )); do wait -n || true; done
  run_one "$t" &
done
wait || true
# The verdict files, not exit codes, decide: a target that wrote none did not finish cleanly.
status=0
for t in "${targets[@]}"; do
  v="build/fuzz/fuzz_$t.log.verdict"
  if [ -f "$v" ]; then cat "$v"; else echo "fuzz_$t: did not report (see build/fuzz/fuzz_$t.log)"; fi
  { [ -f "$v" ] && ! grep -q '^fuzz_[a-z_]*: FINDING' "$v"; } || status=1
done
exit $status
