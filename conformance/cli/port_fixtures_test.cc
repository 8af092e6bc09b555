// Ports' own fixtures through the `engram` command line:
// explicit layouts, foreign token maps that take V from the configuration,
// hash --rollback, float32 gates and a port's own float32 forward. Each test
// names the public fixture it was built for (repository, path, commit); the
// expected values here are derived independently (by hand or from the spec's
// rules), never copied from the code under test. The float32 forward is
// checked against the fixture's own outputs: those were computed by the
// official code under torch, not by anything here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testutil/run_cli.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HasSubstr;

using Result = engram::testutil::CliResult;
using engram::testutil::kV41;
using engram::testutil::RunCli;
using engram::testutil::Slurp;
using engram::testutil::TempDir;

fs::path Write(const std::string& name, const std::string& text) {
  const fs::path p = TempDir() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// §TOK.5 A test map whose largest compressed id is below the configuration's
// engram_compressed_vocab_size - 1 (as in ports' unit tests, which pick a few
// ids) declares no size: V is the configuration's, not the largest entry + 1.
TEST(PortTokenMap, AMapWithoutASizeTakesVFromTheConfig) {
  const fs::path map = Write("small_map.json", "[0, 1, 2, 3, 3, 5, 6, 7, 97507, 2]");
  Result raw = RunCli("hash --config " + kV41 + " --token-map " + map.string() + " --ids=0,1,2,3,4,5,6,7,8,9");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  Result compressed = RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=0,1,2,3,3,5,6,7,97507,2");
  ASSERT_EQ(compressed.exit_code, 0) << compressed.err;
  EXPECT_EQ(json::parse(raw.out)["rows"], json::parse(compressed.out)["rows"]);
  EXPECT_THAT(raw.err, HasSubstr("V = 99092"));
  EXPECT_THAT(raw.err, HasSubstr("engram_compressed_vocab_size"));
  Result layout = RunCli("layout --config " + kV41 + " --token-map " + map.string());
  ASSERT_EQ(layout.exit_code, 0) << layout.err;
  EXPECT_EQ(json::parse(layout.out)["compressed_vocab_size"], 99092);
}

// §TOK.5 The config's V does not override what the map says about itself: an
// entry at or above it, or a declared "compressed_size" that differs, is refused.
TEST(PortTokenMap, TheConfigsVMustHoldEveryEntryAndADeclaredSizeStillRules) {
  const fs::path big = Write("big_map.json", "[0, 1, 99092]");
  Result r = RunCli("hash --config " + kV41 + " --token-map " + big.string() + " --ids=0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("engram_compressed_vocab_size"));
  EXPECT_THAT(r.err, HasSubstr("99092"));
  EXPECT_TRUE(r.out.empty());
  const fs::path declared = Write("declared_map.json", R"({"map": [0, 1, 2], "compressed_size": 5000})");
  Result d = RunCli("hash --config " + kV41 + " --token-map " + declared.string() + " --ids=0");
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_THAT(d.err, HasSubstr("5000"));
  EXPECT_THAT(d.err, HasSubstr("99092"));
}

// §LAY.6 hashiqiqixian/pypto-serving tests/unit/model/deepseek_v41/test_engram.py
// (commit 7e60373976274c2fe90cb90cb5220bcdcdd95db5), the test of the first
// position's rows: layers [1, 14], max n-gram 3, 2 heads, bucket base 5,
// num_embeddings [36, 88], V = 4, pad 2 and its own multipliers
// [[3, 5, 7], [11, 13, 17]]; primes derived (§LAY.2). By hand for id 0: layer 1
// hashes the window [0, 2, 2], products 0, 10, 14; the 2-gram mix 0 ^ 10 = 10
// gives 10 mod 5 = 0 and 10 mod 7 = 3 (+5); the 3-gram mix 10 ^ 14 = 4 gives
// 4 mod 11 = 4 (+12) and 4 mod 13 = 4 (+23): rows 0, 8, 16, 27. Layer 14: products
// 0, 26, 34; mixes 26 and 26 ^ 34 = 56: 26 mod 17 = 9, 26 mod 19 = 7 (+17),
// 56 mod 23 = 10 (+36), 56 mod 29 = 27 (+59): rows 9, 24, 46, 86.
const char* const kPyptoConfig = R"({
  "engram_layer_ids": [1, 14], "engram_max_ngram_size": 3, "engram_n_heads": 2, "engram_head_dim": 2,
  "engram_vocab_size": 5, "engram_num_embeddings": [36, 88], "engram_pad_id": 2,
  "engram_hash_multipliers": [[3, 5, 7], [11, 13, 17]]})";

TEST(PortExplicitLayout, PyptoFirstPositionRows) {
  const fs::path cfg = Write("pypto.json", kPyptoConfig);
  Result r = RunCli("hash --config " + cfg.string() + " --compressed-vocab-size 4 --ids=0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json d = json::parse(r.out);
  EXPECT_EQ(d["rows"], json::parse("[[[0, 8, 16, 27], [9, 24, 46, 86]]]"));
  // Marked in every output: the JSON document and stderr.
  EXPECT_THAT(d["non_standard"].get<std::string>(), HasSubstr("engram_hash_multipliers"));
  EXPECT_THAT(r.err, HasSubstr("non-standard"));
  Result layout = RunCli("layout --config " + cfg.string() + " --compressed-vocab-size 4");
  ASSERT_EQ(layout.exit_code, 0) << layout.err;
  const json l = json::parse(layout.out);
  EXPECT_THAT(l["non_standard"].get<std::string>(), HasSubstr("§LAY.6"));
  EXPECT_EQ(l["layers"][1]["multipliers"], json::parse("[11, 13, 17]"));
  EXPECT_EQ(l["layers"][1]["primes"], json::parse("[[17, 19], [23, 29]]"));
  Result explain = RunCli("explain --config " + cfg.string() + " --compressed-vocab-size 4 --ids=0 --json");
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_TRUE(json::parse(explain.out).contains("non_standard"));
  // A contract describes the derived layout only.
  const fs::path map = Write("pypto_map.json", "[0, 1, 2, 3]");
  Result contract = RunCli("contract --config " + cfg.string() + " --token-map " + map.string());
  EXPECT_EQ(contract.exit_code, 1);
  EXPECT_THAT(contract.err, HasSubstr("an explicit layout (§LAY.6) is non-standard and has no contract"));
  EXPECT_TRUE(contract.out.empty());
}

// §HASH.6 through `engram hash --rollback`, on pypto-serving's test
// test_rollback_then_divergent_suffix_matches_fresh_history (same file and
// commit as above): feed 0,1,2,3,3,3,3,3, forget 3, feed 0,1,2; the last three
// rows are those of positions 5-7 of the fresh sequence 0,1,2,3,3,0,1,2.
TEST(PortHashRollback, DivergentSuffixMatchesAFreshSequence) {
  const fs::path cfg = Write("pypto_rb.json", kPyptoConfig);
  Result rolled = RunCli("hash --config " + cfg.string() +
                         " --compressed-vocab-size 4 --ids=0,1,2,3,3,3,3,3,0,1,2 --chunks 8,3 --rollback 3,0");
  ASSERT_EQ(rolled.exit_code, 0) << rolled.err;
  Result fresh = RunCli("hash --config " + cfg.string() + " --compressed-vocab-size 4 --ids=0,1,2,3,3,0,1,2");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  const json a = json::parse(rolled.out), b = json::parse(fresh.out);
  ASSERT_EQ(a["rows"].size(), 11u);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(a["rows"][8 + k], b["rows"][5 + k]) << "position " << 5 + k;
  EXPECT_EQ(a["position"], 8);
  EXPECT_EQ(a["rollback"], json::parse("[3, 0]"));
  // The rolled-back positions 5-7 (ids 3, 3, 3) differ from the new ones.
  EXPECT_NE(a["rows"][5], a["rows"][8]);
}

TEST(PortHashRollback, BadRollbacksAreRefusedNamingTheOption) {
  const std::string base = "hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7,9";
  Result count = RunCli(base + " --chunks 2,1 --rollback 1");
  EXPECT_EQ(count.exit_code, 1);
  EXPECT_THAT(count.err, HasSubstr("--rollback: 1 values for 2 chunks"));
  Result negative = RunCli(base + " --rollback=-1");
  EXPECT_EQ(negative.exit_code, 1);
  EXPECT_THAT(negative.err, HasSubstr("--rollback: item 1 is -1"));
  Result past = RunCli(base + " --chunks 2,1 --rollback 3,0");
  EXPECT_EQ(past.exit_code, 1);
  EXPECT_THAT(past.err, HasSubstr("--rollback: item 1 is 3 but only 2 ids were consumed"));
  EXPECT_TRUE(past.out.empty());
}

// §LAY.6 Luce-Org/lucebox server/test/test_ds4_engram.cpp (commit
// 101228759a8f3dfa5da57f56910420bf74fdb69f), hash_matches_reference: layers
// [1, 14], max n-gram 4, 3 heads, explicit multipliers [layer][slot] and primes
// [layer][order][head], the compressed pad 1. Its raw ids go through its map
// raw -> (13 raw + 5) mod 29 + 3 and its pad is the compressed id 1, which no
// raw id maps to, so the ids below are compressed ids (raw 7, 0, 39 -> 12, 8,
// 22) with V = 32 (its largest compressed id is 31). The expected rows of
// position 0 (window 12, 1, 1, 1) were computed by an independent Python
// transcription of §HASH.2-§HASH.4 (int64 products, XOR mixes, floor mod; not
// the reference), and agree with the fixture's.
const char* const kLuceboxConfig = R"({
  "engram_layer_ids": [1, 14], "engram_max_ngram_size": 4, "engram_n_heads": 3, "engram_head_dim": 256,
  "engram_pad_id": 1,
  "engram_hash_multipliers": [[1000000000039, 777777777777777, 123456789012345, 98765432109877],
                              [3, 5555555555555555, 31415926535897, 27182818284591]],
  "engram_primes": [[[1009, 1013, 1019], [1021, 1031, 1033], [1039, 1049, 1051]],
                    [[2003, 2011, 2017], [2027, 2029, 2039], [2053, 2063, 2069]]]})";

TEST(PortExplicitLayout, LuceboxRowsOfTheFirstPositions) {
  const fs::path cfg = Write("lucebox.json", kLuceboxConfig);
  Result r = RunCli("hash --config " + cfg.string() + " --compressed-vocab-size 32 --ids=12,8,22");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json d = json::parse(r.out);
  ASSERT_EQ(d["rows"].size(), 3u);
  EXPECT_EQ(d["rows"][0][0], json::parse("[580, 1570, 2262, 3547, 5047, 6073, 6550, 8177, 9075]"));
  EXPECT_EQ(d["rows"][0][1], json::parse("[277, 3858, 4579, 7162, 9728, 11077, 13805, 14939, 16397]"));
  EXPECT_THAT(d["non_standard"].get<std::string>(), HasSubstr("engram_hash_multipliers and engram_primes"));
  // Without engram_vocab_size the layout takes the stated primes only.
  Result layout = RunCli("layout --config " + cfg.string() + " --compressed-vocab-size 32");
  ASSERT_EQ(layout.exit_code, 0) << layout.err;
  EXPECT_EQ(json::parse(layout.out)["layers"][0]["num_embeddings"], 9265);
  EXPECT_EQ(json::parse(layout.out)["layers"][1]["num_embeddings"], 18311);
}

// §LAY.6 Malformed explicit layouts are refused naming the file, the key path and the value.
TEST(PortExplicitLayout, MalformedLayoutsNameFileKeyAndValue) {
  struct Case {
    std::string patch_key;
    std::string patch_value;
    std::string expect;
  };
  const Case cases[] = {
      {"engram_hash_multipliers", "[[3, 5, 7]]", "key 'engram_hash_multipliers': must be a list of 2 (one per layer"},
      {"engram_hash_multipliers", "[[3, 5, 7], [11, 13]]", "key 'engram_hash_multipliers[1]': must be a list of 3"},
      {"engram_hash_multipliers", "[[3, 5, 7], [11, -13, 17]]",
       "key 'engram_hash_multipliers[1][1]': must be an integer in [0, 2^63), got -13"},
      {"engram_hash_multipliers", "[[3, 5, 7], [11, 1.5, 17]]",
       "key 'engram_hash_multipliers[1][1]': must be an integer in [0, 2^63), got 1.5"},
      {"engram_primes", "[[[5, 7], [11, 13]], [[17, 19], [23, 27]]]",
       "key 'engram_primes[1][1][1]': must be a prime below 2^40, got 27 (not prime)"},
      {"engram_primes", "[[[5, 7], [11, 13]], [[17, 19]]]", "key 'engram_primes[1]': must be a list of 2 (one per n-gram order"},
      {"engram_primes", "[[[5, 7], [11, 13]], [[17, 19], [23, 1099511627791]]]",
       "key 'engram_primes[1][1][1]': must be a prime below 2^40, got 1099511627791"},
  };
  for (const Case& c : cases) {
    json doc = json::parse(kPyptoConfig);
    doc[c.patch_key] = json::parse(c.patch_value);
    const fs::path cfg = Write("bad_layout.json", doc.dump());
    Result r = RunCli("hash --config " + cfg.string() + " --compressed-vocab-size 4 --ids=0");
    EXPECT_EQ(r.exit_code, 1) << c.patch_value;
    EXPECT_THAT(r.err, HasSubstr(cfg.string() + ": " + c.expect)) << c.patch_value;
    EXPECT_TRUE(r.out.empty());
  }
  // §LAY.4 still holds: explicit primes must sum to engram_num_embeddings when stated.
  json doc = json::parse(kPyptoConfig);
  doc["engram_primes"] = json::parse("[[[5, 7], [11, 13]], [[17, 19], [23, 31]]]");
  const fs::path cfg = Write("bad_sum.json", doc.dump());
  Result r = RunCli("layout --config " + cfg.string() + " --compressed-vocab-size 4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("key 'engram_num_embeddings': entry 1 (layer 14) is 88 but the layer's primes sum to 90"));
}

// §CON.6 The hand-off formats of other ports. Each convertible one carries a
// sequence across a split exactly: the rows of the second part, continued from
// the history written in that format, are those of the whole sequence hashed
// at once (§HASH.5 item 2).
TEST(PortHistoryFormats, EveryReadableFormatContinuesASequenceExactly) {
  const std::string base = "hash --config " + kV41 + " --compressed-vocab-size 99092";
  Result whole = RunCli(base + " --ids=5,7,-1,9,11,13,17");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const json all = json::parse(whole.out)["rows"];
  for (const std::string format : {"engram", "tt-metal", "vllm", "pypto"}) {
    const fs::path h = TempDir() / ("handoff_" + format + ".json");
    Result first = RunCli(base + " --ids=5,7,-1,9 --history-format " + format + " --history-out " + h.string());
    ASSERT_EQ(first.exit_code, 0) << format << ": " << first.err;
    Result second = RunCli(base + " --ids=11,13,17 --history-format " + format + " --history-in " + h.string());
    ASSERT_EQ(second.exit_code, 0) << format << ": " << second.err;
    const json rest = json::parse(second.out);
    EXPECT_EQ(rest["position"], 7) << format;
    for (int k = 0; k < 3; ++k) EXPECT_EQ(rest["rows"][k], all[4 + k]) << format << " position " << 4 + k;
  }
}

// §CON.6 What each format holds after 5, 7, DEAD, 9 (max n-gram 4), by hand:
// the last three ids 7, DEAD, 9 at position 4.
TEST(PortHistoryFormats, TheWrittenFormsHoldWhatThePortsHold) {
  const std::string base = "hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7,-1,9";
  auto written = [&](const std::string& format) {
    const fs::path h = TempDir() / ("form_" + format + ".json");
    Result r = RunCli(base + " --history-format " + format + " --history-out " + h.string());
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
    return json::parse(Slurp(h));
  };
  EXPECT_EQ(written("ds4"), json::parse(R"({"tail": [9, -1, 7]})"));
  EXPECT_EQ(written("lucebox"), json::parse(R"({"tail": [9, -1, 7, -1, -1, -1, -1]})"));
  // Position 0 is not in the history: written DEAD (never read again).
  EXPECT_EQ(written("tt-metal"), json::parse(R"({"start_pos": 4, "cache": [-1, 7, -1, 9]})"));
  EXPECT_EQ(written("vllm"),
            json::parse(R"({"position": 4, "lookback_token_ids": [9, -1, 7], "lookback_dead_mask": [false, true, false]})"));
  EXPECT_EQ(written("pypto"), json::parse(R"({"position": 4, "retained_start": 1, "history": [7, -1, 9]})"));
  // Near the start: two ids, the third slot is before the start.
  const fs::path h = TempDir() / "form_start.json";
  ASSERT_EQ(RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=5,7 --history-format vllm "
                   "--history-out " + h.string()).exit_code, 0);
  EXPECT_EQ(json::parse(Slurp(h)),
            json::parse(R"({"position": 2, "lookback_token_ids": [7, 5, -1], "lookback_dead_mask": [false, false, false]})"));
}

// §CON.6 What cannot be converted is refused, naming the file and the reason.
TEST(PortHistoryFormats, UnconvertibleAndMalformedHistoriesAreRefused) {
  const std::string base = "hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=11";
  const fs::path tail = Write("tail.json", R"({"tail": [9, -1, 7]})");
  for (const std::string format : {"ds4", "lucebox"}) {
    Result r = RunCli(base + " --history-format " + format + " --history-in " + tail.string());
    EXPECT_EQ(r.exit_code, 1) << format;
    EXPECT_THAT(r.err, HasSubstr(tail.string() + ": --history-format " + format + " cannot be read: its tail carries no position"));
    EXPECT_TRUE(r.out.empty());
  }
  const fs::path map = Write("hist_map.json", "[0, 1, 2, 3, 3, 5, 6, 7, 99091, 2]");
  Result raw = RunCli("hash --config " + kV41 + " --token-map " + map.string() +
                      " --ids=1 --history-format vllm --history-out " + (TempDir() / "never.json").string());
  EXPECT_EQ(raw.exit_code, 1);
  EXPECT_THAT(raw.err, HasSubstr("lookback_token_ids are raw tokenizer ids"));
  EXPECT_FALSE(fs::exists(TempDir() / "never.json"));
  struct Case {
    std::string format, doc, expect;
  };
  const Case cases[] = {
      {"vllm", R"({"position": 1, "lookback_token_ids": [7, 5, -1]})",
       "key 'lookback_token_ids': entry 1 is 5 but lies before the start of the sequence (position 1)"},
      {"vllm", R"({"position": 4, "lookback_token_ids": [7, 5]})",
       "key 'lookback_token_ids': has 2 ids but position 4 needs the 3 before it"},
      {"vllm", R"({"position": 4, "lookback_token_ids": [7, 5, 3], "lookback_dead_mask": [false]})",
       "key 'lookback_dead_mask': expected 3 booleans"},
      {"tt-metal", R"({"start_pos": 5, "cache": [1, 2, 3]})",
       "key 'cache': has 3 entries but start_pos is 5"},
      {"tt-metal", R"({"start_pos": -1, "cache": []})", "key 'start_pos': expected an integer >= 0, got -1"},
      {"pypto", R"({"position": 9, "retained_start": 2, "history": [1, 2, 3]})",
       "key 'history': has 3 ids but position - retained_start is 7"},
      {"pypto", R"({"position": 4, "retained_start": 2, "history": [1, 2]})",
       "key 'history': retains 2 ids but position 4 needs the 3 before it"},
  };
  for (const Case& c : cases) {
    const fs::path f = Write("bad_hist.json", c.doc);
    Result r = RunCli(base + " --history-format " + c.format + " --history-in " + f.string());
    EXPECT_EQ(r.exit_code, 1) << c.doc;
    EXPECT_THAT(r.err, HasSubstr(f.string() + ": " + c.expect)) << c.doc;
    EXPECT_TRUE(r.out.empty());
  }
  // An id the layout does not have is refused as in any §HASH.9 import.
  const fs::path big = Write("big_hist.json", R"({"start_pos": 1, "cache": [99092]})");
  Result r = RunCli(base + " --history-format tt-metal --history-in " + big.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(big.string()));
  EXPECT_THAT(r.err, HasSubstr("99092"));
  Result unknown = RunCli(base + " --history-format sglang --history-in " + big.string());
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("--history-format"));
  EXPECT_THAT(unknown.err, HasSubstr("sglang"));
  // demo-v1 has no DEAD: the formats are v4.1's.
  Result demo = RunCli("hash --config " + std::string(ENGRAM_SOURCE_DIR) + "/conformance/configs/demo-v1.json "
                       "--compressed-vocab-size 100 --ids=1 --history-format pypto --history-out " +
                       (TempDir() / "demo.json").string());
  EXPECT_EQ(demo.exit_code, 1);
  EXPECT_THAT(demo.err, HasSubstr("v4.1 ports"));
}

// §CON.6 vLLM's lookback holds raw ids: read through the token map, they
// continue the sequence like the compressed ids they map to.
TEST(PortHistoryFormats, VllmRawLookbackGoesThroughTheTokenMap) {
  const fs::path map = Write("vllm_map.json", "[0, 1, 2, 3, 3, 5, 6, 7, 99091, 2]");
  const fs::path h = Write("vllm_raw.json", R"({"position": 3, "lookback_token_ids": [8, 4, 9]})");
  Result viaMap = RunCli("hash --config " + kV41 + " --token-map " + map.string() +
                         " --ids=1 --history-format vllm --history-in " + h.string());
  ASSERT_EQ(viaMap.exit_code, 0) << viaMap.err;
  // raw 9, 4, 8 (oldest first) are compressed 2, 3, 99091.
  Result whole = RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=2,3,99091,1");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(json::parse(viaMap.out)["rows"][0], json::parse(whole.out)["rows"][3]);
}

// §FUS.1 The v4.1 gate computes on bf16 inputs. A port's own float32 inputs
// (e.g. moncho/mlxgo deepseek/testdata/engram.json, commit
// b266eaa4c687cb98d25d55ba54740fe5d4ffbe5a, whose x holds 0.5814064741134644)
// are rounded, and the tool says which and how many: 0.1 is not a bf16
// (nearest 0.10009765625); 1.5, -2, 0.25, 3 and 1 are.
TEST(PortGate, RoundingAFloat32InputToBf16IsReported) {
  const fs::path in = Write("gate_f32.json", R"({"x": [[1.5, -2, 0.1, 3]], "key": [[1, 1, 1, 1]], "value": [9, 9, 9, 0.5814064741134644],
               "qWeight": [[1, 1, 1, 1]], "kWeight": [[1, 1, 1, 1]]})");
  Result r = RunCli("gate --config " + kV41 + " --input " + in.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["rounded_to_bf16"], json::parse(R"({"x": 1, "value": 1})"));
  EXPECT_THAT(r.err, HasSubstr("1 of 4 values of 'x' are not bf16 and were rounded to bf16"));
  EXPECT_THAT(r.err, HasSubstr("x element 2: 0.10000000000000001 -> 0.10009765625"));
  EXPECT_THAT(r.err, HasSubstr("values of 'value'"));
  // bf16 inputs: nothing to say.
  const fs::path exact = Write("gate_bf16.json", R"({"x": [[1.5, -2, 0.25, 3]], "key": [[1, 1, 1, 1]], "value": [9, 9, 9, 9],
               "qWeight": [[1, 1, 1, 1]], "kWeight": [[1, 1, 1, 1]]})");
  Result q = RunCli("gate --config " + kV41 + " --input " + exact.string());
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.err, "");
  EXPECT_EQ(json::parse(q.out)["rounded_to_bf16"], json::object());
}

// §FUS.11 moncho/mlxgo deepseek/testdata/engram.json (commit
// b266eaa4c687cb98d25d55ba54740fe5d4ffbe5a), made by the official Engram class
// with float32 parameters. Its configuration, as its generator
// (deepseek/engram_reference.py) builds it: layers [0, 3, 6], max n-gram 4, 2
// heads, head dim 3, engram_vocab_size 11 (primes 11, 13, ... derived), pad 2, a
// 32-entry token map onto V = 23 (multipliers derived); the forward is layer
// 3's, dim 4, hc_mult 3, norm_eps 1e-5. Its table has 255 rows, three more than
// layer 3's primes sum to (252): the config below leaves engram_num_embeddings
// out (§LAY.4 would refuse 255) and the table's extra rows are never addressed.
const char* const kMlxgoConfig = R"({
  "engram_layer_ids": [0, 3, 6], "engram_max_ngram_size": 4, "engram_n_heads": 2, "engram_head_dim": 3,
  "engram_vocab_size": 11, "engram_pad_id": 2, "engram_compressed_vocab_size": 23,
  "dim": 4, "hc_mult": 3, "norm_eps": 1e-5})";
const char* const kMlxgoTokenMap =
    "[0, 0, 1, 0, 2, 2, 3, 3, 4, 5, 6, 7, 7, 7, 7, 3, 8, 9, 10, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22]";

std::vector<double> Data(const json& tensor) { return tensor.at("data").get<std::vector<double>>(); }

// Checks every element of `got` (a [T][hc][dim] nested array of the fixture) against the
// tool's float64 out within its out_tolerance; returns the largest |y - r| / tolerance.
double CheckOut(const json& doc, const std::vector<double>& fixture, size_t offset, const std::string& what) {
  const json& ref = doc.at("float64").at("out");
  const json& tol = doc.at("out_tolerance");
  double worst = 0;
  size_t k = offset;
  for (size_t t = 0; t < ref.size(); ++t) {
    for (size_t c = 0; c < ref[t].size(); ++c) {
      for (size_t i = 0; i < ref[t][c].size(); ++i, ++k) {
        const double r = ref[t][c][i].get<double>(), a = tol[t][c][i].get<double>();
        const double y = fixture.at(k);
        EXPECT_LE(std::fabs(y - r), a) << what << " position " << t << " stream " << c << " element " << i
                                       << ": fixture " << y << ", reference " << r;
        worst = std::max(worst, std::fabs(y - r) / a);
      }
    }
  }
  return worst;
}

TEST(PortFloat32Forward, MlxgoFixtureOutputsFromItsOwnWeightsAndTokens) {
  const json fx = json::parse(Slurp(fs::path(ENGRAM_SOURCE_DIR) / "conformance/cli/testdata/mlxgo_engram_forward.json"));
  const fs::path cfg = Write("mlxgo.json", kMlxgoConfig);
  const fs::path map = Write("mlxgo_map.json", kMlxgoTokenMap);
  json weights;
  for (const char* key : {"embed.weight", "wkv.weight", "q_weight", "k_weight"}) weights[key] = fx.at(key);
  const fs::path w = Write("mlxgo_weights.json", weights.dump());
  // The fixture's tokens (raw ids) and mask; a masked position is -1 (§HASH.1).
  const std::vector<std::vector<int>> tokens = {{0, 1, 2, 9, 10, 6, 4, 5, 11, 13, 18}, {3, 0, 2, 10, 9, 7, 5, 4, 12, 14, 19}};
  const std::vector<std::vector<int>> mask = {{1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1}, {0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1}};
  const std::vector<double> x = Data(fx.at("x"));
  struct Case {
    std::string name;
    bool masked, zero_x;
  };
  // The fixture's generator hashes the masked token stream once (a masked
  // position cached DEAD, §HASH.1) and feeds those row ids to every forward,
  // masking the gate only for `masked`: here `engram hash` gives them, layer 3's
  // columns, handed to the forward as hash_ids (the official forward's input).
  std::vector<json> hash_ids(2);
  for (size_t b = 0; b < 2; ++b) {
    std::string ids;
    for (size_t t = 0; t < 11; ++t) ids += (t ? "," : "") + std::to_string(mask[b][t] ? tokens[b][t] : -1);
    Result h = RunCli("hash --config " + cfg.string() + " --token-map " + map.string() + " --ids=" + ids);
    ASSERT_EQ(h.exit_code, 0) << h.err;
    const json rows = json::parse(h.out).at("rows");
    for (const json& position : rows) hash_ids[b].push_back(position.at(1));
  }
  double worst = 0;
  for (const Case& c : {Case{"unmasked", false, false}, Case{"masked", true, false}, Case{"zero_output", false, true}}) {
    const std::vector<double> expect = Data(fx.at(c.name));
    for (size_t b = 0; b < 2; ++b) {
      std::vector<double> xb(x.begin() + b * 132, x.begin() + (b + 1) * 132);
      if (c.zero_x) std::fill(xb.begin(), xb.end(), 0.0);
      json in = {{"x", {{"shape", {11, 3, 4}}, {"data", xb}}}, {"hash_ids", hash_ids[b]}};
      if (c.masked) {
        in["mask"] = json::array();
        for (int m : mask[b]) in["mask"].push_back(m != 0);
      }
      const fs::path f = Write("mlxgo_x.json", in.dump());
      Result r = RunCli("forward --float32 --config " + cfg.string() + " --token-map " + map.string() +
                        " --layer 3 --weights " + w.string() + " --input " + f.string());
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const json doc = json::parse(r.out);
      ASSERT_EQ(doc.at("float64").at("out").size(), 11u);
      EXPECT_EQ(doc.at("rounded_to_float32"), json::object()) << "the fixture's values are float32 values";
      worst = std::max(worst, CheckOut(doc, expect, b * 132, c.name + " sequence " + std::to_string(b)));
      if (c.masked) {
        // The same run from the ids: -1 both hashes as DEAD and shuts the gate.
        std::string ids;
        for (size_t t = 0; t < 11; ++t) ids += (t ? "," : "") + std::to_string(mask[b][t] ? tokens[b][t] : -1);
        in.erase("hash_ids");
        in.erase("mask");
        const fs::path g = Write("mlxgo_x_ids.json", in.dump());
        Result byIds = RunCli("forward --float32 --config " + cfg.string() + " --token-map " + map.string() +
                              " --layer 3 --weights " + w.string() + " --input " + g.string() + " --ids=" + ids);
        ASSERT_EQ(byIds.exit_code, 0) << byIds.err;
        EXPECT_EQ(json::parse(byIds.out).at("float32"), doc.at("float32"));
        EXPECT_EQ(json::parse(byIds.out).at("rows"), doc.at("rows"));
      }
    }
  }
  std::cout << "largest |fixture - reference| / tolerance: " << worst << "\n";
}

// §FUS.11 The fixture's edge case (same file and commit): dim 2, one stream, one
// row of width 1 holding 1, wkv [[1], [0], [2], [-1]] (key [1, 0], value [2, -1]),
// q/k weights 1, x = [v, 1] for v = -1, -1e-7 (float32), -0, +0, 1e-7, 1: the
// sign of a dot below the clamp survives (sigmoid(-0.001) at -1e-7) and +-0 take
// the positive branch (the dot's sum is +0 either way). The hash ids are given
// (all row 0), as the official forward takes them. Expected: the fixture's edge_output.
TEST(PortFloat32Forward, MlxgoEdgeCaseOfTheSignedRootFloor) {
  const fs::path cfg = Write("edge.json", R"({"engram_layer_ids": [0], "engram_max_ngram_size": 2, "engram_n_heads": 1,
      "engram_head_dim": 1, "engram_vocab_size": 2, "engram_pad_id": 0, "dim": 2, "hc_mult": 1, "norm_eps": 1e-5})");
  const fs::path w = Write("edge_w.json", R"({"embed.weight": [[1.0]], "wkv.weight": [[1.0], [0.0], [2.0], [-1.0]],
      "q_weight": [[1.0, 1.0]], "k_weight": [[1.0, 1.0]]})");
  const fs::path in = Write("edge_x.json", R"({"x": [[[-1.0, 1.0]], [[-1.0000000116860974e-07, 1.0]], [[-0.0, 1.0]],
      [[0.0, 1.0]], [[1.0000000116860974e-07, 1.0]], [[1.0, 1.0]]], "hash_ids": [[0], [0], [0], [0], [0], [0]]})");
  Result r = RunCli("forward --float32 --config " + cfg.string() + " --compressed-vocab-size 1 --weights " + w.string() +
                    " --input " + in.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  const std::vector<double> edge_output = {-0.46211421489715576, 0.7310571074485779, 0.9994999170303345, 0.500249981880188,
                                           1.000499963760376,    0.499750018119812,  1.000499963760376,  0.499750018119812,
                                           1.0005000829696655,   0.499750018119812,  2.462114095687866,  0.2689429521560669};
  CheckOut(doc, edge_output, 0, "edge");
  // The gate's branch by hand: sigmoid(-0.001) for -1e-7, sigmoid(+0.001) for both zeros.
  EXPECT_LT(doc["float32"]["gate"][1][0].get<double>(), 0.5);
  EXPECT_GT(doc["float32"]["gate"][2][0].get<double>(), 0.5);
  EXPECT_EQ(doc["float32"]["gate"][2][0], doc["float32"]["gate"][3][0]);
}

// §FUS.11 No silent precision change: a value that is not a float32 is rounded
// and reported (0.1 -> 0.100000001490116...); the mode is asked for by name;
// a row id outside the table is refused naming the position and column.
TEST(PortFloat32Forward, RoundingIsReportedAndBadInputsAreRefused) {
  const fs::path cfg = Write("edge2.json", R"({"engram_layer_ids": [0], "engram_max_ngram_size": 2, "engram_n_heads": 1,
      "engram_head_dim": 1, "engram_vocab_size": 2, "engram_pad_id": 0, "dim": 2, "hc_mult": 1, "norm_eps": 1e-5})");
  const fs::path w = Write("edge2_w.json", R"({"embed.weight": [[1.0], [0.1]], "wkv.weight": [[1.0], [0.0], [2.0], [-1.0]],
      "q_weight": [[1.0, 1.0]], "k_weight": [[1.0, 1.0]]})");
  const fs::path in = Write("edge2_x.json", R"({"x": [[[0.5, 1.0]]], "hash_ids": [[1]]})");
  const std::string base = "forward --config " + cfg.string() + " --compressed-vocab-size 1 --weights " + w.string();
  Result r = RunCli(base + " --float32 --input " + in.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["rounded_to_float32"], json::parse(R"({"embed.weight": 1})"));
  EXPECT_THAT(r.err, HasSubstr("1 of 2 values of 'embed.weight' are not float32 values and were rounded to float32"));
  EXPECT_THAT(r.err, HasSubstr("embed.weight element 1: 0.10000000000000001 -> 0.10000000149011612"));
  Result no_mode = RunCli(base + " --input " + in.string());
  EXPECT_NE(no_mode.exit_code, 0);
  EXPECT_THAT(no_mode.err, HasSubstr("--float32"));
  EXPECT_TRUE(no_mode.out.empty());
  const fs::path far = Write("edge2_far.json", R"({"x": [[[0.5, 1.0]]], "hash_ids": [[2]]})");
  Result outside = RunCli(base + " --float32 --input " + far.string());
  EXPECT_EQ(outside.exit_code, 1);
  EXPECT_THAT(outside.err, HasSubstr("position 0 column 0: row id 2 is outside embed.weight's 2 rows"));
  EXPECT_TRUE(outside.out.empty());
  const fs::path shape = Write("edge2_shape.json", R"({"x": [[[0.5, 1.0, 2.0]]], "hash_ids": [[0]]})");
  Result bad = RunCli(base + " --float32 --input " + shape.string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr(shape.string() + ": x[0][0] must be an array of 2 entries, got 3 entries"));
}

}  // namespace
