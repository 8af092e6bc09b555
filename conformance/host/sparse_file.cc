// The sparse temporary file of a bytes lookup (sparse_file.h, §CONF.3).
#include "conformance/host/sparse_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "conformance/host/marshal.h"

namespace engram::host {

SparseFile::SparseFile(int64_t size) {
  std::string templ = (std::filesystem::temp_directory_path() / "engram-plugin-host-XXXXXX").string();
  fd_ = ::mkostemp(templ.data(), O_CLOEXEC);
  if (fd_ < 0) throw Unsupported{"cannot create a temporary file (" + templ + "): " + std::strerror(errno)};
  // §CONF.3 unlinked at once where /proc/self/fd/N opens the same file (sparse_file.h).
  path_ = "/proc/self/fd/" + std::to_string(fd_);
  const int probe = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (probe >= 0) {
    ::close(probe);
    ::unlink(templ.c_str());
  } else {
    path_ = templ;
    named_ = true;
  }
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    const std::string why = std::strerror(errno);
    Remove();
    throw Unsupported{"cannot make a sparse file of " + std::to_string(size) + " bytes (" + templ + "): " + why};
  }
}

void SparseFile::Write(int64_t offset, const std::vector<uint8_t>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (n <= 0) throw Unsupported{"cannot write " + path_ + ": " + std::strerror(errno)};
    done += static_cast<size_t>(n);
  }
}

void SparseFile::Remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (named_) ::unlink(path_.c_str());
  named_ = false;
}

}  // namespace engram::host
