// spec/token_map.md — suite `token_map` (§TOK.7): generator and verifier.
//
// Every group embeds a small tokenizer.json, written here, as the exact text
// of the file (`tokenizerJson`), so that a port can write it to disk and run
// its own loader. Expected values come from the reference; every valid group
// is also checked id for id against Hugging Face tokenizers by
// conformance/crosscheck/hf_token_map.py.
#include <unicode/unistr.h>
#include <unicode/locid.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "reference/config.h"
#include "base/error.h"
#include "reference/hash.h"
#include "reference/token_map.h"
#include "vectors/suite.h"
#include "vectors/suite_token_map.h"

namespace engram::vectors {

std::string ByteLevelToken(std::string_view bytes) {
  std::string out;
  for (char ch : bytes) {
    const char32_t c = ByteToUnicode(static_cast<uint8_t>(ch));
    icu::UnicodeString u(static_cast<UChar32>(c));
    u.toUTF8String(out);
  }
  return out;
}

ojson TokenizerDoc(const std::vector<std::string>& vocab, const std::vector<AddedToken>& added, const ojson& decoder,
                   const std::string& model_type) {
  ojson at = ojson::array();
  for (const AddedToken& a : added) {
    at.push_back({{"id", a.id},          {"content", a.content},  {"single_word", false}, {"lstrip", false},
                  {"rstrip", false},     {"normalized", !a.special}, {"special", a.special}});
  }
  ojson v = ojson::object();
  for (size_t i = 0; i < vocab.size(); ++i) v[vocab[i]] = i;
  ojson model;
  if (!model_type.empty()) model["type"] = model_type;
  model["dropout"] = nullptr;
  model["unk_token"] = nullptr;
  model["continuing_subword_prefix"] = nullptr;
  model["end_of_word_suffix"] = nullptr;
  model["fuse_unk"] = false;
  model["byte_fallback"] = false;
  model["vocab"] = v;
  model["merges"] = ojson::array();
  ojson doc;
  doc["version"] = "1.0";
  doc["truncation"] = nullptr;
  doc["padding"] = nullptr;
  doc["added_tokens"] = at;
  doc["normalizer"] = nullptr;
  doc["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  doc["post_processor"] = nullptr;
  doc["decoder"] = decoder;
  doc["model"] = model;
  return doc;
}

namespace {

std::string B(std::string_view bytes) { return ByteLevelToken(bytes); }
using Added = AddedToken;

// ---------------------------------------------------------------------------
// Known divergences (spec/vectors.md §VEC.12), each computed from the texts so that the
// flag is set exactly where such a port's map differs.

// A normalizer without the U+E000 sentinel steps (§TOK.3 steps 6 and 8):
// the text's own U+E000 is parked on U+E001 (treated alike by every other
// step), so that only the sentinel is missing.
std::string SentinelLessNormalize(const std::string& text) {
  std::string parked;
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
  u.findAndReplace(icu::UnicodeString(static_cast<UChar32>(0xE000)), icu::UnicodeString(static_cast<UChar32>(0xE001)));
  u.toUTF8String(parked);
  std::string n = NormalizeText(parked);
  if (n == " ") return "";
  icu::UnicodeString back = icu::UnicodeString::fromUTF8(n);
  back.findAndReplace(icu::UnicodeString(static_cast<UChar32>(0xE001)), icu::UnicodeString(static_cast<UChar32>(0xE000)));
  std::string out;
  back.toUTF8String(out);
  return out;
}

// Lowercase with context (word-final Σ -> ς), as a whole-string lowercase does.
std::string ContextLowercaseNormalize(const std::string& text) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(text);
  u.toLower(icu::Locale::getRoot());
  std::string lowered;
  u.toUTF8String(lowered);
  return NormalizeText(lowered);
}

// Each variant is a port with one known bug (engram_numpy_port --bug NAME
// plants it independently, §VEC.12): kSentinelLess (sentinel-less), a
// normalizer without the sentinel steps; kContextLowercase
// (context-lowercase), a lowercase with the word-final sigma rule;
// kPythonWrapper (python-wrapper-decode), transformers' clean-up of spaces;
// kAddedTokenContent (added-token-content), an added token's text is its
// content as it is, not decoded through the byte table.
enum class Variant { kSentinelLess, kContextLowercase, kPythonWrapper, kAddedTokenContent };

std::vector<int64_t> VariantMap(const Tokenizer& tk, Variant variant) {
  if (variant == Variant::kPythonWrapper) return MutantTokenMap(Mutant::kPythonWrapperDecode, tk);
  std::map<std::string, int64_t> seen;
  std::vector<int64_t> map;
  for (size_t id = 0; id < tk.tokens.size(); ++id) {
    const std::string& token = tk.tokens[id];
    const bool as_content = variant == Variant::kAddedTokenContent && tk.added[id] != 0;
    std::string text = as_content ? token : DecodeToken(token);
    std::string key;
    if (text.find("\xEF\xBF\xBD") != std::string::npos) {
      key = token;
    } else {
      std::string n = variant == Variant::kSentinelLess       ? SentinelLessNormalize(text)
                      : variant == Variant::kContextLowercase ? ContextLowercaseNormalize(text)
                                                              : NormalizeText(text);
      key = n.empty() ? text : n;
    }
    auto it = seen.try_emplace(key, static_cast<int64_t>(seen.size())).first;
    map.push_back(it->second);
  }
  return map;
}

// ---------------------------------------------------------------------------

ojson IntermediateJson(const Tokenizer& tk, const std::vector<TokenKey>& keys, const TokenMap& tm) {
  ojson out = ojson::array();
  for (size_t id = 0; id < keys.size(); ++id) {
    const TokenKey& k = keys[id];
    ojson e;
    e["id"] = id;
    e["token"] = tk.tokens[id];
    e["added"] = tk.added[id] != 0;
    e["special"] = tk.special[id] != 0;
    e["text"] = k.text;
    e["replacement"] = k.replacement;
    if (!k.replacement) e["normalized"] = k.normalized;
    e["keyKind"] = std::string(KeyKindName(k.kind));
    e["key"] = k.key;
    e["compressedId"] = tm.map[id];
    out.push_back(std::move(e));
  }
  return out;
}

// One test's inputs -> its expected fields (result, outputs, intermediate).
// With `variant`, the fields a port computing that variant's map would give
// (no intermediate): the generator compares them with the expected fields to
// flag the tests a port with that divergence fails (§CONF.4).
// With `pad_wraps`, the pad as array indexing takes it (§VEC.12 NegativePadWraps: the official V4.1
// code's token_map[args.engram_pad_id] in torch, the upstream demo's lookup_table[pad_id] in numpy):
// a pad id in [-T, -1] reads map[T + pad id] instead of a refusal.
ojson Expected(const std::string& tokenizer_json, const json& test_inputs,
               const std::optional<Variant>& variant = std::nullopt, bool pad_wraps = false) {
  ojson fields;
  try {
    const Tokenizer tk = ParseTokenizerJson(tokenizer_json, "tokenizer.json");
    std::vector<TokenKey> keys;
    TokenMap tm = BuildTokenMap(tk, &keys);
    if (variant) {
      tm.map = VariantMap(tk, *variant);
      tm.compressed_size = tm.map.empty() ? 0 : *std::max_element(tm.map.begin(), tm.map.end()) + 1;
    }
    std::optional<int64_t> pad;
    if (test_inputs.contains("padId") || test_inputs.contains("engramCompressedVocabSize")) {
      // §TOK.4 through a minimal v4.1 configuration view.
      EngramConfig config;
      config.profile = Profile::kV41;
      config.source = "config";
      config.pad_id = test_inputs.value("padId", int64_t{0});
      if (test_inputs.contains("engramCompressedVocabSize")) {
        config.compressed_vocab_size = test_inputs["engramCompressedVocabSize"].get<int64_t>();
      }
      const bool wraps = pad_wraps && config.pad_id < 0 && config.pad_id >= -tm.tokens();
      if (wraps) config.pad_id += tm.tokens();  // the size check is unchanged; the entry read is map[T + pad]
      pad = CheckTokenMapForConfig(tm, config);
    }
    fields["result"] = "valid";
    fields["tokens"] = tm.tokens();
    fields["compressedSize"] = tm.compressed_size;
    fields["sha256"] = TokenMapDigest(tm);
    fields["map"] = tm.map;
    if (pad && test_inputs.contains("padId")) fields["compressedPad"] = *pad;
    if (!variant) fields["intermediate"] = IntermediateJson(tk, keys, tm);
  } catch (const Error& e) {
    fields["result"] = "invalid";
    fields["error"] = e.what();
  }
  return fields;
}

// §CONF.4 Appends the flag of every variant whose port would fail this test:
// its result differs, or one of the outputs a port returns (not the
// intermediate values, not the informative error) does.
void AddVariantFlags(std::vector<std::string>& flags, const std::string& text, const json& inputs,
                     const ojson& expected) {
  const std::pair<Variant, const char*> variants[] = {{Variant::kSentinelLess, "SentinelLessNormalizer"},
                                                      {Variant::kContextLowercase, "ContextLowercase"},
                                                      {Variant::kPythonWrapper, "PythonWrapperDecode"},
                                                      {Variant::kAddedTokenContent, "AddedTokenByteLevel"}};
  for (const auto& [variant, flag] : variants) {
    const ojson got = Expected(text, inputs, variant);
    bool differs = got["result"] != expected["result"];
    for (const char* key : {"tokens", "compressedSize", "sha256", "map", "compressedPad"}) {
      if (expected["result"] == "valid" && (expected.contains(key) != got.contains(key) ||
                                            (expected.contains(key) && expected[key] != got[key]))) {
        differs = true;
      }
    }
    if (differs) flags.push_back(flag);
  }
}

// §VEC.12 "HfLoaderUnchecked": the official V4.1 code builds its map through a Hugging Face tokenizer
// (spec/sources.md [SRC-V41], build_compressed_token_map: `len(tokenizer)`, `backend_tokenizer.decode`),
// whose loader reads a tokenizer.json without §TOK.1's checks of ids and decoder. The file such a port
// accepts, made into one the reference reads (the outcome is what decides a flag: an accepted invalid test
// fails whatever map it gives): vocab ids renumbered 0 .. n-1 in id order (holes and duplicate ids
// accepted), each added token given the id the loader assigns (a declared id is ignored), a decoder other
// than ByteLevel replaced by ByteLevel (any decoder is used as it is). What the loader cannot read stays
// refused: text that is not JSON, a vocab id that is not an unsigned 32-bit integer, a model type other than
// BPE (a model without `type` is read as BPE from its fields), and a ByteLevel decoder step without
// add_prefix_space or trim_offsets (its deserializer has no defaults for them). On a file §TOK.1 accepts
// with full ByteLevel decoders (every valid vector's) this is the identity.
std::optional<std::string> HfLoaderRead(const std::string& text) {
  ojson doc;
  try {
    doc = ojson::parse(text);  // a token given twice: the later id wins, as in the loader's map
  } catch (const ojson::exception&) {
    return std::nullopt;
  }
  if (!doc.is_object() || !doc.contains("model") || !doc["model"].is_object()) return std::nullopt;
  ojson& model = doc["model"];
  if (!model.contains("type")) model["type"] = "BPE";
  if (model["type"] != "BPE" || !model.contains("vocab") || !model["vocab"].is_object()) return std::nullopt;
  std::vector<std::pair<uint64_t, std::string>> by_id;
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() > 0xFFFFFFFFu) return std::nullopt;
    by_id.emplace_back(id.get<uint64_t>(), token);
  }
  std::sort(by_id.begin(), by_id.end());
  ojson vocab = ojson::object();
  for (size_t i = 0; i < by_id.size(); ++i) vocab[by_id[i].second] = i;
  model["vocab"] = vocab;
  // The loader's ids of the added tokens (the rule §TOK.1 checks the declared ids against).
  const int64_t n = static_cast<int64_t>(by_id.size());
  std::map<std::string, int64_t> added_ids;
  int64_t added_max = -1;
  if (doc.contains("added_tokens") && doc["added_tokens"].is_array()) {
    for (ojson& a : doc["added_tokens"]) {
      if (!a.is_object() || !a.contains("content") || !a["content"].is_string()) continue;  // refused as before
      const std::string content = a["content"];
      int64_t id = 0;
      if (auto seen = added_ids.find(content); seen != added_ids.end()) {
        id = seen->second;
      } else if (vocab.contains(content)) {
        id = vocab[content].get<int64_t>();
      } else {
        id = added_max < 0 ? n : (added_max >= n || n == 0 ? added_max + 1 : n);
      }
      added_ids[content] = id;
      added_max = std::max(added_max, id);
      a["id"] = id;
    }
  }
  const ojson byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  auto unreadable_byte_level = [](const ojson& step) {
    return step.is_object() && step.value("type", "") == "ByteLevel" &&
           (!step.contains("add_prefix_space") || !step.contains("trim_offsets"));
  };
  if (doc.contains("decoder") && doc["decoder"].is_object()) {
    const ojson& d = doc["decoder"];
    if (unreadable_byte_level(d)) return std::nullopt;
    const bool sequence = d.value("type", "") == "Sequence" && d.contains("decoders") && d["decoders"].is_array();
    if (sequence) {
      for (const ojson& step : d["decoders"]) {
        if (unreadable_byte_level(step)) return std::nullopt;
      }
    }
    const bool one_byte_level = d.value("type", "") == "ByteLevel" ||
                                (sequence && d["decoders"].size() == 1 && d["decoders"][0].value("type", "") == "ByteLevel");
    if (!one_byte_level) doc["decoder"] = byte_level;
  } else {
    doc["decoder"] = byte_level;  // none: tokens joined as they are; the map differs, the file loads
  }
  return doc.dump();
}

// Appends HfLoaderUnchecked (noted where first used) where a port that reads tokenizer.json through the
// Hugging Face loader (HfLoaderRead: the reference on the file it reads, or a refusal) fails the test: its
// result differs, or one of the outputs a port returns does.
void AddHfLoaderFlag(SuiteBuilder& b, std::vector<std::string>& flags, const std::string& text, const json& inputs,
                     const ojson& expected) {
  const std::optional<std::string> read = HfLoaderRead(text);
  const ojson got = read ? Expected(*read, inputs) : ojson{{"result", "invalid"}};
  bool differs = got["result"] != expected["result"];
  for (const char* key : {"tokens", "compressedSize", "sha256", "map", "compressedPad"}) {
    if (expected["result"] == "valid" && (expected.contains(key) != got.contains(key) ||
                                          (expected.contains(key) && expected[key] != got[key]))) {
      differs = true;
    }
  }
  if (!differs) return;
  if (!b.HasNote("HfLoaderUnchecked")) {
    b.Divergence("HfLoaderUnchecked",
                 "Changes under the official V4.1 code's map building (build_compressed_token_map over a Hugging Face "
                 "tokenizer: len(tokenizer), backend_tokenizer.decode), whose loader makes none of §TOK.1's checks of "
                 "ids and decoder: a vocab hole, a duplicate id, an added token whose declared id is not the one the "
                 "loader gives, and a decoder other than ByteLevel (or none) are accepted and some map is built; "
                 "§TOK.1 refuses the file.",
                 "§TOK.1", "hf-loader-unchecked");
  }
  flags.push_back("HfLoaderUnchecked");
}

// §HASH.1 raw ids through the map (defined below).
void AddLookupGroups(SuiteBuilder& b, const std::string& text, const std::string& about);
// §HASH.1 a mask shorter than the ids (defined below; appended after every earlier group).
void AddShortMaskGroup(SuiteBuilder& b, const std::string& text);

void AddTokenMapNotes(SuiteBuilder& b) {
  b.Header("Compressed token map: a Hugging Face tokenizer.json (embedded as text in each group) -> map[raw id] =");
  b.Header("compressed id, its size and the SHA-256 of the map as int32 little-endian. Intermediate values per id:");
  b.Header("the raw token string, the decoded text, whether it holds U+FFFD, the normalized text, the key and its kind.");
  b.Note("ByteLevelDecode", "BASIC", "Vocab tokens decode through the GPT-2 byte<->unicode table, then UTF-8.", "§TOK.2");
  b.Note("PartialUtf8", "BASIC",
         "Tokens holding part of a UTF-8 sequence decode to U+FFFD; their key is the raw token string.", "§TOK.4");
  b.Note("MaximalSubpart", "EDGE_CASE",
         "One U+FFFD per maximal invalid subpart (Rust from_utf8_lossy), not one per byte or per token.", "§TOK.2");
  b.Note("SpaceToken", "EDGE_CASE",
         "A token that is exactly one space (Ġ), or any run of [ \\t\\r\\n], keeps the key \" \" (the U+E000 sentinel).",
         "§TOK.3");
  b.Note("WhitespaceRuns", "BASIC", "Runs of space, tab, CR, LF (Ġ, ĉ, č, Ċ) collapse to one space before stripping.",
         "§TOK.3");
  b.Note("EmptyNormalization", "EDGE_CASE",
         "Texts that normalize to \"\" (lone marks, White_Space such as U+2028, U+0085, VT, FF) keep their text as key.",
         "§TOK.4");
  b.Note("CombiningMarks", "BASIC", "Every Mn, Mc and Me code point is removed after NFD (HF StripAccents).", "§TOK.3");
  b.Note("Compatibility", "BASIC", "NFKC folds compatibility characters: ligatures, circled, full-width, super/subscripts.",
         "§TOK.3");
  b.Note("Lowercase", "BASIC", "Per-code-point full lowercase (Rust char::to_lowercase): Σ -> σ always.", "§TOK.3");
  b.Note("DottedCapitalI", "EDGE_CASE",
         "İ (U+0130): NFD splits it into I + U+0307 before lowercasing, so it keys as \"i\".", "§TOK.3");
  b.Note("Scripts", "BASIC", "Greek, Cyrillic, CJK, Hangul, Thai, Hebrew, Devanagari and emoji (ZWJ, skin tones, VS16).",
         "§TOK.3");
  b.Note("AddedTokens", "BASIC",
         "Added tokens (special or not) decode like any token; an added token already in the vocab keeps its id.",
         "§TOK.1");
  b.Divergence("AddedTokenByteLevel",
               "An added token made only of byte-table characters (e.g. \"Ġy\") decodes through the table (\" y\") in "
               "the Rust backend. Changes under the known bug of taking an added token's text as its content, "
               "unchanged (no byte table, no lossy UTF-8).",
               "§TOK.2", "added-token-content");
  b.Note("SharedDictionary", "EDGE_CASE",
         "Keys of different kinds coincide (a raw token string equals another token's normalized text): one dictionary, "
         "one id.",
         "§TOK.4");
  b.Note("PadMapping", "BASIC", "The compressed pad is map[pad id].", "§TOK.4");
  b.Divergence("SentinelLessNormalizer",
               "Changes under the known bug of a normalizer without the U+E000 sentinel steps (§TOK.3 steps 6 and 8): "
               "a text whose whitespace collapses to \" \" is stripped to \"\" and keys as its own text, and the "
               "text's own U+E000 stays U+E000.",
               "§TOK.3", "sentinel-less");
  b.Divergence("ContextLowercase",
               "Changes under the known bug of a context-sensitive lowercase of the whole text (word-final Σ -> ς, "
               "as Python str.lower or ICU u_strToLower do) instead of one code point at a time.",
               "§TOK.3", "context-lowercase");
  AddMutantNotes(b, {Mutant::kPythonWrapperDecode});
  // Not a KNOWN_DIVERGENCE: the divergence is a deployment's (a map built from
  // another tokenizer file than the model's), not a port's. A port that builds
  // the map from the file it is given passes; what the test pins is the §TOK.6
  // digest telling two revisions of the same size apart.
  b.Note("WrongTokenizerRevision", "EDGE_CASE",
         "Revision B of the previous group's tokenizer: two tokens trade ids, so the number of tokens and of "
         "compressed ids are those of revision A but the map and its sha256 differ: only the digest of the whole map, "
         "not its size, tells a map built from the wrong revision apart (§TOK.6).",
         "§TOK.6");
  b.Note("SizeMismatch", "INVALID_INPUT",
         "v4.1: a map whose size is not engram_compressed_vocab_size must be refused.", "§TOK.4");
  b.Note("VocabHole", "INVALID_INPUT", "Vocab ids must be 0 .. n-1: an id without a token must be refused.", "§TOK.1");
  b.Note("DuplicateId", "INVALID_INPUT", "Two tokens with the same id (vocab or added) must be refused.", "§TOK.1");
  b.Note("AddedIdMismatch", "INVALID_INPUT",
         "An added token whose id is not the one the Hugging Face loader assigns (it ignores the file's id) must be "
         "refused.",
         "§TOK.1");
  b.Note("UnsupportedModel", "INVALID_INPUT", "model.type other than \"BPE\" (or missing) must be refused.", "§TOK.1");
  b.Note("UnsupportedDecoder", "INVALID_INPUT",
         "A decoder other than ByteLevel (alone or as the only step of a Sequence) must be refused.", "§TOK.1");
  b.Note("MalformedTokenizer", "INVALID_INPUT", "Not JSON, or a vocab id that is not an integer.", "§TOK.1");

}

std::string DocText(const ojson& d) { return d.dump(); }

struct Case {
  std::string comment;
  std::string text;  // the tokenizer.json text
  std::vector<std::string> flags;
  std::vector<std::string> refs;
  std::vector<json> extra;  // additional tests: their inputs (padId, engramCompressedVocabSize)
  std::vector<std::vector<std::string>> extra_flags;
};

// Invalid tokenizers.
struct Bad {
  std::string comment;
  std::string text;
  std::string flag;
};

// The valid tokenizers, each a group: the whole map, then the extra tests
// (pad id, v4.1 size) of the same tokenizer.
std::vector<Case> ValidCases() {
  std::vector<Case> cases;

  // 1. Bytes and whitespace.
  {
    std::vector<std::string> v = {
        B("a"), B("A"), B(" "), B("  "), B(" a"), B("a "), B("\n"), B("\t"), B("\r"), B("\r\n"), B(" \t\n "),
        B("\t\t"), B("a\tb"), B("a \n b"), B("a  b"), B("\x0b"), B("\x0c"), B("\x1c"), B("\xc2\x85"),
        B("\xe2\x80\xa8"), B("\xe3\x80\x80"), B("\xc2\xa0"), B("\xee\x80\x80"), B("a\xee\x80\x80"),
        B("\xe2\x80\x8b"), B("\xc3"), B("\xf0\x9f"), B("\xf0\x9f\x98"), B("\xf0\x9f\x98\x80"), B("\x80"),
        B("\xed\xa0\x80"), B("\xe0\x80"), B("\xc0\xaf"), B("\xf4\x90\x80\x80"), B("\xe2\x82"), B("a\xe2\x82z"),
        B("\xf0"), B("\xc3\xb0"), "\xef\xbf\xbd", B("\xef\xbf\xbd"), "\xc4\xa0\xe4\xb8\xad", B("\xcc\x81"),
        B("\xe2\x83\x9d"), B("\xff\xfe"), B("\x00"), B("\x7f")};
    cases.push_back({"bytes and whitespace: space/tab/CR/LF runs, partial UTF-8, lone marks, private-use sentinel",
                     DocText(TokenizerDoc(v, {})),
                     {"ByteLevelDecode", "PartialUtf8", "MaximalSubpart", "SpaceToken", "WhitespaceRuns",
                      "EmptyNormalization", "SharedDictionary"},
                     {"§TOK.1", "§TOK.2", "§TOK.3", "§TOK.4"},
                     {},
                     {}});
  }
  // 2. Unicode normalization and scripts.
  {
    const char* texts[] = {
        "e", "\xc3\xa9", "e\xcc\x81", "\xc3\x89", "E", "\xef\xac\x81", "fi", "\xe2\x91\xa0", "1", "\xe2\x92\xb6",
        "a", "\xef\xbc\xa1", "\xef\xbd\x81", "\xe2\x84\xa6", "\xcf\x89", "\xce\xa3\xce\x91\xce\xa3",
        "\xcf\x83\xce\xb1\xcf\x83", "\xcf\x83\xce\xb1\xcf\x82", "\xce\x9f\xce\x94\xce\x9f\xce\xa3", "\xce\xa3",
        "\xcf\x82", "\xc4\xb0", "i", "I", "\xc4\xb1", "\xc7\x85", "\xc3\x9f", "\xe1\xba\x9e", "\xe2\x84\xab",
        "\xe1\xbc\x88\xce\xb8\xe1\xbf\x86\xce\xbd\xce\xb1\xce\xb9", "\xce\xb1\xce\xb8\xce\xb7\xce\xbd\xce\xb1\xce\xb9",
        "\xd0\x9c\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0", "\xd0\xbc\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0",
        "\xd0\x99", "\xd0\xb8", "\xd1\x91", "\xe4\xb8\xad\xe6\x96\x87", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
        "\xed\x95\x9c\xea\xb5\xad", "\xf0\x9f\x91\x8d", "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
        "\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7", "\xe2\x9d\xa4\xef\xb8\x8f",
        "\xe2\x9d\xa4", "1\xef\xb8\x8f\xe2\x83\xa3", "\xe0\xa4\x95\xe0\xa5\x8d\xe0\xa4\xb7\xe0\xa4\xbf",
        "\xe0\xa4\x95\xe0\xa4\xbf", "\xe0\xa4\x95", "\xe0\xa4\x83", "a\xe2\x83\x9d", "\xe0\xb8\x97\xe0\xb8\xb5\xe0\xb9\x88",
        "\xe0\xb8\x97", "\xd7\xa9\xd6\xb8\xd7\x81\xd7\x9c\xd7\x95\xd6\xb9\xd7\x9d", "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d",
        "\xef\xbe\x8a\xef\xbe\x9f", "\xe3\x83\x8f", "\xe3\x8d\xbf", "x\xc2\xb2", "x2", "\xc2\xbd", "\xe2\x85\xab",
        "\xe2\x84\xa2", " Hello", "hello", "HELLO"};
    std::vector<std::string> v;
    for (const char* t : texts) v.push_back(B(t));
    cases.push_back({"Unicode: NFKC compatibility, accents and marks (Mn, Mc, Me), case, sigma, İ, scripts, emoji",
                     DocText(TokenizerDoc(v, {})),
                     {"ByteLevelDecode", "Compatibility", "CombiningMarks", "Lowercase", "DottedCapitalI", "Scripts",
                      "EmptyNormalization"},
                     {"§TOK.2", "§TOK.3", "§TOK.4"},
                     {},
                     {}});
  }
  // 3. Added tokens; pad mapping and the v4.1 size check.
  std::string added_text;
  {
    std::vector<std::string> v = {"<s>", "a", "b", B(" x"), "y"};
    std::vector<Added> added = {{0, "<s>", true},
                                {5, "<\xef\xbd\x9c" "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", true},
                                {6, "<|pad|>", true},
                                {7, "<think>", false},
                                {8, B(" y"), false},
                                {9, B("  "), true},
                                {10, "<\xef\xbd\x9cUser\xef\xbd\x9c>", false},
                                {11, "\xef\xbc\xa1", false},
                                {12, "\xc3\xa9", false}};
    added_text = DocText(TokenizerDoc(v, added));
    cases.push_back({"added tokens, special and not: in the vocab, outside the table, made of table characters",
                     added_text,
                     {"AddedTokens", "SharedDictionary", "PartialUtf8", "SpaceToken"},
                     {"§TOK.1", "§TOK.2", "§TOK.4"},
                     {json{{"padId", 6}}, json{{"padId", 6}, {"engramCompressedVocabSize", 10}},
                      json{{"padId", 6}, {"engramCompressedVocabSize", 11}}, json{{"padId", 13}}},
                     {{"PadMapping"}, {"SizeMismatch"}, {"PadMapping"}, {"PadMapping"}}});
  }
  // 4/5. Two revisions of one tokenizer: same size, different maps.
  {
    std::vector<std::string> v = {B("."), B(".."), B(" . ."), B("x n't"), B("xn't"), B("don"), B("Don"), B("'s"),
                                  B(" 's"), B("it 's"), B("it's")};
    cases.push_back({"revision A (also: texts that transformers' clean_up_tokenization would change)",
                     DocText(TokenizerDoc(v, {})),
                     {"ByteLevelDecode", "WhitespaceRuns"},
                     {"§TOK.2", "§TOK.4", "§TOK.6"},
                     {},
                     {}});
    std::swap(v[5], v[7]);  // two tokens trade ids: same size, different map
    cases.push_back({"revision B: two tokens of revision A trade ids; same compressed size, different sha256",
                     DocText(TokenizerDoc(v, {})),
                     {"WrongTokenizerRevision"},
                     {"§TOK.4", "§TOK.6"},
                     {},
                     {}});
  }
  // 6. Decoder as a one-step Sequence.
  cases.push_back({"decoder: a Sequence whose only step is ByteLevel decodes the same",
                   DocText(TokenizerDoc({B("a"), B(" b"), B("\xc3")}, {},
                                         {{"type", "Sequence"}, {"decoders", {{{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}}}})),
                   {"ByteLevelDecode"},
                   {"§TOK.1", "§TOK.2"},
                   {},
                   {}});
  return cases;
}

// Tokenizers the reference must refuse, each with its flag.
std::vector<Bad> BadCases() {
  std::vector<Bad> bad;
  {
    ojson hole = TokenizerDoc({"a", "b", "c"}, {});
    hole["model"]["vocab"]["c"] = 3;
    bad.push_back({"vocab ids 0, 1, 3: id 2 is a hole", DocText(hole), "VocabHole"});
    ojson dup = TokenizerDoc({"a", "b", "c"}, {});
    dup["model"]["vocab"]["c"] = 1;
    bad.push_back({"vocab: two tokens with id 1 (and a hole at 2)", DocText(dup), "DuplicateId"});
    std::string twice = DocText(TokenizerDoc({"a", "b"}, {}));
    const std::string needle = "\"b\":1";
    twice.replace(twice.find(needle), needle.size(), "\"b\":1,\"a\":2");
    bad.push_back({"vocab: the token \"a\" appears twice (ids 0 and 2)", twice, "DuplicateId"});
    bad.push_back({"added token declares the id of another vocab token",
                   DocText(TokenizerDoc({"a", "b"}, {{1, "<s>", true}})), "DuplicateId"});
    bad.push_back({"added token twice with one id", DocText(TokenizerDoc({"a", "b"}, {{2, "<s>", true}, {2, "</s>", true}})),
                   "DuplicateId"});
    bad.push_back({"added token \"a\" is vocab id 0 but declares id 2 (the HF loader gives it 0)",
                   DocText(TokenizerDoc({"a", "b"}, {{2, "a", true}})), "AddedIdMismatch"});
    bad.push_back({"added token declares id 3 where the next id is 2: id 2 would be a hole",
                   DocText(TokenizerDoc({"a", "b"}, {{3, "<s>", true}})), "VocabHole"});
    bad.push_back({"model.type WordPiece", DocText(TokenizerDoc({"a", "b"}, {}, {{"type", "ByteLevel"}}, "WordPiece")),
                   "UnsupportedModel"});
    bad.push_back({"model.type missing", DocText(TokenizerDoc({"a", "b"}, {}, {{"type", "ByteLevel"}}, "")),
                   "UnsupportedModel"});
    bad.push_back({"decoder WordPiece", DocText(TokenizerDoc({"a", "b"}, {}, {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}})),
                   "UnsupportedDecoder"});
    bad.push_back({"decoder null (tokens would be joined as they are)", DocText(TokenizerDoc({"a", "b"}, {}, nullptr)),
                   "UnsupportedDecoder"});
    bad.push_back({"decoder Sequence of two ByteLevel steps (decodes twice: different text)",
                   DocText(TokenizerDoc({"a", "b"}, {}, {{"type", "Sequence"}, {"decoders", {{{"type", "ByteLevel"}}, {{"type", "ByteLevel"}}}}})),
                   "UnsupportedDecoder"});
    ojson neg = TokenizerDoc({"a", "b"}, {});
    neg["model"]["vocab"]["b"] = -1;
    bad.push_back({"vocab id -1", DocText(neg), "MalformedTokenizer"});
    ojson flt = TokenizerDoc({"a", "b"}, {});
    flt["model"]["vocab"]["b"] = 1.5;
    bad.push_back({"vocab id 1.5", DocText(flt), "MalformedTokenizer"});
    std::string cut = DocText(TokenizerDoc({"a", "b"}, {}));
    bad.push_back({"truncated JSON", cut.substr(0, cut.size() / 2), "MalformedTokenizer"});
  }
  return bad;
}

void AddCaseGroups(SuiteBuilder& b, const std::vector<Case>& cases, const std::vector<Bad>& bad) {
  for (const Case& c : cases) {
    const size_t g = b.Group({{"type", "TokenMapTest"}, {"comment", c.comment}, {"tokenizerJson", c.text}});
    ojson fields = Expected(c.text, json::object());
    std::vector<std::string> flags = c.flags;
    AddVariantFlags(flags, c.text, json::object(), fields);
    AddHfLoaderFlag(b, flags, c.text, json::object(), fields);
    b.Test(g, "the map of the whole tokenizer", flags, c.refs, fields);
    for (size_t k = 0; k < c.extra.size(); ++k) {
      ojson inputs = ojson::parse(c.extra[k].dump());
      ojson f = inputs;
      const ojson expected = Expected(c.text, c.extra[k]);
      for (const auto& [key, value] : expected.items()) f[key] = value;
      std::string comment = "pad id " + c.extra[k]["padId"].dump();
      if (c.extra[k].contains("engramCompressedVocabSize")) {
        comment += ", v4.1 engram_compressed_vocab_size " + c.extra[k]["engramCompressedVocabSize"].dump();
      }
      std::vector<std::string> extra_flags = c.extra_flags[k];
      AddVariantFlags(extra_flags, c.text, c.extra[k], expected);
      AddHfLoaderFlag(b, extra_flags, c.text, c.extra[k], expected);
      b.Test(g, comment, extra_flags, {"§TOK.4"}, f);
    }
  }
  for (const Bad& x : bad) {
    const size_t g = b.Group({{"type", "TokenMapTest"}, {"comment", x.comment}, {"tokenizerJson", x.text}});
    ojson fields = Expected(x.text, json::object());
    if (fields["result"] != "invalid") throw Error("generator: the reference accepts the bad tokenizer: " + x.comment);
    std::vector<std::string> flags = {x.flag};
    AddHfLoaderFlag(b, flags, x.text, json::object(), fields);
    b.Test(g, x.comment, flags, {"§TOK.1"}, fields);
  }
}

// §TOK.4 / §CFG.4 negative pad ids (appended after every earlier group, so that their tcIds stay): refused;
// the §VEC.12 divergence of ports that index the map with the pad id as an array index (found measuring the
// public ports, docs/ports.md) is computed by Expected(..., pad_wraps).
void AddNegativePadGroup(SuiteBuilder& b, const std::string& text) {
  b.Note("NegativePadId", "INVALID_INPUT",
         "A negative pad id is outside the token map [0, T): it must be refused, not read from the end of the map.",
         "§TOK.4");
  const size_t g = b.Group({{"type", "TokenMapTest"},
                            {"comment", "the added-tokens tokenizer again: negative pad ids"},
                            {"tokenizerJson", text}});
  const int64_t t_count = ParseTokenizerJson(text, "tokenizer.json").size();
  for (const int64_t pad : {int64_t{-1}, -t_count - 1}) {
    const json in = {{"padId", pad}};
    const ojson expected = Expected(text, in);
    if (expected["result"] != "invalid") throw Error("generator: the reference accepts pad id " + std::to_string(pad));
    std::vector<std::string> flags = {"NegativePadId"};
    AddVariantFlags(flags, text, in, expected);
    AddHfLoaderFlag(b, flags, text, in, expected);
    if (Expected(text, in, std::nullopt, true)["result"] != expected["result"]) {
      if (!b.HasNote("NegativePadWraps")) {
        b.Divergence("NegativePadWraps",
                     "Changes under the pad lookup of the official V4.1 code (NgramHashState: "
                     "token_map[args.engram_pad_id], torch indexing) and of the upstream demo (NgramHashMapping: "
                     "lookup_table[pad_id], numpy indexing): a pad id in [-T, -1] reads map[T + pad id], the "
                     "compressed id of another token, where §TOK.4 refuses a pad id outside [0, T); pad ids below "
                     "-T raise there too.",
                     "§TOK.4", "negative-pad-wraps");
      }
      flags.push_back("NegativePadWraps");
    }
    ojson fields = ojson::parse(in.dump());
    for (const auto& [key, value] : expected.items()) fields[key] = value;
    b.Test(g, pad == -1 ? "pad id -1 (array indexing would read map[T - 1])" : "pad id -T - 1 (below any index)",
           flags, {"§TOK.4", "§CFG.4"}, fields);
  }
}

ojson GenerateTokenMap() {
  SuiteBuilder b("token_map", "token_map.schema.json", "ENGRAM-TOKEN-MAP");
  AddTokenMapNotes(b);
  const std::vector<Case> cases = ValidCases();
  AddCaseGroups(b, cases, BadCases());
  // §HASH.1 raw ids (added after the groups above, so that their tcIds stay as they were).
  b.Note("RawIdsToCompressed", "BASIC", "Raw tokenizer ids through the map (§TOK.4): the ids the hash takes.", "§HASH.1");
  b.Note("MaskToDead", "BASIC",
         "v4.1: a raw -1, and a position whose mask entry is false, become DEAD (-1); the mask applies after the lookup.",
         "§HASH.1");
  b.Note("NegativeRawIdPassThrough", "BASIC", "demo-v1: negative raw ids pass through unchanged.", "§HASH.1");
  b.Note("RawIdOutsideTokenizer", "INVALID_INPUT",
         "A raw id outside the tokenizer must be refused (v4.1: >= T, masked or not, and negatives other than -1; "
         "demo-v1: >= T).",
         "§HASH.1");
  b.Note("BadMask", "INVALID_INPUT", "A mask of another length, or a mask given to demo-v1, must be refused.", "§HASH.1");
  AddLookupGroups(b, cases[1].text, "the Unicode tokenizer (case pairs, marks, scripts)");
  AddLookupGroups(b, cases[0].text, "the bytes-and-whitespace tokenizer (partial UTF-8, spaces)");
  AddNegativePadGroup(b, cases[2].text);
  AddShortMaskGroup(b, cases[2].text);
  return b.Finish();
}

// §VEC.12 "RawIdOutsideTokenizerPad": LookupPolicy::kOutsideToPad's flag (planted bug:
// engram_numpy_port --bug raw-outside-pad).
constexpr const char* kRawIdOutsidePadFlag = "RawIdOutsideTokenizerPad";

// §VEC.12 "OfficialMaskBroadcast": LookupPolicy::kMaskBroadcast's flag (planted bug:
// engram_numpy_port --bug mask-broadcast), noted where first used.
constexpr const char* kMaskBroadcastFlag = "OfficialMaskBroadcast";
void NoteMaskBroadcast(SuiteBuilder& b) {
  if (b.HasNote(kMaskBroadcastFlag)) return;
  b.Divergence(kMaskBroadcastFlag,
               "Changes under the mask of the official V4.1 code (NgramHashState: torch.where(token_mask, compressed, "
               "DEAD)), which broadcasts a mask of one entry over every position ([1, 1] over [1, L]) where §HASH.1 "
               "refuses a mask of another length; masks of other lengths raise there too.",
               "§HASH.1", "mask-broadcast");
}

// How a port turns raw ids into compressed ids: the rule of §HASH.1, or a
// policy of a real port that §VEC.12 catalogues (v4.1 only).
enum class LookupPolicy {
  kSpec,             // §HASH.1: raw -1 is DEAD, other ids outside [0, T) refused
  kBeyondDead,       // a llama.cpp fork: a raw id >= T becomes DEAD instead of a refusal
  kOutsideToPad,     // Luce-Org/lucebox (DeepSeek4EngramHasher::compress): every raw id outside
                     // [0, T), raw -1 included, becomes the compressed pad; then the mask
  kOfficialIndexing, // the official V4.1 NgramHashState (spec/sources.md [SRC-V41]):
                     // token_map[input_ids] with torch indexing (a negative id x >= -T
                     // reads map[T + x], raw -1 included; the others raise), then the
                     // mask (torch.where) turns masked positions into DEAD
  kMaskBroadcast,    // the same NgramHashState's torch.where(token_mask, compressed, DEAD): a
                     // mask of one entry is broadcast over every position ([1, 1] over
                     // [1, L]); other lengths raise there (torch.where, or the cache's
                     // slice assignment), as §HASH.1 refuses them
  kClampToTable,     // sglang's EngramHasher.forward (spec/sources.md [SRC-PORT-SGLANG]): every raw
                     // id clamped into [0, T - 1] before token_map[...], raw -1 included; then the mask
};

// §HASH.1 The compressed ids of a TokenLookupTest: {"result", "ids"} or
// {"result": "invalid", "error"}. `map` is the map a port builds (the
// reference's, or a variant's); `policy` plants a real port's lookup.
ojson LookupExpected(const TokenMap& map, const json& test, Profile profile, LookupPolicy policy = LookupPolicy::kSpec) {
  ojson out;
  try {
    std::vector<int64_t> raw = test.at("rawIds").get<std::vector<int64_t>>();
    std::vector<uint8_t> mask;
    if (test.contains("mask")) {
      for (const json& m : test["mask"]) mask.push_back(m.get<bool>() ? 1 : 0);
      // An empty span is CompressIds' "no mask": a given mask of no entries
      // for some ids is a mask of another length all the same (§TOK.7; the
      // plug-in host refuses it too). Found by the random cases (§CONF.7).
      if (policy == LookupPolicy::kMaskBroadcast && profile == Profile::kV41 && mask.size() == 1) {
        mask.assign(raw.size(), mask[0]);  // broadcast over every position (over none: no mask entries)
      }
      if (mask.size() != raw.size()) {
        throw Error("mask has " + std::to_string(mask.size()) + " entries but there are " + std::to_string(raw.size()) +
                    " ids");
      }
    }
    std::vector<size_t> beyond;  // positions the fork turns into DEAD
    if (policy == LookupPolicy::kBeyondDead && profile == Profile::kV41) {
      for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] >= map.tokens()) {
          beyond.push_back(i);
          raw[i] = kDead;
        }
      }
    }
    std::vector<int64_t> ids;
    if (policy == LookupPolicy::kOutsideToPad && profile == Profile::kV41) {
      // A TokenLookupTest has no pad: any compressed id stands for it (here 0), since every position it
      // lands on holds DEAD or a refusal under §HASH.1, which no compressed id equals.
      for (size_t i = 0; i < raw.size(); ++i) {
        const bool outside = raw[i] < 0 || raw[i] >= map.tokens();
        const int64_t c = outside ? 0 : map.map[static_cast<size_t>(raw[i])];
        ids.push_back(!mask.empty() && mask[i] == 0 ? kDead : c);
      }
    } else if (policy == LookupPolicy::kClampToTable && profile == Profile::kV41) {
      const int64_t t = map.tokens();
      for (size_t i = 0; i < raw.size(); ++i) {
        const int64_t c = map.map[static_cast<size_t>(std::clamp<int64_t>(raw[i], 0, t - 1))];
        ids.push_back(!mask.empty() && mask[i] == 0 ? kDead : c);
      }
    } else if (policy == LookupPolicy::kOfficialIndexing && profile == Profile::kV41) {
      const int64_t t = map.tokens();
      for (size_t i = 0; i < raw.size(); ++i) {
        const int64_t x = raw[i];
        if (x >= t || x < -t) throw Error("rawIds[" + std::to_string(i) + "]: torch indexing raises for " + std::to_string(x));
        const int64_t c = map.map[static_cast<size_t>(x < 0 ? t + x : x)];
        ids.push_back(!mask.empty() && mask[i] == 0 ? kDead : c);
      }
    } else {
      ids = CompressIds(profile, map, raw, mask);
    }
    for (size_t i : beyond) ids[i] = kDead;
    out["result"] = "valid";
    out["ids"] = ids;
  } catch (const Error& e) {
    out["result"] = "invalid";
    out["error"] = e.what();
  }
  return out;
}

// One TokenLookupTest of group `g` (tokenizer `text`, parsed `tk`, its map `reference`): the expected
// fields and every computed flag (the map-building variants, the ports' lookup policies, §VEC.12).
void AddLookupTest(SuiteBuilder& b, size_t g, const std::string& text, const Tokenizer& tk, const TokenMap& reference,
                   Profile profile, const std::string& comment, std::vector<std::string> flags, ojson inputs) {
  const bool v41 = profile == Profile::kV41;
  const std::pair<Variant, const char*> variants[] = {{Variant::kSentinelLess, "SentinelLessNormalizer"},
                                                      {Variant::kContextLowercase, "ContextLowercase"},
                                                      {Variant::kPythonWrapper, "PythonWrapperDecode"},
                                                      {Variant::kAddedTokenContent, "AddedTokenByteLevel"}};
  const json in = json::parse(inputs.dump());
  const ojson expected = LookupExpected(reference, in, profile);
  for (const auto& [variant, flag] : variants) {
    TokenMap m = reference;
    m.map = VariantMap(tk, variant);
    if (LookupExpected(m, in, profile) != expected) flags.push_back(flag);
  }
  if (v41 && LookupExpected(reference, in, profile, LookupPolicy::kBeyondDead) != expected) {
    if (!b.HasNote("RawIdBeyondTokenizerDead")) {
      b.Divergence("RawIdBeyondTokenizerDead",
                   "Changes under the policy of a port that maps a raw id beyond the tokenizer (>= T) to DEAD (a "
                   "llama.cpp fork, v4.1), where §HASH.1 refuses it.",
                   "§HASH.1", "raw-beyond-dead");
    }
    flags.push_back("RawIdBeyondTokenizerDead");
  }
  if (v41 && LookupExpected(reference, in, profile, LookupPolicy::kOutsideToPad) != expected) {
    if (!b.HasNote(kRawIdOutsidePadFlag)) {
      b.Divergence(kRawIdOutsidePadFlag,
                   "Changes under the lookup of Luce-Org/lucebox (DeepSeek4EngramHasher::compress, v4.1): every "
                   "raw id outside [0, T), raw -1 included, becomes the compressed pad (dead positions come "
                   "from a separate mask), where §HASH.1 makes raw -1 DEAD and refuses the others: an id the "
                   "tokenizer cannot have produced is hashed as padding.",
                   "§HASH.1", "raw-outside-pad");
    }
    flags.push_back(kRawIdOutsidePadFlag);
  }
  // The result (valid or not) and the ids decide; an error's wording does not.
  auto outcome = [](const ojson& o) { return o.at("result") == "valid" ? o : ojson{{"result", "invalid"}}; };
  if (v41 && outcome(LookupExpected(reference, in, profile, LookupPolicy::kOfficialIndexing)) != outcome(expected)) {
    if (!b.HasNote("OfficialTorchIndexing")) {
      b.Divergence("OfficialTorchIndexing",
                   "Changes under the lookup of the official V4.1 code (NgramHashState: token_map[input_ids] "
                   "with torch indexing, then the mask): an unmasked raw -1 reads map[T - 1] instead of DEAD, "
                   "and a raw id in [-T, -2] reads map[T + id] instead of a refusal. §HASH.1 keeps the safer "
                   "rule; a port that keeps the official indexing lists these tests as expected failures.",
                   "§HASH.1", "official-indexing");
    }
    flags.push_back("OfficialTorchIndexing");
  }
  if (v41 && outcome(LookupExpected(reference, in, profile, LookupPolicy::kMaskBroadcast)) != outcome(expected)) {
    NoteMaskBroadcast(b);
    flags.push_back(kMaskBroadcastFlag);
  }
  if (v41 && LookupExpected(reference, in, profile, LookupPolicy::kClampToTable) != expected) {
    if (!b.HasNote("RawIdClamped")) {
      b.Divergence("RawIdClamped",
                   "Changes under the lookup of sglang (EngramHasher.forward, v4.1, spec/sources.md "
                   "[SRC-PORT-SGLANG]), which clamps every raw id into [0, T - 1] before the map: raw -1 reads "
                   "map[0] instead of DEAD, a raw id >= T reads map[T - 1] and one below -1 map[0] instead of "
                   "a refusal.",
                   "§HASH.1", "raw-clamp");
    }
    flags.push_back("RawIdClamped");
  }
  // The tokenizers here are valid: a port reading them through the Hugging Face loader builds the same map.
  if (const std::optional<std::string> read = HfLoaderRead(text);
      !read || LookupExpected(BuildTokenMap(ParseTokenizerJson(*read, "tokenizer.json")), in, profile) != expected) {
    throw Error("generator: the Hugging Face loader's map of a lookup group's tokenizer differs");
  }
  for (const auto& [k, v] : expected.items()) inputs[k] = v;
  b.Test(g, comment, flags, {"§HASH.1", "§TOK.4"}, inputs);
}

// §HASH.1 TokenLookupTest groups, one per profile, over the tokenizer of `text`:
// raw ids (and masks) through the map, the refusals of ids outside it; the
// map-building variants and the fork's DEAD policy flag the tests they fail.
void AddLookupGroups(SuiteBuilder& b, const std::string& text, const std::string& about) {
  const Tokenizer tk = ParseTokenizerJson(text, "tokenizer.json");
  const TokenMap reference = BuildTokenMap(tk);
  const int64_t t_count = reference.tokens();
  for (const Profile profile : {Profile::kV41, Profile::kDemoV1}) {
    const bool v41 = profile == Profile::kV41;
    const size_t g = b.Group({{"type", "TokenLookupTest"},
                              {"comment", std::string(v41 ? "v4.1" : "demo-v1") + ": raw ids of " + about},
                              {"tokenizerJson", text},
                              {"profile", v41 ? "v4.1" : "demo-v1"}});
    auto add = [&](const std::string& comment, std::vector<std::string> flags, ojson inputs) {
      AddLookupTest(b, g, text, tk, reference, profile, comment, std::move(flags), std::move(inputs));
    };
    std::vector<int64_t> all(static_cast<size_t>(t_count));
    for (int64_t i = 0; i < t_count; ++i) all[static_cast<size_t>(i)] = t_count - 1 - i;  // every id, last first
    add("every raw id of the tokenizer, last first", {"RawIdsToCompressed"}, {{"rawIds", all}});
    add("the empty sequence", {"RawIdsToCompressed"}, {{"rawIds", std::vector<int64_t>{}}});
    if (v41) {
      const std::vector<int64_t> ids = {1, 2, 3, 4, t_count - 1, 0};
      add("a mask: positions whose entry is false are DEAD (-1), after the lookup", {"RawIdsToCompressed", "MaskToDead"},
          {{"rawIds", ids}, {"mask", ojson::array({true, false, false, true, true, false})}});
      add("a mask of all true: the plain lookup", {"MaskToDead"},
          {{"rawIds", ids}, {"mask", ojson::array({true, true, true, true, true, true})}});
      add("raw -1 is DEAD", {"MaskToDead"}, {{"rawIds", {1, -1, 2}}});
      add("raw id T, one past the tokenizer: refused", {"RawIdOutsideTokenizer"}, {{"rawIds", {1, t_count, 2}}});
      add("raw id T at a masked position: refused all the same (the lookup comes first)", {"RawIdOutsideTokenizer"},
          {{"rawIds", {1, t_count, 2}}, {"mask", ojson::array({true, false, true})}});
      add("raw id 2^31: refused", {"RawIdOutsideTokenizer"}, {{"rawIds", {int64_t{1} << 31}}});
      add("raw -2 (numpy / torch indexing would read map[T - 2]): refused", {"RawIdOutsideTokenizer"},
          {{"rawIds", {1, -2, 2}}});
      add("a mask with one entry too few: refused", {"BadMask"},
          {{"rawIds", {1, 2, 3}}, {"mask", ojson::array({true, false})}});
    } else {
      add("negative raw ids pass through unchanged", {"RawIdsToCompressed", "NegativeRawIdPassThrough"},
          {{"rawIds", {1, -1, 2, -5, -1000000, t_count - 1}}});
      add("raw id T, one past the tokenizer: refused", {"RawIdOutsideTokenizer"}, {{"rawIds", {1, t_count}}});
      add("a mask given to demo-v1 (it has none): refused", {"BadMask"},
          {{"rawIds", {1, 2}}, {"mask", ojson::array({true, false})}});
    }
  }
}

// §HASH.1 A mask of one entry over two ids: refused (another length), where the official V4.1 code's
// torch.where broadcasts it ([1, 1] over [1, 2]: OfficialMaskBroadcast). Its own group, so that no earlier
// tcId moves (§VEC.11).
void AddShortMaskGroup(SuiteBuilder& b, const std::string& text) {
  const Tokenizer tk = ParseTokenizerJson(text, "tokenizer.json");
  const TokenMap reference = BuildTokenMap(tk);
  const size_t g = b.Group({{"type", "TokenLookupTest"},
                            {"comment", "v4.1: raw ids of the added-tokens tokenizer, a mask of one entry"},
                            {"tokenizerJson", text},
                            {"profile", "v4.1"}});
  AddLookupTest(b, g, text, tk, reference, Profile::kV41,
                "a mask of one entry over two ids: refused (torch.where would broadcast it over both)", {"BadMask"},
                {{"rawIds", {1, 2}}, {"mask", ojson::array({true})}});
}

void CheckTokenLookupTest(Checker& c, const json& g, const json& t) {
  const Tokenizer tk = ParseTokenizerJson(g.at("tokenizerJson").get<std::string>(), "tokenizer.json");
  const Profile profile = g.at("profile") == "v4.1" ? Profile::kV41 : Profile::kDemoV1;
  const json expected = json::parse(LookupExpected(BuildTokenMap(tk), t, profile).dump());
  if (expected.at("result") != t.at("result")) {
    c.Problem(t, "result is " + t.at("result").dump() + " but the reference gives " + expected.at("result").dump());
    return;
  }
  if (IsValid(t)) c.Expect(t, "ids", expected.at("ids"));
}

void CheckTokenMapTest(Checker& c, const json& g, const json& t) {
  const std::string text = g.at("tokenizerJson").get<std::string>();
  json inputs = json::object();
  for (const char* k : {"padId", "engramCompressedVocabSize"}) {
    if (t.contains(k)) inputs[k] = t[k];
  }
  const json expected = json::parse(Expected(text, inputs).dump());
  if (expected.at("result") != t.at("result")) {
    c.Problem(t, "result is " + t.at("result").dump() + " but the reference gives " + expected.at("result").dump() +
                     (expected.contains("error") ? " (" + expected["error"].get<std::string>() + ")" : ""));
    return;
  }
  if (!IsValid(t)) return;
  for (const char* f : {"tokens", "compressedSize", "sha256", "map", "intermediate"}) c.Expect(t, f, expected.at(f));
  if (expected.contains("compressedPad")) c.Expect(t, "compressedPad", expected.at("compressedPad"));
}

}  // namespace

ojson TokenMapExpected(const std::string& tokenizer_json, const json& test_inputs) {
  return Expected(tokenizer_json, test_inputs);
}

ojson TokenLookupExpected(const TokenMap& map, const json& test, Profile profile) {
  return LookupExpected(map, test, profile);
}

SuiteDef TokenMapSuite() {
  return {"token_map", "token_map.schema.json", [] { return GenerateTokenMap(); },
          {{"TokenMapTest", CheckTokenMapTest}, {"TokenLookupTest", CheckTokenLookupTest}}};
}

}  // namespace engram::vectors
