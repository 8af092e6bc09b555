// spec/conformance.md §CONF.4 — a run's verdict from its results.
#include "conformance/runner/verdict.h"

#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace engram::conform {

using json = nlohmann::ordered_json;

Verdict Decide(const Run& run, const RandomRun& random) {
  Verdict v;
  v.strict_stale = run.options.strict_stale;
  v.suite_problems = run.suite_problems;
  for (const TestResult& r : run.results) {
    if (r.suite.rfind("random:", 0) != 0) v.suites[r.suite].Add(r);
  }
  // §CONF.7 every random case is counted as it ran (random.counts); only the
  // failing ones are kept in run.results, for their reports.
  for (const auto& [label, c] : random.counts) v.suites[label].Merge(c);
  int64_t tested_total = 0;
  for (const auto& [suite, c] : v.suites) {
    if (suite == "contract") continue;
    v.total.Merge(c);
    tested_total += c.tested;
  }
  v.trivial = v.total.trivial;
  v.tested = tested_total;
  v.shard = run.options.shard;
  v.tallies = run.tallies;
  return v;
}

void Diagnose(const VectorSet& vectors, const std::vector<TestResult>& results, Verdict& v) {
  std::map<std::string, std::set<std::string>> flagged;  // flag -> "suite:tcId" that ran
  std::set<std::string> failed_all;
  std::map<std::string, std::string> description;        // flag -> note description
  bool any_other_failure = false;                         // a failure that is not a mismatch, anywhere
  for (const SuiteFile& file : vectors.suites) {
    std::map<std::string, std::set<int64_t>> flagged_here;
    std::set<int64_t> failed_here;
    bool other_failures = false, computed_here = false;
    const json notes = file.doc.value("notes", json::object());
    for (const TestResult& r : results) {
      if (r.suite != file.name || r.status == "skipped") continue;
      if (r.status == "fail") {
        // §CONF.4 a divergence is something computed differently: a
        // mismatch, or an invalid input accepted. A refusal alone shows
        // nothing computed (a port refusing every valid layout would be
        // "diagnosed" with whichever flag marks exactly the valid tests), so
        // refusals count only beside a computed difference; a crash, a
        // timeout, garbage or a missing output rules a diagnosis out.
        if (r.reason == "mismatch" || r.reason == "accepted invalid input") {
          computed_here = true;
        } else if (r.reason != "refused valid input") {
          other_failures = true;
        }
        failed_here.insert(r.tc_id);
        failed_all.insert(r.suite + ":" + std::to_string(r.tc_id));
      }
      for (const std::string& f : r.flags) {
        if (!notes.contains(f) || notes[f].value("bugType", "") != "KNOWN_DIVERGENCE") continue;
        flagged_here[f].insert(r.tc_id);
        flagged[f].insert(r.suite + ":" + std::to_string(r.tc_id));
        description[f] = notes[f].value("description", "");
      }
    }
    if (other_failures || (!failed_here.empty() && !computed_here)) any_other_failure = true;
    if (failed_here.empty() || other_failures || !computed_here) continue;
    // Evidence needs contrast: among the tests that ran, some lack the flag
    // (and passed). A run of one flagged test that fails proves nothing.
    size_t ran = 0;
    for (const TestResult& r : results) ran += r.suite == file.name && r.status != "skipped";
    std::vector<std::string> matching;
    for (const auto& [f, ids] : flagged_here) {
      if (ids == failed_here && ran > ids.size()) matching.push_back(f);
    }
    if (!matching.empty()) {
      std::string line = "the " + std::to_string(failed_here.size()) + " failure(s) are exactly the tests flagged " + matching[0];
      for (size_t i = 1; i < matching.size(); ++i) line += (i + 1 == matching.size() ? " and exactly those flagged " : ", ") + matching[i];
      line += matching.size() > 1 ? " (these divergences flag the same tests here)" : "";
      for (const std::string& f : matching) line += "\n" + f + ": " + description[f];
      v.diagnoses[file.name].push_back(line);
    }
  }
  if (failed_all.empty() || any_other_failure) return;
  size_t ran_all = 0;
  for (const TestResult& r : results) ran_all += r.suite != "contract" && r.status != "skipped";
  for (const auto& [f, ids] : flagged) {
    std::set<std::string> suites;
    for (const std::string& id : ids) suites.insert(id.substr(0, id.find(':')));
    if (ids == failed_all && suites.size() > 1 && ran_all > ids.size()) {  // one suite: its own diagnosis says it
      v.diagnoses[""].push_back("every failure of this run, and nothing else, is a test flagged " + f +
                                " (a catalogued divergence, spec/vectors.md §VEC.12): " + description[f]);
    }
  }
}

void AddRandom(const Options& options, const RandomRun& random, Verdict& verdict) {
  verdict.random_lines = random.lines;
  if (options.random_cases > 0) verdict.random = random.report;
  try {
    std::ostringstream saved;
    SaveFailures(options, random, saved);
    std::string line = saved.str();
    if (!line.empty()) verdict.random_lines.push_back(line.substr(0, line.size() - 1));
  } catch (const Error& e) {
    verdict.problems.push_back(std::string("the failing random cases could not be saved: ") + e.what());
  }
}

}  // namespace engram::conform
