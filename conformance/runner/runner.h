// spec/conformance.md — the conformance runner (`engram conform`).
#ifndef ENGRAM_CONFORMANCE_RUNNER_RUNNER_H_
#define ENGRAM_CONFORMANCE_RUNNER_RUNNER_H_

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/runner/shard.h"
#include "vectors/compare.h"

namespace engram::conform {

struct Options {
  std::filesystem::path vectors;       // holds MANIFEST.sha256 and v1/
  std::vector<std::string> command;    // the implementation's argv (JSON-lines, §CONF.2)
  std::set<std::string> suites;        // only these suites (empty: all)
  std::optional<std::string> profile;  // only groups of this profile
  std::set<std::string> features;      // --features: declared besides the hello's (§CONF.7 policy features)
  std::filesystem::path expect_fail;   // §CONF.4 expected-failures file
  std::filesystem::path report_json;
  std::filesystem::path junit;
  std::filesystem::path verdict_json;  // §CONF.8 the verdict record
  std::chrono::milliseconds timeout{10000};
  std::chrono::milliseconds accumulate_timeout{600000};
  int64_t accumulate_max_n = 10000000;  // skip accumulated vectors larger than this
  // §CONF.4 a suite whose tests go unanswered this many times in a row is
  // stopped (its remaining tests are not run) and fails; 0: never stop.
  int max_consecutive_timeouts = 3;
  bool strict_stale = false;
  // §CONF.7 Randomized conformance: `random_cases` cases per suite that has a
  // generator, drawn from `random_seed`, after the fixed vectors (or alone).
  int64_t random_cases = 0;
  uint64_t random_seed = 0;
  // §CONF.8 Whether the runner drew `random_seed` itself (no --seed): only
  // such cases are fresh to the implementation, and only they earn a level.
  bool seed_drawn = false;
  bool random_only = false;
  std::filesystem::path save_failures;  // the shrunk failing cases, as a vectors directory
  int max_random_failures = 1;          // per suite: stop drawing after this many failing cases
  int64_t max_shrunk = -1;              // per suite: shrink and keep at most this many failing cases (-1: all)
  double random_seconds = 0;            // per suite: stop drawing after this many seconds (0: no limit)
  int64_t shrink_calls = 2000;          // the most implementation calls spent shrinking one failure
  int random_threads = 1;               // threads drawing the cases ahead (vectors/random_stream.h); 1: on demand
  // §CONF.9 The share of the work this process runs (index 0 of 1: all of it).
  Shard shard;
  // §CONF.8 --require-level: the run fails unless it reaches each of these.
  std::vector<std::string> require_levels;
  // The options that select the implementation ("--lib L" or "--exec 'CMD'"),
  // for the replay lines.
  std::string implementation_args;
};

// One test's outcome (§CONF.4).
struct TestResult {
  std::string suite;
  int64_t tc_id = 0;
  std::string status;  // pass | fail | skipped | expected-fail | stale
  std::string reason;  // fail: mismatch | missing output | ...; skipped: not claimed | unsupported | limit | stopped
  std::string detail;  // human-readable explanation
  std::vector<std::string> flags;
  bool valid = false;  // the vector's result: "valid" (outputs expected) or "invalid" (a refusal expected)
  // §CONF.8 the profile of the test (its own, else its group's; "" for none):
  // what a level's suites are restricted to.
  std::string profile;
  // §CONF.4 a valid test a port passes without computing anything
  // (vectors/trivial.h): its pass does not count as tested.
  bool trivial = false;
  double seconds = 0;
  // §CONF.4 what the implementation answered (failures only; null when it
  // gave no answer): the report shows a port author what their code returned.
  nlohmann::ordered_json returned;
};

// Runs the whole conformance check; prints the summary to `out`; returns the
// process exit status of §CONF.4: 0 when the verdict is OK (at least one test
// passed, nothing failed), 1 otherwise, 2 when the run could not start.
int RunConformance(const Options& options, std::ostream& out);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_RUNNER_H_
