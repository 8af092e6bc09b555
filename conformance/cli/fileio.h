// File helpers for the tools: output files appear whole or not at all.
#ifndef ENGRAM_CONFORMANCE_CLI_FILEIO_H_
#define ENGRAM_CONFORMANCE_CLI_FILEIO_H_

#include <filesystem>
#include <string>
#include <string_view>

namespace engram {

// §ERR.1 (no partial output) Writes `content` to a temporary file beside `path`, flushes it, then
// renames it over `path`, so readers never see a partial file. Throws
// engram::Error naming the path on failure (and removes the temporary).
void WriteFileAtomic(const std::filesystem::path& path, std::string_view content);

// The two halves of WriteFileAtomic, for outputs that must appear together
// (a run's JSON and JUnit reports): the constructor writes and flushes the
// temporary file (throws engram::Error naming the path), Commit() renames it
// into place; a StagedFile destroyed uncommitted removes its temporary.
class StagedFile {
 public:
  StagedFile(const std::filesystem::path& path, std::string_view content);
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  void Commit();

 private:
  std::filesystem::path path_;
  std::string temp_;  // empty: nothing staged (committed or failed)
};

// Reads a whole file (a vector, schema or manifest file, or a file the tools
// wrote themselves) within the §ERR.4 limit of a vector file; throws
// engram::Error naming the path (ReadInputFile, reference/bad_inputs.h).
std::string ReadFile(const std::filesystem::path& path);

}  // namespace engram

#endif  // ENGRAM_CONFORMANCE_CLI_FILEIO_H_
