#include "base/fileio.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "base/error.h"

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
  EXPECT_EQ(engram::ReadFileWithin(dir / "a.txt", 100, "test file", "100 bytes"), "second");
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

TEST(FileIo, ReadRefusesTheFirstBytePastTheLimit) {
  fs::path dir = fs::temp_directory_path() / ("engram_fileio_limit_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  engram::WriteFileAtomic(dir / "100.txt", std::string(100, 'x'));
  engram::WriteFileAtomic(dir / "101.txt", std::string(101, 'x'));
  EXPECT_EQ(engram::ReadFileWithin(dir / "100.txt", 100, "test file", "the test limit").size(), 100u);
  try {
    engram::ReadFileWithin(dir / "101.txt", 100, "test file", "the test limit");
    FAIL() << "expected an error";
  } catch (const engram::Error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("101.txt: 101 bytes is larger than the test limit"));
  }
  try {
    engram::ReadFileWithin(dir, 100, "test file", "the test limit");
    FAIL() << "expected an error";
  } catch (const engram::Error& e) {
    EXPECT_THAT(e.what(), testing::HasSubstr("is a directory, not a test file"));
  }
  fs::remove_all(dir);
}

TEST(FileIo, ReadMissingFileNamesThePath) {
  EXPECT_THROW(engram::ReadFileWithin("/nonexistent-file", 100, "test file", "100 bytes"), engram::Error);
}

}  // namespace
