// The plug-in's declarations of the llama.cpp names src/llama-dsv41-engram.{h,cpp} use (not llama.cpp's header):
// the ubatch fields set_input reads, the graph-input interface it overrides, and can_reuse's parameters.
#pragma once

#include <cstdint>

#include "llama.h"

struct ggml_tensor;

struct llama_ubatch {
    uint32_t        n_tokens = 0;
    llama_token   * token    = nullptr;  // [n_tokens]
    llama_pos     * pos      = nullptr;  // [n_tokens]
    int32_t       * n_seq_id = nullptr;  // [n_tokens]
    llama_seq_id ** seq_id   = nullptr;  // [n_tokens][n_seq_id[i]]
};

struct llm_graph_params {
    llama_ubatch ubatch;
};

class llm_graph_input_i {
public:
    virtual ~llm_graph_input_i() = default;
    virtual void set_input(const llama_ubatch * ubatch) = 0;
    virtual bool can_reuse(const llm_graph_params & params) { (void) params; return false; }
};
