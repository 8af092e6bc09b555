// spec/conformance.md §CONF.8 — named conformance levels and the verdict
// record: what a run established, in a form a port can publish and a matrix
// of ports can be built from (`engram conform --verdict-json PATH`).
#ifndef ENGRAM_CONFORMANCE_RUNNER_VERDICT_RECORD_H_
#define ENGRAM_CONFORMANCE_RUNNER_VERDICT_RECORD_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/runner/peer.h"
#include "conformance/runner/report.h"
#include "conformance/runner/runner.h"

namespace engram::conform {

// §CONF.8 One requirement of a level: every test of `suite` whose group has
// `profile` ("*": any profile, and the tests of groups without a profile).
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

// §CONF.8 The verdict record of a run (its JSON Schema:
// vectors/schema/verdict.schema.json). Reads the vector files of the levels'
// suites under options.vectors to learn each test's profile. `date` is the
// UTC time of the run ("YYYY-MM-DDTHH:MM:SSZ").
nlohmann::ordered_json VerdictRecord(const Options& options, const Claims& claims, const std::vector<TestResult>& results,
                                     const Verdict& verdict, const std::string& date);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_VERDICT_RECORD_H_
