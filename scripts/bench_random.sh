#!/usr/bin/env bash
# The reference side of randomized conformance (spec/conformance.md §CONF.7):
# how many cases per second the generators draw and compute (expected values
# included), per suite, and, for scale, a whole `engram conform --random` run
# against the in-tree reference plug-in and the numpy port (generation +
# protocol + comparison).
# Between them, the serving call shapes (serving_v41) beside hash_v41 per kind of case: a packed call of 64
# requests against a single sequence (the target: at most 4 times; `engram bench random --lib`'s by_kind).
# Figures, not assertions: this machine is shared and noisy.
#
#
# Sharded mode (spec/conformance.md §CONF.9): the same work run as K shards side by side against
# one process, then merged; and the merge alone on a large run.
#   - the total cases/s of K shard processes started together, against one process doing it all;
#   - the merge of the K reports, and the check that it equals the single run (verdict line,
#     per-suite counts, request counts and digests: scripts/merged_equals_single.py);
#   - the merge time and peak RSS for R listed results (default 10^7; and R/10, to show that the
#     memory does not grow with them), on synthetic shard reports (scripts/bench_shard_reports.py:
#     the small run's reports rewritten as a run of R cases that all failed, each result a real
#     failing result of the numpy port with a planted bug). Needs ENGRAM_PYTHON (numpy) and
#     about 2 x 0.9 KB x R of free space in TMPDIR.
#
# Usage: scripts/bench_random.sh [N]            (default N = 20000 cases per suite)
#        scripts/bench_random.sh --shards K [N] [--every-suite | --suite S] [--merge-results R]
#          (default: --suite hash_v41, the reference plug-in, --random-only; --every-suite runs the
#          fixed vectors and the random cases of every suite; --merge-results 0 skips the large merge)
#        ENGRAM_BIN=path/to/engram ENGRAM_PLUGIN=path/to/libengram_reference_plugin.so scripts/bench_random.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ENGRAM_BIN:-$ROOT/build/release/conformance/engram}"
PLUGIN="${ENGRAM_PLUGIN:-$ROOT/build/release/conformance/libengram_reference_plugin.so}"
PY="${ENGRAM_PYTHON:-$ROOT/.venv/bin/python}"
if [[ ! -x "$BIN" ]]; then
  echo "bench_random.sh: no engram binary at $BIN (build the release preset or set ENGRAM_BIN)" >&2
  exit 1
fi

# Runs a command (its output dropped); prints "SECONDS PEAK_RSS_KIB EXIT_STATUS".
measure() {
  python3 -c 'import resource, subprocess, sys, time
t = time.time()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("%.2f %d %d" % (time.time() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc))' "$@"
}

sharded() {
  local K=$1 N=20000 R=10000000
  shift
  local scope=(--suite hash_v41 --random-only) label="--suite hash_v41 --random-only"
  while (($#)); do
    case $1 in
      --every-suite) scope=(); label="every suite, fixed vectors and random cases"; shift ;;
      --suite) scope=(--suite "$2" --random-only); label="--suite $2 --random-only"; shift 2 ;;
      --merge-results) R=$2; shift 2 ;;
      [0-9]*) N=$1; shift ;;
      *) echo "bench_random.sh: unknown option $1" >&2; exit 2 ;;
    esac
  done
  [[ -f "$PLUGIN" ]] || { echo "bench_random.sh: no plug-in at $PLUGIN" >&2; exit 1; }
  work=$(mktemp -d "${TMPDIR:-/tmp}/engram-bench-shards.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  # The same work in both runs; accumulated streams capped as in the Slurm stage of CI.
  local run=(conform --vectors "$ROOT/vectors" --lib "$PLUGIN" "${scope[@]}" --random "$N" --seed 1
             --max-random-failures 0 --accumulate-max 100000)
  echo "shards: --random $N, $label, the reference plug-in; $K shards side by side against one process ($(nproc) cores)"
  local one many merge
  read -r one _ _ < <(measure "$BIN" "${run[@]}" --report-json "$work/single.json")
  local t0 t1
  t0=$(date +%s.%N)
  local pids=()
  for ((i = 0; i < K; i++)); do
    "$BIN" "${run[@]}" --shard-index "$i" --shard-count "$K" --report-json "$work/shard-$i.json" >/dev/null 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || true; done  # a shard's status is 1 when something failed in it
  t1=$(date +%s.%N)
  read -r merge _ _ < <(measure "$BIN" report merge "$work"/shard-*.json --report-json "$work/merged.json")
  python3 - "$work/single.json" "$one" "$t0" "$t1" "$K" "$merge" <<'PY'
import json, sys
single = json.load(open(sys.argv[1]))
cases = sum(c["requests"] for c in single["shard"]["cases"].values())
one, many, k, merge = float(sys.argv[2]), float(sys.argv[4]) - float(sys.argv[3]), int(sys.argv[5]), float(sys.argv[6])
print("  one process:          %7.1f s, %8.0f cases/s (%d requests)" % (one, cases / one, cases))
print("  %d shards side by side: %7.1f s, %8.0f cases/s in all (x%.2f)" % (k, many, cases / many, one / many))
print("  merge of the %d reports: %.2f s" % (k, merge))
PY
  python3 "$ROOT/scripts/merged_equals_single.py" "$work/merged.json" "$work/single.json" "  check" ||
    { echo "bench_random.sh: the merged run differs from the single run" >&2; exit 1; }
  ((R > 0)) || return 0
  [[ -x "$PY" ]] || { echo "bench_random.sh: no Python at $PY for the failing result of the large merge (set ENGRAM_PYTHON)" >&2; exit 1; }
  # The templates: a small sharded run of one suite; the entry: the smallest real failing result.
  for ((i = 0; i < K; i++)); do
    "$BIN" conform --vectors "$ROOT/vectors" --lib "$PLUGIN" --suite hash_v41 --random-only --random $((10 * K)) --seed 1       --shard-index "$i" --shard-count "$K" --report-json "$work/template-$i.json" >/dev/null 2>&1
  done
  "$BIN" conform --vectors "$ROOT/vectors" --exec "env PYTHONPATH=$ROOT/conformance/python $PY -m engram_numpy_port --bug heads-cap-8"     --suite hash_v41 --random-only --random 40 --seed 1 --shrink-calls 0 --max-random-failures 0     --report-json "$work/failing.json" >/dev/null 2>&1 || true
  python3 -c 'import json, sys
results = json.load(open(sys.argv[1]))["results"]
assert results, "the planted bug failed no case"
json.dump(min(results, key=lambda r: len(json.dumps(r))), open(sys.argv[2], "w"))' "$work/failing.json" "$work/entry.json"
  for r in $((R / 10)) "$R"; do
    rm -rf "$work/large"
    python3 "$ROOT/scripts/bench_shard_reports.py" --template "$work"/template-*.json --results "$r"       --entry "$work/entry.json" --out "$work/large" | sed 's/^/  /'
    local secs rss rc
    read -r secs rss rc < <(measure "$BIN" report merge "$work"/large/shard-*.json --report-json "$work/large/merged.json"       --junit "$work/large/merged.xml")
    [[ $rc == 1 ]] || { echo "bench_random.sh: the merge of $r failing results exited $rc, not 1 (FAILED)" >&2; exit 1; }
    python3 -c 'import sys; r, s, kib = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
print("  merge of %d listed results (report JSON + JUnit written): %.1f s, %.0f results/s, peak RSS %.1f MiB" % (r, s, r / s, kib / 1024))'       "$r" "$secs" "$rss"
  done
}

if [[ "${1:-}" == --shards ]]; then
  [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "bench_random.sh: --shards K (a shard count)" >&2; exit 2; }
  shift
  sharded "$@"
  exit 0
fi

N="${1:-20000}"

printf '%-12s %10s %18s %22s %22s\n' suite cases "cases/s (1 thread)" "cases/s (T threads)" "cases/s (1, with JSON)"
for suite in multipliers layout hash_v41 hash_demo serving_v41; do
  "$BIN" bench random --suite "$suite" --cases "$N" --seed 1 |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print("%-12s %10d %18.0f %18.0f (%d) %22.0f" % (d["suite"], d["cases"], d["cases_per_second"], d["cases_per_second_threads"], d["threads"], d["cases_per_second_with_json"]))'
done

# The new call shapes (serving_v41, spec/hash.md §HASH.10, §HASH.11) beside hash_v41, per kind of case, on one
# thread's CPU time: `draw` drawing a case and computing its expected values; `runner` that, writing the request
# and judging the reference plug-in's answer (the runner's whole share of a case); `plug-in` the answer, apart.
# A packed call of 64 requests against a single sequence: a hash_v41 HashTest, and a packed call of one
# request. The target: at most 4 times.
if [[ -f "$PLUGIN" ]]; then
  kinds=$(mktemp "${TMPDIR:-/tmp}/engram-bench-kinds.XXXXXX")
  for suite in hash_v41 serving_v41; do
    "$BIN" bench random --suite "$suite" --cases "$N" --seed 1 --lib "$PLUGIN" >>"$kinds"
  done
  python3 - "$kinds" <<'PY'
import json, sys
text, at, kinds = open(sys.argv[1]).read(), 0, {}
while at < len(text):
    while at < len(text) and text[at].isspace():
        at += 1
    if at >= len(text):
        break
    d, at = json.JSONDecoder().raw_decode(text, at)
    for kind, k in d["by_kind"].items():
        kinds[d["suite"] + " " + kind] = k
print("\n%-42s %7s %9s %11s %12s %12s" % ("per kind of case (1 thread, CPU)", "cases", "draw us", "runner us",
                                          "plug-in us", "runner/cpu-s"))
for name in sorted(kinds):
    k = kinds[name]
    print("%-42s %7d %9.1f %11.1f %12.1f %12.0f" % (name, k["cases"], 1e6 * k["draw_cpu_seconds_per_case"],
          1e6 * k["runner_cpu_seconds_per_case"], 1e6 * k["plugin_cpu_seconds_per_case"],
          1 / k["runner_cpu_seconds_per_case"]))
packed = kinds.get("serving_v41 PackedBatchTest, 64 requests")
for label, base in (("a hash_v41 HashTest", kinds.get("hash_v41 HashTest")),
                    ("a packed call of one request", kinds.get("serving_v41 PackedBatchTest, 1 request"))):
    if packed and base:
        print("a packed call of 64 requests against %s: runner %.1f times, draw %.1f times (target: at most 4)" %
              (label, packed["runner_cpu_seconds_per_case"] / base["runner_cpu_seconds_per_case"],
               packed["draw_cpu_seconds_per_case"] / base["draw_cpu_seconds_per_case"]))
PY
  rm -f "$kinds"
fi

# End to end: `engram conform --random` through the C-ABI plug-in (drawing,
# the runner's pipeline to the plug-in host, the reference plug-in computing,
# comparison) for every suite that has a generator, and through the example
# adapter (a Python process). Besides the wall clock, the CPU time of every
# process of the run (runner, drawing threads, plug-in host or adapter): cases
# per CPU-second is the cost model of a nightly (docs/nightly.md), cores =
# 10^9 / (8 h x cases per CPU-second) for 10^9 cases a night on this reference;
# a port's own compute comes on top. The costlier suites run N/10 cases.
e2e() {  # label, cases, conform arguments...
  local label=$1 n=$2
  shift 2
  python3 - "$n" "$label" "$BIN" conform --vectors "$ROOT/vectors" "$@" --random "$n" --seed 1 --random-only <<'PY'
import resource, subprocess, sys, time
n, label, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
t = time.time()
rc = subprocess.call(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.time() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
status = "" if rc == 0 else "  (exit %d: not OK)" % rc
print("%-44s %8d %7.1f %9.0f %7.1f %12.0f %7.1f%s" % (label, n, wall, n / wall, cpu, n / cpu, 1e9 / (8 * 3600 * n / cpu), status))
PY
}
printf '\n%-44s %8s %7s %9s %7s %12s %7s\n' "conform --random, end to end" cases wall_s cases/s cpu_s "cases/cpu-s" "cores*"
if [[ -f "$PLUGIN" ]]; then
  for suite in multipliers layout hash_v41 hash_demo hash_state table_lookup tp_shard token_map gate_v41 gate_demo short_conv_demo engram_forward serving_v41; do
    n=$N
    case $suite in token_map | gate_v41 | gate_demo | short_conv_demo | engram_forward) n=$((N / 10)) ;; esac
    e2e "--suite $suite (reference plug-in)" "$n" --lib "$PLUGIN" --suite "$suite"
  done
fi
if [[ -x "$PY" ]]; then
  e2e "--suite hash_v41 (numpy port, --exec)" $((N / 10)) --exec "env PYTHONPATH=$ROOT/conformance/python $PY -m engram_numpy_port" --suite hash_v41
fi
echo "* cores for 10^9 cases of that suite in 8 hours (one shard per core) at that many cases per CPU-second"

# No channel: the same cases drawn by the same stream, each request written
# and digested as the runner does, answered by the plug-in host's code for the
# reference plug-in called in one process (no pipe, no answer text, no parse)
# and judged by the runner's code (`engram bench random --lib`). No channel
# between runner and host can make a run cheaper than this: it is the lower
# bound of the CPU time per case, and its cases/s the most the cores reach.
if [[ -f "$PLUGIN" ]]; then
  printf '\n%-44s %8s %7s %9s %7s %12s\n' "no channel (engram bench random --lib)" cases wall_s cases/s cpu_s "cases/cpu-s"
  for suite in multipliers layout hash_v41 hash_demo hash_state table_lookup tp_shard token_map gate_v41 gate_demo short_conv_demo engram_forward serving_v41; do
    n=$N
    case $suite in token_map | gate_v41 | gate_demo | short_conv_demo | engram_forward) n=$((N / 10)) ;; esac
    "$BIN" bench random --suite "$suite" --cases "$n" --seed 1 --lib "$PLUGIN" |
      python3 -c 'import json,sys; d=json.load(sys.stdin); c=d["no_channel"]; print("%-44s %8d %7.1f %9.0f %7.1f %12.0f" % ("--suite " + d["suite"], d["cases"], c["seconds"], c["cases_per_second"], c["cpu_seconds"], c["cases_per_cpu_second"]))'
  done
fi
