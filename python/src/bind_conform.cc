// §CONF engram_conformance._core's runner functions: the same code `engram conform` runs (conformance/runner:
// the split of a test, the judge, the vectors check, shards, the session's verdict) and the CLI itself.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "conformance/cli/common.h"
#include "conformance/runner/judge.h"
#include "conformance/runner/random_run.h"
#include "conformance/runner/report.h"
#include "conformance/runner/runner.h"
#include "conformance/runner/shard.h"
#include "conformance/runner/vector_set.h"
#include "python/src/bind.h"
#include "vectors/compare.h"
#include "vectors/trivial.h"

namespace engram::py {
namespace {

using namespace nb::literals;

// §CONF.4 The runner's verdict on one answer: the same Judge `engram conform` calls.
std::tuple<std::string, std::string, std::string, bool> JudgeAnswer(const std::string& suite,
                                                                   const std::string& group_text,
                                                                   const std::string& test_text,
                                                                   const std::string& reply_text,
                                                                   const std::string& notes_text) {
  ojson group = ParseJson(group_text, "group");
  group.erase("tests");
  const ojson test = ParseJson(test_text, "test");
  const std::string type = group.value("type", "");
  engram::conform::TestResult r = engram::conform::NewResult(suite, test);
  r.trivial = r.valid && engram::vectors::IsTrivial(group, test);
  engram::conform::Peer::Reply reply;
  reply.body = ParseJson(reply_text, "answer");
  engram::conform::Judge(r, type, group, test, engram::vectors::SplitOrdered(type, test), reply);
  engram::conform::AddFlags(r, ParseJson(notes_text, "notes"));
  return std::make_tuple(r.status, r.reason, r.detail, r.trivial);
}

// §CONF.4 The vectors as engram conform checks them before a run: (manifest
// digest, released set or None, every suite, {suite: document text}).
// `suites`: those checked against their schemas and returned (empty: none;
// every file is digest-checked and parsed either way).
std::tuple<std::string, std::optional<std::string>, std::vector<std::string>, std::map<std::string, std::string>>
CheckVectors(const std::string& dir, const std::vector<std::string>& suites) {
  engram::conform::CheckedVectors v;
  {
    nb::gil_scoped_release release;
    // LoadVectors judges every suite for an empty set: a name no suite has judges none.
    std::set<std::string> judged(suites.begin(), suites.end());
    if (judged.empty()) judged.insert("");
    v = engram::conform::CheckVectorsDirectory(dir, judged);
  }
  std::map<std::string, std::string> texts;
  std::vector<std::string> names;
  for (const auto& [name, doc] : v.suites) {
    names.push_back(name);
    if (std::find(suites.begin(), suites.end(), name) != suites.end()) texts[name] = doc.dump();
  }
  return std::make_tuple(v.manifest_sha256, v.released, names, texts);
}

// The environment as the shard rules read it.
std::function<std::optional<std::string>(const char*)> EnvOf(const std::map<std::string, std::string>& env) {
  return [env](const char* name) -> std::optional<std::string> {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// §CONF.9 The shard of `engram conform`, from the same rules (shard.cc):
// the options (as text, or None), else the environment given.
std::tuple<int64_t, int64_t, std::string> ChooseShard(std::optional<std::string> index, std::optional<std::string> count,
                                                      const std::map<std::string, std::string>& env) {
  std::optional<int64_t> i, n;
  if (index) i = engram::conform::ShardNumber("--engram-shard-index", *index);
  if (count) n = engram::conform::ShardNumber("--engram-shard-count", *count);
  const engram::conform::Shard s = engram::conform::ChooseShard(i, n, EnvOf(env));
  return std::make_tuple(s.index, s.count, s.source);
}

// §CONF.4 The run-level and suite-level problems of a pytest session, decided
// by engram conform's rule (report.cc DecideScope) from every case's outcome:
// [(label, status, reason, valid, trivial), ...]; `random` is
// --engram-random N.
std::vector<std::string> SessionProblems(const std::vector<std::tuple<std::string, std::string, std::string, bool, bool>>& outcomes,
                                         int64_t random) {
  engram::conform::Verdict v;
  engram::conform::Scope scope;
  scope.random_cases = random;
  std::set<std::string> fixed;
  for (const auto& [label, status, reason, valid, trivial] : outcomes) {
    engram::conform::TestResult r;
    r.suite = label;
    r.status = status;
    r.reason = reason;
    r.valid = valid;
    r.trivial = trivial;
    v.suites[label].Add(r);
    if (label.rfind("random:", 0) == 0) {
      ++scope.random_asked;
    } else {
      fixed.insert(label);
    }
  }
  for (const auto& [label, c] : v.suites) v.total.Merge(c);
  v.tested = v.total.tested;
  v.trivial = v.total.trivial;
  scope.vector_suites.assign(fixed.begin(), fixed.end());
  if (scope.random_asked == 0) scope.random_cases = 0;  // --engram-random N with no random test collected: not a run of them
  engram::conform::DecideScope(scope, v);
  std::vector<std::string> out = v.problems;
  for (const auto& [label, list] : v.suite_problems) {
    for (const std::string& p : list) out.push_back(label + ": " + p);
  }
  return out;
}

// The `engram` command line in this process (python -m engram_conformance): `self` starts it again
// (conform --lib's plug-in host), `schemas` and `vectors` are the package's.
int CliMain(const std::vector<std::string>& argv, const std::vector<std::string>& self, const std::string& schemas,
            const std::string& vectors) {
  engram::cli::SetHost({self, schemas, vectors});
  std::vector<const char*> words;
  for (const std::string& w : argv) words.push_back(w.c_str());
  int rc = 0;
  {
    nb::gil_scoped_release release;
    rc = engram::cli::Main(static_cast<int>(words.size()), words.data());
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
  }
  return rc;
}

}  // namespace

void BindConform(nb::module_& m) {
  m.def("split", [](const std::string& type, const std::string& test) {
    const engram::vectors::SplitTest s = engram::vectors::SplitOrdered(type, ParseJson(test, "test"));
    return std::make_pair(s.inputs.dump(), s.expected.dump());
  }, "type"_a, "test"_a, "§CONF.1 (inputs, expected) as JSON text: what a port is sent and what it must produce.");
  m.def("judge", &JudgeAnswer, "suite"_a, "group"_a, "test"_a, "answer"_a, "notes"_a,
        "§CONF.4 (status, reason, detail, trivial): the runner's verdict on one answer.");
  m.def("check_vectors", &CheckVectors, "dir"_a, "suites"_a,
        "§CONF.4 (manifest sha256, released set or None, every suite, {suite: document text} of `suites`), checked\n"
        "as engram conform checks them (`suites` against their schemas too).");
  m.def("choose_shard", &ChooseShard, "index"_a.none(), "count"_a.none(), "env"_a,
        "§CONF.9 item 1 (index, count, source), by engram conform's rules.");
  m.def("touch_shard_status_file", [](const std::map<std::string, std::string>& env) {
    engram::conform::TouchShardStatusFile(EnvOf(env));
  }, "env"_a, "§CONF.9 item 1 Bazel's TEST_SHARD_STATUS_FILE.");
  m.def("decimal_in", &engram::conform::DecimalIn, "name"_a, "value"_a, "lo"_a, "hi"_a,
        "`value` as a decimal integer in [lo, hi], by the CLI's rule, or an Error naming `name`.");
  m.def("check_save_failures", [](const std::string& dir) { engram::conform::CheckSaveFailures(dir); }, "dir"_a,
        "§CONF.7 item 5");
  m.def("session_problems", &SessionProblems, "outcomes"_a, "random"_a,
        "§CONF.4 the problems of a session, by engram conform's rule.");
  m.def("cli_main", &CliMain, "argv"_a, "self"_a, "schemas"_a, "vectors"_a,
        "The engram command line in this process (python -m engram_conformance); the exit status.");
}

}  // namespace engram::py
