// The options every command shares (common.cc): strict integer lists, numeric
// ranges checked before anything runs, and --out written whole.
// End-to-end through the command line: outputs, error messages and exit codes.
// Expected values are published figures or laws, never values copied from the code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

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

// Integer lists (--ids, --rows, --chunks, --positions) are strict, and the
// empty value is the empty list (README: "Integer lists").
TEST(CliIntLists, StrictItemsNamedByPosition) {
  const std::string c = "hash --config " + kDemo + " --compressed-vocab-size 100 ";
  struct Case {
    std::string args, needle;
  };
  const Case cases[] = {
      {"--ids=5,7,", "--ids: item 3 of 3 is empty (a trailing comma)"},
      {"--ids=,5", "--ids: item 1 of 2 is empty (a leading comma)"},
      {"--ids=5,,7", "--ids: item 2 of 3 is empty (two commas in a row)"},
      {"--ids=+5", "--ids: item 1 of 1 is '+5': not a decimal 64-bit integer"},
      {"--ids '5, 7'", "--ids: item 2 of 2 is ' 7': not a decimal"},
      {"--ids '5 '", "--ids: item 1 of 1 is '5 ': not a decimal"},
      {"--ids=0x10", "--ids: item 1 of 1 is '0x10': not a decimal"},
      {"--ids=1e3", "--ids: item 1 of 1 is '1e3': not a decimal"},
      {"--ids=-", "--ids: item 1 of 1 is '-': not a decimal"},
      {"--ids=1,--2", "--ids: item 2 of 2 is '--2': not a decimal"},
      {"--ids=99999999999999999999", "--ids: item 1 of 1 is '99999999999999999999': outside the 64-bit integer range"},
      {"--ids=1,2 --chunks=1,", "--chunks: item 2 of 2 is empty"},
  };
  for (const Case& k : cases) {
    Result r = RunCli(c + k.args);
    EXPECT_EQ(r.exit_code, 1) << k.args;
    EXPECT_THAT(r.err, HasSubstr(k.needle)) << k.args;
    EXPECT_TRUE(r.out.empty()) << k.args;
  }
  // The extremes of int64 are integers (demo-v1 hashes any int64 id, §HASH.3).
  Result ends = RunCli(c + "--ids=-9223372036854775808,9223372036854775807");
  EXPECT_NE(ends.err.find("position 1"), std::string::npos) << ends.err;  // refused as an id >= V, not as text
}

TEST(CliIntLists, EmptyValueIsTheEmptyList) {
  const fs::path dir = TempDir();
  const std::string c = "hash --config " + kV41 + " --compressed-vocab-size 99092 ";
  for (const std::string& empty : {"--ids=", "--ids ''"}) {
    // `--ids=` followed by another option: the option is not taken as the value.
    const fs::path out = dir / "empty_hash.json";
    fs::remove(out);
    Result r = RunCli(c + empty + " --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << empty << ": " << r.err;
    json d = json::parse(Slurp(out));
    EXPECT_EQ(d["rows"], json::array()) << empty;
    EXPECT_EQ(d["compressed_ids"], json::array()) << empty;
    EXPECT_EQ(d["position"], 0) << empty;
  }
  // Zero ids continue a history unchanged (§HASH.9).
  const fs::path h = dir / "empty_h.json", h2 = dir / "empty_h2.json";
  ASSERT_EQ(RunCli(c + "--ids=5,7,9 --history-out " + h.string()).exit_code, 0);
  Result through = RunCli(c + "--ids= --history-in " + h.string() + " --history-out " + h2.string());
  ASSERT_EQ(through.exit_code, 0) << through.err;
  EXPECT_EQ(json::parse(through.out)["position"], 3);
  EXPECT_EQ(json::parse(Slurp(h2)), json::parse(Slurp(h)));
  // lookup: no rows, no ids; explain: at least one id, and --positions= means no detailed tables.
  Result rows = RunCli("lookup --config " + kV41 + " --synthetic 1 --rows=");
  ASSERT_EQ(rows.exit_code, 0) << rows.err;
  EXPECT_EQ(json::parse(rows.out)["lookups"], json::array());
  Result ids = RunCli("lookup --config " + kV41 + " --synthetic 1 --ids=");
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  EXPECT_EQ(json::parse(ids.out)["lookups"], json::array());
  Result none = RunCli("lookup --config " + kV41 + " --synthetic 1");
  EXPECT_NE(none.exit_code, 0);
  EXPECT_THAT(none.err, HasSubstr("give exactly one of --ids and --rows"));
  Result explain = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=");
  EXPECT_NE(explain.exit_code, 0);
  EXPECT_THAT(explain.err, HasSubstr("--ids: give at least one id"));
  Result summary = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7 --positions=");
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_EQ(summary.out.find("\nposition "), std::string::npos);
  EXPECT_THAT(summary.out, HasSubstr("layer 1: multipliers"));
}

// Numeric options: refused before anything runs (CLI11 validation, exit 105),
// naming the option, the value and the real allowed range.
TEST(CliNumericOptions, RangesNameOptionValueAndBounds) {
  struct Case {
    std::string args;
    std::vector<std::string> needles;
  };
  const std::string lookup = "lookup --config " + kV41 + " --synthetic 1 --rows 0 ";
  const std::string conform = "conform --vectors " + std::string(ENGRAM_SOURCE_DIR) + "/vectors --exec true --suite layout ";
  const Case cases[] = {
      {"layout --config " + kDemo + " --compressed-vocab-size 0",
       {"--compressed-vocab-size: must be a decimal integer in [1, 2147483648]", "got '0'"}},
      {"layout --config " + kV41 + " --compressed-vocab-size 9223372036854775807",
       {"--compressed-vocab-size", "[1, 2147483648]", "'9223372036854775807'"}},
      {"layout --config " + kDemo + " --compressed-vocab-size 2147483649", {"--compressed-vocab-size", "'2147483649'"}},
      {"layout --config " + kDemo + " --compressed-vocab-size 1e3", {"--compressed-vocab-size", "'1e3'"}},
      {"bench hash --tokens 0", {"--tokens: must be a decimal integer in [1, 4294967296]", "got '0'"}},
      {"bench hash --tokens 4294967297", {"--tokens", "'4294967297'"}},
      {"bench hash --chunk 0", {"--chunk", "[1, 16777216]", "'0'"}},
      {lookup + "--world 0", {"--world: must be a decimal integer in [1, 4096]", "got '0'"}},
      {lookup + "--world -1", {"--world", "'-1'"}},
      {lookup + "--world 4097", {"--world", "'4097'"}},
      {lookup + "--world 99999999999", {"--world", "'99999999999'"}},
      {lookup + "--world 4 --rank -1", {"--rank", "'-1'"}},
      {lookup + "--layer -5", {"--layer", "'-5'"}},
      {"lookup --config " + kV41 + " --synthetic -1 --rows 0", {"--synthetic", "'-1'"}},
      {"gate --config " + kV41 + " --synthetic -1", {"--synthetic", "'-1'"}},
      {"explain --config " + kV41 + " --compressed-vocab-size 99092 --ids 5 --synthetic-table -3",
       {"--synthetic-table", "'-3'"}},
      {"explain --config " + kV41 + " --compressed-vocab-size 99092 --ids 5 --preview -1", {"--preview", "'-1'"}},
      {conform + "--timeout nan", {"--timeout: must be a number of seconds in [0.001, 86400], got 'nan'"}},
      {conform + "--timeout 0", {"--timeout", "'0'"}},
      {conform + "--timeout inf", {"--timeout", "'inf'"}},
      {conform + "--timeout 1e300", {"--timeout", "'1e300'"}},
      {conform + "--accumulate-timeout -5", {"--accumulate-timeout", "'-5'"}},
      {conform + "--accumulate-max -1", {"--accumulate-max", "'-1'"}},
      // One strict rule for every numeric option: no NaN, no hex, no sign, no '_' where decimal is documented.
      {conform + "--random 5 --random-seconds nan", {"--random-seconds: must be a number of seconds", "'nan'"}},
      {conform + "--random 5 --random-seconds -nan", {"--random-seconds", "'-nan'"}},
      {conform + "--random 5 --random-seconds 0x10", {"--random-seconds", "'0x10'"}},
      {conform + "--random 5 --random-seconds +1", {"--random-seconds", "'+1'"}},
      {conform + "--timeout 0x10", {"--timeout", "'0x10'"}},
      {conform + "--random 0x10", {"--random: must be a decimal integer", "'0x10'"}},
      {conform + "--random 1_0", {"--random", "'1_0'"}},
      {conform + "--random 5 --seed 0x10", {"--seed", "'0x10'"}},
      {conform + "--shard-index +1 --shard-count 2", {"--shard-index", "'+1'"}},
      {"forward --config " + kV41 + " --weights w.json --input i.json --layer 0x10", {"--layer", "'0x10'"}},
  };
  for (const Case& c : cases) {
    Result r = RunCli(c.args);
    EXPECT_EQ(r.exit_code, 105) << c.args << "\n" << r.err;
    for (const std::string& n : c.needles) EXPECT_THAT(r.err, HasSubstr(n)) << c.args;
    EXPECT_EQ(r.err.find("0.000000"), std::string::npos) << c.args;  // no CLI11 double range text
    EXPECT_EQ(r.err.find("the token map has"), std::string::npos) << c.args;  // no token map was given
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
  // The bounds themselves are accepted.
  Result v_max = RunCli("layout --config " + kDemo + " --compressed-vocab-size 2147483648");
  ASSERT_EQ(v_max.exit_code, 0) << v_max.err;
  EXPECT_EQ(json::parse(v_max.out)["compressed_vocab_size"], 2147483648LL);
  Result w1 = RunCli(lookup + "--world 1 --rank 0");
  EXPECT_EQ(w1.exit_code, 0) << w1.err;
  Result w_max = RunCli(lookup + "--world 4096 --rank 4095");
  EXPECT_EQ(w_max.exit_code, 0) << w_max.err;
  // Values CLI11 accepts but the command refuses: named too (exit 1).
  Result rank = RunCli(lookup + "--world 4 --rank 4");
  EXPECT_EQ(rank.exit_code, 1);
  EXPECT_THAT(rank.err, HasSubstr("--rank 4 is outside [0, 4) (the ranks of --world 4)"));
  Result mismatch = RunCli("layout --config " + kV41 + " --compressed-vocab-size 99093");
  EXPECT_EQ(mismatch.exit_code, 1);
  EXPECT_THAT(mismatch.err, HasSubstr("'engram_compressed_vocab_size': config says 99092 but --compressed-vocab-size is 99093"));
  Result chunk = RunCli("bench hash --tokens 16777216 --chunk 16777216");
  EXPECT_EQ(chunk.exit_code, 1);
  EXPECT_THAT(chunk.err, HasSubstr("--chunk: 16777216 positions x 48 rows x 8 bytes is more than the 1 GiB"));
}

TEST(CliOutput, OutFileIsWrittenWhole) {
  const fs::path dir = TempDir();
  const fs::path target = dir / "layout.json";
  fs::remove(target);
  Result r = RunCli("layout --config " + kV41 + " --compressed-vocab-size 99092 --out " + target.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(Slurp(target))["layers"].size(), 2u);
  // A failing run leaves no file behind.
  const fs::path bad = dir / "never.json";
  fs::remove(bad);
  Result f = RunCli("layout --config " + kV41 + " --compressed-vocab-size 3 --out " + bad.string());
  EXPECT_NE(f.exit_code, 0);
  EXPECT_FALSE(fs::exists(bad));
}

}  // namespace
