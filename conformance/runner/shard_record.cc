// spec/conformance.md §CONF.9 item 2 — the record of one shard's share.
#include "conformance/runner/shard_record.h"

#include <map>
#include <string>
#include <utility>

#include "base/sha256.h"
#include "reference/input_files.h"
#include "vectors/generator.h"
#include "vectors/random_cases.h"

namespace engram::conform {

using json = nlohmann::ordered_json;

json ShardRecord(const Run& run, const RandomRun& random, const json& hello, const Verdict& v) {
  const Options& o = run.options;
  json work = {{"seed", o.random_seed},
               {"seedDrawn", o.seed_drawn},
               {"casesPerSuite", o.random_cases},
               {"randomOnly", o.random_only},
               {"suites", o.suites},
               {"profile", o.profile ? json(*o.profile) : json()},
               {"features", o.features},
               {"generator", vectors::kRandomVersion},
               {"specVersion", vectors::kSpecVersion},
               {"vectorsManifestSha256", run.vectors.manifest_sha256},
               {"vectorsKind", v.vectors_kind},
               {"implementation", hello},
               {"expectFailSha256", o.expect_fail.empty() ? std::string() : Sha256Hex(ReadInputFile(o.expect_fail, InputKind::kExpectFail))},
               {"strictStale", o.strict_stale},
               {"accumulateMax", o.accumulate_max_n},
               {"maxTimeouts", o.max_consecutive_timeouts},
               {"maxRandomFailures", o.max_random_failures},
               {"shrinkCalls", o.shrink_calls}};
  // §CONF.9 only when given, so that the reports of runs without them keep their work record.
  if (o.random_seconds > 0) work["randomSeconds"] = o.random_seconds;
  if (o.max_shrunk >= 0) work["maxShrunk"] = o.max_shrunk;
  json vector_suites = json::array();
  for (const SuiteFile& f : run.vectors.suites) vector_suites.push_back(f.name);
  json cases = json::object();
  auto add_cases = [&](const std::map<std::string, std::pair<int64_t, int64_t>>& ranges,
                       const std::map<std::string, CaseDigest>& digests) {
    for (const auto& [label, range] : ranges) {
      const auto d = digests.find(label);
      const CaseDigest digest = d == digests.end() ? CaseDigest() : d->second;
      cases[label] = {{"begin", range.first}, {"end", range.second}, {"requests", digest.cases}, {"sha256Sum", digest.Hex()}};
    }
  };
  add_cases(run.ranges, run.digests);
  add_cases(random.ranges, random.digests);
  json counts = json::object();
  for (const auto& [label, c] : v.suites) counts[label] = CountsJson(c);
  json failing = json::object();
  for (const auto& [suite, list] : random.failing) {
    for (size_t i = 0; i < list.size(); ++i) {
      failing[suite].push_back({{"recipe", list[i].recipe}, {"comment", random.comments.at(suite).at(i)},
                                {"case", random.cases.at(suite).at(i)}, {"seed", o.random_seed}});
    }
  }
  return {{"index", o.shard.index},   {"count", o.shard.count},  {"source", o.shard.source},
          {"clean", v.ShardClean()},  {"work", work},            {"vectorSuites", vector_suites},
          {"randomAsked", random.asked}, {"cases", cases},       {"counts", counts},
          {"runProblems", run.suite_problems}, {"problems", v.problems}, {"failing", failing},
          {"levelTally", TalliesJson(run.tallies)}};
}

}  // namespace engram::conform
