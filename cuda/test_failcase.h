// cuda/test_failcase.h — failing property cases written out as vector-style
// files (tests only). With ENGRAM_CUDA_FAILCASE_DIR=DIR set, a property that
// fails writes DIR/<property>.json:
//   {"algorithm": "ENGRAM-CUDA-FAILCASE", "property", "generator",
//    "numberOfTests": 1, "testGroups": [group + {"tests": [test]}]}
// where the group holds the shapes (layout, table, weights) and the test the
// inputs, the expected and the obtained values. RapidCheck re-runs a failing
// property while it shrinks; each failing run overwrites the file, so it ends
// holding the shrunk case. The file is written to a temporary name and
// renamed, so a reader never sees half a file.
#ifndef ENGRAM_CUDA_TEST_FAILCASE_H_
#define ENGRAM_CUDA_TEST_FAILCASE_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace engram::cuda {

inline void WriteFailCaseFile(const std::string& property, const char* generator, nlohmann::ordered_json group,
                              nlohmann::ordered_json test) {
  const char* dir = std::getenv("ENGRAM_CUDA_FAILCASE_DIR");
  if (dir == nullptr || *dir == '\0') return;
  test["tcId"] = 1;
  test["result"] = "valid";
  group["tests"] = nlohmann::ordered_json::array({std::move(test)});
  const nlohmann::ordered_json doc = {{"algorithm", "ENGRAM-CUDA-FAILCASE"},
                                      {"property", property},
                                      {"generator", generator},
                                      {"numberOfTests", 1},
                                      {"testGroups", nlohmann::ordered_json::array({std::move(group)})}};
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = std::filesystem::path(dir) / (property + ".json");
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << doc.dump(1) << "\n";
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_TEST_FAILCASE_H_
