// The file a SafetensorsLookupTest or PackedLookupTest hands to the library's
// own reader (§STO.11): a sparse temporary file of the table's real size.
#ifndef ENGRAM_CONFORMANCE_HOST_SPARSE_FILE_H_
#define ENGRAM_CONFORMANCE_HOST_SPARSE_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace engram::host {

// A sparse file of the table's real size holding only the test's bytes.
// §CONF.3 It has no name in $TMPDIR for longer than it takes to create it:
// it is unlinked at once and handed to the library as /proc/self/fd/N (which
// opens the same file), so that nothing is left behind however the host ends
// (a library that crashes or hangs in engram_table_open_*, the runner's
// SIGKILL at a timeout). Without /proc, the named file is removed when done.
// Failures to create or write it are Unsupported (marshal.h): the host's
// machine, not the library, is at fault.
class SparseFile {
 public:
  explicit SparseFile(int64_t size);
  ~SparseFile() { Remove(); }
  SparseFile(const SparseFile&) = delete;
  SparseFile& operator=(const SparseFile&) = delete;

  // Writes `bytes` at `offset`, the rest of the file staying a hole.
  void Write(int64_t offset, const std::vector<uint8_t>& bytes);
  // The path the library opens (the descriptor stays open until then).
  const std::string& path() const { return path_; }

 private:
  void Remove();

  std::string path_;
  int fd_ = -1;
  bool named_ = false;
};

}  // namespace engram::host

#endif  // ENGRAM_CONFORMANCE_HOST_SPARSE_FILE_H_
