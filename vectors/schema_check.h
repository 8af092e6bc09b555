// spec/conformance.md §CONF.4 — a vector file checked against its JSON Schema
// before the runner judges anything with it.
#ifndef ENGRAM_VECTORS_SCHEMA_CHECK_H_
#define ENGRAM_VECTORS_SCHEMA_CHECK_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace engram::vectors {

/// One vector file to check: its path relative to the directory
/// ("v1/hash_v41.json") and its parsed document.
struct SchemaCheckFile {
  std::string rel;
  const nlohmann::ordered_json* doc;
};

/// §CONF.4 Validates every file against the JSON Schema its `schema` key names,
/// taken from `schemas` (file name, e.g. "hash.schema.json", -> bytes: the
/// directory's schema/ files, already checked against the manifest). The files
/// are validated in parallel (valijson, draft 7 keywords: `unevaluatedProperties`
/// of the 2020-12 schemas is not enforced; `scripts/lint_vectors.py` does). Throws
/// engram::Error for the first file, in order, that fails: naming the file, the
/// place ("testGroups[0].tests[3] (tcId 4)"), the schema and valijson's reason,
/// e.g. "Missing required property 'rows'.".
void ValidateAgainstSchemas(const std::vector<SchemaCheckFile>& files, const std::map<std::string, std::string>& schemas);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_SCHEMA_CHECK_H_
