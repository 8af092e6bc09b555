#include "base/fileio.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace engram {

StagedFile::StagedFile(const std::filesystem::path& path, std::string_view content) : path_(path) {
  const std::filesystem::path dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  std::string name = ".";  // appended, not "." + string&& (GCC 12 -Wrestrict false positive, bug 105329)
  name += path.filename().string();
  name += ".tmp-XXXXXX";
  std::string tmpl = (dir / name).string();
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

std::string FileTypeName(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

std::string ReadFileWithin(const std::filesystem::path& path, uint64_t max_bytes, std::string_view kind_name,
                           std::string_view limit_text, bool regular_only) {
  // §VEC.9 A FIFO opened for reading blocks in open() until a writer comes;
  // O_NONBLOCK makes the open return at once, and fstat then says what it is.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (regular_only ? O_NONBLOCK : 0));
  if (fd < 0) throw Error(path.string() + ": cannot open for reading: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error(path.string() + ": is a directory, not a " + std::string(kind_name));
  }
  if (regular_only) {
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Error(path.string() + ": not a regular file (" + FileTypeName(st.st_mode) + "), not a " + std::string(kind_name));
    }
    // A regular file: back to blocking reads.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
      const int err = errno;
      ::close(fd);
      throw Error(path.string() + ": cannot clear O_NONBLOCK: " + std::strerror(err));
    }
  }
  // A regular file says its size; a pipe or a device (/dev/zero) does not, so
  // every file is read in pieces and refused at the first byte past the limit.
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw Error(path.string() + ": " + std::to_string(st.st_size) + " bytes is larger than " + std::string(limit_text));
  }
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw Error(path.string() + ": read failed: " + std::strerror(err));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      throw Error(path.string() + ": more than " + std::string(limit_text));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace engram
