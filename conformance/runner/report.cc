// spec/conformance.md §CONF.4 — verdict and reports.
#include "conformance/runner/report.h"

#include <sstream>

#include "vectors/random_cases.h"


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

void LevelTally::Add(const TestResult& r) {
  ++run;
  if (r.status == "fail" || r.status == "expected-fail") ++failed;
  if (r.status == "skipped" && r.reason != "limit") ++skipped;
  if ((r.status == "pass" || r.status == "stale") && r.valid && !r.trivial) ++tested;
}

void LevelTally::Merge(const LevelTally& o) {
  tests += o.tests;
  run += o.run;
  failed += o.failed;
  skipped += o.skipped;
  tested += o.tested;
}

json TalliesJson(const LevelTallies& t) {
  json out = json::object();
  for (const auto& [suite, profiles] : t) {
    out[suite] = json::object();
    for (const auto& [profile, c] : profiles) {
      out[suite][profile] = {{"tests", c.tests}, {"run", c.run}, {"failed", c.failed}, {"skipped", c.skipped}, {"tested", c.tested}};
    }
  }
  return out;
}

bool Verdict::Ok() const {
  if (shard.Partial()) return false;  // §CONF.9 one shard is not the run
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
  if (shard.Partial()) return PartialLine();
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
  for (const std::string& line : verdict.level_lines) out << line << "\n";
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
  if (!verdict.shard_record.is_null()) report["shard"] = verdict.shard_record;  // §CONF.9
  report["results"] = json::array();
  for (const TestResult& r : results) {
    json e = {{"suite", r.suite}, {"tcId", r.tc_id}, {"status", r.status}, {"reason", r.reason},
              {"detail", r.detail}, {"flags", r.flags}, {"seconds", r.seconds}, {"valid", r.valid}};
    if (r.trivial) e["trivial"] = true;
    if (!r.profile.empty()) e["profile"] = r.profile;  // §CONF.8 what a level's profile restricts
    if (r.status == "fail" || r.status == "expected-fail") e["returned"] = r.returned;
    report["results"].push_back(std::move(e));
  }
  // An implementation's strings may hold anything: never fail the report on them.
  return report.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

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

// §CONF.9 A shard is clean when nothing in it failed: no test, no contract
// check, no suite stopped. Whether the run is OK is the merge's to say.
bool Verdict::ShardClean() const {
  if (total.failed > 0 || !problems.empty()) return false;
  for (const auto& [suite, list] : suite_problems) {
    if (!list.empty()) return false;
  }
  if (strict_stale && total.stale > 0) return false;
  auto it = suites.find("contract");
  return it == suites.end() || it->second.failed == 0;
}

std::string Verdict::PartialLine() const {
  Counts shown = total;
  shown.trivial = 0;
  std::string why;
  for (const std::string& p : problems) why += "; " + p;
  for (const auto& [suite, list] : suite_problems) {
    for (const std::string& p : list) why += "; " + suite + ": " + p;
  }
  if (auto it = suites.find("contract"); it != suites.end() && it->second.failed > 0) {
    why += "; " + std::to_string(it->second.failed) + " contract check(s) failed";
  }
  return "conformance: PARTIAL: shard " + std::to_string(shard.index) + " of " + std::to_string(shard.count) + " (" +
         shard.source + "), " + (ShardClean() ? "nothing failed in it" : "FAILED in it") + ": " + CountsText(shown) + " (" +
         std::to_string(tested) + " non-trivial valid test(s) matched)" + why +
         (vectors_kind.empty() ? "" : " (vectors: " + vectors_kind + ")") +
         "; not a verdict on the run: merge every shard's --report-json with engram report merge";
}

void DecideScope(const Scope& scope, Verdict& v) {
  auto reasons = [&](const std::string& suite) {
    std::string s;
    for (const auto& [why, n] : v.suites[suite].skip_reasons) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + why;
    return s;
  };
  // §CONF.4 What counts as tested: a valid, non-trivial test whose outputs
  // matched (pass, or stale: listed as an expected failure but passing).
  // Refusing an invalid input is right, and so is an empty list for an empty
  // sequence, but a port that does only that has computed nothing and must
  // not be OK on it.
  auto untested = [&](const std::string& suite) {
    const Counts& c = v.suites[suite];
    std::string s;
    if (c.trivial) s += std::to_string(c.trivial) + " trivial test(s) passed (they need no computation)";
    if (c.refused) s += (s.empty() ? "" : ", ") + std::to_string(c.refused) + " invalid input(s) refused";
    const std::string skips = reasons(suite);
    if (!skips.empty()) s += (s.empty() ? "" : ", ") + std::string("skipped: ") + skips;
    return s.empty() ? std::string("no test in scope") : s;
  };
  for (const std::string& suite : scope.vector_suites) {
    if (scope.random_only) break;  // the vectors did not run; the random suites are checked below
    const bool requested = scope.requested.count(suite) != 0;
    if (!requested && v.suites[suite].sent == 0) continue;  // not claimed, not asked for: nothing to say
    if (!scope.requested.empty() && !requested) continue;
    const Counts c = v.suites[suite];
    // Tested, failed already, or declared: a suite whose every test that ran
    // is a listed expected failure is the port's stated deviation.
    if (c.tested > 0 || c.failed > 0 || c.expected_fail > 0) continue;
    v.suite_problems[suite].push_back(
        std::string(requested ? "requested with --suite" : "answered by the implementation") +
        ", but no non-trivial valid test of it passed (" + untested(suite) + ")");
  }
  // §CONF.7 the same for the random cases of a suite asked for with --suite
  // or answered by the implementation.
  if (scope.random_cases > 0) {
    for (const vectors::RandomSuite& gen : vectors::RandomSuites()) {
      const std::string label = "random:" + gen.suite;
      const bool requested = scope.requested.count(gen.suite) != 0;
      if (!requested && v.suites[label].sent == 0) continue;
      if (!scope.requested.empty() && !requested) continue;
      if (v.suites[label].tested > 0 || v.suites[label].failed > 0) continue;
      v.suite_problems[label].push_back(std::string(requested ? "requested with --suite" : "answered by the implementation") +
                                        ", but no non-trivial valid random case of it passed (" + untested(label) + ")");
    }
    // §CONF.7 --random N that drew nothing (no claimed suite has a
    // generator) has checked nothing random: say so, and fail.
    if (scope.random_asked == 0) {
      v.problems.push_back("--random " + std::to_string(scope.random_cases) +
                           ": no random case was drawn (no suite that the implementation claims and --suite selects has a "
                           "generator, or none of its cases is of a claimed profile)");
    }
  }
  if (v.tested == 0) {
    std::string all;
    for (const auto& [suite, c] : v.suites) {
      if (suite == "contract") continue;
      for (const auto& [why, n] : c.skip_reasons) all += std::to_string(n) + " " + why + " (" + suite + "), ";
    }
    v.problems.push_back("nothing was tested: no non-trivial valid test passed" +
                         (v.total.trivial ? "; " + std::to_string(v.total.trivial) + " trivial test(s) passed" : std::string()) +
                         (v.total.skipped ? "; skipped: " + all.substr(0, all.size() - 2) : std::string()));
  }
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

json CountsJson(const Counts& c) {
  return {{"passed", c.passed}, {"failed", c.failed}, {"skipped", c.skipped}, {"expectedFail", c.expected_fail},
          {"stale", c.stale}, {"tested", c.tested}, {"trivial", c.trivial}, {"refused", c.refused}, {"sent", c.sent},
          {"skipReasons", c.skip_reasons}};
}

Counts CountsFromJson(const json& j) {
  Counts c;
  c.passed = j.at("passed").get<int64_t>();
  c.failed = j.at("failed").get<int64_t>();
  c.skipped = j.at("skipped").get<int64_t>();
  c.expected_fail = j.at("expectedFail").get<int64_t>();
  c.stale = j.at("stale").get<int64_t>();
  c.tested = j.at("tested").get<int64_t>();
  c.trivial = j.at("trivial").get<int64_t>();
  c.refused = j.at("refused").get<int64_t>();
  c.sent = j.at("sent").get<int64_t>();
  c.skip_reasons = j.at("skipReasons").get<std::map<std::string, int64_t>>();
  return c;
}

}  // namespace engram::conform
