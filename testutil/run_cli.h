// Running the `engram` command line from a test: its exit code, stdout and
// stderr, and a scratch directory for the files a test hands it. Shared by the
// CLI's tests (conformance/cli/*_test.cc) and the ports' fixtures
// (port_fixtures_test.cc). The test program must be given ENGRAM_CLI and
// ENGRAM_SOURCE_DIR (engram_program_paths in CMake, base/program_paths.h).
#ifndef ENGRAM_TESTUTIL_RUN_CLI_H_
#define ENGRAM_TESTUTIL_RUN_CLI_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "base/program_paths.h"

namespace engram::testutil {

// What one run of the command line gave.
struct CliResult {
  int exit_code;  // -1 when it did not exit (a signal)
  std::string out;
  std::string err;
};

// The scratch directory of this test process; removed when the process's
// tests end, whether they passed or failed (a gtest environment's TearDown runs
// after every test, also after a failed ASSERT). The process id keeps the
// directories of tests run in parallel (ctest -j) apart.
inline std::filesystem::path TempDirPath() {
  return std::filesystem::temp_directory_path() / ("engram_cli_test_" + std::to_string(::getpid()));
}

inline std::filesystem::path TempDir() {
  std::filesystem::path dir = TempDirPath();
  std::filesystem::create_directories(dir);
  return dir;
}

class RemoveTempDir : public testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(TempDirPath(), ec);
  }
};
// One registration per test program, however many of its files include this.
inline testing::Environment* const kRemoveTempDir = testing::AddGlobalTestEnvironment(new RemoveTempDir);

// The whole file, as bytes ("" when it cannot be read).
inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `text` to `p` as it is (no newline added).
inline void Write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// Runs `engram ARGS` through the shell (ARGS is shell text: quote what needs it).
inline CliResult RunCli(const std::string& args) {
  const std::filesystem::path dir = TempDir();
  const std::filesystem::path out = dir / "stdout", err = dir / "stderr";
  const std::string cmd = std::string(ENGRAM_CLI) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
}

// The shipped configurations (conformance/configs/).
inline const std::string kV41 = std::string(ENGRAM_SOURCE_DIR) + "/conformance/configs/v41-flash.json";
inline const std::string kDemo = std::string(ENGRAM_SOURCE_DIR) + "/conformance/configs/demo-v1.json";

}  // namespace engram::testutil

#endif  // ENGRAM_TESTUTIL_RUN_CLI_H_
