// spec/contract.md — building, checking and comparing hash contracts.
#include "reference/contract.h"

#include <algorithm>

#include "base/error.h"
#include "base/sha256.h"
#include "base/version.h"
#include "reference/hash.h"

namespace engram {
namespace {

using ojson = nlohmann::ordered_json;

// Values in messages stay short: a whole prime table is not a useful message.
std::string Short(const ojson& v) {
  std::string s = v.dump();
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

void Diff(const ojson& expected, const ojson& actual, const std::string& path, std::vector<std::string>& out) {
  if (expected.is_object() && actual.is_object()) {
    for (const auto& [key, value] : expected.items()) {
      const std::string child = path.empty() ? key : path + "." + key;
      if (!actual.contains(key)) {
        out.push_back(child + ": expected " + Short(value) + ", missing");
      } else {
        Diff(value, actual[key], child, out);
      }
    }
    for (const auto& [key, value] : actual.items()) {
      if (!expected.contains(key)) out.push_back((path.empty() ? key : path + "." + key) + ": unexpected key, got " + Short(value));
    }
    return;
  }
  if (expected.is_array() && actual.is_array()) {
    if (expected.size() != actual.size()) {
      out.push_back(path + ": expected " + std::to_string(expected.size()) + " entries " + Short(expected) + ", got " +
                    std::to_string(actual.size()) + " " + Short(actual));
      return;
    }
    for (size_t i = 0; i < expected.size(); ++i) Diff(expected[i], actual[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  if (expected != actual) out.push_back(path + ": expected " + Short(expected) + ", got " + Short(actual));
}

[[noreturn]] void Bad(std::string_view source, const std::string& key, const std::string& what) {
  throw Error(std::string(source) + ": key '" + key + "': " + what);
}

}  // namespace

ojson BuildContract(const EngramConfig& config, const TokenMap& token_map, std::optional<std::string> tokenizer_sha256) {
  // §LAY.6 A contract pins a deployment of DeepSeek's derived layout; an
  // explicit layout (a port's test constants) has no such deployment.
  if (config.explicit_layout()) {
    throw Error(config.source + ": keys 'engram_hash_multipliers' / 'engram_primes': an explicit layout (§LAY.6) " +
                "is non-standard and has no contract (§CON.1); contracts describe the derived layout");
  }
  const int64_t compressed_pad = token_map.Lookup(config.pad_id, config.source + ": pad id");
  const Layout layout = BuildLayout(config, token_map.compressed_size, compressed_pad);
  ojson c;
  c["format"] = kContractFormat;
  c["version"] = kContractVersion;
  c["specVersion"] = kSpecVersion;  // §CON.1 the one constant (base/version.h)
  c["profile"] = std::string(ProfileName(config.profile));
  c["layerIds"] = config.layer_ids;
  c["maxNgram"] = config.max_ngram;
  c["heads"] = config.heads;
  c["bases"] = config.bases;
  c["seed"] = config.seed;
  c["pad"] = {{"raw", config.pad_id}, {"compressed", compressed_pad}};
  c["compressedVocabSize"] = token_map.compressed_size;
  // §CON.1 the whole map, not its size: a wrong tokenizer revision can have the same size.
  c["tokenMap"] = {{"tokens", token_map.tokens()}, {"sha256", TokenMapDigest(token_map)}};
  c["tokenizer"] = {{"sha256", tokenizer_sha256 ? ojson(*tokenizer_sha256) : ojson(nullptr)}};
  ojson layers = ojson::array();
  for (const LayerLayout& l : layout.layers) {
    layers.push_back({{"layerId", l.layer_id}, {"multipliers", l.multipliers}, {"primes", l.primes},
                      {"offsets", l.offsets}, {"numEmbeddings", l.num_embeddings}});
  }
  c["layers"] = layers;
  c["layoutFingerprint"] = LayoutFingerprint(layout);
  c["contractDigest"] = ContractDigest(c);
  return c;
}

std::string ContractDigest(const ojson& contract) {
  ojson copy = contract;
  copy.erase("contractDigest");
  return Sha256Hex(copy.dump());
}

void CheckContractForm(const ojson& c, std::string_view source) {
  if (!c.is_object()) throw Error(std::string(source) + ": a contract is a JSON object");
  if (!c.contains("format") || c["format"] != kContractFormat) Bad(source, "format", "expected \"" + std::string(kContractFormat) + "\"");
  if (!c.contains("version") || c["version"] != kContractVersion) {
    Bad(source, "version", (c.contains("version") ? c["version"].dump() : "missing") + " is not supported (expected 1)");
  }
  for (const char* key : {"specVersion", "profile", "layerIds", "maxNgram", "heads", "bases", "seed", "pad",
                          "compressedVocabSize", "tokenMap", "tokenizer", "layers", "layoutFingerprint",
                          "contractDigest"}) {
    if (!c.contains(key)) Bad(source, key, "missing");
  }
  const std::string digest = ContractDigest(c);
  if (c["contractDigest"] != digest) {
    Bad(source, "contractDigest", Short(c["contractDigest"]) + " does not match the contract's content (" + digest +
                                      "): the file was edited or truncated");
  }
}

EngramConfig ConfigFromContract(const ojson& c, std::string_view source) {
  CheckContractForm(c, source);
  // Re-read through the config parser so that every §CFG.4 rule applies.
  nlohmann::json doc;
  const std::string profile = c["profile"].get<std::string>();
  if (profile == "v4.1") {
    if (c["bases"].empty()) Bad(source, "bases", "is empty");
    doc = {{"engram_layer_ids", c["layerIds"]}, {"engram_vocab_size", c["bases"][0]},
           {"engram_max_ngram_size", c["maxNgram"]}, {"engram_n_heads", c["heads"]},
           {"engram_head_dim", 1}, {"engram_pad_id", c["pad"]["raw"]}};
  } else if (profile == "demo-v1") {
    doc = {{"engram_vocab_size", c["bases"]}, {"max_ngram_size", c["maxNgram"]}, {"n_head_per_ngram", c["heads"]},
           {"n_embed_per_ngram", c["heads"]}, {"layer_ids", c["layerIds"]}, {"pad_id", c["pad"]["raw"]},
           {"seed", c["seed"]}};
  } else {
    Bad(source, "profile", Short(c["profile"]) + " is not v4.1 or demo-v1");
  }
  return ParseConfig(doc, source);
}

std::vector<std::string> CompareContracts(const ojson& expected, const ojson& actual) {
  std::vector<std::string> out;
  Diff(expected, actual, "", out);
  return out;
}

}  // namespace engram
