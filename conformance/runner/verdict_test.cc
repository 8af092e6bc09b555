// No false green (spec/conformance.md §CONF.4, §CONF.7): ports that compute
// nothing, ports that replay the vectors, ports that re-encode the expected
// bits, and random runs that draw nothing must never get "conformance: OK".
// Each is planted (conformance/runner/testdata/hollow_port.py) and must end
// FAILED; trivial tests (vectors/trivial.h) are checked against that port
// (the flag itself on the committed vectors: vectors/trivial_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "testutil/conform.h"
#include "vectors/trivial.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;
using testing::HasSubstr;
using testing::Not;
using namespace engram::conform::test;

const std::string kHollow = std::string(ENGRAM_SOURCE_DIR) + "/conformance/runner/testdata/hollow_port.py";

// The planted port, run by the system's python3 (it needs no numpy).
std::string Hollow(const std::string& args) { return "--exec \"python3 " + kHollow + " " + args + "\""; }

// Every test of the committed vectors, by "suite:tcId", with its flags.
std::map<std::string, std::set<std::string>> VectorFlags() {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& e : fs::directory_iterator(fs::path(kVectors) / "v1")) {
    const json doc = json::parse(Slurp(e.path()));
    for (const json& g : doc["testGroups"]) {
      for (const json& t : g["tests"]) {
        std::set<std::string>& flags = out[e.path().stem().string() + ":" + t["tcId"].dump()];
        for (const json& f : t.value("flags", json::array())) flags.insert(f.get<std::string>());
      }
    }
  }
  return out;
}

// §CONF.4 item 1 of the "no false green" rules: a port that answers only
// what needs no computation (the empty sequences) and `unsupported` to the
// rest passes a few tests and tested nothing.
TEST(NoFalseGreen, APortThatAnswersOnlyTheEmptyCasesFails) {
  const fs::path report = Dir() / "hollow-empty.json";
  const Result r = Conform("--vectors " + kVectors + " " + Hollow("--mode empty") + " --report-json " + report.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("conformance: FAILED"));
  EXPECT_THAT(r.out, Not(HasSubstr("conformance: OK")));
  EXPECT_THAT(r.out, HasSubstr("no non-trivial valid test"));
  EXPECT_THAT(r.out, HasSubstr("(0 non-trivial valid test(s) matched"));
  // The port passes exactly the tests the generator flags Trivial: the flag
  // is computed by running what such a port answers (vectors/trivial.cc),
  // and this port writes its answers independently (hollow_port.py).
  const auto flags = VectorFlags();
  std::set<std::string> passed_valid, trivial;
  for (const auto& [id, f] : flags) {
    if (f.count(engram::vectors::kTrivialFlag)) trivial.insert(id);
  }
  const json doc = json::parse(Slurp(report));
  for (const json& t : doc["results"]) {
    if (t["suite"] == "contract" || t["status"] != "pass") continue;
    const std::string id = t["suite"].get<std::string>() + ":" + t["tcId"].dump();
    if (t.value("trivial", false)) {
      passed_valid.insert(id);
    } else {
      // A pass that is not trivial can only be a refused invalid input: this
      // port refuses nothing.
      ADD_FAILURE() << id << " passed without being trivial: " << t.dump();
    }
  }
  EXPECT_GE(trivial.size(), 8u);
  EXPECT_EQ(passed_valid, trivial);
  EXPECT_EQ(doc["verdict"]["tested"], 0);
  EXPECT_EQ(doc["verdict"]["trivial"], static_cast<int64_t>(trivial.size()));
}

// The same port on random cases: an empty HashTest is drawn rarely now
// (random-v2), and those that are drawn do not count.
TEST(NoFalseGreen, APortThatAnswersOnlyTheEmptyCasesFailsTheRandomCases) {
  const Result r = Conform("--vectors " + kVectors + " " + Hollow("--mode empty") +
                           " --random 300 --seed 3 --suite hash_v41 --random-only");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("random:hash_v41"));
  EXPECT_THAT(r.out, HasSubstr("no non-trivial valid random case of it passed"));
  EXPECT_THAT(r.out, Not(HasSubstr("conformance: OK")));
}

// A port that replays the committed vectors passes them (nothing can tell it
// from a correct port there: that is what the random cases are for), and
// answers the empty random cases; its random suites must fail.
TEST(NoFalseGreen, APortThatReplaysTheVectorsFailsTheRandomCases) {
  const std::string port = Hollow("--mode replay --vectors " + kVectors);
  const Result fixed = Conform("--vectors " + kVectors + " " + port + " --suite hash_v41 --suite multipliers");
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out;  // the replay itself is right: the planted ports below are not
  const Result r = Conform("--vectors " + kVectors + " " + port + " --suite hash_v41 --suite multipliers --random 200 --seed 5");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("random:hash_v41"));
  EXPECT_THAT(r.out, HasSubstr("no non-trivial valid random case of it passed"));
  EXPECT_THAT(r.out, Not(HasSubstr("conformance: OK")));
}

// The number of valid tests of `suite` whose expected outputs hold an
// integer for which `pick` is true, read from the vector file.
size_t TestsWithAnInteger(const std::string& suite, bool (*pick)(const json&), bool with_intermediate) {
  size_t n = 0;
  const ordered_json doc = ordered_json::parse(Slurp(fs::path(kVectors) / "v1" / (suite + ".json")));
  std::function<bool(const ordered_json&)> any = [&](const ordered_json& v) {
    if (v.is_number_integer()) return pick(json(v));
    if (v.is_array() || v.is_object()) {
      for (const auto& e : v) {
        if (any(e)) return true;
      }
    }
    return false;
  };
  for (const ordered_json& g : doc["testGroups"]) {
    for (const ordered_json& t : g["tests"]) {
      if (t["result"] != "valid") continue;
      // What the replaying port returns: the keys after "result" (but the
      // informative error) and the outputs nested in HashStateTest steps.
      bool after = false, hit = false;
      for (const auto& [k, v] : t.items()) {
        if (k == "result") {
          after = true;
        } else if (k == "steps") {  // after "result" (it holds outputs), but its ids are inputs
          for (const ordered_json& step : v) {
            for (const char* out : {"rows", "positionAfter", "historyAfter"}) {
              if (step.contains(out)) hit = hit || any(step[out]);
            }
          }
        } else if (after && k != "error" && (with_intermediate || k != "intermediate")) {
          hit = hit || any(v);
        }
      }
      n += hit;
    }
  }
  return n;
}

// §CONF.4 integers are compared by value: negative outputs written as their
// uint64 bit pattern fail, in every test that has one (before: none failed).
TEST(NoFalseGreen, NegativeIntegersWrittenAsTheirUint64BitsFail) {
  const fs::path report = Dir() / "uint64.json";
  const Result r = Conform("--vectors " + kVectors + " " + Hollow("--mode replay --encode uint64 --vectors " + kVectors) +
                           " --suite multipliers --suite hash_v41 --suite hash_demo --report-json " + report.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("the same 64 bits, another value: §CONF.4 compares integers by value"));
  const json doc = json::parse(Slurp(report));
  auto negative = [](const json& v) { return v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0; };
  for (const char* suite : {"multipliers", "hash_v41", "hash_demo"}) {
    const size_t want = TestsWithAnInteger(suite, negative, true);
    EXPECT_GT(want, 0u) << suite;
    EXPECT_EQ(doc["suites"][suite]["failed"], want) << suite;
  }
}

// ... and integers of 2^63 and more written as the negative int64 with the
// same bits (the multipliers' RNG state in BoundedIntegersTest intermediates,
// compared when returned).
TEST(NoFalseGreen, LargeIntegersWrittenAsNegativeInt64Fail) {
  const fs::path report = Dir() / "int64.json";
  const Result r = Conform("--vectors " + kVectors + " " + Hollow("--mode replay --encode int64 --vectors " + kVectors) +
                           " --suite multipliers --report-json " + report.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  auto large = [](const json& v) { return v.is_number_unsigned() && v.get<uint64_t>() >= (uint64_t{1} << 63); };
  const size_t want = TestsWithAnInteger("multipliers", large, true);
  EXPECT_GT(want, 0u);
  EXPECT_EQ(json::parse(Slurp(report))["suites"]["multipliers"]["failed"], want);
}

// §CONF.7 --random N over suites none of which has a generator drew nothing:
// the run says so and fails.
TEST(NoFalseGreen, ARandomRunThatDrawsNothingFails) {
  const Result r = Conform("--vectors " + kVectors + " --lib " + ENGRAM_PLUGIN + " --suite fp8_decode --random 50");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("no random case was drawn"));
  EXPECT_THAT(r.out, Not(HasSubstr("conformance: OK")));
}

// §CONF.4 a diagnosis is made from mismatches only: a port that refuses every
// valid input is not told it has a catalogued divergence.
TEST(NoFalseGreen, RefusalsAreNotDiagnosedAsADivergence) {
  const Result r = Conform("--vectors " + kVectors + " " + Hollow("--mode refuse") + " --suite layout --suite short_conv_demo");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.out, HasSubstr("refused valid input"));
  EXPECT_THAT(r.out, Not(HasSubstr("diagnosis")));
}

}  // namespace
