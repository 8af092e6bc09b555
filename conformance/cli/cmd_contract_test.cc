// `engram contract` and `engram contract verify` (cmd_contract.cc, §CON).
// End-to-end through the command line: outputs, error messages and exit codes.
// Expected values are published figures or laws, never values copied from the code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "testutil/run_cli.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HasSubstr;
using Result = engram::testutil::CliResult;
using engram::testutil::kDemo;
using engram::testutil::kV41;
using engram::testutil::RunCli;
using engram::testutil::Slurp;
using engram::testutil::TempDir;
using engram::testutil::Write;

// §CON: write, verify, and catch a same-size map from "another revision".
// §CON.4 The load-time check: a stored contract verified, a changed field named.
TEST(CliContract, WriteVerifyAndNameTheDifference) {
  const fs::path dir = TempDir();
  // Both maps are first-seen with 60 compressed ids (§TOK.5); raw id 70 joins
  // another class in the "other revision".
  std::string map = "[", swapped = "[";
  for (int i = 0; i < 100; ++i) {
    const int v = i < 60 ? i : i - 60;
    const int w = i == 70 ? 11 : v;
    map += (i ? "," : "") + std::to_string(v);
    swapped += (i ? "," : "") + std::to_string(w);
  }
  Write(dir / "map.json", map + "]");
  Write(dir / "swapped.json", swapped + "]");
  const fs::path contract = dir / "contract.json";
  Result w = RunCli("contract --config " + kDemo + " --token-map " + (dir / "map.json").string() + " --out " + contract.string());
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_EQ(RunCli("contract verify " + contract.string() + " --token-map " + (dir / "map.json").string()).exit_code, 0);
  Result bad = RunCli("contract verify " + contract.string() + " --config " + kDemo + " --token-map " +
                      (dir / "swapped.json").string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("tokenMap.sha256"));
  EXPECT_THAT(bad.out, HasSubstr("\"ok\": false"));
  // An edited contract is refused before anything is recomputed.
  json doc = json::parse(Slurp(contract));
  doc["heads"] = 4;
  Write(dir / "edited.json", doc.dump());
  Result edited = RunCli("contract verify " + (dir / "edited.json").string() + " --token-map " + (dir / "map.json").string());
  EXPECT_NE(edited.exit_code, 0);
  EXPECT_THAT(edited.err, HasSubstr("contractDigest"));
  // A contract needs a real token map.
  Result no_map = RunCli("contract --config " + kDemo + " --compressed-vocab-size 60");
  EXPECT_NE(no_map.exit_code, 0);
  EXPECT_THAT(no_map.err, HasSubstr("--token-map"));
}

}  // namespace
