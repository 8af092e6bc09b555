// The plug-in's declarations of the ggml names src/llama-dsv41-engram.cpp uses (not ggml's header): the one
// backend call set_input makes, which plugin.cc defines to keep the bytes (the row ids and the gate mask).
#pragma once

#include <cstddef>

#include "ggml.h"

extern "C" void ggml_backend_tensor_set(struct ggml_tensor * tensor, const void * data, size_t offset, size_t size);
