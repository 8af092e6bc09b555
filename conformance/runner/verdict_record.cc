// spec/conformance.md §CONF.8 — conformance levels and the verdict record.
#include "conformance/runner/verdict_record.h"

#include <map>
#include <set>

#include "base/error.h"
#include "vectors/manifest.h"
#include "vectors/generator.h"
#include "vectors/random_cases.h"

namespace engram::conform {

using json = nlohmann::ordered_json;

const std::vector<Level>& ConformanceLevels() {
  // §CONF.8 Each level is the suites (and profiles) a kind of port
  // implements; the full and serving levels include the hash levels.
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
      {"v4.1-serving",
       "v4.1-hash, and the packed calls of a serving engine: requests in one buffer, padding, speculative drafts, "
       "the states in every engine-native encoding",
       {{"multipliers", "*"}, {"layout", "*"}, {"hash_v41", "v4.1"}, {"hash_state", "v4.1"}, {"serving_v41", "v4.1"}}},
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

const Level* FindLevel(const std::string& name) {
  for (const Level& l : ConformanceLevels()) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

namespace {

// The record's counts: the verdict's, without the report's bookkeeping (sent, skipReasons).
json RecordCountsJson(const Counts& c) {
  return {{"passed", c.passed}, {"failed", c.failed},   {"skipped", c.skipped}, {"expectedFail", c.expected_fail},
          {"stale", c.stale},   {"tested", c.tested},   {"trivial", c.trivial}, {"refused", c.refused}};
}

int64_t Int(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_number_integer() ? obj[key].get<int64_t>() : 0;
}

// §CONF.8 What every level shares: the vectors, the run's problems and
// contract checks, and the freshness of its random cases.
std::vector<std::string> RunReasons(const Verdict& v, const LevelScope& scope) {
  std::vector<std::string> reasons;
  if (v.shard.Partial()) {
    reasons.push_back("shard " + std::to_string(v.shard.index) + " of " + std::to_string(v.shard.count) +
                      " is not the run: levels are judged by engram report merge (§CONF.9)");
  }
  if (!v.vectors_known) {
    reasons.push_back("the vectors are neither a released set nor the unreleased set this tool was built with (§VEC.13)");
  }
  for (const std::string& p : v.problems) reasons.push_back("run: " + p);
  if (v.suites.count("contract") && v.suites.at("contract").failed > 0) {
    reasons.push_back("contract: " + std::to_string(v.suites.at("contract").failed) + " check(s) failed");
  }
  const std::string need = std::to_string(kLevelRandomCases);
  if (scope.random_cases == 0) {
    reasons.push_back("no random cases were run: a level needs --random " + need +
                      " or more, at a seed the runner draws (§CONF.8: answers to the fixed vectors can be copied from "
                      "their files)");
  } else if (!scope.seed_drawn) {
    reasons.push_back("the random seed was given (--seed " + std::to_string(scope.seed) +
                      "): cases that could be known before the run earn no level; let the runner draw it (§CONF.8)");
  } else if (scope.random_cases < kLevelRandomCases) {
    reasons.push_back("--random " + std::to_string(scope.random_cases) + " is fewer than the " + need +
                      " fresh random cases per suite a level needs (§CONF.8)");
  }
  return reasons;
}

// §CONF.8 The reasons one suite (and profile) of a level gives.
void SuiteReasons(const LevelSuite& need, const Verdict& v, const LevelScope& scope, std::vector<std::string>& reasons) {
  const std::string label = need.suite + (need.profile == "*" ? "" : " (" + need.profile + ")");
  if (!scope.suites.empty() && !scope.suites.count(need.suite)) {
    reasons.push_back(label + ": not run (--suite)");
    return;
  }
  if (scope.random_only) {
    reasons.push_back(label + ": the fixed vectors were not run (--random-only)");
  } else {
    // A level names its tests: every test of the suite of its profile (the
    // tests of no profile too), whatever --profile selected.
    LevelTally t;
    if (auto it = v.tallies.find(need.suite); it != v.tallies.end()) {
      for (const auto& [profile, c] : it->second) {
        if (need.profile == "*" || profile.empty() || profile == need.profile) t.Merge(c);
      }
    }
    if (t.tests == 0) reasons.push_back(label + ": the vectors have no test of it");
    if (t.run < t.tests) {
      reasons.push_back(label + ": " + std::to_string(t.tests - t.run) + " of its " + std::to_string(t.tests) +
                        " test(s) were not run (--profile left them out)");
    }
    if (t.failed > 0) reasons.push_back(label + ": " + std::to_string(t.failed) + " test(s) failed");
    if (t.skipped > 0) {
      reasons.push_back(label + ": " + std::to_string(t.skipped) + " test(s) skipped (an unsupported answer, or a suite or "
                        "profile not claimed, is a claim not made)");
    }
    if (t.tests > 0 && t.tested == 0 && t.failed == 0) reasons.push_back(label + ": no test was tested (§CONF.4)");
    if (auto it = v.suite_problems.find(need.suite); it != v.suite_problems.end()) {
      for (const std::string& p : it->second) reasons.push_back(label + ": " + p);
    }
  }
  // §CONF.8 fresh random cases of every suite that has a generator.
  if (vectors::FindRandomSuite(need.suite) == nullptr || scope.random_cases == 0) return;
  const json r = v.random.is_object() && v.random.contains("suites") && v.random["suites"].contains(need.suite)
                     ? v.random["suites"][need.suite]
                     : json::object();
  const int64_t drawn = Int(r, "drawn"), failing = Int(r, "failing"), other = Int(r, "otherProfile");
  if (drawn < std::min(scope.random_cases, kLevelRandomCases)) {
    reasons.push_back(label + ": " + std::to_string(drawn) + " random case(s) drawn, fewer than the " +
                      std::to_string(std::min(scope.random_cases, kLevelRandomCases)) +
                      " a level needs (not claimed, or stopped early: --random-seconds, --max-timeouts)");
  }
  if (failing > 0) reasons.push_back(label + ": " + std::to_string(failing) + " random case(s) failed");
  if (auto it = v.suites.find("random:" + need.suite); it != v.suites.end() && it->second.skipped > 0) {
    reasons.push_back(label + ": " + std::to_string(it->second.skipped) + " random case(s) skipped (unsupported)");
  }
  if (need.profile == "*" && other > 0) {
    reasons.push_back(label + ": " + std::to_string(other) + " random case(s) of a profile not claimed (or left out by "
                      "--profile) were not asked");
  }
  if (auto it = v.suite_problems.find("random:" + need.suite); it != v.suite_problems.end()) {
    for (const std::string& p : it->second) reasons.push_back(label + ": random cases: " + p);
  }
}

}  // namespace

std::vector<LevelOutcome> JudgeLevels(const Verdict& v, const LevelScope& scope) {
  const std::vector<std::string> common = RunReasons(v, scope);
  std::vector<LevelOutcome> out;
  for (const Level& level : ConformanceLevels()) {
    LevelOutcome o{level.name, common};
    for (const LevelSuite& need : level.suites) SuiteReasons(need, v, scope, o.reasons);
    out.push_back(std::move(o));
  }
  return out;
}

void RequireLevels(const std::vector<std::string>& required, const std::vector<LevelOutcome>& levels, Verdict& v) {
  for (const std::string& name : required) {
    for (const LevelOutcome& l : levels) {
      if (l.name != name || l.reached()) continue;
      std::string first;
      for (size_t i = 0; i < l.reasons.size() && i < 3; ++i) first += (i ? "; " : "") + l.reasons[i];
      v.problems.push_back("--require-level " + name + ": not reached (" + std::to_string(l.reasons.size()) +
                           " reason(s): " + first + (l.reasons.size() > 3 ? "; ..." : "") + ")");
    }
  }
}

std::vector<std::string> LevelLines(const std::vector<LevelOutcome>& levels, const std::vector<std::string>& required) {
  std::string reached, not_reached;
  for (const LevelOutcome& l : levels) {
    if (l.reached()) {
      reached += (reached.empty() ? "" : ", ") + l.name;
    } else {
      not_reached += (not_reached.empty() ? "" : ", ") + l.name + " (" + std::to_string(l.reasons.size()) + " reason(s))";
    }
  }
  std::vector<std::string> lines = {"levels (§CONF.8): reached: " + (reached.empty() ? std::string("none") : reached) +
                                    (not_reached.empty() ? "" : "; not reached: " + not_reached)};
  for (const std::string& name : required) {
    for (const LevelOutcome& l : levels) {
      if (l.name != name) continue;
      for (const std::string& r : l.reasons) lines.push_back("  " + name + " (--require-level) not reached: " + r);
    }
  }
  return lines;
}

RunRecord RunRecordOf(const Options& o) {
  RunRecord r;
  r.suites = o.suites;
  r.profile = o.profile ? json(*o.profile) : json(nullptr);
  r.features = o.features;
  r.expect_fail = !o.expect_fail.empty();
  r.random_only = o.random_only;
  r.random_cases = o.random_cases;
  r.seed = o.random_seed;
  r.seed_drawn = o.seed_drawn;
  return r;
}

json VerdictRecord(const Claims& claims, const RunRecord& run, const Verdict& verdict,
                   const std::vector<LevelOutcome>& levels, const std::string& date) {
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
  if (run.random_cases > 0) {
    random = {{"generator", vectors::kRandomVersion},
              {"seed", run.seed},
              {"seedDrawn", run.seed_drawn},
              {"casesPerSuite", run.random_cases},
              {"suites", json::object()}};
    if (!run.shard_seeds.empty()) random["shardSeeds"] = run.shard_seeds;
    if (verdict.random.is_object() && verdict.random.contains("suites")) {
      for (const auto& [suite, s] : verdict.random["suites"].items()) {
        random["suites"][suite] = {{"drawn", Int(s, "drawn")}, {"asked", Int(s, "asked")}, {"failing", Int(s, "failing")}};
      }
    }
  }
  record["run"] = {{"suites", run.suites},
                   {"profile", run.profile},
                   {"features", run.features},
                   {"expectFail", run.expect_fail},
                   {"randomOnly", run.random_only},
                   {"random", random}};
  record["ok"] = verdict.Ok();
  record["verdict"] = verdict.Line();
  record["counts"] = RecordCountsJson(verdict.total);
  record["suites"] = json::object();
  for (const auto& [suite, c] : verdict.suites) record["suites"][suite] = RecordCountsJson(c);
  json all = json::array(), reached = json::array();
  for (const LevelOutcome& l : levels) {
    all.push_back({{"name", l.name}, {"reached", l.reached()}, {"reasons", l.reasons}});
    if (l.reached()) reached.push_back(l.name);
  }
  record["levelsReached"] = reached;
  record["levels"] = all;
  return record;
}


}  // namespace engram::conform
