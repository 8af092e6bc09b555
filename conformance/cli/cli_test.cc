// End-to-end tests of the `engram` command line: outputs, error messages and
// exit codes. Expected values are the published V4.1 figures or laws (the
// same ids in chunks must hash alike), never values copied from the code.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "base/hex.h"
#include "conformance/testutil/run_cli.h"
#include "conformance/testutil/sanitized.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HasSubstr;
using testing::Not;

using Result = engram::testutil::CliResult;
using engram::testutil::kDemo;
using engram::testutil::kV41;
using engram::testutil::RunCli;
using engram::testutil::Slurp;
using engram::testutil::TempDir;

void Write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// "" when equal, else the first line where `a` and `b` differ, both versions.
std::string FirstDifferingLine(const std::string& a, const std::string& b) {
  if (a == b) return "";
  std::istringstream x(a), y(b);
  std::string l, m;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(x, l)), more_b = static_cast<bool>(std::getline(y, m));
    if (!more_a || !more_b || l != m) {
      return "line " + std::to_string(line) + ": " + (more_a ? l.substr(0, 200) : "(end)") + " | " +
             (more_b ? m.substr(0, 200) : "(end)");
    }
  }
}

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

TEST(CliBench, PrintsThroughput) {
  Result r = RunCli("bench hash --tokens 20000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["tokens"], 20000);
  EXPECT_GT(d["tokens_per_second"].get<double>(), 0.0);
  // The ids are drawn a chunk at a time from one stream: the chunk size changes nothing hashed (§HASH.5).
  Result small = RunCli("bench hash --tokens 20000 --chunk 7");
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_EQ(json::parse(small.out)["checksum"], d["checksum"]);
}

// The advertised maximum (2^32 positions, 32 GiB of ids if drawn at once) runs
// in bounded memory: after a few seconds the benchmark is still hashing and its
// peak resident memory is a few chunk buffers.
TEST(CliBench, AdvertisedMaximumRunsInBoundedMemory) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(ENGRAM_CLI, ENGRAM_CLI, "bench", "hash", "--tokens", "4294967296", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  int status = 0;
  const pid_t done = waitpid(pid, &status, WNOHANG);
  long hwm_kib = -1;
  std::istringstream st(Slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(st, line);) {
    if (line.rfind("VmHWM:", 0) == 0) hwm_kib = std::stol(line.substr(6));
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  ASSERT_EQ(done, 0) << "the benchmark ended within 3 s (status " << status << "): it should still be hashing";
  ASSERT_GT(hwm_kib, 0);
  // Under AddressSanitizer the resident set includes shadow memory: the bound holds for plain builds.
  constexpr bool kSanitized = engram::testutil::kSanitized;
  if (kSanitized) {
    std::cout << "peak RSS " << hwm_kib / 1024 << " MiB (not checked: sanitizer shadow memory)\n";
  } else {
    EXPECT_LT(hwm_kib, 128 * 1024) << "peak RSS " << hwm_kib / 1024 << " MiB";
  }
}

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

// §VEC.8 Regenerating reproduces the committed bytes; §VEC.9 the manifest catches an edit.
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
    // Compared as strings with a short message: gtest's line diff of two
    // 1 MB files would take gigabytes.
    EXPECT_EQ(FirstDifferingLine(Slurp(out / rel), Slurp(committed / rel)), "")
        << rel << " is not byte-identical to the committed file";
    ++compared;
  }
  for (const auto& e : fs::directory_iterator(out / "v1")) {
    EXPECT_TRUE(fs::exists(committed / "v1" / e.path().filename())) << e.path() << " is generated but not committed";
  }
  EXPECT_GE(compared, 4);
  EXPECT_EQ(FirstDifferingLine(Slurp(out / "MANIFEST.sha256"), Slurp(committed / "MANIFEST.sha256")), "");
  // The generated files verify: every suite but `accumulated` is recomputed
  // here. The generated files are the committed bytes (above), whose full
  // verify, 10^7 positions included, is scripts/test.sh's vector stage; under
  // the sanitizers the same accumulated digest code runs in the catalogue row
  // LIM-02 (conform --suite accumulated).
  std::string suites;
  for (const auto& e : fs::directory_iterator(out / "v1")) {
    if (e.path().stem() != "accumulated") suites += " --suite " + e.path().stem().string();
  }
  Result ok = RunCli("vectors verify " + out.string() + suites);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_THAT(ok.out, HasSubstr("v1/accumulated.json: digest checked, not recomputed (--suite)"));

  // A changed expected value, with the manifest updated to match, must still
  // be caught by recomputation (§VEC.10).
  json doc = json::parse(Slurp(out / "v1/hash_v41.json"));
  json& rows = doc["testGroups"][0]["tests"][2]["rows"];
  rows[0][0][0] = rows[0][0][0].get<int64_t>() + 1;
  Write(out / "v1/hash_v41.json", doc.dump(1) + "\n");
  // Only the tampered suite is recomputed (the full verify above already ran).
  Result tampered = RunCli("vectors verify " + out.string() + " --suite hash_v41");
  EXPECT_NE(tampered.exit_code, 0);
  // Problems go to stderr (§ERR.1).
  EXPECT_THAT(tampered.err, HasSubstr("hash_v41.json has SHA-256"));  // the manifest notices first
  EXPECT_THAT(tampered.err, HasSubstr("tcId 3: field 'rows'"));     // and recomputation names the test,
  // the element and both values (§VEC.10).
  const int64_t was = rows[0][0][0].get<int64_t>() - 1;
  EXPECT_THAT(tampered.err, HasSubstr("tcId 3: field 'rows': rows[0][0][0]: the vector has " + std::to_string(was + 1) +
                                      ", the reference gives " + std::to_string(was)));
}

// §VEC.10 Every value the verifier compares is reported at its first differing
// element with both values: step results of a state test, an intermediate of
// the generator, a group field of the TP suite.
TEST(CliVectors, VerifyNamesTheFirstDifferingElementEverywhere) {
  const fs::path dir = TempDir() / "tampered_vectors";
  fs::remove_all(dir);
  fs::copy(fs::path(ENGRAM_SOURCE_DIR) / "vectors", dir, fs::copy_options::recursive);
  auto edit = [&](const std::string& rel, const std::function<void(json&)>& f) {
    json doc = json::parse(Slurp(dir / rel));
    f(doc);
    Write(dir / rel, doc.dump(1) + "\n");
  };
  int64_t row = 0, pool = 0, part = 0;
  edit("v1/hash_v41.json", [&](json& d) {
    json& v = d["testGroups"][1]["tests"][0]["steps"][0]["rows"][2][1][5];
    row = v.get<int64_t>();
    v = row + 1;
  });
  edit("v1/multipliers.json", [&](json& d) {
    json& v = d["testGroups"][0]["tests"][0]["intermediate"]["pool"][1];
    pool = v.get<int64_t>();
    v = pool + 1;
  });
  edit("v1/tp_shard.json", [&](json& d) {
    json& v = d["testGroups"][0]["part"];
    part = v.get<int64_t>();
    v = part - 1;
  });
  Result r = RunCli("vectors verify " + dir.string() + " --suite hash_v41 --suite multipliers --suite tp_shard");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("v1/hash_v41.json: tcId 21: step 0 (append): rows[2][1][5]: the vector has " +
                               std::to_string(row + 1) + ", the reference gives " + std::to_string(row)));
  EXPECT_THAT(r.err, HasSubstr("v1/multipliers.json: tcId 1: intermediate.pool[1]: the vector has " +
                               std::to_string(pool + 1) + ", the reference gives " + std::to_string(pool)));
  EXPECT_THAT(r.err, HasSubstr("group part (ceil(rows / world)): the vector has " + std::to_string(part - 1) +
                               ", the reference gives " + std::to_string(part)));
  EXPECT_EQ(r.err.find("differ from the reference"), std::string::npos) << r.err;  // no message without values
}

// §VEC.10 --suite limits the recomputation, never the manifest, and says so.
TEST(CliVectors, VerifySuiteRecomputesOnlyThoseAndChecksTheManifestWhole) {
  const fs::path dir = TempDir() / "suite_vectors";
  fs::remove_all(dir);
  fs::copy(fs::path(ENGRAM_SOURCE_DIR) / "vectors", dir, fs::copy_options::recursive);
  Result ok = RunCli("vectors verify " + dir.string() + " --suite layout --suite tp_shard");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("v1/layout.json: "));
  EXPECT_THAT(ok.out, HasSubstr("v1/accumulated.json: digest checked, not recomputed (--suite)"));
  const size_t files = static_cast<size_t>(std::distance(fs::directory_iterator(dir / "v1"), fs::directory_iterator()));
  EXPECT_THAT(ok.out, HasSubstr("vectors verified: OK (2 of " + std::to_string(files) +
                                " suite files recomputed, --suite; the manifest checked whole)"));

  // A wrong expected value in a suite that is not recomputed is not found...
  json doc = json::parse(Slurp(dir / "v1/multipliers.json"));
  doc["testGroups"][0]["tests"][0]["intermediate"]["pool"][1] = doc["testGroups"][0]["tests"][0]["intermediate"]["pool"][1].get<int64_t>() + 1;
  Write(dir / "v1/multipliers.json", doc.dump(1) + "\n");
  Result other = RunCli("vectors verify " + dir.string() + " --suite layout");
  EXPECT_NE(other.exit_code, 0);
  // ... but the manifest still sees that its bytes changed.
  EXPECT_THAT(other.err, HasSubstr("v1/multipliers.json has SHA-256"));
  EXPECT_EQ(other.err.find("intermediate.pool[1]"), std::string::npos) << other.err;
  EXPECT_THAT(other.out, HasSubstr("1 problem(s) (1 of "));

  // A name that is no suite is refused before anything is read; so is a
  // suite whose file is not there.
  Result typo = RunCli("vectors verify " + dir.string() + " --suite hash_v4");
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_THAT(typo.err, HasSubstr("--suite hash_v4: no such suite (the suites are: "));
  EXPECT_THAT(typo.out, Not(HasSubstr("manifest:")));
  fs::remove(dir / "v1/layout.json");
  Result gone = RunCli("vectors verify " + dir.string() + " --suite layout");
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.err, HasSubstr("v1/layout.json: asked for with --suite, but the directory has no such file"));
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

// ---------------------------------------------------------------------------
// engram lookup (§STO)

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

}  // namespace

// ---------------------------------------------------------------------------
// engram token-map (spec/token_map.md)

// vocab: "a", "Ġa" (" a"), "A", "Ã" (byte C3: partial UTF-8), "Ġ" (" "); added "<s>".
// Hand derivation (§TOK.4): a -> 0, " a" -> "a" -> 0, A -> "a" -> 0, Ã -> U+FFFD -> key "Ã" -> 1,
// " " -> " " -> 2, "<s>" -> 3.
const char* kSmallTokenizer =
    "{\"added_tokens\": [{\"id\": 5, \"content\": \"<s>\", \"special\": true}],"
    " \"decoder\": {\"type\": \"ByteLevel\"},"
    " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"\\u0120a\": 1, \"A\": 2, \"\\u00c3\": 3, \"\\u0120\": 4},"
    " \"merges\": []}}";

TEST(CliTokenMap, BuildsMapSizeAndDigest) {
  const fs::path tok = TempDir() / "tokenizer.json";
  Write(tok, kSmallTokenizer);
  Result r = RunCli("token-map --tokenizer " + tok.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["tokens"], 6);
  EXPECT_EQ(d["compressed_size"], 4);
  EXPECT_EQ(d["map"], json({0, 0, 0, 1, 2, 3}));
  EXPECT_EQ(d["sha256"].get<std::string>().size(), 64u);
  // The output is a token-map file: hash with it equals hash with the tokenizer.
  const fs::path map = TempDir() / "tokmap.json";
  Write(map, r.out);
  Result a = RunCli("hash --config " + kDemo + " --tokenizer " + tok.string() + " --ids 0,1,2,3,4,5");
  Result b = RunCli("hash --config " + kDemo + " --token-map " + map.string() + " --ids 0,1,2,3,4,5");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(json::parse(a.out)["rows"], json::parse(b.out)["rows"]);
  EXPECT_EQ(json::parse(a.out)["compressed_ids"], json({0, 0, 0, 1, 2, 3}));
  Result l = RunCli("layout --config " + kDemo + " --tokenizer " + tok.string());
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(json::parse(l.out)["compressed_vocab_size"], 4);
  EXPECT_EQ(json::parse(l.out)["pad"]["compressed"], 0);  // raw pad 2 ("A") -> 0
}

TEST(CliTokenMap, RefusesV41SizeMismatchAndWritesNothing) {
  const fs::path tok = TempDir() / "tokenizer2.json";
  Write(tok, kSmallTokenizer);
  const fs::path out = TempDir() / "never.json";
  fs::remove(out);
  Result r = RunCli("token-map --tokenizer " + tok.string() + " --config " + kV41 + " --out " + out.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("engram_compressed_vocab_size"));
  EXPECT_THAT(r.err, HasSubstr("99092"));
  EXPECT_FALSE(fs::exists(out));
  Result h = RunCli("hash --config " + kV41 + " --tokenizer " + tok.string() + " --ids 1");
  EXPECT_NE(h.exit_code, 0);
  EXPECT_THAT(h.err, HasSubstr("engram_compressed_vocab_size"));
}

TEST(CliTokenMap, BadTokenizersNameFileIdAndToken) {
  const fs::path dir = TempDir();
  Write(dir / "hole.json", "{\"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 2}}}");
  Write(dir / "wp.json", "{\"decoder\": {\"type\": \"WordPiece\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}");
  Write(dir / "uni.json", "{\"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"Unigram\", \"vocab\": {\"a\": 0}}}");
  Write(dir / "dup.json", "{\"decoder\": {\"type\": \"ByteLevel\"}, \"added_tokens\": [{\"id\": 0, \"content\": \"<s>\"}],"
                          " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}}");
  struct Case {
    std::string args;
    std::vector<std::string> needles;
  };
  const Case cases[] = {
      {"token-map --tokenizer " + (dir / "hole.json").string(), {"hole.json", "id 1", "hole", "\"b\""}},
      {"token-map --tokenizer " + (dir / "wp.json").string(), {"wp.json", "decoder.type", "WordPiece"}},
      {"token-map --tokenizer " + (dir / "uni.json").string(), {"uni.json", "model.type", "Unigram"}},
      {"token-map --tokenizer " + (dir / "dup.json").string(), {"dup.json", "added_tokens[0]", "<s>", "id 0", "\"a\""}},
      {"token-map --tokenizer /nonexistent/tokenizer.json", {"/nonexistent/tokenizer.json"}},
      {"hash --config " + kDemo + " --tokenizer " + (dir / "hole.json").string() + " --token-map x.json --ids 1",
       {"--tokenizer"}},
  };
  for (const Case& c : cases) {
    Result r = RunCli(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    for (const std::string& n : c.needles) EXPECT_THAT(r.err, HasSubstr(n)) << c.args;
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
}

// ---- engram gate (spec §FUS) ----

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

// Found by fuzz_contract: a JSON float where a vector expects an integer was
// converted with undefined behaviour; it is now a named problem (§VEC.4).
TEST(CliVectors, VerifyRefusesFloatsWhereIntegersBelong) {
  const fs::path dir = TempDir() / "float_vectors";
  fs::remove_all(dir);
  fs::copy(fs::path(ENGRAM_SOURCE_DIR) / "vectors", dir, fs::copy_options::recursive);
  json doc = json::parse(Slurp(dir / "v1/multipliers.json"));
  doc["testGroups"][0]["tests"][0]["seed"] = -9.3e18;
  Write(dir / "v1/multipliers.json", doc.dump(1) + "\n");
  Result r = RunCli("vectors verify " + dir.string() + " --suite multipliers");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("tcId 1: test.seed is a floating-point number"));
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
