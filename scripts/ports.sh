#!/usr/bin/env bash
# The public ports, measured (issue 29): runs every adapter in conformance/ports/ whose checkout is present
# under CHECKOUTS_DIR (one directory per port, named in its port.json: tt-metal, sglang, Engram,
# pypto-serving, Automodel, vllm, colibri, ds4) and writes docs/ports.md, from the raw measurements it keeps in
# docs/ports.json (with --only, the ports named are measured anew and the others' saved measurements kept).
#   scripts/ports.sh CHECKOUTS_DIR [--random N] [--random-seconds S] [--jobs J] [--only PORT...]
#   (default: 10,000 random cases or 600 s per suite; J rows, one per port and suite, side by side: the CPUs)
# The Python adapters need torch, numpy and sympy: ENGRAM_PORTS_PYTHON names that interpreter (default python3).
# The commit of each checkout is `git rev-parse HEAD`, or the checkout's COMMIT file when it is not a git tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: scripts/ports.sh CHECKOUTS_DIR [--random N] [--only PORT...]" >&2; exit 2; }
[ -d "$1" ] || { echo "scripts/ports.sh: $1: not a directory" >&2; exit 2; }
[ -x "$root/build/release/conformance/engram" ] || "$root/scripts/build.sh" release
start=$(date +%s)
python3 "$root/scripts/ports_matrix.py" --python "${ENGRAM_PORTS_PYTHON:-python3}" "$@"
echo "scripts/ports.sh: $(( $(date +%s) - start )) s" >&2
