// spec/conformance.md §CONF.9 — `engram report merge`: the shards' reports
// of one run made into the run's verdict, reports and verdict record.
//
// A report is a file anyone can edit, and reports are not signed: the merge
// trusts nothing it reads. Every input rule of §ERR holds (a regular file
// within a size limit, unique keys, bounded depth); every count is recounted
// from the listed results and bounded by the shard's ranges; every tcId lies
// in its shard's range and is listed once in the whole run; the versions are
// this build's; the kind of the vectors is decided from their digest; a
// saved recipe is rebuilt only within the size of the case the generator
// drew. What a forger who recomputes all of it consistently can still write
// is said in §CONF.9 item 5.
#include "conformance/runner/merge.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/fileio.h"
#include "base/json_depth.h"
#include "base/sha256.h"
#include "conformance/runner/random_run.h"
#include "conformance/runner/report.h"
#include "conformance/runner/shard.h"
#include "conformance/runner/verdict_record.h"
#include "reference/input_files.h"
#include "vectors/compare.h"
#include "vectors/generator.h"
#include "vectors/manifest.h"
#include "vectors/random_cases.h"

namespace engram::conform {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

// §ERR.4 The largest shard report the merge reads: about 16,000 failing
// cases with answers cut at their 64 KiB (§ERR.3), far beyond a run that
// stops at its first failures, and a bound on what a file can make it do.
constexpr uint64_t kMaxReportBytes = uint64_t{1} << 30;

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

[[noreturn]] void Bad(const std::string& file, const std::string& field, const std::string& what) {
  throw Error(file + ": " + field + ": " + what + " (§CONF.9: not a report engram conform wrote, or an edited one)");
}

// §ERR.4-§ERR.6 A report read as a stream of JSON events (one pass, memory
// for its head, not its results): nesting deeper than §ERR.6 allows and a
// repeated key are refused as they are met, naming the file; each element of
// the top-level "results" list is built alone, handed to `on_result` and
// dropped.
class ReportReader {
 public:
  ReportReader(std::string source, std::function<void(json&&)> on_result)
      : source_(std::move(source)), on_result_(std::move(on_result)) {}
  json root;

  bool null() { return Value(nullptr); }
  bool boolean(bool v) { return Value(v); }
  bool number_integer(json::number_integer_t v) { return Value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(v); }
  bool number_float(json::number_float_t v, const std::string&) { return Value(v); }
  bool string(std::string& v) { return Value(std::move(v)); }
  bool binary(json::binary_t&) { return Value(nullptr); }
  bool start_object(std::size_t) { return Open(json::object()); }
  bool start_array(std::size_t) { return Open(json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(std::string& k) {
    Level& l = levels_.back();
    if (!l.keys.insert(k).second) {
      throw Error(source_ + ": duplicate key '" + k + "' in " + (Path().empty() ? "the top-level object" : "the object at " + Path()) +
                  " (§ERR.5: JSON objects must not repeat a key)");
    }
    l.key = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw Error(source_ + ": not a JSON report: " + e.what());
  }

 private:
  struct Level {
    json* value;
    std::set<std::string> keys;
    std::string key;  // of an object: the key being read
    size_t index = 0;  // of an array: the elements before the one being read
    bool results = false;  // the top-level "results" list: its elements are handed out
  };
  // Where the reader is, cut after 120 characters (a path 256 levels deep is noise).
  std::string Path() const {
    std::string p;
    for (size_t i = 0; i + 1 < levels_.size() && p.size() <= 120; ++i) {
      if (levels_[i].value->is_object()) {
        p += (p.empty() ? "" : ".") + levels_[i].key;
      } else {
        p += "[" + std::to_string(levels_[i].index) + "]";
      }
    }
    return p.size() > 120 ? p.substr(0, 120) + "..." : p;
  }
  // Where a new value goes: into the innermost container, or (an element of
  // "results") into a value of its own.
  json* Place(json&& v) {
    if (levels_.empty()) {
      root = std::move(v);
      return &root;
    }
    Level& l = levels_.back();
    if (l.results) {
      element_ = std::move(v);
      return &element_;
    }
    if (l.value->is_object()) return &((*l.value)[l.key] = std::move(v));
    l.value->push_back(std::move(v));
    return &l.value->back();
  }
  bool Value(json&& v) {
    if (!levels_.empty() && levels_.back().results) {
      ++levels_.back().index;
      on_result_(std::move(v));
      return true;
    }
    Place(std::move(v));
    if (!levels_.empty() && levels_.back().value->is_array()) ++levels_.back().index;
    return true;
  }
  bool Open(json&& v) {
    // §ERR.6 before the level is opened: nothing deeper is ever built.
    if (levels_.size() + 1 > kMaxJsonDepth) {
      throw Error(source_ + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at " + Path() + " (§ERR.6)");
    }
    const bool results = levels_.size() == 1 && levels_[0].value->is_object() && levels_[0].key == "results" && v.is_array();
    json* at = Place(std::move(v));
    levels_.push_back({at, {}, "", 0, results});
    return true;
  }
  bool Close() {
    levels_.pop_back();
    if (!levels_.empty() && levels_.back().results) {
      ++levels_.back().index;
      on_result_(std::move(element_));
      element_ = json();
    } else if (!levels_.empty() && levels_.back().value->is_array()) {
      ++levels_.back().index;
    }
    return true;
  }
  std::string source_;
  std::function<void(json&&)> on_result_;
  std::vector<Level> levels_;
  json element_;
};

// §ERR.4 A shard report, opened without blocking (a FIFO is refused before
// any read) and only when it is a regular file within kMaxReportBytes.
FILE* OpenReport(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw Error(path.string() + ": cannot open for reading: " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path.string() + ": not a regular file (" + FileTypeName(st.st_mode) + "), not a shard report (§ERR.4)");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxReportBytes) {
    ::close(fd);
    throw Error(path.string() + ": " + std::to_string(st.st_size) + " bytes is larger than " +
                std::to_string(kMaxReportBytes >> 20) + " MiB, the limit for a shard report (§ERR.4)");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  FILE* f = ::fdopen(fd, "rb");
  if (f == nullptr) {
    ::close(fd);
    throw Error(path.string() + ": fdopen: " + std::strerror(errno));
  }
  return f;
}

// What the merge keeps of one shard: its report without the results, and
// what the results say, recounted.
struct ShardFile {
  std::string name;  // the path, for messages
  json head;
  int64_t index = 0, count = 0;
  std::map<std::string, Counts> counts;                       // the shard's record, checked
  std::map<std::string, Counts> recount;                      // per label, from the listed results
  LevelTallies tally, tally_recount;                          // §CONF.8 the record's, and from the results
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;  // "cases": [begin, end)
  std::map<std::string, int64_t> requests;                    // "cases": requests
  std::vector<std::pair<std::string, int64_t>> ids;           // (label, tcId) of every listed result
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

// One listed result, every field the merge counts checked.
TestResult ResultFrom(const json& r, const std::string& file, int64_t n) {
  const std::string where = "results[" + std::to_string(n) + "]";
  if (!r.is_object()) Bad(file, where, "not an object: " + vectors::Short(r));
  auto need = [&](const char* key, bool (json::*is)() const noexcept, const char* what) -> const json& {
    if (!r.contains(key) || !(r[key].*is)()) Bad(file, where + "." + key, std::string("must be ") + what + ", got " + (r.contains(key) ? vectors::Short(r[key]) : "nothing"));
    return r[key];
  };
  TestResult t;
  t.suite = need("suite", &json::is_string, "a string").get<std::string>();
  const json& id = need("tcId", &json::is_number_integer, "an integer");
  if (id.is_number_unsigned() && id.get<uint64_t>() > uint64_t{INT64_MAX}) Bad(file, where + ".tcId", "outside int64: " + id.dump());
  t.tc_id = id.get<int64_t>();
  t.status = need("status", &json::is_string, "a string").get<std::string>();
  if (t.status != "pass" && t.status != "fail" && t.status != "skipped" && t.status != "expected-fail" && t.status != "stale") {
    Bad(file, where + ".status", "\"" + t.status + "\" is not pass, fail, skipped, expected-fail or stale");
  }
  t.reason = need("reason", &json::is_string, "a string").get<std::string>();
  t.valid = need("valid", &json::is_boolean, "true or false").get<bool>();
  if (r.contains("trivial")) t.trivial = need("trivial", &json::is_boolean, "true or false").get<bool>();
  if (r.contains("profile")) t.profile = need("profile", &json::is_string, "a string").get<std::string>();
  t.detail = r.contains("detail") && r["detail"].is_string() ? r["detail"].get<std::string>() : "";
  t.seconds = r.contains("seconds") && r["seconds"].is_number() ? r["seconds"].get<double>() : 0.0;
  return t;
}

// Reads one shard's report as a stream: each element of "results" is taken
// as it is parsed (checked, counted, written on, then dropped), the rest is
// kept.
ShardFile ReadShard(const fs::path& path, Streams& streams) {
  ShardFile s;
  s.name = path.string();
  std::unique_ptr<FILE, int (*)(FILE*)> in(OpenReport(path), &std::fclose);
  int64_t n = 0;
  ReportReader reader(s.name, [&](json&& parsed) {
    const TestResult r = ResultFrom(parsed, s.name, n++);
    s.recount[r.suite].Add(r);
    if (r.suite != "contract" && r.suite.rfind("random:", 0) != 0) s.tally_recount[r.suite][r.profile].Add(r);
    s.ids.emplace_back(r.suite, r.tc_id);
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
  });
  json::sax_parse(in.get(), &reader);
  s.head = std::move(reader.root);
  if (!s.head.is_object() || !s.head.contains("shard") || !s.head["shard"].is_object()) {
    throw Error(s.name + ": has no \"shard\" record (§CONF.9: write it with engram conform --report-json of this version)");
  }
  return s;
}

std::string Joined(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

// ---------------------------------------------------------------- the shard record, checked

// Typed access to a shard record's fields, each refusal naming the file and
// the field.
struct Fields {
  const std::string& file;
  const json& Get(const json& obj, const std::string& where, const std::string& key) const {
    if (!obj.is_object() || !obj.contains(key)) Bad(file, where + "." + key, "missing");
    return obj[key];
  }
  int64_t Count(const json& v, const std::string& field) const {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX})) {
      Bad(file, field, "must be an integer, got " + vectors::Short(v));
    }
    const int64_t n = v.get<int64_t>();
    if (n < 0) Bad(file, field, "is negative: " + std::to_string(n));
    return n;
  }
  int64_t Count(const json& obj, const std::string& where, const std::string& key) const {
    return Count(Get(obj, where, key), where + "." + key);
  }
  const json& Object(const json& obj, const std::string& where, const std::string& key) const {
    const json& v = Get(obj, where, key);
    if (!v.is_object()) Bad(file, where + "." + key, "must be an object, got " + vectors::Short(v));
    return v;
  }
  const json& Array(const json& obj, const std::string& where, const std::string& key) const {
    const json& v = Get(obj, where, key);
    if (!v.is_array()) Bad(file, where + "." + key, "must be a list, got " + vectors::Short(v));
    return v;
  }
  void Strings(const json& list, const std::string& field) const {
    if (!list.is_array()) Bad(file, field, "must be a list of strings, got " + vectors::Short(list));
    for (const json& e : list) {
      if (!e.is_string()) Bad(file, field, "holds " + vectors::Short(e) + ", not a string");
    }
  }
  bool Bool(const json& obj, const std::string& where, const std::string& key) const {
    const json& v = Get(obj, where, key);
    if (!v.is_boolean()) Bad(file, where + "." + key, "must be true or false, got " + vectors::Short(v));
    return v.get<bool>();
  }
  std::string String(const json& obj, const std::string& where, const std::string& key) const {
    const json& v = Get(obj, where, key);
    if (!v.is_string()) Bad(file, where + "." + key, "must be a string, got " + vectors::Short(v));
    return v.get<std::string>();
  }
};

bool Hex64(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// §CONF.4 Counts that can be true: none negative, the skip reasons adding up
// to the skips, tested and trivial among the passes, the refused among them.
Counts CheckedCounts(const Fields& f, const json& j, const std::string& where) {
  if (!j.is_object()) Bad(f.file, where, "must be an object, got " + vectors::Short(j));
  Counts c;
  c.passed = f.Count(j, where, "passed");
  c.failed = f.Count(j, where, "failed");
  c.skipped = f.Count(j, where, "skipped");
  c.expected_fail = f.Count(j, where, "expectedFail");
  c.stale = f.Count(j, where, "stale");
  c.tested = f.Count(j, where, "tested");
  c.trivial = f.Count(j, where, "trivial");
  c.refused = f.Count(j, where, "refused");
  c.sent = f.Count(j, where, "sent");
  int64_t skips = 0;
  for (const auto& [why, n] : f.Object(j, where, "skipReasons").items()) {
    c.skip_reasons[why] = f.Count(n, where + ".skipReasons." + why);
    skips += c.skip_reasons[why];
  }
  const int64_t total = c.passed + c.failed + c.skipped + c.expected_fail + c.stale;
  if (skips != c.skipped) Bad(f.file, where, "the skip reasons add up to " + std::to_string(skips) + ", not to skipped " + std::to_string(c.skipped));
  if (c.tested + c.trivial > c.passed + c.stale) Bad(f.file, where, "more tests tested or trivial than passed");
  if (c.refused > c.passed) Bad(f.file, where, "more refusals than passes");
  if (c.sent > total) Bad(f.file, where, "more tests sent than counted");
  return c;
}

bool SameCounts(const Counts& a, const Counts& b) {
  return a.passed == b.passed && a.failed == b.failed && a.skipped == b.skipped && a.expected_fail == b.expected_fail &&
         a.stale == b.stale && a.tested == b.tested && a.trivial == b.trivial && a.refused == b.refused && a.sent == b.sent &&
         a.skip_reasons == b.skip_reasons;
}

int64_t Total(const Counts& c) { return c.passed + c.failed + c.skipped + c.expected_fail + c.stale; }

std::string CountsText(const Counts& c) {
  return CountsJson(c).dump();
}

// §CONF.9 item 4 The parts of a shard record, each checked with the types and
// bounds the runner writes (CheckShard below puts them together).
// The work: this build's versions, and a vectors kind that is its digest's.
const json& CheckWork(const ShardFile& s, const Fields& f, const json& rec) {
  f.String(rec, "shard", "source");
  const json& w = f.Object(rec, "shard", "work");
  const std::string spec = f.String(w, "shard.work", "specVersion"), generator = f.String(w, "shard.work", "generator");
  if (spec != vectors::kSpecVersion || generator != vectors::kRandomVersion) {
    throw Error(s.name + ": ran spec " + spec + " with generator " + generator + "; this engram implements spec " +
                vectors::kSpecVersion + " and " + vectors::kRandomVersion +
                " (§CONF.9: shards are merged by the engram that ran them, whose rules judged them)");
  }
  const std::string digest = f.String(w, "shard.work", "vectorsManifestSha256");
  if (!Hex64(digest)) Bad(s.name, "shard.work.vectorsManifestSha256", "not 64 lower-case hex digits: " + digest);
  const std::string kind = f.String(w, "shard.work", "vectorsKind");
  if (const std::string is = vectors::ClassifySet(digest).Describe(); kind != is) {
    Bad(s.name, "shard.work.vectorsKind", "says \"" + kind + "\" but the manifest digest " + digest + " is that of " + is +
                                              " (§VEC.13: the kind is the digest's)");
  }
  f.Count(w, "shard.work", "seed");
  f.Bool(w, "shard.work", "seedDrawn");
  if (f.Count(w, "shard.work", "casesPerSuite") > 100000000) Bad(s.name, "shard.work.casesPerSuite", "above --random's 10^8");
  f.Bool(w, "shard.work", "randomOnly");
  f.Strings(f.Get(w, "shard.work", "suites"), "shard.work.suites");
  if (const json& p = f.Get(w, "shard.work", "profile"); !p.is_null() && !p.is_string()) Bad(s.name, "shard.work.profile", "not a string");
  f.Strings(f.Get(w, "shard.work", "features"), "shard.work.features");
  f.String(w, "shard.work", "expectFailSha256");
  f.Bool(w, "shard.work", "strictStale");
  for (const char* k : {"accumulateMax", "maxTimeouts", "maxRandomFailures", "shrinkCalls"}) f.Count(w, "shard.work", k);
  if (w.contains("maxShrunk")) f.Count(w, "shard.work", "maxShrunk");
  if (w.contains("randomSeconds") && !(w["randomSeconds"].is_number() && w["randomSeconds"].get<double>() > 0)) {
    Bad(s.name, "shard.work.randomSeconds", "not a positive number");
  }
  try {
    const std::vector<std::string> names = vectors::SuiteNames();
    CheckHello(f.Get(w, "shard.work", "implementation"), std::set<std::string>(names.begin(), names.end()));
  } catch (const Error& e) {
    Bad(s.name, "shard.work.implementation", e.what());
  }
  return w;
}

// The ranges it ran, and its requests.
void CheckRanges(ShardFile& s, const Fields& f, const json& rec) {
  for (const auto& [label, r] : f.Object(rec, "shard", "cases").items()) {
    const std::string where = "shard.cases." + label;
    const int64_t b = f.Count(r, where, "begin"), e = f.Count(r, where, "end"), n = f.Count(r, where, "requests");
    if (b > e) Bad(s.name, where, "begins at " + std::to_string(b) + " after its end " + std::to_string(e));
    if (n > e - b) Bad(s.name, where + ".requests", std::to_string(n) + " requests for " + std::to_string(e - b) + " cases");
    if (!Hex64(f.String(r, where, "sha256Sum"))) Bad(s.name, where + ".sha256Sum", "not 64 lower-case hex digits");
    s.ranges[label] = {b, e};
    s.requests[label] = n;
  }
}

// The counts: possible, within the ranges, and what the listed results say;
// every listed tcId in the range of its shard.
void CheckCounts(ShardFile& s, const Fields& f, const json& rec, bool random_run) {
  for (const auto& [label, cj] : f.Object(rec, "shard", "counts").items()) {
    const std::string where = "shard.counts." + label;
    const Counts c = CheckedCounts(f, cj, where);
    s.counts[label] = c;
    const auto range = s.ranges.find(label);
    if (range == s.ranges.end()) Bad(s.name, where, "counts of cases the shard did not run (no shard.cases." + label + ")");
    const int64_t size = range->second.second - range->second.first;
    if (Total(c) > size) {
      Bad(s.name, where, std::to_string(Total(c)) + " results counted for the " + std::to_string(size) + " case(s) of its range");
    }
    const bool random = label.rfind("random:", 0) == 0;
    if (random && !random_run) Bad(s.name, where, "random cases counted in a run without --random");
    const Counts listed = s.recount.count(label) ? s.recount.at(label) : Counts{};
    if (random) {
      // Of a random suite only the failing cases are listed (§CONF.7).
      if (Total(listed) != listed.failed || listed.failed != c.failed) {
        Bad(s.name, where, "counts " + std::to_string(c.failed) + " failing case(s) but lists " + std::to_string(Total(listed)) +
                               " result(s), " + std::to_string(listed.failed) + " of them failing (a cut or edited report)");
      }
      if (c.expected_fail != 0 || c.stale != 0 || c.sent != Total(c)) Bad(s.name, where, "random cases are all sent and never expected failures");
      if (s.requests[label] != Total(c)) {
        Bad(s.name, "shard.cases." + label + ".requests", std::to_string(s.requests[label]) + " requests for " +
                                                              std::to_string(Total(c)) + " counted cases");
      }
    } else {
      if (!SameCounts(listed, c)) {
        Bad(s.name, where, "the listed results count " + CountsText(listed) + ", the record says " + CountsText(c) +
                               " (a cut or edited report)");
      }
      if (label != "contract" && s.requests[label] != c.sent) {
        Bad(s.name, "shard.cases." + label + ".requests", std::to_string(s.requests[label]) + " requests for " +
                                                              std::to_string(c.sent) + " tests sent");
      }
    }
  }
  for (const auto& [label, c] : s.recount) {
    if (!s.counts.count(label)) Bad(s.name, "results", "lists results of " + label + " but the record has no counts for it");
  }
  // Every listed tcId lies in the range of its shard (tcId = position + 1).
  for (const auto& [label, id] : s.ids) {
    const auto& [b, e] = s.ranges.at(label);
    if (id < b + 1 || id > e) {
      Bad(s.name, "results", label + " tcId " + std::to_string(id) + " is outside the shard's range (cases " + std::to_string(b + 1) +
                                 " ... " + std::to_string(e) + ")");
    }
  }
}

// The failing recipes: of suites with a generator, of cases of the range.
void CheckFailing(ShardFile& s, const Fields& f, const json& rec, const json& w) {
  for (const auto& [suite, list] : f.Object(rec, "shard", "failing").items()) {
    const std::string where = "shard.failing." + suite;
    if (vectors::FindRandomSuite(suite) == nullptr) Bad(s.name, where, "no random generator for suite " + suite);
    if (!list.is_array()) Bad(s.name, where, "must be a list");
    const auto range = s.ranges.find("random:" + suite);
    if (range == s.ranges.end()) Bad(s.name, where, "failing cases of a random suite the shard did not run");
    if (static_cast<int64_t>(list.size()) > s.counts["random:" + suite].failed) Bad(s.name, where, "more recipes than failing cases");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = where + "[" + std::to_string(i) + "]";
      f.Object(list[i], at, "recipe");
      f.String(list[i], at, "comment");
      if (f.Count(list[i], at, "seed") != w["seed"].get<int64_t>()) Bad(s.name, at + ".seed", "is not the shard's seed");
      const int64_t c = f.Count(list[i], at, "case");
      if (c < range->second.first + 1 || c > range->second.second) Bad(s.name, at + ".case", std::to_string(c) + " is outside the shard's range");
    }
  }
}

// §CONF.8 the fixed vectors per suite and profile: possible, the share's
// size, and what the listed results say.
void CheckLevelTally(ShardFile& s, const Fields& f, const json& rec) {
  for (const auto& [suite, profiles] : f.Object(rec, "shard", "levelTally").items()) {
    if (!profiles.is_object()) Bad(s.name, "shard.levelTally." + suite, "must be an object");
    int64_t tests = 0;
    for (const auto& [profile, t] : profiles.items()) {
      const std::string where = "shard.levelTally." + suite + "." + (profile.empty() ? "\"\"" : profile);
      LevelTally& c = s.tally[suite][profile];
      c.tests = f.Count(t, where, "tests");
      c.run = f.Count(t, where, "run");
      c.failed = f.Count(t, where, "failed");
      c.skipped = f.Count(t, where, "skipped");
      c.tested = f.Count(t, where, "tested");
      if (c.run > c.tests || c.failed + c.skipped + c.tested > c.run) Bad(s.name, where, "more results than tests");
      LevelTally listed = s.tally_recount.count(suite) && s.tally_recount[suite].count(profile) ? s.tally_recount[suite][profile] : LevelTally{};
      listed.tests = c.tests;
      if (!(listed == c)) Bad(s.name, where, "does not match the listed results of " + suite);
      tests += c.tests;
    }
    if (auto range = s.ranges.find(suite); range != s.ranges.end() && tests != range->second.second - range->second.first) {
      Bad(s.name, "shard.levelTally." + suite, std::to_string(tests) + " tests, but the shard's range of " + suite + " holds " +
                                                   std::to_string(range->second.second - range->second.first));
    }
  }
  for (const auto& [suite, profiles] : s.tally_recount) {
    for (const auto& [profile, t] : profiles) {
      if (!s.tally.count(suite) || !s.tally[suite].count(profile)) {
        Bad(s.name, "shard.levelTally", "has no entry for " + suite + " (" + (profile.empty() ? "no profile" : profile) + "), whose results are listed");
      }
    }
  }
}

// §CONF.7 the random report: its figures are the counts'.
void CheckRandomReport(ShardFile& s, const Fields& f, bool random_run, int64_t random_asked) {
  const json& random = s.head.contains("random") ? s.head["random"] : json();
  if (random_run) {
    if (!random.is_object()) Bad(s.name, "random", "missing in a run with --random");
    int64_t asked_sum = 0;
    for (const auto& [suite, r] : f.Object(random, "random", "suites").items()) {
      const std::string where = "random.suites." + suite;
      const std::string label = "random:" + suite;
      const int64_t drawn = f.Count(r, where, "drawn"), asked = f.Count(r, where, "asked"),
                    other = f.Count(r, where, "otherProfile"), failing = f.Count(r, where, "failing");
      if (!s.counts.count(label)) Bad(s.name, where, "a random suite without counts");
      const Counts& c = s.counts[label];
      const auto& [b, e] = s.ranges[label];
      if (asked != Total(c) || failing != c.failed || asked + other > drawn || drawn > e - b) {
        Bad(s.name, where, "drawn " + std::to_string(drawn) + ", asked " + std::to_string(asked) + ", failing " +
                               std::to_string(failing) + " do not fit its counts " + CountsText(c) + " and range [" +
                               std::to_string(b) + ", " + std::to_string(e) + ")");
      }
      asked_sum += asked;
    }
    for (const auto& [label, c] : s.counts) {
      if (label.rfind("random:", 0) == 0 && !random["suites"].contains(label.substr(7))) Bad(s.name, "random.suites", "has no " + label.substr(7));
    }
    if (asked_sum != random_asked) {
      Bad(s.name, "shard.randomAsked", std::to_string(random_asked) + ", but the random suites asked " + std::to_string(asked_sum));
    }
  } else if (!random.is_null() || random_asked != 0) {
    Bad(s.name, "random", "random cases in a run without --random");
  }
}

// §CONF.9 item 4 Every field of a shard record, with the types and bounds the
// runner writes, and its counts against what it lists and what it ran.
void CheckShard(ShardFile& s) {
  const Fields f{s.name};
  const json& rec = s.head["shard"];
  s.index = f.Count(rec, "shard", "index");
  s.count = f.Count(rec, "shard", "count");
  if (s.count < 1 || s.count > (int64_t{1} << 20) || s.index >= s.count) {
    Bad(s.name, "shard", "index " + std::to_string(s.index) + " of " + std::to_string(s.count) + " is not a shard");
  }
  const json& w = CheckWork(s, f, rec);
  f.Strings(f.Array(rec, "shard", "vectorSuites"), "shard.vectorSuites");
  const int64_t random_asked = f.Count(rec, "shard", "randomAsked");
  CheckRanges(s, f, rec);
  const bool random_run = w["casesPerSuite"].get<int64_t>() > 0;
  CheckCounts(s, f, rec, random_run);
  // Problems found while running.
  for (const auto& [label, list] : f.Object(rec, "shard", "runProblems").items()) f.Strings(list, "shard.runProblems." + label);
  f.Strings(f.Array(rec, "shard", "problems"), "shard.problems");
  CheckFailing(s, f, rec, w);
  CheckLevelTally(s, f, rec);
  CheckRandomReport(s, f, random_run, random_asked);
}

// §CONF.9 item 4 The refusals: the files must be every shard of one run,
// each once, with no tcId listed twice. Throws engram::Error.
void CheckOneRun(const std::vector<ShardFile>& shards) {
  const ShardFile& a = shards.front();
  const json& wa = a.head["shard"]["work"];
  // §CONF.8 shards that each drew their seed (no --seed) ran fresh cases of
  // their own seed: the seeds differ, and that is the one difference allowed.
  bool all_drawn = true;
  for (const ShardFile& s : shards) all_drawn = all_drawn && s.head["shard"]["work"]["seedDrawn"].get<bool>();
  std::map<int64_t, const ShardFile*> by_index;
  for (const ShardFile& s : shards) {
    const json& w = s.head["shard"]["work"];
    if (s.count != a.count) {
      throw Error("mixed shard counts: " + a.name + " is shard " + std::to_string(a.index) + " of " + std::to_string(a.count) +
                  ", " + s.name + " shard " + std::to_string(s.index) + " of " + std::to_string(s.count));
    }
    for (const auto& [key, value] : wa.items()) {
      if (key == "seed" && all_drawn) continue;
      if (!w.contains(key) || nlohmann::json::parse(w[key].dump()) != nlohmann::json::parse(value.dump())) {
        throw Error("not shards of one run: " + key + " differs: " + vectors::Short(value, 120) + " in " + a.name + ", " +
                    (w.contains(key) ? vectors::Short(w[key], 120) : std::string("missing")) + " in " + s.name);
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
  for (const ShardFile& s : shards) {
    for (const auto& [label, r] : s.ranges) {
      if (!a.ranges.count(label)) throw Error(s.name + " ran cases of " + label + ", " + a.name + " has none (not shards of one run)");
    }
    for (const auto& [label, r] : a.ranges) {
      if (!s.ranges.count(label)) throw Error(a.name + " ran cases of " + label + ", " + s.name + " has none (not shards of one run)");
    }
  }
  for (const auto& [label, r0] : a.ranges) {
    int64_t end = 0;
    const ShardFile* previous = nullptr;
    for (const auto& [index, s] : by_index) {
      const auto [b, e] = s->ranges.at(label);
      if (b < end) {
        throw Error("overlapping shards: " + label + " cases [" + std::to_string(b) + ", " + std::to_string(e) + ") of " + s->name +
                    " overlap [.., " + std::to_string(end) + ") of " + previous->name);
      }
      if (b > end) {
        throw Error("a gap in " + label + ": " + s->name + " starts at case " + std::to_string(b) + ", the shard before it ends at " +
                    std::to_string(end) + " (cases " + std::to_string(end) + " ... " + std::to_string(b - 1) + " ran nowhere)");
      }
      end = e;
      previous = s;
    }
    for (const auto& [index, s] : by_index) {
      const auto [b, e] = s->ranges.at(label);
      const auto want = ShardRange(end, index, a.count);
      if (b != want.first || e != want.second) {
        throw Error(s->name + ": " + label + " cases [" + std::to_string(b) + ", " + std::to_string(e) + ") are not shard " +
                    std::to_string(index) + "'s share of " + std::to_string(end) + " ([" + std::to_string(want.first) + ", " +
                    std::to_string(want.second) + "))");
      }
    }
    if (label.rfind("random:", 0) == 0 && end != wa["casesPerSuite"].get<int64_t>()) {
      throw Error(label + ": the shards cover cases 0 ... " + std::to_string(end - 1) + " of --random " + wa["casesPerSuite"].dump());
    }
  }
  // No tcId is listed twice, in one shard or across them (a shard's report
  // given again under another index lists its neighbour's tcIds).
  std::map<std::string, std::map<int64_t, const ShardFile*>> seen;
  for (const ShardFile& s : shards) {
    for (const auto& [label, id] : s.ids) {
      auto [it, inserted] = seen[label].emplace(id, &s);
      if (!inserted) {
        throw Error(label + " tcId " + std::to_string(id) + " is listed twice: in " + it->second->name +
                    (it->second == &s ? " (twice)" : " and in " + s.name) + " (§CONF.9: each case runs in one shard, once)");
      }
    }
  }
}

// §CONF.8 With --vectors: the tests of every suite, per profile, as the
// files hold them (the files checked against the manifest), for the shards'
// tallies to add up to.
std::map<std::string, std::map<std::string, int64_t>> FileTallies(const fs::path& dir) {
  const vectors::Manifest manifest = vectors::ReadManifest(dir);
  if (!manifest.problems.empty()) throw Error("--vectors " + dir.string() + ": " + manifest.problems.front());
  std::map<std::string, std::map<std::string, int64_t>> out;
  for (const vectors::ManifestEntry& entry : manifest.entries) {
    const fs::path rel(entry.rel);
    if (rel.parent_path() != vectors::kVectorsDir || rel.extension() != ".json") continue;
    const std::string bytes = vectors::ReadListedFile(dir, entry);
    if (Sha256Hex(bytes) != entry.digest) throw Error("--vectors " + dir.string() + ": " + entry.rel + " does not match MANIFEST.sha256");
    const json doc = ParseOrderedJson(bytes, (dir / rel).string());
    std::map<std::string, int64_t>& t = out[rel.stem().string()];
    if (!doc.is_object() || !doc.contains("testGroups") || !doc["testGroups"].is_array()) continue;
    for (const json& g : doc["testGroups"]) {
      if (!g.is_object() || !g.contains("tests") || !g["tests"].is_array()) continue;
      const std::string gp = g.contains("profile") && g["profile"].is_string() ? g["profile"].get<std::string>() : "";
      for (const json& test : g["tests"]) {
        const std::string own = test.is_object() && test.contains("profile") && test["profile"].is_string() ? test["profile"].get<std::string>() : "";
        ++t[own.empty() ? gp : own];
      }
    }
  }
  return out;
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

// ---------------------------------------------------------------- saved failures

// The shape of a recipe, for RecipeWithin: per path (object keys, "[]" for
// the elements of a list), the longest list and the largest integer of a key.
struct Shape {
  std::map<std::string, size_t> lists;
  std::map<std::string, unsigned __int128> ints;
  size_t scalars = 0;
};

unsigned __int128 Magnitude(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  const int64_t x = v.get<int64_t>();
  return x < 0 ? static_cast<unsigned __int128>(-(static_cast<__int128>(x))) : static_cast<unsigned __int128>(x);
}

// The keys of the generators' recipes (vectors/random_*.cc) that are sizes:
// what a build's cost grows with, and what shrinking only ever makes smaller.
// Other integers are values (ids, seeds, bit patterns) that shrinking may move
// either way (towards a pad, to 1.0's bits).
bool SizeKey(const std::string& key) {
  static const std::set<std::string> keys = {"maxNgram", "heads", "hc",    "kernel",  "dilation", "dim",     "width",
                                             "in",       "hidden", "out",  "count",   "capacity", "world",   "columns",
                                             "headDim",  "rows",   "k",    "position"};
  return keys.count(key) != 0;
}

void Measure(const json& v, const std::string& path, bool keyed, Shape& s) {
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) Measure(x, path + "." + k, SizeKey(k), s);
  } else if (v.is_array()) {
    s.lists[path] = std::max(s.lists[path], v.size());
    for (const json& x : v) Measure(x, path + "[]", false, s);
  } else {
    ++s.scalars;
    if (keyed && v.is_number_integer()) s.ints[path] = std::max(s.ints[path], Magnitude(v));
  }
}

}  // namespace

std::string RecipeOutside(const json& recipe, const json& drawn) {
  // §CONF.7 shrinking takes only candidates smaller than the case it came
  // from (a list shorter, a size smaller): a saved recipe is at most the size
  // of the case the generator drew at its index (as many values, no longer a
  // list, no larger a size). Sizes are what make a build cost: a recipe
  // larger than its case is not rebuilt.
  Shape r, d;
  Measure(recipe, "", false, r);
  Measure(drawn, "", false, d);
  if (r.scalars > d.scalars) {
    return std::to_string(r.scalars) + " values, more than the " + std::to_string(d.scalars) + " of the case drawn at its index";
  }
  size_t longest = 0;
  unsigned __int128 largest = 2;  // a size shrinks towards 2 as well as 1 or 0 (V / 2 or 2)
  for (const auto& [p, n] : d.lists) longest = std::max(longest, n);
  for (const auto& [p, n] : d.ints) largest = std::max(largest, n);
  for (const auto& [p, n] : r.lists) {
    const auto it = d.lists.find(p);
    const size_t limit = it == d.lists.end() ? longest : it->second;
    if (n > limit) return "the list " + p + " holds " + std::to_string(n) + " values, the case drawn at its index " + std::to_string(limit);
  }
  for (const auto& [p, n] : r.ints) {
    const auto it = d.ints.find(p);
    const unsigned __int128 limit = it == d.ints.end() ? largest : std::max<unsigned __int128>(it->second, 2);
    if (n > limit) return p + " is larger than in the case drawn at its index";
  }
  return "";
}

namespace {

// The options of engram report merge, checked before any shard is read.
void CheckMergeOptions(const MergeOptions& o) {
  if (o.shards.empty()) throw Error("report merge: no shard reports given");
  for (const auto& [path, option] : {std::pair{o.report_json, "--report-json"}, std::pair{o.junit, "--junit"},
                                     std::pair{o.verdict_json, "--verdict-json"}}) {
    if (path.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw Error(std::string(option) + " " + path.string() + ": is a directory");
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    if (!fs::is_directory(dir, ec)) throw Error(std::string(option) + " " + path.string() + ": the directory " + dir.string() + " does not exist");
    for (const fs::path& s : o.shards) {
      if (fs::weakly_canonical(s, ec) == fs::weakly_canonical(path, ec)) {
        throw Error(std::string(option) + " " + path.string() + " is one of the shard reports: it would be overwritten");
      }
    }
  }
  const std::pair<fs::path, const char*> outs[] = {{o.report_json, "--report-json"}, {o.junit, "--junit"}, {o.verdict_json, "--verdict-json"}};
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = i + 1; j < 3; ++j) {
      std::error_code ec;
      if (!outs[i].first.empty() && !outs[j].first.empty() &&
          fs::weakly_canonical(outs[i].first, ec) == fs::weakly_canonical(outs[j].first, ec)) {
        throw Error(std::string(outs[i].second) + " and " + outs[j].second + " name the same file " + outs[i].first.string());
      }
    }
  }
  if (!o.save_failures.empty()) {
    if (o.vectors.empty()) throw Error("--save-failures needs --vectors (the run's vectors: their schema/ goes with the failures)");
    CheckSaveFailures(o.save_failures);
  }
}

// §CONF.7 the shrunk failing cases of every shard, as one vectors directory,
// each recipe checked against the case the generator drew at its index
// before it is built. Returns the line that says where they are ("" when
// none was saved); a failure to save them is a problem of the run.
std::string SaveMergedFailures(const MergeOptions& o, const json& failing, const json& random, const json& work, Verdict& v) {
  if (o.save_failures.empty() || failing.empty()) return "";
  std::vector<std::string> suites;
  std::map<std::string, std::pair<std::vector<vectors::RandomCase>, std::vector<std::string>>> built;
  std::set<std::string> declared;
  for (const json& f : work["features"]) declared.insert(f.get<std::string>());
  for (const json& f : work["implementation"].value("features", json::array())) {
    if (f.is_string()) declared.insert(f.get<std::string>());
  }
  try {
    for (const auto& [suite, list] : failing.items()) {
      const vectors::RandomSuite* gen = vectors::FindRandomSuite(suite);
      suites.push_back(suite);
      const std::set<std::string> mine = vectors::SuiteFeatures(*gen, declared);
      for (const json& f : list) {
        const int64_t index = f["case"].get<int64_t>() - 1;
        const uint64_t seed = f["seed"].get<uint64_t>();  // each shard's, when each drew its own
        const json drawn = mine.empty() || !gen->draw_declared ? gen->draw(seed, index) : gen->draw_declared(seed, index, mine);
        if (const std::string why = RecipeOutside(f["recipe"], drawn); !why.empty()) {
          throw Error(suite + " case " + std::to_string(index + 1) + ": the recipe is not one its case shrinks to (" + why +
                      "): not rebuilt");
        }
        built[suite].first.push_back(gen->build(f["recipe"]));
        built[suite].second.push_back(f["comment"].get<std::string>());
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

// §CONF.8 The date of the merged verdict record, UTC, to the second.
std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// §CONF.8 with --vectors, the tallies add up to the tests of the files.
void CheckVectorTallies(const MergeOptions& o, Verdict& v) {
  if (o.vectors.empty()) return;
  for (const auto& [suite, profiles] : FileTallies(o.vectors)) {
    for (const auto& [profile, n] : profiles) {
      const int64_t have = v.tallies.count(suite) && v.tallies[suite].count(profile) ? v.tallies[suite][profile].tests : 0;
      if (have != n) {
        throw Error("--vectors " + o.vectors.string() + ": " + suite + " holds " + std::to_string(n) + " test(s) of " +
                    (profile.empty() ? std::string("no profile") : "profile " + profile) + ", the shards count " + std::to_string(have));
      }
    }
  }
}

// §CONF.8 The merged run's verdict record (report merge --verdict-json).
void WriteMergedVerdict(const MergeOptions& o, const json& work, const Scope& scope, const LevelScope& level_scope,
                        const std::vector<const ShardFile*>& ordered, const Verdict& v,
                        const std::vector<LevelOutcome>& levels) {
  const std::vector<std::string> names = vectors::SuiteNames();
  const Claims claims = CheckHello(work["implementation"], std::set<std::string>(names.begin(), names.end()));
  RunRecord run;
  for (const json& x : work["suites"]) run.suites.insert(x.get<std::string>());
  run.profile = work["profile"];
  for (const json& x : work["features"]) run.features.insert(x.get<std::string>());
  run.expect_fail = !work["expectFailSha256"].get<std::string>().empty();
  run.random_only = scope.random_only;
  run.random_cases = scope.random_cases;
  run.seed = level_scope.seed;
  run.seed_drawn = level_scope.seed_drawn;
  if (level_scope.seed_drawn && ordered.size() > 1) {
    for (const ShardFile* s : ordered) run.shard_seeds.push_back(s->head["shard"]["work"]["seed"].get<uint64_t>());
  }
  TempFile target(o.verdict_json);
  target.Write(VerdictRecord(claims, run, v, levels, UtcNow()).dump(1) + "\n");
  target.CommitAs(o.verdict_json);
}

}  // namespace

int MergeReports(const MergeOptions& o, std::ostream& out) {
  CheckMergeOptions(o);
  Streams streams;
  if (!o.report_json.empty()) streams.results.emplace(o.report_json);
  streams.junit = o.junit;
  std::vector<ShardFile> shards;
  for (const fs::path& p : o.shards) {
    shards.push_back(ReadShard(p, streams));
    CheckShard(shards.back());
  }
  CheckOneRun(shards);
  const json& work = shards.front().head["shard"]["work"];
  const std::string digest = work["vectorsManifestSha256"].get<std::string>();
  if (!o.vectors.empty()) {
    const std::string mine = Sha256Hex(ReadInputFile(o.vectors / "MANIFEST.sha256", InputKind::kManifest, true));
    if (mine != digest) {
      throw Error("--vectors " + o.vectors.string() + ": its MANIFEST.sha256 is " + mine + ", the shards ran " + digest);
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
    for (const auto& [label, c] : s->counts) v.suites[label].Merge(c);
    for (const auto& [suite, profiles] : s->tally) {
      for (const auto& [profile, t] : profiles) v.tallies[suite][profile].Merge(t);
    }
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
      CaseDigest::FromHex(c["sha256Sum"].get<std::string>(), d);
      d.cases = c["requests"].get<int64_t>();
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
        for (const char* k : {"drawn", "asked", "otherProfile", "failing"}) m[k] = m.value(k, int64_t{0}) + r[k].get<int64_t>();
        for (const json& x : r.value("shrunk", json::array())) m["shrunk"].push_back(x);
      }
    }
  }
  CheckVectorTallies(o, v);
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
  v.strict_stale = work["strictStale"].get<bool>();
  // §VEC.13 the kind from the digest, never from the shards' own label.
  v.SetVectors(vectors::ClassifySet(digest));
  v.shard = {0, 1, "engram report merge of " + std::to_string(shards.size()) + " shard(s)"};
  const std::string saved_line = SaveMergedFailures(o, failing, random, work, v);
  Scope scope;
  for (const json& name : shards.front().head["shard"]["vectorSuites"]) scope.vector_suites.push_back(name.get<std::string>());
  for (const json& name : work["suites"]) scope.requested.insert(name.get<std::string>());
  scope.random_only = work["randomOnly"].get<bool>();
  scope.random_cases = work["casesPerSuite"].get<int64_t>();
  scope.random_asked = random_asked;
  json counts = json::object();
  for (const auto& [label, c] : v.suites) counts[label] = CountsJson(c);
  DecideScope(scope, v);
  v.random = random;
  // §CONF.8 the levels of the whole run, judged as a single run's are.
  LevelScope level_scope{scope.requested, scope.random_only, scope.random_cases, work["seed"].get<uint64_t>(),
                         work["seedDrawn"].get<bool>()};
  const std::vector<LevelOutcome> levels = JudgeLevels(v, level_scope);
  RequireLevels(o.require_levels, levels, v);
  v.level_lines = LevelLines(levels, o.require_levels);
  std::string seeds = work["seed"].dump();
  if (level_scope.seed_drawn && shards.size() > 1) {
    seeds = "drawn by each shard:";
    for (const ShardFile* s : ordered) seeds += " " + s->head["shard"]["work"]["seed"].dump();
  }
  v.random_lines.push_back("merge: " + std::to_string(shards.size()) + " shard(s) of one run, seed " + seeds + ", " +
                           work["casesPerSuite"].dump() + " random case(s) per suite; " + std::to_string(all.cases) +
                           " request(s), their digest (a sum of SHA-256, §CONF.9) " + all.Hex());
  if (!saved_line.empty()) v.random_lines.push_back(saved_line);
  if (random.is_object() && !(level_scope.seed_drawn && shards.size() > 1)) {
    v.random_lines.push_back("merge: replay the whole run with: " + random.value("replay", ""));
  } else if (random.is_object()) {
    for (const ShardFile* s : ordered) {
      v.random_lines.push_back("merge: replay shard " + std::to_string(s->index) + " with: " + s->head["random"].value("replay", ""));
    }
  }
  std::vector<std::string> merged;
  for (const ShardFile* s : ordered) merged.push_back(s->name);
  v.shard_record = {{"index", 0}, {"count", 1}, {"source", v.shard.source}, {"clean", v.ShardClean()}, {"work", work},
                    {"vectorSuites", shards.front().head["shard"]["vectorSuites"]}, {"randomAsked", random_asked},
                    {"cases", cases}, {"counts", counts}, {"runProblems", run_problems}, {"problems", problems},
                    {"failing", failing}, {"levelTally", TalliesJson(v.tallies)}, {"merged", merged},
                    {"requests", all.cases}, {"sha256Sum", all.Hex()}};

  if (!o.verdict_json.empty()) WriteMergedVerdict(o, work, scope, level_scope, ordered, v, levels);
  WriteMergedReports(o, shards.front().head, streams, v);
  PrintSummary(streams.shown, v, "", out);
  return v.Ok() ? 0 : 1;
}

}  // namespace engram::conform
