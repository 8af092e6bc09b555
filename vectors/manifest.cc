// spec/vectors.md §VEC.9 — MANIFEST.sha256 and the files it lists; §VEC.13
// released sets.
#include "vectors/manifest.h"
#include "base/hex.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "base/error.h"
#include "base/fileio.h"
#include "base/sha256.h"
#include "base/version.h"
#include "reference/input_files.h"

namespace engram::vectors {

namespace fs = std::filesystem;

namespace {

// §VEC.9 A listed path is relative and stays below the directory: no leading
// '/', no '..' component (a component, not a substring: "a..b" is a name).
bool LeavesTheDirectory(const std::string& rel) {
  if (rel.empty() || rel.front() == '/') return true;
  std::istringstream parts(rel);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part == "..") return true;
  }
  return false;
}

bool IsLowerHex(const std::string& s) { return BytesOfHex(s).has_value(); }

// `inner` is `outer` or below it (both canonical).
bool IsWithin(const fs::path& outer, const fs::path& inner) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

}  // namespace

Manifest ReadManifest(const fs::path& dir) {
  const fs::path path = dir / "MANIFEST.sha256";
  // The manifest itself is a listed file's peer: a regular file, never a FIFO to block on.
  const std::string bytes = ReadInputFile(path, InputKind::kManifest, /*regular_only=*/true);
  Manifest m;
  m.sha256 = Sha256Hex(bytes);
  std::istringstream lines(bytes);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    const std::string where = path.string() + ":" + std::to_string(line_no);
    if (line.size() < 67 || line.compare(64, 2, "  ") != 0 || !IsLowerHex(line.substr(0, 64))) {
      m.problems.push_back(where + ": malformed line (expected '<64 lower-case hex digits>  <path>')");
      continue;
    }
    ManifestEntry e{line.substr(0, 64), line.substr(66), where};
    if (LeavesTheDirectory(e.rel)) {
      m.problems.push_back(where + ": path '" + e.rel +
                           "' leaves the vectors directory (§VEC.9: listed paths are relative, without '..')");
      continue;
    }
    m.entries.push_back(std::move(e));
  }
  return m;
}

std::string ReadListedFile(const fs::path& dir, const ManifestEntry& entry) {
  const fs::path path = dir / entry.rel;
  const std::string named = entry.where + ": '" + entry.rel + "'";
  // §VEC.9 Symbolic links may point anywhere: what counts is where the path
  // resolves, which must be inside the directory.
  std::error_code ec;
  const fs::path root = fs::canonical(dir, ec);
  if (ec) throw Error(dir.string() + ": " + ec.message());
  const fs::path real = fs::canonical(path, ec);
  if (ec) throw Error(entry.where + ": listed file " + entry.rel + " is missing (" + ec.message() + ")");
  if (!IsWithin(root, real)) {
    throw Error(named + " resolves outside the vectors directory (to " + real.string() +
                "; §VEC.9: every listed file lies in the directory)");
  }
  // §VEC.9 A regular file only, checked before opening: opening a FIFO would
  // wait for a writer, a device may do anything. ReadInputFile checks again on
  // the descriptor it reads (the file may change in between).
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) throw Error(named + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(named + " is not a regular file (" + FileTypeName(st.st_mode) + "; §VEC.9)");
  try {
    return ReadInputFile(real, InputKind::kVectorFile, /*regular_only=*/true);
  } catch (const Error& e) {
    throw Error(entry.where + ": " + e.what());
  }
}

// vectors/RELEASED, compiled in by CMake (released_sets.inc: {"<sha256>", "<specVersion>"},).
const std::vector<std::pair<std::string, std::string>>& ReleasedSets() {
  static const std::vector<std::pair<std::string, std::string>> sets = {
#include "vectors/released_sets.inc"
  };
  return sets;
}

std::optional<std::string> ReleasedSet(const std::string& manifest_sha256) {
  for (const auto& [digest, version] : ReleasedSets()) {
    if (digest == manifest_sha256) return version;
  }
  return std::nullopt;
}

// vectors/MANIFEST.sha256's digest at configure time (build_set.inc), re-read by
// CMake whenever the manifest changes.
const std::string& BuildSetSha256() {
  static const std::string digest =
#include "vectors/build_set.inc"
      ;
  return digest;
}

SetKind ClassifySet(const std::string& manifest_sha256) {
  SetKind kind;
  kind.manifest_sha256 = manifest_sha256;
  kind.released = ReleasedSet(manifest_sha256);
  // §VEC.13 Between releases the set in the source tree is "unreleased": the
  // tool knows its bytes (it was built from them), but no port may pin it.
  kind.unreleased = !kind.released && manifest_sha256 == BuildSetSha256();
  return kind;
}

std::string SetKind::Describe() const {
  if (released) {
    if (*released == kSpecVersion) return "released set " + *released;
    return "released set " + *released + ", an earlier one (this tool implements spec " + kSpecVersion + ")";
  }
  if (unreleased) {
    return std::string("unreleased set ") + kSpecVersion + " (the set this tool was built with; not a release)";
  }
  return "modified, not a released set";
}

}  // namespace engram::vectors
