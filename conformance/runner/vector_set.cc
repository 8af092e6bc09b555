// spec/conformance.md §CONF.4 — the vectors a conformance run may use.
#include "conformance/runner/vector_set.h"

#include <system_error>
#include <utility>

#include "base/error.h"
#include "base/sha256.h"
#include "reference/input_files.h"
#include "vectors/compare.h"
#include "vectors/generator.h"
#include "vectors/manifest.h"
#include "vectors/schema_check.h"

namespace engram::conform {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

json ContractKey(const json& group) {
  return {group.at("profile"), group.at("config"), group.at("compressedVocabSize"), group.at("compressedPad")};
}

void CheckVectorShape(const std::string& rel, const json& doc) {
  auto need = [&](const json& obj, const std::string& where, const char* key, bool (json::*is)() const noexcept,
                  const char* what) {
    if (!obj.contains(key) || !(obj[key].*is)()) {
      throw Error(rel + ": " + where + ": key '" + key + "' must be " + what +
                  (obj.contains(key) ? ", got " + vectors::Short(obj[key]) : ", it is missing"));
    }
  };
  if (doc.contains("notes")) need(doc, "the top level", "notes", &json::is_object, "an object");
  need(doc, "the top level", "testGroups", &json::is_array, "a list");
  const bool accumulated = fs::path(rel).stem() == "accumulated";
  for (size_t gi = 0; gi < doc["testGroups"].size(); ++gi) {
    const json& g = doc["testGroups"][gi];
    const std::string gw = "testGroups[" + std::to_string(gi) + "]";
    if (!g.is_object()) throw Error(rel + ": " + gw + " is not an object");
    need(g, gw, "type", &json::is_string, "a string");
    need(g, gw, "tests", &json::is_array, "a list");
    if (g.contains("profile")) need(g, gw, "profile", &json::is_string, "a string");
    if (g.contains("layers")) {
      need(g, gw, "profile", &json::is_string, "a string");
      need(g, gw, "config", &json::is_object, "an object");
      need(g, gw, "compressedVocabSize", &json::is_number_integer, "an integer");
      need(g, gw, "compressedPad", &json::is_number_integer, "an integer");
    }
    for (size_t ti = 0; ti < g["tests"].size(); ++ti) {
      const json& t = g["tests"][ti];
      std::string tw = gw + ".tests[" + std::to_string(ti) + "]";
      if (!t.is_object()) throw Error(rel + ": " + tw + " is not an object");
      need(t, tw, "tcId", &json::is_number_integer, "an integer");
      tw += " (tcId " + t["tcId"].dump() + ")";
      need(t, tw, "result", &json::is_string, "\"valid\" or \"invalid\"");
      if (t["result"] != "valid" && t["result"] != "invalid") need(t, tw, "result", &json::is_null, "\"valid\" or \"invalid\"");
      if (t.contains("flags")) {
        need(t, tw, "flags", &json::is_array, "a list of note names");
        for (const json& f : t["flags"]) {
          if (!f.is_string()) throw Error(rel + ": " + tw + ": key 'flags' holds " + vectors::Short(f) + ", not a note name");
        }
      }
      if (accumulated) {
        need(t, tw, "kind", &json::is_string, "a string");
        need(t, tw, "n", &json::is_number_integer, "an integer");
        need(t, tw, "seed", &json::is_number_integer, "an integer");
        need(t, tw, "sha256", &json::is_string, "a string");
      }
    }
  }
}

void CheckExpectedOutputs(const std::string& rel, const json& doc) {
  if (fs::path(rel).stem() == "accumulated") return;  // its `sha256` is checked by CheckVectorShape
  const json& groups = doc["testGroups"];
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const std::string type = groups[gi]["type"].get<std::string>();
    const json& tests = groups[gi]["tests"];
    for (size_t ti = 0; ti < tests.size(); ++ti) {
      const json& t = tests[ti];
      if (t["result"] != "valid") continue;
      json expected = vectors::SplitOrdered(type, t).expected;
      expected.erase("intermediate");
      if (expected.empty()) {
        throw Error(rel + ": testGroups[" + std::to_string(gi) + "].tests[" + std::to_string(ti) + "] (tcId " +
                    t["tcId"].dump() + "): a valid test without expected outputs (§CONF.4: no answer can be judged " +
                    "against it; the outputs of type " + type + " are listed in §CONF.6)");
      }
    }
  }
}

VectorSet LoadVectors(const fs::path& dir, const std::set<std::string>& judged) {
  const vectors::Manifest manifest = vectors::ReadManifest(dir);
  std::vector<std::string> problems = manifest.problems;
  std::map<std::string, std::string> suite_bytes;   // v1/<name>.json -> bytes
  std::map<std::string, std::string> schema_bytes;  // <name>.schema.json -> bytes
  std::set<std::string> listed;
  for (const vectors::ManifestEntry& entry : manifest.entries) {
    const std::string& rel = entry.rel;
    listed.insert(rel);
    std::string bytes;
    try {
      bytes = vectors::ReadListedFile(dir, entry);
    } catch (const Error& e) {
      problems.push_back(e.what());
      continue;
    }
    if (Sha256Hex(bytes) != entry.digest) {
      problems.push_back(rel + " does not match MANIFEST.sha256");
      continue;
    }
    const fs::path p(rel);
    if (p.parent_path() == vectors::kVectorsDir && p.extension() == ".json") suite_bytes[rel] = std::move(bytes);
    if (p.parent_path() == "schema" && p.extension() == ".json") schema_bytes[p.filename().string()] = std::move(bytes);
  }
  for (const char* sub : {vectors::kVectorsDir, "schema"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / sub, ec)) {
      const std::string rel = std::string(sub) + "/" + e.path().filename().string();
      if (e.path().extension() == ".json" && listed.count(rel) == 0) problems.push_back(rel + " is not listed in MANIFEST.sha256");
    }
    if (ec && !(std::string(sub) == "schema" && ec == std::errc::no_such_file_or_directory)) {
      problems.push_back((dir / sub).string() + ": " + ec.message());
    }
  }
  if (!problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += p + "\nengram conform: ";
    throw Error(all + "refusing to run on vectors that fail their manifest");
  }
  VectorSet out;
  // §VEC.13 A released set is named as one; anything else is "modified".
  out.manifest_sha256 = manifest.sha256;
  out.released = vectors::ReleasedSet(manifest.sha256);
  for (const auto& [rel, bytes] : suite_bytes) {
    json doc = ParseOrderedJson(bytes, rel);
    if (!doc.is_object()) throw Error(rel + ": not a vector file (the top level is not a JSON object)");
    // §VEC.11 Vectors of another spec version describe other rules: running
    // them would report differences that are not bugs. An earlier released
    // set (its manifest listed in vectors/RELEASED under that very version)
    // stays runnable: its expectations are self-contained, and a port pinned
    // to it keeps its verdict; the verdict names the set's version.
    const bool current = doc.contains("specVersion") && doc["specVersion"] == vectors::kSpecVersion;
    const bool earlier_release = out.released && doc.contains("specVersion") && doc["specVersion"] == *out.released;
    if (!current && !earlier_release) {
      throw Error(rel + ": specVersion " + (doc.contains("specVersion") ? doc["specVersion"].dump() : "missing") +
                  " is not the version this runner implements (" + vectors::kSpecVersion +
                  ") nor that of a released set with this manifest");
    }
    CheckVectorShape(rel, doc);
    out.suites.push_back({fs::path(rel).stem().string(), std::move(doc)});
  }
  // §CONF.4 Every vector file against its JSON Schema, from this directory's
  // schema/ (listed and digest-checked above): a directory re-signed after its
  // expected outputs were deleted must not judge anything. Released sets too:
  // the check costs about 0.25 s of CPU for the whole directory (one thread
  // per file), and a run then never rests on a list being right. What is
  // checked is what the run judges against: the suites --suite selects (all
  // without it); the others are only digest-checked, as they are not run.
  std::vector<vectors::SchemaCheckFile> files;
  for (const SuiteFile& f : out.suites) {
    if (!judged.empty() && judged.count(f.name) == 0) continue;
    files.push_back({std::string(vectors::kVectorsDir) + "/" + f.name + ".json", &f.doc});
  }
  vectors::ValidateAgainstSchemas(files, schema_bytes);
  for (const SuiteFile& f : out.suites) {
    if (!judged.empty() && judged.count(f.name) == 0) continue;
    CheckExpectedOutputs(std::string(vectors::kVectorsDir) + "/" + f.name + ".json", f.doc);
  }
  for (const SuiteFile& file : out.suites) {
    for (const json& group : file.doc["testGroups"]) {
      if (!group.contains("layers")) continue;
      out.contract_ids.emplace(ContractKey(group).dump(), static_cast<int64_t>(out.contract_ids.size()) + 1);
    }
  }
  if (out.suites.empty()) throw Error((dir / vectors::kVectorsDir).string() + ": no suite files are listed in MANIFEST.sha256");
  return out;
}

CheckedVectors CheckVectorsDirectory(const std::filesystem::path& dir, const std::set<std::string>& judged) {
  VectorSet v = LoadVectors(dir, judged);
  CheckedVectors out{v.manifest_sha256, v.released, {}};
  for (SuiteFile& f : v.suites) out.suites.emplace(f.name, std::move(f.doc));
  return out;
}

}  // namespace engram::conform
