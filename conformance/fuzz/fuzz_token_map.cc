// libFuzzer target: token-map files (§TOK.5) and tokenizer.json documents (§TOK.1-§TOK.4).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "reference/token_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const engram::Tokenizer t = engram::ParseTokenizerJson(text, "fuzz");
    engram::BuildTokenMap(t);
  } catch (const engram::Error&) {
  }
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_discarded()) {
    try {
      engram::TokenMapDigest(engram::ParseTokenMap(doc, "fuzz"));
    } catch (const engram::Error&) {
    }
  }
  return 0;
}
