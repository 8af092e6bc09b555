#!/usr/bin/env bash
# Runs every test: set up, build, the numpy/sympy cross-check oracles, the
# GoogleTest/RapidCheck suites (ctest), the vector checks of the main job, the
# docs, the packaging test, the CUDA stage, the suite again under ASan+UBSan,
# and the fuzzers.
#   scripts/test.sh           everything (what .ci/run runs)
#   scripts/test.sh --quick   the edit-test loop: the release build, its ctest
#                             suites (which regenerate, compare and verify the
#                             vectors: CliVectors.*), the schema lint and the
#                             generated-file checks, Doxygen; no setup, CUDA, ASan, fuzz
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
quick=""
case "${1:-}" in
  --quick) quick=yes ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac

# The time budget of each stage of the full run, in seconds, on the CI machine (2 cores, 24 GiB) from a
# fresh clone with an empty compiler cache: at most 900 s in all. A stage over its budget is reported
# (OVER), never failed: the machine is noisy. Measured runs: docs/ci.md (scripts/ci_times.py).
declare -A budget=(
  [setup]=30 [build]=240 [oracles]=20 [ctest]=120 [vectors]=20 [slurm]=30
  [docs]=25 [layers]=10 [packaging]=30 [python]=60 [cuda]=45
  [asan-build]=150 [asan-ctest]=100 [fuzz]=20
)
stage_name="" stage_t0=0 run_t0=$(date +%s)
stage_lines=()
stage_end() {
  [ -n "$stage_name" ] || return 0
  local t=$(( $(date +%s) - stage_t0 )) b=${budget[$stage_name]}
  local line
  line=$(printf '%-11s %5d s  (budget %4d s)%s' "$stage_name" "$t" "$b" "$( ((t > b)) && echo "  OVER" )")
  echo "stage $line"
  stage_lines+=("$line")
  stage_name=""
}
stage() {  # key (of budget), title
  stage_end
  stage_name=$1 stage_t0=$(date +%s)
  echo "== $2"
}
stage_table() {
  stage_end
  [ ${#stage_lines[@]} -gt 0 ] || return 0
  local total=0 b
  for b in "${budget[@]}"; do total=$((total + b)); done
  echo "== stage times (budget: scripts/test.sh)"
  printf '  %s\n' "${stage_lines[@]}"
  printf '  %-11s %5d s  (budget %4d s)\n' total $(( $(date +%s) - run_t0 )) "$total"
  # the same, machine-readable, for docs/ci.md (scripts/ci_times.py build/test-times.tsv)
  { printf 'commit\t%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf 'date\t%s\n' "$(date -u +%F)"
    printf '%s\n' "${stage_lines[@]}" | awk '{print $1 "\t" $2 "\t" $5}' | tr -d ')'
    printf 'total\t%d\t%d\n' $(( $(date +%s) - run_t0 )) "$total"; } >build/test-times.tsv
}

if [ -z "$quick" ]; then
  stage setup "setup: Debian packages, the Python venv (scripts/setup.sh)"
  scripts/setup.sh
  stage build "build: the release preset"
fi
scripts/build.sh release
py=.venv/bin/python
# The torch ports' adapters run on their stand-ins (ctest ports.standin.*) under Debian's python3 with
# python3-torch, numpy and sympy (setup.sh installs them); without it those tests skip.
if [ -z "${ENGRAM_PORTS_PYTHON:-}" ] && /usr/bin/python3 -c "import torch, numpy, sympy" 2>/dev/null; then
  export ENGRAM_PORTS_PYTHON=/usr/bin/python3
fi

if [ -n "$quick" ]; then
  export ENGRAM_PYTHON="$root/$py"
  # the generated-file checks are ctest tests too (label generated: ctest --preset release -L generated)
  ctest --preset release -j "$(nproc)"
  "$py" scripts/lint_vectors.py vectors >/dev/null
  # Doxygen over spec/ and docs/ (warnings are errors): a few seconds, and the full run's docs stage
  # is where a Markdown construct Doxygen cannot parse would otherwise surface first
  cmake --build --preset release --target docs >/dev/null
  "$py" scripts/html_links.py --check build/release/docs/html-out/html >/dev/null  # every link of the HTML resolves
  echo "quick: release ctest, vectors (regenerated, compared, verified in ctest; schema lint), generated files, Doxygen: OK"
  exit 0
fi
# The sanitizer build starts now, in the background at the lowest priority (nice 19), and the stages up to
# the sanitizer one run beside it: most of them keep one core or less busy (the vector checks, Slurm, the
# docs, packaging, pip), and a niced compile takes only the CPU they leave (docs/ci.md). Its stage then
# waits for it and prints its log.
asan_log=build/asan-build.log asan_rc=build/asan-build.rc asan_pid=""
mkdir -p build
rm -f "$asan_rc"
# (its own process group, so that a run that stops early stops the whole build with it)
setsid bash -c 't0=$(date +%s); nice -n 19 scripts/build.sh asan >"$1" 2>&1; rc=$?; echo "$rc $(( $(date +%s) - t0 ))" >"$2"' \
  _ "$asan_log" "$asan_rc" &
asan_pid=$!
trap '[ -n "$asan_pid" ] && kill -TERM -- "-$asan_pid" 2>/dev/null || true' EXIT
xdir=build/crosscheck
mkdir -p "$xdir"

stage oracles "cross-check oracles (real numpy, sympy)"
"$py" conformance/crosscheck/numpy_multipliers.py --out "$xdir/multipliers.json"
"$py" conformance/crosscheck/numpy_hash.py --out "$xdir/hash.json"
"$py" conformance/crosscheck/hf_token_map.py --out "$xdir/token_map.json"  # HF tokenizers, synthetic + real
"$py" conformance/crosscheck/numpy_storage.py --out "$xdir/storage.json"
"$py" conformance/crosscheck/numpy_fusion.py --out "$xdir/fusion.json"
export ENGRAM_NUMPY_CROSSCHECK="$root/$xdir/multipliers.json"
export ENGRAM_NUMPY_HASH_CROSSCHECK="$root/$xdir/hash.json"
export ENGRAM_HF_TOKEN_MAP_CROSSCHECK="$root/$xdir/token_map.json"
export ENGRAM_NUMPY_STORAGE_CROSSCHECK="$root/$xdir/storage.json"
export ENGRAM_NUMPY_FUSION_CROSSCHECK="$root/$xdir/fusion.json"
export ENGRAM_PYTHON="$root/$py"  # the numpy port and planted bugs in conform_tests

# docs: the walkthrough's tokenization and the figure, recomputed with HF tokenizers/numpy/sympy
"$py" docs/walkthrough/tokenize.py --check
"$py" docs/figures/bucket_load.py --check
export ENGRAM_DEEPSEEK_TOKENIZER="$("$py" docs/walkthrough/tokenize.py --path)"  # docs.walkthrough

stage ctest "unit and property tests"
ctest --preset release -j "$(nproc)"

stage vectors "vectors: verify (every suite recomputed, 10^7 positions included), lint, changelog, a real contract"
engram=build/release/conformance/engram
# Regenerated and compared byte for byte (every suite and MANIFEST.sha256) by the release ctest above
# (CliVectors.GenerateReproducesCommittedAndVerifyCatchesTampering, `engram vectors generate`); its verify
# leaves the accumulated suite's 10^7-position digests to this one.
"$engram" vectors verify vectors >/dev/null
"$py" scripts/lint_vectors.py vectors >/dev/null
# §VEC.11 vectors/CHANGELOG.md: what moved since the previous released set, which still verifies and runs
scripts/check_changelog.sh "$engram" build/release/conformance/libengram_reference_plugin.so
echo "vectors: verified, schema-valid (reproduced byte for byte: ctest CliVectors)"
# §CON.5 a contract from the real tokenizer validates against its schema and verifies
"$engram" contract --config conformance/configs/v41-flash.json --tokenizer "$ENGRAM_DEEPSEEK_TOKENIZER" --out build/contract-v41.json
"$py" scripts/lint_vectors.py --contract build/contract-v41.json
"$engram" contract verify build/contract-v41.json --config conformance/configs/v41-flash.json --tokenizer "$ENGRAM_DEEPSEEK_TOKENIZER" >/dev/null

stage slurm "slurm: a real single-node Slurm runs engram conform as a job array of 4 shards, merged and compared (§CONF.9)"
# munged, slurmctld and slurmd in the foreground under the script, stopped and removed after it; a Slurm
# that cannot start here fails the stage.
slurm_t0=$(date +%s)
scripts/slurm_stage.sh
echo "slurm: stage took $(( $(date +%s) - slurm_t0 )) s"
# The sharded benchmark, small: 2 shards against one process, merged and compared, and the merge of
# synthetic shard reports (scripts/bench_shard_reports.py), so that the sharding benchmark does not rot.
ENGRAM_BIN="$engram" scripts/bench_random.sh --shards 2 40 --merge-results 200

stage docs "docs: Doxygen (warnings are errors), offline (no external fetch), snippets ran in ctest, relative links"
cmake --build --preset release --target docs
"$py" scripts/check_docs_offline.py build/release/docs/html-out/html  # no external fetch; MathJax local
"$py" scripts/check_links.py
"$py" scripts/html_links.py --check build/release/docs/html-out/html  # ... and every link of the generated HTML
# (the generated pages and tables were checked by the release ctest: label generated)
# The requests and passing answers docs/porting.md documents are the real runner's: every test passes
"$engram" conform --vectors vectors --exec "$py scripts/porting_doc.py --replay" | tail -n 1

stage layers "layers: functions a reader can hold (every include runs down: ctest generated.layers)"
# No function a reader cannot hold: at most 150 lines (lizard, PyPI; C++ and Python; CCN is not judged here).
"$py" -m lizard -L 150 -C 1000 -w base reference vectors conformance cuda docs python scripts examples testutil \
  -x "*/build/*" -x "*/.venv/*"

stage packaging "packaging: cmake --install into a prefix and the .deb, each used by a consumer outside the tree"
scripts/test_packaging.sh build/release

stage python "python: pip install . into a fresh venv, the pytest plugin's tests and examples/python (docs/python.md)"
scripts/test_python.sh build/release/conformance/engram

stage cuda "CUDA: engram::cuda built (sm_90 + PTX for sm_80+), its kernel code run by the host launcher against the reference"
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null 2>&1; then
  # Built in the release tree (ENGRAM_CUDA=ON there, the preset cuda's architectures), so that the
  # reference, vectors, runner and CLI it links are the release build's objects, not compiled again.
  cmake --preset release -DENGRAM_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="90-real;80-virtual" >/dev/null
  cmake --build --preset release -j "$(nproc)" --target cuda_tests cuda_plugin_tests engram_cuda_plugin engram_cuda_bench \
    cuda_kernel_code_tests
  # Device.* tests skip without a GPU (GTEST_SKIP); HostLauncher.* and the host conform run execute here.
  # The host properties take milliseconds per 100 cases: CI runs 1000 cases each (a few seconds).
  RC_PARAMS="${RC_PARAMS:-max_success=1000}" build/release/cuda/cuda_tests --gtest_brief=1
  build/release/cuda/cuda_plugin_tests --gtest_brief=1
  # What nvcc made of the kernels (PTX for compute_90, ptxas for sm_90): no 64-bit division in the
  # hash/lookup kernels, the lookup's 16-byte stores, no float32 FMA in the fusion, no spills.
  build/release/cuda/cuda_kernel_code_tests --gtest_brief=1
  # Back to the release configuration the README's commands use (nothing is recompiled).
  cmake --preset release >/dev/null
else
  echo "no nvcc (CUDA toolkit) on this machine: the CUDA stage is skipped"
fi

stage asan-build "sanitizers: the build, with clang, ASan + UBSan (preset asan, with the fuzz targets; started in the background after the release build)"
wait "$asan_pid" || true
asan_pid=""
read -r rc secs <"$asan_rc" || { echo "asan-build: the background build left no status" >&2; tail -n 40 "$asan_log" >&2; exit 1; }
tail -n 3 "$asan_log"
[ "$rc" = 0 ] || { echo "asan-build: the build failed (exit $rc):" >&2; tail -n 60 "$asan_log" >&2; exit 1; }
echo "asan-build: the background build took $secs s from start to end; this stage is the part not yet done"
stage asan-ctest "sanitizers: the test suite again under ASan + UBSan (the planted-bug families: one instance per suite family)"
# RapidCheck draws 25 cases per law here (the sanitizers look at code paths, not values); the planted-bug
# families run one instance per suite family (conformance/runner/planted_representatives.txt: the others
# differ only in Python, which is not instrumented); the stand-ins and generated-file checks run no C++ of ours.
reps=conformance/runner/planted_representatives.txt
want=$(grep -vc '^#' "$reps")
n=$(ctest --preset asan -N -L '^planted$' | awk '/Total Tests:/ {print $3}')
[ "$n" = "$want" ] || { echo "asan-ctest: $reps names $want test(s), $n found: a name changed" >&2; exit 1; }
RC_PARAMS="${RC_PARAMS:-max_success=25}" ctest --preset asan -j "$(nproc)" -LE '^(generated|planted-other|standin)$'

stage fuzz "fuzz: every loader and the protocol comparison, briefly (the asan build's libFuzzer targets; longer: scripts/fuzz.sh 600)"
# 5 s per target here (6 targets, two at a time: the stage budget); the corpora and the regression inputs
# of every earlier finding replay first. Longer: scripts/fuzz.sh 600, or ENGRAM_FUZZ_SECONDS.
scripts/fuzz.sh "${ENGRAM_FUZZ_SECONDS:-5}"
stage_table
