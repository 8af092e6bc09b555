// spec/vectors.md §VEC.9 — reading a vectors directory's MANIFEST.sha256 and
// the files it lists; §VEC.13 — which manifests are released sets. Shared by
// `engram conform` (conformance/runner/runner.cc) and `engram vectors verify`
// (vectors/verify.cc), so that both refuse the same paths and files.
#ifndef ENGRAM_VECTORS_MANIFEST_H_
#define ENGRAM_VECTORS_MANIFEST_H_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace engram::vectors {

/// §VEC.9 One well-formed line: `<64 hex digits>  <path>`.
struct ManifestEntry {
  std::string digest;  ///< as written (compared with Sha256Hex of the file)
  std::string rel;     ///< the path relative to the directory
  std::string where;   ///< "<dir>/MANIFEST.sha256:<line>", for messages
};

struct Manifest {
  std::string sha256;                  ///< of the manifest's bytes (§VEC.13)
  std::vector<ManifestEntry> entries;  ///< the lines whose form and path are acceptable
  std::vector<std::string> problems;   ///< malformed lines and paths that leave the directory
};

/// §VEC.9 Reads `dir`/MANIFEST.sha256 (a regular file within the §ERR.4
/// manifest limit; throws engram::Error when it cannot be read) and parses its
/// lines. A line that is malformed, or whose path is empty, absolute or has a
/// `..` component ("leaves the vectors directory"), is a problem, not an entry.
Manifest ReadManifest(const std::filesystem::path& dir);

/// §VEC.9 Reads the file `entry` lists, within the §ERR.4 vector-file limit.
/// Throws engram::Error, prefixed with entry.where and naming the path, when it
/// is missing, resolves outside `dir` (a symbolic link), or is not a regular
/// file (a FIFO is refused before it is opened, and opened non-blocking, so
/// that nothing a manifest names can block the reader).
std::string ReadListedFile(const std::filesystem::path& dir, const ManifestEntry& entry);

/// §VEC.13 The spec version of the released vector set whose MANIFEST.sha256
/// has this SHA-256 (vectors/RELEASED, compiled in), or nothing for a modified
/// or foreign directory.
std::optional<std::string> ReleasedSet(const std::string& manifest_sha256);

/// §VEC.13 Every released set: (manifest sha256, spec version), in the order
/// of vectors/RELEASED.
const std::vector<std::pair<std::string, std::string>>& ReleasedSets();

/// §VEC.13 The SHA-256 of the MANIFEST.sha256 in the source tree this tool was
/// built from (vectors/, compiled in): the set whose expectations it computes.
const std::string& BuildSetSha256();

/// §VEC.13 What a vectors directory is, decided from its manifest's SHA-256
/// alone (never from a label a report or a file carries).
struct SetKind {
  std::string manifest_sha256;
  /// The specVersion of the released set it is, or nothing.
  std::optional<std::string> released;
  /// Not released, and the very set this tool was built with (spec kSpecVersion).
  bool unreleased = false;
  /// Bytes this tool knows: a released set, or its own unreleased one.
  bool Known() const { return released.has_value() || unreleased; }
  /// The words of the verdict line: "released set 0.3.1", "released set 0.3.0,
  /// an earlier one (...)", "unreleased set 0.4.0 (...)", "modified, not a released set".
  std::string Describe() const;
};
SetKind ClassifySet(const std::string& manifest_sha256);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_MANIFEST_H_
