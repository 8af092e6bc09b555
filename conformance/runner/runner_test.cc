// End-to-end tests of `engram conform` (spec/conformance.md): the in-tree
// reference through the C ABI, the numpy port through the JSON-lines
// protocol, planted bugs that must fail exactly their flagged tests, and
// peers that crash, hang or answer garbage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "conformance/runner/peer.h"
#include "conformance/runner/process.h"
#include "conformance/runner/runner.h"
#include "conformance/runner/watched_json.h"
#include "base/error.h"
#include "base/sha256.h"
#include "reference/input_files.h"
#include "vectors/generator.h"
#include "vectors/manifest.h"
#include "testutil/conform.h"
#include "testutil/sanitized.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HasSubstr;
using testing::Not;
using namespace engram::conform::test;

// §CONF.5 (the accumulated digests of 10^3 and 10^5 positions) and §CONF.6 (every
// test type's inputs sent and outputs judged) through the C ABI.
TEST(Conform, ReferencePluginPassesEverythingItClaims) {
  const fs::path report = Dir() / "ref.json";
  const fs::path junit = Dir() / "ref.xml";
  Result r = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --accumulate-max 100000 --report-json " +
                     report.string() + " --junit " + junit.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("conformance: OK"));
  const json doc = json::parse(Slurp(report));
  std::set<std::string> passed_suites;
  for (const json& t : doc["results"]) {
    EXPECT_NE(t["status"], "fail") << t.dump();
    if (t["status"] == "pass") passed_suites.insert(t["suite"].get<std::string>());
  }
  for (const char* s : {"multipliers", "layout", "hash_v41", "hash_demo", "hash_state", "accumulated", "serving_v41",
                        "contract"}) {
    EXPECT_TRUE(passed_suites.count(s)) << s;
  }
  EXPECT_THAT(Slurp(junit), HasSubstr("<testsuite name=\"hash_v41\""));
}

// Every suite the numpy port claims (all of them), and the only tests a
// run with --accumulate-max 100000 may skip: the 10^7 accumulated digests.
const char* const kAllSuites[] = {"multipliers", "layout",       "hash_v41", "hash_demo", "hash_state",
                                  "accumulated", "token_map",    "fp8_decode", "table_lookup", "tp_shard",
                                  "gate_v41",    "gate_demo",    "short_conv_demo", "engram_forward",
                                  "serving_v41"};

bool SkippedForAccumulateMax(const json& t) {
  return t["suite"] == "accumulated" && t["detail"].get<std::string>().find("--accumulate-max") != std::string::npos;
}

TEST(Conform, NumpyPortPassesEverySuite) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const fs::path report = Dir() / "numpy.json";
  Result r = Conform("--vectors " + kVectors + " --exec \"" + NumpyPort() +
                     "\" --accumulate-max 100000 --report-json " + report.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("hash_v41: " + TestsIn("hash_v41") + " pass"));
  const json doc = json::parse(Slurp(report));
  std::map<std::string, int> passed;
  for (const json& t : doc["results"]) {
    EXPECT_TRUE(t["status"] == "pass" || (t["status"] == "skipped" && SkippedForAccumulateMax(t))) << t.dump();
    if (t["status"] == "pass") passed[t["suite"].get<std::string>()]++;
  }
  for (const char* s : kAllSuites) EXPECT_GT(passed[s], 0) << s;
}

// §CONF.4, §VEC.12: a port with a known bug fails exactly the tests flagged
// with it, in every suite. Every KNOWN_DIVERGENCE note of every suite names the
// adapter bug that plants it ("--bug NAME"); the generator sets the flag where
// a C++ mutant of the reference changes the outcome (vectors/mutants.cc and
// the suites' variants), the adapter's bugs are written independently in
// Python, and this test runs each planted bug over every suite.
struct Planted {
  std::string bug, flag;
};
void PrintTo(const Planted& p, std::ostream* os) { *os << p.bug << " -> " << p.flag; }

// Every KNOWN_DIVERGENCE note of the committed vectors: suite -> flag -> description.
// Only the notes are kept: the parser drops each file's testGroups (every
// process of this binary, one per test under ctest, lists the planted bugs
// when it starts, and building the whole files took 0.2 s of CPU each under ASan).
std::map<std::string, std::map<std::string, std::string>> KnownDivergenceNotes() {
  std::map<std::string, std::map<std::string, std::string>> out;
  const json::parser_callback_t no_tests = [](int depth, json::parse_event_t event, json& parsed) {
    return !(depth == 1 && event == json::parse_event_t::key && parsed == "testGroups");
  };
  for (const auto& e : fs::directory_iterator(fs::path(kVectors) / "v1")) {
    if (e.path().extension() != ".json") continue;
    const json doc = json::parse(Slurp(e.path()), no_tests, false);
    if (!doc.is_object()) continue;
    const json notes = doc.value("notes", json::object());  // items() of a temporary would dangle
    for (const auto& [flag, note] : notes.items()) {
      if (note.value("bugType", "") == "KNOWN_DIVERGENCE") out[e.path().stem().string()][flag] = note.value("description", "");
    }
  }
  return out;
}

// The bug a note names: the word after "--bug ", or "".
std::string NamedBug(const std::string& description) {
  const size_t at = description.find("--bug ");
  if (at == std::string::npos) return "";
  size_t end = at + 6;
  while (end < description.size() && (std::isalnum(static_cast<unsigned char>(description[end])) || description[end] == '-')) ++end;
  return description.substr(at + 6, end - at - 6);
}

std::vector<Planted> PlantedBugs() {
  std::map<std::string, std::string> by_flag;
  for (const auto& [suite, notes] : KnownDivergenceNotes()) {
    for (const auto& [flag, description] : notes) {
      if (const std::string bug = NamedBug(description); !bug.empty()) by_flag[flag] = bug;
    }
  }
  std::vector<Planted> out;
  for (const auto& [flag, bug] : by_flag) out.push_back({bug, flag});
  return out;
}

// The generator's side of the claim: every KNOWN_DIVERGENCE note says that a
// port with the bug fails exactly the flagged tests and names the planted bug
// that shows it; a flag used in several suites names the same bug everywhere;
// and the adapter plants that bug for that flag (`--list-bugs`).
TEST(FlagClaims, EveryKnownDivergenceNamesItsPlantedBug) {
  std::map<std::string, std::string> bug_of_flag;
  const auto notes = KnownDivergenceNotes();
  ASSERT_FALSE(notes.empty());
  for (const auto& [suite, flags] : notes) {
    for (const auto& [flag, description] : flags) {
      const std::string where = suite + ": note " + flag;
      EXPECT_THAT(description, HasSubstr("fails exactly the tests with this flag")) << where;
      const std::string bug = NamedBug(description);
      EXPECT_FALSE(bug.empty()) << where << " names no planted bug (--bug NAME): " << description;
      auto [it, fresh] = bug_of_flag.emplace(flag, bug);
      EXPECT_TRUE(fresh || it->second == bug) << where << " names --bug " << bug << ", another suite " << it->second;
    }
  }
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const fs::path list = Dir() / "bugs.json";
  ASSERT_EQ(std::system((NumpyPort() + " --list-bugs >" + list.string()).c_str()), 0);
  const json bugs = json::parse(Slurp(list));
  for (const auto& [flag, bug] : bug_of_flag) {
    ASSERT_TRUE(bugs.contains(bug)) << "the adapter has no --bug " << bug << " (flag " << flag << ")";
    EXPECT_EQ(bugs[bug], flag) << "--bug " << bug;
  }
}

class PlantedBug : public testing::TestWithParam<Planted> {};

TEST_P(PlantedBug, FailsExactlyItsFlaggedTests) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const Planted& p = GetParam();
  const fs::path report = Dir() / ("bug-" + p.bug + ".json");
  Result r = Conform("--vectors " + kVectors + " --exec \"" + NumpyPort() + " --bug " + p.bug +
                     "\" --accumulate-max 100000 --report-json " + report.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  std::set<std::string> failed, flagged, suites, contract_failed;
  bool refusals_only = true;  // a divergence that refuses valid input (NaNRowRefused) computes nothing
  const json doc = json::parse(Slurp(report));  // kept alive for the loop
  for (const json& t : doc["results"]) {
    const std::string id = t["suite"].get<std::string>() + ":" + t["tcId"].dump();
    if (t["suite"] == "contract") {  // a layout check, not a vector test (a port with int32 multipliers fails it)
      if (t["status"] == "fail") contract_failed.insert(id);
      continue;
    }
    if (t["status"] == "skipped") {
      EXPECT_TRUE(SkippedForAccumulateMax(t)) << t.dump();  // nothing else escapes the comparison
      continue;
    }
    suites.insert(t["suite"].get<std::string>());
    if (t["status"] == "fail") {
      failed.insert(id);
      refusals_only = refusals_only && t["reason"] == "refused valid input";
    }
    for (const json& f : t["flags"]) {
      if (f == p.flag) flagged.insert(id);
    }
  }
  EXPECT_EQ(suites.size(), std::size(kAllSuites));
  EXPECT_FALSE(flagged.empty());
  EXPECT_EQ(failed, flagged) << p.bug;
  // §CONF.4 the failure pattern is recognised and the divergence named; refusals alone are never diagnosed
  // (runner.cc Diagnose: a refusal shows nothing computed), so a refusing divergence is proven by the failed
  // set above and by the expected-failure list below.
  if (refusals_only) {
    EXPECT_THAT(r.out, Not(HasSubstr("diagnosis: "))) << r.out;
  } else {
    EXPECT_THAT(r.out, HasSubstr("diagnosis: ")) << r.out;
    EXPECT_THAT(r.out, HasSubstr("flagged " + p.flag)) << r.out;
  }
  // A port with that policy lists the flagged tests as expected failures and
  // its run is OK (§CONF.4), over the suites the flag is in.
  json expected = json::array();
  std::string only;
  std::set<std::string> flagged_suites;
  for (const std::string& id : flagged) {
    expected.push_back(id);
    flagged_suites.insert(id.substr(0, id.find(':')));
  }
  for (const std::string& id : contract_failed) expected.push_back(id);  // "contract:N" entries are allowed
  for (const std::string& s : flagged_suites) only += " --suite " + s;
  const fs::path list = Dir() / ("expect-" + p.bug + ".json");
  std::ofstream(list) << expected.dump();
  Result listed = Conform("--vectors " + kVectors + only + " --exec \"" + NumpyPort() + " --bug " + p.bug +
                          "\" --accumulate-max 100000 --expect-fail " + list.string());
  EXPECT_EQ(listed.exit_code, 0) << listed.out;
  EXPECT_THAT(listed.out, HasSubstr(" expected failures")) << listed.out;
}

INSTANTIATE_TEST_SUITE_P(KnownDivergences, PlantedBug, testing::ValuesIn(PlantedBugs()), [](const auto& info) {
  std::string name;
  for (char c : info.param.flag) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
});

// §HASH.10 the no-leak control: a port that hashes a packed call's request slots as one sequence (the naive
// flatten) fails every valid test of serving_v41, and nothing else; no catalogue flag names it, since a flag on
// every valid test would leave a port that lists them nothing tested.
TEST(ServingControl, NaiveFlattenFailsEveryValidPackedTest) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const fs::path report = Dir() / "naive-flatten.json";
  Result r = Conform("--vectors " + kVectors + " --suite serving_v41 --suite hash_state --exec \"" + NumpyPort() +
                     " --bug naive-flatten\" --report-json " + report.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  std::map<int64_t, bool> validity;  // tcId -> valid, from the vectors
  const json vectors = json::parse(Slurp(fs::path(kVectors) / "v1" / "serving_v41.json"));
  for (const json& g : vectors["testGroups"]) {
    for (const json& t : g["tests"]) validity[t["tcId"].get<int64_t>()] = t["result"] == "valid";
  }
  size_t valid = 0, failed = 0, others = 0;
  const json doc = json::parse(Slurp(report));
  for (const json& t : doc["results"]) {
    if (t["suite"] != "serving_v41") {
      others += t["status"] == "pass";
      EXPECT_EQ(t["status"], "pass") << t.dump();
      continue;
    }
    const bool is_valid = validity.at(t["tcId"].get<int64_t>());
    valid += is_valid;
    failed += t["status"] == "fail";
    EXPECT_EQ(t["status"], is_valid ? "fail" : "pass") << t.dump();
  }
  EXPECT_GT(valid, 20u);
  EXPECT_EQ(failed, valid);
  EXPECT_GT(others, 0u);
}

// §CONF.4, §HASH.10 A packed call's failure names where it broke: the request, its boundaries, the slot and its
// position, the boundary a window crossed; a state's failure names its request and the padding after it.
TEST(ServingFailures, NameTheRequestTheSlotAndTheBoundary) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  auto details = [&](const std::string& bug) {
    const fs::path report = Dir() / ("serving-" + bug + ".json");
    Conform("--vectors " + kVectors + " --suite serving_v41 --exec \"" + NumpyPort() + " --bug " + bug +
            "\" --report-json " + report.string());
    std::string all;
    const json doc = json::parse(Slurp(report));  // kept alive for the loop
    for (const json& t : doc["results"]) {
      if (t["status"] == "fail") all += t["detail"].get<std::string>() + "\n";
    }
    return all;
  };
  const std::string leak = details("cross-request-leak");
  EXPECT_THAT(leak, HasSubstr("where: slot "));
  EXPECT_THAT(leak, testing::ContainsRegex("is request [0-9]+ \\(its boundaries cuSeqlens\\[[0-9]+\\] = [0-9]+ and "
                                           "cuSeqlens\\[[0-9]+\\] = [0-9]+: slots [0-9]+ \\.\\.\\. [0-9]+\\)'s slot "
                                           "[0-9]+ at position [0-9]+; its window"));
  EXPECT_THAT(leak, HasSubstr("reaches across the request's first boundary into its state before the call"));
  const std::string padding = details("padding-writes-state");
  EXPECT_THAT(padding, HasSubstr("where: the state after the call of request "));
  EXPECT_THAT(padding, HasSubstr("padding slot(s) after cuSeqlens["));
  EXPECT_THAT(padding, HasSubstr("where: no request slot writes cache slot"));
  EXPECT_THAT(details("rejected-drafts-kept"), HasSubstr("only its accepted path may enter it"));
}

// The numpy port shows a partial port: --claim one suite and --profiles
// one profile skip everything else ("not claimed", in every suite, LayoutTest's
// per-test profile included), and --unsupported TYPE answers "unsupported"
// (skipped, not failed). Both runs are OK.
TEST(Conform, TheNumpyPortClaimsPartOfTheSuite) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const fs::path report = Dir() / "partial.json";
  Result v41 = Conform("--vectors " + kVectors + " --exec \"" + NumpyPort() +
                       " --claim hash_v41 layout --profiles v4.1\" --report-json " + report.string());
  EXPECT_EQ(v41.exit_code, 0) << v41.out;
  EXPECT_THAT(v41.out, HasSubstr("hash_v41: " + TestsIn("hash_v41") + " passed, 0 failed, 0 skipped"));
  EXPECT_THAT(v41.out, HasSubstr("hash_demo: 0 passed, 0 failed, " + TestsIn("hash_demo") + " skipped"));
  const json doc = json::parse(Slurp(report));
  int layout_passed = 0, layout_skipped = 0;
  for (const json& t : doc["results"]) {
    if (t["suite"] != "layout") continue;
    (t["status"] == "pass" ? layout_passed : layout_skipped)++;
    if (t["status"] == "skipped") EXPECT_EQ(t["reason"], "not claimed") << t.dump();
  }
  EXPECT_GT(layout_passed, 0);
  EXPECT_GT(layout_skipped, 0);  // the demo-v1 LayoutTests
  Result unsupported = Conform("--vectors " + kVectors + " --suite table_lookup --exec \"" + NumpyPort() +
                               " --claim table_lookup --unsupported FloatLookupTest\"");
  EXPECT_EQ(unsupported.exit_code, 0) << unsupported.out;
  EXPECT_THAT(unsupported.out, testing::MatchesRegex("(.|\n)*table_lookup: [0-9]+ passed, 0 failed, [1-9][0-9]* skipped(.|\n)*"));
}

// --unsupported takes several types, by spaces or commas; a name that is no test type of the vector schemas is an
// error naming it (before, "HeadShardTest,RowShardTest" or "HeadShard" was one unknown name: nothing skipped).
TEST(Conform, TheNumpyPortRefusesAnUnknownUnsupportedType) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  Result both = Conform("--vectors " + kVectors + " --suite tp_shard --exec \"" + NumpyPort() +
                        " --claim tp_shard --unsupported RowShardTest,HeadShardTest\"");
  EXPECT_EQ(both.exit_code, 1) << both.out;  // every test skipped: nothing was tested
  EXPECT_THAT(both.out, HasSubstr("tp_shard: 0 passed, 0 failed, " + TestsIn("tp_shard") + " skipped"));
  EXPECT_THAT(both.out, HasSubstr(TestsIn("tp_shard") + " unsupported (tp_shard)"));
  const fs::path err = Dir() / "unknown_type.err";
  const std::string cmd = NumpyPort() + " --unsupported HeadShard </dev/null >/dev/null 2>" + err.string();
  const int status = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2);
  EXPECT_THAT(Slurp(err), HasSubstr("--unsupported: HeadShard: not a test type of the vector schemas"));
}

// A shell peer that claims `multipliers` and misbehaves on tcId 3.
std::string Peer(const std::string& on_three) {
  const fs::path script = Dir() / ("peer_" + std::to_string(std::hash<std::string>{}(on_three)) + ".sh");
  std::ofstream(script) << "read l\n"
                           "echo '{\"protocol\":1,\"name\":\"peer\",\"suites\":[\"multipliers\"],\"profiles\":[\"v4.1\"]}'\n"
                           "while read l; do\n"
                           "  case \"$l\" in\n"
                           "    *'\"tcId\":3,'*) " + on_three + " ;;\n"
                           "    *'\"op\":\"bye\"'*) echo '{}'; exit 0 ;;\n"
                           "    *) echo '{\"unsupported\":\"peer\"}' ;;\n"
                           "  esac\n"
                           "done\n";
  return "--exec \"sh " + script.string() + "\"";
}

TEST(Conform, CrashingPeerIsAReportedFailureAndTheRunGoesOn) {
  Result r = Conform("--vectors " + kVectors + " --suite multipliers " + Peer("echo boom >&2; kill -SEGV $$"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tcId 3 (crashed)"));
  EXPECT_THAT(r.out, HasSubstr("signal 11"));
  EXPECT_THAT(r.out, HasSubstr("boom"));
  EXPECT_THAT(r.out, HasSubstr(TestsIn("multipliers", 1) + " skipped"));  // every other test still ran (and was unsupported)
}

TEST(Conform, HangingPeerTimesOut) {
  Result r = Conform("--vectors " + kVectors + " --suite multipliers --timeout 1 " + Peer("sleep 30"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tcId 3 (timeout)"));
}

// ---------------------------------------------------------------- §CONF.4 the verdict: never a false OK

// A shell peer claiming `suites` that answers every test with `answer` (a
// shell command printing one line), except the tcIds given in `canned`, whose
// answer is the content of a file.
std::string ShellPeer(const std::string& name, const std::string& suites, const std::string& answer,
                      const std::map<int64_t, std::string>& canned = {}) {
  const fs::path script = Dir() / ("peer_" + name + ".sh");
  std::ofstream f(script);
  f << "read l\n"
       "echo '{\"protocol\":1,\"name\":\"" << name << "\",\"version\":\"0\",\"suites\":" << suites
    << ",\"profiles\":[\"v4.1\",\"demo-v1\"]}'\n"
       "while read l; do\n"
       "  case \"$l\" in\n";
  for (const auto& [id, body] : canned) {
    const fs::path answer_file = Dir() / ("answer_" + name + "_" + std::to_string(id) + ".json");
    std::ofstream(answer_file) << body << "\n";
    f << "    *'\"tcId\":" << id << ",'*) cat '" << answer_file.string() << "' ;;\n";
  }
  f << "    *'\"op\":\"bye\"'*) echo '{}'; exit 0 ;;\n"
       "    *) " << answer << " ;;\n"
       "  esac\n"
       "done\n";
  return "--exec \"sh " + script.string() + "\"";
}

const std::string kUnsupported = "echo '{\"unsupported\":\"nothing here\"}'";

TEST(Verdict, APeerThatSupportsNothingIsNotOk) {
  // The whole run: every test of every suite unsupported or not claimed.
  Result all = Conform("--vectors " + kVectors + " " + ShellPeer("nothing", "[\"multipliers\",\"layout\"]", kUnsupported));
  EXPECT_EQ(all.exit_code, 1) << all.out;
  EXPECT_THAT(all.out, Not(HasSubstr("conformance: OK")));
  EXPECT_THAT(all.out, HasSubstr("conformance: FAILED: 0 passed, 0 failed,"));
  EXPECT_THAT(all.out, HasSubstr("nothing was tested"));
  EXPECT_THAT(all.out, HasSubstr("multipliers: 0 passed, 0 failed, " + TestsIn("multipliers") + " skipped"));
  EXPECT_THAT(all.out, HasSubstr("multipliers: answered by the implementation, but no non-trivial valid test of it passed (skipped: " + TestsIn("multipliers") + " unsupported)"));
  // One suite asked for by name.
  Result one = Conform("--vectors " + kVectors + " --suite layout " + ShellPeer("nothing", "[\"multipliers\",\"layout\"]", kUnsupported));
  EXPECT_EQ(one.exit_code, 1) << one.out;
  EXPECT_THAT(one.out, HasSubstr("layout: requested with --suite, but no non-trivial valid test of it passed (skipped: " + TestsIn("layout") + " unsupported)"));
  EXPECT_THAT(one.out, Not(HasSubstr("conformance: OK")));
}

TEST(Verdict, CatIsNotAPeer) {
  const Split r = ConformSplit("--vectors " + kVectors + " --suite layout --exec cat");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("handshake failed"));
  EXPECT_THAT(r.err, HasSubstr("'name'"));
  EXPECT_THAT(r.out, Not(HasSubstr("OK")));
}

// §CONF.2, §CONF.3: an implementation whose claims cannot be trusted does not run.
TEST(Verdict, UntrustworthyInfoCannotStart) {
  const std::pair<int, std::string> cases[] = {{1, "ABI version 99 is not 1"},
                                               {2, "claims suite \"nope\", which is not one of the protocol's"},
                                               {3, "name is not valid UTF-8"},
                                               {4, "suites is empty"}};
  for (const auto& [variant, message] : cases) {
    const std::string lib = std::string(ENGRAM_TEST_PLUGIN_DIR) + "/libengram_bad_info_plugin_" + std::to_string(variant) + ".so";
    const Split r = ConformSplit("--vectors " + kVectors + " --suite layout --lib " + lib);  // stops at the handshake
    EXPECT_EQ(r.exit_code, 2) << variant << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("handshake failed")) << variant;
    EXPECT_THAT(r.err, HasSubstr(message)) << variant;
    EXPECT_THAT(r.out, Not(HasSubstr("OK"))) << variant;
  }
  // The same through the protocol: an unknown suite, a profile that does not exist.
  const Split nope = ConformSplit("--vectors " + kVectors + " --suite layout " + ShellPeer("nope", "[\"nope\"]", kUnsupported));
  EXPECT_EQ(nope.exit_code, 2) << nope.err;
  EXPECT_THAT(nope.err, HasSubstr("\"nope\", which is not one of the protocol's"));
}

const nlohmann::ordered_json& VectorFile(const std::string& suite) {
  static std::map<std::string, nlohmann::ordered_json> cache;
  auto it = cache.find(suite);
  if (it == cache.end()) it = cache.emplace(suite, nlohmann::ordered_json::parse(Slurp(kVectors + "/v1/" + suite + ".json"))).first;
  return it->second;
}

// §CONF.1, §VEC.4: an integer returned as a JSON float is wrong, however close.
TEST(Verdict, IntegersReturnedAsFloatsFail) {
  const nlohmann::ordered_json* test = nullptr;
  for (const auto& g : VectorFile("multipliers")["testGroups"]) {
    for (const auto& t : g["tests"]) {
      if (!test && g["type"] == "MultipliersTest" && t["result"] == "valid" && t["multipliers"][0].get<uint64_t>() > (uint64_t{1} << 53)) test = &t;
    }
  }
  ASSERT_NE(test, nullptr);
  nlohmann::ordered_json floats = nlohmann::ordered_json::array();
  for (const auto& m : (*test)["multipliers"]) floats.push_back(static_cast<double>(m.get<int64_t>()));
  const std::string answer = nlohmann::ordered_json{{"outputs", {{"multipliers", floats}}}}.dump();
  const int64_t id = (*test)["tcId"];
  Result r = Conform("--vectors " + kVectors + " --suite multipliers " +
                     ShellPeer("floats", "[\"multipliers\"]", kUnsupported, {{id, answer}}));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("FAIL tcId " + std::to_string(id) + " (mismatch)"));
  EXPECT_THAT(r.out, HasSubstr("multipliers[0]: expected the integer " + (*test)["multipliers"][0].dump() + ", got the float"));
  // The comparison itself, on the issue's value.
  EXPECT_THAT(engram::vectors::CompareOrdered("MultipliersTest", nlohmann::ordered_json::parse(R"({"multipliers":[5578117229726147345]})"),
                                              nlohmann::ordered_json::parse(R"({"multipliers":[5.578117229726147e18]})")),
              HasSubstr("expected the integer 5578117229726147345, got the float"));
  EXPECT_NE(engram::vectors::CompareOrdered("HashTest", nlohmann::ordered_json::parse(R"({"rows":[[[7]]]})"),
                                            nlohmann::ordered_json::parse(R"({"rows":[[[7.0]]]})")),
            "");
}

// §CONF.4: reports that cannot be written stop the run before it starts.
TEST(Verdict, UnwritableReportsAreRefusedBeforeTheRun) {
  const std::string peer = ShellPeer("unused", "[\"multipliers\"]", kUnsupported);
  const Split ro = ConformSplit("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --report-json /proc/engram-report.json");
  EXPECT_EQ(ro.exit_code, 2) << ro.out << ro.err;
  EXPECT_THAT(ro.err, HasSubstr("--report-json /proc/engram-report.json: cannot write in /proc"));
  EXPECT_EQ(ro.out, "");  // nothing ran, no OK
  const Split dir = ConformSplit("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --junit " + Dir().string());
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_THAT(dir.err, HasSubstr("is a directory"));
  const Split missing = ConformSplit("--vectors " + kVectors + " " + peer + " --report-json " + (Dir() / "no/such/r.json").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("does not exist"));
}

// §CONF.4: a hanging port costs K timeouts per suite, not one per test.
TEST(Verdict, AHangingPeerStopsTheSuiteAfterConsecutiveTimeouts) {
  const auto t0 = std::chrono::steady_clock::now();
  Result r = Conform("--vectors " + kVectors + " --suite multipliers --timeout 1 " +
                     ShellPeer("hang", "[\"multipliers\"]", "sleep 60"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_LT(seconds, 30) << "100 tests x 1 s would be 100 s";
  EXPECT_THAT(r.out, HasSubstr("multipliers: 0 passed, 3 failed, " + TestsIn("multipliers", 3) + " skipped"));
  EXPECT_THAT(r.out, HasSubstr("SUITE FAILED: stopped after 3 consecutive unanswered tests (tcIds 1, 2, 3)"));
  EXPECT_THAT(r.out, Not(HasSubstr("conformance: OK")));
  Result k = Conform("--vectors " + kVectors + " --suite multipliers --timeout 1 --max-timeouts 1 " +
                     ShellPeer("hang", "[\"multipliers\"]", "sleep 60"));
  EXPECT_THAT(k.out, HasSubstr("multipliers: 0 passed, 1 failed, " + TestsIn("multipliers", 1) + " skipped"));
}

// §CONF.4: the failing position's intermediates, and the first differing
// intermediate before the final output; flags as what else the test guards.
// §HASH.8 The trace locates a wrong row to its step.
TEST(Diagnosis, FirstDifferingIntermediatePointsAtTheStep) {
  const nlohmann::ordered_json* test = nullptr;
  for (const auto& g : VectorFile("hash_v41")["testGroups"]) {
    for (const auto& t : g["tests"]) {
      if (!test && g["type"] == "HashTest" && t["result"] == "valid" && t["ids"].size() >= 6) test = &t;
    }
  }
  ASSERT_NE(test, nullptr);
  nlohmann::ordered_json rows = (*test)["rows"], inter = (*test)["intermediate"];
  rows[4][0][2] = rows[4][0][2].get<int64_t>() + 1;
  inter[4]["residues"][0][2] = inter[4]["residues"][0][2].get<int64_t>() + 1;
  const int64_t id = (*test)["tcId"];
  Result r = Conform("--vectors " + kVectors + " --suite hash_v41 " +
                     ShellPeer("residue", "[\"hash_v41\"]", kUnsupported,
                               {{id, nlohmann::ordered_json{{"outputs", {{"rows", rows}, {"intermediate", inter}}}}.dump()}}));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const size_t at_int = r.out.find("first difference in the intermediates (where the computation goes wrong): intermediate[4].residues[0][2]");
  const size_t at_out = r.out.find("first difference in the outputs: rows[4][0][2]");
  ASSERT_NE(at_int, std::string::npos) << r.out;
  ASSERT_NE(at_out, std::string::npos) << r.out;
  EXPECT_LT(at_int, at_out);
  const std::string residues = "\n        residues: " + (*test)["intermediate"][4]["residues"].dump() + "\n";
  EXPECT_THAT(r.out, HasSubstr("expected intermediate[4]:\n        window: " + (*test)["intermediate"][4]["window"].dump()));
  EXPECT_THAT(r.out, HasSubstr(residues));
  EXPECT_THAT(r.out, HasSubstr("returned intermediate[4]:\n        window: "));
  EXPECT_THAT(r.out, HasSubstr("\n        residues: " + inter[4]["residues"].dump() + "\n"));
  EXPECT_THAT(r.out, HasSubstr("this test also guards: "));
  EXPECT_THAT(r.out, Not(HasSubstr("diagnosis:")));  // one failing test among none that passed: no evidence
  // Without intermediates, the vector's intermediates at the failing position are shown in full.
  Result plain = Conform("--vectors " + kVectors + " --suite hash_v41 " +
                         ShellPeer("rows", "[\"hash_v41\"]", kUnsupported, {{id, nlohmann::ordered_json{{"outputs", {{"rows", rows}}}}.dump()}}));
  EXPECT_THAT(plain.out, HasSubstr("first difference in the outputs: rows[4][0][2]"));
  for (const auto& [key, value] : (*test)["intermediate"][4].items()) {
    EXPECT_THAT(plain.out, HasSubstr("\n        " + key + ": " + value.dump() + "\n")) << key;
  }
}

// §CONF.4: the report records what the implementation returned for every
// failure, an accepted invalid input included.
TEST(Verdict, TheReportRecordsWhatTheImplementationReturned) {
  const nlohmann::ordered_json* invalid = nullptr;
  for (const auto& g : VectorFile("multipliers")["testGroups"]) {
    for (const auto& t : g["tests"]) {
      if (!invalid && g["type"] == "MultipliersTest" && t["result"] == "invalid") invalid = &t;
    }
  }
  ASSERT_NE(invalid, nullptr);
  const int64_t id = (*invalid)["tcId"];
  const std::string answer = R"({"outputs":{"multipliers":[1,3,5,7]}})";
  const fs::path report = Dir() / "returned.json";
  Result r = Conform("--vectors " + kVectors + " --suite multipliers --report-json " + report.string() + " " +
                     ShellPeer("accepts", "[\"multipliers\"]", kUnsupported, {{id, answer}}));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("FAIL tcId " + std::to_string(id) + " (accepted invalid input)"));
  const json doc = json::parse(Slurp(report));
  bool found = false;
  for (const json& t : doc["results"]) {
    if (t["tcId"] != id) continue;
    found = true;
    EXPECT_EQ(t["status"], "fail");
    EXPECT_EQ(t["returned"], json::parse(answer)["outputs"]) << t.dump();
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(doc["verdict"]["ok"], false);
  EXPECT_EQ(doc["verdict"]["failed"], 1);
}

// A port that claims one profile skips the other profile's tests in every
// suite, LayoutTest (whose profile is per test) included; --profile filters them out.
TEST(Verdict, OneProfileSkipsTheOtherEverywhere) {
  const fs::path report = Dir() / "profile.json";
  std::ofstream(Dir() / "peer_v41only.sh") << "read l\n"
      "echo '{\"protocol\":1,\"name\":\"v41only\",\"suites\":[\"layout\"],\"profiles\":[\"v4.1\"]}'\n"
      "while read l; do\n"
      "  case \"$l\" in\n"
      "    *'\"op\":\"bye\"'*) echo '{}'; exit 0 ;;\n"
      "    *'\"profile\":\"demo-v1\"'*'\"op\":\"test\"'*|*'\"op\":\"test\"'*'\"profile\":\"demo-v1\"'*) echo 'demo test sent' >&2; exit 3 ;;\n"
      "    *) echo '{\"unsupported\":\"not here\"}' ;;\n"
      "  esac\n"
      "done\n";
  Result v41 = Conform("--vectors " + kVectors + " --suite layout --report-json " + report.string() + " " +
                       "--exec \"sh " + (Dir() / "peer_v41only.sh").string() + "\"");
  EXPECT_THAT(v41.out, Not(HasSubstr("crashed"))) << v41.out;  // no demo-v1 test was sent
  size_t demo = 0;
  for (const auto& t : VectorFile("layout")["testGroups"][0]["tests"]) demo += t["profile"] == "demo-v1";
  ASSERT_GT(demo, 0u);
  size_t not_claimed = 0;
  const json doc = json::parse(Slurp(report));  // named: a temporary would dangle in the loop
  for (const json& t : doc["results"]) not_claimed += t["reason"] == "not claimed";
  EXPECT_EQ(not_claimed, demo);
  Result filtered = Conform("--vectors " + kVectors + " --suite layout --profile v4.1 --lib " + ENGRAM_PLUGIN);
  EXPECT_EQ(filtered.exit_code, 0) << filtered.out;
  EXPECT_THAT(filtered.out, HasSubstr("layout: " + std::to_string(std::stoul(TestsIn("layout")) - demo) + " passed, 0 failed, 0 skipped"));
}

// The tcId of the first test of `suite` with the given result.
int64_t FirstTcId(const std::string& suite, const std::string& result, const std::string& type = "") {
  for (const auto& g : VectorFile(suite)["testGroups"]) {
    if (!type.empty() && g["type"] != type) continue;
    for (const auto& t : g["tests"]) {
      if (t["result"] == result) return t["tcId"];
    }
  }
  ADD_FAILURE() << "no " << result << " test in " << suite;
  return 0;
}

// §CONF.4: refusing invalid inputs is right, but a port that refuses them and
// computes nothing else has tested nothing, "*" claim or not.
TEST(Verdict, RefusingInvalidInputsAloneIsNotOk) {
  const int64_t invalid = FirstTcId("multipliers", "invalid");
  const std::map<int64_t, std::string> refuse = {{invalid, R"({"refused":"no"})"}};
  for (const std::string& claims : {"[\"multipliers\"]", "[\"*\"]"}) {
    Result r = Conform("--vectors " + kVectors + " " + ShellPeer("refuser", claims, kUnsupported, refuse));
    EXPECT_EQ(r.exit_code, 1) << claims << r.out;
    EXPECT_THAT(r.out, HasSubstr("multipliers: 1 passed, 0 failed, " + TestsIn("multipliers", 1) + " skipped")) << claims;
    EXPECT_THAT(r.out, HasSubstr("multipliers: answered by the implementation, but no non-trivial valid test of it passed "
                                 "(1 invalid input(s) refused, skipped: " + TestsIn("multipliers", 1) + " unsupported)")) << claims;
    EXPECT_THAT(r.out, HasSubstr("nothing was tested: no non-trivial valid test passed")) << claims;
    EXPECT_THAT(r.out, Not(HasSubstr("conformance: OK"))) << claims;
  }
}

// §CONF.2 item 3: an answer is exactly one of outputs / refused / unsupported.
TEST(Verdict, AnAmbiguousAnswerIsGarbage) {
  const int64_t id = FirstTcId("multipliers", "valid", "MultipliersTest");
  Result r = Conform("--vectors " + kVectors + " --suite multipliers " +
                     ShellPeer("both", "[\"multipliers\"]", kUnsupported,
                               {{id, R"({"outputs":{"multipliers":[1]},"unsupported":"or not"})"}}));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("FAIL tcId " + std::to_string(id) +
                               " (garbage): the answer must hold exactly one of outputs / refused / unsupported, it holds 2"));
}

// §CONF.4: both reports in one file would overwrite each other.
TEST(Verdict, OneFileForBothReportsIsRefused) {
  const std::string same = (Dir() / "same.out").string();
  const Split r = ConformSplit("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --suite layout --report-json " + same +
                               " --junit " + same);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("--report-json and --junit name the same file"));
  EXPECT_FALSE(fs::exists(same));
}

// §CONF.4: expected failures that all pass are stale, which is reported but
// does not fail the run (and does with --strict-stale); they were tested.
TEST(Verdict, StaleExpectedFailuresAreTestedAndReported) {
  json list = json::array();
  for (const auto& g : VectorFile("layout")["testGroups"]) {
    for (const auto& t : g["tests"]) list.push_back("layout:" + t["tcId"].dump());
  }
  const fs::path expect = Dir() / "all-stale.json";
  std::ofstream(expect) << list.dump();
  Result r = Conform("--vectors " + kVectors + " --suite layout --lib " + ENGRAM_PLUGIN + " --expect-fail " + expect.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("layout: 0 passed, 0 failed, 0 skipped, " + TestsIn("layout") + " stale"));
  EXPECT_THAT(r.out, HasSubstr("conformance: OK"));
  Result strict = Conform("--vectors " + kVectors + " --suite layout --lib " + ENGRAM_PLUGIN + " --strict-stale --expect-fail " +
                          expect.string());
  EXPECT_EQ(strict.exit_code, 1) << strict.out;
  EXPECT_THAT(strict.out, HasSubstr("stale expected failures (--strict-stale)"));
}

// §CONF.4: for an output of several streams (V41GateTest out: hc streams of
// dim values), the intermediate shown is the failing element's stream.
TEST(Diagnosis, TheIntermediateShownIsTheFailingStreams) {
  const nlohmann::ordered_json* group = nullptr;
  const nlohmann::ordered_json* test = nullptr;
  for (const auto& g : VectorFile("gate_v41")["testGroups"]) {
    for (const auto& t : g["tests"]) {
      if (!test && g["type"] == "V41GateTest" && t["result"] == "valid" && g["hc"].get<int>() >= 2) {
        test = &t;
        group = &g;
      }
    }
  }
  ASSERT_NE(test, nullptr);
  const int64_t dim = (*group)["dim"];
  nlohmann::ordered_json gate = (*test)["gate"], out = (*test)["out"];
  const size_t bad = static_cast<size_t>(dim) + 2;  // stream 1, element 2
  out[bad] = out[bad].get<int64_t>() ^ 0x4000;        // far from any faithful rounding
  const int64_t id = (*test)["tcId"];
  Result r = Conform("--vectors " + kVectors + " --suite gate_v41 " +
                     ShellPeer("stream", "[\"gate_v41\"]", kUnsupported,
                               {{id, nlohmann::ordered_json{{"outputs", {{"gate", gate}, {"out", out}}}}.dump()}}));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("first difference in the outputs: out[" + std::to_string(bad) + "]")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("expected intermediate[1]:")) << r.out;
}

// §CONF.2: a restarted implementation must answer hello as the first did.
TEST(Verdict, ARestartThatChangesItsHandshakeFails) {
  const fs::path flag = Dir() / "restarted.flag";
  const fs::path script = Dir() / "peer_changes.sh";
  std::ofstream(script) << "read l\n"
      "if [ -e '" << flag.string() << "' ]; then s='\"multipliers\",\"layout\"'; else s='\"multipliers\"'; fi\n"
      "echo \"{\\\"protocol\\\":1,\\\"name\\\":\\\"p\\\",\\\"suites\\\":[$s],\\\"profiles\\\":[\\\"v4.1\\\"]}\"\n"
      "while read l; do\n"
      "  case \"$l\" in\n"
      "    *'\"tcId\":2,'*) touch '" << flag.string() << "'; exit 3 ;;\n"
      "    *'\"op\":\"bye\"'*) echo '{}'; exit 0 ;;\n"
      "    *) echo '{\"unsupported\":\"no\"}' ;;\n"
      "  esac\n"
      "done\n";
  Result r = Conform("--vectors " + kVectors + " --suite multipliers --exec \"sh " + script.string() + "\"");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("the restarted implementation answered hello differently"));
}

// §CONF.2: a child that does not read its input makes a write time out, and
// a kill ends the child's whole process group.
TEST(ChildProcessTest, AWriteToAChildThatDoesNotReadTimesOut) {
  engram::conform::ChildProcess child({"/bin/sh", "-c", "sleep 30"});
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(child.WriteLine(std::string(1 << 20, 'x'), std::chrono::milliseconds(300)),
            engram::conform::ChildProcess::WriteStatus::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(ChildProcessTest, KillEndsTheProcessGroup) {
  pid_t grandchild = 0;
  {
    engram::conform::ChildProcess child({"/bin/sh", "-c", "sleep 300 & echo $!; wait"});
    std::string line;
    ASSERT_EQ(child.ReadLine(line, std::chrono::seconds(5)), engram::conform::ChildProcess::ReadStatus::kLine);
    grandchild = static_cast<pid_t>(std::stol(line));
    ASSERT_EQ(::kill(grandchild, 0), 0);
  }  // the destructor kills
  // Dead is enough: ESRCH once it is reaped, or a zombie (state Z in
  // /proc/PID/stat) while whoever adopted it has not reaped it yet (a
  // container's init may be slow to, under load).
  auto dead = [](pid_t pid) {
    if (::kill(pid, 0) != 0) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
  };
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = dead(grandchild);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "the shell's child " << grandchild << " outlived the kill";
}

// §CONF.2: the runner reads the child's stdout and stderr while it writes a
// request. A child that logs 100 KB to stderr after each answer blocks on the
// full stderr pipe; a request bigger than the stdin pipe (64 KiB) must still go
// through instead of timing out as "did not read the request".
TEST(ChildProcessTest, AChildThatLogsAfterEachAnswerStillReadsBigRequests) {
  engram::conform::ChildProcess child(
      {"/bin/sh", "-c", "while IFS= read -r l; do echo '{}'; head -c 100000 /dev/zero | tr '\\0' e >&2; done"});
  const std::string request = "{\"pad\":\"" + std::string(200000, 'x') + "\"}";
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(child.WriteLine(request, std::chrono::seconds(5)), engram::conform::ChildProcess::WriteStatus::kOk) << "request " << i;
    std::string line;
    ASSERT_EQ(child.ReadLine(line, std::chrono::seconds(5)), engram::conform::ChildProcess::ReadStatus::kLine) << "request " << i;
    EXPECT_EQ(line, "{}");
  }
  // Only a bounded tail of the log is kept.
  EXPECT_LE(child.StderrTail().size(), 4096u);
  EXPECT_THAT(child.StderrTail(), HasSubstr("eeee"));
}

// §CONF.2: a child that exits is `crashed` even when a process it started
// outside its process group (setsid) still holds its stdout open: the runner
// does not wait for an EOF that never comes (here: the 5 s timeout).
TEST(ChildProcessTest, AnExitIsSeenThoughAnEscapedProcessHoldsStdout) {
  const fs::path pid_file = Dir() / "escaped.pid";
  fs::remove(pid_file);
  const auto t0 = std::chrono::steady_clock::now();
  {
    engram::conform::ChildProcess child(
        {"/bin/sh", "-c", "setsid sleep 30 & echo $! >'" + pid_file.string() + "'; read l; exit 3"});
    ASSERT_EQ(child.WriteLine("{}", std::chrono::seconds(5)), engram::conform::ChildProcess::WriteStatus::kOk);
    std::string line;
    EXPECT_EQ(child.ReadLine(line, std::chrono::seconds(5)), engram::conform::ChildProcess::ReadStatus::kClosed);
    EXPECT_EQ(child.ExitDescription(), "exited with status 3");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  const std::string escaped = Slurp(pid_file);
  if (!escaped.empty()) ::kill(static_cast<pid_t>(std::stol(escaped)), SIGKILL);
}

// §CONF.2: SIGTERM to `engram conform` (a CI cancel) ends the implementation's
// process group before the runner exits with 128 + 15, and says on stderr what
// it did and what survived: here a `setsid` child of the peer, which left the
// group and holds the peer's stdout open.
TEST(Signals, SigtermEndsTheImplementationAndSaysWhatSurvived) {
  const fs::path dir = Dir() / "sigterm";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path script = dir / "peer.sh", peer_pid = dir / "peer.pid", escaped_pid = dir / "escaped.pid";
  std::ofstream(script) << "setsid sleep 30 & echo $! >'" << escaped_pid.string() << "'\n"
                           "read l\n"
                           "echo '{\"protocol\":1,\"name\":\"p\",\"suites\":[\"multipliers\"],\"profiles\":[\"v4.1\"]}'\n"
                           "echo $$ >'" << peer_pid.string() << "'\n"
                           "while read l; do sleep 30; done\n";
  const fs::path out = dir / "out.txt", err = dir / "err.txt";
  const pid_t conform = fork();
  if (conform == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    execl(ENGRAM_CLI, ENGRAM_CLI, "conform", "--vectors", kVectors.c_str(), "--suite", "multipliers", "--timeout", "60",
          "--exec", ("sh " + script.string()).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(conform, 0);
  std::string pid_text;
  for (int i = 0; i < 500 && pid_text.find('\n') == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pid_text = Slurp(peer_pid);
  }
  ASSERT_NE(pid_text.find('\n'), std::string::npos) << "the peer did not start";
  const pid_t peer = static_cast<pid_t>(std::stol(pid_text));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the runner is waiting for the first answer
  ASSERT_EQ(::kill(conform, SIGTERM), 0);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 500 && done == 0; ++i) {
    done = ::waitpid(conform, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (done == 0) {
    ::kill(conform, SIGKILL);
    ::waitpid(conform, &status, 0);
  }
  const std::string escaped = Slurp(escaped_pid);
  bool peer_gone = false;
  for (int i = 0; i < 100 && !peer_gone; ++i) {
    peer_gone = ::kill(peer, 0) != 0;
    if (!peer_gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const bool escaped_ran = !escaped.empty() && ::kill(static_cast<pid_t>(std::stol(escaped)), 0) == 0;
  if (!peer_gone) ::kill(peer, SIGKILL);
  if (!escaped.empty()) ::kill(static_cast<pid_t>(std::stol(escaped)), SIGKILL);
  const std::string shown = "\n--- stderr:\n" + Slurp(err) + "\n--- stdout:\n" + Slurp(out);
  ASSERT_NE(done, 0) << "engram conform did not end within 10 s of SIGTERM" << shown;
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << shown;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM) << shown;
  EXPECT_TRUE(peer_gone) << "the peer " << peer << " outlived the runner" << shown;
  const std::string e = Slurp(err);
  EXPECT_THAT(e, HasSubstr("SIGTERM"));
  EXPECT_THAT(e, HasSubstr("process group " + std::to_string(peer)));
  // What left the group is adopted (PR_SET_CHILD_SUBREAPER) and ended too, and said.
  EXPECT_FALSE(escaped_ran) << "the setsid child " << escaped << " outlived the runner" << shown;
  EXPECT_THAT(e, HasSubstr("left 1 process(es) running outside its process group (" + escaped.substr(0, escaped.find('\n')) + ")"));
}

// §CONF.2 Nothing the implementation started survives a run that ends
// normally either: here three setsid children (one of them forks again and
// leaves). Before, they ran on after the runner exited 0 or 1 (41 after one
// run of a port that started one per test), reported only on a signal.
TEST(Signals, ANormalEndEndsWhatThePortStartedOutsideItsGroup) {
  const fs::path dir = Dir() / "leftovers";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path script = dir / "peer.sh", daemon = dir / "daemon.sh", pids = dir / "pids";
  // daemon.sh forks a sleeper and exits at once: the sleeper's parent is gone before the run ends.
  std::ofstream(daemon) << "sh -c 'echo $$ >>\"$0\"; exec sleep 300' \"$1\" </dev/null >/dev/null 2>&1 &\nexit 0\n";
  std::ofstream(script) << "for i in 1 2; do setsid sh -c 'echo $$ >>\"$0\"; exec sleep 300' '" << pids.string() << "' </dev/null >/dev/null 2>&1 & done\n"
                           "setsid sh '" << daemon.string() << "' '" << pids.string() << "' </dev/null >/dev/null 2>&1 &\n"
                           // all three running (their pids written) before the run goes on
                           "while [ \"$(cat '" << pids.string() << "' 2>/dev/null | wc -l)\" -lt 3 ]; do sleep 0.05; done\n"
                           "while read -r l; do case \"$l\" in\n"
                           "  *hello*) echo '{\"protocol\":1,\"name\":\"p\",\"suites\":[\"multipliers\"],\"profiles\":[\"v4.1\"]}' ;;\n"
                           "  *bye*) exit 0 ;;\n"
                           "  *) echo '{\"unsupported\":\"no\"}' ;;\n"
                           "esac; done\n";
  const Split r = ConformSplit("--vectors " + kVectors + " --suite multipliers --exec 'sh " + script.string() + "'");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // nothing tested: FAILED, and a normal end
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::istringstream list(Slurp(pids));
  int seen = 0, alive = 0;
  for (long pid; list >> pid; ++seen) {
    if (::kill(static_cast<pid_t>(pid), 0) == 0) {
      ++alive;
      ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
  EXPECT_EQ(seen, 3) << r.err;
  EXPECT_EQ(alive, 0) << "processes the port started outlived the run\n" << r.err;
  EXPECT_THAT(r.err, HasSubstr("running outside its process group"));
}

TEST(Conform, GarbageAnswerIsReported) {
  Result r = Conform("--vectors " + kVectors + " --suite multipliers " + Peer("echo 'this is not json'"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tcId 3 (garbage)"));
}

TEST(Conform, WrongProtocolOrDeadPeerCannotStart) {
  const fs::path script = Dir() / "proto2.sh";
  std::ofstream(script) << "read l\necho '{\"protocol\":2}'\n";
  // (One suite: the run stops at the handshake, and every vector file it judges is schema-checked first.)
  Result r = Conform("--vectors " + kVectors + " --suite layout --exec \"sh " + script.string() + "\"");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("protocol 2 is not 1"));
  Result dead = Conform("--vectors " + kVectors + " --suite layout --exec \"/nonexistent-adapter\"");
  EXPECT_EQ(dead.exit_code, 2) << dead.out;
  EXPECT_THAT(dead.out, HasSubstr("handshake failed"));
}

TEST(Conform, ExpectedFailuresAndStaleEntries) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  // The truncated-mod port lists its deviations; one entry (hash_demo tcId 1,
  // the empty sequence) is wrong and is reported stale.
  const fs::path report = Dir() / "tm.json";
  Conform("--vectors " + kVectors + " --suite hash_demo --exec \"" + NumpyPort() +
          " --bug truncated-mod\" --report-json " + report.string());
  json list = json::array();
  const json doc = json::parse(Slurp(report));
  for (const json& t : doc["results"]) {
    if (t["status"] == "fail") list.push_back("hash_demo:" + t["tcId"].dump());
  }
  ASSERT_FALSE(list.empty());
  list.push_back("hash_demo:1");
  const fs::path expect = Dir() / "expect.json";
  std::ofstream(expect) << list.dump();
  Result r = Conform("--vectors " + kVectors + " --suite hash_demo --exec \"" + NumpyPort() +
                     " --bug truncated-mod\" --expect-fail " + expect.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("expected failures"));
  EXPECT_THAT(r.out, HasSubstr("STALE hash_demo:1"));
  Result strict = Conform("--vectors " + kVectors + " --suite hash_demo --exec \"" + NumpyPort() +
                          " --bug truncated-mod\" --strict-stale --expect-fail " + expect.string());
  EXPECT_EQ(strict.exit_code, 1) << strict.out;
}

// §CON / §CONF.2: the runner checks the implementation's contract against the
// vectors' layout before any test, and names what differs.
TEST(Conform, ContractIsCheckedBeforeTheTests) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const fs::path dir = Dir();
  std::string map = "[";
  for (int i = 0; i < 99100; ++i) map += (i ? "," : "") + std::to_string(i < 99092 ? i : 7);
  std::ofstream(dir / "map.json") << map << "]";
  const std::string cfg = std::string(ENGRAM_SOURCE_DIR) + "/conformance/configs/v41-flash.json";
  ASSERT_EQ(std::system((std::string(ENGRAM_CLI) + " contract --config " + cfg + " --token-map " + (dir / "map.json").string() +
                         " --out " + (dir / "c.json").string()).c_str()),
            0);
  Result good = Conform("--vectors " + kVectors + " --suite hash_v41 --exec \"" + NumpyPort() + " --contract " +
                        (dir / "c.json").string() + "\"");
  EXPECT_EQ(good.exit_code, 0) << good.out;
  // The DeepSeek-V4.1 layout is the contract's; the others (the tiny layout, the wide-row layouts of tcIds
  // 67-70) are other configurations, skipped.
  ASSERT_GE(LayoutsIn("hash_v41"), 2u);
  EXPECT_THAT(good.out, HasSubstr("contract: 1 passed, 0 failed, " + std::to_string(LayoutsIn("hash_v41") - 1) +
                                  " skipped"));
  // A contract whose primes were edited (its digest now stale) is refused.
  nlohmann::ordered_json c = nlohmann::ordered_json::parse(Slurp(dir / "c.json"));
  c["layers"][1]["primes"][2][7] = 16000891;
  std::ofstream(dir / "edited.json") << c.dump();
  Result bad = Conform("--vectors " + kVectors + " --suite hash_v41 --exec \"" + NumpyPort() + " --contract " +
                       (dir / "edited.json").string() + "\"");
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_THAT(bad.out, HasSubstr("contractDigest"));
}

TEST(Conform, RefusesVectorsThatFailTheirManifest) {
  const fs::path copy = Dir() / "vectors_copy";
  fs::remove_all(copy);
  fs::copy(kVectors, copy, fs::copy_options::recursive);
  std::ofstream(copy / "v1" / "layout.json", std::ios::app) << " ";
  Result r = Conform("--vectors " + copy.string() + " --lib " + ENGRAM_PLUGIN);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("v1/layout.json does not match MANIFEST.sha256"));
}

// §VEC.9 A manifest line with an absolute path (the file exists, its digest
// is right) is refused by the function conform and verify share, and by both
// commands; so is a relative path through a symbolic link to that file.
TEST(Manifest, AbsoluteAndEscapingPathsAreRefusedByConformAndVerify) {
  const fs::path outside = Dir() / "outside.txt";
  std::ofstream(outside) << "not a vector\n";
  const std::string digest = engram::Sha256Hex(Slurp(outside));
  for (const bool absolute : {true, false}) {
    const fs::path copy = Dir() / (absolute ? "vectors_abs" : "vectors_link");
    fs::remove_all(copy);
    fs::copy(kVectors, copy, fs::copy_options::recursive);
    std::string listed = outside.string();
    if (!absolute) {
      fs::create_symlink(outside, copy / "escape.txt");
      listed = "escape.txt";
    }
    std::ofstream(copy / "MANIFEST.sha256", std::ios::app) << digest << "  " << listed << "\n";
    const std::string why = absolute ? "leaves the vectors directory" : "resolves outside the vectors directory";
    const engram::vectors::Manifest m = engram::vectors::ReadManifest(copy);
    if (absolute) {
      ASSERT_EQ(m.problems.size(), 1u);
      EXPECT_THAT(m.problems[0], HasSubstr("'" + listed + "' " + why));
    } else {
      ASSERT_TRUE(m.problems.empty());
      std::string error;
      try {
        engram::vectors::ReadListedFile(copy, m.entries.back());
      } catch (const engram::Error& e) {
        error = e.what();
      }
      EXPECT_THAT(error, HasSubstr("'escape.txt' " + why));
    }
    const Result conform = Conform("--vectors " + copy.string() + " --lib " + ENGRAM_PLUGIN + " --suite layout");
    EXPECT_EQ(conform.exit_code, 2) << conform.out;
    EXPECT_THAT(conform.out, HasSubstr(why));
    const fs::path out = Dir() / "verify.txt";
    const int status = std::system((std::string(ENGRAM_CLI) + " vectors verify " + copy.string() + " --suite layout >" +
                                    out.string() + " 2>&1").c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << Slurp(out);
    EXPECT_THAT(Slurp(out), HasSubstr(why));
  }
}

// The failing and the flagged tests ("suite:tcId") of one run of the numpy
// adapter with `args` over `suites`.
struct FailedAndFlagged {
  Result r;
  std::set<std::string> failed, flagged;
};
FailedAndFlagged RunAdapter(const std::string& args, const std::vector<std::string>& suites, const std::string& flag) {
  const fs::path report = Dir() / "variant.json";
  std::string only;
  for (const std::string& s : suites) only += " --suite " + s;
  FailedAndFlagged out{Conform("--vectors " + kVectors + " --exec \"" + NumpyPort() + " " + args + "\"" +
                               only + " --report-json " + report.string()),
                       {},
                       {}};
  const json doc = json::parse(Slurp(report));
  for (const json& t : doc["results"]) {
    if (t["suite"] == "contract") continue;
    const std::string id = t["suite"].get<std::string>() + ":" + t["tcId"].dump();
    if (t["status"] == "fail") out.failed.insert(id);
    for (const json& f : t["flags"]) {
      if (f == flag) out.flagged.insert(id);
    }
  }
  return out;
}

// §HASH.9: `from` and `to` index a test's ids; a sequence
// that began elsewhere continues at P + from. A port that imports at position
// `from` (the old guide's "historyIn.position = from") fails exactly the
// tests whose sequence starts at P > 0 (flag MidSequenceStart), and passes the
// others; the faithful adapter passes all of them.
TEST(HandoffPositions, APortThatImportsAtFromFailsExactlyTheMidSequenceTests) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const FailedAndFlagged v = RunAdapter("--variant handoff-position-from", {"hash_state"}, "MidSequenceStart");
  EXPECT_EQ(v.r.exit_code, 1) << v.r.out;
  EXPECT_GE(v.flagged.size(), 12u);  // 4 per group: P = 1, 1000, 2^32 + 5 and a micro-batch test
  EXPECT_EQ(v.failed, v.flagged) << v.r.out;
  const FailedAndFlagged fair = RunAdapter("", {"hash_state"}, "MidSequenceStart");
  EXPECT_EQ(fair.r.exit_code, 0) << fair.r.out;
  EXPECT_TRUE(fair.failed.empty());
}

// §VEC.7: a fork onto a name that exists replaces that
// sequence. A port that refuses it fails exactly the tests flagged
// ForkReplaces; the faithful adapter passes them, and refuses the invalid
// HashStateTests (BadStep: rollback past the start, rollback or fork of a
// name never appended).
TEST(ForkOntoAnExistingName, APortThatRefusesItFailsExactlyTheForkReplacesTests) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const FailedAndFlagged v = RunAdapter("--variant fork-refuses-existing", {"hash_v41", "hash_demo"}, "ForkReplaces");
  EXPECT_EQ(v.r.exit_code, 1) << v.r.out;
  EXPECT_EQ(v.flagged.size(), 4u);  // one per group of each suite
  EXPECT_EQ(v.failed, v.flagged) << v.r.out;
  const FailedAndFlagged fair = RunAdapter("", {"hash_v41", "hash_demo"}, "BadStep");
  EXPECT_EQ(fair.r.exit_code, 0) << fair.r.out;
  EXPECT_EQ(fair.flagged.size(), 12u);  // three per group of each suite, all refused
  EXPECT_TRUE(fair.failed.empty());
}

// §FUS.9 A bf16 GEMM may flush subnormal factors, products, partial sums and
// results to zero (oneDNN's bf16 kernels do; torch's F.linear runs there for
// more than 4096 multiply-adds). The numpy port computing the bf16 wkv as that
// kernel does (it gives torch's bits on an AVX512-BF16 CPU) passes every
// gate_v41 test and random case; judged without the flush interval
// (kvLow64 / kvHigh64 removed from the one test whose kv it changes), it fails
// that test, so it does flush. Flushing where §FUS.9 forbids it fails exactly
// the boundary tests: the smallest normal 2^-126 (Bf16GemmSmallestNormal), and
// the fp8 GEMM's float32 operations (Fp8GemmSubnormal).
TEST(Bf16GemmUnderflow, AFlushingBf16GemmPassesAndAFlushWhereTheRuleForbidsFails) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const FailedAndFlagged flush = RunAdapter("--variant bf16-gemm-flush", {"gate_v41"}, "Bf16GemmFlushToZero");
  EXPECT_EQ(flush.r.exit_code, 0) << flush.r.out;
  EXPECT_TRUE(flush.failed.empty());
  ASSERT_EQ(flush.flagged.size(), 1u);
  const std::string flushed = *flush.flagged.begin();  // "gate_v41:N"
  Result random = Conform("--vectors " + kVectors + " --exec \"" + NumpyPort() +
                          " --variant bf16-gemm-flush\" --suite gate_v41 --random-only --random " +
                          std::to_string(engram::testutil::SanitizedCount(300, 60)) + " --seed 11");
  EXPECT_EQ(random.exit_code, 0) << random.out;

  // The same port against the vectors without that test's interval: it fails that test alone.
  const fs::path copy = Dir() / "vectors_no_flush_interval";
  fs::remove_all(copy);
  fs::copy(kVectors, copy, fs::copy_options::recursive);
  const fs::path file = copy / "v1" / "gate_v41.json";
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(Slurp(file));
  const int64_t tc = std::stoll(flushed.substr(flushed.find(':') + 1));
  for (auto& g : doc["testGroups"]) {
    for (auto& t : g["tests"]) {
      if (t["tcId"] == tc) {
        t.erase("kvLow64");
        t.erase("kvHigh64");
      }
    }
  }
  std::ofstream(file) << doc.dump(1) << "\n";
  std::string manifest;
  std::istringstream lines(Slurp(copy / "MANIFEST.sha256"));
  for (std::string line; std::getline(lines, line);) {
    manifest += line.ends_with("  v1/gate_v41.json") ? engram::Sha256Hex(Slurp(file)) + "  v1/gate_v41.json" : line;
    manifest += "\n";
  }
  std::ofstream(copy / "MANIFEST.sha256") << manifest;
  const fs::path report = Dir() / "no_interval.json";
  Result strict = Conform("--vectors " + copy.string() + " --suite gate_v41 --exec \"" + NumpyPort() +
                          " --variant bf16-gemm-flush\" --report-json " + report.string());
  EXPECT_EQ(strict.exit_code, 1) << strict.out;
  std::set<std::string> failed;
  const json doc_report = json::parse(Slurp(report));  // kept alive for the loop
  for (const json& t : doc_report["results"]) {
    if (t["status"] == "fail") failed.insert(t["suite"].get<std::string>() + ":" + t["tcId"].dump());
  }
  EXPECT_EQ(failed, std::set<std::string>{flushed}) << strict.out;

  for (const auto& [variant, flag] : {std::pair<std::string, std::string>{"bf16-gemm-flush-min-normal", "Bf16GemmSmallestNormal"},
                                      {"fp8-gemm-flush", "Fp8GemmSubnormal"}}) {
    const FailedAndFlagged v = RunAdapter("--variant " + variant, {"gate_v41"}, flag);
    EXPECT_EQ(v.r.exit_code, 1) << v.r.out;
    EXPECT_EQ(v.flagged.size(), 1u) << variant;
    EXPECT_EQ(v.failed, v.flagged) << variant << v.r.out;
  }
}

// §CONF.2 The pipeline (Peer::Send / Receive): the answers come back in the
// order of the requests, and a child that dies fails the oldest request not
// answered; what was written ahead of it is no longer in flight (the runner
// writes it again to a fresh child).
TEST(PeerPipeline, AnswersInOrderAndACrashFailsTheOldestUnanswered) {
  const fs::path script = Dir() / "pipeline_peer.sh";
  std::ofstream(script) << "read l\n"
                           "echo '{\"protocol\":1,\"name\":\"pipe\",\"suites\":[\"*\"],\"profiles\":[\"*\"]}'\n"
                           "while read l; do\n"
                           "  case \"$l\" in\n"
                           "    *'\"n\":3}'*) echo 'dying at 3' >&2; kill -SEGV $$ ;;\n"
                           "    *) n=${l#*'\"n\":'}; echo \"{\\\"outputs\\\":{\\\"n\\\":${n%\\}}}}\" ;;\n"
                           "  esac\n"
                           "done\n";
  engram::conform::Peer peer({"sh", script.string()}, std::chrono::milliseconds(10000));
  peer.Hello();
  const auto timeout = std::chrono::milliseconds(10000);
  for (int n = 1; n <= 5; ++n) {
    engram::conform::Peer::Reply failure;
    const auto sent = peer.Send("{\"n\":" + std::to_string(n) + "}", timeout, &failure);
    // The child reads 1 to 3 before it dies; 4 and 5 may find it dead already
    // (not written: kLater, sent again later), or be written ahead in time.
    if (n <= 3) {
      ASSERT_EQ(sent, engram::conform::Peer::SendStatus::kSent) << n;
    } else {
      ASSERT_NE(sent, engram::conform::Peer::SendStatus::kFailed) << n;
    }
  }
  EXPECT_GE(peer.InFlight(), 3u);
  for (int n = 1; n <= 2; ++n) {
    const engram::conform::Peer::Reply r = peer.Receive(timeout);
    EXPECT_EQ(r.failure, "") << r.detail;
    EXPECT_EQ(r.body["outputs"]["n"], n);
  }
  const engram::conform::Peer::Reply third = peer.Receive(timeout);
  EXPECT_EQ(third.failure, "crashed");
  EXPECT_THAT(third.detail, testing::HasSubstr("dying at 3"));
  EXPECT_EQ(peer.InFlight(), 0u);
  // Not restarted by a write ahead: the next request is asked the plain way,
  // which starts a fresh child (new handshake) and gets its answer.
  engram::conform::Peer::Reply failure;
  EXPECT_EQ(peer.Send("{\"n\":4}", timeout, &failure), engram::conform::Peer::SendStatus::kLater);
  const engram::conform::Peer::Reply fourth = peer.CallLine("{\"n\":4}", timeout);
  EXPECT_EQ(fourth.failure, "") << fourth.detail;
  EXPECT_EQ(fourth.body["outputs"]["n"], 4);
  peer.Bye();
}

// §ERR.5, §ERR.6 The one-pass parse of the protocol's lines accepts what the
// strict parse accepts, with the same value and key order, and gives up
// (leaving the refusal to the strict parse) on a repeated key or deep nesting.
TEST(WatchedJson, AgreesWithTheStrictParseAndGivesUpWhereItRefuses) {
  for (const std::string text : std::vector<std::string>{R"({"b":1,"a":[1,-2,3.5,"x",{"k":null}],"c":{"d":true}})", R"([{"a":1},{"a":2}])",
                                 R"({"outputs":{"rows":[[[18446744073709551615,-9223372036854775808]]]}})"}) {
    nlohmann::ordered_json watched;
    ASSERT_TRUE(engram::conform::ParseWatched(text, watched)) << text;
    const nlohmann::ordered_json strict = engram::ParseOrderedJson(text, "t");
    EXPECT_EQ(watched.dump(), strict.dump()) << text;  // the value and the order of its keys
  }
  for (const std::string text : std::vector<std::string>{R"({"a":1,"a":2})", R"({"x":{"a":1,"b":2,"a":3}})", R"({"a":1,)",
                                 std::string(300, '[') + std::string(300, ']')}) {
    nlohmann::ordered_json watched;
    EXPECT_FALSE(engram::conform::ParseWatched(text, watched)) << text;
    EXPECT_THROW(engram::ParseOrderedJson(text, "t"), engram::Error) << text;
  }
}

}  // namespace
