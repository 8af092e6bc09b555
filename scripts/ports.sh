#!/usr/bin/env bash
# The public ports, measured: runs every adapter in conformance/ports/ whose checkout is present under
# CHECKOUTS_DIR (one directory per port, named by its port.json `checkout`) and writes a fresh page and
# measurements file, build/ports/ports.md and build/ports/ports.json (with --update: docs/ports.md and
# docs/ports.json, the committed matrix). With --only, the ports named are measured anew and the others' saved
# measurements (docs/ports.json) kept.
#   scripts/ports.sh CHECKOUTS_DIR [--update] [--random N] [--random-seconds S] [--jobs J] [--only PORT...]
#                    [--python-for PORT=PYTHON ...]
#   scripts/ports.sh --clones CLONES [--pip] [same options]
# --clones: first restores every port from a directory of git clones at the commits port.json pins, each file's
# SHA-256 checked (scripts/ports_restore.py; --pip downloads a pinned wheel), into build/ports/checkouts, then
# measures those: the whole matrix re-measured in one command.
# Default: 10,000 random cases per suite, no time budget (--random-seconds S sets one; a row it cuts says so).
# The Python adapters' interpreter: --python-for PORT=PYTHON, ENGRAM_PORTS_PYTHON_<PORT>, else ENGRAM_PORTS_PYTHON
# (default python3). Each port.json `requires` what its adapter needs (e.g. torch>=2): a port whose interpreter
# lacks it is not measured, and its row says so.
# The commit of each checkout is `git rev-parse HEAD`, or the checkout's COMMIT file when it is not a git tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: scripts/ports.sh CHECKOUTS_DIR|--clones CLONES [--pip] [--update] [--random N] [--only PORT...]"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
[ -x "$root/build/release/conformance/engram" ] || "$root/scripts/build.sh" release
start=$(date +%s)
if [ "$1" = "--clones" ]; then
  [ $# -ge 2 ] && [ -d "$2" ] || { echo "scripts/ports.sh: --clones: ${2:-}: not a directory" >&2; exit 2; }
  clones=$2; shift 2
  restore=(); only=(); rest=(); in_only=0
  for a in "$@"; do
    case "$a" in
      --pip) restore+=(--pip); in_only=0 ;;
      --only) in_only=1; rest+=("$a") ;;
      --*) in_only=0; rest+=("$a") ;;
      *) [ $in_only = 1 ] && only+=("$a"); rest+=("$a") ;;
    esac
  done
  checkouts="$root/build/ports/checkouts"
  rm -rf "$checkouts"
  # a refused port (a digest, a commit) is said by ports_restore.py and left out; the others are measured
  python3 "$root/scripts/ports_restore.py" "$clones" "$checkouts" ${only[@]+--only "${only[@]}"} ${restore[@]+"${restore[@]}"} || true
  set -- "$checkouts" ${rest[@]+"${rest[@]}"}
fi
[ -d "$1" ] || { echo "scripts/ports.sh: $1: not a directory" >&2; exit 2; }
status=0
python3 "$root/scripts/ports_matrix.py" --python "${ENGRAM_PORTS_PYTHON:-python3}" "$@" || status=$?
echo "scripts/ports.sh: $(( $(date +%s) - start )) s" >&2
exit $status
