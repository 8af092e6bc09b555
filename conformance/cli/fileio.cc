#include "conformance/cli/fileio.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "reference/error.h"

namespace engram {

void WriteFileAtomic(const std::filesystem::path& path, std::string_view content) {
  std::filesystem::path dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) throw Error(path.string() + ": cannot create a temporary file in " + dir.string() + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      std::remove(tmpl.c_str());
      throw Error(path.string() + ": write failed: " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    std::remove(tmpl.c_str());
    throw Error(path.string() + ": cannot flush: " + std::strerror(err));
  }
  // mkstemp creates 0600; give the file the usual permissions.
  std::filesystem::permissions(tmpl, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                                         std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  if (std::rename(tmpl.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmpl.c_str());
    throw Error(path.string() + ": cannot rename the temporary file into place: " + std::strerror(err));
  }
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open for reading");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace engram
