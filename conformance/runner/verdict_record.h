// spec/conformance.md §CONF.8 — named conformance levels and the verdict
// record: what a run established, in a form a port can publish and a matrix
// of ports can be built from (`engram conform --verdict-json PATH`, and
// `engram report merge --verdict-json PATH` for the shards of one run).
#ifndef ENGRAM_CONFORMANCE_RUNNER_VERDICT_RECORD_H_
#define ENGRAM_CONFORMANCE_RUNNER_VERDICT_RECORD_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/runner/peer.h"
#include "conformance/runner/report.h"
#include "conformance/runner/runner.h"

namespace engram::conform {

// §CONF.8 One requirement of a level: every test of `suite` whose group (or
// test) has `profile` ("*": any profile), and the tests of no profile.
struct LevelSuite {
  std::string suite;
  std::string profile;
};

// §CONF.8 A named claim set.
struct Level {
  std::string name;
  std::string meaning;
  std::vector<LevelSuite> suites;
};

// §CONF.8 The levels, in the order of the spec's table.
const std::vector<Level>& ConformanceLevels();
// The level called `name`, or nullptr.
const Level* FindLevel(const std::string& name);

// §CONF.8 The fresh random cases a level needs of each of its suites that
// has a generator (§CONF.7): at least this many drawn, at a seed the runner
// drew itself. A port that answers the released vector files from a table
// (computing nothing) passes every fixed test; cases nobody saw before the
// run are what shows it computes.
inline constexpr int64_t kLevelRandomCases = 100;

// §CONF.8 What the levels are judged on: the whole run (a single run, or the
// merge of its shards), never one shard.
struct LevelScope {
  std::set<std::string> suites;  // --suite (empty: every suite)
  bool random_only = false;
  int64_t random_cases = 0;      // --random N (0: none)
  uint64_t seed = 0;
  bool seed_drawn = false;       // drawn by the runner (no --seed)
};

// §CONF.8 A level and every reason it was not reached (none: reached).
struct LevelOutcome {
  std::string name;
  std::vector<std::string> reasons;
  bool reached() const { return reasons.empty(); }
};

// §CONF.8 Judges every level from the run's verdict (counts, problems, its
// fixed vectors' tallies and its random report): the same function for a
// single run and for the merge of shards.
std::vector<LevelOutcome> JudgeLevels(const Verdict& verdict, const LevelScope& scope);

// §CONF.8 --require-level: a required level not reached becomes a problem of
// the run (its verdict FAILED, exit 1), naming the level and its reasons.
void RequireLevels(const std::vector<std::string>& required, const std::vector<LevelOutcome>& levels, Verdict& verdict);

// §CONF.8 The summary lines of the levels: one line, then each reason of a
// required level that was not reached.
std::vector<std::string> LevelLines(const std::vector<LevelOutcome>& levels, const std::vector<std::string>& required);

// §CONF.8 The record's "run" object: the options that shaped the run and its
// random cases (null without --random).
struct RunRecord {
  std::set<std::string> suites;
  nlohmann::ordered_json profile;  // a string or null
  std::set<std::string> features;
  bool expect_fail = false;
  bool random_only = false;
  int64_t random_cases = 0;
  uint64_t seed = 0;
  bool seed_drawn = false;
  std::vector<uint64_t> shard_seeds;  // a merge of shards that each drew a seed: theirs, in shard order
};
// §CONF.8 The options the verdict record names, from one process's options
// (a merge sets shard_seeds itself).
RunRecord RunRecordOf(const Options& o);

// §CONF.8 The verdict record (its JSON Schema: conformance/schema/verdict.schema.json).
// `date` is the UTC time of the run ("YYYY-MM-DDTHH:MM:SSZ").
nlohmann::ordered_json VerdictRecord(const Claims& claims, const RunRecord& run, const Verdict& verdict,
                                     const std::vector<LevelOutcome>& levels, const std::string& date);


}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_VERDICT_RECORD_H_
