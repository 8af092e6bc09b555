// The plug-in's declarations of the ggml names src/llama-dsv41-engram.cpp uses (not ggml's header): the tensor
// type (defined by plugin.cc) and GGML_ASSERT, whose failure ggml_abort (plugin.cc) reports as a refusal naming
// the file and line instead of aborting the process.
#pragma once

struct ggml_tensor;

extern "C" [[noreturn]] void ggml_abort(const char * file, int line, const char * fmt, ...);

#define GGML_ASSERT(x) if (!(x)) ggml_abort(__FILE__, __LINE__, "GGML_ASSERT(%s) failed", #x)
