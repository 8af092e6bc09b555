// The plug-in's declarations of the llama.cpp names src/llama-dsv41-engram.cpp uses (not llama.cpp's header):
// the two calls state_write / state_read make on a session stream (plugin.cc implements the reader).
#pragma once

#include <cstddef>

class llama_io_write_i {
public:
    virtual ~llama_io_write_i() = default;
    virtual void write(const void * src, size_t size) = 0;
};

class llama_io_read_i {
public:
    virtual ~llama_io_read_i() = default;
    virtual void read(void * dst, size_t size) = 0;
};
