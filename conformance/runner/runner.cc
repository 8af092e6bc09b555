// spec/conformance.md — the conformance runner. RunConformance is its phases
// in order: the outputs are checked writable, the vectors are read and checked
// against their manifest, the expected failures are read, the implementation
// is started and its handshake checked, its contract compared, every suite
// run, and the verdict and reports written.
#include "conformance/runner/runner.h"
#include "conformance/runner/verdict_record.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <sstream>

#include "base/error.h"
#include "base/fileio.h"
#include "base/sha256.h"
#include "conformance/runner/judge.h"
#include "conformance/runner/peer.h"
#include "conformance/runner/process.h"
#include "conformance/runner/random_run.h"
#include "conformance/runner/report.h"
#include "reference/input_files.h"
#include "reference/contract.h"
#include "reference/token_map.h"
#include "vectors/compare.h"
#include "vectors/generator.h"
#include "vectors/manifest.h"
#include "vectors/random_cases.h"
#include "vectors/schema_check.h"

namespace engram::conform {
namespace {

// Vectors are read keeping their key order: §CONF.1 splits inputs from
// outputs by position relative to "result".
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------- phase: outputs

// §CONF.4 A report that cannot be written must be found before the run, not
// after it: a run that ends with "OK" and exit 1 is a false green waiting to
// happen. Throws engram::Error naming the option and the path.
void CheckWritable(const fs::path& path, const std::string& option) {
  if (path.empty()) return;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(option + " " + path.string() + ": is a directory");
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!fs::is_directory(dir, ec)) throw Error(option + " " + path.string() + ": the directory " + dir.string() + " does not exist");
  // The report is written atomically (a temporary file renamed into place):
  // what must work is creating a file beside it.
  std::string probe = (dir / ("." + path.filename().string() + ".probe-XXXXXX")).string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) throw Error(option + " " + path.string() + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

// ---------------------------------------------------------------- phase: vectors

struct SuiteFile {
  std::string name;  // the file name without .json
  json doc;
};

// §CONF.2 item 2 The configuration a contract check is about.
json ContractKey(const json& group) {
  return {group.at("profile"), group.at("config"), group.at("compressedVocabSize"), group.at("compressedPad")};
}

struct Vectors {
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
// of sending a half-built request. Throws engram::Error naming file, group,
// tcId and key.
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

// §CONF.4 A valid test whose expected outputs are gone (deleted keys, the
// manifest re-signed) would pass any answer, `{"outputs": {}}` included: every
// valid test must expect at least one output besides the optional
// `intermediate` (§CONF.6), whatever its schema says. Throws engram::Error
// naming file, test and tcId.
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

// §CONF.4 The vectors the run may use: every file MANIFEST.sha256 lists has
// its digest and lies in the directory as a regular file (§VEC.9, read by the
// function `vectors verify` uses), every suite and schema file is listed,
// every suite file is JSON of the spec version this runner implements
// (§VEC.11). Each file is read once, and the bytes checked are the bytes
// parsed. Throws engram::Error.
Vectors LoadVectors(const fs::path& dir, const std::set<std::string>& judged) {
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
  Vectors out;
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

// ---------------------------------------------------------------- phase: expected failures

struct ExpectFail {
  std::map<std::string, std::set<int64_t>> ids;
  bool Contains(const std::string& suite, int64_t id) const {
    auto it = ids.find(suite);
    return it != ids.end() && it->second.count(id) != 0;
  }
};

// §CONF.4 {"suite": [tcId, ...]} or ["suite:tcId", ...]; every entry must name
// a test the vectors have (an entry that names none would never match).
ExpectFail LoadExpectFail(const fs::path& path, const Vectors& vectors) {
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
      size_t used = 0;
      int64_t id = 0;
      try {
        if (colon == std::string::npos) throw std::invalid_argument(s);
        id = std::stoll(s.substr(colon + 1), &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || colon + 1 + used != s.size()) throw Error(where + ": entry " + e.dump() + " is not \"suite:tcId\"");
      out.ids[s.substr(0, colon)].insert(id);
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

// ---------------------------------------------------------------- the run

// §CONF.4 Unanswered requests in a row (timeouts, a child that cannot be
// restarted) within one suite; after `limit` of them the suite stops. Only an
// answer resets the streak: a crash in between neither counts nor resets it, so
// a port that alternates hanging and crashing is stopped too.
struct TimeoutGuard {
  explicit TimeoutGuard(int max_in_a_row) : limit(max_in_a_row) {}
  int limit;
  int in_a_row = 0;
  std::vector<int64_t> ids;  // the tcIds of the current streak
  bool stopped = false;
  void Note(const Peer::Reply& reply, int64_t tc_id) {
    if (reply.answered) {
      in_a_row = 0;
      ids.clear();
      return;
    }
    if (!reply.counts_as_timeout) return;
    ++in_a_row;
    ids.push_back(tc_id);
    if (limit > 0 && in_a_row >= limit) stopped = true;
  }
  std::string Why() const {
    std::string list;
    for (int64_t id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
    return "stopped after " + std::to_string(in_a_row) + " consecutive unanswered tests (tcIds " + list +
           "); the rest of the suite was not run (--max-timeouts)";
  }
};

struct Run {
  const Options& options;
  const Vectors& vectors;
  const ExpectFail& expect_fail;
  Peer& peer;
  Claims claims;
  std::vector<TestResult> results;
  std::map<std::string, std::vector<std::string>> suite_problems;
  // §CONF.9 per suite (and "contract"): the index range of its tests this
  // shard ran, and the digest of the requests it sent for them.
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  std::map<std::string, CaseDigest> digests;
  // §CONF.8 per suite and profile: the tests of this share, and their results.
  LevelTallies tallies;
};

void ApplyExpectFail(const Run& run, TestResult& r) {
  if (!run.expect_fail.Contains(r.suite, r.tc_id)) return;
  if (r.status == "fail") {
    r.status = "expected-fail";
  } else if (r.status == "pass") {
    r.status = "stale";
    r.detail = "listed as an expected failure but passes";
  }
}

// ---------------------------------------------------------------- phase: contract

// §CON / §CONF.2 item 2: the implementation's contract against the vectors'
// layouts, once per configuration the vectors use.
void RunContracts(Run& run) {
  std::set<std::string> seen;
  TimeoutGuard guard(run.options.max_consecutive_timeouts);
  // §CONF.9 a shard checks the configurations whose ids (1-based, over all
  // the vectors) fall in its share.
  const auto [first, end] = ShardRange(static_cast<int64_t>(run.vectors.contract_ids.size()), run.options.shard.index,
                                       run.options.shard.count);
  run.ranges["contract"] = {first, end};
  CaseDigest& digest = run.digests["contract"];
  for (const SuiteFile& file : run.vectors.suites) {
    if (!run.options.suites.empty() && run.options.suites.count(file.name) == 0) continue;
    for (const json& group : file.doc.value("testGroups", json::array())) {
      // §CON.5 The reported contract's layers against the layout the vectors derive
      // from the same configuration, once per configuration, before any test.
      if (!group.contains("layers") || !group.contains("config") || !group.contains("profile")) continue;
      const std::string key = ContractKey(group).dump();
      if (!seen.insert(key).second) continue;
      if (!group["profile"].is_string() || !run.claims.Profile(group["profile"].get<std::string>())) continue;
      if (run.options.profile && group["profile"] != *run.options.profile) continue;
      TestResult r;
      r.suite = "contract";
      r.tc_id = run.vectors.contract_ids.at(key);
      if (r.tc_id - 1 < first || r.tc_id - 1 >= end) continue;
      r.status = "pass";
      if (guard.stopped) {
        Skip(r, "stopped", guard.Why());
        run.results.push_back(r);
        continue;
      }
      const std::string request = json{{"op", "contract"}, {"profile", group["profile"]}, {"config", group["config"]},
                                       {"compressedVocabSize", group["compressedVocabSize"]},
                                       {"compressedPad", group["compressedPad"]}}.dump();
      digest.Add(request);
      Peer::Reply reply = run.peer.CallLine(request, run.options.timeout);
      guard.Note(reply, r.tc_id);
      const json& body = reply.body;
      if (!reply.failure.empty()) {
        Fail(r, reply.failure, reply.detail);
      } else if ((!body.contains("contract") || body["contract"].is_null()) && body.contains("layers")) {
        // No full contract (no tokenizer), but the layout the implementation computes.
        if (const std::string d = vectors::FirstDifference(group["layers"], body["layers"], "layers"); !d.empty()) {
          Fail(r, "contract mismatch", d);
        }
      } else if (!body.contains("contract") || body["contract"].is_null()) {
        Skip(r, "unsupported", "the implementation builds no contract");
      } else {
        try {
          const json& c = body["contract"];
          CheckContractForm(c, "the implementation's contract");
          if (c["profile"] != group["profile"] || c["compressedVocabSize"] != group["compressedVocabSize"] ||
              c["layerIds"].size() != group["layers"].size()) {
            Skip(r, "not claimed", "the implementation's contract is for another configuration (" + c["profile"].dump() +
                                       ", V " + c["compressedVocabSize"].dump() + ")");
          } else if (const std::string d = vectors::FirstDifference(group["layers"], c["layers"], "layers"); !d.empty()) {
            Fail(r, "contract mismatch", d);
          }
        } catch (const Error& e) {
          Fail(r, "bad contract", e.what());
        }
      }
      if (r.status == "fail") r.returned = Kept(body);
      r.detail = (r.detail.empty() ? "" : r.detail + " ") + "(" + file.name + ", " + group.value("comment", "") + ")";
      ApplyExpectFail(run, r);
      run.results.push_back(r);
    }
  }
  if (guard.stopped) run.suite_problems["contract"].push_back(guard.Why());
}

// ---------------------------------------------------------------- phase: suites

void RunSuite(Run& run, const SuiteFile& file) {
  const Options& o = run.options;
  const json notes = file.doc.value("notes", json::object());
  TimeoutGuard guard(o.max_consecutive_timeouts);
  // §CONF.9 a shard runs the tests whose position in the file (0-based, over
  // every group, whatever --profile selects) falls in its share.
  int64_t total = 0;
  for (const json& group : file.doc.value("testGroups", json::array())) total += static_cast<int64_t>(group.value("tests", json::array()).size());
  const auto [first, end] = ShardRange(total, o.shard.index, o.shard.count);
  run.ranges[file.name] = {first, end};
  CaseDigest& digest = run.digests[file.name];
  int64_t position = -1;
  for (const json& group : file.doc.value("testGroups", json::array())) {
    const std::string type = group.value("type", "");
    const std::string profile = group.contains("profile") && group["profile"].is_string() ? group["profile"].get<std::string>() : "";
    if (o.profile && !profile.empty() && profile != *o.profile) continue;
    json g = group;
    g.erase("tests");
    const bool claimed = run.claims.Suite(file.name) && (profile.empty() || run.claims.Profile(profile));
    for (const json& t : group.value("tests", json::array())) {
      ++position;
      if (position < first || position >= end) continue;
      // LayoutTest carries its profile per test, not per group.
      const std::string test_profile = t.contains("profile") && t["profile"].is_string() ? t["profile"].get<std::string>() : "";
      if (o.profile && !test_profile.empty() && test_profile != *o.profile) continue;
      TestResult r = NewResult(file.name, t);
      if (guard.stopped) {
        Skip(r, "stopped", "not run: the suite was " + guard.Why());
      } else if (!claimed || (!test_profile.empty() && !run.claims.Profile(test_profile))) {
        Skip(r, "not claimed", "suite or profile not claimed by the implementation");
      } else if (file.name == "accumulated") {
        const int64_t n = t.value("n", int64_t{0});
        if (n > o.accumulate_max_n) {
          Skip(r, "limit", "n = " + std::to_string(n) + " exceeds --accumulate-max");
        } else {
          const std::string request =
              json{{"op", "accumulate"}, {"kind", t["kind"]}, {"group", g}, {"n", t["n"]}, {"seed", t["seed"]}}.dump();
          digest.Add(request);
          const auto t0 = std::chrono::steady_clock::now();
          const Peer::Reply reply = run.peer.CallLine(request, o.accumulate_timeout);
          r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          guard.Note(reply, r.tc_id);
          if (!reply.failure.empty()) {
            Fail(r, reply.failure, reply.detail);
          } else if (int{reply.body.contains("sha256")} + int{reply.body.contains("unsupported")} != 1) {
            Fail(r, "garbage", "the answer must hold exactly one of sha256 / unsupported: " + vectors::Short(reply.body));
            r.returned = Kept(reply.body);
          } else if (reply.body.contains("unsupported")) {
            Skip(r, "unsupported", "unsupported: " + vectors::Short(reply.body["unsupported"]));
          } else if (!reply.body.contains("sha256") || reply.body["sha256"] != t["sha256"]) {
            Fail(r, "mismatch", "sha256 over " + std::to_string(n) + " positions: expected " + t.value("sha256", "") +
                                    ", got " + vectors::Short(reply.body.value("sha256", json())));
            r.returned = Kept(reply.body);
          }
        }
      } else {
        Peer::Reply reply;
        r = CallTest(run.peer, o.timeout, file.name, file.name, r.tc_id, g, t, &reply, &digest);
        guard.Note(reply, r.tc_id);
      }
      r.profile = test_profile.empty() ? profile : test_profile;
      AddFlags(r, notes);
      ApplyExpectFail(run, r);
      run.tallies[file.name][r.profile].Add(r);
      run.results.push_back(std::move(r));
    }
  }
  if (guard.stopped) run.suite_problems[file.name].push_back(guard.Why());
}

// ---------------------------------------------------------------- phase: verdict

// §CONF.4 A diagnosis is printed only when the failures match a catalogued
// divergence: the failed tests of a suite (or of the whole run) are exactly
// the tests carrying one KNOWN_DIVERGENCE flag among those that ran.
void Diagnose(const Run& run, Verdict& v) {
  std::map<std::string, std::set<std::string>> flagged;  // flag -> "suite:tcId" that ran
  std::set<std::string> failed_all;
  std::map<std::string, std::string> description;        // flag -> note description
  bool any_other_failure = false;                         // a failure that is not a mismatch, anywhere
  for (const SuiteFile& file : run.vectors.suites) {
    std::map<std::string, std::set<int64_t>> flagged_here;
    std::set<int64_t> failed_here;
    bool other_failures = false, computed_here = false;
    const json notes = file.doc.value("notes", json::object());
    for (const TestResult& r : run.results) {
      if (r.suite != file.name || r.status == "skipped") continue;
      if (r.status == "fail") {
        // §CONF.4 a divergence is something computed differently: a
        // mismatch, or an invalid input accepted. A refusal alone shows
        // nothing computed (a port refusing every valid layout would be
        // "diagnosed" with whichever flag marks exactly the valid tests), so
        // refusals count only beside a computed difference; a crash, a
        // timeout, garbage or a missing output rules a diagnosis out.
        if (r.reason == "mismatch" || r.reason == "accepted invalid input") {
          computed_here = true;
        } else if (r.reason != "refused valid input") {
          other_failures = true;
        }
        failed_here.insert(r.tc_id);
        failed_all.insert(r.suite + ":" + std::to_string(r.tc_id));
      }
      for (const std::string& f : r.flags) {
        if (!notes.contains(f) || notes[f].value("bugType", "") != "KNOWN_DIVERGENCE") continue;
        flagged_here[f].insert(r.tc_id);
        flagged[f].insert(r.suite + ":" + std::to_string(r.tc_id));
        description[f] = notes[f].value("description", "");
      }
    }
    if (other_failures || (!failed_here.empty() && !computed_here)) any_other_failure = true;
    if (failed_here.empty() || other_failures || !computed_here) continue;
    // Evidence needs contrast: among the tests that ran, some lack the flag
    // (and passed). A run of one flagged test that fails proves nothing.
    size_t ran = 0;
    for (const TestResult& r : run.results) ran += r.suite == file.name && r.status != "skipped";
    std::vector<std::string> matching;
    for (const auto& [f, ids] : flagged_here) {
      if (ids == failed_here && ran > ids.size()) matching.push_back(f);
    }
    if (!matching.empty()) {
      std::string line = "the " + std::to_string(failed_here.size()) + " failure(s) are exactly the tests flagged " + matching[0];
      for (size_t i = 1; i < matching.size(); ++i) line += (i + 1 == matching.size() ? " and exactly those flagged " : ", ") + matching[i];
      line += matching.size() > 1 ? " (these divergences flag the same tests here)" : "";
      for (const std::string& f : matching) line += "\n" + f + ": " + description[f];
      v.diagnoses[file.name].push_back(line);
    }
  }
  if (failed_all.empty() || any_other_failure) return;
  size_t ran_all = 0;
  for (const TestResult& r : run.results) ran_all += r.suite != "contract" && r.status != "skipped";
  for (const auto& [f, ids] : flagged) {
    std::set<std::string> suites;
    for (const std::string& id : ids) suites.insert(id.substr(0, id.find(':')));
    if (ids == failed_all && suites.size() > 1 && ran_all > ids.size()) {  // one suite: its own diagnosis says it
      v.diagnoses[""].push_back("every failure of this run, and nothing else, is a test flagged " + f +
                                " (a catalogued divergence, spec/vectors.md §VEC.12): " + description[f]);
    }
  }
}

Verdict Decide(const Run& run, const RandomRun& random) {
  Verdict v;
  v.strict_stale = run.options.strict_stale;
  v.suite_problems = run.suite_problems;
  for (const TestResult& r : run.results) {
    if (r.suite.rfind("random:", 0) != 0) v.suites[r.suite].Add(r);
  }
  // §CONF.7 every random case is counted as it ran (random.counts); only the
  // failing ones are kept in run.results, for their reports.
  for (const auto& [label, c] : random.counts) v.suites[label].Merge(c);
  int64_t tested_total = 0;
  for (const auto& [suite, c] : v.suites) {
    if (suite == "contract") continue;
    v.total.Merge(c);
    tested_total += c.tested;
  }
  v.trivial = v.total.trivial;
  v.tested = tested_total;
  v.shard = run.options.shard;
  v.tallies = run.tallies;
  return v;
}

// ---------------------------------------------------------------- phase: before the run

// §CONF.4, §ERR.1 Everything that can stop the run is checked before any
// test: the report paths, the manifest, the spec version of every vector
// file, the suites asked for, the expected-failures file and the random
// options. Throws engram::Error (the run cannot start; nothing is written).
struct Inputs {
  Vectors vectors;
  ExpectFail expect_fail;
};

Inputs CheckBeforeTheRun(const Options& options) {
  CheckWritable(options.report_json, "--report-json");
  CheckWritable(options.junit, "--junit");
  if (!options.report_json.empty() && !options.junit.empty() &&
      fs::weakly_canonical(options.report_json) == fs::weakly_canonical(options.junit)) {
    throw Error("--report-json and --junit name the same file " + options.junit.string() + ": one would overwrite the other");
  }
  // §CONF.8 a level is the whole run's: one shard of several claims none.
  if (options.shard.Partial()) {
    const std::string which = "shard " + std::to_string(options.shard.index) + " of " + std::to_string(options.shard.count) +
                              " (" + options.shard.source + ")";
    if (!options.verdict_json.empty()) {
      throw Error("--verdict-json: " + which + " is not the run and claims no level; pass --verdict-json to engram report "
                  "merge, which judges the levels of every shard together (§CONF.8, §CONF.9)");
    }
    if (!options.require_levels.empty()) {
      throw Error("--require-level " + options.require_levels.front() + ": " + which + " is not the run and reaches no "
                  "level; pass --require-level to engram report merge (§CONF.8, §CONF.9)");
    }
  }
  // §CONF.8 the verdict record is a third report, checked alike.
  CheckWritable(options.verdict_json, "--verdict-json");
  for (const auto& [other, name] : {std::pair{&options.report_json, "--report-json"}, std::pair{&options.junit, "--junit"}}) {
    if (!options.verdict_json.empty() && !other->empty() &&
        fs::weakly_canonical(options.verdict_json) == fs::weakly_canonical(*other)) {
      throw Error(std::string("--verdict-json and ") + name + " name the same file " + options.verdict_json.string() +
                  ": one would overwrite the other");
    }
  }
  Inputs in{LoadVectors(options.vectors, options.suites), {}};
  const std::set<std::string> names = in.vectors.Names();
  for (const std::string& s : options.suites) {
    if (!names.count(s)) {
      std::string have;
      for (const std::string& n : names) have += (have.empty() ? "" : ", ") + n;
      throw Error("--suite " + s + ": the vectors have no such suite (they have: " + have + ")");
    }
  }
  in.expect_fail = LoadExpectFail(options.expect_fail, in.vectors);
  CheckSaveFailures(options.save_failures);
  if (options.random_only) {
    for (const std::string& s : options.suites) {
      if (vectors::FindRandomSuite(s) == nullptr) {
        std::string have;
        for (const vectors::RandomSuite& r : vectors::RandomSuites()) have += (have.empty() ? "" : ", ") + r.suite;
        throw Error("--suite " + s + " --random-only: the suite has no random generator (those with one: " + have + ")");
      }
    }
  }
  return in;
}

// §CONF.2 The handshake: the peer's info, and its claims checked against the
// protocol's suites, not against the files in this directory: a directory of
// saved failures (§CONF.7) holds one suite, and a port claiming more is still
// the same port. Throws engram::Error (the run cannot start).
Claims Handshake(Peer& peer, json& hello) {
  hello = peer.Hello();
  const std::vector<std::string> protocol = vectors::SuiteNames();
  return CheckHello(hello, std::set<std::string>(protocol.begin(), protocol.end()));
}

// ---------------------------------------------------------------- phase: the tests

// The fixed vectors (contracts, then every suite asked for) unless
// --random-only, then the random cases (§CONF.7), whose results and problems
// join the fixed ones'.
// §CONF.8 The tests of every suite in this share, per profile, whether run or
// not: a level names its tests, so those that --suite, --profile or
// --random-only left out are counted as not run.
void CountShareTests(Run& run) {
  for (const SuiteFile& file : run.vectors.suites) {
    int64_t total = 0;
    for (const json& group : file.doc["testGroups"]) total += static_cast<int64_t>(group["tests"].size());
    const auto [first, end] = ShardRange(total, run.options.shard.index, run.options.shard.count);
    int64_t position = -1;
    std::map<std::string, LevelTally>& tally = run.tallies[file.name];
    for (const json& group : file.doc["testGroups"]) {
      const std::string profile = group.contains("profile") && group["profile"].is_string() ? group["profile"].get<std::string>() : "";
      for (const json& t : group["tests"]) {
        ++position;
        if (position < first || position >= end) continue;
        const std::string own = t.contains("profile") && t["profile"].is_string() ? t["profile"].get<std::string>() : "";
        ++tally[own.empty() ? profile : own].tests;
      }
    }
  }
}

RandomRun RunTests(Run& run) {
  const Options& options = run.options;
  CountShareTests(run);
  if (!options.random_only) {
    RunContracts(run);
    for (const SuiteFile& file : run.vectors.suites) {
      if (options.suites.empty() || options.suites.count(file.name)) RunSuite(run, file);
    }
  }
  RandomRun random;
  if (options.random_cases > 0) {
    random = RunRandom(options, run.peer, run.claims, std::cerr);
    for (TestResult& r : random.results) run.results.push_back(std::move(r));
    for (const auto& [suite, list] : random.suite_problems) {
      for (const std::string& p : list) run.suite_problems[suite].push_back(p);
    }
  }
  return random;
}

// §CONF.7 The random part of the verdict: its lines, its JSON object, and the
// saved failures (a directory that cannot be written turns the verdict).
void AddRandom(const Options& options, const RandomRun& random, Verdict& verdict) {
  verdict.random_lines = random.lines;
  if (options.random_cases > 0) verdict.random = random.report;
  try {
    std::ostringstream saved;
    SaveFailures(options, random, saved);
    std::string line = saved.str();
    if (!line.empty()) verdict.random_lines.push_back(line.substr(0, line.size() - 1));
  } catch (const Error& e) {
    verdict.problems.push_back(std::string("the failing random cases could not be saved: ") + e.what());
  }
}

// ---------------------------------------------------------------- phase: shard record

// §CONF.9 item 2 What a merge needs of this process's share: what work it is
// part of (everything that changes which cases run or how they are judged),
// which share it ran, the counts and the problems found while running (not
// the verdict's judgement of the whole run's scope, which the merge makes
// from the sums), the digest of its requests, and the shrunk failing cases as
// recipes (rebuilt by the merge into one vectors directory).
json ShardRecord(const Run& run, const RandomRun& random, const json& hello, const Verdict& v) {
  const Options& o = run.options;
  json work = {{"seed", o.random_seed},
               {"seedDrawn", o.seed_drawn},
               {"casesPerSuite", o.random_cases},
               {"randomOnly", o.random_only},
               {"suites", o.suites},
               {"profile", o.profile ? json(*o.profile) : json()},
               {"features", o.features},
               {"generator", vectors::kRandomVersion},
               {"specVersion", vectors::kSpecVersion},
               {"vectorsManifestSha256", run.vectors.manifest_sha256},
               {"vectorsKind", v.vectors_kind},
               {"implementation", hello},
               {"expectFailSha256", o.expect_fail.empty() ? std::string() : Sha256Hex(ReadInputFile(o.expect_fail, InputKind::kExpectFail))},
               {"strictStale", o.strict_stale},
               {"accumulateMax", o.accumulate_max_n},
               {"maxTimeouts", o.max_consecutive_timeouts},
               {"maxRandomFailures", o.max_random_failures},
               {"shrinkCalls", o.shrink_calls}};
  // §CONF.9 only when given, so that the reports of runs without them keep their work record.
  if (o.random_seconds > 0) work["randomSeconds"] = o.random_seconds;
  if (o.max_shrunk >= 0) work["maxShrunk"] = o.max_shrunk;
  json vector_suites = json::array();
  for (const SuiteFile& f : run.vectors.suites) vector_suites.push_back(f.name);
  json cases = json::object();
  auto add_cases = [&](const std::map<std::string, std::pair<int64_t, int64_t>>& ranges,
                       const std::map<std::string, CaseDigest>& digests) {
    for (const auto& [label, range] : ranges) {
      const auto d = digests.find(label);
      const CaseDigest digest = d == digests.end() ? CaseDigest() : d->second;
      cases[label] = {{"begin", range.first}, {"end", range.second}, {"requests", digest.cases}, {"sha256Sum", digest.Hex()}};
    }
  };
  add_cases(run.ranges, run.digests);
  add_cases(random.ranges, random.digests);
  json counts = json::object();
  for (const auto& [label, c] : v.suites) counts[label] = CountsJson(c);
  json failing = json::object();
  for (const auto& [suite, list] : random.failing) {
    for (size_t i = 0; i < list.size(); ++i) {
      failing[suite].push_back({{"recipe", list[i].recipe}, {"comment", random.comments.at(suite).at(i)},
                                {"case", random.cases.at(suite).at(i)}, {"seed", o.random_seed}});
    }
  }
  return {{"index", o.shard.index},   {"count", o.shard.count},  {"source", o.shard.source},
          {"clean", v.ShardClean()},  {"work", work},            {"vectorSuites", vector_suites},
          {"randomAsked", random.asked}, {"cases", cases},       {"counts", counts},
          {"runProblems", run.suite_problems}, {"problems", v.problems}, {"failing", failing},
          {"levelTally", TalliesJson(run.tallies)}};
}

// ---------------------------------------------------------------- phase: reports

// §CONF.8 The options the verdict record names.
RunRecord RunRecordOf(const Options& o) {
  RunRecord r;
  r.suites = o.suites;
  r.profile = o.profile ? json(*o.profile) : json(nullptr);
  r.features = o.features;
  r.expect_fail = !o.expect_fail.empty();
  r.random_only = o.random_only;
  r.random_cases = o.random_cases;
  r.seed = o.random_seed;
  r.seed_drawn = o.seed_drawn;
  return r;
}

// §CONF.8 The date of the verdict record, UTC, to the second.
std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// §CONF.4, §ERR.1 The reports are staged (written and flushed beside their
// targets) before either is renamed into place and before the verdict is
// printed: a report that cannot be written turns the verdict, and both
// reports say the same.
void WriteReports(const Options& options, const json& hello, const Claims& claims, const std::vector<TestResult>& results,
                  Verdict& verdict, const std::vector<LevelOutcome>& levels) {
  std::vector<std::unique_ptr<StagedFile>> staged;
  const std::string date = UtcNow();
  auto stage = [&]() -> std::string {
    staged.clear();
    const std::pair<std::filesystem::path, std::string> reports[] = {
        {options.report_json, options.report_json.empty() ? "" : JsonReport(hello, results, verdict)},
        {options.junit, options.junit.empty() ? "" : JunitReport(results, verdict)},
        {options.verdict_json,
         options.verdict_json.empty() ? "" : VerdictRecord(claims, RunRecordOf(options), verdict, levels, date).dump(1) + "\n"}};
    for (const auto& [path, text] : reports) {
      if (path.empty()) continue;
      try {
        staged.push_back(std::make_unique<StagedFile>(path, text));
      } catch (const Error& e) {
        return e.what();
      }
    }
    return "";
  };
  if (const std::string problem = stage(); !problem.empty()) {
    verdict.problems.push_back("a report could not be written: " + problem);
    stage();  // best effort: what can still be written now says FAILED
  }
  for (auto& file : staged) {
    try {
      file->Commit();
    } catch (const Error& e) {
      verdict.problems.push_back(std::string("a report could not be written: ") + e.what());
    }
  }
}

}  // namespace

CheckedVectors CheckVectorsDirectory(const std::filesystem::path& dir, const std::set<std::string>& judged) {
  Vectors v = LoadVectors(dir, judged);
  CheckedVectors out{v.manifest_sha256, v.released, {}};
  for (SuiteFile& f : v.suites) out.suites.emplace(f.name, std::move(f.doc));
  return out;
}

// The run in its phases: the checks before it, the handshake, the tests, the
// verdict, the reports, the summary. A problem before the first test is exit 2
// with nothing written; after it, every problem is part of the verdict.
int RunConformance(const Options& options, std::ostream& out) {
  // §CONF.2 At the end of every run, however it ends, nothing the
  // implementation started is left running (process.h AdoptOrphans).
  struct EndLeftovers {
    ~EndLeftovers() {
      if (const std::string ended = EndOrphans(std::chrono::milliseconds(2000)); !ended.empty()) {
        std::cerr << "engram conform: " << ended << "\n";
      }
    }
  } end_leftovers;
  std::optional<Inputs> in;
  try {
    in = CheckBeforeTheRun(options);
  } catch (const Error& e) {
    std::cerr << "engram conform: " << e.what() << "\n";
    return 2;
  }
  Peer peer(options.command, options.timeout);
  Run run{options, in->vectors, in->expect_fail, peer, {}, {}, {}, {}, {}, {}};
  json hello;
  try {
    run.claims = Handshake(peer, hello);
  } catch (const Error& e) {
    std::cerr << "engram conform: " << e.what() << "\n";
    return 2;
  }
  out << "implementation: " << vectors::Short(json(run.claims.name)) << " " << vectors::Short(json(run.claims.version)) << "\n";

  const RandomRun random = RunTests(run);
  peer.Bye();

  Verdict verdict = Decide(run, random);
  // §VEC.13 What the tests were judged against.
  verdict.SetVectors(vectors::ClassifySet(run.vectors.manifest_sha256));
  AddRandom(options, random, verdict);
  verdict.shard_record = ShardRecord(run, random, hello, verdict);
  // §CONF.9 what needs the whole run (a suite in which nothing passed,
  // nothing tested at all) is not said of one shard: a shard's share of a
  // suite may hold only trivial tests. The merge decides it from the sums.
  if (!options.shard.Partial()) {
    Scope scope;
    for (const SuiteFile& file : run.vectors.suites) scope.vector_suites.push_back(file.name);
    scope.requested = options.suites;
    scope.random_only = options.random_only;
    scope.random_cases = options.random_cases;
    scope.random_asked = random.asked;
    DecideScope(scope, verdict);
  }
  Diagnose(run, verdict);
  // §CONF.8 The levels are the whole run's: a shard judges none (its
  // --verdict-json and --require-level are refused before the run).
  std::vector<LevelOutcome> levels;
  if (!options.shard.Partial()) {
    LevelScope scope{options.suites, options.random_only, options.random_cases, options.random_seed, options.seed_drawn};
    levels = JudgeLevels(verdict, scope);
    RequireLevels(options.require_levels, levels, verdict);
    verdict.level_lines = LevelLines(levels, options.require_levels);
  }
  WriteReports(options, hello, run.claims, run.results, verdict, levels);
  PrintSummary(run.results, verdict, options.expect_fail, out);
  // §CONF.9 a shard's exit status says whether anything failed in it (a
  // scheduler's task state); the run's verdict is the merge's.
  if (options.shard.Partial()) return verdict.ShardClean() ? 0 : 1;
  return verdict.Ok() ? 0 : 1;
}

}  // namespace engram::conform
