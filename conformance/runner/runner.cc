// spec/conformance.md — the conformance runner.
#include "conformance/runner/runner.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "conformance/cli/fileio.h"
#include "conformance/runner/process.h"
#include "reference/contract.h"
#include "reference/error.h"
#include "reference/fusion.h"
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

// §CONF.1 Outputs written for people, never compared (shown on failure).
bool IsInformative(const std::string& type, const std::string& key) {
  return key == "error" || ((type == "E4M3DecodeTest" || type == "E8M0DecodeTest") && key == "value");
}

// §CONF.1 Outputs that are floats written as the hex digits of their bits
// (§STO.11): compared element by element, any NaN matching any NaN (§STO.9).
// Returns the digits per element (4: bf16, 8: float32), or 0.
size_t HexFloatDigits(const std::string& type, const std::string& key) {
  if ((type == "E4M3DecodeTest" || type == "E8M0DecodeTest") && key == "f32Bits") return 8;
  if (type == "ElementDecodeTest" && key == "bf16") return 4;
  if (key == "rows") {
    if (type == "FloatLookupTest") return 8;
    if (type == "SyntheticLookupTest" || type == "SafetensorsLookupTest" || type == "PackedLookupTest" ||
        type == "RowShardTest" || type == "HeadShardTest") {
      return 4;
    }
  }
  return 0;
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

// §STO.9 Whether the hex digits `a` and `b` (one value of `digits` digits)
// stand for the same value: identical bits, or both NaN.
bool SameHexFloat(const std::string& a, const std::string& b, size_t digits) {
  if (a == b) return true;
  auto parse = [&](const std::string& h, uint32_t& v) {
    if (h.size() != digits) return false;
    v = 0;
    for (char c : h) {
      const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                    : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                                : -1;
      if (d < 0) return false;
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return true;
  };
  uint32_t x = 0, y = 0;
  if (!parse(a, x) || !parse(b, y)) return false;
  auto is_nan = [&](uint32_t v) {
    return digits == 4 ? (v & 0x7F80u) == 0x7F80u && (v & 0x007Fu) != 0 : (v & 0x7F800000u) == 0x7F800000u && (v & 0x007FFFFFu) != 0;
  };
  return x == y || (is_nan(x) && is_nan(y));
}

// The first element where hex-float strings (or arrays of them) differ.
std::string FirstHexDifference(const json& expected, const json& actual, const std::string& path, size_t digits) {
  if (expected.is_array()) {
    if (!actual.is_array()) return path + ": expected an array, got " + Short(actual);
    for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
      std::string d = FirstHexDifference(expected[i], actual[i], path + "[" + std::to_string(i) + "]", digits);
      if (!d.empty()) return d;
    }
    if (expected.size() != actual.size()) {
      return path + ": expected " + std::to_string(expected.size()) + " elements, got " + std::to_string(actual.size());
    }
    return "";
  }
  if (!expected.is_string() || !actual.is_string()) return FirstDifference(expected, actual, path);
  const std::string e = expected.get<std::string>(), a = actual.get<std::string>();
  if (e.size() != a.size()) {
    return path + ": expected " + std::to_string(e.size() / digits) + " values of " + std::to_string(digits) +
           " hex digits, got " + std::to_string(a.size()) + " digits";
  }
  for (size_t i = 0; i + digits <= e.size(); i += digits) {
    if (!SameHexFloat(e.substr(i, digits), a.substr(i, digits), digits)) {
      return path + " element " + std::to_string(i / digits) + ": expected " + e.substr(i, digits) + ", got " +
             a.substr(i, digits);
    }
  }
  return "";
}

// §FUS.9 A float in a vector or an answer: a float.hex() string (also "inf",
// "nan" and decimal text) or a JSON number. Throws engram::Error.
double FloatOf(const json& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return ParseFloat(v.get<std::string>(), path);
  throw Error(path + ": " + Short(v) + " is not a number");
}

// A scalar or (nested) array of floats, flattened in order.
void Flatten(const json& v, std::vector<json>& out) {
  if (v.is_array()) {
    for (const json& e : v) Flatten(e, out);
  } else {
    out.push_back(v);
  }
}

// §FUS.9 The float64 value of the dot product (and its tolerance) behind each
// gate of a test, from the vector's intermediate values; empty when the test
// gives none (gate-function tests, forward tests): the gate's slope term is then 0.
struct DotRef {
  double r = 0, m = 0, scale = 0;
};
std::vector<DotRef> GateDots(const std::string& type, const json& intermediate) {
  std::vector<DotRef> out;
  auto take = [&](const json& stream, const char* key) {
    out.push_back({FloatOf(stream.at("float64").at(key), key), FloatOf(stream.at("float32").at(key), key),
                   FloatOf(stream.at("float64").at("dotScale"), "dotScale")});
  };
  if (type == "V41GateTest" && intermediate.is_array()) {
    for (const json& s : intermediate) take(s, "dot");
  } else if (type == "DemoGateTest" && intermediate.is_object() && intermediate.contains("streams")) {
    for (const json& s : intermediate["streams"]) take(s, "g");
  }
  return out;
}

// §FUS.9 Judges a float output against the group's tolerance rule. Returns ""
// or a description of the first element outside it.
std::string CompareTolerance(const std::string& type, const json& group, const json& rule, const std::string& key,
                             const json& expected, const json& actual) {
  if (rule.value("rule", "") == "faithfulBf16") {
    // bf16 bit patterns, judged against the float64 reference `<key>Ref64`.
    if (!expected.contains(key + "Ref64")) return FirstDifference(expected[key], actual, key);
    std::vector<json> ref, got;
    Flatten(expected[key + "Ref64"], ref);
    Flatten(actual, got);
    if (got.size() != ref.size()) {
      return key + ": expected " + std::to_string(ref.size()) + " bf16 values, got " + std::to_string(got.size());
    }
    for (size_t i = 0; i < ref.size(); ++i) {
      const std::string path = key + "[" + std::to_string(i) + "]";
      if (!got[i].is_number_integer() || got[i].get<int64_t>() < 0 || got[i].get<int64_t>() > 0xFFFF) {
        return path + ": " + Short(got[i]) + " is not a bf16 bit pattern (an integer 0 .. 65535)";
      }
      const double r = FloatOf(ref[i], key + "Ref64");
      const auto bits = static_cast<uint16_t>(got[i].get<int64_t>());
      if (!FaithfulBf16(bits, r)) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%04x", bits);
        return path + ": got bf16 " + hex + " (" + FloatHex(Bf16Value(bits)) + "), not a faithful rounding of the float64 value " +
               FloatHex(r) + " (the vector's float32 mirror gives " + Short(expected[key].is_array() && i < expected[key].size() ? expected[key][i] : json()) + ")";
      }
    }
    return "";
  }
  if (!rule.contains("k") || !rule.contains("a") || !rule.contains("scale")) {
    return key + ": the group's tolerance rule " + Short(rule) + " is not understood";
  }
  if (!expected[key].is_object() || !expected[key].contains("float64") || !expected[key].contains("float32")) {
    return key + ": the vector gives no float64 / float32 values for this tolerance";
  }
  const double k = FloatOf(rule["k"], "tolerance.k"), a = FloatOf(rule["a"], "tolerance.a");
  const std::string scale = rule["scale"];
  // An implementation returns its value(s) in the shape of the float64 entry;
  // the vector's own {float64, float32} form is accepted (float64 is read).
  const json& y_json = actual.is_object() && actual.contains("float64") ? actual["float64"] : actual;
  std::vector<json> r_list, m_list, y_list;
  Flatten(expected[key]["float64"], r_list);
  Flatten(expected[key]["float32"], m_list);
  Flatten(y_json, y_list);
  if (y_list.size() != r_list.size() || m_list.size() != r_list.size()) {
    return key + ": expected " + std::to_string(r_list.size()) + " values, got " + std::to_string(y_list.size());
  }
  std::vector<double> r(r_list.size()), m(r_list.size());
  for (size_t i = 0; i < r.size(); ++i) {
    r[i] = FloatOf(r_list[i], key + ".float64");
    m[i] = FloatOf(m_list[i], key + ".float32");
  }
  std::vector<DotRef> dots;
  if (scale == "gateSlope" || scale == "dotScale") dots = GateDots(type, expected.contains("intermediate") ? expected["intermediate"] : json());
  const size_t vector_len = group.contains("hidden") && group["hidden"].is_number_unsigned() && group["hidden"].get<size_t>() > 0
                                ? group["hidden"].get<size_t>()
                                : r.size();
  for (size_t i = 0; i < r.size(); ++i) {
    const std::string path = expected[key]["float64"].is_array() ? key + "[" + std::to_string(i) + "]" : key;
    double y = 0;
    try {
      y = FloatOf(y_list[i], path);
    } catch (const Error& e) {
      return e.what();
    }
    auto is_pos_zero = [](double v) { return v == 0 && !std::signbit(v); };
    const bool pos_zero = is_pos_zero(r[i]) && is_pos_zero(m[i]);
    double s = 1;
    if (scale == "absRef") {
      s = std::fabs(r[i]);
    } else if (scale == "maxAbsVector") {
      // §FUS.9 the (position, stream) vector of `hidden` values the element belongs to.
      s = 0;
      const size_t begin = (i / vector_len) * vector_len;
      for (size_t j = begin; j < std::min(r.size(), begin + vector_len); ++j) {
        if (std::isfinite(r[j])) s = std::max(s, std::fabs(r[j]));
      }
    } else if (scale == "gateSlope") {
      double delta = 0;
      if (i < dots.size()) {
        const json dot_rule = group.value("tolerance", json::object()).value(type == "DemoGateTest" ? "g" : "dot", json::object());
        const double kd = dot_rule.contains("k") ? FloatOf(dot_rule["k"], "tolerance.k") : 2;
        const double ad = dot_rule.contains("a") ? FloatOf(dot_rule["a"], "tolerance.a") : std::ldexp(1.0, -18);
        const double t = kd * std::fabs(dots[i].m - dots[i].r) + ad * dots[i].scale;
        const bool demo = group.value("profile", "") == "demo-v1";
        auto g = [&](double d) { return demo ? GateDemo(d, Precision::kFloat64).gate : GateV41(d, Precision::kFloat64).gate; };
        const double g0 = g(dots[i].r);
        delta = std::max(g(dots[i].r + t) - g0, g0 - g(dots[i].r - t));
        if (!std::isfinite(delta)) delta = 0;
      }
      s = 1 + delta / a;
    } else if (scale == "dotScale") {
      if (i >= dots.size()) return key + ": the vector gives no dotScale for this value";
      s = dots[i].scale;
    } else {
      return key + ": the group's tolerance scale '" + scale + "' is not understood";
    }
    // §FUS.9 where both evaluations give +0 (masked positions) the value MUST be +0.
    const bool ok = pos_zero ? is_pos_zero(y) : WithinTolerance(y, r[i], m[i], k, a, s);
    if (!ok) {
      const double allowed = k * std::fabs(m[i] - r[i]) + a * s;
      return path + ": got " + FloatHex(y) + ", float64 reference " + FloatHex(r[i]) + ", float32 mirror " + FloatHex(m[i]) +
             (pos_zero ? "; a masked value must be +0 exactly"
                       : "; |error| " + FloatHex(std::fabs(y - r[i])) + " > allowed " + FloatHex(allowed) + " (k " +
                             FloatHex(k) + ", a " + FloatHex(a) + ", " + scale + " " + FloatHex(s) + ")");
    }
  }
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
    if (IsMeta(key) || IsInformative(type, key)) continue;
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
  return CompareOrdered(type, json::object(), expected, actual);
}

std::string CompareOrdered(const std::string& type, const json& group, const json& expected, const json& actual) {
  const std::vector<Nested> nested = NestedOutputs(type);
  const json tolerance = group.is_object() ? group.value("tolerance", json::object()) : json::object();
  for (const auto& [key, value] : expected.items()) {
    if (IsInformative(type, key)) continue;
    // §CONF.1 `<out>Ref64` is the float64 reference a faithfulBf16 output is judged by, not an output.
    if (key.size() > 5 && key.substr(key.size() - 5) == "Ref64" && tolerance.contains(key.substr(0, key.size() - 5))) continue;
    if (key == "intermediate" && (!actual.contains(key) || !tolerance.empty())) continue;  // optional (§CONF.1)
    if (!actual.contains(key)) return "missing output '" + key + "'";
    const Nested* n = nullptr;
    for (const Nested& candidate : nested) {
      if (candidate.list == key) n = &candidate;
    }
    if (n == nullptr) {
      std::string d;
      if (tolerance.contains(key)) {
        try {
          d = CompareTolerance(type, group, tolerance[key], key, expected, actual[key]);
        } catch (const std::exception& e) {
          d = key + ": " + e.what();
        }
      } else if (const size_t digits = HexFloatDigits(type, key); digits != 0) {
        d = FirstHexDifference(value, actual[key], key, digits);
      } else {
        d = FirstDifference(value, actual[key], key);
      }
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
  // §CONF.4, §ERR.1 Everything that can stop the run is checked before any test:
  // the manifest, the spec version of every vector file, the
  // expected-failures file and the handshake. Such errors go to stderr and
  // the exit status is 2 (the run could not start); nothing is written.
  ExpectFail expect_fail;
  try {
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
      for (const std::string& p : problems) std::cerr << "engram conform: " << p << "\n";
      std::cerr << "engram conform: refusing to run on vectors that fail their manifest\n";
      return 2;
    }
    // §VEC.1 Vectors of another spec version describe other rules: running
    // them would report differences that are not bugs.
    std::map<std::string, std::set<int64_t>> tc_ids;
    for (const auto& e : std::filesystem::directory_iterator(options.vectors / vectors::kVectorsDir)) {
      if (e.path().extension() != ".json") continue;
      const std::string rel = std::string(vectors::kVectorsDir) + "/" + e.path().filename().string();
      const json doc = json::parse(ReadFile(e.path()), nullptr, false);
      if (!doc.is_object()) throw Error(rel + ": malformed JSON (not a vector file)");
      if (!doc.contains("specVersion") || doc["specVersion"] != vectors::kSpecVersion) {
        throw Error(rel + ": specVersion " + (doc.contains("specVersion") ? doc["specVersion"].dump() : "missing") +
                    " is not the version this runner implements (" + vectors::kSpecVersion + ")");
      }
      std::set<int64_t>& ids = tc_ids[e.path().stem().string()];
      if (doc.contains("testGroups") && doc["testGroups"].is_array()) {
        for (const json& g : doc["testGroups"]) {
          if (!g.is_object() || !g.contains("tests") || !g["tests"].is_array()) continue;
          for (const json& t : g["tests"]) {
            if (t.is_object() && t.contains("tcId") && t["tcId"].is_number_integer()) ids.insert(t["tcId"].get<int64_t>());
          }
        }
      }
    }
    expect_fail = LoadExpectFail(options.expect_fail);
    // An entry that names no test would silently never match.
    for (const auto& [suite, ids] : expect_fail.ids) {
      auto known = tc_ids.find(suite);
      if (known == tc_ids.end()) throw Error(options.expect_fail.string() + ": suite '" + suite + "' is not in " + options.vectors.string());
      for (int64_t id : ids) {
        if (known->second.count(id) == 0) {
          throw Error(options.expect_fail.string() + ": suite '" + suite + "' has no tcId " + std::to_string(id));
        }
      }
    }
  } catch (const Error& e) {
    std::cerr << "engram conform: " << e.what() << "\n";
    return 2;
  }
  Peer peer(options.command, options.timeout);
  json hello;
  try {
    hello = peer.Hello();
  } catch (const Error& e) {
    std::cerr << "engram conform: " << e.what() << "\n";
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
          const std::string d = CompareOrdered(type, g, split.expected, reply.body["outputs"]);
          if (!d.empty()) {
            r.status = "fail";
            r.reason = d.rfind("missing output", 0) == 0 ? "missing output" : "mismatch";
            r.detail = d;
            for (const auto& [key, value] : t.items()) {  // §CONF.1 informative outputs, shown not compared
              if (key != "error" && IsInformative(type, key)) r.detail += "\n    " + key + " (informative): " + Short(value);
            }
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
