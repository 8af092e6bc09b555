// spec/conformance.md §CONF.8 — conformance levels and the verdict record.
#include "conformance/runner/verdict_record.h"

#include <map>
#include <set>

#include "base/error.h"
#include "reference/input_files.h"
#include "reference/config.h"
#include "vectors/generator.h"
#include "vectors/random_cases.h"

namespace engram::conform {

using json = nlohmann::ordered_json;

const std::vector<Level>& ConformanceLevels() {
  // §CONF.8 Each level is the suites (and profiles) a kind of port
  // implements; the full levels include the hash levels.
  static const std::vector<Level> levels = {
      {"v4.1-hash",
       "the v4.1 hash: multipliers, prime layout, row ids of compressed ids, the per-sequence state and its hand-off",
       {{"multipliers", "*"}, {"layout", "*"}, {"hash_v41", "v4.1"}, {"hash_state", "v4.1"}}},
      {"v4.1-full",
       "v4.1-hash, and the token map, FP8 rows, lookup, tensor-parallel shards, the gate and the fused forward",
       {{"multipliers", "*"},
        {"layout", "*"},
        {"hash_v41", "v4.1"},
        {"hash_state", "v4.1"},
        {"accumulated", "v4.1"},
        {"token_map", "*"},
        {"fp8_decode", "*"},
        {"table_lookup", "*"},
        {"tp_shard", "*"},
        {"gate_v41", "v4.1"},
        {"engram_forward", "v4.1"}}},
      {"demo-hash",
       "the demo-v1 hash: multipliers, prime layout, row ids, the per-sequence state and its hand-off",
       {{"multipliers", "*"}, {"layout", "*"}, {"hash_demo", "demo-v1"}, {"hash_state", "demo-v1"}}},
      {"demo-full",
       "demo-hash, and the token map, the gates, the ShortConv and the fused forward",
       {{"multipliers", "*"},
        {"layout", "*"},
        {"hash_demo", "demo-v1"},
        {"hash_state", "demo-v1"},
        {"accumulated", "demo-v1"},
        {"token_map", "*"},
        {"gate_demo", "demo-v1"},
        {"short_conv_demo", "demo-v1"},
        {"engram_forward", "demo-v1"}}},
  };
  return levels;
}

namespace {

// The record's counts: the verdict's, without the report's bookkeeping (sent, skipReasons).
json RecordCountsJson(const Counts& c) {
  return {{"passed", c.passed}, {"failed", c.failed},   {"skipped", c.skipped}, {"expectedFail", c.expected_fail},
          {"stale", c.stale},   {"tested", c.tested},   {"trivial", c.trivial}, {"refused", c.refused}};
}

// tcId -> the profile of its group ("" for a group without one), per suite.
using Profiles = std::map<std::string, std::map<int64_t, std::string>>;

Profiles ReadProfiles(const Options& options, const std::set<std::string>& suites) {
  Profiles out;
  for (const std::string& suite : suites) {
    const std::filesystem::path path = options.vectors / "v1" / (suite + ".json");
    if (!std::filesystem::exists(path)) continue;  // not in this set: the level says "not run"
    const nlohmann::json doc = ReadJsonFile(path, InputKind::kVectorFile);
    for (const auto& group : doc.at("testGroups")) {
      const std::string profile = group.contains("profile") ? group["profile"].get<std::string>() : "";
      for (const auto& test : group.at("tests")) out[suite][test.at("tcId").get<int64_t>()] = profile;
    }
  }
  return out;
}

// §CONF.8 Whether `level` was reached, and if not, why (every reason, in
// the order of the level's suites).
std::vector<std::string> LevelReasons(const Level& level, const Options& options, const std::vector<TestResult>& results,
                                      const Verdict& verdict, const Profiles& profiles) {
  std::vector<std::string> reasons;
  if (!verdict.vectors_known) {
    reasons.push_back("the vectors are neither a released set nor the unreleased set this tool was built with (§VEC.13)");
  }
  for (const std::string& p : verdict.problems) reasons.push_back("run: " + p);
  if (verdict.suites.count("contract") && verdict.suites.at("contract").failed > 0) {
    reasons.push_back("contract: " + std::to_string(verdict.suites.at("contract").failed) + " check(s) failed");
  }
  for (const LevelSuite& need : level.suites) {
    const std::string label = need.suite + (need.profile == "*" ? "" : " (" + need.profile + ")");
    if (!options.suites.empty() && !options.suites.count(need.suite)) {
      reasons.push_back(label + ": not run (--suite)");
      continue;
    }
    if (options.random_only) {
      reasons.push_back(label + ": the fixed vectors were not run (--random-only)");
      continue;
    }
    int64_t tested = 0, failed = 0, skipped = 0;
    std::map<std::string, int64_t> skip_reasons;
    const auto suite_profiles = profiles.find(need.suite);
    for (const TestResult& r : results) {
      if (r.suite != need.suite) continue;
      std::string profile;
      if (suite_profiles != profiles.end()) {
        const auto it = suite_profiles->second.find(r.tc_id);
        if (it != suite_profiles->second.end()) profile = it->second;
      }
      if (need.profile != "*" && !profile.empty() && profile != need.profile) continue;
      if (r.status == "fail" || r.status == "expected-fail") ++failed;
      // §CONF.8 a skipped test is a claim not made, except a size limit the user set.
      if (r.status == "skipped" && r.reason != "limit") ++skipped, ++skip_reasons[r.reason];
      if ((r.status == "pass" || r.status == "stale") && r.valid && !r.trivial) ++tested;
    }
    if (failed > 0) reasons.push_back(label + ": " + std::to_string(failed) + " test(s) failed");
    if (skipped > 0) {
      std::string why;
      for (const auto& [reason, n] : skip_reasons) why += (why.empty() ? "" : ", ") + std::to_string(n) + " " + reason;
      reasons.push_back(label + ": " + std::to_string(skipped) + " test(s) skipped (" + why + ")");
    }
    if (tested == 0 && failed == 0) reasons.push_back(label + ": no test was tested (§CONF.4)");
    if (verdict.suite_problems.count(need.suite)) {
      for (const std::string& p : verdict.suite_problems.at(need.suite)) reasons.push_back(label + ": " + p);
    }
    // §CONF.7 random cases of the suite, when drawn, must not fail either.
    if (verdict.random.is_object() && verdict.random.contains("suites") && verdict.random["suites"].contains(need.suite)) {
      const int64_t failing = verdict.random["suites"][need.suite].value("failing", int64_t{0});
      if (failing > 0) reasons.push_back(label + ": " + std::to_string(failing) + " random case(s) failed");
    }
  }
  return reasons;
}

}  // namespace

json VerdictRecord(const Options& options, const Claims& claims, const std::vector<TestResult>& results,
                   const Verdict& verdict, const std::string& date) {
  json record;
  record["format"] = "engram-verdict";
  record["version"] = 1;
  record["date"] = date;
  record["implementation"] = {{"name", claims.name},
                              {"version", claims.version},
                              {"suites", claims.suites},
                              {"profiles", claims.profiles},
                              {"features", claims.features}};
  record["specVersion"] = vectors::kSpecVersion;
  record["vectors"] = {{"released", verdict.vectors_released},
                       {"kind", verdict.vectors_kind},
                       {"manifestSha256", verdict.manifest_sha256}};
  json random = nullptr;
  if (options.random_cases > 0) {
    random = {{"generator", vectors::kRandomVersion},
              {"seed", options.random_seed},
              {"casesPerSuite", options.random_cases},
              {"suites", json::object()}};
    if (verdict.random.is_object() && verdict.random.contains("suites")) {
      for (const auto& [suite, s] : verdict.random["suites"].items()) {
        random["suites"][suite] = {{"asked", s.value("asked", int64_t{0})}, {"failing", s.value("failing", int64_t{0})}};
      }
    }
  }
  record["run"] = {{"suites", options.suites},
                   {"profile", options.profile ? json(*options.profile) : json(nullptr)},
                   {"features", options.features},
                   {"expectFail", !options.expect_fail.empty()},
                   {"randomOnly", options.random_only},
                   {"random", random}};
  record["ok"] = verdict.Ok();
  record["verdict"] = verdict.Line();
  record["counts"] = RecordCountsJson(verdict.total);
  record["suites"] = json::object();
  for (const auto& [suite, c] : verdict.suites) record["suites"][suite] = RecordCountsJson(c);
  std::set<std::string> level_suites;
  for (const Level& level : ConformanceLevels()) {
    for (const LevelSuite& s : level.suites) level_suites.insert(s.suite);
  }
  const Profiles profiles = ReadProfiles(options, level_suites);
  json levels = json::array(), reached = json::array();
  for (const Level& level : ConformanceLevels()) {
    const std::vector<std::string> reasons = LevelReasons(level, options, results, verdict, profiles);
    levels.push_back({{"name", level.name}, {"reached", reasons.empty()}, {"reasons", reasons}});
    if (reasons.empty()) reached.push_back(level.name);
  }
  record["levelsReached"] = reached;
  record["levels"] = levels;
  return record;
}

}  // namespace engram::conform
