// `engram layout` and `engram hash` (cmd_layout_hash.cc): the published V4.1
// layout, token maps, chunking and the history hand-off (§LAY, §HASH, §TOK.5).
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

TEST(CliLayout, PublishedV41Figures) {
  // §LAY.4 / §RNG.4: the figures DeepSeek's config and code publish.
  Result r = RunCli("layout --config " + kV41 + " --compressed-vocab-size 99092");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["profile"], "v4.1");
  ASSERT_EQ(d["layers"].size(), 2u);
  EXPECT_EQ(d["layers"][0]["num_embeddings"], 384006168);
  EXPECT_EQ(d["layers"][1]["num_embeddings"], 384016682);
  EXPECT_EQ(d["layers"][0]["multipliers"],
            json({76632096046245LL, 4839876093313LL, 35959672319349LL, 73987337458391LL}));
  EXPECT_EQ(d["layers"][1]["multipliers"],
            json({67716810739261LL, 51510806800915LL, 30921347202721LL, 82619226485591LL}));
  EXPECT_EQ(d["layers"][0]["primes"][0][0], 16000057);
  EXPECT_EQ(d["layers"][1]["primes"][2][7], 16000889);
}

TEST(CliLayout, TokenMapGivesV) {
  const fs::path map = TempDir() / "map.json";
  Write(map, "{\"map\": [0, 1, 2, 1, 3]}");
  Result r = RunCli("layout --config " + kDemo + " --token-map " + map.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["compressed_vocab_size"], 4);
  EXPECT_EQ(d["pad"]["compressed"], 2);
}

TEST(CliLayout, RefusesV41SizeMismatch) {
  Result r = RunCli("layout --config " + kV41 + " --compressed-vocab-size 99091");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("engram_compressed_vocab_size"));
  EXPECT_THAT(r.err, HasSubstr("99091"));
  EXPECT_TRUE(r.out.empty());
}

TEST(CliHash, ChunksDoNotChangeRows) {
  // §HASH.5 chunking invariance, through the command line.
  const std::string ids = "5,7,-1,9,11,13,-1,-1,17,19";
  Result one = RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=" + ids);
  Result chunked = RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=" + ids + " --chunks 2,1,0,3,1,3");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(chunked.exit_code, 0) << chunked.err;
  json a = json::parse(one.out), b = json::parse(chunked.out);
  EXPECT_EQ(a["rows"], b["rows"]);
  ASSERT_EQ(a["rows"].size(), 10u);
  ASSERT_EQ(a["rows"][0].size(), 2u);
  ASSERT_EQ(a["rows"][0][0].size(), 24u);
  // §HASH.2 a DEAD current token hashes like the all-pad window, and so
  // does a position whose whole window is blocked: positions 2 and 6 agree.
  EXPECT_EQ(a["rows"][2], a["rows"][6]);
}

// §TOK.5 A llama.cpp fork's test map: raw 3 and 4 share compressed 3, and
// raw 8 is the compressed id 99091 (not first-seen, not dense). Any function
// into [0, V) hashes: through the map the rows are those of the compressed ids,
// and the tools say the map is not tokenizer-built and which V they take.
TEST(CliHash, AForeignTokenMapHashesLikeItsCompressedIds) {
  const fs::path map = TempDir() / "fork_map.json";
  Write(map, "[0, 1, 2, 3, 3, 5, 6, 7, 99091, 2]");
  Result raw = RunCli("hash --config " + kV41 + " --token-map " + map.string() + " --ids=0,1,2,3,4,5,6,7,8,9");
  Result compressed = RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=0,1,2,3,3,5,6,7,99091,2");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  ASSERT_EQ(compressed.exit_code, 0) << compressed.err;
  EXPECT_EQ(json::parse(raw.out)["rows"], json::parse(compressed.out)["rows"]);
  EXPECT_THAT(raw.err, HasSubstr("note: " + map.string() + " is not a tokenizer-built map (entry 5 is 5 where a built map "
                                 "would give 4"));
  EXPECT_THAT(raw.err, HasSubstr("V = 99092"));
  EXPECT_EQ(compressed.err, "");
  // explain, lookup and contract take it too.
  Result explain = RunCli("explain --config " + kV41 + " --token-map " + map.string() + " --ids 3,4 --json");
  EXPECT_EQ(explain.exit_code, 0) << explain.err;
  Result layout = RunCli("layout --config " + kV41 + " --token-map " + map.string());
  EXPECT_EQ(layout.exit_code, 0) << layout.err;
  const fs::path contract = TempDir() / "fork_contract.json";
  Result c = RunCli("contract --config " + kV41 + " --token-map " + map.string() + " --out " + contract.string());
  EXPECT_EQ(c.exit_code, 0) << c.err;
  Result verify = RunCli("contract verify " + contract.string() + " --config " + kV41 + " --token-map " + map.string());
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
}

// §TOK.5 A map that says it was built (it carries "sha256") is held to it.
TEST(CliHash, ABuiltMapIsHeldToItsDigest) {
  const fs::path dir = TempDir();
  Write(dir / "tok.json", R"({"added_tokens": [], "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0, "A": 1, "b": 2}, "merges": []}})");
  Result built = RunCli("token-map --tokenizer " + (dir / "tok.json").string() + " --out " + (dir / "built.json").string());
  ASSERT_EQ(built.exit_code, 0) << built.err;
  Result ok = RunCli("hash --config " + kDemo + " --token-map " + (dir / "built.json").string() + " --ids 0,1,2");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err, "");  // first-seen: no note
  json edited = json::parse(Slurp(dir / "built.json"));
  edited["map"][2] = 0;
  Write(dir / "edited.json", edited.dump());
  Result bad = RunCli("hash --config " + kDemo + " --token-map " + (dir / "edited.json").string() + " --ids 0,1,2");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("key 'sha256'"));
  EXPECT_THAT(bad.err, HasSubstr("the map was edited after it was built"));
}

TEST(CliHash, TokenMapCompressesRawIds) {
  const fs::path map = TempDir() / "map2.json";
  Write(map, "[0, 1, 2, 1, 3, 3]");
  Result raw = RunCli("hash --config " + kDemo + " --token-map " + map.string() + " --ids 1,3,5,4");
  Result compressed = RunCli("hash --config " + kDemo + " --compressed-vocab-size 4 --ids 1,1,3,3");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  ASSERT_EQ(compressed.exit_code, 0) << compressed.err;
  EXPECT_EQ(json::parse(raw.out)["rows"], json::parse(compressed.out)["rows"]);
}

TEST(CliHash, BadInputsNameWhatAndWhere) {
  struct Case {
    std::string args;
    std::string needle;
  };
  const fs::path dir = TempDir();
  Write(dir / "broken.json", "{\"engram_layer_ids\": [1, 14],");
  Write(dir / "heads.json", "{\"engram_layer_ids\": [1], \"engram_vocab_size\": 100, \"engram_max_ngram_size\": 3,"
                            " \"engram_n_heads\": 0, \"engram_head_dim\": 4, \"engram_pad_id\": 2}");
  const Case cases[] = {
      {"hash --config " + kV41 + " --compressed-vocab-size 99092 --ids 1,99092", "position 1 (id 99092)"},
      {"hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=1,-2", "position 1 (id -2)"},
      {"hash --config " + kV41 + " --compressed-vocab-size 99092 --ids 1,x", "--ids: item 2 of 2 is 'x': not a decimal"},
      {"hash --config " + kV41 + " --compressed-vocab-size 99092 --ids 1,2 --chunks 1", "add up to 1"},
      {"hash --config " + (dir / "broken.json").string() + " --compressed-vocab-size 5 --ids 1", "malformed JSON"},
      {"hash --config " + (dir / "heads.json").string() + " --compressed-vocab-size 5 --ids 1", "engram_n_heads"},
      {"hash --config /nonexistent.json --compressed-vocab-size 5 --ids 1", "/nonexistent.json"},
      {"layout --config " + kDemo, "no compressed vocab size"},
      {"layout --config " + kDemo + " --profile v9", "--profile"},
  };
  for (const Case& c : cases) {
    Result r = RunCli(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_THAT(r.err, HasSubstr(c.needle)) << c.args;
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
}

// §HASH.9 through the command line: a sequence prefilled on one "instance"
// and continued on another equals the one-shot rows.
TEST(CliHistory, HandOffThroughBothForms) {
  const fs::path dir = TempDir();
  const std::string c = "hash --config " + kV41 + " --compressed-vocab-size 99092 ";
  RunCli(c + "--ids=5,7,-1,9,11,13 --out " + (dir / "one.json").string());
  for (const std::string ext : {".bin", ".json"}) {
    const fs::path h = dir / ("h" + ext);
    ASSERT_EQ(RunCli(c + "--ids=5,7,-1 --history-out " + h.string()).exit_code, 0);
    Result second = RunCli(c + "--ids=9,11,13 --history-in " + h.string());
    ASSERT_EQ(second.exit_code, 0) << second.err;
    json one = json::parse(Slurp(dir / "one.json"));
    json two = json::parse(second.out);
    for (int t = 0; t < 3; ++t) EXPECT_EQ(two["rows"][t], one["rows"][t + 3]) << ext;
    EXPECT_EQ(two["position"], 6);
  }
}

TEST(CliHistory, RefusesAHistoryFromAnotherLayout) {
  const fs::path h = TempDir() / "demo.json";
  ASSERT_EQ(RunCli("hash --config " + kDemo + " --compressed-vocab-size 50 --ids=1,2,3 --history-out " + h.string()).exit_code, 0);
  Result r = RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=4 --history-in " + h.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("layoutFingerprint"));
  Write(TempDir() / "junk.bin", "not a history at all, but long enough to pass the size check......");
  Result junk = RunCli("hash --config " + kV41 + " --compressed-vocab-size 99092 --ids=4 --history-in " +
                       (TempDir() / "junk.bin").string());
  EXPECT_NE(junk.exit_code, 0);
  EXPECT_THAT(junk.err, HasSubstr("ENGRAMHS"));
}

}  // namespace
