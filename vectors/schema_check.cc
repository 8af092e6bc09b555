// spec/conformance.md §CONF.4 — vector files against their JSON Schemas.
#include "vectors/schema_check.h"

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <limits>
#include <optional>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "base/error.h"
#include "reference/input_files.h"

namespace engram::vectors {
namespace {

// valijson reads every JSON integer as int64 (its nlohmann adapter calls
// get<int64_t>()), so a uint64 above 2^63 - 1, in a vector (`seed`, `high`,
// the generateState words) or in a schema bound (`"maximum": 18446744073709551615`),
// would wrap to a negative number and fail `minimum: 0`. Both sides are
// clamped to 2^63 - 1 alike: every type, key and bound below 2^63 is still
// checked; what is lost, which value above 2^63 is allowed, `vectors verify`
// and `scripts/lint_vectors.py` still check.
void ClampForValijson(nlohmann::json& v) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > kMax) v = std::numeric_limits<int64_t>::max();
  } else if (v.is_structured()) {
    for (nlohmann::json& child : v) ClampForValijson(child);
  }
}

// valijson's context ("<root>", "[testGroups]", "[0]", ...) as
// "testGroups[0].tests[3] (tcId 4)".
std::string Place(const std::vector<std::string>& context, const nlohmann::ordered_json& doc) {
  std::string out;
  const nlohmann::ordered_json* at = &doc;
  std::optional<int64_t> tc_id;
  for (const std::string& part : context) {
    if (part.size() < 2 || part.front() != '[' || part.back() != ']') continue;  // "<root>"
    const std::string name = part.substr(1, part.size() - 2);
    const bool index = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
    if (index) {
      out += part;
      const size_t i = std::stoul(name);
      at = at != nullptr && at->is_array() && i < at->size() ? &(*at)[i] : nullptr;
    } else {
      out += (out.empty() ? "" : ".") + name;
      at = at != nullptr && at->is_object() && at->contains(name) ? &(*at)[name] : nullptr;
    }
    // The tcId of the innermost test on the way (tests sit at testGroups[i].tests[j]).
    if (index && at != nullptr && at->is_object() && at->contains("tcId") && at->at("tcId").is_number_integer() &&
        out.find(".tests[") != std::string::npos) {
      tc_id = at->at("tcId").get<int64_t>();
    }
  }
  if (out.empty()) out = "the top level";
  if (tc_id) out += " (tcId " + std::to_string(*tc_id) + ")";
  return out;
}

// valijson's fetchDoc: a schema references what every suite shares in
// common.schema.json (§VEC.1) by a URI that ends in that file name (relative
// to the schema's $id). Only the directory's own schema files, already
// digest-checked against MANIFEST.sha256, are served; never the network.
std::function<const nlohmann::json*(const std::string&)> FetchSibling(const std::map<std::string, std::string>& schemas) {
  return [&schemas](const std::string& uri) -> const nlohmann::json* {
    const std::string name = uri.substr(uri.find_last_of('/') + 1);
    const auto it = schemas.find(name);
    if (it == schemas.end()) {
      throw Error("a JSON Schema references \"" + uri + "\", which is not among the directory's schema/ files");
    }
    auto doc = std::make_unique<nlohmann::json>(ParseJson(it->second, "schema/" + name));
    ClampForValijson(*doc);
    return doc.release();  // valijson owns it now and frees it with FreeSibling
  };
}
void FreeSibling(const nlohmann::json* doc) { delete doc; }

// "" when `file` matches its schema, else the message.
std::string Check(const SchemaCheckFile& file, const std::map<std::string, std::string>& schemas) {
  const nlohmann::ordered_json& doc = *file.doc;
  if (!doc.contains("schema") || !doc["schema"].is_string()) {
    return file.rel + ": key 'schema' must name its JSON Schema file (§VEC.2), got " +
           (doc.contains("schema") ? doc["schema"].dump() : std::string("nothing"));
  }
  const std::string name = doc["schema"].get<std::string>();
  const auto it = schemas.find(name);
  if (it == schemas.end()) {
    return file.rel + ": its schema \"" + name + "\" is not among the directory's schema/ files listed in MANIFEST.sha256";
  }
  const std::string schema_rel = "schema/" + name;
  nlohmann::json schema_doc;
  try {
    schema_doc = ParseJson(it->second, schema_rel);
  } catch (const Error& e) {
    return e.what();
  }
  ClampForValijson(schema_doc);
  valijson::Schema schema;
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_doc);
    parser.populateSchema(schema_adapter, schema, FetchSibling(schemas), FreeSibling);
  } catch (const std::exception& e) {
    return schema_rel + ": not a JSON Schema valijson can use: " + e.what();
  }
  nlohmann::json target = doc;  // valijson's adapter reads nlohmann::json, not ordered_json
  ClampForValijson(target);
  valijson::Validator validator;
  valijson::adapters::NlohmannJsonAdapter target_adapter(target);
  if (validator.validate(schema, target_adapter, nullptr)) return "";
  // Invalid: validate again collecting the reasons (slower, only on failure);
  // the first is the innermost one.
  valijson::ValidationResults results;
  validator.validate(schema, target_adapter, &results);
  valijson::ValidationResults::Error first;
  std::string reason = "no reason given";
  std::string place = "the top level";
  if (results.popError(first)) {
    reason = first.description;
    place = Place(first.context, doc);
  }
  return file.rel + ": " + place + ": does not match its JSON Schema " + schema_rel + " (§CONF.4): " + reason;
}

}  // namespace

void ValidateAgainstSchemas(const std::vector<SchemaCheckFile>& files, const std::map<std::string, std::string>& schemas) {
  // One task per file (the largest take a few hundred ms each, single-threaded).
  std::vector<std::future<std::string>> tasks;
  tasks.reserve(files.size());
  for (const SchemaCheckFile& f : files) {
    tasks.push_back(std::async(std::launch::async, [&f, &schemas] { return Check(f, schemas); }));
  }
  std::string first;
  for (auto& t : tasks) {
    const std::string problem = t.get();
    if (first.empty()) first = problem;
  }
  if (!first.empty()) throw Error(first);
}

}  // namespace engram::vectors
