// spec/conformance.md §CONF.1 — how an implementation's outputs are compared
// with the vectors' expected outputs.
#include "vectors/compare.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "reference/fusion.h"

namespace engram::vectors {

using ojson = nlohmann::ordered_json;

// §CONF.1 Outputs written for people, never compared (shown on failure).
bool IsInformative(const std::string& type, const std::string& key) {
  return key == "error" || ((type == "E4M3DecodeTest" || type == "E8M0DecodeTest") && key == "value");
}

std::string Short(const ojson& v, size_t max_chars) {
  std::string s = v.dump(-1, ' ', false, ojson::error_handler_t::replace);
  return s.size() > max_chars ? s.substr(0, max_chars - 3) + "..." : s;
}

// The first element where `expected` and `actual` differ, as "path: expected X, got Y".
// §VEC.4 integers are compared as integers: a JSON float never matches an
// expected integer, however close (5.578117229726147e18 is not
// 5578117229726147345), and -0 / 1.0 are not integers either.
std::string FirstDifference(const ojson& expected, const ojson& actual, const std::string& path) {
  if (expected.is_array() && actual.is_array()) {
    for (size_t i = 0; i < std::min(expected.size(), actual.size()); ++i) {
      // The common element, an equal integer, is passed over before its path is built.
      if (expected[i].is_number_integer() && actual[i].is_number_integer() && SameInteger(expected[i], actual[i])) continue;
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
  if (expected.is_number_integer() && !actual.is_number_integer()) {
    return path + ": expected the integer " + expected.dump() + ", got " +
           (actual.is_number_float() ? "the float " + actual.dump() + " (§VEC.4: integers must be JSON integers, exactly)"
                                     : Short(actual));
  }
  if (expected.is_number_integer() && actual.is_number_integer()) {
    if (SameInteger(expected, actual)) return "";
    // The same 64 bits read as another type (-1 as 18446744073709551615):
    // say why that is a difference.
    const bool same_bits = expected.template get<uint64_t>() == actual.template get<uint64_t>();
    return path + ": expected " + Short(expected) + ", got " + Short(actual) +
           (same_bits ? " (the same 64 bits, another value: §CONF.4 compares integers by value)" : "");
  }
  if (expected != actual) return path + ": expected " + Short(expected) + ", got " + Short(actual);
  return "";
}

namespace {
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

ojson StripKeys(const ojson& element, const std::vector<std::string>& keys) {
  ojson out = element;
  for (const std::string& k : keys) out.erase(k);
  return out;
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
std::string FirstHexDifference(const ojson& expected, const ojson& actual, const std::string& path, size_t digits) {
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
double FloatOf(const ojson& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return ParseFloat(v.get<std::string>(), path);
  throw Error(path + ": " + Short(v) + " is not a number");
}

// A scalar or (nested) array of floats, flattened in order.
void Flatten(const ojson& v, std::vector<ojson>& out) {
  if (v.is_array()) {
    for (const ojson& e : v) Flatten(e, out);
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
std::vector<DotRef> GateDots(const std::string& type, const ojson& intermediate) {
  std::vector<DotRef> out;
  auto take = [&](const ojson& stream, const char* key) {
    out.push_back({FloatOf(stream.at("float64").at(key), key), FloatOf(stream.at("float32").at(key), key),
                   FloatOf(stream.at("float64").at("dotScale"), "dotScale")});
  };
  if (type == "V41GateTest" && intermediate.is_array()) {
    for (const ojson& s : intermediate) take(s, "dot");
  } else if (type == "DemoGateTest" && intermediate.is_object() && intermediate.contains("streams")) {
    for (const ojson& s : intermediate["streams"]) take(s, "g");
  }
  return out;
}

// §FUS.9 `convTerms`: the bound on the error of any float32 evaluation of
// ShortConv's SiLU(conv) that the reduction orders allow, 1.1 * gamma * T per
// element, T = sum_j |W[ch][j] * n[t - (kernel-1-j) * dilation][ch]| from the
// group's taps and the vector's float64 `normed` (padded steps add nothing),
// gamma = gamma_{kernel + ceil(hidden/2) + 5} with u = 2^-24, plus per tap on a
// real step the underflow term (|W| (1 + |w|) + 1) 2^-149 (w the channel's norm
// weight: a rounded product that underflows is off by 2^-150 absolute). Empty
// when the vector gives no `normed`.
std::vector<double> ConvTermsBound(const ojson& group, const ojson& intermediate) {
  if (!intermediate.is_object() || !intermediate.contains("float64") || !intermediate["float64"].contains("normed")) return {};
  const size_t hc = group.at("hc"), hidden = group.at("hidden"), kernel = group.at("kernel"), dilation = group.at("dilation");
  const size_t channels = hc * hidden;
  const ojson& taps = group.at("convWeight");
  const ojson& norm_w = group.at("convNormWeight");
  const ojson& normed = intermediate["float64"]["normed"];
  if (channels == 0 || kernel == 0 || taps.size() != channels * kernel || norm_w.size() != channels ||
      normed.size() % channels != 0) {
    return {};
  }
  const double n_ops = static_cast<double>(kernel + (hidden + 1) / 2 + 5), u = std::ldexp(1.0, -24);
  const double gamma = n_ops * u / (1 - n_ops * u);
  if (intermediate["float64"].contains("window")) {
    // §FUS.12 ShortConvStateTest: the normed value each tap read, window[t][j][ch]
    // (a step of an earlier call, of the imported state, or the padding's +0;
    // every tap counts its underflow term, which only widens the bound).
    const ojson& window = intermediate["float64"]["window"];
    if (window.size() != normed.size() * kernel) return {};
    std::vector<double> bound(normed.size());
    for (size_t i = 0; i < normed.size(); ++i) {
      const size_t t = i / channels, ch = i % channels;
      double terms = 0, underflow = 0;
      const double w_norm = std::fabs(FloatOf(norm_w[ch], "convNormWeight"));
      for (size_t j = 0; j < kernel; ++j) {
        const double w = FloatOf(taps[ch * kernel + j], "convWeight");
        terms += std::fabs(w * FloatOf(window[(t * kernel + j) * channels + ch], "window"));
        underflow += (std::fabs(w) * (1 + w_norm) + 1) * std::ldexp(1.0, -149);
      }
      bound[i] = 1.1 * (gamma * terms + underflow);
    }
    return bound;
  }
  std::vector<double> bound(normed.size());
  for (size_t i = 0; i < normed.size(); ++i) {
    const size_t t = i / channels, ch = i % channels;
    double terms = 0, underflow = 0;
    const double w_norm = std::fabs(FloatOf(norm_w[ch], "convNormWeight"));
    for (size_t j = 0; j < kernel; ++j) {
      const size_t back = (kernel - 1 - j) * dilation;
      if (back > t) continue;  // the zero padding: w * 0 (a non-finite w makes r NaN, judged as NaN)
      const double w = FloatOf(taps[ch * kernel + j], "convWeight");
      terms += std::fabs(w * FloatOf(normed[(t - back) * channels + ch], "normed"));
      underflow += (std::fabs(w) * (1 + w_norm) + 1) * std::ldexp(1.0, -149);
    }
    bound[i] = 1.1 * (gamma * terms + underflow);  // SiLU is 1.1-Lipschitz (max SiLU' = 1.0998)
  }
  return bound;
}

// The float32 mirror's bf16 bits of element i of a faithfulBf16 output, as
// the bits are reported ("0x4012"), or "?" when the vector gives none.
std::string MirrorBits(const ojson& mirror, size_t i) {
  std::vector<ojson> flat;
  Flatten(mirror, flat);
  if (i >= flat.size() || !flat[i].is_number_integer()) return "?";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%04x", static_cast<unsigned>(flat[i].get<int64_t>() & 0xFFFF));
  return hex;
}

// §CONF.1 "in the shape of r": "" when `y` has the nesting and the lengths
// of `r` (a scalar where r is a scalar), else where it first does not.
std::string ShapeDifference(const ojson& r, const ojson& y, const std::string& path) {
  if (!r.is_array()) return y.is_array() ? path + ": expected one value, got a list of " + std::to_string(y.size()) : "";
  if (!y.is_array()) return path + ": expected a list of " + std::to_string(r.size()) + " values, got " + Short(y);
  if (y.size() != r.size()) return path + ": expected " + std::to_string(r.size()) + " values, got " + std::to_string(y.size());
  for (size_t i = 0; i < r.size(); ++i) {
    if (std::string d = ShapeDifference(r[i], y[i], path + "[" + std::to_string(i) + "]"); !d.empty()) return d;
  }
  return "";
}

// §FUS.9 rule faithfulBf16: bf16 bit patterns, each a faithful rounding of
// the float64 reference `<key>Ref64` (§FUS.9.1: of any value in
// [<key>Low64, <key>High64] where the vector gives the interval). Returns ""
// or a description of the first element outside it.
std::string CompareFaithfulBf16(const std::string& key, const ojson& expected, const ojson& actual) {
  if (!expected.contains(key + "Ref64")) return FirstDifference(expected[key], actual, key);
  if (std::string d = ShapeDifference(expected[key], actual, key); !d.empty()) return d;
  std::vector<ojson> ref, got, low, high;
  Flatten(expected[key + "Ref64"], ref);
  Flatten(actual, got);
  if (got.size() != ref.size()) {
    return key + ": expected " + std::to_string(ref.size()) + " bf16 values, got " + std::to_string(got.size());
  }
  // §FUS.9.1 the interval of exact values reachable from every allowed input.
  const bool interval = expected.contains(key + "Low64") && expected.contains(key + "High64");
  if (interval) {
    Flatten(expected[key + "Low64"], low);
    Flatten(expected[key + "High64"], high);
    if (low.size() != ref.size() || high.size() != ref.size()) {
      return key + ": the vector's " + key + "Low64 / " + key + "High64 do not have " + std::to_string(ref.size()) +
             " values";
    }
  }
  for (size_t i = 0; i < ref.size(); ++i) {
    const std::string path = key + "[" + std::to_string(i) + "]";
    if (!got[i].is_number_integer() || got[i].get<int64_t>() < 0 || got[i].get<int64_t>() > 0xFFFF) {
      return path + ": " + Short(got[i]) + " is not a bf16 bit pattern (an integer 0 .. 65535)";
    }
    const double r = FloatOf(ref[i], key + "Ref64");
    const double lo = interval ? FloatOf(low[i], key + "Low64") : r, hi = interval ? FloatOf(high[i], key + "High64") : r;
    const auto bits = static_cast<uint16_t>(got[i].get<int64_t>());
    if (!FaithfulBf16Between(bits, lo, hi)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%04x", bits);
      const std::string what = lo == hi ? "the float64 value " + FloatHex(r)
                                        : "any value in [" + FloatHex(lo) + ", " + FloatHex(hi) + "] (§FUS.9.1; float64 " +
                                              FloatHex(r) + ")";
      return path + ": got bf16 " + hex + " (" + FloatHex(Bf16Value(bits)) + "), not a faithful rounding of " + what +
             " (the vector's float32 mirror gives " + MirrorBits(expected[key], i) + ")";
    }
  }
  return "";
}

// §FUS.9 Judges a float output against the group's tolerance rule. Returns ""
// or a description of the first element outside it.
// §FUS.12 `normTerms` (a state's normed values): per element the bound on any
// float32 evaluation of the RMSNorm, γ_(⌈hidden/2⌉+5) |r| + (1 + |w|) 2^-149 (w
// the channel's convNormWeight: the two rounded products may underflow), on
// top of a · maxAbsVector. Empty when the group lacks the weights.
std::vector<double> NormTermsBound(const ojson& group, const std::vector<double>& r) {
  if (!group.contains("hidden") || !group.contains("convNormWeight")) return {};
  const size_t hidden = group.at("hidden");
  const ojson& norm_w = group.at("convNormWeight");
  if (norm_w.empty()) return {};
  const double n_ops = static_cast<double>((hidden + 1) / 2 + 5), u = std::ldexp(1.0, -24);
  const double gamma = n_ops * u / (1 - n_ops * u);
  std::vector<double> bound(r.size());
  for (size_t i = 0; i < r.size(); ++i) {
    const double w = std::fabs(FloatOf(norm_w[i % norm_w.size()], "convNormWeight"));
    bound[i] = gamma * std::fabs(r[i]) + (1 + w) * std::ldexp(1.0, -149);
  }
  return bound;
}

std::string CompareTolerance(const std::string& type, const ojson& group, const ojson& rule, const std::string& key,
                             const ojson& expected, const ojson& actual) {
  if (rule.value("rule", "") == "faithfulBf16") return CompareFaithfulBf16(key, expected, actual);
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
  const ojson& y_json = actual.is_object() && actual.contains("float64") ? actual["float64"] : actual;
  if (std::string d = ShapeDifference(expected[key]["float64"], y_json, key); !d.empty()) return d;
  std::vector<ojson> r_list, m_list, y_list;
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
  // §FUS.9.1 r widened to [lo, hi] where the vector gives the interval.
  std::vector<double> lo = r, hi = r;
  if (expected.contains(key + "Low64") && expected.contains(key + "High64")) {
    std::vector<ojson> lo_list, hi_list;
    Flatten(expected[key + "Low64"], lo_list);
    Flatten(expected[key + "High64"], hi_list);
    if (lo_list.size() != r.size() || hi_list.size() != r.size()) {
      return key + ": the vector's " + key + "Low64 / " + key + "High64 do not have " + std::to_string(r.size()) + " values";
    }
    for (size_t i = 0; i < r.size(); ++i) {
      lo[i] = FloatOf(lo_list[i], key + "Low64");
      hi[i] = FloatOf(hi_list[i], key + "High64");
    }
  }
  std::vector<DotRef> dots;
  if (scale == "gateSlope" || scale == "dotScale") dots = GateDots(type, expected.contains("intermediate") ? expected["intermediate"] : ojson());
  std::vector<double> conv_bound;
  if (scale == "convTerms") {
    conv_bound = ConvTermsBound(group, expected.contains("intermediate") ? expected["intermediate"] : ojson());
    if (conv_bound.size() != r.size()) return key + ": the vector gives no float64 `normed` of " + std::to_string(r.size()) + " values for convTerms";
  }
  std::vector<double> norm_bound;
  if (scale == "normTerms") {
    norm_bound = NormTermsBound(group, r);
    if (norm_bound.size() != r.size()) return key + ": the group gives no convNormWeight for normTerms";
  }
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
    // §FUS.9 "+0 exactly" is the rule of v4.1's masked positions; demo-v1 has no
    // masking, and torch's sign of a zero result depends on the kernel there.
    const bool masking = group.value("profile", "") != "demo-v1";
    const bool pos_zero = masking && is_pos_zero(r[i]) && is_pos_zero(m[i]);
    double s = 1;
    if (scale == "absRef") {
      s = std::fabs(r[i]);
    } else if (scale == "maxAbsVector" || scale == "convTerms" || scale == "normTerms") {
      // §FUS.9 the (position, stream) vector of `hidden` values the element belongs to.
      s = 0;
      const size_t begin = (i / vector_len) * vector_len;
      for (size_t j = begin; j < std::min(r.size(), begin + vector_len); ++j) {
        if (std::isfinite(r[j])) s = std::max(s, std::fabs(r[j]));
      }
      // convTerms: plus the conv's reduction bound, a * S = a * max|r| + 1.1 gamma T.
      if (scale == "convTerms" && std::isfinite(conv_bound[i])) s += conv_bound[i] / a;
      // normTerms: plus the RMSNorm's rounding bound (§FUS.12).
      if (scale == "normTerms" && std::isfinite(norm_bound[i])) s += norm_bound[i] / a;
    } else if (scale == "gateSlope") {
      double delta = 0;
      if (i < dots.size()) {
        const ojson dot_rule = group.value("tolerance", ojson::object()).value(type == "DemoGateTest" ? "g" : "dot", ojson::object());
        const double kd = dot_rule.contains("k") ? FloatOf(dot_rule["k"], "tolerance.k") : 2;
        const double ad = dot_rule.contains("a") ? FloatOf(dot_rule["a"], "tolerance.a") : std::ldexp(1.0, -18);
        const double t = kd * std::fabs(dots[i].m - dots[i].r) + ad * dots[i].scale;
        delta = GateSlopeDelta(group.value("profile", "") == "demo-v1", dots[i].r, t);
      }
      s = 1 + delta / a;
    } else if (scale == "dotScale") {
      if (i >= dots.size()) return key + ": the vector gives no dotScale for this value";
      s = dots[i].scale;
    } else {
      return key + ": the group's tolerance scale '" + scale + "' is not understood";
    }
    // §FUS.9 where both evaluations give +0 (masked positions) the value MUST be +0.
    // §FUS.9.1 with an interval, the distance is measured to [lo, hi] (y inside it, or
    // the nearest end): WithinTolerance's mirror term stays |m - r|.
    const bool widened = lo[i] != hi[i] && std::isfinite(lo[i]) && std::isfinite(hi[i]) && std::isfinite(y);
    const double nearest = widened ? std::clamp(y, lo[i], hi[i]) : r[i];
    const bool ok = pos_zero ? is_pos_zero(y)
                    : widened ? std::fabs(y - nearest) <= k * std::fabs(m[i] - r[i]) + a * s
                              : WithinTolerance(y, r[i], m[i], k, a, s);
    if (!ok) {
      const double allowed = k * std::fabs(m[i] - r[i]) + a * s;
      return path + ": got " + FloatHex(y) + ", float64 reference " + FloatHex(r[i]) +
             (widened ? " widened to [" + FloatHex(lo[i]) + ", " + FloatHex(hi[i]) + "] (§FUS.9.1)" : "") +
             ", float32 mirror " + FloatHex(m[i]) +
             (pos_zero ? "; a masked value must be +0 exactly"
                       : "; |error| " + FloatHex(std::fabs(y - nearest)) + " > allowed " + FloatHex(allowed) + " (k " +
                             FloatHex(k) + ", a " + FloatHex(a) + ", " + scale + " " + FloatHex(s) + ")");
    }
  }
  return "";
}


}  // namespace

SplitTest SplitOrdered(const std::string& type, const ojson& test) {
  SplitTest out{ojson::object(), ojson::object()};
  // Room for every key first: an ordered object's member vector copies (not moves) its values when it grows.
  out.inputs.get_ref<ojson::object_t&>().reserve(test.size());
  out.expected.get_ref<ojson::object_t&>().reserve(test.size());
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
      ojson stripped = ojson::array();
      for (const ojson& element : value) {
        if (n->two_levels) {
          ojson inner = ojson::array();
          for (const ojson& e : element) inner.push_back(StripKeys(e, n->keys));
          stripped.push_back(std::move(inner));
        } else {
          stripped.push_back(StripKeys(element, n->keys));
        }
      }
      out.inputs[key] = std::move(stripped);
      if (test.value("result", "") == "valid") out.expected[key] = value;
      continue;
    }
    if (after_result) out.expected[key] = value;
    else out.inputs[key] = value;
  }
  return out;
}

std::string CompareOrdered(const std::string& type, const ojson& expected, const ojson& actual) {
  return CompareOrdered(type, ojson::object(), expected, actual);
}

std::string CompareOrdered(const std::string& type, const ojson& group, const ojson& expected, const ojson& actual) {
  const std::vector<Nested> nested = NestedOutputs(type);
  const ojson tolerance = group.is_object() ? group.value("tolerance", ojson::object()) : ojson::object();
  for (const auto& [key, value] : expected.items()) {
    if (IsInformative(type, key)) continue;
    // §CONF.1 `<out>Ref64` is the float64 reference a faithfulBf16 output is judged by, not an output.
    if (key.size() > 5 && key.substr(key.size() - 5) == "Ref64" && tolerance.contains(key.substr(0, key.size() - 5))) continue;
    // §FUS.9.1 `<out>Low64` / `<out>High64` bound the values an output is judged over, not outputs.
    if (key.size() > 5 && key.substr(key.size() - 5) == "Low64" && tolerance.contains(key.substr(0, key.size() - 5))) continue;
    if (key.size() > 6 && key.substr(key.size() - 6) == "High64" && tolerance.contains(key.substr(0, key.size() - 6))) continue;
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
    const ojson& got = actual[key];
    if (!got.is_array() || got.size() != value.size()) {
      return key + ": expected " + std::to_string(value.size()) + " elements, got " + Short(got);
    }
    for (size_t i = 0; i < value.size(); ++i) {
      auto compare_element = [&](const ojson& e, const ojson& a, const std::string& path) -> std::string {
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


}  // namespace engram::vectors
