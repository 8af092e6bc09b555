// spec/conformance.md — the conformance runner. RunConformance is its phases
// in order: the outputs are checked writable, the vectors are read and checked
// against their manifest (vector_set.h), the expected failures are read
// (expect_fail.h), the implementation is started and its handshake checked,
// its contract compared, every suite run, and the verdict (verdict.h), the
// shard record (shard_record.h) and the reports written.
#include "conformance/runner/runner.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>

#include "base/error.h"
#include "base/fileio.h"
#include "conformance/runner/expect_fail.h"
#include "conformance/runner/judge.h"
#include "conformance/runner/peer.h"
#include "conformance/runner/process.h"
#include "conformance/runner/random_run.h"
#include "conformance/runner/report.h"
#include "conformance/runner/run_state.h"
#include "conformance/runner/shard_record.h"
#include "conformance/runner/vector_set.h"
#include "conformance/runner/verdict.h"
#include "conformance/runner/verdict_record.h"
#include "reference/contract.h"
#include "vectors/compare.h"
#include "vectors/generator.h"
#include "vectors/manifest.h"
#include "vectors/random_cases.h"

namespace engram::conform {
namespace {

// Vectors are read keeping their key order: §CONF.1 splits inputs from
// outputs by position relative to "result".
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------- phase: outputs

// §CONF.4 A report that cannot be written must be found before the run, not
// after it: a run that ends with "OK" and exit 1 is a false green waiting to
// happen. Throws engram::Error naming the option and the path.
void CheckWritable(const fs::path& path, const std::string& option) {
  if (path.empty()) return;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(option + " " + path.string() + ": is a directory");
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::is_directory(dir, ec)) throw Error(option + " " + path.string() + ": the directory " + dir.string() + " does not exist");
  // The report is written atomically (a temporary file renamed into place):
  // what must work is creating a file beside it.
  std::string probe = (dir / ("." + path.filename().string() + ".probe-XXXXXX")).string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) throw Error(option + " " + path.string() + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

// ---------------------------------------------------------------- the run

// §CONF.4 Unanswered requests in a row (timeouts, a child that cannot be
// restarted) within one suite; after `limit` of them the suite stops. Only an
// answer resets the streak: a crash in between neither counts nor resets it, so
// a port that alternates hanging and crashing is stopped too.
struct TimeoutGuard {
  explicit TimeoutGuard(int max_in_a_row) : limit(max_in_a_row) {}
  int limit;
  int in_a_row = 0;
  std::vector<int64_t> ids;  // the tcIds of the current streak
  bool stopped = false;
  void Note(const Peer::Reply& reply, int64_t tc_id) {
    if (reply.answered) {
      in_a_row = 0;
      ids.clear();
      return;
    }
    if (!reply.counts_as_timeout) return;
    ++in_a_row;
    ids.push_back(tc_id);
    if (limit > 0 && in_a_row >= limit) stopped = true;
  }
  std::string Why() const {
    std::string list;
    for (int64_t id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
    return "stopped after " + std::to_string(in_a_row) + " consecutive unanswered tests (tcIds " + list +
           "); the rest of the suite was not run (--max-timeouts)";
  }
};

// ---------------------------------------------------------------- phase: contract

// §CON / §CONF.2 item 2: the implementation's contract against the vectors'
// layouts, once per configuration the vectors use.
void RunContracts(Run& run) {
  std::set<std::string> seen;
  TimeoutGuard guard(run.options.max_consecutive_timeouts);
  // §CONF.9 a shard checks the configurations whose ids (1-based, over all
  // the vectors) fall in its share.
  const auto [first, end] = ShardRange(static_cast<int64_t>(run.vectors.contract_ids.size()), run.options.shard.index,
                                       run.options.shard.count);
  run.ranges["contract"] = {first, end};
  CaseDigest& digest = run.digests["contract"];
  for (const SuiteFile& file : run.vectors.suites) {
    if (!run.options.suites.empty() && run.options.suites.count(file.name) == 0) continue;
    for (const json& group : file.doc.value("testGroups", json::array())) {
      // §CON.5 The reported contract's layers against the layout the vectors derive
      // from the same configuration, once per configuration, before any test.
      if (!group.contains("layers") || !group.contains("config") || !group.contains("profile")) continue;
      const std::string key = ContractKey(group).dump();
      if (!seen.insert(key).second) continue;
      if (!group["profile"].is_string() || !run.claims.Profile(group["profile"].get<std::string>())) continue;
      if (run.options.profile && group["profile"] != *run.options.profile) continue;
      TestResult r;
      r.suite = "contract";
      r.tc_id = run.vectors.contract_ids.at(key);
      if (r.tc_id - 1 < first || r.tc_id - 1 >= end) continue;
      r.status = "pass";
      if (guard.stopped) {
        Skip(r, "stopped", guard.Why());
        run.results.push_back(r);
        continue;
      }
      const std::string request = json{{"op", "contract"}, {"profile", group["profile"]}, {"config", group["config"]},
                                       {"compressedVocabSize", group["compressedVocabSize"]},
                                       {"compressedPad", group["compressedPad"]}}.dump();
      digest.Add(request);
      Peer::Reply reply = run.peer.CallLine(request, run.options.timeout);
      guard.Note(reply, r.tc_id);
      const json& body = reply.body;
      if (!reply.failure.empty()) {
        Fail(r, reply.failure, reply.detail);
      } else if ((!body.contains("contract") || body["contract"].is_null()) && body.contains("layers")) {
        // No full contract (no tokenizer), but the layout the implementation computes.
        if (const std::string d = vectors::FirstDifference(group["layers"], body["layers"], "layers"); !d.empty()) {
          Fail(r, "contract mismatch", d);
        }
      } else if (!body.contains("contract") || body["contract"].is_null()) {
        Skip(r, "unsupported", "the implementation builds no contract");
      } else {
        try {
          const json& c = body["contract"];
          CheckContractForm(c, "the implementation's contract");
          if (c["profile"] != group["profile"] || c["compressedVocabSize"] != group["compressedVocabSize"] ||
              c["layerIds"].size() != group["layers"].size()) {
            Skip(r, "not claimed", "the implementation's contract is for another configuration (" + c["profile"].dump() +
                                       ", V " + c["compressedVocabSize"].dump() + ")");
          } else if (const std::string d = vectors::FirstDifference(group["layers"], c["layers"], "layers"); !d.empty()) {
            Fail(r, "contract mismatch", d);
          }
        } catch (const Error& e) {
          Fail(r, "bad contract", e.what());
        }
      }
      if (r.status == "fail") r.returned = Kept(body);
      r.detail = (r.detail.empty() ? "" : r.detail + " ") + "(" + file.name + ", " + group.value("comment", "") + ")";
      ApplyExpectFail(run.expect_fail, r);
      run.results.push_back(r);
    }
  }
  if (guard.stopped) run.suite_problems["contract"].push_back(guard.Why());
}

// ---------------------------------------------------------------- phase: suites

void RunSuite(Run& run, const SuiteFile& file) {
  const Options& o = run.options;
  const json notes = file.doc.value("notes", json::object());
  TimeoutGuard guard(o.max_consecutive_timeouts);
  // §CONF.9 a shard runs the tests whose position in the file (0-based, over
  // every group, whatever --profile selects) falls in its share.
  int64_t total = 0;
  for (const json& group : file.doc.value("testGroups", json::array())) total += static_cast<int64_t>(group.value("tests", json::array()).size());
  const auto [first, end] = ShardRange(total, o.shard.index, o.shard.count);
  run.ranges[file.name] = {first, end};
  CaseDigest& digest = run.digests[file.name];
  int64_t position = -1;
  for (const json& group : file.doc.value("testGroups", json::array())) {
    const std::string type = group.value("type", "");
    const std::string profile = group.contains("profile") && group["profile"].is_string() ? group["profile"].get<std::string>() : "";
    if (o.profile && !profile.empty() && profile != *o.profile) continue;
    json g = group;
    g.erase("tests");
    const bool claimed = run.claims.Suite(file.name) && (profile.empty() || run.claims.Profile(profile));
    for (const json& t : group.value("tests", json::array())) {
      ++position;
      if (position < first || position >= end) continue;
      // LayoutTest carries its profile per test, not per group.
      const std::string test_profile = t.contains("profile") && t["profile"].is_string() ? t["profile"].get<std::string>() : "";
      if (o.profile && !test_profile.empty() && test_profile != *o.profile) continue;
      TestResult r = NewResult(file.name, t);
      if (guard.stopped) {
        Skip(r, "stopped", "not run: the suite was " + guard.Why());
      } else if (!claimed || (!test_profile.empty() && !run.claims.Profile(test_profile))) {
        Skip(r, "not claimed", "suite or profile not claimed by the implementation");
      } else if (file.name == "accumulated") {
        const int64_t n = t.value("n", int64_t{0});
        if (n > o.accumulate_max_n) {
          Skip(r, "limit", "n = " + std::to_string(n) + " exceeds --accumulate-max");
        } else {
          const std::string request =
              json{{"op", "accumulate"}, {"kind", t["kind"]}, {"group", g}, {"n", t["n"]}, {"seed", t["seed"]}}.dump();
          digest.Add(request);
          const auto t0 = std::chrono::steady_clock::now();
          const Peer::Reply reply = run.peer.CallLine(request, o.accumulate_timeout);
          r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          guard.Note(reply, r.tc_id);
          if (!reply.failure.empty()) {
            Fail(r, reply.failure, reply.detail);
          } else if (int{reply.body.contains("sha256")} + int{reply.body.contains("unsupported")} != 1) {
            Fail(r, "garbage", "the answer must hold exactly one of sha256 / unsupported: " + vectors::Short(reply.body));
            r.returned = Kept(reply.body);
          } else if (reply.body.contains("unsupported")) {
            Skip(r, "unsupported", "unsupported: " + vectors::Short(reply.body["unsupported"]));
          } else if (!reply.body.contains("sha256") || reply.body["sha256"] != t["sha256"]) {
            Fail(r, "mismatch", "sha256 over " + std::to_string(n) + " positions: expected " + t.value("sha256", "") +
                                    ", got " + vectors::Short(reply.body.value("sha256", json())));
            r.returned = Kept(reply.body);
          }
        }
      } else {
        Peer::Reply reply;
        r = CallTest(run.peer, o.timeout, file.name, file.name, r.tc_id, g, t, &reply, &digest);
        guard.Note(reply, r.tc_id);
      }
      r.profile = test_profile.empty() ? profile : test_profile;
      AddFlags(r, notes);
      ApplyExpectFail(run.expect_fail, r);
      run.tallies[file.name][r.profile].Add(r);
      run.results.push_back(std::move(r));
    }
  }
  if (guard.stopped) run.suite_problems[file.name].push_back(guard.Why());
}

// ---------------------------------------------------------------- phase: before the run

// §CONF.4, §ERR.1 Everything that can stop the run is checked before any
// test: the report paths, the manifest, the spec version of every vector
// file, the suites asked for, the expected-failures file and the random
// options. Throws engram::Error (the run cannot start; nothing is written).
struct Inputs {
  VectorSet vectors;
  ExpectFail expect_fail;
};

Inputs CheckBeforeTheRun(const Options& options) {
  CheckWritable(options.report_json, "--report-json");
  CheckWritable(options.junit, "--junit");
  if (!options.report_json.empty() && !options.junit.empty() &&
      fs::weakly_canonical(options.report_json) == fs::weakly_canonical(options.junit)) {
    throw Error("--report-json and --junit name the same file " + options.junit.string() + ": one would overwrite the other");
  }
  // §CONF.8 a level is the whole run's: one shard of several claims none.
  if (options.shard.Partial()) {
    const std::string which = "shard " + std::to_string(options.shard.index) + " of " + std::to_string(options.shard.count) +
                              " (" + options.shard.source + ")";
    if (!options.verdict_json.empty()) {
      throw Error("--verdict-json: " + which + " is not the run and claims no level; pass --verdict-json to engram report "
                  "merge, which judges the levels of every shard together (§CONF.8, §CONF.9)");
    }
    if (!options.require_levels.empty()) {
      throw Error("--require-level " + options.require_levels.front() + ": " + which + " is not the run and reaches no "
                  "level; pass --require-level to engram report merge (§CONF.8, §CONF.9)");
    }
  }
  // §CONF.8 the verdict record is a third report, checked alike.
  CheckWritable(options.verdict_json, "--verdict-json");
  for (const auto& [other, name] : {std::pair{&options.report_json, "--report-json"}, std::pair{&options.junit, "--junit"}}) {
    if (!options.verdict_json.empty() && !other->empty() &&
        fs::weakly_canonical(options.verdict_json) == fs::weakly_canonical(*other)) {
      throw Error(std::string("--verdict-json and ") + name + " name the same file " + options.verdict_json.string() +
                  ": one would overwrite the other");
    }
  }
  Inputs in{LoadVectors(options.vectors, options.suites), {}};
  const std::set<std::string> names = in.vectors.Names();
  for (const std::string& s : options.suites) {
    if (!names.count(s)) {
      std::string have;
      for (const std::string& n : names) have += (have.empty() ? "" : ", ") + n;
      throw Error("--suite " + s + ": the vectors have no such suite (they have: " + have + ")");
    }
  }
  in.expect_fail = LoadExpectFail(options.expect_fail, in.vectors);
  CheckSaveFailures(options.save_failures);
  if (options.random_only) {
    for (const std::string& s : options.suites) {
      if (vectors::FindRandomSuite(s) == nullptr) {
        std::string have;
        for (const vectors::RandomSuite& r : vectors::RandomSuites()) have += (have.empty() ? "" : ", ") + r.suite;
        throw Error("--suite " + s + " --random-only: the suite has no random generator (those with one: " + have + ")");
      }
    }
  }
  return in;
}

// §CONF.2 The handshake: the peer's info, and its claims checked against the
// protocol's suites, not against the files in this directory: a directory of
// saved failures (§CONF.7) holds one suite, and a port claiming more is still
// the same port. Throws engram::Error (the run cannot start).
Claims Handshake(Peer& peer, json& hello) {
  hello = peer.Hello();
  const std::vector<std::string> protocol = vectors::SuiteNames();
  return CheckHello(hello, std::set<std::string>(protocol.begin(), protocol.end()));
}

// ---------------------------------------------------------------- phase: the tests

// §CONF.8 The tests of every suite in this share, per profile, whether run or
// not: a level names its tests, so those that --suite, --profile or
// --random-only left out are counted as not run.
void CountShareTests(Run& run) {
  for (const SuiteFile& file : run.vectors.suites) {
    int64_t total = 0;
    for (const json& group : file.doc["testGroups"]) total += static_cast<int64_t>(group["tests"].size());
    const auto [first, end] = ShardRange(total, run.options.shard.index, run.options.shard.count);
    int64_t position = -1;
    std::map<std::string, LevelTally>& tally = run.tallies[file.name];
    for (const json& group : file.doc["testGroups"]) {
      const std::string profile = group.contains("profile") && group["profile"].is_string() ? group["profile"].get<std::string>() : "";
      for (const json& t : group["tests"]) {
        ++position;
        if (position < first || position >= end) continue;
        const std::string own = t.contains("profile") && t["profile"].is_string() ? t["profile"].get<std::string>() : "";
        ++tally[own.empty() ? profile : own].tests;
      }
    }
  }
}

// The fixed vectors (contracts, then every suite asked for) unless
// --random-only, then the random cases (§CONF.7), whose results and problems
// join the fixed ones'.
RandomRun RunTests(Run& run) {
  const Options& options = run.options;
  CountShareTests(run);
  if (!options.random_only) {
    RunContracts(run);
    for (const SuiteFile& file : run.vectors.suites) {
      if (options.suites.empty() || options.suites.count(file.name)) RunSuite(run, file);
    }
  }
  RandomRun random;
  if (options.random_cases > 0) {
    random = RunRandom(options, run.peer, run.claims, std::cerr);
    for (TestResult& r : random.results) run.results.push_back(std::move(r));
    for (const auto& [suite, list] : random.suite_problems) {
      for (const std::string& p : list) run.suite_problems[suite].push_back(p);
    }
  }
  return random;
}

// ---------------------------------------------------------------- phase: reports

// §CONF.8 The date of the verdict record, UTC, to the second.
std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// §CONF.4, §ERR.1 The reports are staged (written and flushed beside their
// targets) before either is renamed into place and before the verdict is
// printed: a report that cannot be written turns the verdict, and both
// reports say the same.
void WriteReports(const Options& options, const json& hello, const Claims& claims, const std::vector<TestResult>& results,
                  Verdict& verdict, const std::vector<LevelOutcome>& levels) {
  std::vector<std::unique_ptr<StagedFile>> staged;
  const std::string date = UtcNow();
  auto stage = [&]() -> std::string {
    staged.clear();
    const std::pair<std::filesystem::path, std::string> reports[] = {
        {options.report_json, options.report_json.empty() ? "" : JsonReport(hello, results, verdict)},
        {options.junit, options.junit.empty() ? "" : JunitReport(results, verdict)},
        {options.verdict_json,
         options.verdict_json.empty() ? "" : VerdictRecord(claims, RunRecordOf(options), verdict, levels, date).dump(1) + "\n"}};
    for (const auto& [path, text] : reports) {
      if (path.empty()) continue;
      try {
        staged.push_back(std::make_unique<StagedFile>(path, text));
      } catch (const Error& e) {
        return e.what();
      }
    }
    return "";
  };
  if (const std::string problem = stage(); !problem.empty()) {
    verdict.problems.push_back("a report could not be written: " + problem);
    stage();  // best effort: what can still be written now says FAILED
  }
  for (auto& file : staged) {
    try {
      file->Commit();
    } catch (const Error& e) {
      verdict.problems.push_back(std::string("a report could not be written: ") + e.what());
    }
  }
}

}  // namespace

// The run in its phases: the checks before it, the handshake, the tests, the
// verdict, the reports, the summary. A problem before the first test is exit 2
// with nothing written; after it, every problem is part of the verdict.
int RunConformance(const Options& options, std::ostream& out) {
  // §CONF.2 At the end of every run, however it ends, nothing the
  // implementation started is left running (process.h AdoptOrphans).
  struct EndLeftovers {
    ~EndLeftovers() {
      if (const std::string ended = EndOrphans(std::chrono::milliseconds(2000)); !ended.empty()) {
        std::cerr << "engram conform: " << ended << "\n";
      }
    }
  } end_leftovers;
  std::optional<Inputs> in;
  try {
    in = CheckBeforeTheRun(options);
  } catch (const Error& e) {
    std::cerr << "engram conform: " << e.what() << "\n";
    return 2;
  }
  Peer peer(options.command, options.timeout);
  Run run{options, in->vectors, in->expect_fail, peer, {}, {}, {}, {}, {}, {}};
  json hello;
  try {
    run.claims = Handshake(peer, hello);
  } catch (const Error& e) {
    std::cerr << "engram conform: " << e.what() << "\n";
    return 2;
  }
  out << "implementation: " << vectors::Short(json(run.claims.name)) << " " << vectors::Short(json(run.claims.version)) << "\n";

  const RandomRun random = RunTests(run);
  peer.Bye();

  Verdict verdict = Decide(run, random);
  // §VEC.13 What the tests were judged against.
  verdict.SetVectors(vectors::ClassifySet(run.vectors.manifest_sha256));
  AddRandom(options, random, verdict);
  verdict.shard_record = ShardRecord(run, random, hello, verdict);
  // §CONF.9 what needs the whole run (a suite in which nothing passed,
  // nothing tested at all) is not said of one shard: a shard's share of a
  // suite may hold only trivial tests. The merge decides it from the sums.
  if (!options.shard.Partial()) {
    Scope scope;
    for (const SuiteFile& file : run.vectors.suites) scope.vector_suites.push_back(file.name);
    scope.requested = options.suites;
    scope.random_only = options.random_only;
    scope.random_cases = options.random_cases;
    scope.random_asked = random.asked;
    DecideScope(scope, verdict);
  }
  Diagnose(run.vectors, run.results, verdict);
  // §CONF.8 The levels are the whole run's: a shard judges none (its
  // --verdict-json and --require-level are refused before the run).
  std::vector<LevelOutcome> levels;
  if (!options.shard.Partial()) {
    LevelScope scope{options.suites, options.random_only, options.random_cases, options.random_seed, options.seed_drawn};
    levels = JudgeLevels(verdict, scope);
    RequireLevels(options.require_levels, levels, verdict);
    verdict.level_lines = LevelLines(levels, options.require_levels);
  }
  WriteReports(options, hello, run.claims, run.results, verdict, levels);
  PrintSummary(run.results, verdict, options.expect_fail, out);
  // §CONF.9 a shard's exit status says whether anything failed in it (a
  // scheduler's task state); the run's verdict is the merge's.
  if (options.shard.Partial()) return verdict.ShardClean() ? 0 : 1;
  return verdict.Ok() ? 0 : 1;
}

}  // namespace engram::conform
