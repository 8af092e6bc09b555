// spec/conformance.md §CONF.4 — expected failures.
#include <algorithm>
#include "conformance/runner/expect_fail.h"

#include <exception>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "reference/input_files.h"

namespace engram::conform {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

ExpectFail LoadExpectFail(const fs::path& path, const VectorSet& vectors) {
  ExpectFail out;
  if (path.empty()) return out;
  const std::string where = path.string();
  const json doc = ParseOrderedJson(ReadInputFile(path, InputKind::kExpectFail), where);
  if (doc.is_object()) {
    for (const auto& [suite, list] : doc.items()) {
      if (!list.is_array()) throw Error(where + ": key '" + suite + "': expected a list of tcIds");
      for (const json& id : list) {
        if (!id.is_number_integer()) throw Error(where + ": key '" + suite + "': " + id.dump() + " is not a tcId");
        out.ids[suite].insert(id.get<int64_t>());
      }
    }
  } else if (doc.is_array()) {
    for (const json& e : doc) {
      const std::string s = e.is_string() ? e.get<std::string>() : "";
      const size_t colon = s.rfind(':');
      // §CONF.4: "suite:tcId" with the tcId in decimal digits only (std::stoll alone would also take
      // " 1", "+2" and "-0", which no tcId is written as)
      const std::string digits = colon == std::string::npos ? "" : s.substr(colon + 1);
      const bool decimal = !digits.empty() && digits.size() <= 18 &&
                           std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!decimal) throw Error(where + ": entry " + e.dump() + " is not \"suite:tcId\"");
      out.ids[s.substr(0, colon)].insert(std::stoll(digits));
    }
  } else {
    throw Error(where + ": expected an object {suite: [tcId...]} or a list of \"suite:tcId\"");
  }
  for (const auto& [suite, ids] : out.ids) {
    if (suite == "contract") {  // the contract checks (§CONF.2 item 2), numbered by configuration
      for (int64_t id : ids) {
        if (id < 1 || id > static_cast<int64_t>(vectors.contract_ids.size())) {
          throw Error(where + ": suite 'contract' has no check " + std::to_string(id) + " (the vectors have " +
                      std::to_string(vectors.contract_ids.size()) + " configurations)");
        }
      }
      continue;
    }
    const SuiteFile* file = vectors.Find(suite);
    if (file == nullptr) throw Error(where + ": suite '" + suite + "' is not in the vectors");
    std::set<int64_t> known;
    for (const json& g : file->doc.value("testGroups", json::array())) {
      for (const json& t : g.value("tests", json::array())) known.insert(t.value("tcId", int64_t{0}));
    }
    for (int64_t id : ids) {
      if (known.count(id) == 0) throw Error(where + ": suite '" + suite + "' has no tcId " + std::to_string(id));
    }
  }
  return out;
}

void ApplyExpectFail(const ExpectFail& expect_fail, TestResult& r) {
  if (!expect_fail.Contains(r.suite, r.tc_id)) return;
  if (r.status == "fail") {
    r.status = "expected-fail";
  } else if (r.status == "pass") {
    r.status = "stale";
    r.detail = "listed as an expected failure but passes";
  }
}

}  // namespace engram::conform
