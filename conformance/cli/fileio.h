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

// Reads a whole file; throws engram::Error naming the path.
std::string ReadFile(const std::filesystem::path& path);

}  // namespace engram

#endif  // ENGRAM_CONFORMANCE_CLI_FILEIO_H_
