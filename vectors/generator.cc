// spec/vectors.md — the golden-vector generator (§VEC.1-§VEC.5).
//
// Each suite is a function that lays out test groups and tests; every
// expected value is computed here by the reference library, never typed in.
// Test inputs are chosen to hit each rule of the spec at least once, and the
// flags say which rule (or which known porting bug) a test is about.
#include "vectors/generator.h"

#include <algorithm>

#include "conformance/cli/fileio.h"
#include "reference/error.h"
#include "reference/token_map.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

void WriteSchemaCopies(const std::filesystem::path& schema_dir, const std::filesystem::path& out_schema,
                       std::vector<std::string>& manifest_paths, std::ostream& log) {
  std::error_code ec;
  const bool same = std::filesystem::exists(out_schema) && std::filesystem::equivalent(schema_dir, out_schema, ec);
  if (!std::filesystem::is_directory(schema_dir)) throw Error(schema_dir.string() + ": schema directory not found");
  std::filesystem::create_directories(out_schema);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(schema_dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (!same) WriteFileAtomic(out_schema / f.filename(), ReadFile(f));
    manifest_paths.push_back("schema/" + f.filename().string());
  }
  log << "schemas: " << files.size() << " file(s)" << (same ? " (in place)" : " copied") << "\n";
}

}  // namespace

const std::vector<SuiteDef>& AllSuites() {
  static const std::vector<SuiteDef> suites = {MultipliersSuite(), LayoutSuite(), HashV41Suite(), HashDemoSuite(), HashStateSuite(), AccumulatedSuite(),
                                                Fp8DecodeSuite(), TableLookupSuite(), TpShardSuite(), TokenMapSuite(),
                                                GateV41Suite(), GateDemoSuite(), ShortConvDemoSuite(), EngramForwardSuite()};
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

std::string Serialize(const ojson& doc) { return doc.dump(1) + "\n"; }

void GenerateAll(const std::filesystem::path& out, const std::filesystem::path& schema_dir, std::ostream& log) {
  std::filesystem::create_directories(out / kVectorsDir);
  std::vector<std::string> manifest_paths;
  for (const std::string& name : SuiteNames()) {
    ojson doc = GenerateSuite(name);
    const std::string rel = std::string(kVectorsDir) + "/" + name + ".json";
    WriteFileAtomic(out / rel, Serialize(doc));
    manifest_paths.push_back(rel);
    log << rel << ": " << doc["numberOfTests"].get<int>() << " tests\n";
  }
  WriteSchemaCopies(schema_dir, out / "schema", manifest_paths, log);
  std::sort(manifest_paths.begin(), manifest_paths.end());
  std::string manifest;
  for (const std::string& rel : manifest_paths) manifest += Sha256Hex(ReadFile(out / rel)) + "  " + rel + "\n";
  WriteFileAtomic(out / "MANIFEST.sha256", manifest);
  log << "MANIFEST.sha256: " << manifest_paths.size() << " entries\n";
}

}  // namespace engram::vectors
