// `engram report merge`: the shards of one `engram conform` run made into its
// verdict and reports (spec/conformance.md §CONF.9).
#include <iostream>
#include <memory>

#include "base/error.h"
#include "conformance/cli/common.h"
#include "conformance/runner/merge.h"

namespace engram::cli {

void AddReportCommand(CLI::App& app) {
  auto* report = app.add_subcommand("report", "Work with engram conform reports (§CONF.9)");
  report->require_subcommand(1);
  struct State {
    std::vector<std::string> shards;
    std::string report_json, junit, save_failures, vectors, verdict_json;
    std::vector<std::string> require_levels;
  };
  auto s = std::make_shared<State>();
  auto* merge = report->add_subcommand(
      "merge", "Merge the --report-json files of every shard of one run into the run's verdict and reports");
  merge->add_option("shards", s->shards, "The shards' --report-json files (every shard of the run, each once)")->required();
  merge->add_option("--report-json", s->report_json, "Write the merged report here");
  merge->add_option("--junit", s->junit, "Write the merged JUnit XML here");
  merge->add_option("--save-failures", s->save_failures,
                    "Write every shard's shrunk failing random cases here, as one vectors directory (new or empty)");
  merge->add_option("--vectors", s->vectors, "The run's vectors directory (checked against the shards' manifest digest; "
                                             "its schema/ goes with --save-failures)");
  merge->add_option("--verdict-json", s->verdict_json,
                    "Write the run's verdict record here, its conformance levels judged on every shard together (§CONF.8)");
  merge->add_option("--require-level", s->require_levels,
                    "Fail (exit 1) unless the merged run reaches this conformance level (repeatable; §CONF.8)")
      ->check(CLI::IsMember(LevelNames()));
  merge->callback([s] {
    conform::MergeOptions o;
    for (const std::string& p : s->shards) o.shards.push_back(p);
    o.report_json = s->report_json;
    o.junit = s->junit;
    o.save_failures = s->save_failures;
    o.vectors = s->vectors;
    o.verdict_json = s->verdict_json;
    o.require_levels = s->require_levels;
    int rc = 0;
    try {
      rc = conform::MergeReports(o, std::cout);
    } catch (const Error& e) {
      // §CONF.9 a refused merge says why and prints no verdict.
      std::cerr << "engram report merge: refused: " << e.what() << "\n";
      throw CLI::RuntimeError(2);
    }
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace engram::cli
