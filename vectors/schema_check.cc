// spec/conformance.md §CONF.4 — vector files against their JSON Schemas.
#include "vectors/schema_check.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <limits>
#include <optional>
#include <regex>
#include <set>
#include <unordered_map>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_visitor.hpp>

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

// A `pattern` (the hex strings: "^([0-9a-f]{2})*$") is matched by std::regex,
// the one engine valijson 1.0 offers. libstdc++'s default executor recurses
// once per character a repetition takes (GCC bug 86164): on this machine a
// string of 40,000 characters overflowed the thread's 8 MiB stack and the
// runner died of SIGSEGV, on vectors re-signed with one long row. Its
// non-recursive executor (the libstdc++ extension flag __polynomial: a
// Thompson NFA, no stack per character) is 2 to 5 times slower on the short
// strings every committed vector holds (1,515 characters at most), so it
// compiles the patterns only for a document that holds a string longer than
// kLongString; valijson takes compiled patterns from the cache it is handed.
constexpr size_t kLongString = 4096;

size_t LongestString(const nlohmann::json& v) {
  if (v.is_string()) return v.get_ref<const std::string&>().size();
  size_t longest = 0;
  if (v.is_object()) {
    for (const auto& [key, child] : v.items()) longest = std::max({longest, key.size(), LongestString(child)});
  } else if (v.is_array()) {
    for (const nlohmann::json& child : v) longest = std::max(longest, LongestString(child));
  }
  return longest;
}

// Every "pattern" keyword's value in a schema document, anywhere in it.
void CollectPatterns(const nlohmann::json& schema, std::set<std::string>& out) {
  if (schema.is_object()) {
    for (const auto& [key, child] : schema.items()) {
      if (key == "pattern" && child.is_string()) out.insert(child.get<std::string>());
      CollectPatterns(child, out);
    }
  } else if (schema.is_array()) {
    for (const nlohmann::json& child : schema) CollectPatterns(child, out);
  }
}

using RegexCache = std::unordered_map<std::string, std::regex>;

// The patterns of every schema of the directory (a suite schema references
// common.schema.json's), compiled for the non-recursive executor.
RegexCache NonRecursivePatterns(const std::map<std::string, std::string>& schemas) {
  std::set<std::string> patterns;
  for (const auto& [name, bytes] : schemas) CollectPatterns(ParseJson(bytes, "schema/" + name), patterns);
#if defined(__GLIBCXX__)
  constexpr auto kFlags = std::regex::ECMAScript | std::regex_constants::__polynomial;
#else
  constexpr auto kFlags = std::regex::ECMAScript;  // another library: its own executor, as valijson would use
#endif
  RegexCache out;
  for (const std::string& p : patterns) {
    try {
      out.emplace(p, std::regex(p, kFlags));
    } catch (const std::regex_error&) {
      // valijson compiles it itself when it applies, and reports it as it would without this cache.
    }
  }
  return out;
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
  RegexCache regexes;
  try {
    if (LongestString(target) > kLongString) regexes = NonRecursivePatterns(schemas);
  } catch (const Error& e) {
    return e.what();
  }
  // valijson::Validator::validate, with our cache: a visitor at the root, strict types.
  using Visitor = valijson::ValidationVisitor<valijson::adapters::NlohmannJsonAdapter>;
  valijson::adapters::NlohmannJsonAdapter target_adapter(target);
  if (Visitor(target_adapter, {"<root>"}, true, nullptr, regexes).validateSchema(schema)) return "";
  // Invalid: validate again collecting the reasons (slower, only on failure);
  // the first is the innermost one.
  valijson::ValidationResults results;
  Visitor(target_adapter, {"<root>"}, true, &results, regexes).validateSchema(schema);
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
