// End-to-end tests of `engram conform` (spec/conformance.md): the in-tree
// reference through the C ABI, the numpy adapter through the JSON-lines
// protocol, planted bugs that must fail exactly their flagged tests, and
// peers that crash, hang or answer garbage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "conformance/runner/runner.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HasSubstr;

struct Result {
  int exit_code;
  std::string out;
};

fs::path Dir() {
  fs::path d = fs::temp_directory_path() / ("engram_conform_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result Conform(const std::string& args) {
  const fs::path out = Dir() / "out.txt";
  const std::string cmd = std::string(ENGRAM_CLI) + " conform " + args + " >" + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out)};
}

const std::string kVectors = std::string(ENGRAM_SOURCE_DIR) + "/vectors";
const std::string kAdapter = std::string(ENGRAM_SOURCE_DIR) + "/conformance/examples/numpy_adapter.py";

std::string Python() {
  const char* p = std::getenv("ENGRAM_PYTHON");
  return p == nullptr ? "" : p;
}

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
  for (const char* s : {"multipliers", "layout", "hash_v41", "hash_demo", "hash_state", "accumulated", "contract"}) {
    EXPECT_TRUE(passed_suites.count(s)) << s;
  }
  EXPECT_THAT(Slurp(junit), HasSubstr("<testsuite name=\"hash_v41\""));
}

// Every suite the numpy adapter claims (all of them), and the only tests a
// run with --accumulate-max 100000 may skip: the 10^7 accumulated digests.
const char* const kAllSuites[] = {"multipliers", "layout",       "hash_v41", "hash_demo", "hash_state",
                                  "accumulated", "token_map",    "fp8_decode", "table_lookup", "tp_shard",
                                  "gate_v41",    "gate_demo",    "short_conv_demo", "engram_forward"};

bool SkippedForAccumulateMax(const json& t) {
  return t["suite"] == "accumulated" && t["detail"].get<std::string>().find("--accumulate-max") != std::string::npos;
}

TEST(Conform, NumpyAdapterPassesEverySuite) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const fs::path report = Dir() / "numpy.json";
  Result r = Conform("--vectors " + kVectors + " --exec \"" + Python() + " " + kAdapter +
                     "\" --accumulate-max 100000 --report-json " + report.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("hash_v41: 58 pass"));
  const json doc = json::parse(Slurp(report));
  std::map<std::string, int> passed;
  for (const json& t : doc["results"]) {
    EXPECT_TRUE(t["status"] == "pass" || (t["status"] == "skipped" && SkippedForAccumulateMax(t))) << t.dump();
    if (t["status"] == "pass") passed[t["suite"].get<std::string>()]++;
  }
  for (const char* s : kAllSuites) EXPECT_GT(passed[s], 0) << s;
}

// §CONF.4: a port with a known bug fails exactly the tests flagged with it,
// in every suite (the generator flags a test where a C++ mutant of the
// reference changes the outcome, vectors/mutants.cc; the adapter's bugs are
// written independently in Python).
class PlantedBug : public testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(PlantedBug, FailsExactlyItsFlaggedTests) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  const auto& [bug, flag] = GetParam();
  const fs::path report = Dir() / ("bug-" + bug + ".json");
  Result r = Conform("--vectors " + kVectors + " --exec \"" + Python() + " " + kAdapter + " --bug " + bug +
                     "\" --accumulate-max 100000 --report-json " + report.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  std::set<std::string> failed, flagged, suites;
  const json doc = json::parse(Slurp(report));  // kept alive for the loop
  for (const json& t : doc["results"]) {
    if (t["suite"] == "contract") continue;
    if (t["status"] == "skipped") {
      EXPECT_TRUE(SkippedForAccumulateMax(t)) << t.dump();  // nothing else escapes the comparison
      continue;
    }
    suites.insert(t["suite"].get<std::string>());
    const std::string id = t["suite"].get<std::string>() + ":" + t["tcId"].dump();
    if (t["status"] == "fail") failed.insert(id);
    for (const json& f : t["flags"]) {
      if (f == flag) flagged.insert(id);
    }
  }
  EXPECT_EQ(suites.size(), std::size(kAllSuites));
  EXPECT_FALSE(flagged.empty());
  EXPECT_EQ(failed, flagged) << bug;
  EXPECT_THAT(r.out, HasSubstr("flag " + flag));  // the report names the divergence
}

INSTANTIATE_TEST_SUITE_P(KnownDivergences, PlantedBug,
                         testing::Values(std::make_pair("no-dead-blocking", "NoDeadBlocking"),
                                         std::make_pair("truncated-mod", "FloorMod"),
                                         std::make_pair("int32-multipliers", "Int32Multipliers"),
                                         std::make_pair("sign", "SignedZeroCopysign"),
                                         std::make_pair("e8m0-shift", "E8M0BitShift"),
                                         std::make_pair("python-wrapper-decode", "PythonWrapperDecode")),
                         [](const auto& info) {
                           std::string name;
                           for (char c : info.param.second) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

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
  EXPECT_THAT(r.out, HasSubstr("91 skipped"));  // every other test still ran (and was unsupported)
}

TEST(Conform, HangingPeerTimesOut) {
  Result r = Conform("--vectors " + kVectors + " --suite multipliers --timeout 1 " + Peer("sleep 30"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tcId 3 (timeout)"));
}

TEST(Conform, GarbageAnswerIsReported) {
  Result r = Conform("--vectors " + kVectors + " --suite multipliers " + Peer("echo 'this is not json'"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("tcId 3 (garbage)"));
}

TEST(Conform, WrongProtocolOrDeadPeerCannotStart) {
  const fs::path script = Dir() / "proto2.sh";
  std::ofstream(script) << "read l\necho '{\"protocol\":2}'\n";
  Result r = Conform("--vectors " + kVectors + " --exec \"sh " + script.string() + "\"");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_THAT(r.out, HasSubstr("protocol 2 is not 1"));
  Result dead = Conform("--vectors " + kVectors + " --exec \"/nonexistent-adapter\"");
  EXPECT_EQ(dead.exit_code, 2) << dead.out;
  EXPECT_THAT(dead.out, HasSubstr("handshake failed"));
}

TEST(Conform, ExpectedFailuresAndStaleEntries) {
  if (Python().empty()) GTEST_SKIP() << "set ENGRAM_PYTHON to a python3 with numpy";
  // The truncated-mod port lists its deviations; one entry (hash_demo tcId 1,
  // the empty sequence) is wrong and is reported stale.
  const fs::path report = Dir() / "tm.json";
  Conform("--vectors " + kVectors + " --suite hash_demo --exec \"" + Python() + " " + kAdapter +
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
  Result r = Conform("--vectors " + kVectors + " --suite hash_demo --exec \"" + Python() + " " + kAdapter +
                     " --bug truncated-mod\" --expect-fail " + expect.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("expected-fail"));
  EXPECT_THAT(r.out, HasSubstr("STALE hash_demo:1"));
  Result strict = Conform("--vectors " + kVectors + " --suite hash_demo --exec \"" + Python() + " " + kAdapter +
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
  Result good = Conform("--vectors " + kVectors + " --suite hash_v41 --exec \"" + Python() + " " + kAdapter + " --contract " +
                        (dir / "c.json").string() + "\"");
  EXPECT_EQ(good.exit_code, 0) << good.out;
  EXPECT_THAT(good.out, HasSubstr("contract: 1 pass, 1 skipped"));  // the tiny layout is another configuration
  // A contract whose primes were edited (its digest now stale) is refused.
  nlohmann::ordered_json c = nlohmann::ordered_json::parse(Slurp(dir / "c.json"));
  c["layers"][1]["primes"][2][7] = 16000891;
  std::ofstream(dir / "edited.json") << c.dump();
  Result bad = Conform("--vectors " + kVectors + " --suite hash_v41 --exec \"" + Python() + " " + kAdapter + " --contract " +
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

TEST(ConformSplit, InputsBeforeResultOutputsAfter) {
  const nlohmann::ordered_json t = nlohmann::ordered_json::parse(
      R"({"tcId":1,"comment":"c","flags":[],"specRef":["§HASH.4"],"ids":[1,2],"result":"valid","rows":[[[3]]],"intermediate":[]})");
  const engram::conform::SplitTest s = engram::conform::SplitOrdered("HashTest", t);
  EXPECT_EQ(s.inputs.dump(), R"({"ids":[1,2]})");
  EXPECT_EQ(s.expected.dump(), R"({"rows":[[[3]]],"intermediate":[]})");
  EXPECT_EQ(engram::conform::CompareOrdered("HashTest", s.expected, nlohmann::ordered_json::parse(R"({"rows":[[[4]]]})")),
            "rows[0][0][0]: expected 3, got 4");
  EXPECT_EQ(engram::conform::CompareOrdered("HashTest", s.expected, nlohmann::ordered_json::parse(R"({"rows":[[[3]]]})")), "");
}

TEST(ConformSplit, NestedStepOutputsAreStripped) {
  const nlohmann::ordered_json t = nlohmann::ordered_json::parse(
      R"({"tcId":1,"comment":"","flags":[],"specRef":[],"result":"valid","steps":[{"op":"append","seq":"a","ids":[1],"rows":[[[5]]],"positionAfter":1,"historyAfter":[1]}]})");
  const engram::conform::SplitTest s = engram::conform::SplitOrdered("HashStateTest", t);
  EXPECT_EQ(s.inputs.dump(), R"({"steps":[{"op":"append","seq":"a","ids":[1]}]})");
  auto actual = nlohmann::ordered_json::parse(
      R"({"steps":[{"op":"append","seq":"a","ids":[1],"rows":[[[5]]],"positionAfter":1,"historyAfter":[2]}]})");
  EXPECT_EQ(engram::conform::CompareOrdered("HashStateTest", s.expected, actual),
            "steps[0].historyAfter[0]: expected 1, got 2");
}

}  // namespace
