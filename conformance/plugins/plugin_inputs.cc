// The entry points every in-tree plug-in shares (see plugin_inputs.h).
#include "conformance/plugins/plugin_inputs.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/plugins/abi_shims.h"
#include "reference/input_files.h"
#include "base/error.h"

namespace engram::plugin {

void CheckLen(size_t got, size_t want, const char* field) {
  if (got != want) {
    throw Error(std::string(field) + ": " + std::to_string(got) + " values, expected " + std::to_string(want));
  }
}

void CheckCapacity(size_t capacity, size_t need, const char* field) {
  if (capacity < need) {
    throw Error(std::string(field) + ": room for " + std::to_string(capacity) + " values, " + std::to_string(need) +
                " needed");
  }
}

}  // namespace engram::plugin

using engram::Error;
using engram::plugin::GuardHandle;

extern "C" {

// ---------------------------------------------------------------- §LAY layout

engram_layout* engram_layout_create(const char* config_json, const char* profile, int64_t compressed_vocab_size,
                                    int64_t compressed_pad, char* err, size_t err_len) {
  return GuardHandle(err, err_len, [&] {
    if (config_json == nullptr) throw Error("config_json: NULL");
    // The layouts built last, by their arguments: a random run asks the same
    // layout for several cases in a row (the generator's kCasesPerLayout),
    // and finding its primes is most of a hash case's work. Only layouts
    // that were built are kept; a refusal is decided anew each time.
    thread_local std::vector<std::pair<std::string, engram_layout>> built;
    std::string key = std::string(profile != nullptr ? profile : "-") + '/' + std::to_string(compressed_vocab_size) + '/' +
                      std::to_string(compressed_pad) + '/' + config_json;
    for (const auto& [k, layout] : built) {
      if (k == key) return new engram_layout(layout);
    }
    const nlohmann::json doc = engram::ParseJson(config_json, "config_json");  // §ERR.5 unique keys
    std::optional<engram::Profile> p;
    if (profile != nullptr) {
      p = engram::ParseProfile(profile);
      if (!p) throw Error(std::string("profile: \"") + profile + "\" is neither \"v4.1\" nor \"demo-v1\"");
    }
    auto l = std::make_unique<engram_layout>();
    l->config = engram::ParseConfig(doc, "config", p);
    l->layout = engram::BuildLayout(l->config, compressed_vocab_size, compressed_pad);
    l->fingerprint = engram::LayoutFingerprint(l->layout);
    if (built.size() >= 4) built.erase(built.begin());
    built.emplace_back(std::move(key), *l);
    return l.release();
  });
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
  std::memcpy(out, l->fingerprint.c_str(), l->fingerprint.size() + 1);
}

// ---------------------------------------------------------------- §STO.4/§STO.5 table bytes

engram_table* engram_table_synthetic(uint64_t seed, int64_t rows, int64_t head_dim, int32_t edge_rows, char* err,
                                     size_t err_len) {
  return GuardHandle(err, err_len, [&] {
    if (rows < 1) throw Error("rows: " + std::to_string(rows) + " (a table has at least one row)");
    if (head_dim < engram::kScaleBlock || head_dim % engram::kScaleBlock != 0) {
      throw Error("head_dim: " + std::to_string(head_dim) + " is not a positive multiple of 32");
    }
    return new engram_table{engram::SyntheticTable(seed, rows, head_dim, edge_rows != 0)};
  });
}

engram_table* engram_table_open_safetensors(const char* path, const char* tensor_prefix, char* err, size_t err_len) {
  return GuardHandle(err, err_len, [&] {
    if (path == nullptr || tensor_prefix == nullptr) throw Error("path and tensor_prefix must not be NULL");
    return new engram_table{engram::OpenSafetensors(path, tensor_prefix)};
  });
}

engram_table* engram_table_open_packed(const char* path, int64_t head_dim, char* err, size_t err_len) {
  return GuardHandle(err, err_len, [&] {
    if (path == nullptr) throw Error("path must not be NULL");
    return new engram_table{engram::OpenPackedRows(path, head_dim)};
  });
}

void engram_table_destroy(engram_table* table) { delete table; }

}  // extern "C"
