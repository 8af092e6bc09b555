// spec/config.md — reading the configuration of both profiles.
#include "reference/config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "base/error.h"

namespace engram {
namespace {

// Every message names the file and the key, then says what was wrong (§CFG.4).
[[noreturn]] void Fail(std::string_view source, std::string_view key, const std::string& what) {
  throw Error(std::string(source) + ": key '" + std::string(key) + "': " + what);
}

std::string Show(const nlohmann::json& value) { return value.dump(); }

// §CFG.5 Reads an integer-valued key. JSON numbers such as 2.0 are refused: a
// configuration that writes sizes as floats is a conversion bug, not a size.
int64_t GetInt(const nlohmann::json& obj, std::string_view source, const std::string& key,
               const std::string& prefix = "") {
  const nlohmann::json& v = obj.at(key);
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      Fail(source, prefix + key, "value " + Show(v) + " does not fit a signed 64-bit integer");
    }
    return static_cast<int64_t>(v.get<uint64_t>());
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  Fail(source, prefix + key, "expected an integer, got " + Show(v));
}

double GetNumber(const nlohmann::json& obj, std::string_view source, const std::string& key,
                 const std::string& prefix = "") {
  const nlohmann::json& v = obj.at(key);
  if (!v.is_number()) Fail(source, prefix + key, "expected a number, got " + Show(v));
  return v.get<double>();
}

// §CFG.5 An integer list: every element an integer that fits int64.
std::vector<int64_t> GetIntList(const nlohmann::json& obj, std::string_view source, const std::string& key,
                                const std::string& prefix = "") {
  const nlohmann::json& v = obj.at(key);
  if (!v.is_array()) Fail(source, prefix + key, "expected a list of integers, got " + Show(v));
  std::vector<int64_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const nlohmann::json& e = v[i];
    if (e.is_number_unsigned() &&
        e.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      out.push_back(static_cast<int64_t>(e.get<uint64_t>()));
    } else if (e.is_number_integer() && !e.is_number_unsigned()) {
      out.push_back(e.get<int64_t>());
    } else {
      Fail(source, prefix + key, "element " + std::to_string(i) + " is not a 64-bit integer: " + Show(e));
    }
  }
  return out;
}

bool HasAnyEngramKey(const nlohmann::json& obj) {
  if (!obj.is_object()) return false;
  for (const auto& [k, v] : obj.items()) {
    (void)v;
    if (k.rfind("engram_", 0) == 0 && k != "engram_vocab_size") return true;
  }
  return false;
}

// §CFG.1 v4.1 configs carry engram_* keys other than engram_vocab_size (which
// the demo's EngramConfig shares); demo configs carry the demo's own names.
std::optional<Profile> DetectProfile(const nlohmann::json& doc) {
  bool v41 = HasAnyEngramKey(doc) ||
             (doc.contains("text_config") && HasAnyEngramKey(doc["text_config"]));
  bool demo = doc.contains("max_ngram_size") || doc.contains("n_head_per_ngram") ||
              doc.contains("layer_ids") || doc.contains("n_embed_per_ngram");
  if (v41 && !demo) return Profile::kV41;
  if (demo && !v41) return Profile::kDemoV1;
  return std::nullopt;
}

// Checks shared by both profiles (§CFG.4).
void Validate(const EngramConfig& c, std::string_view source, const std::string& layers_key,
              const std::string& ngram_key, const std::string& heads_key, const std::string& base_key,
              const std::string& pad_key, bool bases_unused = false) {
  if (c.max_ngram < 2) Fail(source, ngram_key, "must be >= 2 (2-grams are the smallest order), got " + std::to_string(c.max_ngram));
  if (c.max_ngram > 64) Fail(source, ngram_key, "must be <= 64, got " + std::to_string(c.max_ngram));
  if (c.heads < 1) Fail(source, heads_key, "must be >= 1, got " + std::to_string(c.heads));
  if (c.heads > 4096) Fail(source, heads_key, "must be <= 4096, got " + std::to_string(c.heads));
  if (c.layer_ids.empty()) Fail(source, layers_key, "must list at least one layer, got []");
  std::set<int64_t> distinct;
  for (int64_t id : c.layer_ids) {
    if (id < 0) Fail(source, layers_key, "layer ids must be >= 0, got " + std::to_string(id));
    if (!distinct.insert(id).second) Fail(source, layers_key, "layer id " + std::to_string(id) + " appears twice");
  }
  // §LAY.6 explicit primes need no bucket base to search from.
  if (bases_unused && c.bases.empty()) {
  } else if (static_cast<int>(c.bases.size()) != c.orders()) {
    Fail(source, base_key, "needs one entry per n-gram order (" + std::to_string(c.orders()) + "), got " +
                               std::to_string(c.bases.size()));
  }
  for (int64_t b : c.bases) {
    // Primes are searched upward from the base; below 2^40 every prime, and
    // the sum of a layer's at most 64 * 4096 primes, stays far below 2^63
    // (§HASH.7), and the prime search stays short.
    if (b < 2 || b >= (int64_t{1} << 40)) {
      Fail(source, base_key, "bucket bases must be in [2, 2^40), got " + std::to_string(b));
    }
  }
  if (c.seed < 0) Fail(source, "seed", "must be >= 0 (numpy refuses negative seeds), got " + std::to_string(c.seed));
  for (int64_t id : c.layer_ids) {
    // §RNG.4 seed + 10007 * layer_id must be a valid int64 seed.
    if (id > (std::numeric_limits<int64_t>::max() - c.seed) / 10007) {
      Fail(source, layers_key, "seed + 10007 * layer_id overflows int64 for layer " + std::to_string(id));
    }
  }
  if (c.pad_id < 0) Fail(source, pad_key, "the pad id must be >= 0, got " + std::to_string(c.pad_id));
}

// Reads a small integer (orders, heads) with its range checked before any narrowing.
int GetSmallInt(const nlohmann::json& obj, std::string_view source, const std::string& key, int lo, int hi,
                const std::string& why, const std::string& prefix = "") {
  int64_t v = GetInt(obj, source, key, prefix);
  if (v < lo || v > hi) {
    Fail(source, prefix + key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (" + why + "), got " +
                          std::to_string(v));
  }
  return static_cast<int>(v);
}

// §LAY.6 One explicit entry: a JSON integer in [lo, hi]. `where` is the
// element's path, e.g. "engram_primes[1][0][2]".
int64_t GetExplicitInt(const nlohmann::json& e, std::string_view source, const std::string& where, int64_t lo,
                       int64_t hi, const std::string& what) {
  const bool fits = (e.is_number_unsigned() && e.get<uint64_t>() <= static_cast<uint64_t>(hi)) ||
                    (e.is_number_integer() && !e.is_number_unsigned() && e.get<int64_t>() >= lo &&
                     e.get<int64_t>() <= hi);
  if (!fits) {
    throw Error(std::string(source) + ": key '" + where + "': must be " + what + ", got " + Show(e));
  }
  return e.get<int64_t>();
}

// §LAY.6 Checks that `v` at `where` is an array of `n` entries (one per `per`).
void NeedArray(const nlohmann::json& v, std::string_view source, const std::string& where, size_t n,
               const std::string& per) {
  if (!v.is_array() || v.size() != n) {
    throw Error(std::string(source) + ": key '" + where + "': must be a list of " + std::to_string(n) + " (one per " +
                per + "), got " + (v.is_array() ? std::to_string(v.size()) + " entries" : Show(v)));
  }
}

// §LAY.6 engram_hash_multipliers: [layer][slot], max_ngram values per layer
// in engram_layer_ids order, each in [0, 2^63) like the derived ones (§RNG.4).
std::vector<std::vector<int64_t>> GetExplicitMultipliers(const nlohmann::json& obj, std::string_view source,
                                                         const std::string& key, const EngramConfig& c) {
  const nlohmann::json& v = obj.at("engram_hash_multipliers");
  NeedArray(v, source, key, c.layer_ids.size(), "layer of engram_layer_ids");
  std::vector<std::vector<int64_t>> out;
  for (size_t l = 0; l < v.size(); ++l) {
    const std::string at = key + "[" + std::to_string(l) + "]";
    NeedArray(v[l], source, at, static_cast<size_t>(c.max_ngram), "look-back slot, engram_max_ngram_size");
    std::vector<int64_t> layer;
    for (size_t i = 0; i < v[l].size(); ++i) {
      layer.push_back(GetExplicitInt(v[l][i], source, at + "[" + std::to_string(i) + "]", 0,
                                     std::numeric_limits<int64_t>::max(), "an integer in [0, 2^63)"));
    }
    out.push_back(std::move(layer));
  }
  return out;
}

// §LAY.6 engram_primes: [layer][order n-2][head], each a prime below 2^40 (so
// that a layer's row count stays far below 2^63, as for derived primes, §CFG.4).
std::vector<std::vector<std::vector<int64_t>>> GetExplicitPrimes(const nlohmann::json& obj, std::string_view source,
                                                                 const std::string& key, const EngramConfig& c) {
  const nlohmann::json& v = obj.at("engram_primes");
  NeedArray(v, source, key, c.layer_ids.size(), "layer of engram_layer_ids");
  std::vector<std::vector<std::vector<int64_t>>> out;
  for (size_t l = 0; l < v.size(); ++l) {
    const std::string at_l = key + "[" + std::to_string(l) + "]";
    NeedArray(v[l], source, at_l, static_cast<size_t>(c.orders()), "n-gram order 2 .. engram_max_ngram_size");
    std::vector<std::vector<int64_t>> layer;
    for (size_t o = 0; o < v[l].size(); ++o) {
      const std::string at_o = at_l + "[" + std::to_string(o) + "]";
      NeedArray(v[l][o], source, at_o, static_cast<size_t>(c.heads), "head, engram_n_heads");
      std::vector<int64_t> heads;
      for (size_t h = 0; h < v[l][o].size(); ++h) {
        const std::string at = at_o + "[" + std::to_string(h) + "]";
        // Primality is §LAY.1's, checked when the layout is built (§LAY.6).
        heads.push_back(GetExplicitInt(v[l][o][h], source, at, 2, (int64_t{1} << 40) - 1, "a prime below 2^40"));
      }
      layer.push_back(std::move(heads));
    }
    out.push_back(std::move(layer));
  }
  return out;
}

EngramConfig ParseV41(const nlohmann::json& doc, std::string_view source) {
  EngramConfig c;
  c.profile = Profile::kV41;
  c.source = std::string(source);
  // §CFG.1 step 1: the HF shape nests the model keys under "text_config".
  const bool nested = doc.contains("text_config") && HasAnyEngramKey(doc["text_config"]);
  const nlohmann::json& container = nested ? doc["text_config"] : doc;
  const std::string prefix = nested ? "text_config." : "";
  if (nested) {
    for (const auto& [k, v] : doc.items()) {
      if (k.rfind("engram_", 0) == 0 && container.contains(k) && container[k] != v) {
        Fail(source, k, "differs between the top level (" + Show(v) + ") and text_config (" + Show(container[k]) + ")");
      }
    }
  }
  // Keys are reported with their container so that the user finds them.
  auto opt = [&](const std::string& key) -> const nlohmann::json* {
    return container.contains(key) ? &container : nullptr;
  };
  auto need = [&](const std::string& key) -> const nlohmann::json& {
    if (!container.contains(key)) Fail(source, prefix + key, "missing");
    return container;
  };
  // §CFG.2 a synonym pair may appear twice only with one value.
  auto synonyms = [&](const std::string& a, const std::string& b) {
    if (container.contains(a) && container.contains(b) && container[a] != container[b]) {
      Fail(source, prefix + b, "is " + Show(container[b]) + " but its synonym " + a + " is " + Show(container[a]));
    }
  };
  synonyms("engram_pad_token_id", "engram_pad_id");
  synonyms("dim", "hidden_size");
  synonyms("norm_eps", "rms_norm_eps");

  c.layer_ids = GetIntList(need("engram_layer_ids"), source, "engram_layer_ids", prefix);
  c.max_ngram = GetSmallInt(need("engram_max_ngram_size"), source, "engram_max_ngram_size", 2, 64,
                            "2-grams are the smallest order", prefix);
  c.heads = GetSmallInt(need("engram_n_heads"), source, "engram_n_heads", 1, 4096, "at least one head per order", prefix);
  // §CFG.2 one bucket base for every order.
  // §LAY.6 with explicit primes the base is optional (nothing is searched).
  const bool explicit_primes = opt("engram_primes") != nullptr;
  if (!explicit_primes || opt("engram_vocab_size")) {
    int64_t base = GetInt(need("engram_vocab_size"), source, "engram_vocab_size", prefix);
    if (c.max_ngram >= 2 && c.max_ngram <= 64) c.bases.assign(c.max_ngram - 1, base);
  }
  if (const nlohmann::json* o = opt("engram_num_embeddings")) {
    c.num_embeddings = GetIntList(*o, source, "engram_num_embeddings", prefix);
  }
  c.head_dim = GetInt(need("engram_head_dim"), source, "engram_head_dim", prefix);

  // §CFG.2 the pad key has two spellings (checked for agreement above).
  if (const nlohmann::json* o = opt("engram_pad_token_id")) c.pad_id = GetInt(*o, source, "engram_pad_token_id", prefix);
  else if (const nlohmann::json* o2 = opt("engram_pad_id")) c.pad_id = GetInt(*o2, source, "engram_pad_id", prefix);
  else Fail(source, prefix + "engram_pad_token_id", "missing (also looked for engram_pad_id)");
  if (const nlohmann::json* o = opt("engram_compressed_vocab_size")) {
    c.compressed_vocab_size = GetInt(*o, source, "engram_compressed_vocab_size", prefix);
    if (*c.compressed_vocab_size < 1) {
      Fail(source, prefix + "engram_compressed_vocab_size", "must be >= 1, got " + std::to_string(*c.compressed_vocab_size));
    }
  }
  if (const nlohmann::json* o = opt("dim")) c.hidden_size = GetInt(*o, source, "dim", prefix);
  else if (const nlohmann::json* o2 = opt("hidden_size")) c.hidden_size = GetInt(*o2, source, "hidden_size", prefix);
  if (const nlohmann::json* o = opt("hc_mult")) c.hc_mult = GetInt(*o, source, "hc_mult", prefix);
  if (const nlohmann::json* o = opt("norm_eps")) c.norm_eps = GetNumber(*o, source, "norm_eps", prefix);
  else if (const nlohmann::json* o2 = opt("rms_norm_eps")) c.norm_eps = GetNumber(*o2, source, "rms_norm_eps", prefix);
  if (const nlohmann::json* o = opt("vocab_size")) c.vocab_size = GetInt(*o, source, "vocab_size", prefix);
  c.seed = 0;  // §CFG.2 the V4.1 code seeds with 10007 * layer_id alone.

  const std::string pad_key = opt("engram_pad_token_id") ? "engram_pad_token_id" : "engram_pad_id";
  Validate(c, source, prefix + "engram_layer_ids", prefix + "engram_max_ngram_size", prefix + "engram_n_heads",
           prefix + "engram_vocab_size", prefix + pad_key, explicit_primes);
  // §LAY.6 an explicit layout (non-standard): read after the shape it must fit.
  if (const nlohmann::json* o = opt("engram_hash_multipliers")) {
    c.explicit_multipliers = GetExplicitMultipliers(*o, source, prefix + "engram_hash_multipliers", c);
  }
  if (explicit_primes) c.explicit_primes = GetExplicitPrimes(container, source, prefix + "engram_primes", c);
  if (c.head_dim < 1) Fail(source, prefix + "engram_head_dim", "must be >= 1, got " + std::to_string(c.head_dim));
  if (opt("engram_num_embeddings") && c.num_embeddings.size() != c.layer_ids.size()) {
    Fail(source, prefix + "engram_num_embeddings",
         "is " + Show(container["engram_num_embeddings"]) + " with " + std::to_string(c.num_embeddings.size()) +
             " entries but engram_layer_ids has " + std::to_string(c.layer_ids.size()));
  }
  for (size_t i = 0; i < c.num_embeddings.size(); ++i) {
    if (c.num_embeddings[i] < 1) {
      Fail(source, prefix + "engram_num_embeddings", "entry " + std::to_string(i) + " must be >= 1, got " +
                                                         std::to_string(c.num_embeddings[i]));
    }
  }
  // §CFG.4 item 8: optional sizes, when present, are >= 1.
  if (opt("dim") || opt("hidden_size")) {
    if (c.hidden_size < 1) Fail(source, prefix + "dim", "must be >= 1, got " + std::to_string(c.hidden_size));
  }
  if (opt("hc_mult") && c.hc_mult < 1) Fail(source, prefix + "hc_mult", "must be >= 1, got " + std::to_string(c.hc_mult));
  if (opt("vocab_size") && c.vocab_size < 1) {
    Fail(source, prefix + "vocab_size", "must be >= 1, got " + std::to_string(c.vocab_size));
  }
  if (!(c.norm_eps >= 0.0) || !std::isfinite(c.norm_eps)) Fail(source, prefix + "norm_eps", "must be a finite number >= 0");
  return c;
}

EngramConfig ParseDemo(const nlohmann::json& doc, std::string_view source) {
  // §CFG.3 absent keys take engram_demo_v1.py's dataclass defaults: the
  // document's keys overlay DemoV1ConfigJson(), so every key read below is
  // present (compressed_vocab_size, no demo field, is optional).
  nlohmann::json merged = nlohmann::json(DemoV1ConfigJson());
  merged.update(doc);
  const nlohmann::json& d = merged;
  EngramConfig c;
  c.profile = Profile::kDemoV1;
  c.source = std::string(source);
  c.bases = GetIntList(d, source, "engram_vocab_size");
  c.max_ngram = GetSmallInt(d, source, "max_ngram_size", 2, 64, "2-grams are the smallest order");
  c.heads = GetSmallInt(d, source, "n_head_per_ngram", 1, 4096, "at least one head per order");
  c.n_embed_per_ngram = GetInt(d, source, "n_embed_per_ngram");
  c.layer_ids = GetIntList(d, source, "layer_ids");
  c.pad_id = GetInt(d, source, "pad_id");
  c.seed = GetInt(d, source, "seed");
  c.kernel_size = GetInt(d, source, "kernel_size");
  c.hidden_size = GetInt(d, source, "hidden_size");
  c.hc_mult = GetInt(d, source, "hc_mult");
  c.vocab_size = GetInt(d, source, "vocab_size");
  if (d.contains("compressed_vocab_size")) {
    c.compressed_vocab_size = GetInt(d, source, "compressed_vocab_size");
    if (*c.compressed_vocab_size < 1) {
      Fail(source, "compressed_vocab_size", "must be >= 1, got " + std::to_string(*c.compressed_vocab_size));
    }
  }

  Validate(c, source, "layer_ids", "max_ngram_size", "n_head_per_ngram", "engram_vocab_size", "pad_id");
  if (c.n_embed_per_ngram < 1 || c.n_embed_per_ngram % c.heads != 0) {
    Fail(source, "n_embed_per_ngram", "must be a positive multiple of n_head_per_ngram (" + std::to_string(c.heads) +
                                          "), got " + std::to_string(c.n_embed_per_ngram));
  }
  c.head_dim = c.n_embed_per_ngram / c.heads;
  if (c.kernel_size < 1) Fail(source, "kernel_size", "must be >= 1, got " + std::to_string(c.kernel_size));
  if (c.hidden_size < 1) Fail(source, "hidden_size", "must be >= 1, got " + std::to_string(c.hidden_size));
  if (c.hc_mult < 1) Fail(source, "hc_mult", "must be >= 1, got " + std::to_string(c.hc_mult));
  if (c.vocab_size < 1) Fail(source, "vocab_size", "must be >= 1, got " + std::to_string(c.vocab_size));
  return c;
}

}  // namespace

std::string_view ProfileName(Profile profile) {
  return profile == Profile::kV41 ? "v4.1" : "demo-v1";
}

std::optional<Profile> ParseProfile(std::string_view name) {
  if (name == "v4.1") return Profile::kV41;
  if (name == "demo-v1") return Profile::kDemoV1;
  return std::nullopt;
}

EngramConfig ParseConfig(const nlohmann::json& doc, std::string_view source,
                         std::optional<Profile> override_profile) {
  if (!doc.is_object()) throw Error(std::string(source) + ": expected a JSON object at top level, got " + std::string(doc.type_name()));
  std::optional<Profile> profile = override_profile ? override_profile : DetectProfile(doc);
  if (!profile) {
    throw Error(std::string(source) +
                ": cannot tell the profile from the keys (v4.1 has engram_* keys such as engram_layer_ids; "
                "demo-v1 has max_ngram_size/n_head_per_ngram/layer_ids); pass --profile v4.1|demo-v1");
  }
  return *profile == Profile::kV41 ? ParseV41(doc, source) : ParseDemo(doc, source);
}

nlohmann::json ReadJsonFile(const std::filesystem::path& path, InputKind kind) {
  // §ERR.4 bounded read, §ERR.5 unique keys: a second "engram_pad_id" would
  // otherwise silently win over the first.
  return ParseJson(ReadInputFile(path, kind), path.string());
}

EngramConfig LoadConfig(const std::filesystem::path& path, std::optional<Profile> override_profile) {
  return ParseConfig(ReadJsonFile(path, InputKind::kConfig), path.string(), override_profile);
}

nlohmann::ordered_json V41FlashConfigJson() {
  // The inference config.json of DeepSeek-V4.1-Flash (spec/sources.md [SRC-V41-CONFIG]),
  // the one home of these figures: V41FlashConfig() parses it, the vector
  // generator writes it into the layout and hash suites (without vocab_size,
  // which is why that key comes last), and a test checks that the shipped
  // conformance/configs/v41-flash.json holds the same values. ordered_json keeps
  // the key order, which the committed vectors' bytes pin.
  return {
      {"engram_layer_ids", {1, 14}},
      {"engram_vocab_size", 16000000},
      {"engram_num_embeddings", {384006168, 384016682}},
      {"engram_max_ngram_size", 4},
      {"engram_n_heads", 8},
      {"engram_head_dim", 256},
      {"engram_pad_id", 2},
      {"engram_compressed_vocab_size", 99092},
      {"dim", 5120},
      {"hc_mult", 4},
      {"norm_eps", 1e-20},
      {"vocab_size", 129280},
  };
}

EngramConfig V41FlashConfig() {
  // §CFG.2 The shipped figures go through the same parser as any user's file.
  return ParseConfig(nlohmann::json(V41FlashConfigJson()), "<builtin v4.1>", Profile::kV41);
}

nlohmann::ordered_json DemoV1ConfigJson() {
  // EngramConfig() and BackBoneConfig() defaults of engram_demo_v1.py
  // (spec/sources.md [SRC-DEMO]), the one home of these figures: ParseDemo()
  // overlays a document on them, DemoV1Config() parses them alone, the vector
  // generator writes them into the layout, hash and forward suites, and a test
  // checks that the shipped conformance/configs/demo-v1.json holds the same
  // values. ordered_json keeps the key order, which the committed vectors'
  // bytes pin.
  return {
      {"engram_vocab_size", {129280 * 5, 129280 * 5}},
      {"max_ngram_size", 3},
      {"n_embed_per_ngram", 512},
      {"n_head_per_ngram", 8},
      {"layer_ids", {1, 15}},
      {"pad_id", 2},
      {"seed", 0},
      {"kernel_size", 4},
      {"hidden_size", 1024},
      {"hc_mult", 4},
      {"vocab_size", 129280},
  };
}

EngramConfig DemoV1Config() {
  // §CFG.3 The defaults go through the same parser as any user's file.
  return ParseConfig(nlohmann::json::object(), "<builtin demo-v1>", Profile::kDemoV1);
}

}  // namespace engram
