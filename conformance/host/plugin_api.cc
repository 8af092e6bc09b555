// §CONF.3 Binding a plug-in's entry points: a null pointer is one it does not export.
#include "conformance/host/plugin_api.h"

#include <dlfcn.h>

#include "base/error.h"

namespace engram::host {
namespace {

template <typename F>
void Bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

Api LoadApi(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) throw Error(path + ": cannot load: " + dlerror());
  Api a;
  Bind(lib, "engram_conformance_info", a.info);
  if (a.info == nullptr) throw Error(path + ": does not export engram_conformance_info (required, see engram/conformance.h)");
  Bind(lib, "engram_bounded_integers", a.bounded_integers);
  Bind(lib, "engram_multipliers", a.multipliers);
  Bind(lib, "engram_layout_create", a.layout_create);
  Bind(lib, "engram_layout_destroy", a.layout_destroy);
  Bind(lib, "engram_layout_layer_count", a.layout_layer_count);
  Bind(lib, "engram_layout_max_ngram", a.layout_max_ngram);
  Bind(lib, "engram_layout_columns", a.layout_columns);
  Bind(lib, "engram_layout_layer", a.layout_layer);
  Bind(lib, "engram_layout_fingerprint", a.layout_fingerprint);
  Bind(lib, "engram_hasher_create", a.hasher_create);
  Bind(lib, "engram_hasher_fork", a.hasher_fork);
  Bind(lib, "engram_hasher_destroy", a.hasher_destroy);
  Bind(lib, "engram_hasher_append", a.hasher_append);
  Bind(lib, "engram_hasher_rollback", a.hasher_rollback);
  Bind(lib, "engram_hasher_position", a.hasher_position);
  Bind(lib, "engram_hasher_history", a.hasher_history);
  Bind(lib, "engram_hasher_import", a.hasher_import);
  Bind(lib, "engram_decode_element", a.decode_element);
  Bind(lib, "engram_contract_json", a.contract_json);
  Bind(lib, "engram_table_synthetic", a.table_synthetic);
  Bind(lib, "engram_table_open_safetensors", a.table_open_safetensors);
  Bind(lib, "engram_table_open_packed", a.table_open_packed);
  Bind(lib, "engram_table_destroy", a.table_destroy);
  Bind(lib, "engram_table_lookup", a.table_lookup);
  Bind(lib, "engram_table_row_shard_lookup", a.table_row_shard_lookup);
  Bind(lib, "engram_shard_reduce", a.shard_reduce);
  Bind(lib, "engram_table_head_shard_lookup", a.table_head_shard_lookup);
  Bind(lib, "engram_float_table_lookup", a.float_table_lookup);
  Bind(lib, "engram_token_map_build", a.token_map_build);
  Bind(lib, "engram_token_map_destroy", a.token_map_destroy);
  Bind(lib, "engram_token_map_tokens", a.token_map_tokens);
  Bind(lib, "engram_token_map_compressed_size", a.token_map_compressed_size);
  Bind(lib, "engram_token_map_ids", a.token_map_ids);
  Bind(lib, "engram_token_map_check", a.token_map_check);
  Bind(lib, "engram_token_map_key", a.token_map_key);
  Bind(lib, "engram_token_map_compress", a.token_map_compress);
  Bind(lib, "engram_hash_packed", a.hash_packed);
  Bind(lib, "engram_gate", a.gate);
  Bind(lib, "engram_v41_gate", a.v41_gate);
  Bind(lib, "engram_wkv_bf16", a.wkv_bf16);
  Bind(lib, "engram_wkv_fp8", a.wkv_fp8);
  Bind(lib, "engram_demo_gate", a.demo_gate);
  Bind(lib, "engram_short_conv", a.short_conv);
  Bind(lib, "engram_conv_state_create", a.conv_state_create);
  Bind(lib, "engram_conv_state_destroy", a.conv_state_destroy);
  Bind(lib, "engram_conv_state_append", a.conv_state_append);
  Bind(lib, "engram_conv_state_rollback", a.conv_state_rollback);
  Bind(lib, "engram_conv_state_window", a.conv_state_window);
  Bind(lib, "engram_forward_v41", a.forward_v41);
  Bind(lib, "engram_forward_demo", a.forward_demo);
  return a;
}

}  // namespace engram::host
