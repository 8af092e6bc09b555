// The in-tree reference exposed through the conformance C ABI
// (conformance/include/engram/conformance.h), so that `engram conform --lib`
// checks it exactly as it checks any port: through the same plug-in host.
#include "engram/conformance.h"

#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "reference/config.h"
#include "reference/error.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/random.h"
#include "reference/storage.h"

struct engram_layout {
  engram::Layout layout;
};

struct engram_hasher {
  const engram_layout* layout;
  engram::HashState state;
  size_t capacity;
};

namespace {

int Refuse(const std::exception& e, char* err, size_t err_len) {
  if (err != nullptr && err_len > 0) {
    std::strncpy(err, e.what(), err_len - 1);
    err[err_len - 1] = '\0';
  }
  return 1;
}

}  // namespace

extern "C" {

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {
      ENGRAM_CONFORMANCE_ABI_VERSION, "engram-reference", "0.1.0",
      "multipliers,layout,hash_v41,hash_demo,hash_state,accumulated", "v4.1,demo-v1"};
  return &info;
}

int engram_bounded_integers(uint64_t seed, int64_t low, int64_t high_minus_one, size_t count, int64_t* out, char* err,
                            size_t err_len) {
  try {
    engram::Pcg64 gen{engram::SeedSequence(seed)};
    const auto high = static_cast<engram::uint128_t>(static_cast<__int128>(high_minus_one) + 1);
    const std::vector<int64_t> values = engram::IntegersWide(gen, low, high, count);
    std::copy(values.begin(), values.end(), out);
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int engram_multipliers(int64_t seed, int64_t layer_id, int64_t compressed_vocab_size, int32_t max_ngram, int64_t* out,
                       char* err, size_t err_len) {
  try {
    const std::vector<int64_t> m = engram::LayerMultipliers(seed, layer_id, compressed_vocab_size, max_ngram);
    std::copy(m.begin(), m.end(), out);
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

engram_layout* engram_layout_create(const char* config_json, const char* profile, int64_t compressed_vocab_size,
                                    int64_t compressed_pad, char* err, size_t err_len) {
  try {
    const nlohmann::json doc = nlohmann::json::parse(config_json);
    std::optional<engram::Profile> p;
    if (profile != nullptr) p = engram::ParseProfile(profile);
    const engram::EngramConfig config = engram::ParseConfig(doc, "config", p);
    return new engram_layout{engram::BuildLayout(config, compressed_vocab_size, compressed_pad)};
  } catch (const std::exception& e) {
    Refuse(e, err, err_len);
    return nullptr;
  }
}

void engram_layout_destroy(engram_layout* layout) { delete layout; }
int32_t engram_layout_layer_count(const engram_layout* l) { return static_cast<int32_t>(l->layout.layers.size()); }
int32_t engram_layout_max_ngram(const engram_layout* l) { return l->layout.max_ngram; }
int32_t engram_layout_columns(const engram_layout* l) { return l->layout.columns(); }

int engram_layout_layer(const engram_layout* l, int32_t index, int64_t* layer_id, int64_t* multipliers, int64_t* primes,
                        int64_t* offsets, int64_t* num_embeddings) {
  if (index < 0 || static_cast<size_t>(index) >= l->layout.layers.size()) return 1;
  const engram::LayerLayout& layer = l->layout.layers[static_cast<size_t>(index)];
  *layer_id = layer.layer_id;
  std::copy(layer.multipliers.begin(), layer.multipliers.end(), multipliers);
  for (int col = 0; col < l->layout.columns(); ++col) {
    primes[col] = layer.prime(col);
    offsets[col] = layer.offsets[static_cast<size_t>(col)];
  }
  *num_embeddings = layer.num_embeddings;
  return 0;
}

void engram_layout_fingerprint(const engram_layout* l, char* out) {
  const std::string f = engram::LayoutFingerprint(l->layout);
  std::memcpy(out, f.c_str(), f.size() + 1);
}

engram_hasher* engram_hasher_create(const engram_layout* layout, size_t rollback_capacity, char* err, size_t err_len) {
  try {
    return new engram_hasher{layout, engram::HashState(layout->layout, rollback_capacity), rollback_capacity};
  } catch (const std::exception& e) {
    Refuse(e, err, err_len);
    return nullptr;
  }
}

engram_hasher* engram_hasher_fork(const engram_hasher* h) { return new engram_hasher(*h); }
void engram_hasher_destroy(engram_hasher* h) { delete h; }

int engram_hasher_append(engram_hasher* h, const int64_t* ids, size_t n, int64_t* rows, char* err, size_t err_len) {
  try {
    const size_t per_id = h->layout->layout.layers.size() * static_cast<size_t>(h->layout->layout.columns());
    h->state.AppendInto(std::span<const int64_t>(ids, n), std::span<int64_t>(rows, n * per_id));
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int engram_hasher_rollback(engram_hasher* h, size_t k, char* err, size_t err_len) {
  try {
    h->state.Rollback(k);
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int64_t engram_hasher_position(const engram_hasher* h) { return h->state.position(); }

size_t engram_hasher_history(const engram_hasher* h, int64_t* ids) {
  const std::vector<int64_t> history = h->state.History();
  std::copy(history.begin(), history.end(), ids);
  return history.size();
}

int engram_hasher_import(engram_hasher* h, int64_t position, const int64_t* ids, size_t count,
                         const char* layout_fingerprint, char* err, size_t err_len) {
  try {
    engram::HashHistory history{position, std::vector<int64_t>(ids, ids + count),
                                layout_fingerprint != nullptr ? layout_fingerprint : ""};
    h->state = engram::HashState::Import(h->layout->layout, history, h->capacity);
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int engram_decode_element(uint8_t code, uint8_t scale, uint16_t* bf16_bits, char* err, size_t err_len) {
  try {
    *bf16_bits = engram::DecodeElement(code, scale);
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

}  // extern "C"
