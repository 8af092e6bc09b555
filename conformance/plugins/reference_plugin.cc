// The in-tree reference exposed through the conformance C ABI
// (conformance/include/engram/conformance.h), so that `engram conform --lib`
// checks it exactly as it checks any port: through the same plug-in host.
//
// Fusion outputs are computed in the float32 mirror of the published PyTorch
// code (§FUS.8), which is what a faithful port produces; setting
// ENGRAM_REFERENCE_PRECISION=float64 makes the plug-in answer with the float64
// reference instead (bf16 outputs then round the float64 values). The runner
// must accept both (§FUS.9): the tests run it both ways.
#include "engram/conformance.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/plugins/abi_shims.h"
#include "conformance/plugins/plugin_inputs.h"
#include "reference/config.h"
#include "base/error.h"
#include "reference/fusion.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/random.h"
#include "reference/storage.h"
#include "reference/token_map.h"

struct engram_token_map {
  engram::Tokenizer tokenizer;
  engram::TokenMap map;
  std::vector<engram::TokenKey> keys;
};

struct engram_hasher {
  const engram_layout* layout;
  engram::HashState state;
  size_t capacity;
};

struct engram_conv_state {
  engram::ShortConvState state;
  size_t channels;
};

namespace {

using engram::plugin::CheckCapacity;
using engram::plugin::CheckLen;
using engram::plugin::Guard;
using engram::plugin::GuardHandle;

// §FUS.8 Which evaluation the fusion entry points answer with.
engram::Precision AnswerPrecision() {
  static const engram::Precision p = [] {
    const char* v = std::getenv("ENGRAM_REFERENCE_PRECISION");
    return v != nullptr && std::string(v) == "float64" ? engram::Precision::kFloat64 : engram::Precision::kFloat32;
  }();
  return p;
}

// The C ABI promises messages that name the field: checked here before the
// reference sees the data (its own checks name its internal names).
template <typename T>
std::vector<T> Vec(const T* data, size_t len) {
  return len == 0 ? std::vector<T>{} : std::vector<T>(data, data + len);
}

std::vector<double> Vec(engram_f64_span_t s) { return Vec(s.data, s.len); }

engram::DemoParams DemoParams(const engram_demo_params_t* p) {
  if (p == nullptr) throw engram::Error("params: NULL");
  engram::DemoParams q;
  q.hc = p->hc;
  q.hidden = p->hidden;
  q.in = p->in;
  q.kernel = p->kernel;
  q.dilation = p->dilation;
  q.key_w = Vec(p->key_weight);
  q.key_b = Vec(p->key_bias);
  q.norm1_w = Vec(p->norm1_weight);
  q.norm2_w = Vec(p->norm2_weight);
  q.value_w = Vec(p->value_weight);
  q.value_b = Vec(p->value_bias);
  q.conv_norm_w = Vec(p->conv_norm_weight);
  q.conv_w = Vec(p->conv_weight);
  q.Check();
  return q;
}

// The row ids of the layout's first layer: HashSequence gives [T][layers][columns].
std::vector<int64_t> FirstLayerRows(const engram::Layout& layout, const int64_t* ids, size_t n) {
  const std::vector<int64_t> all = engram::HashSequence(layout, std::span<const int64_t>(ids, n));
  const size_t layers = layout.layers.size(), cols = static_cast<size_t>(layout.columns());
  std::vector<int64_t> rows;
  rows.reserve(n * cols);
  for (size_t t = 0; t < n; ++t) {
    for (size_t c = 0; c < cols; ++c) rows.push_back(all[(t * layers) * cols + c]);
  }
  return rows;
}

}  // namespace

extern "C" {

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {
      ENGRAM_CONFORMANCE_ABI_VERSION, "engram-reference", "0.1.0",
      "multipliers,layout,hash_v41,hash_demo,hash_state,accumulated,fp8_decode,table_lookup,tp_shard,token_map,"
      "gate_v41,gate_demo,short_conv_demo,engram_forward,serving_v41",
      "v4.1,demo-v1"};
  return &info;
}

int engram_bounded_integers(uint64_t seed, int64_t low, int64_t high_minus_one, size_t count, int64_t* out, char* err,
                            size_t err_len) {
  return Guard(err, err_len, [&] {
    engram::Pcg64 gen{engram::SeedSequence(seed)};
    const auto high = static_cast<engram::uint128_t>(static_cast<__int128>(high_minus_one) + 1);
    const std::vector<int64_t> values = engram::IntegersWide(gen, low, high, count);
    std::copy(values.begin(), values.end(), out);
    return 0;
  });
}

int engram_multipliers(int64_t seed, int64_t layer_id, int64_t compressed_vocab_size, int32_t max_ngram, int64_t* out,
                       char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const std::vector<int64_t> m = engram::LayerMultipliers(seed, layer_id, compressed_vocab_size, max_ngram);
    std::copy(m.begin(), m.end(), out);
    return 0;
  });
}


engram_hasher* engram_hasher_create(const engram_layout* layout, size_t rollback_capacity, char* err, size_t err_len) {
  return GuardHandle(err, err_len, [&] {
    return new engram_hasher{layout, engram::HashState(layout->layout, rollback_capacity), rollback_capacity};
  });
}

engram_hasher* engram_hasher_fork(const engram_hasher* h) { return new engram_hasher(*h); }
void engram_hasher_destroy(engram_hasher* h) { delete h; }

int engram_hasher_append(engram_hasher* h, const int64_t* ids, size_t n, int64_t* rows, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const size_t per_id = h->layout->layout.layers.size() * static_cast<size_t>(h->layout->layout.columns());
    h->state.AppendInto(std::span<const int64_t>(ids, n), std::span<int64_t>(rows, n * per_id));
    return 0;
  });
}

int engram_hasher_rollback(engram_hasher* h, size_t k, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    h->state.Rollback(k);
    return 0;
  });
}

int64_t engram_hasher_position(const engram_hasher* h) { return h->state.position(); }

size_t engram_hasher_history(const engram_hasher* h, int64_t* ids) {
  const std::vector<int64_t> history = h->state.History();
  std::copy(history.begin(), history.end(), ids);
  return history.size();
}

int engram_hasher_import(engram_hasher* h, int64_t position, const int64_t* ids, size_t count,
                         const char* layout_fingerprint, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    engram::HashHistory history{position, std::vector<int64_t>(ids, ids + count),
                                layout_fingerprint != nullptr ? layout_fingerprint : ""};
    h->state = engram::HashState::Import(h->layout->layout, history, h->capacity);
    return 0;
  });
}

// §HASH.10-§HASH.12 (ABI 1.4) One packed call through the reference's HashPacked.
int engram_hash_packed(const engram_layout* layout, const engram_packed_call_t* call, engram_packed_result_t* result,
                       char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const engram::Layout& l = layout->layout;
    const size_t window = static_cast<size_t>(l.max_ngram - 1);
    engram::PackedCall c;
    c.ids.assign(call->ids, call->ids + call->slots);
    c.cu_seqlens.assign(call->cu_seqlens, call->cu_seqlens + call->requests + 1);
    c.positions.assign(call->positions, call->positions + call->slots);
    for (size_t r = 0; r < call->requests; ++r) {
      if (call->history_counts[r] > window) {
        throw engram::Error("history_counts[" + std::to_string(r) + "] = " + std::to_string(call->history_counts[r]) +
                            ": more than max_ngram - 1 = " + std::to_string(window));
      }
      const int64_t* ids = call->history_ids + r * window;
      c.histories.push_back(engram::HashHistory{call->history_positions[r],
                                                std::vector<int64_t>(ids, ids + call->history_counts[r]), ""});
    }
    if (call->parents != nullptr) {
      c.parents.assign(call->parents, call->parents + call->slots);
      for (size_t r = 0; r < call->requests; ++r) {
        c.accepted.emplace_back(call->accepted + call->accepted_offsets[r], call->accepted + call->accepted_offsets[r + 1]);
      }
    }
    // This library's policy: a position restarting at 0 inside a request is a reset (§HASH.12). No case restarts
    // a position unless the run declares the feature (`engram conform --features segment-reset`).
    c.segment_reset = true;
    const engram::PackedResult res = engram::HashPacked(l, c);
    CheckCapacity(result->rows_len, res.rows.size(), "rows");
    std::copy(res.rows.begin(), res.rows.end(), result->rows);
    for (size_t r = 0; r < call->requests; ++r) {
      result->history_positions[r] = res.histories[r].position;
      result->history_counts[r] = res.histories[r].ids.size();
      std::copy(res.histories[r].ids.begin(), res.histories[r].ids.end(), result->history_ids + r * window);
    }
    return 0;
  });
}

int engram_decode_element(uint8_t code, uint8_t scale, uint16_t* bf16_bits, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    *bf16_bits = engram::DecodeElement(code, scale);
    return 0;
  });
}

// ---------------------------------------------------------------- §STO tables (ABI 1.1)


int engram_table_lookup(const engram_table* table, const int64_t* row_ids, size_t n, uint16_t* out, size_t out_len,
                        char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    CheckCapacity(out_len, n * static_cast<size_t>(table->source->head_dim()), "out");
    const std::vector<uint16_t> v = engram::LookupRows(*table->source, std::span<const int64_t>(row_ids, n));
    std::copy(v.begin(), v.end(), out);
    return 0;
  });
}

int engram_table_row_shard_lookup(const engram_table* table, int32_t rank, int32_t world, const int64_t* row_ids,
                                  size_t n, uint16_t* out, size_t out_len, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (world < 1) throw engram::Error("world: " + std::to_string(world) + " (at least 1)");
    if (rank < 0 || rank >= world) throw engram::Error("rank: " + std::to_string(rank) + " is not in [0, world)");
    CheckCapacity(out_len, n * static_cast<size_t>(table->source->head_dim()), "out");
    const std::vector<uint16_t> v = engram::ShardLookup(*table->source, std::span<const int64_t>(row_ids, n), rank, world);
    std::copy(v.begin(), v.end(), out);
    return 0;
  });
}

int engram_shard_reduce(const uint16_t* partials, int32_t world, size_t count, uint16_t* out, char* err,
                        size_t err_len) {
  return Guard(err, err_len, [&] {
    if (world < 1) throw engram::Error("world: " + std::to_string(world) + " (at least 1)");
    std::vector<std::vector<uint16_t>> parts;
    for (int32_t r = 0; r < world; ++r) parts.push_back(Vec(partials + static_cast<size_t>(r) * count, count));
    const std::vector<uint16_t> v = engram::ReduceShards(parts);
    std::copy(v.begin(), v.end(), out);
    return 0;
  });
}

int engram_table_head_shard_lookup(const engram_table* table, int32_t rank, int32_t world, int32_t columns,
                                   const int64_t* row_ids, size_t n, uint16_t* out, size_t out_len, size_t* written,
                                   char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (world < 1) throw engram::Error("world: " + std::to_string(world) + " (at least 1)");
    if (rank < 0 || rank >= world) throw engram::Error("rank: " + std::to_string(rank) + " is not in [0, world)");
    if (columns < 1) throw engram::Error("columns: " + std::to_string(columns) + " (at least 1)");
    const std::vector<uint16_t> v =
        engram::HeadShardLookup(*table->source, std::span<const int64_t>(row_ids, n), columns, rank, world);
    CheckCapacity(out_len, v.size(), "out");
    std::copy(v.begin(), v.end(), out);
    *written = v.size();
    return 0;
  });
}

int engram_float_table_lookup(uint64_t seed, int64_t rows, int64_t width, const int64_t* row_ids, size_t n, float* out,
                              size_t out_len, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (rows < 1) throw engram::Error("rows: " + std::to_string(rows) + " (a table has at least one row)");
    if (width < 1) throw engram::Error("width: " + std::to_string(width) + " (at least 1)");
    CheckCapacity(out_len, n * static_cast<size_t>(width), "out");
    auto table = engram::SyntheticFloatTable(seed, rows, width);
    const std::vector<float> v = engram::LookupFloatRows(*table, std::span<const int64_t>(row_ids, n));
    std::copy(v.begin(), v.end(), out);
    return 0;
  });
}

// ---------------------------------------------------------------- §TOK token map (ABI 1.1)

engram_token_map* engram_token_map_build(const char* tokenizer_json, size_t length, char* err, size_t err_len) {
  return GuardHandle(err, err_len, [&] {
    if (tokenizer_json == nullptr) throw engram::Error("tokenizer_json: NULL");
    auto m = std::make_unique<engram_token_map>();
    m->tokenizer = engram::ParseTokenizerJson(std::string_view(tokenizer_json, length), "tokenizer.json");
    m->map = engram::BuildTokenMap(m->tokenizer, &m->keys);
    return m.release();
  });
}

void engram_token_map_destroy(engram_token_map* map) { delete map; }
int64_t engram_token_map_tokens(const engram_token_map* map) { return map->map.tokens(); }
int64_t engram_token_map_compressed_size(const engram_token_map* map) { return map->map.compressed_size; }
void engram_token_map_ids(const engram_token_map* map, int64_t* out) {
  std::copy(map->map.map.begin(), map->map.map.end(), out);
}

int engram_token_map_check(const engram_token_map* map, int64_t pad_id, int64_t compressed_vocab_size,
                           int64_t* compressed_pad, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    // §TOK.4 through a minimal v4.1 configuration: only the pad id and the size are read.
    engram::EngramConfig config;
    config.profile = engram::Profile::kV41;
    config.source = "config";
    config.pad_id = pad_id;
    if (compressed_vocab_size >= 0) config.compressed_vocab_size = compressed_vocab_size;
    *compressed_pad = engram::CheckTokenMapForConfig(map->map, config);
    return 0;
  });
}

int engram_token_map_compress(const engram_token_map* map, const int64_t* raw, const uint8_t* mask, size_t n,
                              const char* profile, int64_t* out, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const std::optional<engram::Profile> p = profile ? engram::ParseProfile(profile) : std::nullopt;
    if (!p) throw engram::Error(std::string("profile: \"") + (profile ? profile : "(null)") + "\" is neither \"v4.1\" nor \"demo-v1\"");
    const std::vector<int64_t> ids = engram::CompressIds(*p, map->map, std::span(raw, n),
                                                         mask ? std::span(mask, n) : std::span<const uint8_t>());
    std::copy(ids.begin(), ids.end(), out);
    return 0;
  });
}

int engram_token_map_key(const engram_token_map* map, int64_t id, engram_token_key_t* key) {
  if (id < 0 || id >= map->map.tokens() || static_cast<size_t>(id) >= map->keys.size()) return 1;
  const size_t i = static_cast<size_t>(id);
  const engram::TokenKey& k = map->keys[i];
  const std::string& token = map->tokenizer.tokens[i];
  key->token = token.data();
  key->token_len = token.size();
  key->text = k.text.data();
  key->text_len = k.text.size();
  key->normalized = k.replacement ? nullptr : k.normalized.data();
  key->normalized_len = k.replacement ? 0 : k.normalized.size();
  key->key = k.key.data();
  key->key_len = k.key.size();
  // The ABI promises a NUL-terminated name: string literals, not a string_view's data().
  key->key_kind = k.kind == engram::KeyKind::kNormalized ? "normalized" : k.kind == engram::KeyKind::kText ? "text" : "token";
  key->added = map->tokenizer.added[i];
  key->special = map->tokenizer.special[i];
  key->replacement = k.replacement ? 1 : 0;
  return 0;
}

// ---------------------------------------------------------------- §FUS fusion (ABI 1.1)

int engram_gate(const char* profile, double dot, double* gate, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const std::string p = profile != nullptr ? profile : "";
    if (p == "v4.1") *gate = engram::GateV41(dot, AnswerPrecision()).gate;
    else if (p == "demo-v1") *gate = engram::GateDemo(dot, AnswerPrecision()).gate;
    else throw engram::Error("profile: \"" + p + "\" is neither \"v4.1\" nor \"demo-v1\"");
    return 0;
  });
}

int engram_v41_gate(size_t dim, size_t hc, double eps, engram_bf16_span_t x, engram_bf16_span_t key,
                    engram_bf16_span_t value, engram_bf16_span_t q_weight, engram_bf16_span_t k_weight, int32_t masked,
                    double* gate, uint16_t* out, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (dim == 0 || hc == 0) throw engram::Error("dim and hc must be >= 1");
    CheckLen(x.len, hc * dim, "x [hc][dim]");
    CheckLen(key.len, hc * dim, "key [hc][dim]");
    CheckLen(value.len, dim, "value [dim]");
    CheckLen(q_weight.len, hc * dim, "qWeight [hc][dim]");
    CheckLen(k_weight.len, hc * dim, "kWeight [hc][dim]");
    for (size_t c = 0; c < hc; ++c) {
      auto part = [&](engram_bf16_span_t s) { return std::span<const uint16_t>(s.data + c * dim, dim); };
      const engram::V41StreamTrace t =
          engram::FuseV41Stream(part(x), part(key), std::span<const uint16_t>(value.data, dim), part(q_weight),
                                part(k_weight), eps, masked != 0, AnswerPrecision());
      gate[c] = t.gate;
      std::copy(t.out_bf16.begin(), t.out_bf16.end(), out + c * dim);
    }
    return 0;
  });
}

int engram_wkv_bf16(engram_bf16_span_t e, engram_bf16_span_t weight, size_t out_features, uint16_t* kv, char* err,
                    size_t err_len) {
  return Guard(err, err_len, [&] {
    CheckLen(weight.len, out_features * e.len, "weight [out][in]");
    std::vector<double> ed, w;
    for (size_t k = 0; k < e.len; ++k) ed.push_back(engram::Bf16Value(e.data[k]));
    for (size_t k = 0; k < weight.len; ++k) w.push_back(engram::Bf16Value(weight.data[k]));
    const std::vector<double> y = engram::LinearNoBias(ed, w, out_features, AnswerPrecision());
    for (size_t n = 0; n < out_features; ++n) kv[n] = engram::ToBf16(y[n]);
    return 0;
  });
}

int engram_wkv_fp8(engram_bf16_span_t e, engram_u8_span_t weight_codes, engram_u8_span_t weight_scales,
                   size_t out_features, uint16_t* kv, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (e.len % 32 != 0) throw engram::Error("e: " + std::to_string(e.len) + " values, not a multiple of 32");
    CheckLen(weight_codes.len, out_features * e.len, "weightCodes [out][in]");
    CheckLen(weight_scales.len, ((out_features + 31) / 32) * (e.len / 32), "weightScales [ceil(out/32)][in/32]");
    const engram::QuantizedActivation q = engram::QuantizeActivation(std::span<const uint16_t>(e.data, e.len));
    const std::vector<double> y =
        engram::Fp8Linear(q, std::span<const uint8_t>(weight_codes.data, weight_codes.len),
                          std::span<const uint8_t>(weight_scales.data, weight_scales.len), out_features, e.len,
                          AnswerPrecision());
    for (size_t n = 0; n < out_features; ++n) kv[n] = engram::ToBf16(y[n]);
    return 0;
  });
}

int engram_demo_gate(const engram_demo_params_t* params, engram_f64_span_t e, engram_f64_span_t hidden, double* gate,
                     double* value, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const engram::DemoParams q = DemoParams(params);
    CheckLen(e.len, q.in, "e [in]");
    CheckLen(hidden.len, q.hc * q.hidden, "hidden [hc][hidden]");
    const engram::DemoTokenTrace t = engram::DemoGateToken(Vec(e), Vec(hidden), q, AnswerPrecision());
    for (size_t c = 0; c < q.hc; ++c) {
      gate[c] = t.streams[c].gate;
      std::copy(t.streams[c].value.begin(), t.streams[c].value.end(), value + c * q.hidden);
    }
    return 0;
  });
}

int engram_short_conv(const engram_demo_params_t* params, size_t steps, engram_f64_span_t value, double* output,
                      char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const engram::DemoParams q = DemoParams(params);
    CheckLen(value.len, steps * q.hc * q.hidden, "value [steps][hc][hidden]");
    const engram::ShortConvTrace t = engram::ShortConv(Vec(value), steps, q, AnswerPrecision());
    std::copy(t.act.begin(), t.act.end(), output);
    return 0;
  });
}

engram_conv_state* engram_conv_state_create(const engram_demo_params_t* params, size_t rollback_capacity,
                                            engram_f64_span_t window, char* err, size_t err_len) {
  return GuardHandle(err, err_len, [&] {
    const engram::DemoParams q = DemoParams(params);
    auto s = std::make_unique<engram_conv_state>(
        engram_conv_state{engram::ShortConvState(q, rollback_capacity, AnswerPrecision()), q.hc * q.hidden});
    if (window.len != 0) {
      CheckLen(window.len, s->state.WindowSteps() * s->channels, "window [W][hc*hidden]");
      s->state.Import(Vec(window));
    }
    return s.release();
  });
}

void engram_conv_state_destroy(engram_conv_state* state) { delete state; }

int engram_conv_state_append(engram_conv_state* state, size_t steps, engram_f64_span_t value, double* output, char* err,
                             size_t err_len) {
  return Guard(err, err_len, [&] {
    CheckLen(value.len, steps * state->channels, "value [steps][hc][hidden]");
    const engram::ShortConvStateTrace t = state->state.Append(Vec(value), steps);
    std::copy(t.act.begin(), t.act.end(), output);
    return 0;
  });
}

int engram_conv_state_rollback(engram_conv_state* state, size_t k, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    state->state.Rollback(k);
    return 0;
  });
}

int engram_conv_state_window(const engram_conv_state* state, double* window, size_t window_len, char* err,
                             size_t err_len) {
  return Guard(err, err_len, [&] {
    const std::vector<double> w = state->state.Window();
    CheckCapacity(window_len, w.size(), "window");
    std::copy(w.begin(), w.end(), window);
    return 0;
  });
}

int engram_forward_v41(const engram_layout* layout, uint64_t table_seed, const engram_v41_fusion_params_t* params,
                       const int64_t* ids, size_t n, engram_bf16_span_t x, uint16_t* out, double* gate, size_t gate_len,
                       size_t* gate_count, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const engram::EngramConfig& cfg = layout->config;
    const engram::Layout& lay = layout->layout;
    if (cfg.profile != engram::Profile::kV41) throw engram::Error("layout: not a v4.1 configuration");
    if (lay.layers.empty()) throw engram::Error("layout: no layers");
    const size_t dim = static_cast<size_t>(cfg.hidden_size), hc = static_cast<size_t>(cfg.hc_mult);
    const size_t hd = static_cast<size_t>(cfg.head_dim), cols = static_cast<size_t>(lay.columns());
    const size_t in = cols * hd, nout = dim * (hc + 1);
    if (dim == 0 || hc == 0) throw engram::Error("layout: the configuration gives no dim / hc_mult");
    CheckLen(x.len, n * hc * dim, "x [n][hc][dim]");
    CheckLen(params->q_weight.len, hc * dim, "qWeight [hc][dim]");
    CheckLen(params->k_weight.len, hc * dim, "kWeight [hc][dim]");
    CheckLen(params->wkv_codes.len, nout * in, "wkvWeightCodes [dim*(hc+1)][columns*head_dim]");
    CheckLen(params->wkv_scales.len, ((nout + 31) / 32) * (in / 32), "wkvWeightScales [ceil(out/32)][in/32]");
    CheckCapacity(gate_len, n * hc, "gate");
    const engram::Precision p = AnswerPrecision();
    // §FUS.10 ids -> rows (first layer) -> synthetic table rows -> wkv -> gate.
    const std::vector<int64_t> rows = FirstLayerRows(lay, ids, n);
    auto table = engram::SyntheticTable(table_seed, lay.layers[0].num_embeddings, static_cast<int64_t>(hd));
    const std::vector<uint16_t> e = engram::LookupRows(*table, rows);
    const std::span<const uint8_t> wc(params->wkv_codes.data, params->wkv_codes.len),
        ws(params->wkv_scales.data, params->wkv_scales.len);
    for (size_t t = 0; t < n; ++t) {
      const engram::QuantizedActivation q = engram::QuantizeActivation(std::span<const uint16_t>(e.data() + t * in, in));
      const std::vector<double> y = engram::Fp8Linear(q, wc, ws, nout, in, p);
      std::vector<uint16_t> kv(nout);
      for (size_t k = 0; k < nout; ++k) kv[k] = engram::ToBf16(y[k]);
      const std::span<const uint16_t> v(kv.data() + hc * dim, dim);
      for (size_t c = 0; c < hc; ++c) {
        const engram::V41StreamTrace tr = engram::FuseV41Stream(
            std::span<const uint16_t>(x.data + (t * hc + c) * dim, dim), std::span<const uint16_t>(kv.data() + c * dim, dim),
            v, std::span<const uint16_t>(params->q_weight.data + c * dim, dim),
            std::span<const uint16_t>(params->k_weight.data + c * dim, dim), cfg.norm_eps, ids[t] == engram::kDead, p);
        gate[t * hc + c] = tr.gate;
        std::copy(tr.out_bf16.begin(), tr.out_bf16.end(), out + (t * hc + c) * dim);
      }
    }
    *gate_count = n * hc;
    return 0;
  });
}

int engram_forward_demo(const engram_layout* layout, uint64_t table_seed, const engram_demo_params_t* params,
                        const int64_t* ids, size_t n, engram_f64_span_t hidden, double* output, double* hidden_after,
                        double* gate, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const engram::Layout& lay = layout->layout;
    if (layout->config.profile != engram::Profile::kDemoV1) throw engram::Error("layout: not a demo-v1 configuration");
    if (lay.layers.empty()) throw engram::Error("layout: no layers");
    const engram::DemoParams q = DemoParams(params);
    const size_t cols = static_cast<size_t>(lay.columns());
    if (q.in % cols != 0) {
      throw engram::Error("params: in = " + std::to_string(q.in) + " is not a multiple of the " + std::to_string(cols) +
                          " columns");
    }
    CheckLen(hidden.len, n * q.hc * q.hidden, "hidden [n][hc][hidden]");
    const std::vector<int64_t> rows = FirstLayerRows(lay, ids, n);
    auto table = engram::SyntheticFloatTable(table_seed, lay.layers[0].num_embeddings, static_cast<int64_t>(q.in / cols));
    const std::vector<float> ef = engram::LookupFloatRows(*table, rows);
    const std::vector<double> e(ef.begin(), ef.end());
    const engram::DemoForwardTrace t = engram::DemoForward(e, Vec(hidden), n, q, AnswerPrecision());
    std::copy(t.output.begin(), t.output.end(), output);
    std::copy(t.hidden_after.begin(), t.hidden_after.end(), hidden_after);
    for (size_t i = 0; i < n; ++i) {
      for (size_t c = 0; c < q.hc; ++c) gate[i * q.hc + c] = t.tokens[i].streams[c].gate;
    }
    return 0;
  });
}

}  // extern "C"
