// spec/vectors.md — the golden-vector generator (§VEC.1-§VEC.5).
//
// Each suite is a function that lays out test groups and tests; every
// expected value is computed here by the reference library, never typed in.
// Test inputs are chosen to hit each rule of the spec at least once, and the
// flags say which rule (or which known porting bug) a test is about.
#include "vectors/generator.h"

#include <algorithm>

#include "base/error.h"
#include "base/fileio.h"
#include "base/sha256.h"
#include "reference/input_files.h"
#include "reference/token_map.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

// What a run of GenerateAll has created: the directories it made and the
// files it wrote that did not exist before. Unless Keep() is called, the
// destructor removes them again (files first, then the directories, deepest
// first, and a directory only when it is empty), so that a failed run (a full
// disk, an unreadable schema) leaves nothing behind (§ERR.1 rule 4). Anything
// that existed before the run is left where it is (a pre-existing file that was
// already replaced keeps its new, complete content).
class CreatedPaths {
 public:
  CreatedPaths() = default;
  CreatedPaths(const CreatedPaths&) = delete;
  CreatedPaths& operator=(const CreatedPaths&) = delete;
  ~CreatedPaths() {
    if (keep_) return;
    std::error_code ec;
    for (auto it = files_.rbegin(); it != files_.rend(); ++it) std::filesystem::remove(*it, ec);
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) std::filesystem::remove(*it, ec);  // only if empty
  }
  // create_directories(dir), remembering every level it makes.
  void Directories(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> missing;
    for (std::filesystem::path p = dir; !p.empty() && !std::filesystem::exists(p); p = p.parent_path()) {
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      std::error_code ec;
      if (std::filesystem::create_directory(*it, ec)) dirs_.push_back(*it);
      if (ec) throw Error(it->string() + ": cannot create the directory: " + ec.message());
    }
  }
  // WriteFileAtomic(path, content), remembering the file when it is new.
  void Write(const std::filesystem::path& path, std::string_view content) {
    const bool existed = std::filesystem::exists(path);
    WriteFileAtomic(path, content);
    if (!existed) files_.push_back(path);
  }
  void Keep() { keep_ = true; }

 private:
  std::vector<std::filesystem::path> dirs_, files_;
  bool keep_ = false;
};

void WriteSchemaCopies(const std::filesystem::path& schema_dir, const std::filesystem::path& out_schema,
                       std::vector<std::string>& manifest_paths, std::ostream& log, CreatedPaths& created) {
  std::error_code ec;
  const bool same = std::filesystem::exists(out_schema) && std::filesystem::equivalent(schema_dir, out_schema, ec);
  if (!std::filesystem::is_directory(schema_dir)) throw Error(schema_dir.string() + ": schema directory not found");
  created.Directories(out_schema);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(schema_dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (!same) created.Write(out_schema / f.filename(), ReadInputFile(f, InputKind::kVectorFile));
    manifest_paths.push_back("schema/" + f.filename().string());
  }
  log << "schemas: " << files.size() << " file(s)" << (same ? " (in place)" : " copied") << "\n";
}

}  // namespace

const std::vector<SuiteDef>& AllSuites() {
  static const std::vector<SuiteDef> suites = {MultipliersSuite(), LayoutSuite(), HashV41Suite(), HashDemoSuite(), HashStateSuite(), AccumulatedSuite(),
                                                Fp8DecodeSuite(), TableLookupSuite(), TpShardSuite(), TokenMapSuite(),
                                                GateV41Suite(), GateDemoSuite(), ShortConvDemoSuite(), EngramForwardSuite(),
                                                ServingSuite()};
  return suites;
}

std::vector<std::string> SuiteNames() {
  std::vector<std::string> names;
  for (const SuiteDef& s : AllSuites()) names.push_back(s.name);
  return names;
}

ojson GenerateSuite(const std::string& name) {
  for (const SuiteDef& s : AllSuites()) {
    if (s.name == name) return s.generate();
  }
  throw Error("unknown vector suite '" + name + "'");
}

// §VEC.8 The bytes of a suite file: ordered_json::dump(1) and one trailing
// newline, so that regenerating reproduces the committed files exactly.
std::string Serialize(const ojson& doc) { return doc.dump(1) + "\n"; }

void WriteVectorsDir(const std::filesystem::path& out, const std::vector<std::string>& names,
                     const std::function<ojson(const std::string&)>& make, const std::filesystem::path& schema_dir,
                     std::ostream& log) {
  CreatedPaths created;  // removed again if anything below throws
  created.Directories(out / kVectorsDir);
  std::vector<std::string> manifest_paths;
  for (const std::string& name : names) {
    // One document at a time, written as soon as it is made: memory holds one
    // suite, and a full disk is found at the first file that does not fit.
    const ojson doc = make(name);
    const std::string rel = std::string(kVectorsDir) + "/" + name + ".json";
    created.Write(out / rel, Serialize(doc));
    manifest_paths.push_back(rel);
    log << rel << ": " << doc["numberOfTests"].get<int>() << " tests\n";
  }
  WriteSchemaCopies(schema_dir, out / "schema", manifest_paths, log, created);
  std::sort(manifest_paths.begin(), manifest_paths.end());
  std::string manifest;
  for (const std::string& rel : manifest_paths) manifest += Sha256Hex(ReadInputFile(out / rel, InputKind::kVectorFile)) + "  " + rel + "\n";
  created.Write(out / "MANIFEST.sha256", manifest);
  created.Keep();
  log << "MANIFEST.sha256: " << manifest_paths.size() << " entries\n";
}

void GenerateAll(const std::filesystem::path& out, const std::filesystem::path& schema_dir, std::ostream& log) {
  WriteVectorsDir(out, SuiteNames(), GenerateSuite, schema_dir, log);
}

void GenerateSuites(const std::filesystem::path& out, const std::vector<std::string>& suites,
                    const std::filesystem::path& schema_dir, std::ostream& log) {
  const std::vector<std::string> all = SuiteNames();
  for (const std::string& name : suites) {
    if (std::find(all.begin(), all.end(), name) == all.end()) {
      std::string known;
      for (const std::string& n : all) known += (known.empty() ? "" : ", ") + n;
      throw Error("vectors generate: unknown suite '" + name + "' (the suites: " + known + ")");
    }
  }
  std::vector<std::string> names;
  for (const std::string& name : all) {
    if (std::find(suites.begin(), suites.end(), name) != suites.end()) names.push_back(name);
  }
  WriteVectorsDir(out, names, GenerateSuite, schema_dir, log);
}

}  // namespace engram::vectors
