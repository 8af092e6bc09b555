// spec/conformance.md §CONF.9 — shards of a run and their merge: the shares
// (a law, RapidCheck), the sources of the shard in the environment, and end to
// end: 1, 3 and 7 shards of the same work merged equal the single run, and
// every kind of wrong set of shards is refused with no verdict.
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "base/error.h"
#include "conformance/runner/merge.h"
#include "conformance/runner/shard.h"
#include "testutil/conform.h"
#include "testutil/sanitized.h"
#include "vectors/random_cases.h"

namespace engram::conform {
namespace {

namespace fs = std::filesystem;
using test::Conform;
using test::Dir;
using test::Slurp;
using json = nlohmann::json;

// §CONF.9 item 1: contiguous, disjoint, covering [0, n) in order, sizes within one.
RC_GTEST_PROP(ShardRangeLaw, SharesCoverEveryCaseOnceInOrder, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(0, 100000000);
  const int64_t count = *rc::gen::inRange<int64_t>(1, 5000);
  int64_t end = 0, smallest = n, largest = 0;
  for (int64_t i = 0; i < count; ++i) {
    const auto [b, e] = ShardRange(n, i, count);
    RC_ASSERT(b == end);
    RC_ASSERT(e >= b);
    smallest = std::min(smallest, e - b);
    largest = std::max(largest, e - b);
    end = e;
  }
  RC_ASSERT(end == n);
  RC_ASSERT(largest - smallest <= 1);
}

// §CONF.9 item 2: the digest is a sum, so any split of the requests adds up.
RC_GTEST_PROP(CaseDigestLaw, ShardsAddUpToTheWhole, ()) {
  const auto lines = *rc::gen::container<std::vector<std::string>>(rc::gen::arbitrary<std::string>());
  const size_t cut = lines.empty() ? 0 : *rc::gen::inRange<size_t>(0, lines.size());
  CaseDigest whole, a, b;
  for (size_t i = 0; i < lines.size(); ++i) whole.Add(lines[i]);
  for (size_t i = 0; i < cut; ++i) a.Add(lines[i]);
  for (size_t i = lines.size(); i > cut; --i) b.Add(lines[i - 1]);  // the other part, in reverse order
  CaseDigest sum;
  sum.Add(b);
  sum.Add(a);
  RC_ASSERT(sum.Hex() == whole.Hex());
  RC_ASSERT(sum.cases == static_cast<int64_t>(lines.size()));
}

std::function<std::optional<std::string>(const char*)> Env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

std::string Refusal(std::optional<int64_t> i, std::optional<int64_t> n, std::map<std::string, std::string> vars) {
  try {
    ChooseShard(i, n, Env(std::move(vars)));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ChooseShard, FlagsThenTheEnvironmentInTheOrderOfTheSpec) {
  const std::map<std::string, std::string> all = {
      {"GTEST_SHARD_INDEX", "1"},  {"GTEST_TOTAL_SHARDS", "2"},  {"TEST_SHARD_INDEX", "2"},     {"TEST_TOTAL_SHARDS", "3"},
      {"SLURM_ARRAY_TASK_ID", "7"}, {"SLURM_ARRAY_TASK_MIN", "4"}, {"SLURM_ARRAY_TASK_COUNT", "5"},
      {"JOB_COMPLETION_INDEX", "4"}, {"CIRCLE_NODE_INDEX", "5"},   {"CIRCLE_NODE_TOTAL", "6"}};
  Shard s = ChooseShard(0, 9, Env(all));
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.count, 9);
  EXPECT_EQ(s.source, "--shard-index/--shard-count");
  // Each source in turn, the ones before it unset.
  const std::vector<std::pair<std::vector<std::string>, std::tuple<int64_t, int64_t, std::string>>> order = {
      {{}, {1, 2, "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS"}},
      {{"GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS"}, {2, 3, "TEST_SHARD_INDEX/TEST_TOTAL_SHARDS"}},
      {{"TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS"}, {3, 5, "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT"}},
      {{"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_COUNT"}, {4, 8, "JOB_COMPLETION_INDEX/--shard-count"}},
      {{"JOB_COMPLETION_INDEX"}, {5, 6, "CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL"}}};
  std::map<std::string, std::string> vars = all;
  for (const auto& [drop, want] : order) {
    for (const std::string& d : drop) vars.erase(d);
    const bool indexed_job = std::get<2>(want).rfind("JOB_COMPLETION_INDEX", 0) == 0;
    s = ChooseShard(std::nullopt, indexed_job ? std::optional<int64_t>(8) : std::nullopt, Env(vars));
    EXPECT_EQ(s.index, std::get<0>(want)) << std::get<2>(want);
    EXPECT_EQ(s.count, std::get<1>(want)) << std::get<2>(want);
    EXPECT_EQ(s.source, std::get<2>(want));
  }
  s = ChooseShard(std::nullopt, std::nullopt, Env({}));
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.source, "none");
  EXPECT_FALSE(s.Partial());
}

TEST(ChooseShard, RefusesWhatAMisconfiguredJobGives) {
  EXPECT_NE(Refusal(std::nullopt, std::nullopt, {{"GTEST_SHARD_INDEX", "1"}}).find("GTEST_TOTAL_SHARDS is not set"), std::string::npos);
  EXPECT_NE(Refusal(std::nullopt, std::nullopt, {{"GTEST_SHARD_INDEX", "x1"}, {"GTEST_TOTAL_SHARDS", "2"}}).find("GTEST_SHARD_INDEX=x1: not a decimal number"),
            std::string::npos);
  EXPECT_NE(Refusal(std::nullopt, std::nullopt, {{"TEST_SHARD_INDEX", "3"}, {"TEST_TOTAL_SHARDS", "3"}}).find("TEST_SHARD_INDEX 3"),
            std::string::npos);
  EXPECT_NE(Refusal(std::nullopt, std::nullopt, {{"JOB_COMPLETION_INDEX", "2"}}).find("--shard-count is not"), std::string::npos);
  EXPECT_NE(Refusal(std::nullopt, std::nullopt,
                    {{"SLURM_ARRAY_TASK_ID", "6"}, {"SLURM_ARRAY_TASK_MIN", "0"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})
                .find("the task id is not one of the array's"),
            std::string::npos);
  EXPECT_NE(Refusal(3, std::nullopt, {}).find("--shard-index 3 needs --shard-count"), std::string::npos);
  EXPECT_NE(Refusal(5, 5, {}).find("--shard-index 5"), std::string::npos);
  EXPECT_NE(Refusal(std::nullopt, 4, {}).find("without --shard-index"), std::string::npos);
  EXPECT_NE(Refusal(0, 0, {}).find("--shard-count 0"), std::string::npos);
}

// §CONF.9 item 1 A stepped array (--array=0-6:2 runs tasks 0, 2, 4, 6) is four
// shards, task 4 the third; a list (--array=1,4,9) has no shard index. Before,
// SLURM_ARRAY_TASK_STEP was not read and task 4 ran shard 4 of 4's share (refused
// only as "not a dense array" when it fell outside), task 2 shard 2's.
TEST(ChooseShard, SlurmStepsAreShardsAndListsAreRefused) {
  const std::map<std::string, std::string> stepped = {{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_MIN", "0"},
                                                      {"SLURM_ARRAY_TASK_MAX", "6"}, {"SLURM_ARRAY_TASK_STEP", "2"},
                                                      {"SLURM_ARRAY_TASK_COUNT", "4"}};
  const Shard s = ChooseShard(std::nullopt, std::nullopt, Env(stepped));
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 4);
  std::map<std::string, std::string> v = stepped;
  v["SLURM_ARRAY_TASK_ID"] = "2";
  EXPECT_EQ(ChooseShard(std::nullopt, std::nullopt, Env(v)).index, 1);
  v["SLURM_ARRAY_TASK_ID"] = "3";  // not a task of 0-6:2
  EXPECT_NE(Refusal(std::nullopt, std::nullopt, v).find("SLURM_ARRAY_TASK_ID=3"), std::string::npos);
  EXPECT_NE(Refusal(std::nullopt, std::nullopt, v).find("not one of the array's"), std::string::npos);
  v = stepped;
  v["SLURM_ARRAY_TASK_STEP"] = "0";
  EXPECT_NE(Refusal(std::nullopt, std::nullopt, v).find("the step must be at least 1"), std::string::npos);
  // --array=1,4,9: Slurm says min 1, max 9, count 3, step 1.
  const std::map<std::string, std::string> list = {{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_MIN", "1"},
                                                   {"SLURM_ARRAY_TASK_MAX", "9"}, {"SLURM_ARRAY_TASK_STEP", "1"},
                                                   {"SLURM_ARRAY_TASK_COUNT", "3"}};
  EXPECT_NE(Refusal(std::nullopt, std::nullopt, list).find("not an evenly stepped array"), std::string::npos);
}

// §CONF.9 item 1 A shard number is the ASCII digits 0-9 and nothing else,
// whatever reads it (the pytest plugin resolves shards through these rules).
TEST(ChooseShard, NumbersAreAsciiDecimalOnly) {
  for (const char* bad : {"1_0", "+1", "\xd9\xa1", "18446744073709551616", "", " 1", "0x1", "1e0"}) {
    EXPECT_NE(Refusal(std::nullopt, std::nullopt, {{"GTEST_SHARD_INDEX", bad}, {"GTEST_TOTAL_SHARDS", "2"}})
                  .find("not a decimal number"),
              std::string::npos)
        << bad;
  }
  // An empty pair is a set pair, not "no sharding".
  EXPECT_NE(Refusal(std::nullopt, std::nullopt, {{"GTEST_SHARD_INDEX", ""}, {"GTEST_TOTAL_SHARDS", ""}}).find("GTEST_SHARD_INDEX=:"),
            std::string::npos);
  EXPECT_EQ(ShardNumber("x", "0007"), 7);
}

// §CONF.9 item 1 Bazel's status file: created when set, whatever gave the
// shard; a FIFO or a directory refused at once, never blocked on.
TEST(ShardStatusFile, CreatedWhenSetAndOnlyARegularFile) {
  const fs::path dir = Dir() / "status";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path file = dir / "status";
  TouchShardStatusFile(Env({{"TEST_SHARD_STATUS_FILE", file.string()}}));
  EXPECT_TRUE(fs::is_regular_file(file));
  TouchShardStatusFile(Env({{"TEST_SHARD_STATUS_FILE", file.string()}}));  // again: still fine
  TouchShardStatusFile(Env({}));                                          // unset: nothing to do
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    TouchShardStatusFile(Env({{"TEST_SHARD_STATUS_FILE", fifo.string()}}));
    ADD_FAILURE() << "a FIFO accepted as the status file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file (a FIFO)"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_THROW(TouchShardStatusFile(Env({{"TEST_SHARD_STATUS_FILE", dir.string()}})), Error);
}

// Bazel exports GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS beside TEST_SHARD_*, and
// the GTEST pair is read first: conform touched the status file only when the
// shard came from TEST_SHARD_INDEX, so Bazel failed the sharded test.
TEST(ShardStatusFile, ConformTouchesItWhenTheGtestPairGaveTheShard) {
  const fs::path file = Dir() / "bazel-status";
  fs::remove(file);
  const fs::path out = Dir() / "bazel.txt";
  const std::string cmd = "GTEST_SHARD_INDEX=1 GTEST_TOTAL_SHARDS=2 TEST_SHARD_INDEX=1 TEST_TOTAL_SHARDS=2 TEST_SHARD_STATUS_FILE=" +
                          file.string() + " " + std::string(ENGRAM_CLI) + " conform --vectors " + (Dir() / "no-vectors").string() +
                          " --exec true >" + out.string() + " 2>&1";
  std::system(cmd.c_str());  // the vectors do not exist: the run stops, after the shard was taken
  EXPECT_TRUE(fs::exists(file)) << Slurp(out);
  EXPECT_NE(Slurp(out).find("shard 1 of 2 (from GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS)"), std::string::npos) << Slurp(out);
}

// ------------------------------------------------------------------ end to end

struct Merged {
  int exit_code;
  std::string out;
};

Merged Merge(const std::string& args) {
  const fs::path out = Dir() / "merge.txt";
  const std::string cmd = std::string(ENGRAM_CLI) + " report merge " + args + " >" + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out)};
}

std::string LastLine(const std::string& s) {
  const size_t end = s.find_last_not_of('\n');
  const size_t start = s.rfind('\n', end);
  return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// The work of these tests: two vector suites, the contract checks and 24
// random cases of each of their suites, through the reference plug-in.
const std::string kWork = "--vectors " + test::kVectors + " --lib " + std::string(ENGRAM_PLUGIN) +
                          " --suite hash_v41 --suite table_lookup --random 24 --seed 31 --random-threads 1";

// Runs `shards` shards of kWork (flags), returns the report paths.
std::string RunShards(const std::string& name, int shards, const std::string& extra = "") {
  std::string paths;
  for (int i = 0; i < shards; ++i) {
    const fs::path report = Dir() / (name + "-" + std::to_string(i) + ".json");
    const auto r = Conform(kWork + extra + " --shard-index " + std::to_string(i) + " --shard-count " + std::to_string(shards) +
                           " --report-json " + report.string());
    EXPECT_EQ(r.exit_code, 0) << r.out;
    paths += " " + report.string();
  }
  return paths;
}

TEST(Shards, OneThreeAndSevenShardsMergeToTheSingleRun) {
  const fs::path single_report = Dir() / "single.json";
  const auto single = Conform(kWork + " --report-json " + single_report.string());
  ASSERT_EQ(single.exit_code, 0) << single.out;
  const json s = json::parse(Slurp(single_report));
  ASSERT_EQ(LastLine(single.out).rfind("conformance: OK: ", 0), 0u) << single.out;
  // Under the sanitizers three shards only: one, three and seven walk the same split and merge code, and
  // each shard is a run of the runner (testutil/sanitized.h); the release build runs all three counts.
  const std::vector<int> counts = engram::testutil::kSanitized ? std::vector<int>{3} : std::vector<int>{1, 3, 7};
  for (int shards : counts) {
    const std::string paths = RunShards("equal" + std::to_string(shards), shards);
    const fs::path merged_report = Dir() / ("merged" + std::to_string(shards) + ".json");
    const fs::path junit = Dir() / ("merged" + std::to_string(shards) + ".xml");
    const Merged m = Merge(paths + " --report-json " + merged_report.string() + " --junit " + junit.string());
    ASSERT_EQ(m.exit_code, 0) << m.out;
    EXPECT_EQ(LastLine(m.out), LastLine(single.out)) << shards << " shard(s)";
    const json j = json::parse(Slurp(merged_report));
    EXPECT_EQ(j["verdict"]["line"], s["verdict"]["line"]);
    EXPECT_EQ(j["suites"], s["suites"]) << shards << " shard(s)";
    EXPECT_EQ(j["results"].size(), s["results"].size());
    EXPECT_EQ(j["shard"]["counts"], s["shard"]["counts"]);
    for (const auto& [label, c] : s["shard"]["cases"].items()) {
      EXPECT_EQ(j["shard"]["cases"][label]["sha256Sum"], c["sha256Sum"]) << label << ", " << shards << " shard(s)";
      EXPECT_EQ(j["shard"]["cases"][label]["requests"], c["requests"]) << label;
    }
    const std::string xml = Slurp(junit);
    EXPECT_NE(xml.find("<testsuite name=\"hash_v41\" tests=\"" + test::TestsIn("hash_v41") + "\""), std::string::npos) << xml.substr(0, 400);
    // A merged report merges again, as one shard of one.
    const Merged again = Merge(merged_report.string());
    EXPECT_EQ(again.exit_code, 0) << again.out;
    EXPECT_EQ(LastLine(again.out), LastLine(single.out));
  }
}

// §CONF.9 a shard alone is not a verdict on the run.
TEST(Shards, ALoneShardReportsItselfPartial) {
  const fs::path report = Dir() / "lone.json";
  const auto r = Conform(kWork + " --shard-index 1 --shard-count 3 --report-json " + report.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;  // nothing failed in it
  EXPECT_EQ(LastLine(r.out).rfind("conformance: PARTIAL: shard 1 of 3 (--shard-index/--shard-count), nothing failed in it: ", 0), 0u)
      << r.out;
  EXPECT_EQ(r.out.find("conformance: OK"), std::string::npos);
  const json j = json::parse(Slurp(report));
  EXPECT_FALSE(j["verdict"]["ok"].get<bool>());
  EXPECT_EQ(j["shard"]["index"], 1);
  EXPECT_EQ(j["shard"]["count"], 3);
  EXPECT_TRUE(j["shard"]["clean"].get<bool>());
  // From the environment, with the source named.
  const fs::path out = Dir() / "env.txt";
  const std::string cmd = "SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=2 " + std::string(ENGRAM_CLI) +
                          " conform " + kWork + " --random-only >" + out.string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_NE(Slurp(out).find("conformance: PARTIAL: shard 1 of 2 (SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT)"), std::string::npos)
      << Slurp(out);
  // A half-set source does not run at all.
  const std::string bad = "GTEST_SHARD_INDEX=0 " + std::string(ENGRAM_CLI) + " conform " + kWork + " >" + out.string() + " 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 2);
  EXPECT_NE(Slurp(out).find("GTEST_TOTAL_SHARDS is not set, but GTEST_SHARD_INDEX is"), std::string::npos) << Slurp(out);
}

TEST(Shards, AMergeOfTheWrongShardsIsRefusedWithoutAVerdict) {
  const std::string three = RunShards("refuse", 3);
  const std::string s0 = (Dir() / "refuse-0.json").string(), s1 = (Dir() / "refuse-1.json").string(),
                    s2 = (Dir() / "refuse-2.json").string();
  auto refused = [](const Merged& m, const std::string& why) {
    EXPECT_EQ(m.exit_code, 2) << m.out;
    EXPECT_EQ(m.out.find("conformance:"), std::string::npos) << m.out;
    EXPECT_NE(m.out.find("engram report merge: refused: " + why), std::string::npos) << m.out;
  };
  refused(Merge(s0 + " " + s2), "shard(s) 1 of 3 missing");
  refused(Merge(three + " " + s1), "shard 1 of 3 given twice");
  // Another seed.
  const fs::path other = Dir() / "other-seed.json";
  std::string other_work = kWork;
  other_work.replace(other_work.find("--seed 31"), 9, "--seed 32");
  ASSERT_EQ(Conform(other_work + " --shard-index 1 --shard-count 3 --report-json " + other.string()).exit_code, 0);
  refused(Merge(s0 + " " + other.string() + " " + s2), "not shards of one run: seed differs: 31 in " + s0 + ", 32 in " + other.string());
  // Another shard count.
  const fs::path four = Dir() / "four.json";
  ASSERT_EQ(Conform(kWork + " --shard-index 1 --shard-count 4 --report-json " + four.string()).exit_code, 0);
  refused(Merge(s0 + " " + four.string() + " " + s2), "mixed shard counts");
  // A forged range that overlaps its neighbour's.
  json forged = json::parse(Slurp(s1));
  forged["shard"]["cases"]["random:hash_v41"]["begin"] = forged["shard"]["cases"]["random:hash_v41"]["begin"].get<int64_t>() - 1;
  const fs::path overlap = Dir() / "overlap.json";
  std::ofstream(overlap) << forged.dump();
  refused(Merge(s0 + " " + overlap.string() + " " + s2), "overlapping shards: random:hash_v41");
  // A cut report: a result removed.
  json cut = json::parse(Slurp(s1));
  cut["results"].erase(cut["results"].begin());
  const fs::path cut_path = Dir() / "cut.json";
  std::ofstream(cut_path) << cut.dump();
  refused(Merge(s0 + " " + cut_path.string() + " " + s2), cut_path.string() + ": shard.counts.");
  // A report of a run without shard records (an older runner).
  json old = json::parse(Slurp(s1));
  old.erase("shard");
  const fs::path old_path = Dir() / "old.json";
  std::ofstream(old_path) << old.dump();
  refused(Merge(s0 + " " + old_path.string() + " " + s2), old_path.string() + ": has no \"shard\" record");
}

// §CONF.9 item 4 A merge verifies instead of trusting: each forgery of the
// hidden round that a merge believed (an OK, or a crash) is refused with the
// file and the field named, with no verdict and nothing left behind. Every
// case here merged (or crashed) before the checks.
TEST(Shards, AForgedShardIsRefusedNeverMerged) {
  const std::string three = RunShards("forge", 3);
  const std::string s0 = (Dir() / "forge-0.json").string(), s1 = (Dir() / "forge-1.json").string(),
                    s2 = (Dir() / "forge-2.json").string();
  auto refused = [](const Merged& m, const std::string& why) {
    EXPECT_EQ(m.exit_code, 2) << m.out;
    EXPECT_EQ(m.out.find("conformance:"), std::string::npos) << m.out;
    EXPECT_NE(m.out.find(why), std::string::npos) << "wanted: " << why << "\n" << m.out;
  };
  auto forged = [&](const std::string& name, const std::function<void(json&)>& edit) {
    json j = json::parse(Slurp(s1));
    edit(j);
    const fs::path p = Dir() / (name + ".json");
    std::ofstream(p) << j.dump();
    return p.string();
  };
  auto merge_with = [&](const std::string& middle) { return Merge(s0 + " " + middle + " " + s2); };
  // Negative counts that sum to clean.
  std::string p = forged("negative", [](json& j) { j["shard"]["counts"]["hash_v41"]["failed"] = -41; });
  refused(merge_with(p), p + ": shard.counts.hash_v41.failed: is negative: -41");
  // Counts edited to clean while a listed result says "fail".
  p = forged("clean", [](json& j) {
    for (json& r : j["results"]) {
      if (r["suite"] == "hash_v41" && r["status"] == "pass") {
        r["status"] = "fail";
        r["reason"] = "mismatch";
        break;
      }
    }
  });
  refused(merge_with(p), p + ": shard.counts.hash_v41: the listed results count");
  // Counts 5,000 times the shard's range.
  p = forged("inflated", [](json& j) {
    j["shard"]["counts"]["hash_v41"]["passed"] = j["shard"]["counts"]["hash_v41"]["passed"].get<int64_t>() * 5000;
  });
  refused(merge_with(p), "results counted for the");
  // A repeated "counts" key: the text edited, the last would win.
  {
    std::string text = Slurp(s1);
    const size_t at = text.find("\"counts\":");
    ASSERT_NE(at, std::string::npos);
    text.insert(at, "\"counts\": {}, ");
    const fs::path dup = Dir() / "dup.json";
    std::ofstream(dup) << text;
    refused(merge_with(dup.string()), dup.string() + ": duplicate key 'counts'");
  }
  // Shard 0's report relabelled as shard 1, its ranges made shard 1's: its results are shard 0's.
  p = forged("relabelled", [&](json& j) {
    json other = json::parse(Slurp(s0));
    other["shard"]["index"] = 1;
    for (auto& [label, c] : other["shard"]["cases"].items()) {
      c["begin"] = j["shard"]["cases"][label]["begin"];
      c["end"] = j["shard"]["cases"][label]["end"];
    }
    j = other;
  });
  refused(merge_with(p), p + ": ");
  // The same shard's results listed twice across shards (the range edited along).
  p = forged("twice", [&](json& j) {
    const json other = json::parse(Slurp(s0));
    for (json& r : j["results"]) {
      if (r["suite"] == "table_lookup") r["tcId"] = other["shard"]["cases"]["table_lookup"]["begin"].get<int64_t>() + 1;
    }
  });
  refused(merge_with(p), "table_lookup tcId");
  // The vectors' kind relabelled; another spec and generator on every shard.
  p = forged("kind", [](json& j) { j["shard"]["work"]["vectorsKind"] = "released set 0.3.1, edited"; });
  refused(merge_with(p), "shard.work.vectorsKind: says \"released set 0.3.1, edited\"");
  {
    std::string all;
    for (const std::string& s : {s0, s1, s2}) {
      json j = json::parse(Slurp(s));
      j["shard"]["work"]["specVersion"] = "9.9.9";
      j["shard"]["work"]["generator"] = "random-v9";
      const fs::path v = Dir() / ("v999-" + std::to_string(j["shard"]["index"].get<int>()) + ".json");
      std::ofstream(v) << j.dump();
      all += " " + v.string();
    }
    refused(Merge(all), "ran spec 9.9.9 with generator random-v9");
  }
  // A string range bound: named, not a library's message.
  p = forged("string-bound", [](json& j) { j["shard"]["cases"]["hash_v41"]["begin"] = "23"; });
  refused(merge_with(p), p + ": shard.cases.hash_v41.begin: must be an integer");
  // Not a regular file: a directory, a FIFO (refused at once, never read).
  refused(merge_with(Dir().string()), "not a regular file (a directory)");
  const fs::path fifo = Dir() / "report.fifo";
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const auto t0 = std::chrono::steady_clock::now();
  refused(merge_with(fifo.string()), "not a regular file (a FIFO)");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // Nested 10^6 deep: refused at level 257, no crash, no temporary file left.
  {
    const fs::path deep = Dir() / "deep" / "deep.json";
    fs::remove_all(deep.parent_path());
    fs::create_directories(deep.parent_path());
    std::ofstream(deep) << "{\"results\": " << std::string(1000000, '[') << std::string(1000000, ']') << "}";
    const fs::path out = deep.parent_path() / "merged.json";
    refused(Merge(deep.string() + " --report-json " + out.string()), "JSON nested deeper than 256 levels");
    size_t files = 0;
    for (const auto& e : fs::directory_iterator(deep.parent_path())) files += e.path() != deep;
    EXPECT_EQ(files, 0u) << "a temporary file was left beside the merged report";
  }
  // A shard never claims a level: its --verdict-json and --require-level are refused before the run.
  const auto shard_record = Conform(kWork + " --shard-index 0 --shard-count 3 --verdict-json " + (Dir() / "shard-verdict.json").string());
  EXPECT_EQ(shard_record.exit_code, 2) << shard_record.out;
  EXPECT_NE(shard_record.out.find("--verdict-json: shard 0 of 3 (--shard-index/--shard-count) is not the run and claims no level"),
            std::string::npos) << shard_record.out;
  // The real three still merge.
  EXPECT_EQ(Merge(three).exit_code, 0);
}

// §CONF.9 item 4 A saved recipe is rebuilt only within the size of the case
// its generator drew at its index: every candidate shrinking can reach is
// within it (a law, over every generator), and a list made longer is not.
TEST(RecipeOutside, ShrinkingStaysWithinTheDrawnCaseAndAnEditDoesNot) {
  for (const vectors::RandomSuite& gen : vectors::RandomSuites()) {
    for (int64_t index : {0, 5, 17}) {
      const nlohmann::ordered_json drawn = gen.draw(3, index);
      nlohmann::ordered_json at = drawn;
      // Down a chain of shrink steps, every candidate of every step checked.
      for (int step = 0; step < 12; ++step) {
        bool moved = false;
        for (const nlohmann::ordered_json& cand : gen.shrink(at)) {
          EXPECT_EQ(RecipeOutside(cand, drawn), "") << gen.suite << " case " << index << " step " << step << ": " << cand.dump();
          if (!moved) {
            try {
              gen.build(cand);
              at = cand;
              moved = true;
            } catch (const Error&) {
            }
          }
        }
        if (!moved) break;
      }
      // An edit that makes a list of the drawn case 1,000 times longer is refused.
      nlohmann::ordered_json bigger = drawn;
      for (auto& [k, v] : bigger.items()) {
        if (v.is_array() && !v.empty()) {
          const nlohmann::ordered_json e = v[0];
          for (int i = 0; i < 1000; ++i) v.push_back(e);
          break;
        }
      }
      if (bigger != drawn) EXPECT_NE(RecipeOutside(bigger, drawn), "") << gen.suite;
    }
  }
}

// With failures: the adapter's planted bug, no suite stopped early. The
// merged verdict equals the single run's, and the shrunk failures of every
// shard land in one vectors directory that replays them.
TEST(Shards, FailuresOfEveryShardAreGatheredIntoOneReplayableDirectory) {
  if (test::Python().empty()) GTEST_SKIP() << "ENGRAM_PYTHON is not set";
  const std::string work = "--vectors " + test::kVectors + " --exec '" + test::NumpyPort() +
                           " --bug rollback-ring-short' --suite hash_demo --random 60 --seed 11 --random-only "
                           "--random-threads 1 --max-random-failures 0 --shrink-calls 50";
  const fs::path single_failures = Dir() / "single-failures";
  const auto single = Conform(work + " --save-failures " + single_failures.string());
  ASSERT_EQ(single.exit_code, 1) << single.out;
  std::string paths;
  for (int i = 0; i < 3; ++i) {
    const fs::path report = Dir() / ("bug-" + std::to_string(i) + ".json");
    const auto r = Conform(work + " --shard-index " + std::to_string(i) + " --shard-count 3 --report-json " + report.string());
    paths += " " + report.string();
  }
  const fs::path failures = Dir() / "merged-failures";
  const Merged m = Merge(paths + " --save-failures " + failures.string() + " --vectors " + test::kVectors);
  EXPECT_EQ(m.exit_code, 1) << m.out;
  EXPECT_EQ(LastLine(m.out), LastLine(single.out));
  ASSERT_TRUE(fs::exists(failures / "v1" / "hash_demo.json")) << m.out;
  const json a = json::parse(Slurp(failures / "v1" / "hash_demo.json"));
  const json b = json::parse(Slurp(single_failures / "v1" / "hash_demo.json"));
  ASSERT_GT(b["testGroups"].size(), 0u);
  EXPECT_EQ(a["testGroups"].size(), b["testGroups"].size());
  for (size_t i = 0; i < a["testGroups"].size() && i < b["testGroups"].size(); ++i) {
    EXPECT_EQ(a["testGroups"][i]["tests"][0]["steps"], b["testGroups"][i]["tests"][0]["steps"]) << i;
  }
  const auto replay = Conform("--vectors " + failures.string() + " --exec '" + test::NumpyPort() +
                              " --bug rollback-ring-short'");
  EXPECT_EQ(replay.exit_code, 1) << replay.out;
  EXPECT_NE(replay.out.find("hash_demo: 0 passed, " + std::to_string(a["testGroups"].size()) + " failed"), std::string::npos) << replay.out;
  // A failing recipe edited to 100,000 layer ids (a 3 KB edit took --save-failures past 600 s): not rebuilt, the
  // merge says why and fails; it does not run on.
  const std::string first = (Dir() / "bug-0.json").string();
  json forged = json::parse(Slurp(first));
  bool edited = false;
  for (auto& [suite, list] : forged["shard"]["failing"].items()) {
    if (list.empty()) continue;
    json ids = json::array();
    for (int i = 0; i < 100000; ++i) ids.push_back(i);
    list[0]["recipe"]["layerIds"] = ids;
    edited = true;
    break;
  }
  ASSERT_TRUE(edited) << "shard 0 saved no failing recipe";
  const fs::path forged_path = Dir() / "bug-forged.json";
  std::ofstream(forged_path) << forged.dump();
  const std::string others = paths.substr(paths.find(' ', 1));  // shards 1 and 2
  const fs::path more = Dir() / "forged-failures";
  const auto t0 = std::chrono::steady_clock::now();
  const Merged f = Merge(forged_path.string() + others + " --save-failures " + more.string() + " --vectors " + test::kVectors);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(f.exit_code, 1) << f.out;
  EXPECT_NE(f.out.find("the failing random cases could not be saved"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("is not one its case shrinks to"), std::string::npos) << f.out;
}

}  // namespace
}  // namespace engram::conform
