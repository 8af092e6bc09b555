#include "vectors/mutants.h"

#include <algorithm>
#include <set>
#include <bit>
#include <cmath>
#include <limits>
#include <map>

#include "reference/config.h"
#include "base/error.h"
#include "reference/hash.h"
#include "reference/random.h"
#include "reference/storage.h"

namespace engram::vectors {

std::string MutantFlag(Mutant m) {
  switch (m) {
    case Mutant::kNoDeadBlocking: return "NoDeadBlocking";
    case Mutant::kDeadAsId: return "DeadAsOrdinaryId";
    case Mutant::kTruncatedMod: return "FloorMod";
    case Mutant::kInt32Multipliers: return "Int32Multipliers";
    case Mutant::kSignGate: return "SignedZeroCopysign";
    case Mutant::kE8M0BitShift: return "E8M0BitShift";
    case Mutant::kPythonWrapperDecode: return "PythonWrapperDecode";
    case Mutant::kRowIdUint32: return "RowIdUint32";
    case Mutant::kRowIdInt32: return "RowIdInt32";
    case Mutant::kNegativeIdToPad: return "NegativeIdToPad";
  }
  return "";
}

std::vector<Mutant> MutantsFor(Profile profile) {
  if (profile == Profile::kV41) {
    return {Mutant::kNoDeadBlocking, Mutant::kDeadAsId, Mutant::kInt32Multipliers, Mutant::kRowIdUint32,
            Mutant::kRowIdInt32};
  }
  return {Mutant::kTruncatedMod, Mutant::kInt32Multipliers, Mutant::kNegativeIdToPad};
}

std::vector<int64_t> MutantMultipliers(Mutant m, int64_t seed, int64_t layer_id, int64_t v, int max_ngram) {
  if (m != Mutant::kInt32Multipliers) return LayerMultipliers(seed, layer_id, v, max_ngram);
  const int64_t bound = std::max<int64_t>(1, (int64_t{std::numeric_limits<int32_t>::max()} / v) / 2);
  Pcg64 gen{SeedSequence(LayerSeed(seed, layer_id))};
  std::vector<int64_t> r = Integers(gen, 0, bound, static_cast<size_t>(max_ngram));
  for (int64_t& x : r) x = 2 * x + 1;
  return r;
}

Layout MutantLayout(Mutant m, const Layout& layout, int64_t seed) {
  Layout out = layout;
  for (LayerLayout& l : out.layers) {
    l.multipliers = MutantMultipliers(m, seed, l.layer_id, layout.compressed_vocab_size, layout.max_ngram);
  }
  return out;
}

std::vector<int64_t> MutantRows(Mutant m, const Layout& layout, const std::vector<int64_t>& ids,
                                int64_t first_position, size_t emit_from) {
  const int w = layout.max_ngram;
  std::vector<int64_t> rows;
  std::vector<int64_t> tok(static_cast<size_t>(w));
  for (size_t t = emit_from; t < ids.size(); ++t) {
    bool block = false;
    for (int s = 0; s < w; ++s) {
      const bool before = first_position + static_cast<int64_t>(t) < s;
      int64_t x = before ? layout.pad : ids[t - static_cast<size_t>(s)];
      // demo-v1 hashes negative ids as they are (§HASH.1); this port replaces them by the pad.
      if (layout.profile == Profile::kDemoV1 && m == Mutant::kNegativeIdToPad && x < 0) x = layout.pad;
      if (layout.profile == Profile::kV41 && m == Mutant::kDeadAsId) {
        block = before;  // DEAD is just another value: -1 * m mixes in like any id
      } else if (layout.profile == Profile::kV41) {
        block = (m == Mutant::kNoDeadBlocking) ? (before || x == kDead) : (block || before || x == kDead);
      } else {
        block = before;
      }
      tok[static_cast<size_t>(s)] = block ? layout.pad : x;
    }
    for (const LayerLayout& l : layout.layers) {
      int64_t rolling = static_cast<int64_t>(static_cast<uint64_t>(tok[0]) * static_cast<uint64_t>(l.multipliers[0]));
      for (int k = 1; k < w; ++k) {
        rolling ^= static_cast<int64_t>(static_cast<uint64_t>(tok[static_cast<size_t>(k)]) *
                                        static_cast<uint64_t>(l.multipliers[static_cast<size_t>(k)]));
        for (int h = 0; h < layout.heads; ++h) {
          const int col = (k - 1) * layout.heads + h;
          const int64_t p = l.prime(col);
          int64_t r = rolling % p;  // C++ % truncates toward zero
          if (m != Mutant::kTruncatedMod && r < 0) r += p;
          int64_t row = r + l.offsets[static_cast<size_t>(col)];
          // A port that stores row ids as uint32_t keeps the low 32 bits (§HASH.4 row ids reach 2^40 and beyond).
          if (m == Mutant::kRowIdUint32) row &= int64_t{0xFFFFFFFF};
          // A port whose row ids are int32 cannot hold one of 2^31 or more: its kernel wraps it (modulo 2^32
          // into [-2^31, 2^31)), its oracle refuses it; either way the row differs from §HASH.4's.
          if (m == Mutant::kRowIdInt32) row = static_cast<int32_t>(static_cast<uint32_t>(row));
          rows.push_back(row);
        }
      }
    }
  }
  return rows;
}

bool MutantRowsEqualReference(Mutant m, const Layout& layout) {
  if (m != Mutant::kRowIdUint32 && m != Mutant::kRowIdInt32) return false;
  const int64_t rows_that_fit = m == Mutant::kRowIdUint32 ? int64_t{1} << 32 : int64_t{1} << 31;
  for (const LayerLayout& l : layout.layers) {
    if (l.num_embeddings > rows_that_fit) return false;  // a row id can reach 2^32 (2^31)
  }
  return true;
}

// ---------------------------------------------------------------------------
// Storage: the E8M0 bit-shift decode (spec/vectors.md §VEC.12, spec/storage.md §STO.2).

double MutantE8M0(Mutant m, uint8_t scale) {
  if (m != Mutant::kE8M0BitShift) return DecodeE8M0(scale);
  // The shortcut reads the byte as a float32 exponent field: bits s << 23.
  // For s = 1 ... 254 that is exactly 2^(s-127); s = 0 gives +0.0 (a zero
  // exponent field with a zero fraction) and s = 0xFF gives +inf.
  return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(scale) << 23));
}

uint16_t MutantDecodeElement(Mutant m, uint8_t code, uint8_t scale) {
  // §STO.3 float32 product, one rounding to bf16, with the mutant's scale.
  const float product = DecodeE4M3(code) * static_cast<float>(MutantE8M0(m, scale));
  return FloatToBf16(product);
}

std::vector<uint16_t> MutantDecodeRow(Mutant m, std::span<const uint8_t> codes, std::span<const uint8_t> scales) {
  if (codes.size() != scales.size() * kScaleBlock) throw Error("mutant row: one scale per 32 codes expected");
  std::vector<uint16_t> out(codes.size());
  for (size_t j = 0; j < codes.size(); ++j) out[j] = MutantDecodeElement(m, codes[j], scales[j / kScaleBlock]);
  return out;
}

// ---------------------------------------------------------------------------
// Fusion: torch.sign() in the v4.1 gate (the demo's sign(), spec/sources.md [SRC-DEMO];
// spec/vectors.md §VEC.12, spec/fusion.md §FUS.4).

GateParts MutantGateV41(Mutant m, double dot, Precision p) {
  if (m != Mutant::kSignGate) return GateV41(dot, p);
  GateParts g;
  const double a = std::fabs(dot);
  g.clamped = std::isnan(a) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, GateClamp(p));
  g.root = Round(std::sqrt(g.clamped), p);
  // torch.sign: (0 < d) - (d < 0), so +0, -0 and NaN give 0 (the demo's gate
  // function, applied to v4.1). root * 0 is +0, or NaN when root is NaN.
  const double sign = (0 < dot ? 1.0 : 0.0) - (dot < 0 ? 1.0 : 0.0);
  g.signed_root = Round(g.root * sign, p);
  g.gate = Sigmoid(g.signed_root, p);
  return g;
}

V41StreamTrace MutantFuseV41Stream(Mutant m, const V41StreamTrace& ref, std::span<const uint16_t> h_bits,
                                   std::span<const uint16_t> value_bits, bool masked, Precision p) {
  V41StreamTrace t = ref;
  t.gate_parts = MutantGateV41(m, ref.dot, p);
  t.gate = masked ? 0.0 : t.gate_parts.gate;  // §FUS.3 step 4: masking is not the gate function's business
  for (size_t i = 0; i < t.out.size(); ++i) {
    // §FUS.3 step 5, as the reference writes it: out = bf16(h + gate * v).
    t.out[i] = Round(Bf16Value(h_bits[i]) + Round(t.gate * Bf16Value(value_bits[i]), p), p);
    t.out_bf16[i] = ToBf16(t.out[i]);
  }
  return t;
}

// ---------------------------------------------------------------------------
// Token map: decode through the transformers Python wrapper (spec/sources.md
// [SRC-DEMO], [SRC-HF-TRANSFORMERS]; spec/token_map.md §TOK.2).

std::string CleanUpTokenizationSpaces(std::string text) {
  // transformers' PreTrainedTokenizerBase.clean_up_tokenization, in its order;
  // each rule is one left-to-right str.replace (non-overlapping, no rescan).
  const std::pair<std::string, std::string> rules[] = {{" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
                                                      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" 's", "'s"},
                                                      {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : rules) {
    std::string out;
    size_t at = 0;
    for (size_t hit; (hit = text.find(from, at)) != std::string::npos; at = hit + from.size()) {
      out.append(text, at, hit - at);
      out += to;
    }
    out.append(text, at, std::string::npos);
    text = std::move(out);
  }
  return text;
}

std::vector<int64_t> MutantTokenMap(Mutant m, const Tokenizer& tokenizer) {
  std::map<std::string, int64_t> seen;
  std::vector<int64_t> map;
  map.reserve(tokenizer.tokens.size());
  for (const std::string& token : tokenizer.tokens) {
    std::string text = DecodeToken(token);  // §TOK.2
    if (m == Mutant::kPythonWrapperDecode) text = CleanUpTokenizationSpaces(std::move(text));
    // §TOK.4 the key: the raw token when the text holds U+FFFD, else the
    // normalized text, else (normalized to "") the text itself.
    std::string key;
    if (text.find("\xEF\xBF\xBD") != std::string::npos) {
      key = token;
    } else {
      std::string n = NormalizeText(text);
      key = n.empty() ? text : n;
    }
    map.push_back(seen.try_emplace(key, static_cast<int64_t>(seen.size())).first->second);
  }
  return map;
}

// ---------------------------------------------------------------------------
// Policies of real ports (spec/vectors.md §VEC.12).

std::string ConfigGapFlag(ConfigGap gap) {
  switch (gap) {
    case ConfigGap::kDuplicateLayerIds: return "UpstreamDuplicateLayerIds";
    case ConfigGap::kZeroHeads: return "UpstreamZeroHeads";
    case ConfigGap::kMaxNgramOne: return "UpstreamMaxNgramOne";
    case ConfigGap::kNumEmbeddingsUnchecked: return "UpstreamNumEmbeddingsUnchecked";
    case ConfigGap::kExtraBases: return "UpstreamExtraBases";
    case ConfigGap::kNumEmbeddingsAtLeast: return "NumEmbeddingsAtLeast";
  }
  return "";
}

std::string ConfigGapBug(ConfigGap gap) {
  switch (gap) {
    case ConfigGap::kDuplicateLayerIds: return "upstream-duplicate-layers";
    case ConfigGap::kZeroHeads: return "upstream-zero-heads";
    case ConfigGap::kMaxNgramOne: return "upstream-max-ngram-1";
    case ConfigGap::kNumEmbeddingsUnchecked: return "upstream-num-embeddings";
    case ConfigGap::kExtraBases: return "upstream-extra-bases";
    case ConfigGap::kNumEmbeddingsAtLeast: return "num-embeddings-at-least";
  }
  return "";
}

std::vector<std::vector<std::vector<int64_t>>> PrimesSkipping(const EngramConfig& config, uint64_t skipped) {
  // §LAY.2's search (one `seen` set over every layer, each order restarting at its base - 1), with a prime
  // test that calls `skipped` composite.
  std::set<uint64_t> seen;
  std::vector<std::vector<std::vector<int64_t>>> out;
  for (size_t li = 0; li < config.layer_ids.size(); ++li) {
    std::vector<std::vector<int64_t>> layer;
    for (int order = 2; order <= config.max_ngram; ++order) {
      std::vector<int64_t> heads;
      uint64_t candidate = static_cast<uint64_t>(config.bases[static_cast<size_t>(order - 2)]) - 1;
      for (int h = 0; h < config.heads; ++h) {
        do {
          ++candidate;
        } while (!IsPrime(candidate) || candidate == skipped || seen.count(candidate) != 0);
        seen.insert(candidate);
        heads.push_back(static_cast<int64_t>(candidate));
      }
      layer.push_back(heads);
    }
    out.push_back(layer);
  }
  return out;
}

bool GapAccepts(ConfigGap gap, const nlohmann::json& config, const std::string& profile, int64_t v, int64_t pad) {
  if (!config.is_object() || (profile != "demo-v1" && profile != "v4.1")) return false;
  const bool v41 = profile == "v4.1";
  // The keys of the profile's own shape (§CFG.2); a Hugging Face text_config
  // is not looked into: no test of a gap uses that shape.
  const char* const layer_key = v41 ? "engram_layer_ids" : "layer_ids";
  const char* const heads_key = v41 ? "engram_n_heads" : "n_head_per_ngram";
  nlohmann::json repaired = config;
  switch (gap) {
    case ConfigGap::kDuplicateLayerIds: {
      if (!config.contains(layer_key) || !config[layer_key].is_array()) return false;
      nlohmann::json unique = nlohmann::json::array();
      std::vector<size_t> dropped;  // indices of the repeats: their engram_num_embeddings entries go too
      for (size_t i = 0; i < config[layer_key].size(); ++i) {
        const nlohmann::json& id = config[layer_key][i];
        if (std::find(unique.begin(), unique.end(), id) == unique.end()) {
          unique.push_back(id);
        } else {
          dropped.push_back(i);
        }
      }
      if (dropped.empty()) return false;  // no duplicate: the gap changes nothing
      repaired[layer_key] = unique;
      if (v41 && config.contains("engram_num_embeddings") && config["engram_num_embeddings"].is_array() &&
          config["engram_num_embeddings"].size() == config[layer_key].size()) {
        nlohmann::json rows = nlohmann::json::array();
        for (size_t i = 0; i < config[layer_key].size(); ++i) {
          if (std::find(dropped.begin(), dropped.end(), i) == dropped.end()) rows.push_back(config["engram_num_embeddings"][i]);
        }
        repaired["engram_num_embeddings"] = rows;
      }
      break;
    }
    case ConfigGap::kZeroHeads:
      if (!config.contains(heads_key) || config[heads_key] != 0) return false;
      repaired[heads_key] = 1;
      break;
    case ConfigGap::kMaxNgramOne: {
      // Both codes loop over the orders 2 .. max n-gram and so build layers without orders for max n-gram 1
      // (the V4.1 layout code; the demo's prime search, engram_demo_v1.py calculate_vocab_size_across_layers).
      const char* const max_key = v41 ? "engram_max_ngram_size" : "max_ngram_size";
      if (!config.contains(max_key) || config[max_key] != 1) return false;
      repaired[max_key] = 2;
      if (!v41) {
        // demo-v1 lists one base per order (§CFG.3): max n-gram 1 with no base breaks this rule alone (a base
        // listed beside it breaks the base count too: two gaps, neither flag), and max n-gram 2 needs a base
        // there, which that code never reads.
        if (!config.contains("engram_vocab_size") || !config["engram_vocab_size"].is_array() ||
            !config["engram_vocab_size"].empty()) {
          return false;
        }
        repaired["engram_vocab_size"] = nlohmann::json::array({DemoV1ConfigJson()["engram_vocab_size"][0]});
      }
      break;
    }
    case ConfigGap::kNumEmbeddingsUnchecked:
    case ConfigGap::kNumEmbeddingsAtLeast:
      if (!v41 || !config.contains("engram_num_embeddings")) return false;
      repaired.erase("engram_num_embeddings");  // optional (§CFG.2): the layout's own sums are used
      break;
    case ConfigGap::kExtraBases: {
      // The demo reads vocab_size_per_ngram[ngram - 2] for ngram 2 .. max only
      // (spec/sources.md [SRC-DEMO], calculate_vocab_size_across_layers):
      // entries past max - 1 are never read, so dropping them changes nothing
      // that port computes. max_ngram_size as §CFG.3 reads it (its default).
      const nlohmann::json max_key = config.contains("max_ngram_size") ? config["max_ngram_size"]
                                                                        : nlohmann::json(DemoV1ConfigJson()["max_ngram_size"]);
      if (v41 || !max_key.is_number_integer() || !config.contains("engram_vocab_size") ||
          !config["engram_vocab_size"].is_array()) {
        return false;
      }
      const int64_t orders = max_key.get<int64_t>() - 1;
      if (orders < 1 || config["engram_vocab_size"].size() <= static_cast<size_t>(orders)) return false;
      nlohmann::json read = nlohmann::json::array();
      for (int64_t i = 0; i < orders; ++i) read.push_back(config["engram_vocab_size"][static_cast<size_t>(i)]);
      repaired["engram_vocab_size"] = read;
      break;
    }
  }
  try {
    const Layout layout = BuildLayout(ParseConfig(repaired, "config", v41 ? Profile::kV41 : Profile::kDemoV1), v, pad);
    if (gap == ConfigGap::kNumEmbeddingsAtLeast) {
      // NeMo Automodel's hasher (spec/sources.md [SRC-PORT-NEMO]) refuses a
      // layer only when its bucket span exceeds the stated row count: a stated
      // count of the right length with every entry at least the layer's sum
      // passes, and it differs from the reference only where one is above.
      const nlohmann::json& rows = config["engram_num_embeddings"];
      if (!rows.is_array() || rows.size() != layout.layers.size()) return false;
      bool above = false;
      for (size_t i = 0; i < rows.size(); ++i) {
        if (!rows[i].is_number_integer() || rows[i].get<int64_t>() < layout.layers[i].num_embeddings) return false;
        above = above || rows[i].get<int64_t>() > layout.layers[i].num_embeddings;
      }
      return above;
    }
    return true;
  } catch (const Error&) {
    return false;  // refused for another reason as well
  }
}

std::vector<StepOutcome> RollbackDeadSteps(const Layout& layout, const nlohmann::ordered_json& steps) {
  // Each sequence as the ids the fork sees: the real ids, with DEAD where a
  // rollback left a slot it no longer knows.
  std::map<std::string, std::vector<int64_t>> seqs;
  const size_t w = static_cast<size_t>(layout.max_ngram - 1);
  auto history = [&](const std::vector<int64_t>& seq) {
    const size_t n = std::min(seq.size(), w);
    return std::vector<int64_t>(seq.end() - static_cast<std::ptrdiff_t>(n), seq.end());
  };
  std::vector<StepOutcome> out;
  for (const nlohmann::ordered_json& step : steps) {
    const std::string op = step.at("op");
    StepOutcome o;
    if (op == "append") {
      std::vector<int64_t>& seq = seqs[step.at("seq").get<std::string>()];
      const std::vector<int64_t> ids = step.at("ids").get<std::vector<int64_t>>();
      const size_t before = seq.size();
      seq.insert(seq.end(), ids.begin(), ids.end());
      const std::vector<int64_t> all = HashSequence(layout, seq);
      const size_t per_id = layout.layers.size() * static_cast<size_t>(layout.columns());
      o.rows.assign(all.begin() + static_cast<std::ptrdiff_t>(before * per_id), all.end());
      o.position_after = static_cast<int64_t>(seq.size());
      o.history = history(seq);
    } else if (op == "rollback") {
      std::vector<int64_t>& seq = seqs[step.at("seq").get<std::string>()];
      const size_t k = step.at("k").get<size_t>();
      const size_t p = seq.size();
      if (k > p) throw Error("mutant rollback: k > position");
      // The fork's ring held positions [p - w, p); the new window is
      // [p - k - w, p - k): the part below p - w is gone, read back as DEAD.
      seq.resize(p - k);
      const size_t gone_to = std::min(seq.size(), p >= w ? p - w : 0);
      const size_t from = seq.size() >= w ? seq.size() - w : 0;
      for (size_t q = from; q < gone_to; ++q) seq[q] = kDead;
      o.position_after = static_cast<int64_t>(seq.size());
      o.history = history(seq);
    } else if (op == "fork") {
      seqs[step.at("to").get<std::string>()] = seqs[step.at("from").get<std::string>()];
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace engram::vectors
