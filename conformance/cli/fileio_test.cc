#include "conformance/cli/fileio.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "reference/error.h"

namespace {

namespace fs = std::filesystem;

TEST(FileIo, AtomicWriteReplacesAndLeavesNoTemporaries) {
  fs::path dir = fs::temp_directory_path() / ("engram_fileio_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  struct RemoveAtExit {
    fs::path p;
    ~RemoveAtExit() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } remove_at_exit{dir};
  engram::WriteFileAtomic(dir / "a.txt", "first");
  engram::WriteFileAtomic(dir / "a.txt", "second");
  EXPECT_EQ(engram::ReadFile(dir / "a.txt"), "second");
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST(FileIo, WriteIntoMissingDirectoryNamesThePath) {
  try {
    engram::WriteFileAtomic("/nonexistent-dir/x.json", "data");
    FAIL() << "expected an error";
  } catch (const engram::Error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("/nonexistent-dir/x.json"));
  }
}

TEST(FileIo, ReadMissingFileNamesThePath) {
  EXPECT_THROW(engram::ReadFile("/nonexistent-file"), engram::Error);
}

}  // namespace
