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
#include "testutil/vectors.h"
#include "vectors/generator.h"
#include "vectors/manifest.h"

namespace manifest_test {
namespace {

using namespace engram::vectors::test;

// §VEC.11, §VEC.13 The committed vectors are either the released set of this
// spec version or, between releases, this version's unreleased set, which no
// release lists yet. A released set never changes: vectors regenerated while
// kSpecVersion is a released version fail here until the version is bumped.
TEST(Released, CommittedSetIsThisVersionsReleaseOrUnreleased) {
  const std::string digest = engram::Sha256Hex(Slurp(kVectors + "/MANIFEST.sha256"));
  EXPECT_EQ(digest, engram::vectors::BuildSetSha256()) << "the build was configured with another vectors/MANIFEST.sha256: re-run cmake";
  const std::string spec = engram::vectors::kSpecVersion;
  if (const std::optional<std::string> version = engram::vectors::ReleasedSet(digest)) {
    EXPECT_EQ(*version, spec) << "the committed vectors are the released set " << *version << ", not spec " << spec;
    return;
  }
  for (const auto& [released_digest, version] : engram::vectors::ReleasedSets()) {
    EXPECT_NE(version, spec) << "spec " << spec << " was released (vectors/RELEASED: " << released_digest
                             << ") and its set may not change: bump kSpecVersion (base/version.h); the new set is "
                             << "unreleased until its release (§VEC.11)";
  }
  const engram::vectors::SetKind kind = engram::vectors::ClassifySet(digest);
  EXPECT_TRUE(kind.unreleased);
  EXPECT_EQ(kind.Describe(), "unreleased set " + spec + " (the set this tool was built with; not a release)");
}

// §VEC.13 The kind is the digest's: a released digest names its version, this
// build's names it unreleased (unless released), and any other is "modified".
TEST(Released, KindsFromTheDigestAlone) {
  const auto& sets = engram::vectors::ReleasedSets();
  ASSERT_FALSE(sets.empty());
  const auto& [first_digest, first_version] = sets.front();
  EXPECT_EQ(engram::vectors::ClassifySet(first_digest).Describe(),
            "released set " + first_version + ", an earlier one (this tool implements spec " +
                engram::vectors::kSpecVersion + ")");
  EXPECT_TRUE(engram::vectors::ClassifySet(first_digest).Known());
  const engram::vectors::SetKind other = engram::vectors::ClassifySet(std::string(64, '0'));
  EXPECT_FALSE(other.Known());
  EXPECT_EQ(other.Describe(), "modified, not a released set");
}

// §VEC.11 One line per released version (0.3.0's two lines predate the rule),
// in increasing version order: a release is appended once and never replaced.
TEST(Released, OneLinePerVersionInOrder) {
  std::vector<std::string> versions;
  for (const auto& [digest, version] : engram::vectors::ReleasedSets()) {
    if (!versions.empty() && versions.back() == version && version == "0.3.0") continue;
    versions.push_back(version);
  }
  auto numbers = [](const std::string& v) {
    std::vector<int> out;
    std::istringstream in(v);
    for (std::string part; std::getline(in, part, '.');) out.push_back(std::stoi(part));
    return out;
  };
  for (size_t i = 1; i < versions.size(); ++i) {
    EXPECT_LT(numbers(versions[i - 1]), numbers(versions[i])) << versions[i - 1] << " then " << versions[i];
  }
  if (!versions.empty()) EXPECT_LE(numbers(versions.back()), numbers(engram::vectors::kSpecVersion));
}

// §VEC.13 What the tool carries is vectors/RELEASED as committed (the list is
// compiled in; a build that missed an edit of the file would disagree).
TEST(Released, TheCompiledListIsVectorsReleased) {
  std::istringstream lines(Slurp(fs::path(ENGRAM_SOURCE_DIR) / "vectors/RELEASED"));
  std::vector<std::pair<std::string, std::string>> listed;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    ASSERT_GT(line.size(), 66u) << line;
    listed.emplace_back(line.substr(0, 64), line.substr(66));
  }
  EXPECT_EQ(listed, engram::vectors::ReleasedSets());
}

}  // namespace
}  // namespace manifest_test
