// Expected failures (expect_fail.h) alone: the two forms of the file of
// spec/conformance.md §CONF.4, the entries it refuses (an entry naming a test
// the vectors lack would silently never match), and what a listed test's
// result becomes (expected-fail when it fails, stale when it passes).
#include "conformance/runner/expect_fail.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"

// A namespace of its own: the test files are compiled in batches (ENGRAM_UNITY_TESTS).
namespace engram::conform::expect_fail_tests {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using ::testing::HasSubstr;

// Vectors of two suites (layout: tcIds 1, 2, 5; hash_demo: tcId 7) and two
// contract configurations (ids 1 and 2).
VectorSet TwoSuites() {
  VectorSet v;
  v.suites.push_back({"hash_demo", json::parse(R"({"testGroups": [{"type": "HashTest", "tests": [{"tcId": 7}]}]})")});
  v.suites.push_back({"layout", json::parse(R"({"testGroups": [{"type": "LayoutTest", "tests": [{"tcId": 1}, {"tcId": 2}]},
                                                              {"type": "LayoutTest", "tests": [{"tcId": 5}]}]})")});
  v.contract_ids = {{"first configuration", 1}, {"second configuration", 2}};
  return v;
}

class ExpectFailFile : public ::testing::Test {
 protected:
  fs::path dir_ = fs::temp_directory_path() / ("engram_expect_fail_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path Write(const std::string& text) {
    const fs::path p = dir_ / "expect.json";
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // The message LoadExpectFail refuses `text` with ("" when it accepts it).
  std::string Refusal(const std::string& text) {
    try {
      LoadExpectFail(Write(text), TwoSuites());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(ExpectFailFile, NoFileListsNothing) {
  const ExpectFail none = LoadExpectFail(fs::path(), TwoSuites());
  EXPECT_TRUE(none.ids.empty());
}

TEST_F(ExpectFailFile, BothFormsListTheSameTests) {
  const ExpectFail object = LoadExpectFail(Write(R"({"layout": [1, 5], "hash_demo": [7], "contract": [2]})"), TwoSuites());
  const ExpectFail list = LoadExpectFail(Write(R"(["layout:1", "layout:5", "hash_demo:7", "contract:2"])"), TwoSuites());
  EXPECT_EQ(object.ids, list.ids);
  EXPECT_TRUE(list.Contains("layout", 1));
  EXPECT_TRUE(list.Contains("layout", 5));
  EXPECT_TRUE(list.Contains("hash_demo", 7));
  EXPECT_TRUE(list.Contains("contract", 2));
  EXPECT_FALSE(list.Contains("layout", 2));     // in the vectors, not listed
  EXPECT_FALSE(list.Contains("hash_demo", 1));  // listed under another suite
  EXPECT_FALSE(list.Contains("contract", 1));
}

TEST_F(ExpectFailFile, RefusesWhatIsNeitherForm) {
  EXPECT_THAT(Refusal("7"), HasSubstr("expected an object {suite: [tcId...]} or a list of \"suite:tcId\""));
  EXPECT_THAT(Refusal(R"("layout:1")"), HasSubstr("expected an object"));
  EXPECT_THAT(Refusal(R"({"layout": 1})"), HasSubstr("key 'layout': expected a list of tcIds"));
  EXPECT_THAT(Refusal(R"({"layout": ["1"]})"), HasSubstr("key 'layout': \"1\" is not a tcId"));
  EXPECT_THAT(Refusal(R"({"layout": [1.5]})"), HasSubstr("key 'layout': 1.5 is not a tcId"));
  for (const char* entry : {R"("layout")", R"("layout:")", R"("layout:1x")", R"("layout:x1")", R"(1)", R"(["layout", 1])",
                            R"("layout: 1")", R"("layout:+2")", R"("layout:-0")", R"("layout:0x1")",
                            R"("layout:99999999999999999999")"}) {
    EXPECT_THAT(Refusal(std::string("[") + entry + "]"), HasSubstr("is not \"suite:tcId\"")) << entry;
  }
  EXPECT_THAT(Refusal("{"), HasSubstr("expect.json"));  // not JSON: the file is named
}

TEST_F(ExpectFailFile, RefusesEntriesTheVectorsDoNotHave) {
  const std::string where = (dir_ / "expect.json").string() + ": ";
  EXPECT_EQ(Refusal(R"({"fusion": [1]})"), where + "suite 'fusion' is not in the vectors");
  EXPECT_EQ(Refusal(R"(["layout:3"])"), where + "suite 'layout' has no tcId 3");
  EXPECT_EQ(Refusal(R"({"hash_demo": [1]})"), where + "suite 'hash_demo' has no tcId 1");
  EXPECT_EQ(Refusal(R"(["contract:0"])"), where + "suite 'contract' has no check 0 (the vectors have 2 configurations)");
  EXPECT_EQ(Refusal(R"(["contract:3"])"), where + "suite 'contract' has no check 3 (the vectors have 2 configurations)");
  // One bad entry refuses the whole file, whatever else it lists.
  EXPECT_THAT(Refusal(R"({"layout": [1, 2], "hash_demo": [7, 8]})"), HasSubstr("suite 'hash_demo' has no tcId 8"));
}

TestResult Result(const std::string& suite, int64_t tc_id, const std::string& status) {
  TestResult r;
  r.suite = suite;
  r.tc_id = tc_id;
  r.status = status;
  r.detail = "as judged";
  return r;
}

TEST(ApplyExpectFail, AListedFailureIsExpectedAndAListedPassIsStale) {
  ExpectFail listed;
  listed.ids["layout"] = {1, 2, 5};
  TestResult failing = Result("layout", 1, "fail");
  ApplyExpectFail(listed, failing);
  EXPECT_EQ(failing.status, "expected-fail");
  EXPECT_EQ(failing.detail, "as judged");  // the failure's own detail is kept for the report

  TestResult passing = Result("layout", 2, "pass");
  ApplyExpectFail(listed, passing);
  EXPECT_EQ(passing.status, "stale");
  EXPECT_EQ(passing.detail, "listed as an expected failure but passes");

  // Skipped is neither failing nor passing: a listed test that did not run stays skipped.
  TestResult skipped = Result("layout", 5, "skipped");
  ApplyExpectFail(listed, skipped);
  EXPECT_EQ(skipped.status, "skipped");
}

TEST(ApplyExpectFail, TestsNotListedAreLeftAsJudged) {
  ExpectFail listed;
  listed.ids["layout"] = {1};
  for (const auto& [suite, id] : {std::pair<std::string, int64_t>{"layout", 2}, {"hash_demo", 1}, {"contract", 1}}) {
    for (const char* status : {"fail", "pass"}) {
      TestResult r = Result(suite, id, status);
      ApplyExpectFail(listed, r);
      EXPECT_EQ(r.status, status) << suite << ":" << id;
      EXPECT_EQ(r.detail, "as judged");
    }
  }
}

}  // namespace
}  // namespace engram::conform::expect_fail_tests
