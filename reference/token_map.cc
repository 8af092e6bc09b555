// spec/token_map.md — compressed token maps.
#include "reference/token_map.h"

#include <openssl/evp.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "reference/config.h"
#include "reference/error.h"

namespace engram {

int64_t TokenMap::Lookup(int64_t raw, std::string_view what) const {
  if (raw < 0 || raw >= tokens()) {
    throw Error(std::string(what) + ": token id " + std::to_string(raw) + " is outside the token map [0, " +
                std::to_string(tokens()) + ") of " + source);
  }
  return map[static_cast<size_t>(raw)];
}

TokenMap ParseTokenMap(const nlohmann::json& doc, std::string_view source) {
  TokenMap tm;
  tm.source = std::string(source);
  const nlohmann::json* array = &doc;
  std::optional<int64_t> declared;
  if (doc.is_object()) {
    if (!doc.contains("map")) throw Error(std::string(source) + ": key 'map': missing");
    array = &doc["map"];
    if (doc.contains("compressed_size")) {
      const nlohmann::json& v = doc["compressed_size"];
      if (!v.is_number_integer() || v.get<int64_t>() < 1) {
        throw Error(std::string(source) + ": key 'compressed_size': expected an integer >= 1, got " + v.dump());
      }
      declared = v.get<int64_t>();
    }
  }
  if (!array->is_array()) {
    throw Error(std::string(source) + ": key 'map': expected an array of integers, got " +
                std::string(array->type_name()));
  }
  if (array->empty()) throw Error(std::string(source) + ": key 'map': is empty");
  int64_t max_entry = -1;
  tm.map.reserve(array->size());
  for (size_t i = 0; i < array->size(); ++i) {
    const nlohmann::json& e = (*array)[i];
    if (!e.is_number_integer() || e.get<int64_t>() < 0 ||
        (e.is_number_unsigned() && e.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))) {
      throw Error(std::string(source) + ": key 'map': entry " + std::to_string(i) +
                  " must be an integer in [0, 2^31), got " + e.dump());
    }
    int64_t v = e.get<int64_t>();
    if (v > std::numeric_limits<int32_t>::max()) {
      throw Error(std::string(source) + ": key 'map': entry " + std::to_string(i) + " must be < 2^31, got " + e.dump());
    }
    max_entry = std::max(max_entry, v);
    tm.map.push_back(v);
  }
  // §TOK.5 V is the declared size, else max entry + 1 (what a first-seen map gives).
  tm.compressed_size = declared ? *declared : max_entry + 1;
  if (max_entry >= tm.compressed_size) {
    throw Error(std::string(source) + ": key 'compressed_size': is " + std::to_string(tm.compressed_size) +
                " but the map holds id " + std::to_string(max_entry));
  }
  return tm;
}

TokenMap LoadTokenMapFile(const std::filesystem::path& path) {
  return ParseTokenMap(ReadJsonFile(path), path.string());
}

TokenMap IdentityTokenMap(int64_t n) {
  if (n < 1) throw Error("identity token map needs a size >= 1, got " + std::to_string(n));
  TokenMap tm;
  tm.source = "<identity map of " + std::to_string(n) + " ids>";
  tm.compressed_size = n;
  tm.map.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) tm.map[static_cast<size_t>(i)] = i;
  return tm;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256 failed (OpenSSL EVP_Digest)");
  }
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

// §TOK.6 A digest over the whole map tells apart two maps of the same size
// (a tokenizer revision mismatch), which a size check cannot.
std::string TokenMapDigest(const TokenMap& token_map) {
  std::string bytes;
  bytes.reserve(token_map.map.size() * 4);
  for (int64_t v : token_map.map) {
    uint32_t u = static_cast<uint32_t>(static_cast<int32_t>(v));
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((u >> (8 * b)) & 0xFF));  // little-endian
  }
  return Sha256Hex(bytes);
}

}  // namespace engram
