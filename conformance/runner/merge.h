// spec/conformance.md §CONF.9 — `engram report merge`: the shards' reports
// of one run made into the run's verdict and reports.
#ifndef ENGRAM_CONFORMANCE_RUNNER_MERGE_H_
#define ENGRAM_CONFORMANCE_RUNNER_MERGE_H_

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace engram::conform {

struct MergeOptions {
  std::vector<std::filesystem::path> shards;  // the shards' --report-json files
  std::filesystem::path report_json;          // the merged report (optional)
  std::filesystem::path junit;                // the merged JUnit XML (optional)
  std::filesystem::path save_failures;        // the shrunk failing cases of every shard, as one vectors directory
  std::filesystem::path vectors;              // the run's vectors (their schema/ for save_failures)
  std::filesystem::path verdict_json;         // §CONF.8 the merged verdict record (optional)
  std::vector<std::string> require_levels;    // §CONF.8 --require-level
};

// §CONF.9 item 3 Reads every shard's report once, in a stream (memory holds
// the shards' records and the failures shown, not their results), refuses a
// set that is not exactly the shards of one run (engram::Error naming the
// files, the field and the values; nothing is written and no verdict is
// printed), else writes the reports, prints the summary and the verdict of
// the whole run and returns its exit status (0 OK, 1 FAILED).
int MergeReports(const MergeOptions& options, std::ostream& out);

// §CONF.9 item 4 Why a saved failing recipe is not rebuilt: it is larger than
// the case the generator drew at its index (more values, a longer list, a
// larger size), which shrinking never makes; "" when it is within it.
std::string RecipeOutside(const nlohmann::ordered_json& recipe, const nlohmann::ordered_json& drawn);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_MERGE_H_
