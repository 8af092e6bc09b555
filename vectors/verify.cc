// spec/vectors.md §VEC.6 — verifying a vectors directory against the reference.
//
// Verification does not regenerate and diff: it reads each test's inputs,
// recomputes the outputs with the reference, and compares them with the
// expected values in the file. A file edited by hand (or by a buggy
// generator) is therefore caught even when it is internally consistent.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/fileio.h"
#include "base/sha256.h"
#include "reference/input_files.h"
#include "reference/config.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/random.h"
#include "reference/token_map.h"
#include "vectors/generator.h"
#include "vectors/manifest.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

// §VEC.2 The structure shared by every suite file.
void CheckStructure(Checker& c, const SuiteDef& def, const json& doc) {
  auto problem = [&](const std::string& what) { c.problems.push_back(c.file + ": " + what); };
  for (const char* key : {"schema", "algorithm", "specVersion", "generator", "numberOfTests", "notes", "testGroups"}) {
    if (!doc.contains(key)) problem(std::string("missing top-level key '") + key + "'");
  }
  const std::string& schema = def.schema;
  if (doc.value("schema", "") != schema) problem("schema is " + doc.value("schema", json()).dump() + ", expected \"" + schema + "\"");
  if (doc.value("specVersion", "") != kSpecVersion) {
    problem("specVersion " + doc.value("specVersion", json()).dump() + " is not the supported " + kSpecVersion);
  }
  int expected_id = 1;
  const json notes = doc.value("notes", json::object());
  for (const json& group : doc.value("testGroups", json::array())) {
    for (const json& t : group.value("tests", json::array())) {
      if (t.value("tcId", -1) != expected_id) {
        c.Problem(t, "tcIds must be consecutive from 1; expected " + std::to_string(expected_id) + ", got " +
                         t.value("tcId", json()).dump());
      }
      ++expected_id;
      for (const json& f : t.value("flags", json::array())) {
        if (!f.is_string() || !notes.contains(f.get<std::string>())) c.Problem(t, "flag " + f.dump() + " has no note");
      }
      const std::string result = t.value("result", "");
      if (result != "valid" && result != "invalid") c.Problem(t, "result must be \"valid\" or \"invalid\"");
    }
  }
  if (doc.value("numberOfTests", -1) != expected_id - 1) {
    problem("numberOfTests is " + doc.value("numberOfTests", json()).dump() + " but the file holds " +
            std::to_string(expected_id - 1) + " tests");
  }
}

}  // namespace

namespace {

// §VEC.4 Numbers in vectors are integers (floats travel as hex strings); only
// configuration documents, which §CFG reads with its own type checks, may hold
// JSON floats. Returns the path of the first float outside a "config", or "".
std::string FirstFloat(const json& v, const std::string& path) {
  if (v.is_number_float()) return path;
  if (v.is_object()) {
    for (const auto& [k, child] : v.items()) {
      if (k == "config" || k == "tests") continue;
      std::string p = FirstFloat(child, path + "." + k);
      if (!p.empty()) return p;
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      std::string p = FirstFloat(v[i], path + "[" + std::to_string(i) + "]");
      if (!p.empty()) return p;
    }
  }
  return "";
}

}  // namespace

size_t VerifySuite(const std::string& file_name, const json& doc, std::vector<std::string>& problems) {
  Checker c{file_name, problems};
  const std::string suite = std::filesystem::path(file_name).stem().string();
  const SuiteDef* def = nullptr;
  for (const SuiteDef& s : AllSuites()) {
    if (s.name == suite) def = &s;
  }
  if (def == nullptr) {
    problems.push_back(file_name + ": no suite named '" + suite + "' is known to this tool");
    return 0;
  }
  CheckStructure(c, *def, doc);
  size_t checked = 0;
  for (const json& group : doc.value("testGroups", json::array())) {
    const std::string type = group.value("type", "");
    auto verifier = def->verifiers.find(type);
    const std::string group_float = FirstFloat(group, "group");
    for (const json& t : group.value("tests", json::array())) {
      ++checked;
      if (verifier == def->verifiers.end()) {
        c.Problem(t, "unknown test group type '" + type + "'");
        continue;
      }
      const std::string where = group_float.empty() ? FirstFloat(t, "test") : group_float;
      if (!where.empty()) {
        c.Problem(t, where + " is a floating-point number; vector numbers are integers (§VEC.4)");
        continue;
      }
      try {
        verifier->second(c, group, t);
      } catch (const std::exception& e) {
        c.Problem(t, std::string("cannot be checked: ") + e.what());
      }
    }
  }
  return checked;
}

bool VerifyAll(const std::filesystem::path& dir, std::ostream& log, std::ostream& problems_out,
               const std::vector<std::string>& only) {
  // --suite names a suite this tool knows, or nothing is checked: a typo must
  // not pass as "verified" (checked before any file is read).
  const std::vector<std::string> known = SuiteNames();
  for (const std::string& name : only) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string have;
      for (const std::string& k : known) have += (have.empty() ? "" : ", ") + k;
      throw Error("--suite " + name + ": no such suite (the suites are: " + have + ")");
    }
  }
  const std::set<std::string> selected(only.begin(), only.end());
  std::vector<std::string> problems;
  // §VEC.9 The manifest first: every listed file exists with that digest, as
  // a regular file inside the directory (the same reader as `engram conform`,
  // vectors/manifest.h), and every suite file present is listed.
  const Manifest manifest = ReadManifest(dir);
  for (const std::string& p : manifest.problems) problems.push_back(p);
  std::set<std::string> listed;
  std::map<std::string, const ManifestEntry*> entry_of;  // rel -> its line
  for (const ManifestEntry& e : manifest.entries) {
    listed.insert(e.rel);
    entry_of[e.rel] = &e;
    std::string bytes;
    try {
      bytes = ReadListedFile(dir, e);
    } catch (const Error& err) {
      problems.push_back(err.what());
      continue;
    }
    const std::string actual = Sha256Hex(bytes);
    if (actual != e.digest) problems.push_back(e.where + ": " + e.rel + " has SHA-256 " + actual + ", manifest says " + e.digest);
  }
  std::vector<std::filesystem::path> suites;
  if (std::filesystem::is_directory(dir / kVectorsDir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir / kVectorsDir)) {
      if (e.path().extension() == ".json") suites.push_back(e.path());
    }
  }
  std::sort(suites.begin(), suites.end());
  if (std::filesystem::is_directory(dir / "schema")) {
    for (const auto& e : std::filesystem::directory_iterator(dir / "schema")) {
      const std::string rel = "schema/" + e.path().filename().string();
      if (e.path().extension() == ".json" && listed.count(rel) == 0) problems.push_back(rel + ": not listed in MANIFEST.sha256");
    }
  }
  if (suites.empty()) problems.push_back((dir / kVectorsDir).string() + ": no suite files");
  log << "manifest: " << listed.size() << " entries\n";
  // §VEC.11 An earlier released set stays verifiable: its manifest is listed
  // in vectors/RELEASED under its own specVersion and every file has its
  // digest, so these are exactly the released bytes. Its expectations are
  // those of its own spec version: recomputing them with this reference would
  // report every change since as a problem (vectors/CHANGELOG.md lists them).
  for (const auto& path : suites) {
    const std::string rel = std::string(kVectorsDir) + "/" + path.filename().string();
    if (listed.count(rel) == 0) problems.push_back(rel + ": not listed in MANIFEST.sha256");
  }
  if (const std::optional<std::string> released = ReleasedSet(manifest.sha256);
      released && *released != kSpecVersion && problems.empty()) {
    log << "vectors verified: OK (released set " << *released << ": every file has the released digest, "
        << "vectors/RELEASED; its expectations are spec " << *released << "'s and are not recomputed by this tool, "
        << "which implements spec " << kSpecVersion << "; vectors/CHANGELOG.md lists what moved)\n";
    return true;
  }
  size_t recomputed = 0;
  for (const auto& path : suites) {
    const std::string rel = std::string(kVectorsDir) + "/" + path.filename().string();
    // §VEC.6 --suite: the manifest above is checked whole (every file's
    // digest, every file listed); only the recomputation is limited, and the
    // summary says so, so that a partial check never reads as a full one.
    if (!selected.empty() && selected.count(path.stem().string()) == 0) {
      log << rel << ": digest checked, not recomputed (--suite)\n";
      continue;
    }
    ++recomputed;
    json doc;
    try {
      // An unlisted file was reported above; it is read like a listed one
      // (inside the directory, a regular file, never blocking: §VEC.9).
      const ManifestEntry unlisted{"", rel, (dir / rel).string()};
      const auto it = entry_of.find(rel);
      doc = ParseJson(ReadListedFile(dir, it != entry_of.end() ? *it->second : unlisted), rel);  // §ERR.5, §ERR.6
    } catch (const Error& e) {
      problems.push_back(e.what());
      continue;
    }
    const size_t before = problems.size();
    size_t checked = VerifySuite(rel, doc, problems);
    log << rel << ": " << checked << " tests checked, " << (problems.size() - before) << " problem(s)\n";
  }
  for (const std::string& name : only) {
    bool present = false;
    for (const auto& path : suites) present = present || path.stem().string() == name;
    if (!present) problems.push_back(std::string(kVectorsDir) + "/" + name + ".json: asked for with --suite, but the directory has no such file");
  }
  for (const std::string& p : problems) problems_out << "FAIL " << p << "\n";
  const std::string scope = selected.empty() ? "" : " (" + std::to_string(recomputed) + " of " + std::to_string(suites.size()) +
                                                        " suite files recomputed, --suite; the manifest checked whole)";
  log << (problems.empty() ? "vectors verified: OK" + scope + "\n"
                           : "vectors verified: " + std::to_string(problems.size()) + " problem(s)" + scope + "\n");
  return problems.empty();
}

}  // namespace engram::vectors
