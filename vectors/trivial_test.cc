// §CONF.4 The Trivial flag (vectors/trivial.h) on the committed vectors. The
// hollow port that passes exactly the flagged tests: conformance/runner/verdict_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "testutil/vectors.h"
#include "vectors/trivial.h"

namespace trivial_test {
namespace {

using namespace engram::vectors::test;
using nlohmann::ordered_json;

// vectors/trivial.h on its own: the hollow answer of every trivial test of
// the committed vectors is what the vector expects, and a non-empty
// sequence is never trivial.
TEST(TrivialTests, FlagIsSetExactlyWhereTheHollowAnswerPasses) {
  size_t trivial = 0;
  for (const auto& e : fs::directory_iterator(fs::path(kVectors) / "v1")) {
    const ordered_json doc = ordered_json::parse(Slurp(e.path()));
    for (const ordered_json& g : doc["testGroups"]) {
      ordered_json group = g;
      group.erase("tests");
      for (const ordered_json& t : g["tests"]) {
        const bool flagged = std::find(t["flags"].begin(), t["flags"].end(), engram::vectors::kTrivialFlag) != t["flags"].end();
        EXPECT_EQ(flagged, engram::vectors::IsTrivial(group, t)) << e.path().filename() << " tcId " << t["tcId"];
        trivial += flagged;
        if (g["type"] == "HashTest" && !t["ids"].empty()) EXPECT_FALSE(flagged);
      }
    }
  }
  EXPECT_GT(trivial, 0u);
}

}  // namespace
}  // namespace trivial_test
