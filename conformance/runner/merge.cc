// spec/conformance.md §CONF.9 — `engram report merge`.
#include "conformance/runner/merge.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/fileio.h"
#include "base/sha256.h"
#include "conformance/runner/random_run.h"
#include "conformance/runner/report.h"
#include "conformance/runner/shard.h"
#include "reference/input_files.h"
#include "vectors/compare.h"
#include "vectors/generator.h"
#include "vectors/random_cases.h"

namespace engram::conform {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// A file written a piece at a time, created beside `near` (so that the final
// rename stays on one file system) and removed unless kept.
class TempFile {
 public:
  explicit TempFile(const fs::path& near) {
    const fs::path dir = near.parent_path().empty() ? fs::path(".") : near.parent_path();
    path_ = (dir / ("." + near.filename().string() + ".merge-XXXXXX")).string();
    const int fd = ::mkstemp(path_.data());
    if (fd < 0) throw Error(near.string() + ": cannot write in " + dir.string() + ": " + std::strerror(errno));
    file_ = ::fdopen(fd, "w+");
    if (file_ == nullptr) {
      ::close(fd);
      ::unlink(path_.c_str());
      throw Error(near.string() + ": fdopen: " + std::strerror(errno));
    }
  }
  ~TempFile() {
    if (file_ != nullptr) std::fclose(file_);
    if (!kept_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  void Write(std::string_view s) {
    if (std::fwrite(s.data(), 1, s.size(), file_) != s.size()) throw Error(path_ + ": write failed: " + std::strerror(errno));
  }
  // Appends what `other` holds (from its start).
  void Append(TempFile& other) {
    std::fflush(other.file_);
    std::rewind(other.file_);
    std::string buf(size_t{1} << 20, '\0');
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), other.file_)) > 0) Write(std::string_view(buf.data(), n));
    if (std::ferror(other.file_)) throw Error(other.path_ + ": read failed");
  }
  // §ERR.1 flushed, then renamed over `target`: whole or not at all.
  void CommitAs(const fs::path& target) {
    if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) throw Error(target.string() + ": write failed: " + std::strerror(errno));
    if (::rename(path_.c_str(), target.c_str()) != 0) throw Error(target.string() + ": cannot rename into place: " + std::strerror(errno));
    kept_ = true;
  }

 private:
  std::string path_;
  FILE* file_ = nullptr;
  bool kept_ = false;
};

// One result's JUnit testcase, as JunitReport writes it.
std::string JunitCase(const TestResult& r) {
  std::ostringstream x;
  x << "  <testcase classname=\"" << XmlEscape(r.suite) << "\" name=\"tc" << r.tc_id << "\" time=\"" << r.seconds << "\">";
  if (r.status == "fail") {
    x << "<failure type=\"" << XmlEscape(r.reason) << "\" message=\"" << XmlEscape(r.reason) << "\">" << XmlEscape(r.detail) << "</failure>";
  } else if (r.status == "skipped") {
    x << "<skipped message=\"" << XmlEscape(r.detail) << "\"/>";
  } else if (r.status != "pass") {
    x << "<system-out>" << XmlEscape(r.status + ": " + r.detail) << "</system-out>";
  }
  x << "</testcase>\n";
  return x.str();
}

// What the merge keeps of one shard: its report without the results, and
// the number of results it lists per suite.
struct ShardFile {
  std::string name;  // the path, for messages
  json head;
  std::map<std::string, int64_t> listed;
  int64_t index = 0, count = 0;
};

// Per suite: the JUnit testcases so far (a temporary file) and their counts.
struct JunitSuite {
  std::unique_ptr<TempFile> file;
  int64_t tests = 0, failures = 0, skipped = 0;
};

struct Streams {
  std::optional<TempFile> results;  // the merged "results" array's elements, one per line
  bool first_result = true;
  fs::path junit;
  std::map<std::string, JunitSuite> junit_suites;
  std::vector<TestResult> shown;  // the first three failures per suite and every stale result (PrintSummary)
  std::map<std::string, int> shown_failures;
};

TestResult ResultFrom(const json& r, const std::string& where) {
  TestResult t;
  if (!r.is_object() || !r.contains("suite") || !r["suite"].is_string() || !r.contains("tcId") ||
      !r["tcId"].is_number_integer() || !r.contains("status") || !r["status"].is_string()) {
    throw Error(where + ": a result without a string suite, an integer tcId and a string status: " + Short(r));
  }
  t.suite = r["suite"];
  t.tc_id = r["tcId"];
  t.status = r["status"];
  t.reason = r.value("reason", "");
  t.detail = r.value("detail", "");
  t.seconds = r.contains("seconds") && r["seconds"].is_number() ? r["seconds"].get<double>() : 0.0;
  return t;
}

// Reads one shard's report as a stream: each element of "results" is taken
// as it is parsed (written on, counted, then dropped), the rest is kept.
ShardFile ReadShard(const fs::path& path, Streams& streams) {
  ShardFile s;
  s.name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(s.name + ": cannot open for reading: " + std::strerror(errno));
  bool in_results = false;
  auto take = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    if (depth == 1 && event == json::parse_event_t::key) {
      in_results = parsed == "results";
      return true;
    }
    if (!in_results || depth != 2 || event != json::parse_event_t::object_end) return true;
    const TestResult r = ResultFrom(parsed, s.name);
    ++s.listed[r.suite];
    if (streams.results) {
      streams.results->Write(streams.first_result ? "  " : ",\n  ");
      streams.results->Write(parsed.dump(-1, ' ', false, json::error_handler_t::replace));
      streams.first_result = false;
    }
    if (!streams.junit.empty()) {
      JunitSuite& js = streams.junit_suites[r.suite];
      if (!js.file) js.file = std::make_unique<TempFile>(streams.junit);
      js.file->Write(JunitCase(r));
      ++js.tests;
      js.failures += r.status == "fail";
      js.skipped += r.status == "skipped";
    }
    if ((r.status == "fail" && streams.shown_failures[r.suite]++ < 3) || r.status == "stale") streams.shown.push_back(r);
    return false;  // dropped: memory does not grow with the results
  };
  try {
    s.head = json::parse(in, take);
  } catch (const json::exception& e) {
    throw Error(s.name + ": not a JSON report: " + e.what());
  }
  if (!s.head.is_object() || !s.head.contains("shard") || !s.head["shard"].is_object()) {
    throw Error(s.name + ": has no \"shard\" record (§CONF.9: write it with engram conform --report-json of this version)");
  }
  const json& rec = s.head["shard"];
  try {
    s.index = rec.at("index").get<int64_t>();
    s.count = rec.at("count").get<int64_t>();
    for (const char* key : {"work", "cases", "counts", "runProblems", "failing"}) {
      if (!rec.at(key).is_object()) throw Error(std::string("\"") + key + "\" is not an object");
    }
    if (!rec.at("problems").is_array() || !rec.at("vectorSuites").is_array() || !rec.at("randomAsked").is_number_integer()) {
      throw Error("\"problems\", \"vectorSuites\" or \"randomAsked\" has the wrong type");
    }
  } catch (const std::exception& e) {
    throw Error(s.name + ": the \"shard\" record is malformed: " + e.what());
  }
  return s;
}

std::string Joined(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

// §CONF.9 item 3 The refusals: the files must be every shard of one run,
// each once. Throws engram::Error.
void CheckOneRun(const std::vector<ShardFile>& shards) {
  const ShardFile& a = shards.front();
  const json& wa = a.head["shard"]["work"];
  std::map<int64_t, const ShardFile*> by_index;
  for (const ShardFile& s : shards) {
    const json& w = s.head["shard"]["work"];
    if (s.count != a.count) {
      throw Error("mixed shard counts: " + a.name + " is shard " + std::to_string(a.index) + " of " + std::to_string(a.count) +
                  ", " + s.name + " shard " + std::to_string(s.index) + " of " + std::to_string(s.count));
    }
    for (const auto& [key, value] : wa.items()) {
      if (!w.contains(key) || nlohmann::json::parse(w[key].dump()) != nlohmann::json::parse(value.dump())) {
        throw Error("not shards of one run: " + key + " differs: " + Short(value, 120) + " in " + a.name + ", " +
                    (w.contains(key) ? Short(w[key], 120) : std::string("missing")) + " in " + s.name);
      }
    }
    if (w.size() != wa.size()) throw Error("not shards of one run: " + s.name + " and " + a.name + " record different work keys");
    if (s.head["shard"]["vectorSuites"] != a.head["shard"]["vectorSuites"]) {
      throw Error("not shards of one run: the vector suites differ between " + a.name + " and " + s.name);
    }
    auto [it, inserted] = by_index.emplace(s.index, &s);
    if (!inserted) {
      throw Error("shard " + std::to_string(s.index) + " of " + std::to_string(s.count) + " given twice: " + it->second->name +
                  " and " + s.name + (it->second->name == s.name ? " (the same file)" : ""));
    }
  }
  std::vector<int64_t> missing;
  for (int64_t i = 0; i < a.count; ++i) {
    if (!by_index.count(i)) missing.push_back(i);
  }
  if (!missing.empty()) {
    throw Error("shard(s) " + Joined(missing) + " of " + std::to_string(a.count) + " missing: a merge needs every shard (" +
                std::to_string(shards.size()) + " given)");
  }
  // The case ranges of every suite: contiguous from 0, in shard order, each
  // the share §CONF.9 gives its index; random suites up to --random N.
  const json& cases0 = a.head["shard"]["cases"];
  for (const ShardFile& s : shards) {
    const json& c = s.head["shard"]["cases"];
    for (const auto& [label, r] : c.items()) {
      if (!cases0.contains(label)) throw Error(s.name + " ran cases of " + label + ", " + a.name + " has none (not shards of one run)");
    }
    for (const auto& [label, r] : cases0.items()) {
      if (!c.contains(label)) throw Error(a.name + " ran cases of " + label + ", " + s.name + " has none (not shards of one run)");
    }
  }
  for (const auto& [label, r0] : cases0.items()) {
    int64_t end = 0;
    const ShardFile* previous = nullptr;
    for (const auto& [index, s] : by_index) {
      const json& r = s->head["shard"]["cases"][label];
      const int64_t b = r.at("begin").get<int64_t>(), e = r.at("end").get<int64_t>();
      if (b < end) {
        throw Error("overlapping shards: " + label + " cases [" + std::to_string(b) + ", " + std::to_string(e) + ") of " + s->name +
                    " overlap [.., " + std::to_string(end) + ") of " + previous->name);
      }
      if (b > end || e < b) {
        throw Error("a gap in " + label + ": " + s->name + " starts at case " + std::to_string(b) + ", the shard before it ends at " +
                    std::to_string(end) + " (cases " + std::to_string(end) + " ... " + std::to_string(b - 1) + " ran nowhere)");
      }
      end = e;
      previous = s;
    }
    for (const auto& [index, s] : by_index) {
      const json& r = s->head["shard"]["cases"][label];
      const auto want = ShardRange(end, index, a.count);
      if (r["begin"].get<int64_t>() != want.first || r["end"].get<int64_t>() != want.second) {
        throw Error(s->name + ": " + label + " cases [" + r["begin"].dump() + ", " + r["end"].dump() + ") are not shard " +
                    std::to_string(index) + "'s share of " + std::to_string(end) + " ([" + std::to_string(want.first) + ", " +
                    std::to_string(want.second) + "))");
      }
    }
    if (label.rfind("random:", 0) == 0 && end != wa["casesPerSuite"].get<int64_t>()) {
      throw Error(label + ": the shards cover cases 0 ... " + std::to_string(end - 1) + " of --random " + wa["casesPerSuite"].dump());
    }
  }
  // Every result of a fixed suite is listed; of a random suite, the failing
  // ones: a report whose results were cut or edited does not merge.
  for (const ShardFile& s : shards) {
    for (const auto& [label, cj] : s.head["shard"]["counts"].items()) {
      const Counts c = CountsFromJson(cj);
      const bool random = label.rfind("random:", 0) == 0;
      const int64_t want = random ? c.failed : c.passed + c.failed + c.skipped + c.expected_fail + c.stale;
      const int64_t have = s.listed.count(label) ? s.listed.at(label) : 0;
      if (have != want) {
        throw Error(s.name + ": lists " + std::to_string(have) + " result(s) of " + label + " but its counts say " +
                    std::to_string(want) + " (a cut or edited report)");
      }
    }
    for (const auto& [label, n] : s.listed) {
      if (!s.head["shard"]["counts"].contains(label)) throw Error(s.name + ": lists results of " + label + " but has no counts for it");
    }
  }
}

// The replay line of shard 0 without its shard options: the whole run.
std::string WholeReplay(std::string line) {
  const size_t at = line.find(" --shard-index ");
  if (at != std::string::npos) {
    const size_t end = line.find(" --shard-count ", at);
    if (end != std::string::npos) {
      const size_t after = line.find(' ', end + 15);
      line.erase(at, (after == std::string::npos ? line.size() : after) - at);
    }
  }
  return line;
}

// The options of engram report merge, checked before any shard is read.
void CheckMergeOptions(const MergeOptions& o) {
  if (o.shards.empty()) throw Error("report merge: no shard reports given");
  for (const auto& [path, option] : {std::pair{o.report_json, "--report-json"}, std::pair{o.junit, "--junit"}}) {
    if (path.empty()) continue;
    for (const fs::path& s : o.shards) {
      std::error_code ec;
      if (fs::weakly_canonical(s, ec) == fs::weakly_canonical(path, ec)) {
        throw Error(std::string(option) + " " + path.string() + " is one of the shard reports: it would be overwritten");
      }
    }
  }
  if (!o.save_failures.empty()) {
    if (o.vectors.empty()) throw Error("--save-failures needs --vectors (the run's vectors: their schema/ goes with the failures)");
    CheckSaveFailures(o.save_failures);
  }
}

// §CONF.7 the shrunk failing cases of every shard, as one vectors directory.
// Returns the line that says where they are ("" when none was saved); a
// failure to save them is a problem of the run.
std::string SaveMergedFailures(const MergeOptions& o, const json& failing, const json& random, Verdict& v) {
  if (o.save_failures.empty() || failing.empty()) return "";
  std::vector<std::string> suites;
  std::map<std::string, std::pair<std::vector<vectors::RandomCase>, std::vector<std::string>>> built;
  try {
    for (const auto& [suite, list] : failing.items()) {
      const vectors::RandomSuite* gen = vectors::FindRandomSuite(suite);
      if (gen == nullptr) throw Error("no random generator for suite " + suite);
      suites.push_back(suite);
      for (const json& f : list) {
        built[suite].first.push_back(gen->build(f.at("recipe")));
        built[suite].second.push_back(f.at("comment").get<std::string>());
      }
    }
    auto doc = [&](const std::string& suite) {
      return vectors::RandomCasesDoc(*vectors::FindRandomSuite(suite), built.at(suite).first, built.at(suite).second,
                                     {"Failing random cases of the shards of one engram conform run, shrunk (spec/conformance.md §CONF.7, §CONF.9).",
                                      "Generated by: " + (random.is_object() ? random.value("replay", "") : std::string())});
    };
    std::ostringstream quiet;
    vectors::WriteVectorsDir(o.save_failures, suites, doc, o.vectors / "schema", quiet);
    return "merge: the shrunk failing case(s) of every shard are in " + o.save_failures.string() +
           "; replay them with: engram conform --vectors " + Quoted(o.save_failures.string()) + " <implementation>";
  } catch (const std::exception& e) {
    v.problems.push_back(std::string("the failing random cases could not be saved: ") + e.what());
  }
  return "";
}

// The merged reports. The head (verdict, sums) is known only now; the
// results were streamed into temporary files and are copied in after it.
void WriteMergedReports(const MergeOptions& o, const json& head_of_first, Streams& streams, const Verdict& v) {
  if (!o.report_json.empty()) {
    std::string head = JsonReport(head_of_first.value("implementation", json()), {}, v);
    const std::string empty = "\"results\": []";
    const size_t at = head.rfind(empty);
    if (at == std::string::npos) throw Error("report merge: the report has no results list (a bug)");
    TempFile target(o.report_json);
    target.Write(std::string_view(head).substr(0, at));
    target.Write("\"results\": [\n");
    target.Append(*streams.results);
    target.Write("\n ]");
    target.Write(std::string_view(head).substr(at + empty.size()));
    target.CommitAs(o.report_json);
  }
  if (!o.junit.empty()) {
    TempFile target(o.junit);
    target.Write("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"engram-conformance\">\n");
    std::set<std::string> names;
    for (const auto& [suite, js] : streams.junit_suites) names.insert(suite);
    for (const auto& [suite, list] : v.suite_problems) names.insert(suite);
    for (const std::string& suite : names) {
      std::vector<std::string> problems_here;
      if (auto it = v.suite_problems.find(suite); it != v.suite_problems.end()) problems_here = it->second;
      JunitSuite& js = streams.junit_suites[suite];
      const int64_t n = static_cast<int64_t>(problems_here.size());
      target.Write(" <testsuite name=\"" + XmlEscape(suite) + "\" tests=\"" + std::to_string(js.tests + n) + "\" failures=\"" +
                   std::to_string(js.failures + n) + "\" skipped=\"" + std::to_string(js.skipped) + "\">\n");
      for (const std::string& p : problems_here) {
        target.Write("  <testcase classname=\"" + XmlEscape(suite) + "\" name=\"suite\"><failure type=\"suite\" message=\"" + XmlEscape(p) +
                     "\">" + XmlEscape(p) + "</failure></testcase>\n");
      }
      if (js.file) target.Append(*js.file);
      target.Write(" </testsuite>\n");
    }
    target.Write("</testsuites>\n");
    target.CommitAs(o.junit);
  }
}

}  // namespace

int MergeReports(const MergeOptions& o, std::ostream& out) {
  CheckMergeOptions(o);
  Streams streams;
  if (!o.report_json.empty()) streams.results.emplace(o.report_json);
  streams.junit = o.junit;
  std::vector<ShardFile> shards;
  for (const fs::path& p : o.shards) shards.push_back(ReadShard(p, streams));
  CheckOneRun(shards);
  const json& work = shards.front().head["shard"]["work"];
  if (!o.vectors.empty()) {
    const std::string digest = Sha256Hex(ReadInputFile(o.vectors / "MANIFEST.sha256", InputKind::kManifest));
    if (digest != work["vectorsManifestSha256"]) {
      throw Error("--vectors " + o.vectors.string() + ": its MANIFEST.sha256 is " + digest + ", the shards ran " +
                  work["vectorsManifestSha256"].get<std::string>());
    }
  }

  // The sums: counts, digests, problems found while running, random figures.
  Verdict v;
  json cases = json::object(), failing = json::object(), run_problems = json::object(), problems = json::array();
  int64_t random_asked = 0;
  std::map<std::string, CaseDigest> digests;
  json random = shards.front().head.value("random", json());
  if (random.is_object()) {
    for (auto& [suite, r] : random["suites"].items()) {
      for (const char* k : {"drawn", "asked", "otherProfile", "failing"}) r[k] = 0;
      r["shrunk"] = json::array();
      r.erase("cases");
    }
    random["replay"] = WholeReplay(random.value("replay", ""));
  }
  std::vector<const ShardFile*> ordered;
  for (const ShardFile& s : shards) ordered.push_back(&s);
  std::sort(ordered.begin(), ordered.end(), [](const ShardFile* x, const ShardFile* y) { return x->index < y->index; });
  for (const ShardFile* s : ordered) {
    const json& rec = s->head["shard"];
    const std::string tag = " (shard " + std::to_string(s->index) + " of " + std::to_string(s->count) + ")";
    for (const auto& [label, c] : rec["counts"].items()) v.suites[label].Merge(CountsFromJson(c));
    for (const auto& [label, list] : rec["runProblems"].items()) {
      for (const json& p : list) {
        v.suite_problems[label].push_back(p.get<std::string>() + tag);
        run_problems[label].push_back(p.get<std::string>() + tag);
      }
    }
    for (const json& p : rec["problems"]) {
      v.problems.push_back(p.get<std::string>() + tag);
      problems.push_back(p.get<std::string>() + tag);
    }
    for (const auto& [label, c] : rec["cases"].items()) {
      CaseDigest d;
      if (!CaseDigest::FromHex(c.at("sha256Sum").get<std::string>(), d)) throw Error(s->name + ": " + label + ": sha256Sum is not 64 hex digits");
      d.cases = c.at("requests").get<int64_t>();
      digests[label].Add(d);
      cases[label] = {{"begin", 0}, {"end", c["end"]}};
    }
    for (const auto& [suite, list] : rec["failing"].items()) {
      for (const json& f : list) failing[suite].push_back(f);
    }
    random_asked += rec["randomAsked"].get<int64_t>();
    if (random.is_object() && s->head.contains("random")) {
      for (const auto& [suite, r] : s->head["random"]["suites"].items()) {
        json& m = random["suites"][suite];
        for (const char* k : {"drawn", "asked", "otherProfile", "failing"}) m[k] = m.value(k, int64_t{0}) + r.value(k, int64_t{0});
        for (const json& x : r.value("shrunk", json::array())) m["shrunk"].push_back(x);
      }
    }
  }
  CaseDigest all;
  for (const auto& [label, d] : digests) {
    cases[label]["requests"] = d.cases;
    cases[label]["sha256Sum"] = d.Hex();
    all.Add(d);
  }
  for (const auto& [label, c] : v.suites) {
    if (label == "contract") continue;
    v.total.Merge(c);
  }
  v.tested = v.total.tested;
  v.trivial = v.total.trivial;
  v.strict_stale = work.value("strictStale", false);
  // §VEC.13 The kind from the digest, never from the shards' own label.
  v.SetVectors(vectors::ClassifySet(work.value("vectorsManifestSha256", "")));
  v.shard = {0, 1, "engram report merge of " + std::to_string(shards.size()) + " shard(s)"};
  const std::string saved_line = SaveMergedFailures(o, failing, random, v);
  Scope scope;
  for (const json& name : shards.front().head["shard"]["vectorSuites"]) scope.vector_suites.push_back(name.get<std::string>());
  for (const json& name : work["suites"]) scope.requested.insert(name.get<std::string>());
  scope.random_only = work.value("randomOnly", false);
  scope.random_cases = work.value("casesPerSuite", int64_t{0});
  scope.random_asked = random_asked;
  json counts = json::object();
  for (const auto& [label, c] : v.suites) counts[label] = CountsJson(c);
  DecideScope(scope, v);
  v.random = random;
  v.random_lines.push_back("merge: " + std::to_string(shards.size()) + " shard(s) of one run, seed " + work["seed"].dump() + ", " +
                           work["casesPerSuite"].dump() + " random case(s) per suite; " + std::to_string(all.cases) +
                           " request(s), their digest (a sum of SHA-256, §CONF.9) " + all.Hex());
  if (!saved_line.empty()) v.random_lines.push_back(saved_line);
  if (random.is_object()) v.random_lines.push_back("merge: replay the whole run with: " + random.value("replay", ""));
  std::vector<std::string> merged;
  for (const ShardFile* s : ordered) merged.push_back(s->name);
  v.shard_record = {{"index", 0}, {"count", 1}, {"source", v.shard.source}, {"clean", v.ShardClean()}, {"work", work},
                    {"vectorSuites", shards.front().head["shard"]["vectorSuites"]}, {"randomAsked", random_asked},
                    {"cases", cases}, {"counts", counts}, {"runProblems", run_problems}, {"problems", problems},
                    {"failing", failing}, {"merged", merged}, {"requests", all.cases}, {"sha256Sum", all.Hex()}};

  WriteMergedReports(o, shards.front().head, streams, v);
  PrintSummary(streams.shown, v, "", out);
  return v.Ok() ? 0 : 1;
}

}  // namespace engram::conform
