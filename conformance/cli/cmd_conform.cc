// `engram conform`: run an implementation against the vectors (spec §CONF).
#include <unistd.h>

#include <iostream>
#include <memory>

#include "conformance/cli/common.h"
#include "conformance/runner/runner.h"
#include "reference/error.h"

namespace engram::cli {
namespace {

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw Error("cannot find the engram executable (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

void AddConformCommand(CLI::App& app) {
  struct State {
    std::string vectors, lib, exec, expect_fail, report_json, junit, profile;
    std::vector<std::string> suites, features;
    double timeout = 10, accumulate_timeout = 600;
    int64_t accumulate_max = 10000000;
    bool strict_stale = false;
    int max_timeouts = 3;
  };
  auto s = std::make_shared<State>();
  auto* cmd = app.add_subcommand("conform", "Run an implementation against the golden vectors (§CONF)");
  cmd->add_option("--vectors", s->vectors, "Vectors directory (holds MANIFEST.sha256 and v1/)")->required();
  auto* lib = cmd->add_option("--lib", s->lib, "Shared library implementing engram/conformance.h (C ABI)");
  auto* exec = cmd->add_option("--exec", s->exec, "Command speaking the JSON-lines protocol on stdin/stdout");
  lib->excludes(exec);
  cmd->add_option("--suite", s->suites, "Only this suite (repeatable)");
  cmd->add_option("--profile", s->profile, "Only groups of this profile")->check(CLI::IsMember({"v4.1", "demo-v1"}));
  cmd->add_option("--features", s->features, "Features to enable (repeatable; reported)");
  cmd->add_option("--expect-fail", s->expect_fail, "JSON list of tcIds the port knowingly deviates on");
  cmd->add_option("--report-json", s->report_json, "Write every result as JSON here");
  cmd->add_option("--junit", s->junit, "Write JUnit XML here");
  cmd->add_option("--timeout", s->timeout, "Seconds per test (default 10)")->check(SecondsIn(0.001, 86400));
  cmd->add_option("--accumulate-timeout", s->accumulate_timeout, "Seconds per accumulated vector (default 600)")
      ->check(SecondsIn(0.001, 604800));
  cmd->add_option("--accumulate-max", s->accumulate_max, "Skip accumulated vectors with more positions than this")
      ->check(IntIn(0, INT64_MAX, "a number of positions"));
  cmd->add_option("--max-timeouts", s->max_timeouts,
                  "Stop a suite after this many unanswered tests in a row; it fails (default 3; 0: never stop)")
      ->check(IntIn(0, 1000000, "a number of tests"));
  cmd->add_flag("--strict-stale", s->strict_stale, "Fail the run when an expected failure now passes");
  cmd->callback([s] {
    conform::Options o;
    o.vectors = s->vectors;
    if (!s->lib.empty()) {
      o.command = {SelfExe(), "plugin-host", "--lib", s->lib};
    } else if (!s->exec.empty()) {
      o.command = {"/bin/sh", "-c", "exec " + s->exec};
    } else {
      throw Error("conform: pass --lib PATH or --exec \"CMD ...\"");
    }
    o.suites.insert(s->suites.begin(), s->suites.end());
    if (!s->profile.empty()) o.profile = s->profile;
    o.features.insert(s->features.begin(), s->features.end());
    o.expect_fail = s->expect_fail;
    o.report_json = s->report_json;
    o.junit = s->junit;
    o.timeout = std::chrono::milliseconds(static_cast<int64_t>(s->timeout * 1000));
    o.accumulate_timeout = std::chrono::milliseconds(static_cast<int64_t>(s->accumulate_timeout * 1000));
    o.accumulate_max_n = s->accumulate_max;
    o.strict_stale = s->strict_stale;
    o.max_consecutive_timeouts = s->max_timeouts;
    const int rc = conform::RunConformance(o, std::cout);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace engram::cli
