#!/usr/bin/env bash
# Configures and builds the release preset (tests included). Usage: scripts/build.sh [preset]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
preset=${1:-release}
cd "$root"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
