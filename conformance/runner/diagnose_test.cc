// The diagnosis (verdict.h Diagnose) alone, on results built here: spec/
// conformance.md §CONF.4 names a failure pattern only when a suite's failed
// tests are exactly the tests that ran carrying one KNOWN_DIVERGENCE flag,
// some tests that ran lack it, and the failures are computed differences
// (a mismatch or an accepted invalid input; refusals only beside one; never
// a crash, a timeout, garbage or a missing output). The planted bugs of
// runner_test.cc show it end to end on the committed vectors.
#include "conformance/runner/verdict.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// A namespace of its own: the test files are compiled in batches (ENGRAM_UNITY_TESTS).
namespace engram::conform::diagnose_tests {
namespace {

using json = nlohmann::ordered_json;
using ::testing::HasSubstr;

// A suite whose notes catalogue F and G as divergences and N as something else.
SuiteFile Suite(const std::string& name) {
  return {name, json::parse(R"({"notes": {
      "F": {"bugType": "KNOWN_DIVERGENCE", "description": "F's port reads the table backwards"},
      "G": {"bugType": "KNOWN_DIVERGENCE", "description": "G's port drops the pad"},
      "N": {"bugType": "EDGE_CASE", "description": "an edge"}}, "testGroups": []})")};
}

TestResult Ran(const std::string& suite, int64_t tc_id, const std::string& status, const std::string& reason,
               std::vector<std::string> flags) {
  TestResult r;
  r.suite = suite;
  r.tc_id = tc_id;
  r.status = status;
  r.reason = reason;
  r.flags = std::move(flags);
  return r;
}

// Suite "s": tests 1 and 2 flagged F, 3 flagged N, 4 unflagged; 1 and 2 fail with `reason`.
std::vector<TestResult> FailingF(const std::string& reason1, const std::string& reason2) {
  return {Ran("s", 1, "fail", reason1, {"F"}), Ran("s", 2, "fail", reason2, {"F"}), Ran("s", 3, "pass", "", {"N"}),
          Ran("s", 4, "pass", "", {})};
}

Verdict Diagnosed(const std::vector<SuiteFile>& suites, const std::vector<TestResult>& results) {
  VectorSet vectors;
  vectors.suites = suites;
  Verdict v;
  Diagnose(vectors, results, v);
  return v;
}

TEST(Diagnose, NamesTheFlagWhoseTestsAreExactlyTheFailures) {
  Verdict v = Diagnosed({Suite("s")}, FailingF("mismatch", "accepted invalid input"));
  ASSERT_EQ(v.diagnoses["s"].size(), 1u);
  EXPECT_THAT(v.diagnoses["s"][0], HasSubstr("the 2 failure(s) are exactly the tests flagged F"));
  EXPECT_THAT(v.diagnoses["s"][0], HasSubstr("F's port reads the table backwards"));  // with the note
  EXPECT_EQ(v.diagnoses.count(""), 0u);  // one suite: no run-level line besides its own
}

TEST(Diagnose, RefusalsCountOnlyBesideAComputedDifference) {
  EXPECT_EQ(Diagnosed({Suite("s")}, FailingF("mismatch", "refused valid input")).diagnoses["s"].size(), 1u);
  EXPECT_TRUE(Diagnosed({Suite("s")}, FailingF("refused valid input", "refused valid input")).diagnoses.empty());
}

TEST(Diagnose, NoDiagnosisBesideACrashTimeoutGarbageOrMissingOutput) {
  for (const char* other : {"crashed", "timeout", "garbage", "missing output"}) {
    EXPECT_TRUE(Diagnosed({Suite("s")}, FailingF("mismatch", other)).diagnoses.empty()) << other;
  }
}

TEST(Diagnose, TheFailuresMustBeExactlyTheFlaggedTests) {
  std::vector<TestResult> one_of_two = FailingF("mismatch", "mismatch");
  one_of_two[1].status = "pass";  // F flags tests 1 and 2; only 1 fails
  EXPECT_TRUE(Diagnosed({Suite("s")}, one_of_two).diagnoses.empty());
  std::vector<TestResult> one_more = FailingF("mismatch", "mismatch");
  one_more[3] = Ran("s", 4, "fail", "mismatch", {});  // a failure F does not flag
  EXPECT_TRUE(Diagnosed({Suite("s")}, one_more).diagnoses.empty());
}

TEST(Diagnose, OnlyAKnownDivergenceIsNamed) {
  const std::vector<TestResult> results = {Ran("s", 1, "pass", "", {"F"}), Ran("s", 3, "fail", "mismatch", {"N"}),
                                           Ran("s", 4, "pass", "", {})};
  EXPECT_TRUE(Diagnosed({Suite("s")}, results).diagnoses.empty());
}

TEST(Diagnose, NeedsATestThatRanWithoutTheFlag) {
  // The flagged tests alone ran (the others skipped): no contrast, no evidence.
  std::vector<TestResult> results = FailingF("mismatch", "mismatch");
  results[2].status = results[3].status = "skipped";
  EXPECT_TRUE(Diagnosed({Suite("s")}, results).diagnoses.empty());
}

TEST(Diagnose, TwoFlagsOnTheSameTestsAreBothNamed) {
  std::vector<TestResult> results = FailingF("mismatch", "mismatch");
  results[0].flags = results[1].flags = {"F", "G"};
  Verdict v = Diagnosed({Suite("s")}, results);
  ASSERT_EQ(v.diagnoses["s"].size(), 1u);
  EXPECT_THAT(v.diagnoses["s"][0], HasSubstr("flagged F and exactly those flagged G"));
}

TEST(Diagnose, ARunLevelLineWhenOneFlagAccountsForEveryFailureAcrossSuites) {
  std::vector<TestResult> results = FailingF("mismatch", "mismatch");
  results[1].status = "pass";
  results.push_back(Ran("t", 1, "fail", "mismatch", {"F"}));
  results.push_back(Ran("t", 2, "pass", "", {}));
  Verdict v = Diagnosed({Suite("s"), Suite("t")}, results);
  EXPECT_TRUE(v.diagnoses["s"].empty());  // test 2 of s is flagged F and passes: not s alone
  EXPECT_EQ(v.diagnoses["t"].size(), 1u);
  EXPECT_TRUE(v.diagnoses[""].empty());  // F also flags s:2, which passes: no run-level line
  // Every flagged test fails, in both suites: the run-level line.
  results[1].status = "fail";
  results[1].reason = "mismatch";
  Verdict w = Diagnosed({Suite("s"), Suite("t")}, results);
  ASSERT_EQ(w.diagnoses[""].size(), 1u);
  EXPECT_THAT(w.diagnoses[""][0], HasSubstr("every failure of this run, and nothing else, is a test flagged F"));
}

}  // namespace
}  // namespace engram::conform::diagnose_tests
