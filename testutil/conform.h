// What the end-to-end tests of `engram conform` share (conformance/runner/
// runner_test.cc, random_test.cc, ...): running the CLI, the paths (the
// scratch directory and the vectors: testutil/vectors.h).
#ifndef ENGRAM_TESTUTIL_CONFORM_H_
#define ENGRAM_TESTUTIL_CONFORM_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "testutil/vectors.h"

namespace engram::conform::test {

namespace fs = std::filesystem;
// The scratch directory, files, vectors and python, shared with the tests of vectors/.
using vectors::test::Dir;
using vectors::test::kVectors;
using vectors::test::Python;
using vectors::test::Slurp;

struct Result {
  int exit_code;
  std::string out;
};

inline Result Conform(const std::string& args) {
  const fs::path out = Dir() / "out.txt";
  const std::string cmd = std::string(ENGRAM_CLI) + " conform " + args + " >" + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out)};
}

// stdout and stderr apart.
struct Split {
  int exit_code;
  std::string out, err;
};
inline Split ConformSplit(const std::string& args) {
  const fs::path out = Dir() / "split.out", err = Dir() / "split.err";
  const std::string cmd = std::string(ENGRAM_CLI) + " conform " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
}

// The directory of the in-tree Python adapters' packages (the numpy port, the adapters' protocol).
inline const std::string kPythonPath = std::string(ENGRAM_SOURCE_DIR) + "/conformance/python";

// The numpy port (conformance/python/engram_numpy_port) as an --exec command line, options to follow:
// ENGRAM_PYTHON run as a module, its package directory on PYTHONPATH.
inline std::string NumpyPort() { return "env PYTHONPATH=" + kPythonPath + " " + Python() + " -m engram_numpy_port"; }

// The number of tests in the committed vectors/v1/<suite>.json, counted from
// the file itself (not by the runner): the verdict counts the tests check are
// written in terms of it, so that appending vectors does not mean editing every
// count. `less` is subtracted (e.g. the one test a peer answered).
inline std::string TestsIn(const std::string& suite, int less = 0) {
  const nlohmann::json doc = nlohmann::json::parse(Slurp(kVectors + "/v1/" + suite + ".json"));
  size_t n = 0;
  for (const nlohmann::json& group : doc.at("testGroups")) n += group.at("tests").size();
  return std::to_string(static_cast<long long>(n) - less);
}

// The number of distinct layouts (a group's "layers", V and pad) among the committed vectors/v1/<suite>.json
// groups, counted from the file: the contract check (§CON.4) passes or skips one per layout.
inline size_t LayoutsIn(const std::string& suite) {
  const nlohmann::json doc = nlohmann::json::parse(Slurp(kVectors + "/v1/" + suite + ".json"));
  std::set<std::string> layouts;
  for (const nlohmann::json& g : doc.at("testGroups")) {
    if (g.contains("layers")) {
      layouts.insert(g["layers"].dump() + "|" + g.value("compressedVocabSize", nlohmann::json()).dump() + "|" +
                     g.value("compressedPad", nlohmann::json()).dump());
    }
  }
  return layouts.size();
}

}  // namespace engram::conform::test

#endif  // ENGRAM_TESTUTIL_CONFORM_H_
