// spec/conformance.md §CONF.4 — verdict and reports.
#include "conformance/runner/report.h"

#include <sstream>


namespace engram::conform {

using json = nlohmann::ordered_json;

void Counts::Add(const TestResult& r) {
  int64_t Counts::*field = r.status == "pass"            ? &Counts::passed
                           : r.status == "fail"          ? &Counts::failed
                           : r.status == "expected-fail" ? &Counts::expected_fail
                           : r.status == "stale"         ? &Counts::stale
                                                         : &Counts::skipped;
  ++(this->*field);
  if (r.status == "skipped") ++skip_reasons[r.reason];
  // §CONF.4 tested: a valid test whose outputs matched, unless a port that
  // computes nothing passes it too (trivial).
  if (r.valid && (r.status == "pass" || r.status == "stale")) ++(r.trivial ? trivial : tested);
  if (!r.valid && r.status == "pass") ++refused;
  if (r.status != "skipped" || r.reason == "unsupported") ++sent;  // the implementation saw it
}

void Counts::Merge(const Counts& o) {
  passed += o.passed;
  failed += o.failed;
  skipped += o.skipped;
  expected_fail += o.expected_fail;
  stale += o.stale;
  tested += o.tested;
  trivial += o.trivial;
  refused += o.refused;
  sent += o.sent;
  for (const auto& [why, n] : o.skip_reasons) skip_reasons[why] += n;
}

bool Verdict::Ok() const {
  if (total.failed > 0 || tested == 0 || !problems.empty()) return false;
  for (const auto& [suite, list] : suite_problems) {
    if (!list.empty()) return false;
  }
  if (strict_stale && total.stale > 0) return false;
  // The contract checks are not counted in `total` but can fail too.
  auto it = suites.find("contract");
  return it == suites.end() || it->second.failed == 0;
}

namespace {

std::string CountsText(const Counts& c) {
  std::string s = std::to_string(c.passed) + " passed, " + std::to_string(c.failed) + " failed, " +
                  std::to_string(c.skipped) + " skipped";
  if (c.expected_fail > 0) s += ", " + std::to_string(c.expected_fail) + " expected failures";
  if (c.stale > 0) s += ", " + std::to_string(c.stale) + " stale";
  if (c.trivial > 0) s += " (" + std::to_string(c.trivial) + " of the passes trivial, not counted as tested)";
  return s;
}

// The detail of a failure, each continuation line indented under it.
std::string Indented(const std::string& text, const std::string& indent) {
  std::string out;
  for (char c : text) {
    out.push_back(c);
    if (c == '\n') out += indent;
  }
  return out;
}

}  // namespace

std::string Verdict::VectorsLine() const { return "vectors: " + vectors_kind + " (manifest sha256 " + manifest_sha256 + ")"; }

std::string Verdict::Line() const {
  // §VEC.13 The verdict says what it was judged against: an OK on a modified
  // vectors directory is not an OK on the released vectors.
  const std::string against = vectors_kind.empty() ? "" : " (vectors: " + vectors_kind + ")";
  Counts shown = total;
  shown.trivial = 0;  // said once, below
  std::string counts = CountsText(shown);
  // §CONF.4 the verdict names how many tests showed computed outputs: a
  // trivial pass (an empty sequence) is counted as passed but not as tested.
  counts += " (" + std::to_string(tested) + " non-trivial valid test(s) matched";
  if (trivial > 0) counts += ", " + std::to_string(trivial) + " trivial not counted";
  counts += ")";
  if (Ok()) return "conformance: OK: " + counts + against;
  std::string why;
  for (const std::string& p : problems) why += "; " + p;
  for (const auto& [suite, list] : suite_problems) {
    for (const std::string& p : list) why += "; " + suite + ": " + p;
  }
  if (auto it = suites.find("contract"); it != suites.end() && it->second.failed > 0) {
    why += "; " + std::to_string(it->second.failed) + " contract check(s) failed";
  }
  if (strict_stale && total.stale > 0) why += "; stale expected failures (--strict-stale)";
  return "conformance: FAILED: " + counts + why + against;
}

void PrintSummary(const std::vector<TestResult>& results, const Verdict& verdict,
                  const std::filesystem::path& expect_fail, std::ostream& out) {
  std::map<std::string, std::vector<const TestResult*>> failures;
  for (const TestResult& r : results) {
    if (r.status == "fail") failures[r.suite].push_back(&r);
  }
  for (const auto& [suite, c] : verdict.suites) {
    out << suite << ": " << CountsText(c) << "\n";
    const auto& f = failures[suite];
    for (size_t i = 0; i < f.size() && i < 3; ++i) {
      out << "  FAIL tcId " << f[i]->tc_id << " (" << f[i]->reason << "): " << Indented(f[i]->detail, "      ") << "\n";
    }
    if (f.size() > 3) out << "  ... and " << (f.size() - 3) << " more failures (see --report-json)\n";
    if (auto it = verdict.diagnoses.find(suite); it != verdict.diagnoses.end()) {
      for (const std::string& d : it->second) out << "  diagnosis: " << Indented(d, "      ") << "\n";
    }
    if (auto it = verdict.suite_problems.find(suite); it != verdict.suite_problems.end()) {
      for (const std::string& p : it->second) out << "  SUITE FAILED: " << p << "\n";
    }
  }
  for (const TestResult& r : results) {
    if (r.status == "stale") out << "  STALE " << r.suite << ":" << r.tc_id << " passes but is listed in " << expect_fail.string() << "\n";
  }
  if (auto it = verdict.diagnoses.find(""); it != verdict.diagnoses.end()) {
    for (const std::string& d : it->second) out << "diagnosis: " << Indented(d, "    ") << "\n";
  }
  for (const std::string& line : verdict.random_lines) out << line << "\n";
  for (const std::string& p : verdict.problems) out << "FAILED: " << p << "\n";
  if (!verdict.vectors_kind.empty()) out << verdict.VectorsLine() << "\n";
  out << verdict.Line() << "\n";
}

std::string JsonReport(const json& hello, const std::vector<TestResult>& results, const Verdict& verdict) {
  json v = {{"ok", verdict.Ok()},
            {"line", verdict.Line()},
            {"passed", verdict.total.passed},
            {"failed", verdict.total.failed},
            {"skipped", verdict.total.skipped},
            {"expectedFail", verdict.total.expected_fail},
            {"stale", verdict.total.stale},
            {"tested", verdict.tested},
            {"trivial", verdict.trivial},
            {"problems", verdict.problems},
            {"suiteProblems", verdict.suite_problems},
            {"diagnoses", verdict.diagnoses},
            // §VEC.13
            {"vectors", {{"released", verdict.vectors_released},
                         {"kind", verdict.vectors_kind},
                         {"manifestSha256", verdict.manifest_sha256},
                         {"line", verdict.VectorsLine()}}}};
  json suites = json::object();
  for (const auto& [suite, c] : verdict.suites) {
    suites[suite] = {{"passed", c.passed}, {"failed", c.failed}, {"skipped", c.skipped}, {"expectedFail", c.expected_fail},
                     {"stale", c.stale}, {"tested", c.tested}, {"trivial", c.trivial}};
  }
  json report = {{"implementation", hello}, {"verdict", v}, {"suites", suites}};
  if (!verdict.random.is_null()) report["random"] = verdict.random;  // §CONF.7
  report["results"] = json::array();
  for (const TestResult& r : results) {
    json e = {{"suite", r.suite}, {"tcId", r.tc_id}, {"status", r.status}, {"reason", r.reason},
              {"detail", r.detail}, {"flags", r.flags}, {"seconds", r.seconds}};
    if (r.trivial) e["trivial"] = true;
    if (r.status == "fail" || r.status == "expected-fail") e["returned"] = r.returned;
    report["results"].push_back(std::move(e));
  }
  // An implementation's strings may hold anything: never fail the report on them.
  return report.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

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

}  // namespace

std::string JunitReport(const std::vector<TestResult>& results, const Verdict& verdict) {
  std::map<std::string, std::vector<const TestResult*>> by_suite;
  for (const TestResult& r : results) by_suite[r.suite].push_back(&r);
  for (const auto& [suite, list] : verdict.suite_problems) by_suite[suite];  // a suite with only a problem
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"engram-conformance\">\n";
  for (const auto& [suite, list] : by_suite) {
    size_t failures = 0, skipped = 0;
    for (const TestResult* r : list) {
      if (r->status == "fail") ++failures;
      if (r->status == "skipped") ++skipped;
    }
    std::vector<std::string> problems;
    if (auto it = verdict.suite_problems.find(suite); it != verdict.suite_problems.end()) problems = it->second;
    x << " <testsuite name=\"" << XmlEscape(suite) << "\" tests=\"" << list.size() + problems.size() << "\" failures=\""
      << failures + problems.size() << "\" skipped=\"" << skipped << "\">\n";
    for (const std::string& p : problems) {
      x << "  <testcase classname=\"" << XmlEscape(suite) << "\" name=\"suite\"><failure type=\"suite\" message=\""
        << XmlEscape(p) << "\">" << XmlEscape(p) << "</failure></testcase>\n";
    }
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
  return x.str();
}

}  // namespace engram::conform
