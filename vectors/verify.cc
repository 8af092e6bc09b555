// spec/vectors.md §VEC.6 — verifying a vectors directory against the reference.
//
// Verification does not regenerate and diff: it reads each test's inputs,
// recomputes the outputs with the reference, and compares them with the
// expected values in the file. A file edited by hand (or by a buggy
// generator) is therefore caught even when it is internally consistent.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "conformance/cli/fileio.h"
#include "reference/config.h"
#include "reference/error.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/random.h"
#include "reference/token_map.h"
#include "vectors/generator.h"
#include "vectors/suite_util.h"

namespace engram::vectors {
namespace {

using json = nlohmann::json;

struct Checker {
  std::string file;
  std::vector<std::string>& problems;

  void Problem(const json& test, const std::string& what) {
    std::string id = test.contains("tcId") ? "tcId " + test["tcId"].dump() : "(no tcId)";
    problems.push_back(file + ": " + id + ": " + what);
  }
  // Compares one expected field with the recomputed value.
  void Expect(const json& test, const std::string& field, const json& actual) {
    if (!test.contains(field)) {
      Problem(test, "missing field '" + field + "'");
    } else if (test[field] != actual) {
      std::string exp = test[field].dump(), act = actual.dump();
      if (exp.size() > 200) exp = exp.substr(0, 200) + "...";
      if (act.size() > 200) act = act.substr(0, 200) + "...";
      Problem(test, "field '" + field + "' is " + exp + " but the reference gives " + act);
    }
  }
};

bool IsValid(const json& test) { return test.value("result", "") == "valid"; }

void CheckBoundedIntegers(Checker& c, const json& t) {
  const uint64_t seed = t.at("seed").get<uint64_t>();
  const int64_t low = t.at("low").get<int64_t>();
  const json& hj = t.at("high");
  const uint128_t high = hj.is_number_unsigned() ? static_cast<uint128_t>(hj.get<uint64_t>())
                                                 : static_cast<uint128_t>(hj.get<int64_t>());
  Pcg64 gen{SeedSequence(seed)};
  std::vector<int64_t> values = IntegersWide(gen, low, high, t.at("count").get<size_t>());
  c.Expect(t, "values", values);
  SeedSequence seq(seed);
  const json& in = t.at("intermediate");
  if (in.at("pool") != json(seq.pool())) c.Problem(t, "intermediate.pool differs from the reference");
  if (in.at("generateState") != json(seq.GenerateState64(4))) c.Problem(t, "intermediate.generateState differs");
  uint64_t rng = static_cast<uint64_t>(high - 1 - static_cast<uint128_t>(low));
  if (in.at("path") != std::string(BoundedPathName(BoundedPathFor(rng)))) c.Problem(t, "intermediate.path differs");
}

void CheckMultipliers(Checker& c, const json& t) {
  const int64_t seed = t.at("seed").get<int64_t>();
  const int64_t layer = t.at("layerId").get<int64_t>();
  const int64_t v = t.at("compressedVocabSize").get<int64_t>();
  const int n = t.at("maxNgram").get<int>();
  if (!IsValid(t)) {
    try {
      LayerMultipliers(seed, layer, v, n);
      c.Problem(t, "the reference accepts an input the vector marks invalid");
    } catch (const Error&) {
    }
    return;
  }
  c.Expect(t, "multipliers", LayerMultipliers(seed, layer, v, n));
  const json& in = t.at("intermediate");
  if (in.at("bound") != MultiplierBound(v)) c.Problem(t, "intermediate.bound differs");
  if (in.at("layerSeed") != LayerSeed(seed, layer)) c.Problem(t, "intermediate.layerSeed differs");
}

Layout GroupLayout(const json& group, const json& test_or_group) {
  (void)group;
  EngramConfig cfg = ParseConfig(test_or_group.at("config"), "config",
                                 ParseProfile(test_or_group.at("profile").get<std::string>()));
  return BuildLayout(cfg, test_or_group.at("compressedVocabSize").get<int64_t>(),
                     test_or_group.at("compressedPad").get<int64_t>());
}

void CheckLayout(Checker& c, const json& t) {
  try {
    Layout layout = GroupLayout(t, t);
    if (!IsValid(t)) {
      c.Problem(t, "the reference accepts a configuration the vector marks invalid");
      return;
    }
    c.Expect(t, "layers", json::parse(LayersJson(layout).dump()));
  } catch (const Error& e) {
    if (IsValid(t)) c.Problem(t, std::string("the reference refuses a valid test: ") + e.what());
  }
}

void CheckHash(Checker& c, const Layout& layout, const json& t) {
  std::vector<int64_t> ids = t.at("ids").get<std::vector<int64_t>>();
  try {
    std::vector<int64_t> rows = HashSequence(layout, ids);
    if (!IsValid(t)) {
      c.Problem(t, "the reference accepts ids the vector marks invalid");
      return;
    }
    c.Expect(t, "rows", json(NestRows(layout, rows)));
    c.Expect(t, "intermediate", json::parse(TraceJson(TraceSequence(layout, ids)).dump()));
  } catch (const Error& e) {
    if (IsValid(t)) c.Problem(t, std::string("the reference refuses a valid test: ") + e.what());
  }
}

void CheckHashState(Checker& c, const Layout& layout, size_t capacity, const json& t) {
  std::map<std::string, HashState> seqs;
  size_t index = 0;
  for (const json& step : t.at("steps")) {
    const std::string op = step.at("op");
    const std::string where = "step " + std::to_string(index++) + " (" + op + ")";
    if (op == "append") {
      const std::string name = step.at("seq");
      auto it = seqs.find(name);
      if (it == seqs.end()) it = seqs.emplace(name, HashState(layout, capacity)).first;
      std::vector<int64_t> rows;
      it->second.Append(step.at("ids").get<std::vector<int64_t>>(), rows);
      if (step.at("rows") != json(NestRows(layout, rows))) c.Problem(t, where + ": rows differ from the reference");
      if (step.at("positionAfter") != it->second.position()) c.Problem(t, where + ": positionAfter differs");
      if (step.at("historyAfter") != json(it->second.History())) c.Problem(t, where + ": historyAfter differs");
    } else if (op == "rollback") {
      HashState& s = seqs.at(step.at("seq").get<std::string>());
      s.Rollback(step.at("k").get<size_t>());
      if (step.at("positionAfter") != s.position()) c.Problem(t, where + ": positionAfter differs");
      if (step.at("historyAfter") != json(s.History())) c.Problem(t, where + ": historyAfter differs");
    } else if (op == "fork") {
      seqs.insert_or_assign(step.at("to").get<std::string>(), seqs.at(step.at("from").get<std::string>()));
    } else {
      c.Problem(t, where + ": unknown op");
    }
  }
}

// §VEC.2 The structure shared by every suite file.
void CheckStructure(Checker& c, const std::string& suite, const json& doc) {
  auto problem = [&](const std::string& what) { c.problems.push_back(c.file + ": " + what); };
  for (const char* key : {"schema", "algorithm", "specVersion", "generator", "numberOfTests", "notes", "testGroups"}) {
    if (!doc.contains(key)) problem(std::string("missing top-level key '") + key + "'");
  }
  const std::string schema = suite.rfind("hash_", 0) == 0 ? "hash.schema.json" : suite + ".schema.json";
  if (doc.value("schema", "") != schema) problem("schema is " + doc.value("schema", json()).dump() + ", expected \"" + schema + "\"");
  if (doc.value("specVersion", "") != kSpecVersion) {
    problem("specVersion " + doc.value("specVersion", json()).dump() + " is not the supported " + kSpecVersion);
  }
  int expected_id = 1;
  const json notes = doc.value("notes", json::object());
  for (const json& group : doc.value("testGroups", json::array())) {
    for (const json& t : group.value("tests", json::array())) {
      if (t.value("tcId", -1) != expected_id) {
        c.Problem(t, "tcIds must be consecutive from 1; expected " + std::to_string(expected_id));
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

size_t VerifySuite(const std::string& file_name, const json& doc, std::vector<std::string>& problems) {
  Checker c{file_name, problems};
  const std::string suite = std::filesystem::path(file_name).stem().string();
  CheckStructure(c, suite, doc);
  size_t checked = 0;
  for (const json& group : doc.value("testGroups", json::array())) {
    const std::string type = group.value("type", "");
    std::optional<Layout> layout;
    if (type == "HashTest" || type == "HashStateTest") {
      try {
        layout = GroupLayout(group, group);
        if (group.value("layers", json()) != json::parse(LayersJson(*layout).dump())) {
          problems.push_back(file_name + ": a " + type + " group's 'layers' differ from the layout its config gives");
        }
      } catch (const std::exception& e) {
        problems.push_back(file_name + ": a " + type + " group has an unusable configuration: " + e.what());
        continue;
      }
    }
    for (const json& t : group.value("tests", json::array())) {
      ++checked;
      try {
        if (type == "BoundedIntegersTest") CheckBoundedIntegers(c, t);
        else if (type == "MultipliersTest") CheckMultipliers(c, t);
        else if (type == "LayoutTest") CheckLayout(c, t);
        else if (type == "HashTest") CheckHash(c, *layout, t);
        else if (type == "HashStateTest") CheckHashState(c, *layout, group.value("rollbackCapacity", size_t{0}), t);
        else {
          c.Problem(t, "unknown test group type '" + type + "'");
        }
      } catch (const std::exception& e) {
        c.Problem(t, std::string("cannot be checked: ") + e.what());
      }
    }
  }
  return checked;
}

bool VerifyAll(const std::filesystem::path& dir, std::ostream& log) {
  std::vector<std::string> problems;
  // §VEC.5 The manifest first: every listed file exists with that digest, and
  // every suite file present is listed.
  const std::filesystem::path manifest_path = dir / "MANIFEST.sha256";
  std::string manifest = ReadFile(manifest_path);
  std::set<std::string> listed;
  std::istringstream lines(manifest);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    const std::string where = manifest_path.string() + ":" + std::to_string(line_no);
    if (line.size() < 67 || line.substr(64, 2) != "  ") {
      problems.push_back(where + ": malformed line (expected '<64 hex digits>  <path>')");
      continue;
    }
    const std::string digest = line.substr(0, 64), rel = line.substr(66);
    if (rel.find("..") != std::string::npos || rel.front() == '/') {
      problems.push_back(where + ": path '" + rel + "' leaves the vectors directory");
      continue;
    }
    listed.insert(rel);
    std::error_code ec;
    if (!std::filesystem::exists(dir / rel, ec)) {
      problems.push_back(where + ": listed file " + rel + " is missing");
      continue;
    }
    const std::string actual = Sha256Hex(ReadFile(dir / rel));
    if (actual != digest) problems.push_back(where + ": " + rel + " has SHA-256 " + actual + ", manifest says " + digest);
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
  for (const auto& path : suites) {
    const std::string rel = std::string(kVectorsDir) + "/" + path.filename().string();
    if (listed.count(rel) == 0) problems.push_back(rel + ": not listed in MANIFEST.sha256");
    json doc;
    try {
      doc = json::parse(ReadFile(path));
    } catch (const json::parse_error& e) {
      problems.push_back(rel + ": malformed JSON: " + e.what());
      continue;
    }
    const size_t before = problems.size();
    size_t checked = VerifySuite(rel, doc, problems);
    log << rel << ": " << checked << " tests checked, " << (problems.size() - before) << " problem(s)\n";
  }
  for (const std::string& p : problems) log << "FAIL " << p << "\n";
  log << (problems.empty() ? "vectors verified: OK\n" : "vectors verified: " + std::to_string(problems.size()) + " problem(s)\n");
  return problems.empty();
}

}  // namespace engram::vectors
