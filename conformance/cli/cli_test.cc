// End-to-end tests of the `engram` command line: outputs, error messages and
// exit codes. Expected values are the published V4.1 figures or laws (the
// same ids in chunks must hash alike), never values copied from the code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HasSubstr;

struct Result {
  int exit_code;
  std::string out;
  std::string err;
};

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() / ("engram_cli_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

Result RunCli(const std::string& args) {
  const fs::path dir = TempDir();
  const fs::path out = dir / "stdout", err = dir / "stderr";
  const std::string cmd = std::string(ENGRAM_CLI) + " " + args + " >" + out.string() + " 2>" + err.string();
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
}

const std::string kV41 = std::string(ENGRAM_SOURCE_DIR) + "/conformance/configs/v41-flash.json";
const std::string kDemo = std::string(ENGRAM_SOURCE_DIR) + "/conformance/configs/demo-v1.json";

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
      {"hash --config " + kV41 + " --compressed-vocab-size 99092 --ids 1,x", "'x' is not a 64-bit integer"},
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

TEST(CliBench, PrintsThroughput) {
  Result r = RunCli("bench hash --tokens 20000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["tokens"], 20000);
  EXPECT_GT(d["tokens_per_second"].get<double>(), 0.0);
}

TEST(CliVectors, GenerateReproducesCommittedAndVerifyCatchesTampering) {
  const fs::path out = TempDir() / "vectors";
  fs::remove_all(out);
  Result gen = RunCli("vectors generate --out " + out.string());
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const fs::path committed = fs::path(ENGRAM_SOURCE_DIR) / "vectors";
  // Every committed suite is regenerated byte for byte, and nothing else is generated.
  int compared = 0;
  for (const auto& e : fs::directory_iterator(committed / "v1")) {
    const std::string rel = "v1/" + e.path().filename().string();
    EXPECT_EQ(Slurp(out / rel), Slurp(committed / rel)) << rel << " is not byte-identical to the committed file";
    ++compared;
  }
  for (const auto& e : fs::directory_iterator(out / "v1")) {
    EXPECT_TRUE(fs::exists(committed / "v1" / e.path().filename())) << e.path() << " is generated but not committed";
  }
  EXPECT_GE(compared, 4);
  EXPECT_EQ(Slurp(out / "MANIFEST.sha256"), Slurp(committed / "MANIFEST.sha256"));
  Result ok = RunCli("vectors verify " + out.string());
  EXPECT_EQ(ok.exit_code, 0) << ok.out;

  // A changed expected value, with the manifest updated to match, must still
  // be caught by recomputation (§VEC.10).
  json doc = json::parse(Slurp(out / "v1/hash_v41.json"));
  json& rows = doc["testGroups"][0]["tests"][2]["rows"];
  rows[0][0][0] = rows[0][0][0].get<int64_t>() + 1;
  Write(out / "v1/hash_v41.json", doc.dump(1) + "\n");
  Result tampered = RunCli("vectors verify " + out.string());
  EXPECT_NE(tampered.exit_code, 0);
  EXPECT_THAT(tampered.out, HasSubstr("hash_v41.json has SHA-256"));  // the manifest notices first
  EXPECT_THAT(tampered.out, HasSubstr("tcId 3: field 'rows'"));     // and recomputation names the test
}

TEST(CliVectors, VerifyRefusesAMissingManifest) {
  const fs::path dir = TempDir() / "empty_vectors";
  fs::create_directories(dir);
  Result r = RunCli("vectors verify " + dir.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("MANIFEST.sha256"));
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

// §CON: write, verify, and catch a same-size map from "another revision".
TEST(CliContract, WriteVerifyAndNameTheDifference) {
  const fs::path dir = TempDir();
  std::string map = "[", swapped = "[";
  for (int i = 0; i < 100; ++i) {
    const int v = i < 60 ? i : i - 60;
    const int w = i == 10 ? 11 : i == 11 ? 10 : v;
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
