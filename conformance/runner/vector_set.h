// spec/conformance.md §CONF.4 — the vectors a conformance run may use: a
// directory checked against its manifest, its spec version, the keys the
// runner reads and its schemas before any test is sent.
#ifndef ENGRAM_CONFORMANCE_RUNNER_VECTOR_SET_H_
#define ENGRAM_CONFORMANCE_RUNNER_VECTOR_SET_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace engram::conform {

// One suite's vector file, read keeping its key order: §CONF.1 splits inputs
// from outputs by position relative to "result".
struct SuiteFile {
  std::string name;  // the file name without .json
  nlohmann::ordered_json doc;
};

// §CONF.2 item 2 The configuration a contract check is about.
nlohmann::ordered_json ContractKey(const nlohmann::ordered_json& group);

// The vectors of a run, checked (LoadVectors).
struct VectorSet {
  std::vector<SuiteFile> suites;  // sorted by name
  // §CONF.4 The contract checks' ids: each configuration the vectors use,
  // numbered 1, 2, ... in file order over all suites (whatever --suite
  // selects), so that "contract:N" in an expected-failures file is stable.
  std::map<std::string, int64_t> contract_ids;  // ContractKey(...).dump() -> id
  // §VEC.13 The SHA-256 of MANIFEST.sha256, and the spec version of the
  // released set it is (nothing: a modified or foreign directory).
  std::string manifest_sha256;
  std::optional<std::string> released;
  std::set<std::string> Names() const {
    std::set<std::string> out;
    for (const SuiteFile& s : suites) out.insert(s.name);
    return out;
  }
  const SuiteFile* Find(const std::string& name) const {
    for (const SuiteFile& s : suites) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }
};

// §VEC.2-§VEC.3 The keys the runner reads, with their types, so that a
// re-signed vectors directory with a hole in it stops the run (exit 2) instead
// of sending a half-built request. `rel` is the file's path in the directory
// (v1/<suite>.json). Throws engram::Error naming file, group, tcId and key.
void CheckVectorShape(const std::string& rel, const nlohmann::ordered_json& doc);

// §CONF.4 A valid test whose expected outputs are gone (deleted keys, the
// manifest re-signed) would pass any answer, `{"outputs": {}}` included: every
// valid test must expect at least one output besides the optional
// `intermediate` (§CONF.6), whatever its schema says. Throws engram::Error
// naming file, test and tcId.
void CheckExpectedOutputs(const std::string& rel, const nlohmann::ordered_json& doc);

// §CONF.4 The vectors the run may use: every file MANIFEST.sha256 lists has
// its digest and lies in the directory as a regular file (§VEC.9, read by the
// function `vectors verify` uses), every suite and schema file is listed,
// every suite file is JSON of the spec version this runner implements
// (§VEC.11). Each file is read once, and the bytes checked are the bytes
// parsed. `judged`: the suites checked against their schemas and for expected
// outputs (empty: all). Throws engram::Error.
VectorSet LoadVectors(const std::filesystem::path& dir, const std::set<std::string>& judged);

// §CONF.4 A vectors directory checked as engram conform checks it before a
// run (the manifest's digests, regular files only, the spec version, the
// keys the runner reads, every file against its schema, no valid test
// without expected outputs; each file within §ERR.4's limit, parsed with
// unique keys and bounded depth): what the Python package reads vectors
// through. Throws engram::Error naming the file, test and key.
struct CheckedVectors {
  std::string manifest_sha256;
  std::optional<std::string> released;  // the released set it is (§VEC.13), if any
  std::map<std::string, nlohmann::ordered_json> suites;  // v1/<name>.json -> its document, key order kept
};
// `judged`: the suites checked against their schemas and for expected
// outputs (as --suite selects them for conform; empty: every suite); the
// others are digest-checked, parsed and shape-checked only.
CheckedVectors CheckVectorsDirectory(const std::filesystem::path& dir, const std::set<std::string>& judged);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_VECTOR_SET_H_
