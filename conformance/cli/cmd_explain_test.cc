// `engram explain` (cmd_explain.cc, docs/walkthrough.md).
// End-to-end through the command line: outputs, error messages and exit codes.
// Expected values are published figures or laws, never values copied from the code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "base/hex.h"
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

// `engram explain` (docs/walkthrough.md): the same numbers as `engram hash` and
// `engram lookup`, every intermediate present, the published V4.1 layout.
TEST(CliExplain, JsonAgreesWithHashAndThePublishedLayout) {
  Result e = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7,-1,9 --json");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  json d = json::parse(e.out);
  EXPECT_EQ(d["layers"][0]["multipliers"],
            json({76632096046245LL, 4839876093313LL, 35959672319349LL, 73987337458391LL}));  // spec/random.md §RNG.4
  EXPECT_EQ(d["layers"][1]["num_embeddings"], 384016682);
  ASSERT_EQ(d["positions"].size(), 4u);
  Result h = RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7,-1,9");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  json rows = json::parse(h.out)["rows"];
  for (size_t p = 0; p < 4; ++p) {
    for (size_t l = 0; l < 2; ++l) {
      const json& lj = d["positions"][p]["layers"][l];
      EXPECT_EQ(lj["rows"], rows[p][l]) << p << " " << l;
      ASSERT_EQ(lj["mixes"].size(), 3u);
      ASSERT_EQ(lj["residues"].size(), 24u);
      for (size_t c = 0; c < 24; ++c) {  // §HASH.4 row = residue + offset
        EXPECT_EQ(lj["rows"][c].get<int64_t>(),
                  lj["residues"][c].get<int64_t>() + d["layers"][l]["offsets"][c].get<int64_t>());
      }
    }
  }
  // §HASH.2: position 2 is DEAD: every slot blocked, every token the compressed pad (2).
  EXPECT_EQ(d["positions"][2]["blocked"], json({1, 1, 1, 1}));
  EXPECT_EQ(d["positions"][2]["tokens"], json({2, 2, 2, 2}));
  // position 3 sees itself only: the DEAD id blocks look-back.
  EXPECT_EQ(d["positions"][3]["blocked"], json({0, 1, 1, 1}));
  EXPECT_TRUE(d["positions"][0]["raw_id"].is_null());  // ids were compressed ids
}

TEST(CliExplain, TableHasEveryPositionAndColumn) {
  Result e = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7,9 --positions 1");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_THAT(e.out, HasSubstr("profile v4.1, V = 99092"));
  EXPECT_THAT(e.out, HasSubstr("[76632096046245, 4839876093313, 35959672319349, 73987337458391]"));
  EXPECT_THAT(e.out, HasSubstr("position 1"));
  EXPECT_EQ(e.out.find("position 0"), std::string::npos);  // only the positions asked for in detail
  // 24 column lines per layer: the last column of each layer is order 4, head 7 with its prime.
  EXPECT_THAT(e.out, HasSubstr("  23  4     7    16000463"));  // layer 1's last prime (spec/layout.md §LAY.4)
  EXPECT_THAT(e.out, HasSubstr("  23  4     7    16000889"));  // layer 14's last prime
}

TEST(CliExplain, SyntheticRowsMatchLookupAndGatesAreGates) {
  Result e = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,-1,7 --json "
                    "--synthetic-table 7 --preview 4");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  json d = json::parse(e.out);
  const json& l1 = d["positions"][0]["layers"][0];
  ASSERT_EQ(l1["row_preview"].size(), 24u);
  ASSERT_EQ(l1["row_preview"][0].size(), 4u);
  // Layer 1's table is the synthetic table of seed 7 + layer id 1: `engram lookup` decodes the same row.
  const int64_t row = l1["rows"][0].get<int64_t>();
  Result lk = RunCli("lookup --config " + kV41 + " --synthetic 8 --rows " + std::to_string(row));
  ASSERT_EQ(lk.exit_code, 0) << lk.err;
  json values = json::parse(lk.out)["lookups"][0]["values"];
  for (size_t j = 0; j < 4; ++j) EXPECT_EQ(l1["row_preview"][0][j], values[j]) << j;
  for (size_t p : {0, 2}) {
    ASSERT_EQ(d["positions"][p]["layers"][1]["gates"].size(), 4u);  // hc_mult 4 streams
    for (const json& g : d["positions"][p]["layers"][1]["gates"]) {
      EXPECT_GT(g.get<double>(), 0.0);
      EXPECT_LT(g.get<double>(), 1.0);
    }
  }
  // §FUS: gate 0 at a masked position.
  EXPECT_EQ(d["positions"][1]["layers"][0]["gates"], json({0.0, 0.0, 0.0, 0.0}));
  // demo-v1: negative ids pass through; float32 table rows and demo gates.
  Result demo = RunCli("explain --config " + kDemo + " --compressed-vocab-size 1000 --ids=5,-7,9 --json "
                       "--synthetic-table 3");
  ASSERT_EQ(demo.exit_code, 0) << demo.err;
  json dd = json::parse(demo.out);
  EXPECT_EQ(dd["positions"][1]["compressed_id"], -7);
  EXPECT_EQ(dd["positions"][2]["blocked"], json({0, 0, 0}));  // §HASH.2 demo: a negative id does not block
  EXPECT_EQ(dd["positions"][2]["tokens"], json({9, -7, 5}));
  EXPECT_EQ(dd["positions"][2]["layers"][0]["gates"].size(), 4u);
}

// The terms docs/figures/explain_figures.py draws (docs/walkthrough.md): the product of each
// slot, the bucket bases, the bytes of a decoded row and the steps of each gate. Expected
// values are recomputed here from the spec's formulas and the published constants, not read
// back from the code under test.
uint64_t ProductMod64(int64_t tok, int64_t m) {  // §HASH.3 in 128-bit arithmetic, reduced mod 2^64
  const __int128 p = static_cast<__int128>(tok) * static_cast<__int128>(m);
  const __int128 mod = static_cast<__int128>(1) << 64;
  return static_cast<uint64_t>(((p % mod) + mod) % mod);
}

double E4M3Value(uint8_t c) {  // §STO.1: normal (8+m)·2^(e−10), subnormal m·2^−9 (no NaN here)
  const int e = (c >> 3) & 0xF, m = c & 7;
  const double v = e ? std::ldexp(8 + m, e - 10) : std::ldexp(m, -9);
  return (c & 0x80) ? -v : v;
}

uint64_t Bf16Bits(double v) {  // a finite bf16-exact value: the top 16 bits of its float32
  const float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u >> 16;
}

TEST(CliExplain, ProductsBasesRowBytesAndGateStepsForTheFigures) {
  Result e = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7,-1,9 --json "
                    "--synthetic-table 7 --preview 3");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  json d = json::parse(e.out);
  EXPECT_EQ(d["bases"], json({16000000, 16000000, 16000000}));  // engram_vocab_size, one per order 2..4
  // Layer 1's multipliers (spec/random.md §RNG.4 example).
  const int64_t m1[4] = {76632096046245LL, 4839876093313LL, 35959672319349LL, 73987337458391LL};
  // Position 1 reads [7, 5, pad, pad]: 7·m0 and 5·m1 by hand, pad (2) in the blocked slots.
  const json& p1 = d["positions"][1]["layers"][0];
  EXPECT_EQ(p1["products"][0].get<uint64_t>(), 536424672323715ULL);  // 7 · 76632096046245
  EXPECT_EQ(p1["products"][1].get<uint64_t>(), 24199380466565ULL);   // 5 · 4839876093313
  EXPECT_EQ(p1["products"][3].get<uint64_t>(), 147974674916782ULL);  // 2 · 73987337458391
  for (size_t p = 0; p < 4; ++p) {
    const json& pos = d["positions"][p];
    for (size_t l = 0; l < 2; ++l) {
      const json& lj = pos["layers"][l];
      ASSERT_EQ(lj["products"].size(), 4u);
      uint64_t rolling = 0;
      for (size_t s = 0; s < 4; ++s) {
        const int64_t tok = pos["tokens"][s].get<int64_t>();
        const int64_t m = l == 0 ? m1[s] : d["layers"][l]["multipliers"][s].get<int64_t>();
        const uint64_t want = ProductMod64(tok, m);
        EXPECT_EQ(static_cast<uint64_t>(lj["products"][s].get<int64_t>()), want) << p << " " << l << " " << s;
        EXPECT_LT(want, 1ULL << 63);  // §HASH.7 nothing wraps in v4.1
        rolling ^= want;
        // §HASH.3 the n-gram mix is the XOR of the first n products.
        if (s >= 1) EXPECT_EQ(static_cast<uint64_t>(lj["mixes"][s - 1].get<int64_t>()), rolling) << p << " " << s;
      }
    }
  }
  // §STO.3 the row's bytes: the same codes and scales `engram lookup` reads from that row of the
  // synthetic table (seed 7 + layer 1), their values by the E4M3/E8M0 formulas, the bf16 product.
  const json& l1 = d["positions"][0]["layers"][0];
  ASSERT_EQ(l1["row_decode"].size(), 24u);
  for (size_t c : {0, 23}) {
    const json& rd = l1["row_decode"][c];
    const int64_t row = l1["rows"][c].get<int64_t>();
    Result lk = RunCli("lookup --config " + kV41 + " --synthetic 8 --rows " + std::to_string(row));
    ASSERT_EQ(lk.exit_code, 0) << lk.err;
    const json got = json::parse(lk.out)["lookups"][0];
    const std::string codes = got["codes"], scales = got["scales"];
    ASSERT_EQ(rd["codes"].size(), 3u);
    for (size_t j = 0; j < 3; ++j) {
      const uint8_t code = static_cast<uint8_t>(engram::BytesOfHex(codes.substr(2 * j, 2)).value().at(0));
      const uint8_t scale = static_cast<uint8_t>(engram::BytesOfHex(scales.substr(0, 2)).value().at(0));  // block 0
      EXPECT_EQ(rd["codes"][j], code) << c << " " << j;
      EXPECT_EQ(rd["scales"][j], scale) << c << " " << j;
      EXPECT_EQ(rd["e4m3"][j].get<double>(), E4M3Value(code)) << c << " " << j;
      EXPECT_EQ(rd["e8m0"][j].get<double>(), std::ldexp(1.0, scale - 127)) << c << " " << j;
      const double product = E4M3Value(code) * std::ldexp(1.0, scale - 127);
      EXPECT_EQ(l1["row_preview"][c][j].get<double>(), product);  // 3 mantissa bits: exact in bf16
      EXPECT_EQ(rd["bf16"][j].get<uint64_t>(), Bf16Bits(product));
      const uint16_t bits = static_cast<uint16_t>(Bf16Bits(product));
      EXPECT_EQ(got["bf16"][j], json("0x" + engram::HexOfU16(std::span(&bits, 1))));
    }
  }
  // §FUS.3/§FUS.4 each step of the v4.1 gate from the one before (eps 1e-20, width 16).
  for (size_t p : {0, 3}) {
    for (size_t c = 0; c < 4; ++c) {
      const json& g = d["positions"][p]["layers"][1]["gate_steps"][c];
      const double dot = g["dot"].get<double>();
      EXPECT_NEAR(g["rstd_h"].get<double>(), 1 / std::sqrt(g["mean_h2"].get<double>() + 1e-20),
                  1e-15 * g["rstd_h"].get<double>());
      EXPECT_NEAR(g["rstd"].get<double>(), g["rstd_h"].get<double>() * g["rstd_k"].get<double>(),
                  1e-15 * g["rstd"].get<double>());
      EXPECT_NEAR(dot, g["sum_hwk"].get<double>() * g["rstd"].get<double>() / 4.0, 1e-14 * std::fabs(dot));
      EXPECT_EQ(g["clamped"].get<double>(), std::max(std::fabs(dot), 1e-6));
      EXPECT_EQ(g["root"].get<double>(), std::sqrt(g["clamped"].get<double>()));
      EXPECT_EQ(g["signed_root"].get<double>(), std::copysign(g["root"].get<double>(), dot));
      EXPECT_NEAR(g["sigmoid"].get<double>(), 1 / (1 + std::exp(-g["signed_root"].get<double>())), 1e-15);
      EXPECT_EQ(g["gate"], g["sigmoid"]);
      EXPECT_EQ(g["masked"], false);
      EXPECT_EQ(g["gate"], d["positions"][p]["layers"][1]["gates"][c]);
    }
  }
  const json& masked = d["positions"][2]["layers"][0]["gate_steps"][0];  // §FUS: the DEAD position
  EXPECT_EQ(masked["masked"], true);
  EXPECT_EQ(masked["gate"].get<double>(), 0.0);

  // demo-v1: per-order bases, a negative id's product wraps mod 2^64, the demo gate's steps.
  Result demo = RunCli("explain --config " + kDemo + " --compressed-vocab-size 1000 --ids=5,-7,9 --json "
                       "--synthetic-table 3");
  ASSERT_EQ(demo.exit_code, 0) << demo.err;
  json dd = json::parse(demo.out);
  EXPECT_EQ(dd["bases"], json({646400, 646400}));  // the demo's engram_vocab_size list
  const json& q = dd["positions"][2];  // tokens [9, -7, 5]
  for (size_t l = 0; l < 2; ++l) {
    uint64_t rolling = 0;
    for (size_t s = 0; s < 3; ++s) {
      const uint64_t want = ProductMod64(q["tokens"][s].get<int64_t>(), dd["layers"][l]["multipliers"][s].get<int64_t>());
      EXPECT_EQ(static_cast<uint64_t>(q["layers"][l]["products"][s].get<int64_t>()), want) << l << " " << s;
      rolling ^= want;
      if (s >= 1) EXPECT_EQ(static_cast<uint64_t>(q["layers"][l]["mixes"][s - 1].get<int64_t>()), rolling);
    }
    EXPECT_GE(static_cast<uint64_t>(q["layers"][l]["products"][1].get<int64_t>()), 1ULL << 63);  // −7·m wraps
    EXPECT_FALSE(q["layers"][l].contains("row_decode"));  // float32 tables: nothing to decode
    for (const json& g : q["layers"][l]["gate_steps"]) {  // §FUS.6, hidden width 16
      EXPECT_NEAR(g["g"].get<double>(), g["sum"].get<double>() / 4.0, 1e-15 * std::fabs(g["g"].get<double>()));
      const double gv = g["g"].get<double>();
      EXPECT_EQ(g["clamped"].get<double>(), std::max(std::fabs(gv), 1e-6));
      EXPECT_EQ(g["signed_root"].get<double>(), std::sqrt(g["clamped"].get<double>()) * ((gv > 0) - (gv < 0)));
      EXPECT_NEAR(g["gate"].get<double>(), 1 / (1 + std::exp(-g["signed_root"].get<double>())), 1e-15);
    }
  }
  // The text table prints the products too (one line per layer of a detailed position).
  Result txt = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7 --positions 1");
  ASSERT_EQ(txt.exit_code, 0) << txt.err;
  EXPECT_THAT(txt.out, HasSubstr("layer 1  products:  tok_0*m0 536424672323715  tok_1*m1 24199380466565"));
}

TEST(CliExplain, BadInputsAreRefused) {
  Result a = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7 --positions 2");
  EXPECT_NE(a.exit_code, 0);
  EXPECT_THAT(a.err, HasSubstr("--positions: position 2 is outside the 2 ids"));
  Result b = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,-2");
  EXPECT_NE(b.exit_code, 0);
  EXPECT_THAT(b.err, HasSubstr("-2"));  // §HASH.1: names the position and the value
  Result c = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,x7");
  EXPECT_NE(c.exit_code, 0);
  EXPECT_THAT(c.err, HasSubstr("--ids: item 2 of 2 is 'x7': not a decimal 64-bit integer"));
  Result d = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=5 --synthetic-table 1 "
                    "--synthetic-dim 0");
  EXPECT_NE(d.exit_code, 0);
  EXPECT_EQ(d.exit_code, 105);  // a CLI11 validation error
  EXPECT_THAT(d.err, HasSubstr("--synthetic-dim: must be a decimal integer in [1, 4096]"));
  EXPECT_THAT(d.err, HasSubstr("got '0'"));
  const fs::path out = TempDir() / "explain_never.txt";
  fs::remove(out);
  Result e = RunCli("explain --config " + kV41 + " --compressed-vocab-size 99092 --ids=99092 --out " + out.string());
  EXPECT_NE(e.exit_code, 0);
  EXPECT_THAT(e.err, HasSubstr("99092"));
  EXPECT_FALSE(fs::exists(out));  // no partial output
}

}  // namespace
