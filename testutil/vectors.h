// What the tests of vectors/ and of the runner above it share
// (vectors/*_test.cc, testutil/conform.h and conformance/runner/
// plugin_test.cc): a scratch directory, reading a file whole, the committed
// vectors and their tests found by what they are, the python of the optional
// checks.
#ifndef ENGRAM_TESTUTIL_VECTORS_H_
#define ENGRAM_TESTUTIL_VECTORS_H_

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "reference/fusion.h"

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

// The committed vectors/v1/<name>.json, read once (ordered: §CONF.1 splits a
// test at "result", so key order matters).
inline const nlohmann::ordered_json& Suite(const std::string& name) {
  static std::map<std::string, nlohmann::ordered_json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, nlohmann::ordered_json::parse(Slurp(kVectors + "/v1/" + name + ".json"))).first;
  return it->second;
}

struct Case {
  const nlohmann::ordered_json* group = nullptr;
  const nlohmann::ordered_json* test = nullptr;
};

// The first test of `type` in `suite` (the group comment containing
// `group_has`) for which `pred` holds. Tests are found by what they are, not
// by tcId, so that regenerated vectors keep these tests meaningful.
inline Case Find(const std::string& suite, const std::string& type,
                 const std::function<bool(const nlohmann::ordered_json&, const nlohmann::ordered_json&)>& pred,
                 const std::string& group_has = "") {
  for (const nlohmann::ordered_json& g : Suite(suite)["testGroups"]) {
    if (g["type"] != type || g.value("comment", "").find(group_has) == std::string::npos) continue;
    for (const nlohmann::ordered_json& t : g["tests"]) {
      if (pred(g, t)) return {&g, &t};
    }
  }
  ADD_FAILURE() << "no " << type << " test in " << suite << " matches";
  static const nlohmann::ordered_json empty = nlohmann::ordered_json::object();
  return {&empty, &empty};
}

inline bool Valid(const nlohmann::ordered_json& t) { return t.value("result", "") == "valid"; }
inline const auto AnyValid = [](const nlohmann::ordered_json&, const nlohmann::ordered_json& t) { return Valid(t); };

// A hex float, or an array of them, as doubles.
inline std::vector<double> Floats(const nlohmann::ordered_json& a) {
  std::vector<double> out;
  if (a.is_string()) return {engram::ParseFloat(a.get<std::string>(), "vector")};
  for (const nlohmann::ordered_json& s : a) out.push_back(engram::ParseFloat(s.get<std::string>(), "vector"));
  return out;
}

// ENGRAM_PYTHON: a python3 with numpy, jsonschema and tokenizers (scripts/test.sh
// sets it); the tests that need it skip without it.
inline std::string Python() {
  const char* p = std::getenv("ENGRAM_PYTHON");
  return p == nullptr ? "" : p;
}

}  // namespace engram::vectors::test

#endif  // ENGRAM_TESTUTIL_VECTORS_H_
