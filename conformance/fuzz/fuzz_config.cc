// libFuzzer target: configuration documents (spec §CFG) and the layouts they give (§LAY).
// Any input must either parse into a valid layout or throw engram::Error; never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "reference/config.h"
#include "base/error.h"
#include "reference/layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    engram::EngramConfig c = engram::ParseConfig(doc, "fuzz");
    // Keep the prime search small: huge bases are valid but slow to lay out.
    for (int64_t b : c.bases) {
      if (b > (int64_t{1} << 24)) return 0;
    }
    if (c.columns() * static_cast<int64_t>(c.layer_ids.size()) > 4096) return 0;
    engram::BuildLayout(c, c.compressed_vocab_size.value_or(1000), 0);
  } catch (const engram::Error&) {
  }
  return 0;
}
