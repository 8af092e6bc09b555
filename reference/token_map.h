// spec/token_map.md — the compressed token map: raw tokenizer id -> compressed id.
//
// The map is built from a tokenizer (§TOK.1-§TOK.4) or read from a file that a
// previous build wrote (§TOK.5). Hashing only ever sees compressed ids.
#ifndef ENGRAM_REFERENCE_TOKEN_MAP_H_
#define ENGRAM_REFERENCE_TOKEN_MAP_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace engram {

struct TokenMap {
  std::vector<int64_t> map;        // map[raw id] = compressed id, each in [0, compressed_size)
  int64_t compressed_size = 0;     // V: number of distinct compressed ids
  std::string source;              // for error messages

  int64_t tokens() const { return static_cast<int64_t>(map.size()); }
  // The compressed id of raw id `raw`; throws engram::Error naming `what`
  // when raw is outside [0, tokens()).
  int64_t Lookup(int64_t raw, std::string_view what) const;
};

// §TOK.5 A token-map file is a JSON array of ints, or an object with a "map"
// array (and optionally "compressed_size"). Every entry must be >= 0; V is
// "compressed_size" when given (every entry must then be < V), else max entry + 1.
TokenMap ParseTokenMap(const nlohmann::json& doc, std::string_view source);
TokenMap LoadTokenMapFile(const std::filesystem::path& path);

// §TOK.5 The identity map of size n (compressed ids given directly).
TokenMap IdentityTokenMap(int64_t n);

// §TOK.6 SHA-256 of the map as int32 little-endian, lower-case hex.
std::string TokenMapDigest(const TokenMap& token_map);

// Lower-case hex SHA-256 of `data` (OpenSSL's implementation).
std::string Sha256Hex(std::string_view data);

}  // namespace engram

#endif  // ENGRAM_REFERENCE_TOKEN_MAP_H_
