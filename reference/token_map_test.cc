// Tests of spec/token_map.md (§TOK.1-§TOK.6). Expected values are hand
// derivations from the Unicode/UTF-8 tables (commented), outputs of Hugging
// Face tokenizers 0.23.3 recorded by hand (normalize_str, decode), or laws;
// HfCrosscheck.TokenMapFileIfPresent compares whole maps with the real
// tokenizers package, id for id.
#include "base/program_paths.h"
#include "reference/token_map.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "reference/config.h"
#include "base/error.h"

namespace engram {
namespace {

using nlohmann::json;

std::string Utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (c >> 6)));
    s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (c >> 12)));
    s.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (c >> 18)));
    s.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
  return s;
}

// The byte-level vocab entry of `bytes`.
std::string B(std::string_view bytes) {
  std::string out;
  for (char ch : bytes) out += Utf8(ByteToUnicode(static_cast<uint8_t>(ch)));
  return out;
}

std::string Doc(const json& vocab, const json& added = json::array(), const json& decoder = {{"type", "ByteLevel"}},
                const std::string& model_type = "BPE") {
  json model = {{"vocab", vocab}, {"merges", json::array({json::array({"a", "b"})})}};
  if (!model_type.empty()) model["type"] = model_type;
  return json{{"version", "1.0"}, {"added_tokens", added}, {"decoder", decoder}, {"model", model}}.dump();
}

const std::string kFffd = "\xEF\xBF\xBD";

TEST(TokenMapDecode, ByteTable) {
  // GPT-2's table: printable Latin-1 maps to itself; the 68 others get
  // U+0100.. in byte order: 0x00 -> U+0100, 0x09 -> U+0109 (ĉ), 0x0A -> U+010A (Ċ),
  // 0x0D -> U+010D (č), 0x20 -> U+0120 (Ġ), 0x7F -> U+0121, 0xAD -> U+0143 (the last).
  EXPECT_EQ(ByteToUnicode(0x00), U'\u0100');
  EXPECT_EQ(ByteToUnicode(0x09), U'\u0109');
  EXPECT_EQ(ByteToUnicode(0x0A), U'\u010A');
  EXPECT_EQ(ByteToUnicode(0x0D), U'\u010D');
  EXPECT_EQ(ByteToUnicode(0x20), U'\u0120');
  EXPECT_EQ(ByteToUnicode(0x7F), U'\u0121');
  EXPECT_EQ(ByteToUnicode(0xAD), U'\u0143');
  EXPECT_EQ(ByteToUnicode('a'), U'a');
  EXPECT_EQ(ByteToUnicode(0xE9), U'\u00E9');
  std::set<char32_t> all;
  for (int b = 0; b < 256; ++b) all.insert(ByteToUnicode(static_cast<uint8_t>(b)));
  EXPECT_EQ(all.size(), 256u);
}

TEST(TokenMapDecode, TokenBytesAndLossyUtf8) {
  EXPECT_EQ(DecodeToken("\xC4\xA0"), " ");                // Ġ
  EXPECT_EQ(DecodeToken("\xC4\x8A\xC4\x89\xC4\x8D"), "\n\t\r");  // Ċĉč
  EXPECT_EQ(DecodeToken("\xC3\x83\xC2\xA9"), "\xC3\xA9");  // "Ã©" -> bytes C3 A9 = é
  // A token with a character outside the table is its own UTF-8 (HF 0.23.3: "Ġ中" -> "Ġ中").
  EXPECT_EQ(DecodeToken("\xC4\xA0\xE4\xB8\xAD"), "\xC4\xA0\xE4\xB8\xAD");
  // "é" is in the table (byte E9): a lone lead byte -> U+FFFD (HF 0.23.3: '\ufffd').
  EXPECT_EQ(DecodeToken("\xC3\xA9"), kFffd);
  // Maximal subparts (Unicode ch. 3, "U+FFFD substitution of maximal subparts"):
  EXPECT_EQ(Utf8Lossy("\xF0\x9F"), kFffd);                      // a truncated 4-byte sequence: one
  EXPECT_EQ(Utf8Lossy("\xF0\x9F\x98"), kFffd);                  // still one
  EXPECT_EQ(Utf8Lossy("\xE2\x82z"), kFffd + "z");               // E2 82 is a prefix, z is not
  EXPECT_EQ(Utf8Lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate: ED then A0 fails
  EXPECT_EQ(Utf8Lossy("\xE0\x80"), kFffd + kFffd);              // overlong: E0 needs A0..BF
  EXPECT_EQ(Utf8Lossy("\xC0\xAF"), kFffd + kFffd);              // C0 never starts a sequence
  EXPECT_EQ(Utf8Lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
  EXPECT_EQ(Utf8Lossy("\x80\x80"), kFffd + kFffd);
  EXPECT_EQ(Utf8Lossy("a\xF0\x9F\x98\x80"), "a\xF0\x9F\x98\x80");
}

TEST(TokenMapNormalize, HuggingFaceOutputs) {
  // Each pair: input -> HF tokenizers 0.23.3 normalizers.Sequence of spec/sources.md [SRC-V41], normalize_str.
  const std::pair<std::string, std::string> cases[] = {
      {"\xCE\xA3\xCE\x91\xCE\xA3", "\xCF\x83\xCE\xB1\xCF\x83"},  // ΣΑΣ -> σασ (no final ς)
      {"\xC4\xB0", "i"},                                          // İ -> I + U+0307 (NFD) -> I -> i
      {"a\xE0\xA4\x83" "b", "ab"},                                 // Mc removed
      {"a\xE2\x83\x9D" "b", "ab"},                                 // Me removed
      {"\xEF\xAC\x81", "fi"},                                      // ﬁ
      {"\xE2\x91\xA0\xE2\x92\xB6", "1a"},                          // ①Ⓐ
      {"\xEF\xBC\xA1", "a"},                                       // Ａ
      {" ", " "},
      {"\t\r\n", " "},
      {"  x \t y ", "x y"},
      {"\xC2\xA0", " "},                                           // NBSP -> NFKC space -> sentinel
      {"\xE3\x80\x80x\xE2\x80\xA8", "x"},                          // U+3000 -> space, U+2028 stripped
      {"\xC2\x85" "a\xC2\x85", "a"},                               // NEL is White_Space
      {"\xEE\x80\x80", " "},                                       // U+E000 -> space
      {"a\xEE\x80\x80", "a "},
      {"\xE2\x80\x8B", "\xE2\x80\x8B"},                            // ZWSP is not White_Space
      {"\xC7\x85", "dz"},                                          // ǅ
      {"\xE1\xBA\x9E", "\xC3\x9F"},                                // ẞ -> ß
      {"\xE2\x80\xA8", ""},
      {"\x1C", "\x1C"},                                            // not White_Space in Rust
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(NormalizeText(in), out) << json(in).dump();
}

TEST(TokenMapKeys, Kinds) {
  TokenKey k = KeyOf(B("\xF0\x9F"));
  EXPECT_TRUE(k.replacement);
  EXPECT_EQ(k.kind, KeyKind::kToken);
  EXPECT_EQ(k.key, B("\xF0\x9F"));
  k = KeyOf(B("\xCC\x81"));  // a lone U+0301: normalizes to "", key = text
  EXPECT_EQ(k.kind, KeyKind::kText);
  EXPECT_EQ(k.key, "\xCC\x81");
  k = KeyOf(B(" Hello"));
  EXPECT_EQ(k.kind, KeyKind::kNormalized);
  EXPECT_EQ(k.key, "hello");
}

TEST(TokenMapLoad, SmallTokenizerAndAddedTokens) {
  const std::string text = Doc({{"<s>", 0}, {"a", 1}, {B(" a"), 2}, {"\xC3\xA9", 3}},
                               json::array({{{"id", 0}, {"content", "<s>"}, {"special", true}},
                                            {{"id", 4}, {"content", "<|x|>"}, {"special", true}},
                                            {{"id", 5}, {"content", B(" A")}, {"special", false}}}));
  const Tokenizer tk = ParseTokenizerJson(text, "t.json");
  ASSERT_EQ(tk.size(), 6);
  EXPECT_EQ(tk.vocab_entries, 4);
  EXPECT_EQ(tk.tokens[4], "<|x|>");
  EXPECT_TRUE(tk.added[0] && tk.special[0] && tk.added[5] && !tk.special[5] && !tk.added[1]);
  std::vector<TokenKey> keys;
  const TokenMap tm = BuildTokenMap(tk, &keys);
  // <s>, a, " a" -> a, é -> U+FFFD (raw key "é"), <|x|>, " A" -> a.
  EXPECT_EQ(tm.map, (std::vector<int64_t>{0, 1, 1, 2, 3, 1}));
  EXPECT_EQ(tm.compressed_size, 4);
  EXPECT_EQ(keys[3].kind, KeyKind::kToken);
}

TEST(TokenMapLoad, RefusalsNameFileIdAndToken) {
  struct Case {
    std::string text;
    std::vector<std::string> needles;
  };
  const Case cases[] = {
      {Doc({{"a", 0}, {"b", 1}, {"c", 3}}), {"t.json", "model.vocab", "id 2", "hole", "\"c\""}},
      {Doc({{"a", 0}, {"b", 1}, {"c", 1}}), {"t.json", "id 1", "twice", "\"b\"", "\"c\""}},
      {Doc({{"a", 0}, {"b", 1}}, json::array({{{"id", 1}, {"content", "<s>"}}})), {"added_tokens[0]", "\"<s>\"", "id 1", "\"b\""}},
      {Doc({{"a", 0}, {"b", 1}}, json::array({{{"id", 3}, {"content", "<s>"}}})), {"added_tokens[0]", "id 3", "hole", "id 2"}},
      {Doc({{"a", 0}, {"b", 1}}, json::array({{{"id", 2}, {"content", "a"}}})), {"added_tokens[0]", "\"a\"", "id 2", "id 0"}},
      {Doc({{"a", 0}}, json::array(), {{"type", "ByteLevel"}}, "Unigram"), {"t.json", "model.type", "Unigram"}},
      {Doc({{"a", 0}}, json::array(), {{"type", "ByteLevel"}}, ""), {"model.type", "missing"}},
      {Doc({{"a", 0}}, json::array(), {{"type", "Metaspace"}}), {"decoder.type", "Metaspace"}},
      {Doc({{"a", 0}}, json::array(), nullptr), {"decoder", "missing"}},
      {Doc({{"a", 0}}, json::array(), {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "ByteLevel"}}}}}),
       {"decoder.decoders", "ByteFallback"}},
      {Doc({{"a", 0}, {"b", "x"}}), {"model.vocab", "\"b\"", "\"x\""}},
      // null / boolean ids are refused, not dropped (HF: "invalid type: null, expected u32").
      {Doc({{"a", 0}, {"b", nullptr}, {"c", 1}}), {"model.vocab", "\"b\"", "has id null"}},
      {Doc({{"a", 0}, {"b", true}}), {"model.vocab", "\"b\"", "has id true"}},
      {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}", {"t.json", "not valid JSON"}},
      {Doc({{"a", 0}}, json::array({{{"id", 1}, {"content", ""}}})), {"added_tokens[0]", "content"}},
  };
  for (const Case& c : cases) {
    try {
      ParseTokenizerJson(c.text, "t.json");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const Error& e) {
      for (const std::string& n : c.needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what() << " lacks " << n;
    }
  }
  // A Sequence whose only step is ByteLevel is accepted and decodes the same.
  EXPECT_NO_THROW(ParseTokenizerJson(Doc({{"a", 0}}, json::array(), {{"type", "Sequence"}, {"decoders", {{{"type", "ByteLevel"}}}}}), "t.json"));
}

TEST(TokenMapConfig, V41SizeCheckAndPad) {
  TokenMap tm = ParseTokenMap(json::array({0, 1, 2, 1}), "m");
  EngramConfig config;
  config.profile = Profile::kV41;
  config.source = "cfg.json";
  config.pad_id = 3;
  config.compressed_vocab_size = 3;
  EXPECT_EQ(CheckTokenMapForConfig(tm, config), 1);
  config.compressed_vocab_size = 4;
  try {
    CheckTokenMapForConfig(tm, config);
    ADD_FAILURE() << "size mismatch accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("engram_compressed_vocab_size"), std::string::npos) << e.what();
  }
  config.compressed_vocab_size.reset();
  config.pad_id = 4;
  EXPECT_THROW(CheckTokenMapForConfig(tm, config), Error);
}

// ---------------------------------------------------------------------------
// Properties

// Code points that exercise every step: ASCII, whitespace (in and outside
// [ \t\r\n]), accented and compatibility letters, marks (Mn, Mc, Me), Greek
// with Σ, Cyrillic, Hangul, CJK, emoji and joiners. U+E000 is left out: the
// sentinel step turns a text's own U+E000 into a space, which a second
// normalization then strips, so idempotence holds for texts without it.
const std::vector<char32_t> kAlphabet = {
    'a', 'B', 'z', 'Z', '1', '.', '\'', ' ', '\t', '\n', '\r', 0x0B, 0x85, 0xA0, 0x2028, 0x3000,
    0xC9, 0xE9, 0x130, 0x131, 0xDF, 0x1E9E, 0x1C5, 0xFB01, 0x2460, 0x24B6, 0xFF21, 0x2126, 0x212B,
    0x301, 0x308, 0x903, 0x93F, 0x20DD, 0xE35, 0x3A3, 0x3C3, 0x3C2, 0x391, 0x41C, 0x439, 0xD55C, 0x1100,
    0x1161, 0x4E2D, 0xFF8A, 0xFF9F, 0x1F44D, 0x1F3FD, 0x200D, 0xFE0F, 0x200B};

rc::Gen<std::string> GenText() {
  return rc::gen::map(rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, kAlphabet.size())),
                      [](const std::vector<size_t>& idx) {
                        std::string s;
                        for (size_t i : idx) s += Utf8(kAlphabet[i]);
                        return s;
                      });
}

RC_GTEST_PROP(TokenMapProperties, NormalizationIsIdempotent, ()) {
  const std::string text = *GenText();
  const std::string once = NormalizeText(text);
  RC_ASSERT(NormalizeText(once) == once);
}

// A tokenizer whose vocab holds the byte-level forms of `texts` (deduplicated).
Tokenizer TokenizerOf(const std::vector<std::string>& texts) {
  json vocab = json::object();
  for (const std::string& t : texts) {
    const std::string entry = B(t);
    if (!vocab.contains(entry)) vocab[entry] = vocab.size();
  }
  if (vocab.empty()) vocab[B("x")] = 0;
  return ParseTokenizerJson(Doc(vocab), "prop.json");
}

RC_GTEST_PROP(TokenMapProperties, IdsAreDenseAndFirstSeen, ()) {
  const auto texts = *rc::gen::container<std::vector<std::string>>(GenText());
  const Tokenizer tk = TokenizerOf(texts);
  std::vector<TokenKey> keys;
  const TokenMap tm = BuildTokenMap(tk, &keys);
  int64_t next = 0;
  std::map<std::string, int64_t> seen;
  for (size_t i = 0; i < tm.map.size(); ++i) {
    auto it = seen.find(keys[i].key);
    if (it == seen.end()) {
      RC_ASSERT(tm.map[i] == next);  // a new key takes the next id
      seen.emplace(keys[i].key, next++);
    } else {
      RC_ASSERT(tm.map[i] == it->second);  // an old key keeps its id
    }
  }
  RC_ASSERT(tm.compressed_size == next);
  // Keys of the normalized kind are fixed points of the normalizer.
  for (const TokenKey& k : keys) {
    if (k.kind == KeyKind::kNormalized) RC_ASSERT(NormalizeText(k.key) == k.key);
  }
}

RC_GTEST_PROP(TokenMapProperties, CaseAccentAndWidthVariantsShareAnId, ()) {
  const std::string word = *rc::gen::nonEmpty(rc::gen::container<std::string>(rc::gen::inRange('a', static_cast<char>('z' + 1))));
  std::string upper, wide, accented, spaced = " ";
  for (char c : word) {
    upper.push_back(static_cast<char>(c - 32));
    wide += Utf8(0xFF41 + static_cast<char32_t>(c - 'a'));  // full-width ａ..ｚ
    accented += std::string(1, c) + Utf8(0x301);             // c + combining acute (NFC may compose it)
    spaced.push_back(c);
  }
  const Tokenizer tk = TokenizerOf({word, upper, wide, accented, spaced});
  const TokenMap tm = BuildTokenMap(tk);
  RC_ASSERT(tm.compressed_size == 1);
}

// ---------------------------------------------------------------------------
// Cross-check with Hugging Face tokenizers (conformance/crosscheck/hf_token_map.py):
// ENGRAM_HF_TOKEN_MAP_CROSSCHECK=/tmp/x.json ./reference_tests --gtest_filter='HfCrosscheck.*'
TEST(HfCrosscheck, TokenMapFileIfPresent) {
  const char* path = std::getenv("ENGRAM_HF_TOKEN_MAP_CROSSCHECK");
  if (path == nullptr || *path == '\0') GTEST_SKIP() << "ENGRAM_HF_TOKEN_MAP_CROSSCHECK is not set";
  const json doc = ReadJsonFile(path, engram::InputKind::kVectorFile);
  ASSERT_TRUE(doc.contains("cases"));
  ASSERT_FALSE(doc["cases"].empty());
  size_t ids = 0;
  for (const json& c : doc["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const Tokenizer tk = ParseTokenizerJson(c["tokenizer_json"].get<std::string>(), c["name"].get<std::string>());
    std::vector<TokenKey> keys;
    const TokenMap tm = BuildTokenMap(tk, &keys);
    ASSERT_EQ(tm.tokens(), c["tokens"].get<int64_t>());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(keys[i].text, c["texts"][i].get<std::string>()) << "id " << i;
      ASSERT_EQ(keys[i].key, c["keys"][i].get<std::string>()) << "id " << i;
      ASSERT_EQ(tm.map[i], c["map"][i].get<int64_t>()) << "id " << i;
    }
    EXPECT_EQ(tm.compressed_size, c["compressed_size"].get<int64_t>());
    EXPECT_EQ(TokenMapDigest(tm), c["sha256"].get<std::string>());
    ids += keys.size();
  }
  // Real tokenizers: the whole map id for id, and the committed record.
  const json committed = ReadJsonFile(std::string(ENGRAM_SOURCE_DIR) + "/conformance/crosscheck/real_tokenizers.json", engram::InputKind::kVectorFile);
  size_t real = 0;
  for (const json& r : doc.value("real", json::array())) {
    SCOPED_TRACE(r["name"].get<std::string>());
    const Tokenizer tk = LoadTokenizerJson(r["path"].get<std::string>());
    const TokenMap tm = BuildTokenMap(tk);
    ASSERT_EQ(tm.tokens(), r["tokens"].get<int64_t>());
    for (size_t i = 0; i < tm.map.size(); ++i) ASSERT_EQ(tm.map[i], r["map"][i].get<int64_t>()) << "id " << i;
    EXPECT_EQ(TokenMapDigest(tm), r["sha256"].get<std::string>());
    for (const json& want : committed["tokenizers"]) {
      if (want["package"] != r["package"] || want["version"] != r["version"]) continue;
      EXPECT_EQ(tm.tokens(), want["tokens"].get<int64_t>());
      EXPECT_EQ(tm.compressed_size, want["compressed_size"].get<int64_t>());
      EXPECT_EQ(TokenMapDigest(tm), want["sha256"].get<std::string>());
      EXPECT_EQ(tm.map[static_cast<size_t>(want["pad"]["raw"].get<int64_t>())], want["pad"]["compressed"].get<int64_t>());
      ++real;
    }
    ids += tm.map.size();
  }
  std::cout << "[ hf      ] " << doc["cases"].size() << " synthetic tokenizer(s), " << real
            << " real tokenizer(s) matching conformance/crosscheck/real_tokenizers.json, " << ids << " ids compared\n";
}

}  // namespace
}  // namespace engram
