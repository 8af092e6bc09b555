// libFuzzer target: exported hash histories (§HASH.9), binary and JSON forms, imported into a layout.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "reference/config.h"
#include "base/error.h"
#include "reference/hash.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const engram::Layout layout = engram::BuildLayout(engram::V41FlashConfig(), 99092, 2);
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (int form = 0; form < 2; ++form) {
    try {
      engram::HashHistory h;
      if (form == 0) {
        h = engram::DecodeHistoryBinary(bytes, "fuzz");
      } else {
        const nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, false);
        if (doc.is_discarded()) continue;
        h = engram::HistoryFromJson(doc, "fuzz");
      }
      h.layout_fingerprint.clear();  // reach the checks behind the fingerprint too
      engram::HashState s = engram::HashState::Import(layout, h);
      std::vector<int64_t> rows;
      s.Append(std::vector<int64_t>{1, 2, 3}, rows);
    } catch (const engram::Error&) {
    }
  }
  return 0;
}
