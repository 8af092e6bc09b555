// §VEC.13 The released vector sets (vectors/RELEASED, compiled into
// vectors/manifest.cc) and the committed manifest.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/program_paths.h"
#include "base/sha256.h"
#include "vectors/generator.h"
#include "vectors/manifest.h"
#include "vectors/vectors_test_util.h"

namespace manifest_test {
namespace {

using namespace engram::vectors::test;

// §VEC.13 The committed vectors are a released set: when they are regenerated
// and vectors/RELEASED does not list the new manifest, this fails (and
// `engram conform` would call the project's own vectors "modified").
TEST(Released, CommittedManifestIsAReleasedSet) {
  const std::string digest = engram::Sha256Hex(Slurp(kVectors + "/MANIFEST.sha256"));
  const std::optional<std::string> version = engram::vectors::ReleasedSet(digest);
  ASSERT_TRUE(version.has_value()) << "vectors/MANIFEST.sha256 has SHA-256 " << digest
                                   << ", which vectors/RELEASED does not list: add the line '" << digest << "  "
                                   << engram::vectors::kSpecVersion << "' (and re-run cmake)";
  EXPECT_EQ(*version, engram::vectors::kSpecVersion);
}

// §VEC.13 What the tool carries is vectors/RELEASED as committed (the list is
// compiled in; a build that missed an edit of the file would disagree).
TEST(Released, TheCompiledListIsVectorsReleased) {
  std::istringstream lines(Slurp(fs::path(ENGRAM_SOURCE_DIR) / "vectors/RELEASED"));
  std::vector<std::pair<std::string, std::string>> listed;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    ASSERT_EQ(line.size(), 64u + 2u + std::string(engram::vectors::kSpecVersion).size()) << line;
    listed.emplace_back(line.substr(0, 64), line.substr(66));
  }
  EXPECT_EQ(listed, engram::vectors::ReleasedSets());
}

}  // namespace
}  // namespace manifest_test
