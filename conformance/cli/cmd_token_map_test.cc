// `engram token-map` (cmd_token_map.cc, spec/token_map.md).
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

}  // namespace
