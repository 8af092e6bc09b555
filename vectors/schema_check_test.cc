// §CONF.4 vectors/schema_check.h: a vector file against its JSON Schema, on
// the committed files and on strings longer than std::regex's default
// executor can take.
#include "vectors/schema_check.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "testutil/vectors.h"

namespace schema_check_test {
namespace {

using namespace engram::vectors::test;
using engram::vectors::SchemaCheckFile;
using engram::vectors::ValidateAgainstSchemas;
using nlohmann::ordered_json;

// The directory's schema/ files: name -> bytes.
const std::map<std::string, std::string>& Schemas() {
  static const std::map<std::string, std::string> schemas = [] {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(fs::path(kVectors) / "schema")) {
      if (e.path().extension() == ".json") out[e.path().filename().string()] = Slurp(e.path());
    }
    return out;
  }();
  return schemas;
}

// The message ValidateAgainstSchemas throws for `doc`, "" when it passes.
std::string Problem(const ordered_json& doc, const std::string& rel) {
  try {
    ValidateAgainstSchemas({SchemaCheckFile{rel, &doc}}, Schemas());
  } catch (const engram::Error& e) {
    return e.what();
  }
  return "";
}

// The first test of table_lookup.json with rows: its rows[0] is a hex string
// (storage.schema.json: the pattern "^([0-9a-f]{4})+$").
ordered_json& FirstTestWithRows(ordered_json& doc) {
  for (ordered_json& g : doc["testGroups"]) {
    for (ordered_json& t : g["tests"]) {
      if (t.contains("rows") && !t["rows"].empty()) return t;
    }
  }
  ADD_FAILURE() << "table_lookup.json has no test with rows";
  static ordered_json none = {{"rows", {""}}, {"tcId", 0}};
  return none;
}

// A refusal of that test: the file, the test's place and the schema. (The
// reason is valijson's first, the innermost of the alternatives it tried for
// the test's type, so it need not be the pattern's.)
void ExpectRefused(const std::string& problem, const ordered_json& test) {
  EXPECT_NE(problem.find("v1/table_lookup.json: testGroups["), std::string::npos) << problem;
  EXPECT_NE(problem.find("(tcId " + test["tcId"].dump() + ")"), std::string::npos) << problem;
  EXPECT_NE(problem.find("does not match its JSON Schema schema/storage.schema.json"), std::string::npos) << problem;
}

TEST(SchemaCheck, EveryCommittedFileMatchesItsSchema) {
  for (const auto& e : fs::directory_iterator(fs::path(kVectors) / "v1")) {
    const ordered_json doc = ordered_json::parse(Slurp(e.path()));
    EXPECT_EQ(Problem(doc, "v1/" + e.path().filename().string()), "");
  }
}

// libstdc++'s default regex executor recursed once per character: a row of
// 100,000 hex digits (40,000 overflowed an 8 MiB stack) killed the runner
// with SIGSEGV before this test was written; it is matched now, and a bad
// digit at its very end is still found.
TEST(SchemaCheck, AHexStringLongerThanTheStackAllowedIsStillMatched) {
  ordered_json doc = Suite("table_lookup");
  ordered_json& test = FirstTestWithRows(doc);
  test["rows"][0] = std::string(100000, 'a');
  EXPECT_EQ(Problem(doc, "v1/table_lookup.json"), "");
  test["rows"][0] = std::string(99999, 'a') + "g";
  ExpectRefused(Problem(doc, "v1/table_lookup.json"), test);
}

// The short strings take the default executor: a bad digit is found there too.
TEST(SchemaCheck, AShortBadHexStringIsRefusedWithItsPlace) {
  ordered_json doc = Suite("table_lookup");
  ordered_json& test = FirstTestWithRows(doc);
  std::string row = test["rows"][0].get<std::string>();
  row.back() = 'g';
  test["rows"][0] = row;
  ExpectRefused(Problem(doc, "v1/table_lookup.json"), test);
}

}  // namespace
}  // namespace schema_check_test
