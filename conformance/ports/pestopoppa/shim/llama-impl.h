// The plug-in's declarations of the llama.cpp names src/llama-dsv41-engram.cpp uses (not llama.cpp's header):
// format() (defined by plugin.cc) and the log macro of load(), which logs nothing here.
#pragma once

#include <string>

std::string format(const char * fmt, ...);

#define LLAMA_LOG_INFO(...) ((void) 0)
#define LLAMA_LOG_WARN(...) ((void) 0)
