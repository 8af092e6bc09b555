// The plug-in's declarations of the llama.cpp names src/llama-dsv41-engram.cpp uses (not llama.cpp's header):
// the GGUF keys load() reads and the loader's two typed getters, which plugin.cc defines for exactly the types
// load() asks for (the layout handed to the port as a GGUF would hold it).
#pragma once

enum llm_kv {
    LLM_KV_DSV41_ENGRAM_LAYERS,
    LLM_KV_DSV41_ENGRAM_ROWS,
    LLM_KV_DSV41_ENGRAM_TOKEN_MAP,
    LLM_KV_DSV41_ENGRAM_PRIMES,
    LLM_KV_DSV41_ENGRAM_MULTIPLIERS,
    LLM_KV_DSV41_ENGRAM_PAD_ID,
    LLM_KV_DSV41_ENGRAM_COMPRESSED_VOCAB_SIZE,
};

struct pesto_gguf;  // plugin.cc: the key/value pairs of one layout

class llama_model_loader {
public:
    explicit llama_model_loader(const pesto_gguf & kv) : kv(kv) {}

    template <typename T> bool get_arr(enum llm_kv kid, T & result, bool required = true);
    template <typename T> bool get_key(enum llm_kv kid, T & result, bool required = true);

    const pesto_gguf & kv;
};
