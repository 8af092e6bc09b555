// The entry points of a conformance plug-in (§CONF.3, engram/conformance.h),
// found with dlopen/dlsym. A library exports the ones it implements; the host
// maps each protocol request onto them (plugin_host.h).
#ifndef ENGRAM_CONFORMANCE_HOST_PLUGIN_API_H_
#define ENGRAM_CONFORMANCE_HOST_PLUGIN_API_H_

#include <string>

#include "engram/conformance.h"

namespace engram::host {

// The library's entry points; a null pointer means "not implemented".
struct Api {
  decltype(&engram_conformance_info) info = nullptr;
  decltype(&engram_bounded_integers) bounded_integers = nullptr;
  decltype(&engram_multipliers) multipliers = nullptr;
  decltype(&engram_layout_create) layout_create = nullptr;
  decltype(&engram_layout_destroy) layout_destroy = nullptr;
  decltype(&engram_layout_layer_count) layout_layer_count = nullptr;
  decltype(&engram_layout_max_ngram) layout_max_ngram = nullptr;
  decltype(&engram_layout_columns) layout_columns = nullptr;
  decltype(&engram_layout_layer) layout_layer = nullptr;
  decltype(&engram_layout_fingerprint) layout_fingerprint = nullptr;
  decltype(&engram_hasher_create) hasher_create = nullptr;
  decltype(&engram_hasher_fork) hasher_fork = nullptr;
  decltype(&engram_hasher_destroy) hasher_destroy = nullptr;
  decltype(&engram_hasher_append) hasher_append = nullptr;
  decltype(&engram_hasher_rollback) hasher_rollback = nullptr;
  decltype(&engram_hasher_position) hasher_position = nullptr;
  decltype(&engram_hasher_history) hasher_history = nullptr;
  decltype(&engram_hasher_import) hasher_import = nullptr;
  decltype(&engram_decode_element) decode_element = nullptr;
  decltype(&engram_contract_json) contract_json = nullptr;
  // ABI 1.1: tables, token map, fusion.
  decltype(&engram_table_synthetic) table_synthetic = nullptr;
  decltype(&engram_table_open_safetensors) table_open_safetensors = nullptr;
  decltype(&engram_table_open_packed) table_open_packed = nullptr;
  decltype(&engram_table_destroy) table_destroy = nullptr;
  decltype(&engram_table_lookup) table_lookup = nullptr;
  decltype(&engram_table_row_shard_lookup) table_row_shard_lookup = nullptr;
  decltype(&engram_shard_reduce) shard_reduce = nullptr;
  decltype(&engram_table_head_shard_lookup) table_head_shard_lookup = nullptr;
  decltype(&engram_float_table_lookup) float_table_lookup = nullptr;
  decltype(&engram_token_map_build) token_map_build = nullptr;
  decltype(&engram_token_map_destroy) token_map_destroy = nullptr;
  decltype(&engram_token_map_tokens) token_map_tokens = nullptr;
  decltype(&engram_token_map_compressed_size) token_map_compressed_size = nullptr;
  decltype(&engram_token_map_ids) token_map_ids = nullptr;
  decltype(&engram_token_map_check) token_map_check = nullptr;
  decltype(&engram_token_map_key) token_map_key = nullptr;
  decltype(&engram_token_map_compress) token_map_compress = nullptr;
  decltype(&engram_gate) gate = nullptr;
  decltype(&engram_v41_gate) v41_gate = nullptr;
  decltype(&engram_wkv_bf16) wkv_bf16 = nullptr;
  decltype(&engram_wkv_fp8) wkv_fp8 = nullptr;
  decltype(&engram_demo_gate) demo_gate = nullptr;
  decltype(&engram_short_conv) short_conv = nullptr;
  decltype(&engram_forward_v41) forward_v41 = nullptr;
  decltype(&engram_forward_demo) forward_demo = nullptr;
  // ABI 1.3: ShortConv carried across calls.
  decltype(&engram_conv_state_create) conv_state_create = nullptr;
  decltype(&engram_conv_state_destroy) conv_state_destroy = nullptr;
  decltype(&engram_conv_state_append) conv_state_append = nullptr;
  decltype(&engram_conv_state_rollback) conv_state_rollback = nullptr;
  decltype(&engram_conv_state_window) conv_state_window = nullptr;
  // ABI 1.4: packed calls.
  decltype(&engram_hash_packed) hash_packed = nullptr;

  bool HasLayout() const {
    return layout_create && layout_destroy && layout_layer_count && layout_max_ngram && layout_columns && layout_layer;
  }
  bool HasHasher() const {
    return HasLayout() && hasher_create && hasher_destroy && hasher_append && hasher_position && hasher_history;
  }
};

// §CONF.3 Loads the shared library at `path` (dlopen, RTLD_NOW | RTLD_LOCAL; it
// is never closed) and binds every entry point it exports. engram::Error names
// the path when it cannot be loaded or lacks engram_conformance_info.
Api LoadApi(const std::string& path);

}  // namespace engram::host

#endif  // ENGRAM_CONFORMANCE_HOST_PLUGIN_API_H_
