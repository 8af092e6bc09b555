// End-to-end tests of the verdict record (spec/conformance.md §CONF.8):
// `engram conform --verdict-json`. Expected values come from the vector files
// and the manifest themselves (counted and hashed here), never from the runner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "testutil/conform.h"

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
  // §CONF.8 fresh random cases of every suite of a level, at a seed the runner draws (no --seed).
  Result r = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --accumulate-max 100000 --random 100 " +
                     "--require-level v4.1-hash --require-level v4.1-full --require-level demo-hash --require-level demo-full " +
                     "--verdict-json " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json record = json::parse(Slurp(path));
  EXPECT_EQ(record["format"], "engram-verdict");
  EXPECT_EQ(record["run"]["random"]["seedDrawn"], true);
  EXPECT_EQ(record["run"]["random"]["suites"]["hash_v41"]["drawn"], 100);
  EXPECT_EQ(record["ok"], true);
  EXPECT_EQ(record["levelsReached"], json::parse(R"(["v4.1-hash", "v4.1-full", "v4.1-serving", "demo-hash", "demo-full"])"));
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

// §CONF.8 A port that answers the fixed vectors from their files, computing
// nothing, passes every fixed test; before, it reached every level. Now a level
// needs fresh random cases, and --require-level turns that into exit 1.
TEST(VerdictRecord, AReplayingPortReachesNoLevel) {
  const fs::path path = Dir() / "verdict_replay.json";
  Result r = Conform("--vectors " + kVectors + " --exec 'python3 " + kHollow + " --mode replay --vectors " + kVectors +
                     "' --accumulate-max 100000 --verdict-json " + path.string());
  const json record = json::parse(Slurp(path));
  EXPECT_EQ(record["levelsReached"], json::array()) << r.out;
  EXPECT_THAT(Reasons(record, "v4.1-hash"), Contains(HasSubstr("no random cases were run")));
  // With the random cases it does not compute, every level names them; a CI job asking for one fails.
  Result random = Conform("--vectors " + kVectors + " --exec 'python3 " + kHollow + " --mode replay --vectors " + kVectors +
                          "' --accumulate-max 100000 --random 100 --random-threads 1 --require-level v4.1-hash --verdict-json " +
                          path.string());
  EXPECT_EQ(random.exit_code, 1) << random.out;
  EXPECT_THAT(random.out, HasSubstr("--require-level v4.1-hash: not reached"));
  const json again = json::parse(Slurp(path));
  EXPECT_EQ(again["levelsReached"], json::array());
  EXPECT_THAT(Reasons(again, "v4.1-hash"), Contains(HasSubstr("hash_v41 (v4.1): ")));
}

// §CONF.8 Options cannot shrink what a level names: --profile v4.1 leaves the
// demo-v1 LayoutTests out, and v4.1-hash (whose layout is every profile's) is
// not reached (before, it was); a seed given with --seed earns no level.
TEST(VerdictRecord, ALevelNamesItsTestsWhateverTheOptions) {
  const json layout = json::parse(Slurp(kVectors + "/v1/layout.json"));
  int64_t demo = 0, all = 0;
  for (const json& g : layout["testGroups"]) {
    for (const json& t : g["tests"]) {
      ++all;
      demo += t.value("profile", g.value("profile", "")) == "demo-v1";
    }
  }
  ASSERT_GT(demo, 0);
  const fs::path path = Dir() / "verdict_profile.json";
  Result r = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --profile v4.1 --suite layout --random 100 " +
                     "--verdict-json " + path.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(Reasons(json::parse(Slurp(path)), "v4.1-hash"),
              Contains("layout: " + std::to_string(demo) + " of its " + std::to_string(all) + " test(s) were not run (--profile left them out)"));
  Result seeded = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --suite layout --random 100 --seed 7 " +
                          "--verdict-json " + path.string());
  EXPECT_THAT(Reasons(json::parse(Slurp(path)), "demo-hash"),
              Contains(HasSubstr("the random seed was given (--seed 7)")));
}

// §CONF.8, §CONF.9 The levels of a sharded run are the merge's: shards that
// each drew a seed reach the levels together, in the merged verdict record.
TEST(VerdictRecord, TheMergeOfShardsWritesTheRecordAndJudgesTheLevels) {
  std::string reports;
  for (int i = 0; i < 2; ++i) {
    const fs::path report = Dir() / ("levels-shard-" + std::to_string(i) + ".json");
    Result r = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --accumulate-max 100000 --random 100 " +
                       "--shard-index " + std::to_string(i) + " --shard-count 2 --report-json " + report.string());
    ASSERT_EQ(r.exit_code, 0) << r.out;
    reports += " " + report.string();
  }
  const fs::path path = Dir() / "verdict_merged.json", out = Dir() / "merged_levels.txt";
  const std::string cmd = std::string(ENGRAM_CLI) + " report merge" + reports + " --require-level demo-full --verdict-json " +
                          path.string() + " >" + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 0) << Slurp(out);
  const json record = json::parse(Slurp(path));
  EXPECT_EQ(record["levelsReached"], json::parse(R"(["v4.1-hash", "v4.1-full", "v4.1-serving", "demo-hash", "demo-full"])")) << Slurp(out);
  EXPECT_EQ(record["run"]["random"]["shardSeeds"].size(), 2u);
  EXPECT_EQ(record["suites"]["hash_v41"]["passed"].dump(), TestsIn("hash_v41"));
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
