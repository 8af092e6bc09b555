// spec/conformance.md §CONF.7 — the runner's random phase: fresh cases from
// the reference generators (vectors/random_cases.h), judged like vector tests, a
// failing case shrunk while it still fails and saved as a vectors directory.
#ifndef ENGRAM_CONFORMANCE_RUNNER_RANDOM_RUN_H_
#define ENGRAM_CONFORMANCE_RUNNER_RANDOM_RUN_H_

#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/runner/peer.h"
#include "conformance/runner/report.h"
#include "conformance/runner/runner.h"
#include "vectors/random_cases.h"

namespace engram::conform {

struct RandomRun {
  // §CONF.7, §ERR.3 Only the failing cases are kept as results (suite
  // "random:<suite>", tcId = case index + 1); every case is counted in
  // `counts`, so that memory does not grow with --random N.
  std::vector<TestResult> results;
  std::map<std::string, Counts> counts;  // "random:<suite>" -> every case asked, failing ones included
  int64_t asked = 0;                     // cases sent to the implementation, all suites
  std::map<std::string, std::vector<std::string>> suite_problems;
  std::vector<std::string> lines;   // for the summary: seed, per-suite counts, shrinking, replay
  nlohmann::ordered_json report;    // --report-json "random"
  // The shrunk failing cases per suite, with their comments (for --save-failures).
  std::map<std::string, std::vector<vectors::RandomCase>> failing;
  std::map<std::string, std::vector<std::string>> comments;
  std::map<std::string, std::vector<int64_t>> cases;  // their case numbers (tcIds), for a merge to redraw them
  // §CONF.9 per "random:<suite>": the case indices [begin, end) this shard
  // drew (0-based; tcId = index + 1), and the digest of the requests it sent.
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  std::map<std::string, CaseDigest> digests;
};

// §CONF.7 One suite's tally in the random phase: what was drawn, asked and failed, and why drawing stopped.
struct SuiteTally {
  int64_t drawn = 0, asked = 0, out_of_scope = 0, failures = 0, unshrunk = 0, unanswered_in_a_row = 0;
  int64_t abandoned = 0;  // requests written ahead and not waited for at the time budget
  std::string stopped;    // the limit that stopped drawing early, or ""
  // Whether the next failing case is shrunk (--max-shrunk counts the shrunk ones; negative: every one).
  bool ShrinksNextFailure(const Options& o) const;
  // After a judged case: the limit this suite has reached (--max-timeouts, --max-random-failures,
  // --random-seconds, in that order), or "" to draw on.
  std::string StopAfterCase(const Options& o, bool past_deadline) const;
  // The suite's summary line, `trivial` passes not counted, over the `range` cases of its share.
  std::string Line(const std::string& suite, int64_t trivial, int64_t range) const;
};

// §CONF.7 Throws engram::Error when --save-failures names something that is
// neither missing nor an empty directory, or that cannot be created.
void CheckSaveFailures(const std::filesystem::path& dir);

// A shell word: `s` as is when it is plain, else in single quotes.
std::string Quoted(const std::string& s);

// The command that replays this random run.
std::string ReplayLine(const Options& options);

// Runs options.random_cases cases of every selected suite that has a
// generator and that the implementation claims; progress on `progress`.
RandomRun RunRandom(const Options& options, Peer& peer, const Claims& claims, std::ostream& progress);

// §CONF.7 Writes the shrunk failing cases as a vectors directory (MANIFEST.sha256,
// v1/<suite>.json, schema/ copied from options.vectors) that `engram conform
// --vectors DIR` replays. Writes nothing when there is no failing case.
// Throws engram::Error.
void SaveFailures(const Options& options, const RandomRun& run, std::ostream& log);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_RANDOM_RUN_H_
