// End-to-end tests of the verdict record (spec/conformance.md §CONF.8):
// `engram conform --verdict-json`. Expected values come from the vector files
// and the manifest themselves (counted and hashed here), never from the runner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "conformance/runner/conform_test_util.h"

namespace {

using namespace engram::conform::test;
using nlohmann::json;
using testing::Contains;
using testing::HasSubstr;

const std::string kHollow = std::string(ENGRAM_SOURCE_DIR) + "/conformance/runner/testdata/hollow_port.py";
const std::string kSchema = std::string(ENGRAM_SOURCE_DIR) + "/conformance/schema/verdict.schema.json";

std::string Python() {
  const char* p = std::getenv("ENGRAM_PYTHON");
  return p != nullptr ? p : "";
}

std::vector<std::string> Reasons(const json& record, const std::string& level) {
  for (const json& l : record["levels"]) {
    if (l["name"] == level) return l["reasons"].get<std::vector<std::string>>();
  }
  ADD_FAILURE() << "no level " << level;
  return {};
}

// The reference plug-in reaches every level; the record names the spec
// version and the manifest's digest as the files say them.
TEST(VerdictRecord, TheReferencePluginReachesEveryLevel) {
  const fs::path path = Dir() / "verdict_ref.json";
  Result r = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --accumulate-max 100000 --verdict-json " +
                     path.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json record = json::parse(Slurp(path));
  EXPECT_EQ(record["format"], "engram-verdict");
  EXPECT_EQ(record["ok"], true);
  EXPECT_EQ(record["levelsReached"], json::parse(R"(["v4.1-hash", "v4.1-full", "demo-hash", "demo-full"])"));
  for (const json& l : record["levels"]) EXPECT_EQ(l["reasons"], json::array()) << l.dump();
  const json hash_v41 = json::parse(Slurp(kVectors + "/v1/hash_v41.json"));
  EXPECT_EQ(record["specVersion"], hash_v41["specVersion"]);
  EXPECT_EQ(record["vectors"]["manifestSha256"], engram::Sha256Hex(Slurp(kVectors + "/MANIFEST.sha256")));
  // §VEC.13 the committed set: this version's release, or its unreleased set (a level is reached against either)
  const std::string kind = record["vectors"]["kind"];
  const std::string spec = hash_v41["specVersion"];
  EXPECT_TRUE(kind == "released set " + spec ||
              kind == "unreleased set " + spec + " (the set this tool was built with; not a release)") << kind;
  EXPECT_EQ(record["vectors"]["released"], kind.rfind("released", 0) == 0);
  EXPECT_EQ(record["suites"]["hash_v41"]["passed"].dump(), TestsIn("hash_v41"));
  EXPECT_EQ(record["counts"]["failed"], 0);
  EXPECT_EQ(record["run"]["random"], nullptr);
  EXPECT_THAT(record["implementation"]["suites"].get<std::vector<std::string>>(), Contains("hash_v41"));
  if (Python().empty() || std::system((Python() + " -c 'import jsonschema' >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with jsonschema to check the record against its schema";
  }
  const std::string check = Python() + " -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), "
                                       "json.load(open(sys.argv[2])))' " +
                            path.string() + " " + kSchema;
  EXPECT_EQ(std::system(check.c_str()), 0) << "the record does not match " << kSchema;
}

// §CONF.8 A level needs every suite of it: a run of some suites reaches
// none, and says which suites were not run; a random run records its seed.
TEST(VerdictRecord, ALevelNeedsEverySuiteOfIt) {
  const fs::path path = Dir() / "verdict_some.json";
  Result r = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN +
                     " --suite hash_v41 --suite layout --random 3 --seed 7 --verdict-json " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json record = json::parse(Slurp(path));
  EXPECT_EQ(record["levelsReached"], json::array());
  EXPECT_THAT(Reasons(record, "v4.1-hash"), Contains("multipliers: not run (--suite)"));
  EXPECT_THAT(Reasons(record, "v4.1-hash"), Contains("hash_state (v4.1): not run (--suite)"));
  EXPECT_THAT(Reasons(record, "v4.1-hash"), testing::Not(Contains(HasSubstr("hash_v41"))));
  EXPECT_EQ(record["run"]["random"]["seed"], 7);
  EXPECT_EQ(record["run"]["random"]["casesPerSuite"], 3);
  EXPECT_EQ(record["run"]["random"]["suites"]["layout"]["asked"], 3);
  EXPECT_EQ(record["run"]["suites"], json::parse(R"(["hash_v41", "layout"])"));
}

// §CONF.8 A port that computes nothing reaches no level, and each level says why.
TEST(VerdictRecord, AFailingPortReachesNoLevelAndSaysWhy) {
  const fs::path path = Dir() / "verdict_refuse.json";
  Result r = Conform("--vectors " + kVectors + " --exec 'python3 " + kHollow + " --mode refuse' --suite multipliers " +
                     "--suite layout --verdict-json " + path.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const json record = json::parse(Slurp(path));
  EXPECT_EQ(record["ok"], false);
  EXPECT_EQ(record["levelsReached"], json::array());
  EXPECT_THAT(Reasons(record, "demo-hash"), Contains(HasSubstr("multipliers: ")));
  EXPECT_THAT(Reasons(record, "demo-hash"), Contains(testing::MatchesRegex("layout: [0-9]+ test\\(s\\) failed")));
  EXPECT_THAT(record["verdict"].get<std::string>(), HasSubstr("conformance: FAILED"));
}

// The record is a third report: the same path as another is refused before any test.
TEST(VerdictRecord, ThePathIsCheckedBeforeTheRun) {
  const fs::path same = Dir() / "same.json";
  Result r = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --suite layout --report-json " +
                     same.string() + " --verdict-json " + same.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, HasSubstr("--verdict-json and --report-json name the same file"));
  Result dir = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --suite layout --verdict-json " +
                       Dir().string());
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_THAT(dir.out, HasSubstr("--verdict-json"));
}

}  // namespace
