// The checks of a vector file (vector_set.h) alone, on documents built here:
// the keys the runner reads (spec/conformance.md §CONF.4, §VEC.2-§VEC.3) and
// a valid test's expected outputs (§CONF.4, §CONF.6). The whole directory
// (manifest, schemas, spec version) is checked end to end by runner_test.cc
// and the bad-input catalogue.
#include "conformance/runner/vector_set.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"

// A namespace of its own: the test files are compiled in batches (ENGRAM_UNITY_TESTS).
namespace engram::conform::vector_set_tests {
namespace {

using json = nlohmann::ordered_json;
using ::testing::HasSubstr;

// A MultipliersTest file (§CONF.6: inputs seed, layerId, compressedVocabSize,
// maxNgram; output multipliers) whose one test is `test`.
json OneTest(const std::string& test) {
  return json::parse(R"({"testGroups": [{"type": "MultipliersTest", "tests": [)" + test + "]}]}");
}
constexpr const char* kInputs = R"("tcId": 4, "seed": 1, "layerId": 0, "compressedVocabSize": 100, "maxNgram": 2)";

std::string ShapeRefusal(const std::string& rel, const json& doc) {
  try {
    CheckVectorShape(rel, doc);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string OutputsRefusal(const json& doc) {
  try {
    CheckExpectedOutputs("v1/multipliers.json", doc);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(VectorShape, AcceptsWhatTheRunnerReads) {
  EXPECT_EQ(ShapeRefusal("v1/multipliers.json", OneTest(std::string("{") + kInputs + R"(, "result": "valid", "multipliers": [3, 5]})")), "");
  EXPECT_EQ(ShapeRefusal("v1/multipliers.json", OneTest(R"({"tcId": 1, "result": "invalid", "flags": ["Edge"]})")), "");
}

TEST(VectorShape, NamesTheFileGroupTestAndKey) {
  EXPECT_EQ(ShapeRefusal("v1/x.json", json::parse("{}")), "v1/x.json: the top level: key 'testGroups' must be a list, it is missing");
  EXPECT_EQ(ShapeRefusal("v1/x.json", json::parse(R"({"testGroups": {}})")),
            "v1/x.json: the top level: key 'testGroups' must be a list, got {}");
  EXPECT_EQ(ShapeRefusal("v1/x.json", json::parse(R"({"notes": [], "testGroups": []})")),
            "v1/x.json: the top level: key 'notes' must be an object, got []");
  EXPECT_EQ(ShapeRefusal("v1/x.json", json::parse(R"({"testGroups": [{"tests": []}]})")),
            "v1/x.json: testGroups[0]: key 'type' must be a string, it is missing");
  EXPECT_EQ(ShapeRefusal("v1/x.json", json::parse(R"({"testGroups": [{"type": "T", "tests": [{"tcId": 1, "result": "valid"}, {"result": "valid"}]}]})")),
            "v1/x.json: testGroups[0].tests[1]: key 'tcId' must be an integer, it is missing");
  EXPECT_EQ(ShapeRefusal("v1/x.json", OneTest(R"({"tcId": 9, "result": "maybe"})")),
            "v1/x.json: testGroups[0].tests[0] (tcId 9): key 'result' must be \"valid\" or \"invalid\", got \"maybe\"");
  EXPECT_EQ(ShapeRefusal("v1/x.json", OneTest(R"({"tcId": 9, "result": "valid", "flags": [3]})")),
            "v1/x.json: testGroups[0].tests[0] (tcId 9): key 'flags' holds 3, not a note name");
}

TEST(VectorShape, AGroupWithALayoutNeedsItsConfiguration) {
  // §CONF.2 item 2: the contract check of a group with `layers` sends its profile, config, V and pad.
  const json doc = json::parse(R"({"testGroups": [{"type": "HashTest", "layers": [], "profile": "demo-v1", "config": {},
                                                   "compressedVocabSize": 10, "tests": []}]})");
  EXPECT_EQ(ShapeRefusal("v1/hash_demo.json", doc),
            "v1/hash_demo.json: testGroups[0]: key 'compressedPad' must be an integer, it is missing");
}

TEST(VectorShape, AnAccumulatedTestNeedsItsRecipeAndDigest) {
  // §CONF.6 AccumulatedHashTest: kind, seed, n in; sha256 out.
  const json doc = json::parse(R"({"testGroups": [{"type": "AccumulatedHashTest", "tests": [
                                   {"tcId": 2, "result": "valid", "kind": "uniform", "n": 10, "seed": 1}]}]})");
  EXPECT_EQ(ShapeRefusal("v1/accumulated.json", doc),
            "v1/accumulated.json: testGroups[0].tests[0] (tcId 2): key 'sha256' must be a string, it is missing");
  EXPECT_EQ(ShapeRefusal("v1/other.json", doc), "");  // only the accumulated suite is read that way
}

TEST(ExpectedOutputs, AValidTestMustExpectAnOutput) {
  EXPECT_EQ(OutputsRefusal(OneTest(std::string("{") + kInputs + R"(, "result": "valid", "multipliers": [3, 5]})")), "");
  EXPECT_THAT(OutputsRefusal(OneTest(std::string("{") + kInputs + R"(, "result": "valid"})")),
              HasSubstr("v1/multipliers.json: testGroups[0].tests[0] (tcId 4): a valid test without expected outputs"));
  // `intermediate` may be returned but is not judged alone (§CONF.1): it is no expected output.
  EXPECT_THAT(OutputsRefusal(OneTest(std::string("{") + kInputs + R"(, "result": "valid", "intermediate": {}})")),
              HasSubstr("(tcId 4): a valid test without expected outputs"));
  // An invalid test expects a refusal, not outputs.
  EXPECT_EQ(OutputsRefusal(OneTest(std::string("{") + kInputs + R"(, "result": "invalid"})")), "");
}

TEST(ContractKey, IsTheConfigurationNotTheComment) {
  // §CONF.2 item 2: one contract check per (profile, config, V, pad).
  const json a = json::parse(R"({"profile": "demo-v1", "config": {"n": 1}, "compressedVocabSize": 10, "compressedPad": 0, "comment": "a"})");
  json b = a;
  b["comment"] = "b";
  b["layers"] = json::array();
  EXPECT_EQ(ContractKey(a), ContractKey(b));
  for (const char* key : {"profile", "config", "compressedVocabSize", "compressedPad"}) {
    json c = a;
    c[key] = 11;
    EXPECT_NE(ContractKey(a), ContractKey(c)) << key;
  }
}

}  // namespace
}  // namespace engram::conform::vector_set_tests
