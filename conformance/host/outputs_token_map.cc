// §TOK, §HASH.1 The token_map suite and token lookups through the C ABI.
#include <memory>
#include <vector>

#include "base/sha256.h"
#include "conformance/host/marshal.h"
#include "conformance/host/outputs.h"
#include "conformance/host/plugin_api.h"

namespace engram::host {

// §HASH.1 TokenLookupTest: the library's map and its compress entry point.
json TokenLookupOutputs(const Api& api, const json& group, const json& test) {
  Need(api.token_map_build, "engram_token_map_build");
  Need(api.token_map_destroy, "engram_token_map_destroy");
  Need(api.token_map_compress, "engram_token_map_compress");
  const std::string text = group.at("tokenizerJson");
  char err[kErrLen] = "";
  engram_token_map* raw_map = api.token_map_build(text.data(), text.size(), err, sizeof err);
  if (raw_map == nullptr) throw Refused{err};
  std::unique_ptr<engram_token_map, decltype(api.token_map_destroy)> m(raw_map, api.token_map_destroy);
  const std::vector<int64_t> raw = test.at("rawIds").get<std::vector<int64_t>>();
  std::vector<uint8_t> mask;
  if (test.contains("mask")) {
    for (const json& f : test["mask"]) mask.push_back(f.get<bool>() ? 1 : 0);
    // The ABI passes one mask byte per id: a mask of another length is this host's to refuse (§HASH.1).
    if (mask.size() != raw.size()) {
      throw Refused{"mask: " + std::to_string(mask.size()) + " flags for " + std::to_string(raw.size()) + " ids"};
    }
  }
  std::vector<int64_t> out(raw.size());
  const std::string profile = group.at("profile");
  if (api.token_map_compress(m.get(), raw.data(), test.contains("mask") ? mask.data() : nullptr, raw.size(),
                             profile.c_str(), out.data(), err, sizeof err) != 0) {
    throw Refused{err};
  }
  return {{"ids", out}};
}

// §TOK TokenMapTest.
json TokenMapOutputs(const Api& api, const json& group, const json& test) {
  Need(api.token_map_build, "engram_token_map_build");
  Need(api.token_map_destroy, "engram_token_map_destroy");
  Need(api.token_map_tokens, "engram_token_map_tokens");
  Need(api.token_map_compressed_size, "engram_token_map_compressed_size");
  Need(api.token_map_ids, "engram_token_map_ids");
  const std::string text = group.at("tokenizerJson");
  char err[kErrLen] = "";
  engram_token_map* raw = api.token_map_build(text.data(), text.size(), err, sizeof err);
  if (raw == nullptr) throw Refused{err};
  std::unique_ptr<engram_token_map, decltype(api.token_map_destroy)> m(raw, api.token_map_destroy);
  const int64_t tokens = api.token_map_tokens(m.get());
  if (tokens < 0) throw Refused{"engram_token_map_tokens returned " + std::to_string(tokens)};
  std::vector<int64_t> map(static_cast<size_t>(tokens));
  api.token_map_ids(m.get(), map.data());
  json out;
  if (test.contains("padId") || test.contains("engramCompressedVocabSize")) {
    Need(api.token_map_check, "engram_token_map_check");
    int64_t pad = 0;
    if (api.token_map_check(m.get(), test.value("padId", int64_t{0}), test.value("engramCompressedVocabSize", int64_t{-1}),
                            &pad, err, sizeof err) != 0) {
      throw Refused{err};
    }
    if (test.contains("padId")) out["compressedPad"] = pad;
  }
  // §TOK.6 the digest of the library's map: int32 little-endian.
  std::string bytes;
  for (int64_t v : map) {
    const auto u = static_cast<uint32_t>(v);
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
  }
  out["tokens"] = tokens;
  out["compressedSize"] = api.token_map_compressed_size(m.get());
  out["sha256"] = Sha256Hex(bytes);
  out["map"] = map;
  if (api.token_map_key != nullptr) {
    json inter = json::array();
    for (int64_t id = 0; id < tokens; ++id) {
      engram_token_key_t k{};
      if (api.token_map_key(m.get(), id, &k) != 0) throw Refused{"engram_token_map_key refused id " + std::to_string(id)};
      auto str = [](const char* p, size_t n) { return p == nullptr ? std::string() : std::string(p, n); };
      json e = {{"id", id}, {"token", str(k.token, k.token_len)}, {"added", k.added != 0}, {"special", k.special != 0},
                {"text", str(k.text, k.text_len)}, {"replacement", k.replacement != 0}};
      if (k.normalized != nullptr) e["normalized"] = str(k.normalized, k.normalized_len);
      e["keyKind"] = k.key_kind != nullptr ? k.key_kind : "";
      e["key"] = str(k.key, k.key_len);
      e["compressedId"] = map[static_cast<size_t>(id)];
      inter.push_back(e);
    }
    out["intermediate"] = inter;
  }
  return out;
}

}  // namespace engram::host
