// `engram conform`: run an implementation against the vectors (spec §CONF).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <iostream>
#include <memory>
#include <random>
#include <thread>

#include "conformance/cli/common.h"
#include "conformance/runner/process.h"
#include "conformance/runner/random_run.h"
#include "vectors/random_stream.h"
#include "conformance/runner/runner.h"
#include "conformance/runner/shard.h"
#include "conformance/runner/verdict_record.h"
#include "base/error.h"

namespace engram::cli {
namespace {

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw Error("cannot find the engram executable (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

// A seed below 2^53 (so that every JSON reader keeps it exact), from the OS.
uint64_t FreshSeed() {
  std::random_device rd;
  return ((static_cast<uint64_t>(rd()) << 32) | rd()) & ((uint64_t{1} << 53) - 1);
}

// §CONF.2 SIGTERM, SIGINT or SIGHUP (a CI cancel, Ctrl-C, a closed terminal)
// must not leave the implementation running: it is in a process group of its
// own, which the signal does not reach. The signals are blocked in every
// thread (before any other thread starts, so the random-case threads inherit
// the mask) and taken by one thread with sigwait, which is free to do what a
// signal handler may not: end the children's groups (SIGTERM, a grace, then
// SIGKILL), say on stderr what it did and what survived, and exit with
// 128 + the signal's number.
void StopOnSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signo : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, signo);
  if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return;
  std::thread([set] {
    int signo = 0;
    if (sigwait(&set, &signo) != 0) return;
    const char* name = signo == SIGTERM ? "SIGTERM" : signo == SIGINT ? "SIGINT" : "SIGHUP";
    std::string msg = std::string("engram conform: ") + name + " received: stopping the implementation\n";
    (void)!::write(2, msg.data(), msg.size());
    msg = conform::StopAllChildren(std::chrono::milliseconds(2000));
    msg += std::string("engram conform: stopped by ") + name + " (exit " + std::to_string(128 + signo) + "); the run is incomplete\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(128 + signo);
  }).detach();
}

struct ConformState {
  std::string vectors, lib, exec, expect_fail, report_json, junit, profile, verdict_json;
  std::vector<std::string> suites, features, require_levels;
  double timeout = 10, accumulate_timeout = 600;
  int64_t accumulate_max = 10000000;
  bool strict_stale = false;
  int max_timeouts = 3;
  double random_seconds = 0;
  int64_t random = 0, max_random_failures = 1, shrink_calls = 2000, random_threads = vectors::DefaultCaseThreads();
  int64_t max_shrunk = -1;
  uint64_t seed = 0;
  bool random_only = false;
  std::string save_failures;
  int64_t shard_index = 0, shard_count = 1;
};

// The random cases' options (§CONF.7): each but --random needs --random.
// Returns --seed, whose count tells a chosen seed from a drawn one.
CLI::Option* AddRandomOptions(CLI::App* cmd, ConformState& s) {
  auto* random = cmd->add_option("--random", s.random,
                                 "After the vectors, this many random cases per suite with a generator (§CONF.7)")
                     ->check(IntIn(1, 100000000, "a number of cases"));
  auto* seed = cmd->add_option("--seed", s.seed, "The random cases' seed (default: a fresh one, printed)")
                   ->check(IntIn(0, INT64_MAX, "a seed"));
  seed->needs(random);
  cmd->add_flag("--random-only", s.random_only, "Run only the random cases, not the vectors")->needs(random);
  cmd->add_option("--save-failures", s.save_failures,
                  "Write the shrunk failing random cases here, as a vectors directory (must be new or empty)")
      ->needs(random);
  cmd->add_option("--max-random-failures", s.max_random_failures,
                  "Per suite, stop drawing after this many failing cases (default 1; 0: never stop)")
      ->check(IntIn(0, 1000000, "a number of cases"))
      ->needs(random);
  cmd->add_option("--max-shrunk", s.max_shrunk,
                  "Per suite, shrink at most this many failing cases; later ones are reported as they failed, "
                  "not shrunk (default: every one, up to --max-random-failures)")
      ->check(IntIn(0, 1000000, "a number of cases"))
      ->needs(random);
  cmd->add_option("--random-seconds", s.random_seconds,
                  "Per suite, stop drawing after this many seconds (a nightly's budget: --random N or S seconds, "
                  "whichever comes first; the count run then depends on the machine)")
      ->check(SecondsIn(0.001, 604800))
      ->needs(random);
  cmd->add_option("--shrink-calls", s.shrink_calls,
                  "The most implementation calls spent shrinking one failing case (default 2000; 0: no shrinking)")
      ->check(IntIn(0, 100000000, "a number of calls"))
      ->needs(random);
  cmd->add_option("--random-threads", s.random_threads,
                  "Threads that draw the random cases ahead of the implementation (default: the cores, at most 8; "
                  "1: each when it is needed). The cases are the same for any number")
      ->check(IntIn(1, 64, "a number of threads"))
      ->needs(random);
  return seed;
}

}  // namespace

std::vector<std::string> LevelNames() {
  std::vector<std::string> names;
  for (const conform::Level& l : conform::ConformanceLevels()) names.push_back(l.name);
  return names;
}

void AddConformCommand(CLI::App& app) {
  auto s = std::make_shared<ConformState>();
  auto* cmd = app.add_subcommand("conform", "Run an implementation against the golden vectors (§CONF)");
  auto* vectors_opt = cmd->add_option("--vectors", s->vectors, "Vectors directory (holds MANIFEST.sha256 and v1/)");
  // Embedded (python -m engram_conformance): the vectors the package ships, unless named.
  const Host* host = EmbeddingHost();
  if (host != nullptr && !host->vectors.empty()) {
    s->vectors = host->vectors;
    vectors_opt->description("Vectors directory (holds MANIFEST.sha256 and v1/; default: the package's, " +
                             host->vectors + ")");
  } else {
    vectors_opt->required();
  }
  auto* lib = cmd->add_option("--lib", s->lib, "Shared library implementing engram/conformance.h (C ABI)");
  auto* exec = cmd->add_option("--exec", s->exec, "Command speaking the JSON-lines protocol on stdin/stdout");
  lib->excludes(exec);
  cmd->add_option("--suite", s->suites, "Only this suite (repeatable)");
  cmd->add_option("--profile", s->profile, "Only groups of this profile")->check(CLI::IsMember({"v4.1", "demo-v1"}));
  cmd->add_option("--features", s->features,
                  "Declare a feature besides those of the hello (repeatable; reported). Policy features "
                  "(§CONF.7, e.g. rollback-retained) add the random cases that depend on that policy");
  cmd->add_option("--expect-fail", s->expect_fail, "JSON list of tcIds the port knowingly deviates on");
  cmd->add_option("--report-json", s->report_json, "Write every result as JSON here");
  cmd->add_option("--verdict-json", s->verdict_json,
                  "Write the verdict record here: versions, digests, claims, the conformance levels reached, counts, "
                  "seed (§CONF.8; schema conformance/schema/verdict.schema.json)");
  cmd->add_option("--junit", s->junit, "Write JUnit XML here");
  cmd->add_option("--require-level", s->require_levels,
                  "Fail the run (exit 1) unless it reaches this conformance level (repeatable; §CONF.8): for a CI job "
                  "that must know the coverage it asked for was given")
      ->check(CLI::IsMember(LevelNames()));
  cmd->add_option("--timeout", s->timeout, "Seconds per test (default 10)")->check(SecondsIn(0.001, 86400));
  cmd->add_option("--accumulate-timeout", s->accumulate_timeout, "Seconds per accumulated vector (default 600)")
      ->check(SecondsIn(0.001, 604800));
  cmd->add_option("--accumulate-max", s->accumulate_max, "Skip accumulated vectors with more positions than this")
      ->check(IntIn(0, INT64_MAX, "a number of positions"));
  cmd->add_option("--max-timeouts", s->max_timeouts,
                  "Stop a suite after this many unanswered tests in a row; it fails (default 3; 0: never stop)")
      ->check(IntIn(0, 1000000, "a number of tests"));
  cmd->add_flag("--strict-stale", s->strict_stale, "Fail the run when an expected failure now passes");
  auto* seed = AddRandomOptions(cmd, *s);
  // §CONF.9 shards: the flags, else the environment of the scheduler.
  auto* shard_index = cmd->add_option("--shard-index", s->shard_index,
                                      "Run shard I (0-based) of --shard-count: its share of every suite's tests and "
                                      "random cases (default: from GTEST_SHARD_INDEX, TEST_SHARD_INDEX, "
                                      "SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or CIRCLE_NODE_INDEX; §CONF.9)")
                          ->check(IntIn(0, (int64_t{1} << 20) - 1, "a shard index"));
  auto* shard_count = cmd->add_option("--shard-count", s->shard_count, "The number of shards (1 ... 2^20)")
                          ->check(IntIn(1, int64_t{1} << 20, "a number of shards"));
  cmd->callback([s, seed, shard_index, shard_count] {
    StopOnSignals();
    // §CONF.2 what the implementation starts outside its group is adopted, and ended with the run.
    conform::AdoptOrphans();
    conform::Options o;
    o.vectors = s->vectors;
    if (!s->lib.empty()) {
      const Host* host = EmbeddingHost();
      o.command = host != nullptr ? host->self : std::vector<std::string>{SelfExe()};
      o.command.insert(o.command.end(), {"plugin-host", "--lib", s->lib});
      o.implementation_args = "--lib " + conform::Quoted(s->lib);
    } else if (!s->exec.empty()) {
      o.command = {"/bin/sh", "-c", "exec " + s->exec};
      o.implementation_args = "--exec " + conform::Quoted(s->exec);
    } else {
      throw Error("conform: pass --lib PATH or --exec \"CMD ...\"");
    }
    o.suites.insert(s->suites.begin(), s->suites.end());
    if (!s->profile.empty()) o.profile = s->profile;
    o.features.insert(s->features.begin(), s->features.end());
    o.expect_fail = s->expect_fail;
    o.report_json = s->report_json;
    o.junit = s->junit;
    o.verdict_json = s->verdict_json;
    o.require_levels = s->require_levels;
    o.timeout = std::chrono::milliseconds(static_cast<int64_t>(s->timeout * 1000));
    o.accumulate_timeout = std::chrono::milliseconds(static_cast<int64_t>(s->accumulate_timeout * 1000));
    o.accumulate_max_n = s->accumulate_max;
    o.strict_stale = s->strict_stale;
    o.max_consecutive_timeouts = s->max_timeouts;
    o.random_cases = s->random;
    o.random_only = s->random_only;
    o.save_failures = s->save_failures;
    o.max_random_failures = static_cast<int>(s->max_random_failures);
    o.max_shrunk = s->max_shrunk;
    o.random_seconds = s->random_seconds;
    o.shrink_calls = s->shrink_calls;
    o.random_threads = static_cast<int>(s->random_threads);
    if (s->random > 0) {
      // §CONF.7 a nightly run draws a fresh seed; the report and the replay line name it.
      o.random_seed = seed->count() > 0 ? s->seed : FreshSeed();
      o.seed_drawn = seed->count() == 0;  // §CONF.8 only a seed the runner drew earns a level
    }
    try {
      const auto env = [](const char* name) -> std::optional<std::string> {
        const char* v = std::getenv(name);
        return v == nullptr ? std::nullopt : std::optional<std::string>(v);
      };
      o.shard = conform::ChooseShard(shard_index->count() ? std::optional<int64_t>(s->shard_index) : std::nullopt,
                                     shard_count->count() ? std::optional<int64_t>(s->shard_count) : std::nullopt, env);
      // Bazel exports GTEST_SHARD_INDEX too, which is read first: the status
      // file is touched whichever variables gave the shard.
      conform::TouchShardStatusFile(env);
    } catch (const Error& e) {
      // §CONF.9 a shard that cannot tell which share it runs does not start.
      std::cerr << "engram conform: " << e.what() << "\n";
      throw CLI::RuntimeError(2);
    }
    if (o.shard.Partial()) {
      std::cerr << "engram conform: shard " << o.shard.index << " of " << o.shard.count << " (from " << o.shard.source << ")\n";
    }
    const int rc = conform::RunConformance(o, std::cout);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace engram::cli
