#include "conformance/cli/fileio.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "reference/bad_inputs.h"
#include "reference/error.h"

namespace engram {

StagedFile::StagedFile(const std::filesystem::path& path, std::string_view content) : path_(path) {
  const std::filesystem::path dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) throw Error(path.string() + ": cannot create a temporary file in " + dir.string() + ": " + std::strerror(errno));
  temp_ = tmpl;
  auto fail = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    std::remove(temp_.c_str());
    temp_.clear();
    throw Error(path.string() + ": " + what + ": " + std::strerror(err));
  };
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    done += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; give the file the usual permissions.
  if (::fchmod(fd, 0644) != 0) fail("cannot set permissions");
  if (::fsync(fd) != 0) fail("cannot flush");
  if (::close(fd) != 0) {
    const int err = errno;
    std::remove(temp_.c_str());
    temp_.clear();
    throw Error(path.string() + ": cannot flush: " + std::strerror(err));
  }
}

void StagedFile::Commit() {
  if (temp_.empty()) throw Error(path_.string() + ": nothing staged to commit");
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(temp_.c_str());
    temp_.clear();
    throw Error(path_.string() + ": cannot rename the temporary file into place: " + std::strerror(err));
  }
  temp_.clear();
}

StagedFile::~StagedFile() {
  if (!temp_.empty()) std::remove(temp_.c_str());
}

void WriteFileAtomic(const std::filesystem::path& path, std::string_view content) { StagedFile(path, content).Commit(); }

std::string ReadFile(const std::filesystem::path& path) { return ReadInputFile(path, InputKind::kVectorFile); }

}  // namespace engram
