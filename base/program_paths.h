// engram::base — where a program of the build tree (a test suite, a docs
// snippet, the CLI's fallback to the tree's schemas) finds the source tree and
// the programs built beside it. Not installed: an installed program has no tree.
//
// Why not the absolute paths as macros (-DENGRAM_SOURCE_DIR="/home/me/engram")?
// Then every checkout compiles different object files, and a compiler cache
// (ccache, which scripts/setup.sh installs) can never reuse one checkout's
// objects for another: a fresh clone would compile the test suites again.
// CMake passes each path relative to the test program's own directory
// instead (ENGRAM_SOURCE_DIR_REL, ...; the same in every checkout), and the
// program resolves it against where it runs from (/proc/self/exe).
#ifndef ENGRAM_BASE_PROGRAM_PATHS_H_
#define ENGRAM_BASE_PROGRAM_PATHS_H_

#include <filesystem>
#include <map>
#include <mutex>
#include <string>

namespace engram::base {

/// `relative` (a path relative to the running program's directory) as an
/// absolute, normalised path. The returned pointer stays valid for the
/// program's lifetime, so that it can stand wherever a string literal stood.
inline const char* NextToProgram(const char* relative) {
  static std::mutex mutex;
  static std::map<std::string, std::string> resolved;  // nodes never move
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = resolved.find(relative);
  if (it == resolved.end()) {
    const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe");
    const std::filesystem::path path = (program.parent_path() / relative).lexically_normal();
    std::string text = path.string();
    // "dir/." normalises to "dir/": keep directory paths without the slash.
    if (text.size() > 1 && text.back() == '/') text.pop_back();
    it = resolved.emplace(relative, std::move(text)).first;
  }
  return it->second.c_str();
}

}  // namespace engram::base

// The paths the tests use, each defined only when CMake gave its relative form.
#ifdef ENGRAM_SOURCE_DIR_REL
#define ENGRAM_SOURCE_DIR (::engram::base::NextToProgram(ENGRAM_SOURCE_DIR_REL))
#endif
#ifdef ENGRAM_CLI_REL
#define ENGRAM_CLI (::engram::base::NextToProgram(ENGRAM_CLI_REL))
#endif
#ifdef ENGRAM_PLUGIN_REL
#define ENGRAM_PLUGIN (::engram::base::NextToProgram(ENGRAM_PLUGIN_REL))
#endif
#ifdef ENGRAM_MINIMAL_PLUGIN_REL
#define ENGRAM_MINIMAL_PLUGIN (::engram::base::NextToProgram(ENGRAM_MINIMAL_PLUGIN_REL))
#endif
#ifdef ENGRAM_TEST_PLUGIN_DIR_REL
#define ENGRAM_TEST_PLUGIN_DIR (::engram::base::NextToProgram(ENGRAM_TEST_PLUGIN_DIR_REL))
#endif
#ifdef ENGRAM_CUDA_PLUGIN_REL
#define ENGRAM_CUDA_PLUGIN (::engram::base::NextToProgram(ENGRAM_CUDA_PLUGIN_REL))
#endif
#ifdef ENGRAM_CUDA_PTX_LIST_REL
#define ENGRAM_CUDA_PTX_LIST (::engram::base::NextToProgram(ENGRAM_CUDA_PTX_LIST_REL))
#endif

#endif  // ENGRAM_BASE_PROGRAM_PATHS_H_
