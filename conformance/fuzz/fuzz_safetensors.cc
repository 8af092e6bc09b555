// libFuzzer target: .safetensors and packed-row files (§STO.4), read from a temporary file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "base/error.h"
#include "reference/storage.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/engram_fuzz_" + std::to_string(getpid()) + ".bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  for (int kind = 0; kind < 2; ++kind) {
    try {
      auto table = kind == 0 ? engram::OpenSafetensors(path, "embed") : engram::OpenPackedRows(path, 256);
      if (table->rows() > 0) {
        engram::LookupRows(*table, std::vector<int64_t>{0, table->rows() - 1});
      }
    } catch (const engram::Error&) {
    }
  }
  return 0;
}
