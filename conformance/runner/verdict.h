// spec/conformance.md §CONF.4 — a run's verdict from its results: the counts,
// the catalogued divergences the failures match, and the random part.
#ifndef ENGRAM_CONFORMANCE_RUNNER_VERDICT_H_
#define ENGRAM_CONFORMANCE_RUNNER_VERDICT_H_

#include <vector>

#include "conformance/runner/random_run.h"
#include "conformance/runner/report.h"
#include "conformance/runner/run_state.h"
#include "conformance/runner/runner.h"
#include "conformance/runner/vector_set.h"

namespace engram::conform {

// §CONF.4 The verdict's counts (per suite, and in total over the vector
// suites), the problems found while running, the share and the level
// tallies, from the fixed vectors' results and the random cases' counts
// (§CONF.7: every case as it ran, not only the failing ones kept).
Verdict Decide(const Run& run, const RandomRun& random);

// §CONF.4 A diagnosis is printed only when the failures match a catalogued
// divergence: the failed tests of a suite (or of the whole run) are exactly
// the tests carrying one KNOWN_DIVERGENCE flag among those that ran. Adds its
// lines to `v.diagnoses` (suite -> lines; "" for the whole run).
void Diagnose(const VectorSet& vectors, const std::vector<TestResult>& results, Verdict& v);

// §CONF.7 The random part of the verdict: its lines, its JSON object, and the
// saved failures (a directory that cannot be written turns the verdict).
void AddRandom(const Options& options, const RandomRun& random, Verdict& verdict);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_VERDICT_H_
