// spec/conformance.md §CONF.4 — a run's verdict and its reports: the summary
// on stdout, --report-json, --junit.
#ifndef ENGRAM_CONFORMANCE_RUNNER_REPORT_H_
#define ENGRAM_CONFORMANCE_RUNNER_REPORT_H_

#include <filesystem>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/runner/runner.h"
#include "conformance/runner/shard.h"
#include "vectors/manifest.h"

namespace engram::conform {

// Counts of one suite (or of the whole run, vector suites only). Kept as
// counts, not as a list of results, so that a long random run costs no memory
// per case (§CONF.7, §ERR.3): the runner keeps only the fixed vectors' results
// and the failing random cases.
struct Counts {
  int64_t passed = 0, failed = 0, skipped = 0, expected_fail = 0, stale = 0;
  // §CONF.4 valid tests whose outputs matched (pass or stale) and that are not
  // trivial: the tests that show the implementation computed something.
  int64_t tested = 0;
  int64_t trivial = 0;   // valid trivial tests that passed (shown, never counted as tested)
  int64_t refused = 0;   // invalid inputs rightly refused
  int64_t sent = 0;      // tests the implementation saw (answered, or answered unsupported)
  std::map<std::string, int64_t> skip_reasons;
  void Add(const TestResult& r);
  void Merge(const Counts& other);
};

// §CONF.8 What a level asks of the fixed vectors of one suite and profile, in
// this process's share of them: the tests the file holds (whatever --profile
// or --suite selected), those that ran, failed (or were expected failures),
// were skipped (but for --accumulate-max's limit, which the user set), and
// were tested (§CONF.4). Summed over the shards of a run it is the run's.
struct LevelTally {
  int64_t tests = 0, run = 0, failed = 0, skipped = 0, tested = 0;
  void Add(const TestResult& r);  // one result of a test counted in `tests`
  void Merge(const LevelTally& o);
  bool operator==(const LevelTally&) const = default;
};
// suite -> the test's profile ("" for a test of no profile) -> tally.
using LevelTallies = std::map<std::string, std::map<std::string, LevelTally>>;
nlohmann::ordered_json TalliesJson(const LevelTallies& t);

// §CONF.4 The verdict: OK only when at least one valid test of the vector
// suites passed (refusing invalid inputs alone tests nothing), no test and no
// contract check failed, and no suite-level problem (a suite stopped after
// consecutive timeouts, a requested or answered suite in which no valid test
// passed) was found.
struct Verdict {
  Counts total;                                  // the vector suites (not the contract checks)
  int64_t tested = 0;                            // non-trivial valid tests whose outputs matched (pass or stale)
  int64_t trivial = 0;                           // trivial valid tests that passed (not counted as tested)
  std::map<std::string, Counts> suites;          // every suite, "contract" included
  std::map<std::string, std::vector<std::string>> suite_problems;
  std::vector<std::string> problems;             // run-level ("nothing was tested", ...)
  // §CONF.4 catalogued divergences the failures match: suite -> lines.
  std::map<std::string, std::vector<std::string>> diagnoses;
  bool strict_stale = false;
  // §CONF.7 the random phase: summary lines, and its --report-json object.
  std::vector<std::string> random_lines;
  nlohmann::ordered_json random;
  std::vector<std::string> level_lines;  // §CONF.8 the levels reached (not for a shard)
  // §VEC.13 The vectors judged against (vectors::SetKind::Describe(), decided
  // from the SHA-256 of their MANIFEST.sha256), and that digest. Known: a
  // released set or this tool's own unreleased one.
  std::string vectors_kind;
  std::string manifest_sha256;
  bool vectors_released = false;
  bool vectors_known = false;
  void SetVectors(const vectors::SetKind& kind) {
    vectors_kind = kind.Describe();
    manifest_sha256 = kind.manifest_sha256;
    vectors_released = kind.released.has_value();
    vectors_known = kind.Known();
  }
  // §CONF.9 the share of the work this verdict is about: a lone shard of
  // several is never OK (its line says PARTIAL); it is clean when nothing in
  // it failed.
  Shard shard;
  nlohmann::ordered_json shard_record;  // --report-json "shard" (§CONF.9 item 2)
  LevelTallies tallies;                 // §CONF.8 the fixed vectors per suite and profile
  bool ShardClean() const;
  std::string PartialLine() const;
  std::string VectorsLine() const;  // "vectors: <kind> (manifest sha256 <hex>)"
  bool Ok() const;
  // "conformance: OK: ..." or "conformance: FAILED: ...", ending "(vectors: <kind>)".
  std::string Line() const;
};

// Prints the per-suite summary (counts, the first failures with their
// details, diagnoses, suite problems) and, last, the verdict line.
void PrintSummary(const std::vector<TestResult>& results, const Verdict& verdict,
                  const std::filesystem::path& expect_fail, std::ostream& out);

// --report-json: the implementation's hello, the verdict and every result
// (failures with what the implementation returned), as the file's text.
std::string JsonReport(const nlohmann::ordered_json& hello, const std::vector<TestResult>& results, const Verdict& verdict);

// --junit: one testsuite per vector suite, one testcase per tcId, and one
// testcase "suite" per suite-level problem, as the file's text.
std::string JunitReport(const std::vector<TestResult>& results, const Verdict& verdict);
/// Text made safe for an XML attribute or element (JUnit reports; control
/// characters other than newline and tab become spaces, as XML 1.0 allows none).
std::string XmlEscape(const std::string& s);

// §CONF.4 What the verdict of a whole run asks of its scope, decided from the
// counts alone (so that the merge of shards decides it as a single run does,
// §CONF.9): every suite asked for with --suite, or answered, has a non-trivial
// valid test that passed, --random N drew a case, something was tested.
struct Scope {
  std::vector<std::string> vector_suites;  // the suites of the vectors, in their order
  std::set<std::string> requested;         // --suite
  bool random_only = false;
  int64_t random_cases = 0;
  int64_t random_asked = 0;                // random cases sent to the implementation, all suites
};
// Adds to `v.suite_problems` and `v.problems`; `v.suites`, `v.total` and
// `v.tested` must hold the counts.
void DecideScope(const Scope& scope, Verdict& v);

// §CONF.9 item 2 Counts as JSON (every field, skip reasons included) and back.
nlohmann::ordered_json CountsJson(const Counts& c);
Counts CountsFromJson(const nlohmann::ordered_json& j);  // throws nlohmann's exceptions on a wrong shape

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_REPORT_H_
