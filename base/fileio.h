/// \file
/// The ground floor's file helpers, shared by the reference, the vectors and the
/// tools: output files appear whole or not at all (§ERR.1), input files are
/// read within a size limit (the mechanics of §ERR.4; the limits themselves are
/// the reference's, reference/input_files.h).
#ifndef ENGRAM_BASE_FILEIO_H_
#define ENGRAM_BASE_FILEIO_H_

#include <filesystem>
#include <string>
#include <string_view>
#include <cstdint>

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

// Reads the whole file at `path`, refusing it past `max_bytes` (§ERR.4, whose
// table of limits per kind of file is reference/input_files.h: ReadInputFile).
// Pipes and devices are read in pieces and refused at the first byte past the
// limit, never read beyond it. Throws engram::Error naming the path:
// "<path>: cannot open for reading: ...", "<path>: is a directory, not a
// <kind_name>", "<path>: N bytes is larger than <limit_text>", "<path>: more
// than <limit_text>", "<path>: read failed: ...".
// `regular_only` (the files a MANIFEST.sha256 lists, §VEC.9): anything but a
// regular file is refused, "<path>: not a regular file (a FIFO)", and the file
// is opened with O_NONBLOCK (cleared once it is known to be regular) so that a
// FIFO without a writer cannot block the open.
std::string ReadFileWithin(const std::filesystem::path& path, uint64_t max_bytes, std::string_view kind_name,
                           std::string_view limit_text, bool regular_only = false);

// What the file at `mode` (a struct stat st_mode) is, for messages: "a FIFO",
// "a character device", "a directory", ...
std::string FileTypeName(unsigned mode);

}  // namespace engram

#endif  // ENGRAM_BASE_FILEIO_H_
