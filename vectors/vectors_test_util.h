// What the tests of vectors/ and of the runner above it share
// (vectors/*_test.cc, conformance/runner/conform_test_util.h): a scratch
// directory, reading a file whole, the committed vectors, the python of the
// optional checks.
#ifndef ENGRAM_VECTORS_VECTORS_TEST_UTIL_H_
#define ENGRAM_VECTORS_VECTORS_TEST_UTIL_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/program_paths.h"

namespace engram::vectors::test {

namespace fs = std::filesystem;

// One scratch directory per test process, removed when the process ends
// (a passing or failing run leaves nothing in /tmp).
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("engram_test_" + std::to_string(::getpid()));
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

inline fs::path Dir() {
  static ScratchDir dir;
  fs::create_directories(dir.path);
  return dir.path;
}

inline std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline const std::string kVectors = std::string(ENGRAM_SOURCE_DIR) + "/vectors";

// ENGRAM_PYTHON: a python3 with numpy, jsonschema and tokenizers (scripts/test.sh
// sets it); the tests that need it skip without it.
inline std::string Python() {
  const char* p = std::getenv("ENGRAM_PYTHON");
  return p == nullptr ? "" : p;
}

}  // namespace engram::vectors::test

#endif  // ENGRAM_VECTORS_VECTORS_TEST_UTIL_H_
