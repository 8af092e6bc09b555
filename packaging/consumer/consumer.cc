// Hashes ids with an installed engram::reference and prints the rows as JSON,
// nested [position][layer][column] like `engram hash` (scripts/test_packaging.sh
// compares the two). Usage: consumer CONFIG V ID...
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <engram/conformance.h>  // engram::conformance_abi: the plug-in C ABI

#include "base/error.h"
#include "reference/config.h"
#include "reference/hash.h"
#include "reference/layout.h"

int main(int argc, char** argv) {
  static_assert(ENGRAM_CONFORMANCE_ABI_VERSION == 1, "the installed ABI header is version 1");
  if (argc < 4) {
    std::fprintf(stderr, "usage: consumer CONFIG V ID... (configs in %s)\n", ENGRAM_CONFIGS_DIR);
    return 2;
  }
  try {
    const engram::EngramConfig config = engram::LoadConfig(argv[1]);
    const engram::Layout layout = engram::BuildLayout(config, std::stoll(argv[2]), config.pad_id);
    std::vector<int64_t> ids;
    for (int i = 3; i < argc; ++i) ids.push_back(std::stoll(argv[i]));
    const std::vector<int64_t> rows = engram::HashSequence(layout, ids);
    const nlohmann::json nested = engram::NestRows(layout, rows);
    std::printf("%s\n", nested.dump().c_str());
  } catch (const engram::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
