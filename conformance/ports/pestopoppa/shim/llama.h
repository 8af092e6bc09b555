// The plug-in's declarations of the llama.cpp names src/llama-dsv41-engram.{h,cpp} use (not llama.cpp's header):
// the three id types of include/llama.h, all int32_t there; as that C header, it brings size_t and the intN_t
// types into the global namespace.
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef int32_t llama_token;
typedef int32_t llama_pos;
typedef int32_t llama_seq_id;
