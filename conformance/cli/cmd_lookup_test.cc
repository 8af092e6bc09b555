// `engram lookup` (cmd_lookup.cc, §STO): packed, safetensors and synthetic
// tables, tensor-parallel ranks, refusals.
// End-to-end through the command line: outputs, error messages and exit codes.
// Expected values are published figures or laws, never values copied from the code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
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

// A packed v4.1 table (256 codes + 8 scales per row) of three rows:
// row 0: codes 0x3A (1.25: e=7, m=2), scales 129 (2^2) -> 5.0 = bf16 0x40a0 (hand-derived);
// row 1: codes 0x80 (-0), scales 127 -> -0 = 0x8000;  row 2: codes 0x7F (NaN), scales 127.
fs::path PackedTable(const fs::path& dir) {
  std::string bytes;
  bytes += std::string(256, '\x3a') + std::string(8, '\x81');
  bytes += std::string(256, '\x80') + std::string(8, '\x7f');
  bytes += std::string(256, '\x7f') + std::string(8, '\x7f');
  Write(dir / "table.packed", bytes);
  return dir / "table.packed";
}

TEST(CliLookup, PackedRowsDecodeByHand) {
  const fs::path table = PackedTable(TempDir());
  Result r = RunCli("lookup --config " + kV41 + " --packed " + table.string() + " --rows 0,1,2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  ASSERT_EQ(d["lookups"].size(), 3u);
  EXPECT_EQ(d["table"]["rows"], 3);
  EXPECT_EQ(d["lookups"][0]["bf16"][0], "0x40a0");
  EXPECT_EQ(d["lookups"][0]["values"][255], 5.0);
  EXPECT_EQ(d["lookups"][0]["scales"], "8181818181818181");
  EXPECT_EQ(d["lookups"][1]["bf16"][7], "0x8000");
  EXPECT_TRUE(std::signbit(d["lookups"][1]["values"][7].get<double>()));  // printed as -0.0
  EXPECT_EQ(d["lookups"][2]["bf16"][0], "0x7fc0");
  EXPECT_EQ(d["lookups"][2]["values"][0], "NaN");
}

TEST(CliLookup, AllReduceTurnsNegativeZeroPositive) {
  const fs::path table = PackedTable(TempDir());
  // 3 rows over 2 ranks: part 2, row 1 belongs to rank 0, row 2 to rank 1 (local row 0).
  Result r = RunCli("lookup --config " + kV41 + " --packed " + table.string() + " --rows 1,2 --world 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["tp"]["part"], 2);
  EXPECT_EQ(d["lookups"][0]["bf16"][0], "0x0000");  // -0 + +0 = +0
  EXPECT_EQ(d["lookups"][1]["owner_rank"], 1);
  EXPECT_EQ(d["lookups"][1]["local_row"], 0);
  Result one = RunCli("lookup --config " + kV41 + " --packed " + table.string() + " --rows 1 --world 2 --rank 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(json::parse(one.out)["lookups"][0]["bf16"][0], "0x0000");  // masked on rank 1
  Result w1 = RunCli("lookup --config " + kV41 + " --packed " + table.string() + " --rows 1 --world 1");
  EXPECT_EQ(json::parse(w1.out)["lookups"][0]["bf16"][0], "0x8000");  // no all_reduce at world 1
}

TEST(CliLookup, IdsAreHashedIntoTheLayersRows) {
  // 2 positions x 24 columns of layer 14; every row id within the layer's table.
  Result r = RunCli("lookup --config " + kV41 + " --synthetic 7 --ids 5,7 --layer 14");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["layer"], 14);
  EXPECT_EQ(d["table"]["rows"], 384016682);  // engram_num_embeddings[1]
  ASSERT_EQ(d["lookups"].size(), 48u);
  Result h = RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(d["lookups"][47]["row"], json::parse(h.out)["rows"][1][1][23]);
}

TEST(CliLookup, BadInputsAreRefused) {
  const fs::path dir = TempDir();
  const fs::path table = PackedTable(dir);
  Result out_of_range = RunCli("lookup --config " + kV41 + " --packed " + table.string() + " --rows 3");
  EXPECT_NE(out_of_range.exit_code, 0);
  EXPECT_THAT(out_of_range.err, HasSubstr("row id #0 is 3, outside [0, 3)"));
  Write(dir / "short.packed", std::string(300, '\0'));
  Result bad_size = RunCli("lookup --config " + kV41 + " --packed " + (dir / "short.packed").string() + " --rows 0");
  EXPECT_NE(bad_size.exit_code, 0);
  EXPECT_THAT(bad_size.err, HasSubstr("size 300 is not a multiple of the 264-byte row"));
  // The hashed ids address a 384-M-row table: a 3-row file is the wrong table.
  Result mismatch = RunCli("lookup --config " + kV41 + " --packed " + table.string() + " --ids 5");
  EXPECT_NE(mismatch.exit_code, 0);
  EXPECT_THAT(mismatch.err, HasSubstr("the table has 3 rows but layer 1 hashes into 384006168"));
  Write(dir / "bad.safetensors", std::string("\x02\x00\x00\x00\x00\x00\x00\x00{}", 10));
  Result missing = RunCli("lookup --config " + kV41 + " --table " + (dir / "bad.safetensors").string() + " --rows 0");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("tensor 'layers.1.engram.embed.weight' not found"));
  Result both = RunCli("lookup --config " + kV41 + " --synthetic 1 --packed " + table.string() + " --rows 0");
  EXPECT_NE(both.exit_code, 0);
  Result demo_tp = RunCli("lookup --config " + kDemo + " --compressed-vocab-size 129280 --synthetic 1 --rows 0 --world 2");
  EXPECT_NE(demo_tp.exit_code, 0);
  EXPECT_THAT(demo_tp.err, HasSubstr("demo-v1 defines no tensor-parallel sharding"));
}

// Found by fuzz_safetensors: a header number out of range escaped as a JSON
// exception; it is an error naming the file.
TEST(CliLookup, SafetensorsHeaderNumberOutOfRange) {
  const fs::path f = TempDir() / "bad.safetensors";
  const std::string header = "{\"embed.weight\": {\"dtype\": \"F8_E4M3\", \"shape\": [1e999, 256], \"data_offsets\": [0, 0]}}";
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
  Write(f, bytes + header);
  Result r = RunCli("lookup --config " + kV41 + " --table " + f.string() + " --rows 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr(f.string()));
  EXPECT_THAT(r.err, HasSubstr("header: malformed JSON"));
}

}  // namespace
