// spec/conformance.md — the conformance runner.
#include "conformance/runner/runner.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "conformance/cli/fileio.h"
#include "conformance/runner/process.h"
#include "reference/contract.h"
#include "reference/error.h"
#include "vectors/generator.h"

namespace engram::conform {
namespace {

// Vectors are read keeping their key order: §CONF.1 splits inputs from
// outputs by position relative to "result".
using json = nlohmann::ordered_json;

// §CONF.1 Types whose outputs sit inside a list of steps: the list key, the
// output keys of each element, and whether elements are lists themselves.
struct Nested {
  std::string list;
  std::vector<std::string> keys;
  bool two_levels;
};

std::vector<Nested> NestedOutputs(const std::string& type) {
  if (type == "HashStateTest") return {{"steps", {"rows", "positionAfter", "historyAfter"}, false}};
  if (type == "HashHandoffTest") {
    return {{"segments", {"rows", "historyOut"}, false}, {"microBatches", {"rows", "historyOut"}, true}};
  }
  return {};
}

bool IsMeta(const std::string& key) {
  return key == "tcId" || key == "comment" || key == "flags" || key == "specRef";
}

json StripKeys(const json& element, const std::vector<std::string>& keys) {
  json out = element;
  for (const std::string& k : keys) out.erase(k);
  return out;
}

std::string Short(const json& v) {
  std::string s = v.dump();
  return s.size() > 160 ? s.substr(0, 157) + "..." : s;
}

// The first element where `expected` and `actual` differ, as "path: expected X, got Y".
std::string FirstDifference(const json& expected, const json& actual, const std::string& path) {
  if (expected.is_array() && actual.is_array()) {
    for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
      std::string d = FirstDifference(expected[i], actual[i], path + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
    if (expected.size() != actual.size()) {
      return path + ": expected " + std::to_string(expected.size()) + " elements, got " + std::to_string(actual.size());
    }
    return "";
  }
  if (expected.is_object() && actual.is_object()) {
    for (const auto& [k, v] : expected.items()) {
      if (!actual.contains(k)) return path + "." + k + ": missing";
      std::string d = FirstDifference(v, actual[k], path + "." + k);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (expected != actual) return path + ": expected " + Short(expected) + ", got " + Short(actual);
  return "";
}

struct ExpectFail {
  std::map<std::string, std::set<int64_t>> ids;
  bool Contains(const std::string& suite, int64_t id) const {
    auto it = ids.find(suite);
    return it != ids.end() && it->second.count(id) != 0;
  }
};

ExpectFail LoadExpectFail(const std::filesystem::path& path) {
  ExpectFail out;
  if (path.empty()) return out;
  const json doc = json::parse(ReadFile(path), nullptr, false);
  if (doc.is_discarded()) throw Error(path.string() + ": malformed JSON");
  if (doc.is_object()) {
    for (const auto& [suite, list] : doc.items()) {
      if (!list.is_array()) throw Error(path.string() + ": key '" + suite + "': expected a list of tcIds");
      for (const json& id : list) {
        if (!id.is_number_integer()) throw Error(path.string() + ": key '" + suite + "': " + id.dump() + " is not a tcId");
        out.ids[suite].insert(id.get<int64_t>());
      }
    }
  } else if (doc.is_array()) {
    for (const json& e : doc) {
      const std::string s = e.is_string() ? e.get<std::string>() : "";
      const size_t colon = s.rfind(':');
      if (colon == std::string::npos) throw Error(path.string() + ": entry " + e.dump() + " is not \"suite:tcId\"");
      try {
        out.ids[s.substr(0, colon)].insert(std::stoll(s.substr(colon + 1)));
      } catch (const std::exception&) {
        throw Error(path.string() + ": entry " + e.dump() + " is not \"suite:tcId\"");
      }
    }
  } else {
    throw Error(path.string() + ": expected an object {suite: [tcId...]} or a list of \"suite:tcId\"");
  }
  return out;
}

// The implementation behind the protocol; restarted after a crash or timeout.
class Peer {
 public:
  Peer(std::vector<std::string> argv, std::chrono::milliseconds timeout) : argv_(std::move(argv)), timeout_(timeout) {}

  // §CONF.2 item 1. Throws engram::Error when the handshake fails.
  const json& Hello() {
    if (!process_) Start();
    return hello_;
  }

  struct Reply {
    json body;            // the response object when ok
    std::string failure;  // timeout | crashed | garbage (empty when ok)
    std::string detail;
  };

  Reply Call(const json& request, std::chrono::milliseconds timeout) {
    if (!process_) Start();
    Reply r;
    if (!process_->WriteLine(request.dump())) {
      r.failure = "crashed";
      r.detail = "the implementation " + process_->ExitDescription() + Tail();
      process_.reset();
      return r;
    }
    std::string line;
    switch (process_->ReadLine(line, timeout)) {
      case ChildProcess::ReadStatus::kTimeout:
        r.failure = "timeout";
        r.detail = "no answer within " + std::to_string(timeout.count()) + " ms" + Tail();
        process_.reset();
        return r;
      case ChildProcess::ReadStatus::kClosed:
        r.failure = "crashed";
        r.detail = "the implementation " + process_->ExitDescription() + Tail();
        process_.reset();
        return r;
      case ChildProcess::ReadStatus::kLine:
        break;
    }
    r.body = json::parse(line, nullptr, false);
    if (r.body.is_discarded() || !r.body.is_object()) {
      r.failure = "garbage";
      r.detail = "the answer is not a JSON object: " + Short(json(line));
      process_.reset();
    }
    return r;
  }

  void Bye() {
    if (process_) {
      process_->WriteLine(json{{"op", "bye"}}.dump());
      std::string line;
      process_->ReadLine(line, std::chrono::milliseconds(2000));
      process_.reset();
    }
  }

 private:
  std::string Tail() {
    std::string t = process_ ? process_->StderrTail() : "";
    return t.empty() ? "" : "; its stderr ends with: " + t;
  }

  void Start() {
    process_ = std::make_unique<ChildProcess>(argv_);
    process_->WriteLine(json{{"op", "hello"}, {"protocol", 1}}.dump());
    std::string line;
    auto status = process_->ReadLine(line, std::max(timeout_, std::chrono::milliseconds(30000)));
    if (status != ChildProcess::ReadStatus::kLine) {
      std::string why = status == ChildProcess::ReadStatus::kTimeout ? "no answer to hello" : process_->ExitDescription();
      std::string tail = process_->StderrTail();
      process_.reset();
      throw Error("handshake failed: " + why + (tail.empty() ? "" : "; stderr: " + tail));
    }
    json h = json::parse(line, nullptr, false);
    if (h.is_discarded() || !h.is_object()) throw Error("handshake failed: the answer to hello is not a JSON object: " + Short(json(line)));
    if (!h.contains("protocol") || h["protocol"] != 1) {
      throw Error("handshake failed: protocol " + (h.contains("protocol") ? h["protocol"].dump() : "missing") + " is not 1");
    }
    hello_ = h;
  }

  std::vector<std::string> argv_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<ChildProcess> process_;
  json hello_;
};

bool Claims(const json& hello, const std::string& key, const std::string& value) {
  if (!hello.contains(key) || !hello[key].is_array()) return false;
  for (const json& v : hello[key]) {
    if (v == value || v == "*") return true;
  }
  return false;
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out.push_back(c);
    }
  }
  return out;
}

void WriteJunit(const std::filesystem::path& path, const std::vector<TestResult>& results) {
  std::map<std::string, std::vector<const TestResult*>> by_suite;
  for (const TestResult& r : results) by_suite[r.suite].push_back(&r);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"engram-conformance\">\n";
  for (const auto& [suite, list] : by_suite) {
    size_t failures = 0, skipped = 0;
    for (const TestResult* r : list) {
      if (r->status == "fail") ++failures;
      if (r->status == "skipped") ++skipped;
    }
    x << " <testsuite name=\"" << XmlEscape(suite) << "\" tests=\"" << list.size() << "\" failures=\"" << failures
      << "\" skipped=\"" << skipped << "\">\n";
    for (const TestResult* r : list) {
      x << "  <testcase classname=\"" << XmlEscape(suite) << "\" name=\"tc" << r->tc_id << "\" time=\"" << r->seconds << "\">";
      if (r->status == "fail") {
        x << "<failure type=\"" << XmlEscape(r->reason) << "\" message=\"" << XmlEscape(r->reason) << "\">"
          << XmlEscape(r->detail) << "</failure>";
      } else if (r->status == "skipped") {
        x << "<skipped message=\"" << XmlEscape(r->detail) << "\"/>";
      } else if (r->status != "pass") {
        x << "<system-out>" << XmlEscape(r->status + ": " + r->detail) << "</system-out>";
      }
      x << "</testcase>\n";
    }
    x << " </testsuite>\n";
  }
  x << "</testsuites>\n";
  WriteFileAtomic(path, x.str());
}

}  // namespace

SplitTest SplitOrdered(const std::string& type, const json& test) {
  SplitTest out{json::object(), json::object()};
  bool after_result = false;
  const std::vector<Nested> nested = NestedOutputs(type);
  for (const auto& [key, value] : test.items()) {
    if (key == "result") {
      after_result = true;
      continue;
    }
    if (IsMeta(key) || key == "error") continue;
    const Nested* n = nullptr;
    for (const Nested& candidate : nested) {
      if (candidate.list == key) n = &candidate;
    }
    if (n != nullptr) {
      // The list is an input with its per-element outputs removed.
      json stripped = json::array();
      for (const json& element : value) {
        if (n->two_levels) {
          json inner = json::array();
          for (const json& e : element) inner.push_back(StripKeys(e, n->keys));
          stripped.push_back(inner);
        } else {
          stripped.push_back(StripKeys(element, n->keys));
        }
      }
      out.inputs[key] = stripped;
      if (test.value("result", "") == "valid") out.expected[key] = value;
      continue;
    }
    if (after_result) out.expected[key] = value;
    else out.inputs[key] = value;
  }
  return out;
}

std::string CompareOrdered(const std::string& type, const json& expected, const json& actual) {
  const std::vector<Nested> nested = NestedOutputs(type);
  for (const auto& [key, value] : expected.items()) {
    if (key == "intermediate" && !actual.contains(key)) continue;  // optional (§CONF.1)
    if (!actual.contains(key)) return "missing output '" + key + "'";
    const Nested* n = nullptr;
    for (const Nested& candidate : nested) {
      if (candidate.list == key) n = &candidate;
    }
    if (n == nullptr) {
      const std::string d = FirstDifference(value, actual[key], key);
      if (!d.empty()) return d;
      continue;
    }
    // Compare only the per-element output keys.
    const json& got = actual[key];
    if (!got.is_array() || got.size() != value.size()) {
      return key + ": expected " + std::to_string(value.size()) + " elements, got " + Short(got);
    }
    for (size_t i = 0; i < value.size(); ++i) {
      auto compare_element = [&](const json& e, const json& a, const std::string& path) -> std::string {
        for (const std::string& k : n->keys) {
          if (!e.contains(k)) continue;
          if (!a.is_object() || !a.contains(k)) return path + "." + k + ": missing";
          const std::string d = FirstDifference(e[k], a[k], path + "." + k);
          if (!d.empty()) return d;
        }
        return "";
      };
      const std::string path = key + "[" + std::to_string(i) + "]";
      if (n->two_levels) {
        if (!got[i].is_array() || got[i].size() != value[i].size()) return path + ": wrong number of elements";
        for (size_t j = 0; j < value[i].size(); ++j) {
          const std::string d = compare_element(value[i][j], got[i][j], path + "[" + std::to_string(j) + "]");
          if (!d.empty()) return d;
        }
      } else {
        const std::string d = compare_element(value[i], got[i], path);
        if (!d.empty()) return d;
      }
    }
  }
  return "";
}

int RunConformance(const Options& options, std::ostream& out) {
  // §CONF.4 The vectors are checked before anything is run.
  {
    std::ostringstream verify_log;
    std::vector<std::string> problems;
    const std::string manifest = ReadFile(options.vectors / "MANIFEST.sha256");
    std::istringstream lines(manifest);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.size() < 67) {
        problems.push_back("malformed manifest line: " + line);
        continue;
      }
      const std::string rel = line.substr(66);
      if (Sha256Hex(ReadFile(options.vectors / rel)) != line.substr(0, 64)) problems.push_back(rel + " does not match MANIFEST.sha256");
    }
    if (!problems.empty()) {
      for (const std::string& p : problems) out << "engram conform: " << p << "\n";
      out << "engram conform: refusing to run on vectors that fail their manifest\n";
      return 2;
    }
  }
  const ExpectFail expect_fail = LoadExpectFail(options.expect_fail);
  Peer peer(options.command, options.timeout);
  json hello;
  try {
    hello = peer.Hello();
  } catch (const Error& e) {
    out << "engram conform: " << e.what() << "\n";
    return 2;
  }
  // The implementation's answers are untrusted: show them as JSON, never assume their types.
  out << "implementation: " << (hello.contains("name") ? hello["name"].dump() : "?") << " "
      << (hello.contains("version") ? hello["version"].dump() : "") << "\n";

  std::vector<TestResult> results;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(options.vectors / vectors::kVectorsDir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());

  // §CON / §CONF.2 item 2: the implementation's contract against the vectors' layouts.
  std::set<std::string> contract_seen;
  for (const auto& path : files) {
    const json doc = json::parse(ReadFile(path));
    const std::string suite = path.stem().string();
    if (!options.suites.empty() && options.suites.count(suite) == 0) continue;
    for (const json& group : doc.value("testGroups", json::array())) {
      if (!group.contains("layers") || !group.contains("config") || !group.contains("profile")) continue;
      json key = {group["profile"], group["config"], group["compressedVocabSize"], group["compressedPad"]};
      if (!contract_seen.insert(key.dump()).second) continue;
      if (!Claims(hello, "profiles", group["profile"].get<std::string>())) continue;
      TestResult r{"contract", static_cast<int64_t>(contract_seen.size()), "pass", "", "", {}, 0};
      Peer::Reply reply = peer.Call({{"op", "contract"}, {"profile", group["profile"]}, {"config", group["config"]},
                                     {"compressedVocabSize", group["compressedVocabSize"]},
                                     {"compressedPad", group["compressedPad"]}},
                                    options.timeout);
      if (!reply.failure.empty()) {
        r.status = "fail";
        r.reason = reply.failure;
        r.detail = reply.detail;
      } else if ((!reply.body.contains("contract") || reply.body["contract"].is_null()) && reply.body.contains("layers")) {
        // No full contract (no tokenizer), but the layout the implementation computes.
        const std::string d = FirstDifference(group["layers"], reply.body["layers"], "layers");
        if (!d.empty()) {
          r.status = "fail";
          r.reason = "contract mismatch";
          r.detail = d;
        }
      } else if (!reply.body.contains("contract") || reply.body["contract"].is_null()) {
        r.status = "skipped";
        r.detail = "the implementation builds no contract";
      } else {
        try {
          const nlohmann::ordered_json c = nlohmann::ordered_json::parse(reply.body["contract"].dump());
          CheckContractForm(c, "the implementation's contract");
          std::string d;
          if (c["profile"] != group["profile"] || c["compressedVocabSize"] != group["compressedVocabSize"] ||
              c["layerIds"].size() != group["layers"].size()) {
            r.status = "skipped";
            r.detail = "the implementation's contract is for another configuration (" + c["profile"].dump() + ", V " +
                       c["compressedVocabSize"].dump() + ")";
          } else {
            d = FirstDifference(group["layers"], c["layers"], "layers");
          }
          if (!d.empty()) {
            r.status = "fail";
            r.reason = "contract mismatch";
            r.detail = d;
          }
        } catch (const Error& e) {
          r.status = "fail";
          r.reason = "bad contract";
          r.detail = e.what();
        }
      }
      r.detail = (r.detail.empty() ? "" : r.detail + " ") + "(" + suite + ", " + group.value("comment", "") + ")";
      results.push_back(r);
    }
  }

  for (const auto& path : files) {
    const std::string suite = path.stem().string();
    if (!options.suites.empty() && options.suites.count(suite) == 0) continue;
    const json doc = json::parse(ReadFile(path));
    const json notes = doc.value("notes", json::object());
    if (suite == "accumulated") {
      for (const json& group : doc.value("testGroups", json::array())) {
        for (const json& t : group.value("tests", json::array())) {
          TestResult r{suite, t.value("tcId", int64_t{0}), "pass", "", "", t.value("flags", std::vector<std::string>{}), 0};
          if (!Claims(hello, "suites", suite) ||
              (group.contains("profile") && !Claims(hello, "profiles", group["profile"].get<std::string>()))) {
            r.status = "skipped";
            r.detail = "not claimed";
          } else if (options.profile && group.value("profile", "") != *options.profile) {
            continue;
          } else if (t.value("n", int64_t{0}) > options.accumulate_max_n) {
            r.status = "skipped";
            r.detail = "n = " + std::to_string(t.value("n", int64_t{0})) + " exceeds --accumulate-max";
          } else {
            json g = group;
            g.erase("tests");
            const auto t0 = std::chrono::steady_clock::now();
            Peer::Reply reply = peer.Call({{"op", "accumulate"}, {"kind", t["kind"]}, {"group", g}, {"n", t["n"]}, {"seed", t["seed"]}},
                                          options.accumulate_timeout);
            r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (!reply.failure.empty()) {
              r.status = "fail";
              r.reason = reply.failure;
              r.detail = reply.detail;
            } else if (reply.body.contains("unsupported")) {
              r.status = "skipped";
              r.detail = reply.body["unsupported"].dump();
            } else if (!reply.body.contains("sha256") || reply.body["sha256"] != t["sha256"]) {
              r.status = "fail";
              r.reason = "mismatch";
              r.detail = "sha256 over " + std::to_string(t.value("n", int64_t{0})) + " positions: expected " +
                         t.value("sha256", "") + ", got " + reply.body.value("sha256", json()).dump();
            }
          }
          results.push_back(r);
        }
      }
      continue;
    }
    for (const json& group : doc.value("testGroups", json::array())) {
      const std::string type = group.value("type", "");
      json g = group;
      g.erase("tests");
      const bool profile_filtered = options.profile && group.contains("profile") && group["profile"] != *options.profile;
      if (profile_filtered) continue;
      const bool claimed = Claims(hello, "suites", suite) &&
                           (!group.contains("profile") || Claims(hello, "profiles", group["profile"].get<std::string>()));
      for (const json& t : group.value("tests", json::array())) {
        TestResult r{suite, t.value("tcId", int64_t{0}), "pass", "", "", t.value("flags", std::vector<std::string>{}), 0};
        if (!claimed) {
          r.status = "skipped";
          r.detail = "suite or profile not claimed by the implementation";
          results.push_back(r);
          continue;
        }
        const SplitTest split = SplitOrdered(type, t);
        const bool valid = t.value("result", "") == "valid";
        const auto t0 = std::chrono::steady_clock::now();
        Peer::Reply reply = peer.Call({{"op", "test"}, {"suite", suite}, {"type", type}, {"tcId", r.tc_id}, {"group", g},
                                       {"test", split.inputs}},
                                      options.timeout);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!reply.failure.empty()) {
          r.status = "fail";
          r.reason = reply.failure;
          r.detail = reply.detail;
        } else if (reply.body.contains("unsupported")) {
          r.status = "skipped";
          r.detail = "unsupported: " + reply.body["unsupported"].dump();
        } else if (reply.body.contains("refused")) {
          if (valid) {
            r.status = "fail";
            r.reason = "refused valid input";
            r.detail = "the implementation refused: " + reply.body["refused"].dump();
          }
        } else if (!reply.body.contains("outputs")) {
          r.status = "fail";
          r.reason = "garbage";
          r.detail = "the answer has none of outputs/refused/unsupported: " + Short(reply.body);
        } else if (!valid) {
          r.status = "fail";
          r.reason = "accepted invalid input";
          r.detail = "the vector marks this input invalid (it must be refused)";
          if (t.contains("error")) r.detail += "; the reference says: " + t["error"].get<std::string>();
        } else {
          const std::string d = CompareOrdered(type, split.expected, reply.body["outputs"]);
          if (!d.empty()) {
            r.status = "fail";
            r.reason = d.rfind("missing output", 0) == 0 ? "missing output" : "mismatch";
            r.detail = d;
            if (t.contains("intermediate")) r.detail += "\n    intermediate values: " + Short(t["intermediate"]);
          }
        }
        if (r.status == "fail") {
          for (const std::string& f : r.flags) {
            if (notes.contains(f)) r.detail += "\n    flag " + f + " (" + notes[f].value("bugType", "") + "): " + notes[f].value("description", "");
          }
        }
        // §CONF.4 expected failures and stale entries.
        if (expect_fail.Contains(suite, r.tc_id)) {
          if (r.status == "fail") r.status = "expected-fail";
          else if (r.status == "pass") {
            r.status = "stale";
            r.detail = "listed as an expected failure but passes";
          }
        }
        results.push_back(r);
      }
    }
  }
  peer.Bye();

  // Summary per suite.
  std::map<std::string, std::map<std::string, int>> counts;
  std::map<std::string, std::vector<const TestResult*>> failures;
  int failed = 0, stale = 0;
  for (const TestResult& r : results) {
    counts[r.suite][r.status]++;
    if (r.status == "fail") {
      ++failed;
      failures[r.suite].push_back(&r);
    }
    if (r.status == "stale") ++stale;
  }
  for (const auto& [suite, c] : counts) {
    out << suite << ": ";
    bool first = true;
    for (const char* s : {"pass", "fail", "skipped", "expected-fail", "stale"}) {
      auto it = c.find(s);
      if (it == c.end()) continue;
      out << (first ? "" : ", ") << it->second << " " << s;
      first = false;
    }
    out << "\n";
    const auto& f = failures[suite];
    for (size_t i = 0; i < f.size() && i < 3; ++i) {
      out << "  FAIL tcId " << f[i]->tc_id << " (" << f[i]->reason << "): " << f[i]->detail << "\n";
    }
    if (f.size() > 3) out << "  ... and " << (f.size() - 3) << " more failures (see --report-json)\n";
  }
  for (const TestResult& r : results) {
    if (r.status == "stale") out << "  STALE " << r.suite << ":" << r.tc_id << " passes but is listed in " << options.expect_fail.string() << "\n";
  }
  out << (failed == 0 ? "conformance: OK" : "conformance: " + std::to_string(failed) + " failure(s)") << " (" << results.size()
      << " results)\n";

  if (!options.report_json.empty()) {
    json report = {{"implementation", hello}, {"results", json::array()}};
    for (const TestResult& r : results) {
      report["results"].push_back({{"suite", r.suite}, {"tcId", r.tc_id}, {"status", r.status}, {"reason", r.reason},
                                   {"detail", r.detail}, {"flags", r.flags}, {"seconds", r.seconds}});
    }
    WriteFileAtomic(options.report_json, report.dump(1) + "\n");
  }
  if (!options.junit.empty()) WriteJunit(options.junit, results);
  if (failed > 0) return 1;
  if (stale > 0 && options.strict_stale) return 1;
  return 0;
}

}  // namespace engram::conform
