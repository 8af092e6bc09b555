// spec/conformance.md — the conformance runner (`engram conform`).
#ifndef ENGRAM_CONFORMANCE_RUNNER_RUNNER_H_
#define ENGRAM_CONFORMANCE_RUNNER_RUNNER_H_

#include <chrono>
#include <filesystem>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace engram::conform {

struct Options {
  std::filesystem::path vectors;       // holds MANIFEST.sha256 and v1/
  std::vector<std::string> command;    // the implementation's argv (JSON-lines, §CONF.2)
  std::set<std::string> suites;        // only these suites (empty: all)
  std::optional<std::string> profile;  // only groups of this profile
  std::set<std::string> features;      // passed to nothing yet; reported
  std::filesystem::path expect_fail;   // §CONF.4 expected-failures file
  std::filesystem::path report_json;
  std::filesystem::path junit;
  std::chrono::milliseconds timeout{10000};
  std::chrono::milliseconds accumulate_timeout{600000};
  int64_t accumulate_max_n = 10000000;  // skip accumulated vectors larger than this
  bool strict_stale = false;
};

// One test's outcome (§CONF.4).
struct TestResult {
  std::string suite;
  int64_t tc_id = 0;
  std::string status;  // pass | fail | skipped | expected-fail | stale
  std::string reason;  // for fail: mismatch | missing output | ...
  std::string detail;  // human-readable explanation
  std::vector<std::string> flags;
  double seconds = 0;
};

// §CONF.1 The keys an implementation must produce for `test` (the expected
// outputs), and `test` with them removed (what is sent). Informative outputs
// (`error`, the fp8_decode tests' `value`) are in neither.
struct SplitTest {
  nlohmann::ordered_json inputs;
  nlohmann::ordered_json expected;  // output key -> expected value
};
// `test` must keep the file's key order (read it as nlohmann::ordered_json,
// never as nlohmann::json, whose objects are sorted alphabetically).
SplitTest SplitOrdered(const std::string& type, const nlohmann::ordered_json& test);

// §CONF.4 Compares returned outputs with the expected ones. Returns an empty
// string when they match, else a description naming the first differing
// element by path. `group` (the test's group without its tests) supplies the
// §FUS.9 `tolerance` of float outputs; without it every output is compared
// exactly (hex floats of §STO.11 still match NaN with NaN, §STO.9).
std::string CompareOrdered(const std::string& type, const nlohmann::ordered_json& group,
                           const nlohmann::ordered_json& expected, const nlohmann::ordered_json& actual);
// The same with no group (no tolerances).
std::string CompareOrdered(const std::string& type, const nlohmann::ordered_json& expected,
                           const nlohmann::ordered_json& actual);

// Runs the whole conformance check; prints the summary to `out`; returns the
// process exit status of §CONF.4 (0, 1, or 2).
int RunConformance(const Options& options, std::ostream& out);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_RUNNER_H_
