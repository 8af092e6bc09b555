#!/usr/bin/env bash
# Device checks of engram::cuda on a machine with a GPU (see cuda/README.md).
#
#   cuda/run-device-checks.sh                      # fresh copy: configure, build, test, benchmark
#   cuda/run-device-checks.sh --prebuilt BUILD_DIR # use an already built tree (cuda_tests, engram_cuda_bench)
#
# Steps (each under its own timeout; the whole run stays under 8 minutes):
#  1. dependencies: cmake, g++ and the Debian dev packages the build needs;
#     when one is missing, try scripts/setup.sh (apt-get) but go on if that
#     fails (the GPU box may have no network) and let cmake report what is missing;
#  2. configure (Release, ENGRAM_CUDA=ON, CMAKE_CUDA_ARCHITECTURES=90) and build
#     cuda_tests + engram_cuda_bench with -j16 (skipped with --prebuilt);
#  3. cuda_tests: the device properties (Device.*) and the host launcher;
#  4. compute-sanitizer memcheck over a short device subset (5 cases per
#     property; every kernel family), when installed;
#  5. `engram conform --vectors vectors --lib libengram_cuda_plugin.so` with
#     ENGRAM_CUDA_PLUGIN_BACKEND=device: every vector of the suites the CUDA
#     plug-in claims, on the GPU (builds `engram` and the plug-in first unless
#     --prebuilt; a prebuilt tree must hold them);
#  6. engram_cuda_bench (JSON), and cuda/bench_torch.py when PyTorch imports.
# Outputs go to $OUT when set (else build-dir/device-checks): logs, gtest XML,
# conform_device.json (the runner's --report-json), conform_device.xml (JUnit),
# bench.json, bench_torch.json, failcases/ (vector-style JSON of failing cases),
# summary.json. Exit status: non-zero when a test step failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/cuda-device"
prebuilt=0
while (($#)); do
  case "$1" in
    --prebuilt) build=$(cd "$2" && pwd); prebuilt=1; shift 2 ;;
    --build-dir) build="$2"; shift 2 ;;
    *) echo "usage: $0 [--prebuilt BUILD_DIR | --build-dir DIR]" >&2; exit 2 ;;
  esac
done
out=${OUT:-$build/device-checks}
mkdir -p "$out"
log() { echo "[device-checks $(date +%T)] $*" | tee -a "$out/steps.log" >&2; }
declare -A status
start=$(date +%s)

log "root $root, build $build, out $out"
(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || echo "nvidia-smi unavailable") | tee "$out/nvidia-smi.txt" >&2

if ((prebuilt == 0)); then
  # 1. Dependencies.
  missing=()
  for tool in cmake g++; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  for pkg in libgtest-dev librapidcheck-dev nlohmann-json3-dev libcli11-dev libicu-dev libssl-dev libvalijson-dev; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    log "missing: ${missing[*]}; trying scripts/setup.sh (apt-get)"
    if timeout 150 bash "$root/scripts/setup.sh" >"$out/setup.log" 2>&1; then status[setup]=ok; else status[setup]="failed (see setup.log); continuing"; fi
  else
    status[setup]="nothing missing"
  fi
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  # 2. Configure + build.
  log "configure"
  if cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DENGRAM_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
       -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/configure.log" 2>&1; then
    log "build cuda_tests engram_cuda_bench"
    if timeout 240 cmake --build "$build" -j16 --target cuda_tests engram_cuda_bench >"$out/build.log" 2>&1; then
      status[build]=ok
    else
      status[build]="failed (see build.log)"
    fi
  else
    status[build]="configure failed (see configure.log)"
  fi
  log "build: ${status[build]} ($(($(date +%s) - start)) s)"
  log "build engram engram_cuda_plugin (for step 5)"
  if timeout 180 cmake --build "$build" -j16 --target engram engram_cuda_plugin >"$out/build_conform.log" 2>&1; then
    status[conform_build]=ok
  else
    status[conform_build]="failed (see build_conform.log)"
  fi
  log "build for conform: ${status[conform_build]} ($(($(date +%s) - start)) s)"
fi

tests="$build/cuda/cuda_tests"
bench="$build/cuda/engram_cuda_bench"
if [ ! -x "$tests" ]; then
  log "no $tests; nothing to run"
  status[tests]="not built"
else
  ldd "$tests" | grep "not found" >"$out/ldd-missing.txt" && log "missing shared libraries: $(cat "$out/ldd-missing.txt")"
  # 3. The suite (Device.* properties: 100 cases each; the host launcher too).
  log "cuda_tests"
  if ENGRAM_CUDA_FAILCASE_DIR="$out/failcases" timeout 240 "$tests" --gtest_output="xml:$out/cuda_tests.xml" \
       >"$out/cuda_tests.log" 2>&1; then
    status[tests]=ok
  else
    status[tests]="failed (rc $?; see cuda_tests.log)"
  fi
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran|Falsifiable|seed=" "$out/cuda_tests.log" | tail -30 >&2
  skipped=$(grep -c "^\[  SKIPPED \] Device\." "$out/cuda_tests.log" || true)
  ((skipped > 0)) && status[tests]="${status[tests]}; $((skipped / 2)) Device.* tests SKIPPED (see cuda_tests.log)"
  log "tests: ${status[tests]} ($(($(date +%s) - start)) s)"

  # 4. compute-sanitizer memcheck, a short subset.
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
  if [ -n "$cs" ]; then
    log "compute-sanitizer memcheck"
    if RC_PARAMS="max_success=5" timeout 120 "$cs" --tool memcheck --error-exitcode 3 "$tests" \
         --gtest_filter='Device.DecodeElement*:Device.HashBatches*:Device.Rollback*:Device.RefusalAndFork*:Device.HashThenLookup*:Device.FloatLookup*:Device.LookupMatches*:Device.TensorParallelWorldOne*:Device.Fusion*:Device.Wkv*:Device.Demo*:Device.ShortConv*' \
         >"$out/memcheck.log" 2>&1; then
      status[memcheck]=ok
    else
      status[memcheck]="failed or timed out (rc $?; see memcheck.log)"
    fi
    tail -5 "$out/memcheck.log" >&2
  else
    status[memcheck]="compute-sanitizer not installed"
  fi
  log "memcheck: ${status[memcheck]}"
fi

# 5. The CUDA plug-in through the conformance runner, on the device (spec §CONF.3).
cli="$build/conformance/engram"
plugin="$build/cuda/libengram_cuda_plugin.so"
if [ -x "$cli" ] && [ -f "$plugin" ]; then
  log "engram conform --lib libengram_cuda_plugin.so (device backend)"
  if ENGRAM_CUDA_PLUGIN_BACKEND=device timeout 150 "$cli" conform --vectors "$root/vectors" --lib "$plugin" \
       --report-json "$out/conform_device.json" --junit "$out/conform_device.xml" >"$out/conform_device.log" 2>&1; then
    status[conform]=ok
    # Without a GPU the plug-in claims nothing and every vector is skipped: not a device check.
    grep -q "nothing claimed" "$out/conform_device.log" && status[conform]="skipped: the plug-in found no device (see conform_device.log)"
  else
    status[conform]="failed (rc $?; see conform_device.log)"
  fi
  tail -25 "$out/conform_device.log" >&2
else
  status[conform]="not built ($cli, $plugin)"
fi
log "conform: ${status[conform]} ($(($(date +%s) - start)) s)"

# 6. Benchmarks.
if [ -x "$bench" ]; then
  log "engram_cuda_bench"
  if timeout 150 "$bench" >"$out/bench.json" 2>"$out/bench.err"; then status[bench]=ok; else status[bench]="failed (rc $?; see bench.err)"; fi
  cat "$out/bench.json" >&2
  if python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
    log "bench_torch.py"
    if timeout 90 python3 "$root/cuda/bench_torch.py" --cuda-json "$out/bench.json" >"$out/bench_torch.json" 2>"$out/bench_torch.err"; then
      status[torch]=ok
    else
      status[torch]="failed (see bench_torch.err)"
    fi
    cat "$out/bench_torch.json" >&2
  else
    status[torch]="skipped: python3 -c 'import torch' with CUDA does not work here"
  fi
else
  status[bench]="not built"
fi

{
  echo "{"
  echo "  \"seconds\": $(($(date +%s) - start)),"
  first=1
  for k in setup build conform_build tests memcheck conform bench torch; do
    [ -n "${status[$k]+x}" ] || continue
    ((first)) || echo ","
    first=0
    printf '  "%s": "%s"' "$k" "${status[$k]}"
  done
  echo
  echo "}"
} >"$out/summary.json"
cat "$out/summary.json" >&2
[[ "${status[tests]:-}" == ok* ]] && [[ "${status[build]:-ok}" == ok ]] && [[ "${status[conform_build]:-ok}" == ok ]] && \
  [[ "${status[conform]:-}" != failed* ]]
