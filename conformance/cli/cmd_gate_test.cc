// `engram gate` (cmd_gate.cc, spec §FUS).
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

TEST(CliGate, SyntheticRoundTripsThroughInputFile) {
  // The synthetic mode prints its inputs; feeding them back gives the same result.
  for (const std::string& cfg : {kV41, kDemo}) {
    Result a = RunCli("gate --config " + cfg + " --synthetic 3");
    ASSERT_EQ(a.exit_code, 0) << a.err;
    json doc = json::parse(a.out);
    const fs::path in = TempDir() / "gate_input.json";
    Write(in, doc["input"].dump());
    Result b = RunCli("gate --config " + cfg + " --input " + in.string());
    ASSERT_EQ(b.exit_code, 0) << b.err;
    json again = json::parse(b.out);
    doc.erase("input");
    EXPECT_EQ(doc, again);
  }
}

TEST(CliGate, V41MaskedPositionKeepsX) {
  const fs::path in = TempDir() / "gate_masked.json";
  Write(in, R"({"x": [[1.5, -2, 0.25, 3]], "key": [[1, 1, 1, 1]], "value": [9, 9, 9, 9],
               "qWeight": [[1, 1, 1, 1]], "kWeight": [[1, 1, 1, 1]], "masked": true})");
  Result r = RunCli("gate --config " + kV41 + " --input " + in.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc["streams"][0]["float32"]["gate"], 0.0);
  EXPECT_EQ(doc["streams"][0]["float32"]["out_bf16"], json::parse("[1.5, -2.0, 0.25, 3.0]"));
}

TEST(CliGate, RefusesBadInput) {
  const fs::path dir = TempDir();
  Write(dir / "gate_short.json", R"({"x": [[1, 2]], "key": [[1]]})");
  Result a = RunCli("gate --config " + kV41 + " --input " + (dir / "gate_short.json").string());
  EXPECT_NE(a.exit_code, 0);
  EXPECT_THAT(a.err, HasSubstr("gate_short.json: key[0] must be an array of 2 entries"));
  Write(dir / "gate_missing.json", R"({"x": [[1, 2]], "key": [[1, 2]], "value": [1, 2], "qWeight": [[1, 1]]})");
  Result b = RunCli("gate --config " + kV41 + " --input " + (dir / "gate_missing.json").string());
  EXPECT_NE(b.exit_code, 0);
  EXPECT_THAT(b.err, HasSubstr("missing key 'kWeight'"));
  Write(dir / "gate_text.json", R"({"x": [["a"]], "key": [[1]], "value": [1], "qWeight": [[1]], "kWeight": [[1]]})");
  Result c = RunCli("gate --config " + kV41 + " --input " + (dir / "gate_text.json").string());
  EXPECT_NE(c.exit_code, 0);
  EXPECT_THAT(c.err, HasSubstr("x[0][0] is \"a\", not a number"));
  Result d = RunCli("gate --config " + kV41);
  EXPECT_NE(d.exit_code, 0);
  EXPECT_THAT(d.err, HasSubstr("--input FILE or --synthetic SEED"));
  const fs::path out = dir / "gate_never.json";
  fs::remove(out);
  Result e = RunCli("gate --config " + kDemo + " --input " + (dir / "gate_short.json").string() + " --out " +
                    out.string());
  EXPECT_NE(e.exit_code, 0);
  EXPECT_THAT(e.err, HasSubstr("missing key 'e'"));
  EXPECT_FALSE(fs::exists(out));  // no partial output
}

}  // namespace
