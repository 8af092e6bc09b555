#!/usr/bin/env bash
# A real Slurm job array over shards of `engram conform` (spec/conformance.md §CONF.9,
# docs/nightly.md): a single-node Slurm (munged, slurmctld, slurmd from Debian's slurm-wlm and
# munge, configured for this host only, each in the foreground under this script, no systemd)
# runs `sbatch --array=0-3 --wait` of the random cases against the reference plug-in and then the
# numpy port; the four shards' reports are merged with `engram report merge` and the merged
# verdict line, counts and request digests are compared with a single-process run of the same work.
# Everything it starts is stopped and everything it writes is removed, whatever happens. When Slurm
# cannot start here it says so and fails: it never skips.
#
# Usage: scripts/slurm_stage.sh [N]   (N random cases per suite, default 40)
#        ENGRAM_BIN, ENGRAM_PLUGIN, ENGRAM_PYTHON override the binary, the plug-in and the Python
set -euo pipefail

N="${1:-40}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ENGRAM_BIN:-$ROOT/build/release/conformance/engram}"
PLUGIN="${ENGRAM_PLUGIN:-$ROOT/build/release/conformance/libengram_reference_plugin.so}"
PY="${ENGRAM_PYTHON:-$ROOT/.venv/bin/python}"
SHARDS=4
t0=$(date +%s%N)
elapsed() { local ns=$(( $(date +%s%N) - $1 )); printf "%d.%d" $((ns / 1000000000)) $(((ns / 100000000) % 10)); }

for exe in munged mungekey slurmctld slurmd sbatch sinfo; do
  if ! command -v "$exe" >/dev/null 2>&1 && [[ ! -x "/usr/sbin/$exe" ]]; then
    echo "slurm stage: FAILED: $exe is not installed (scripts/setup.sh installs slurm-wlm and munge)" >&2
    exit 1
  fi
done
export PATH="$PATH:/usr/sbin"
[[ -x "$BIN" && -f "$PLUGIN" && -x "$PY" ]] || { echo "slurm stage: FAILED: no $BIN, $PLUGIN or $PY (build first)" >&2; exit 1; }

work=$(mktemp -d /tmp/engram-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  local rc=$?
  # Our daemons only, by the pids we started, newest first; then their files.
  if [[ -n "${SLURM_CONF:-}" ]]; then scancel --quiet --user "$(id -un)" >/dev/null 2>&1 || true; fi
  for ((i=${#pids[@]}-1; i>=0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "slurm stage: FAILED: $*" >&2
  for log in "$work"/*.log; do [[ -f "$log" ]] && { echo "--- $log (last lines)" >&2; tail -n 15 "$log" >&2; }; done
  exit 1
}

# munge: a key of our own, a socket in our directory.
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/out"
chmod 700 "$work/munge"
mungekey --create --keyfile="$work/munge/munge.key" >/dev/null 2>&1 || fail "mungekey could not create a key"
chmod 600 "$work/munge/munge.key"
munged --foreground --force --socket="$work/munge/socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --seed-file="$work/munge/seed" --log-file="$work/munged.log" >"$work/munged.out" 2>&1 &
pids+=($!)

# Ports of this run (two concurrent stages on one machine must not meet).
port=$((20000 + ($$ % 20000)))
host=$(hostname -s)
cpus=$(nproc)
export SLURM_CONF="$work/slurm.conf"
cat >"$SLURM_CONF" <<CONF
ClusterName=engram-ci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
echo "slurm stage: starting munged, slurmctld and slurmd (Slurm $(slurmctld -V 2>/dev/null | awk '{print $2}'), ports $port-$((port + 1)), $work)"
slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >"$work/slurmd.out" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 100); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
  if [[ "$state" == idle* || "$state" == mixed* ]]; then up=1; break; fi
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || fail "Slurm cannot start here: a daemon (pid $pid) exited"; done
  sleep 0.2
done
((up)) || fail "Slurm cannot start here: the node did not come up within 20 s (sinfo: ${state:-no answer})"
echo "slurm stage: node $host up ($(elapsed "$t0") s)"

VEC="$ROOT/vectors"
seed=20261203
# One job array per implementation: each task is one shard, its index from SLURM_ARRAY_TASK_ID.
run_array() {  # name, implementation options...
  local name=$1; shift
  local impl=("$@")
  local script="$work/$name.sbatch"
  {
    echo '#!/bin/bash'
    printf 'exec %q conform --vectors %q' "$BIN" "$VEC"
    printf ' %q' "${impl[@]}"
    printf ' --random %q --seed %q --random-threads 1 --accumulate-max 100000 --report-json %q-"$SLURM_ARRAY_TASK_ID".json\n' \
      "$N" "$seed" "$work/out/$name-shard"
  } >"$script"
  local t=$(date +%s%N)
  sbatch --quiet --array=0-$((SHARDS - 1)) --wait --cpus-per-task=1 --job-name="engram-$name" \
    --output="$work/out/$name-%a.out" --error="$work/out/$name-%a.err" "$script" ||
    { for f in "$work"/out/$name-*.err; do echo "--- $f" >&2; tail -n 5 "$f" >&2; done; fail "the $name job array failed (sbatch --wait)"; }
  echo "slurm stage: $name: sbatch --array=0-$((SHARDS - 1)) --wait done ($(elapsed "$t") s); every shard PARTIAL:"
  for i in $(seq 0 $((SHARDS - 1))); do
    grep -q "^conformance: PARTIAL: shard $i of $SHARDS (SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT)" "$work/out/$name-$i.out" ||
      fail "shard $i of $name does not report itself partial from SLURM_ARRAY_TASK_ID: $(tail -n 1 "$work/out/$name-$i.out")"
  done
  "$BIN" report merge "$work"/out/$name-shard-*.json --report-json "$work/out/$name-merged.json" >"$work/out/$name-merge.txt" ||
    { cat "$work/out/$name-merge.txt"; fail "the merge of $name is not OK"; }
  "$BIN" conform --vectors "$VEC" "${impl[@]}" --random "$N" --seed "$seed" --random-threads 1 --accumulate-max 100000 \
    --report-json "$work/out/$name-single.json" >"$work/out/$name-single.txt" 2>/dev/null ||
    { tail -n 3 "$work/out/$name-single.txt"; fail "the single-process run of $name is not OK"; }
  "$PY" "$ROOT/scripts/merged_equals_single.py" "$work/out/$name-merged.json" "$work/out/$name-single.json" "slurm stage: $name" ||
    fail "the merged $name run differs from the single-process run"
}
run_array plugin --lib "$PLUGIN"
# The adapter on the random cases of three suites (numpy's start-up is most of a task's time here).
run_array adapter --exec "env PYTHONPATH=$ROOT/conformance/python $PY -m engram_numpy_port" --random-only --suite hash_v41 --suite hash_demo \
  --suite layout
echo "slurm stage: OK ($(elapsed "$t0") s)"
