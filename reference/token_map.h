/// \file
/// spec/token_map.md — the compressed token map: raw tokenizer id -> compressed id.
///
/// The map is built from a tokenizer (§TOK.1-§TOK.4) or read from a file that a
/// previous build wrote (§TOK.5). Hashing only ever sees compressed ids.
#ifndef ENGRAM_REFERENCE_TOKEN_MAP_H_
#define ENGRAM_REFERENCE_TOKEN_MAP_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace engram {

/// §TOK The compressed token map: raw tokenizer id -> compressed id, and V.
struct TokenMap {
  std::vector<int64_t> map;        ///< map[raw id] = compressed id, each in [0, compressed_size)
  int64_t compressed_size = 0;     ///< V: number of distinct compressed ids
  std::string source;              ///< for error messages
  /// §TOK.5 Empty for a map §TOK.4 could have built (dense, first-seen ids);
  /// else where this one departs ("entry 4 is 3 where ..."): such a map still
  /// hashes, but was not built from a tokenizer.
  std::string not_built;
  /// §TOK.5 Whether the file declared "compressed_size" (or the map was built,
  /// §TOK.4); a map that did not may take V from the configuration
  /// (TakeSizeFromConfig).
  bool size_declared = false;

  /// §TOK.5 T: the number of raw ids the map covers (the tokenizer's length).
  int64_t tokens() const { return static_cast<int64_t>(map.size()); }
  /// §HASH.1 The compressed id of raw id `raw`; throws engram::Error naming `what`
  /// when raw is outside [0, tokens()).
  int64_t Lookup(int64_t raw, std::string_view what) const;
};

/// §TOK.5 A token-map file is a JSON array of ints, or an object with a "map"
/// array (and optionally "compressed_size"): any function from raw ids into
/// [0, V). Every entry must be in [0, 2^31); V is "compressed_size" when given
/// (every entry must then be < V), else max entry + 1. A map that carries
/// "sha256" (written by `engram token-map`) must match it and be first-seen.
/// TokenMap::not_built says whether the map could have been built by §TOK.4.
TokenMap ParseTokenMap(const nlohmann::json& doc, std::string_view source);
/// §TOK.5 Reads and parses a token-map file; errors name the path (and the index and value).
TokenMap LoadTokenMapFile(const std::filesystem::path& path);

struct EngramConfig;

/// §TOK.5 A map that declares no size (a test map of another port) takes V
/// from the configuration where the configuration states it (v4.1
/// `engram_compressed_vocab_size`), rather than its largest entry + 1: such a
/// map usually holds a few ids of the real vocabulary. Refuses (engram::Error
/// naming the config key and the map's entry) a map holding an id >= that V.
/// Returns whether V was taken from the configuration. Defined with
/// CheckTokenMapForConfig below (it needs the configuration).
bool TakeSizeFromConfig(TokenMap& token_map, const EngramConfig& config);

/// §TOK.5 The identity map of size n (compressed ids given directly).
TokenMap IdentityTokenMap(int64_t n);

/// §TOK.6 SHA-256 of the map as int32 little-endian, lower-case hex.
std::string TokenMapDigest(const TokenMap& token_map);

// ---------------------------------------------------------------------------
// Building the map from a Hugging Face tokenizer.json (§TOK.1-§TOK.4).

/// §TOK.1 A byte-level BPE tokenizer, reduced to what the map needs: the raw
/// token string of every id 0 .. size()-1 (what the Rust backend's
/// id_to_token returns) and which ids are added tokens.
struct Tokenizer {
  std::string source;               ///< the file, for error messages
  std::vector<std::string> tokens;  ///< tokens[id]: the vocab entry, or the added token's content
  std::vector<uint8_t> added;       ///< 1 where the id is an added token
  std::vector<uint8_t> special;     ///< 1 where the id is a special added token
  int64_t vocab_entries = 0;        ///< number of model.vocab entries (ids 0 .. vocab_entries-1)

  /// §TOK.1 The tokenizer's length: every id 0 .. size()-1 has a token.
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
};

/// §TOK.1 Parses the text of a tokenizer.json. Refuses (engram::Error naming
/// `source`, the field, the id and the token): invalid JSON, a model.type other
/// than "BPE", a decoder other than ByteLevel (alone or as the only step of a
/// Sequence), vocab holes or duplicate ids, an added token whose declared id is
/// not the id the Hugging Face loader gives it.
Tokenizer ParseTokenizerJson(std::string_view text, std::string_view source);
/// §TOK.1 Reads a tokenizer.json file and parses it as ParseTokenizerJson does (errors name the path).
Tokenizer LoadTokenizerJson(const std::filesystem::path& path);

/// §TOK.2 The GPT-2 byte <-> unicode table: the character that stands for byte b.
char32_t ByteToUnicode(uint8_t b);
/// §TOK.2 The bytes of a token: through the table when every character of the
/// token is in it, else the token's own UTF-8 bytes (the ByteLevel decoder).
std::string TokenBytes(std::string_view token);
/// §TOK.2 UTF-8 decoding with one U+FFFD per maximal invalid subpart (Rust's
/// String::from_utf8_lossy). The result is valid UTF-8.
std::string Utf8Lossy(std::string_view bytes);
/// §TOK.2 Single-id decode: Utf8Lossy(TokenBytes(token)).
std::string DecodeToken(std::string_view token);

/// §TOK.3 NFKC, NFD, strip marks, per-code-point lowercase, runs of [ \\t\\r\\n] -> " ",
/// " " -> U+E000, strip White_Space, U+E000 -> " ". `text` is valid UTF-8.
std::string NormalizeText(std::string_view text);

/// §TOK.4 Which of the three kinds a key is.
enum class KeyKind { kNormalized, kText, kToken };
std::string_view KeyKindName(KeyKind kind);  ///< "normalized", "text", "token"

/// §TOK.4 Everything the map computes for one id.
struct TokenKey {
  std::string text;         ///< §TOK.2 decoded text
  bool replacement = false; ///< text contains U+FFFD
  std::string normalized;   ///< §TOK.3 NormalizeText(text); empty when replacement (not computed)
  KeyKind kind = KeyKind::kNormalized;  ///< §TOK.4 which rule chose the key
  std::string key;                      ///< §TOK.4 the dictionary key: token, text or normalized text
};
/// §TOK.4 The key of one vocab entry (or added token content): decode (§TOK.2); if the text holds
/// U+FFFD the key is the raw token, else NormalizeText(text), or the text itself when that is empty.
TokenKey KeyOf(std::string_view token);

/// §TOK.4 First-seen compressed ids over ids 0 .. size()-1, one dictionary for
/// all kinds of key. `keys`, when given, receives one TokenKey per id;
/// `progress`, when given, is called now and then with (ids done, ids in all).
TokenMap BuildTokenMap(const Tokenizer& tokenizer, std::vector<TokenKey>* keys = nullptr,
                       const std::function<void(int64_t, int64_t)>& progress = {});

// §TOK.4 The configuration's view of a map (documented below).
struct EngramConfig;
/// §TOK.4 The configuration's view of a map: v4.1 refuses a map whose size is
/// not engram_compressed_vocab_size; the raw pad id must be a token id.
/// Returns the compressed pad map[pad_id].
int64_t CheckTokenMapForConfig(const TokenMap& token_map, const EngramConfig& config);


}  // namespace engram

#endif  // ENGRAM_REFERENCE_TOKEN_MAP_H_
