// libFuzzer target: hash contracts (§CON) and vector suite documents (§VEC.10 verification).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/contract.h"
#include "base/error.h"
#include "vectors/generator.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    engram::CheckContractForm(doc, "fuzz");
    engram::ConfigFromContract(doc, "fuzz");
  } catch (const std::exception&) {
  }
  // The verifier must report problems, never crash, on any suite document. (Not `accumulated`: verifying
  // it recomputes digests over N positions, up to 10^7, which takes seconds per input; its documents are
  // parsed by the same code as the other suites'.)
  std::vector<std::string> problems;
  for (const char* name : {"v1/hash_v41.json", "v1/hash_demo.json", "v1/multipliers.json", "v1/layout.json",
                           "v1/hash_state.json", "v1/fp8_decode.json", "v1/table_lookup.json",
                           "v1/tp_shard.json", "v1/token_map.json", "v1/gate_v41.json", "v1/gate_demo.json",
                           "v1/short_conv_demo.json", "v1/engram_forward.json"}) {
    try {
      engram::vectors::VerifySuite(name, nlohmann::json::parse(doc.dump()), problems);
    } catch (const std::exception&) {
    }
  }
  return 0;
}
