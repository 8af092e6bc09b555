// spec/conformance.md §CONF.7 — random cases of the fusion suites (§FUS):
// gate_v41 (GateFunctionTest, V41GateTest, WkvTest), gate_demo
// (GateFunctionTest, DemoGateTest), short_conv_demo (ShortConvTest) and
// engram_forward (EngramForwardTest, both profiles).
//
// The recipe holds the shapes and every input array as bit patterns (bf16,
// float32 or float64 bits, E4M3 codes, E8M0 bytes): each float is built from
// integer draws, never from a platform math function, so GCC and clang give
// the same bytes (§CONF.7 determinism). Build() writes the group and test the
// fixed vectors write (vectors/suite_fusion.h: the same expected-value
// function, tolerance blocks and demo parameter keys).
//
// Distributions (edges favoured; the figures per type are in §CONF.7 item 2):
// an array is "ordinary" (random mantissas, exponents within 4 of the array's
// scale) in half the cases; otherwise it holds 1-3 edge values (+-0,
// subnormal, tiny normal, huge, +-inf, NaN, +-1, any bit pattern), or its
// scale itself is extreme (2^-120, 2^-60, 2^60, 2^120, or 2^-9 where eps
// dominates a norm), or it is all +0. Gate dots are +-0, +-1e-6 and
// its neighbours, values within 2^40 ulps of the clamp, any float64 or
// float32 bit pattern, or ordinary. One case in 20 has an input one value
// short and must be refused. Masked V41 positions put -0 into h and inf/NaN
// into v half the time (§FUS.3).
//
// §FUS.9 decidability: a case is kept only if both a float64 port and a
// float32 port that computes like the mirror pass it (the mirror's bf16 out is
// a faithful rounding of the float64 value, ...). Where float32 overflows and
// float64 does not, no tolerance can hold, so Build refuses such a recipe and
// Draw draws again (deterministically, from the same stream).
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "reference/config.h"
#include "reference/fusion.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/compare.h"
#include "vectors/random_cases.h"
#include "vectors/suite.h"
#include "vectors/suite_fusion.h"

namespace engram::vectors {
namespace {

// ------------------------------------------------------------------ values

enum class Fmt { kBf16, kF32 };

constexpr uint32_t kOneF32 = 0x3F800000;

uint32_t ToF32Bits(uint32_t bits, Fmt f) { return f == Fmt::kBf16 ? bits << 16 : bits; }
uint32_t FromF32Bits(uint32_t f32, Fmt f) { return f == Fmt::kBf16 ? f32 >> 16 : f32; }
double ValueOf(uint32_t bits, Fmt f) { return static_cast<double>(std::bit_cast<float>(ToF32Bits(bits, f))); }

// How far a float32 value is from the simplest ones (+0, then 1.0): what the
// value shrinks decrease. Sign, significant mantissa bits and distance of the
// exponent from 0 each count.
int64_t Complexity32(uint32_t f32) {
  if (f32 == 0) return 0;
  if (f32 == kOneF32) return 1;
  if (f32 == 0x80000000u) return 2;
  const uint32_t field = (f32 >> 23) & 0xFF, mant = f32 & 0x7FFFFF, sign = f32 >> 31;
  if (field == 0xFF) return mant != 0 ? 60 : 50 + sign;
  const int64_t bits = mant == 0 ? 0 : 23 - std::countr_zero(mant);
  const int64_t exp = field == 0 ? 40 : std::min<int64_t>(40, field > 127 ? field - 127 : 127 - field);
  return 3 + sign + bits + exp;
}
int64_t Complexity(uint32_t bits, Fmt f) { return Complexity32(ToF32Bits(bits, f)); }

int64_t Complexity64(uint64_t b) {
  if (b == 0) return 0;
  if (b == 0x3FF0000000000000ULL) return 1;
  if (b == 0x8000000000000000ULL) return 2;
  const uint64_t field = (b >> 52) & 0x7FF, mant = b & 0xFFFFFFFFFFFFFULL, sign = b >> 63;
  if (field == 0x7FF) return mant != 0 ? 120 : 100 + static_cast<int64_t>(sign);
  const int64_t bits = mant == 0 ? 0 : 52 - std::countr_zero(mant);
  const int64_t exp = field == 0 ? 64 : std::min<int64_t>(64, field > 1023 ? field - 1023 : 1023 - field);
  return 3 + static_cast<int64_t>(sign) + bits + exp;
}

// An ordinary value of scale 2^scale: a random sign and mantissa, the
// exponent scale - 3 ... scale (kept normal). One draw per statement: the
// order of two draws in one expression is unspecified in C++.
uint32_t OrdinaryBits(CaseRng& rng, Fmt f, int scale) {
  const uint32_t sign = rng.Chance(1, 2) ? 1u : 0u;
  const int64_t exp = scale - rng.In(0, 3);
  const uint32_t field = static_cast<uint32_t>(std::clamp<int64_t>(127 + exp, 1, 254));
  const uint32_t mant = static_cast<uint32_t>(rng.Below(int64_t{1} << 23));
  return FromF32Bits(sign << 31 | field << 23 | mant, f);
}

// §FUS.3 / §FUS.9 an edge value: the ones the numeric contract names.
uint32_t EdgeBits(CaseRng& rng, Fmt f) {
  const uint32_t sign = rng.Chance(1, 2) ? 0x80000000u : 0u;
  const int64_t mbits = f == Fmt::kBf16 ? 7 : 23;
  const uint32_t mant = static_cast<uint32_t>(rng.In(1, (int64_t{1} << mbits) - 1)) << (23 - mbits);
  uint32_t f32 = 0;
  switch (rng.Below(9)) {
    case 0: f32 = sign; break;                                                            // +-0
    case 1: f32 = sign | mant; break;                                                     // subnormal
    case 2: f32 = sign | static_cast<uint32_t>(rng.In(1, 4)) << 23 | mant; break;          // tiny normal
    case 3: f32 = sign | static_cast<uint32_t>(rng.In(0xF0, 0xFE)) << 23 | mant; break;    // huge
    case 4: f32 = sign | 0x7F800000u; break;                                              // +-inf
    case 5: f32 = 0x7FC00000u; break;                                                     // NaN
    case 6: f32 = sign | kOneF32; break;                                                  // +-1
    case 7: f32 = static_cast<uint32_t>(rng.Next()); break;                               // any pattern
    default: f32 = sign | 0x3F000000u; break;                                             // +-0.5
  }
  return FromF32Bits(f32, f);
}

// §CONF.7 the plan of one array: ordinary in half the cases, else a few edge
// values in it, else an extreme scale. `scale`: the array's usual scale.
ojson DrawArray(CaseRng& rng, size_t n, Fmt f, int scale) {
  const int64_t plan = rng.Below(8);
  if (plan == 6) {
    const int extremes[] = {-120, -60, -9, 60, 120};
    scale = extremes[rng.Below(5)];
  }
  ojson a = ojson::array();
  for (size_t i = 0; i < n; ++i) a.push_back(OrdinaryBits(rng, f, scale));
  if (plan >= 4 && plan <= 5 && n > 0) {
    const int64_t edges = rng.In(1, 3);
    for (int64_t k = 0; k < edges; ++k) {
      const size_t at = static_cast<size_t>(rng.Below(static_cast<int64_t>(n)));
      a[at] = EdgeBits(rng, f);
    }
  }
  if (plan == 7) {  // an all-zero array (a zero stream, a zero weight, §FUS.3 ZeroStream)
    for (size_t i = 0; i < n; ++i) a[i] = 0;
  }
  return a;
}

// An array of ordinary values only (`plain`: the fallback of DrawBuildable), or planned as above.
ojson DrawFloats(CaseRng& rng, size_t n, Fmt f, int scale, bool plain) {
  if (!plain) return DrawArray(rng, n, f, scale);
  ojson a = ojson::array();
  for (size_t i = 0; i < n; ++i) a.push_back(OrdinaryBits(rng, f, scale));
  return a;
}
ojson HexOf(const ojson& a, Fmt f) {
  ojson out = ojson::array();
  for (const ojson& b : a) out.push_back(FloatHex(ValueOf(b.get<uint32_t>(), f)));
  return out;
}
std::vector<double> ValuesOf(const ojson& a, Fmt f) {
  std::vector<double> v;
  for (const ojson& b : a) v.push_back(ValueOf(b.get<uint32_t>(), f));
  return v;
}

// An array of a recipe with its last value dropped: the "one value short"
// input that must be refused (§FUS.3, §FUS.6, §FUS.7). Kept in the recipe as
// the array's name, so that shrinking the shapes keeps the case invalid.
ojson ShortenedIf(const ojson& r, const std::string& key, ojson a) {
  if (r.value("short", std::string()) == key && !a.empty()) a.erase(a.size() - 1);
  return a;
}

// ------------------------------------------------------------------ shapes and shrinking

// A row-major [rows][cols] array cut to its first rows2 rows and cols2 columns.
ojson Cut2(const ojson& a, size_t rows, size_t cols, size_t rows2, size_t cols2) {
  ojson out = ojson::array();
  for (size_t i = 0; i < rows2 && i < rows; ++i) {
    for (size_t j = 0; j < cols2 && j < cols; ++j) out.push_back(a[i * cols + j]);
  }
  return out;
}
// A row-major [A][B][C] array cut to [A2][B2][C2].
ojson Cut3(const ojson& a, size_t A, size_t B, size_t C, size_t A2, size_t B2, size_t C2) {
  ojson out = ojson::array();
  for (size_t i = 0; i < A2 && i < A; ++i) {
    for (size_t j = 0; j < B2 && j < B; ++j) {
      for (size_t k = 0; k < C2 && k < C; ++k) out.push_back(a[(i * B + j) * C + k]);
    }
  }
  return out;
}

// Smaller values of a size n >= lo: lo, n / 2 and n - 1 (each once, each < n).
std::vector<int64_t> Smaller(int64_t n, int64_t lo) {
  std::vector<int64_t> out;
  for (int64_t m : {lo, n / 2, n - 1}) {
    if (m >= lo && m < n && std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  }
  return out;
}

// Shrink candidates that make the values of the array r[key] simpler: all of
// them `simple`, the first half of the others `simple`, and (when few are
// left) each one alone.
void SimplifyValues(const ojson& r, const std::string& key, uint32_t simple, std::vector<ojson>& out) {
  const ojson& a = r[key];
  std::vector<size_t> other;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].get<uint32_t>() != simple) other.push_back(i);
  }
  if (other.empty()) return;
  auto with = [&](size_t from, size_t to) {
    ojson c = r;
    for (size_t k = from; k < to; ++k) c[key][other[k]] = simple;
    out.push_back(c);
  };
  with(0, other.size());
  if (other.size() > 1) with(0, other.size() / 2);
  if (other.size() > 1 && other.size() <= 6) {
    for (size_t k = 0; k < other.size(); ++k) with(k, k + 1);
  }
}

// The float values of the arrays `keys` toward +0 (and the weights toward 1).
void SimplifyFloats(const ojson& r, const std::vector<std::string>& keys, Fmt f, std::vector<ojson>& out) {
  for (const std::string& key : keys) {
    const bool weight = key.find("Weight") != std::string::npos && key != "keyWeight" && key != "valueWeight" &&
                        key != "convWeight";
    SimplifyValues(r, key, weight ? FromF32Bits(kOneF32, f) : 0, out);
  }
}

int64_t ArrayMeasure(const ojson& r, const std::vector<std::string>& keys, Fmt f) {
  int64_t m = 0;
  for (const std::string& key : keys) {
    for (const ojson& b : r[key]) m += 128 + Complexity(b.get<uint32_t>(), f);
  }
  return m;
}

// §FUS.9 Whether a float64 port and a float32 port computing like the mirror
// both pass the expected outputs `computed` (as vectors/suite_fusion.cc's
// FusionPortFails reads a port's answer: float64 values of tolerance outputs,
// bf16 bits from the mirror).
std::string Undecidable(const std::string& type, const ojson& group, const ojson& computed) {
  if (computed["result"] != "valid") return "";
  ojson want = computed, as64 = computed;
  want.erase("result");
  as64.erase("result");
  as64.erase("intermediate");
  ojson as32 = as64;
  for (auto it = as32.begin(); it != as32.end(); ++it) {
    if (it->is_object() && it->contains("float32")) {
      const ojson only = (*it)["float32"];
      *it = only;
    }
  }
  const std::string why64 = conform::CompareOrdered(type, group, want, as64);
  return why64.empty() ? conform::CompareOrdered(type, group, want, as32) : why64;
}

// A case of `type` and `profile` from recipe r, its group and test still to come.
RandomCase NewCase(const ojson& r, const std::string& type, const std::string& profile) {
  RandomCase c;
  c.recipe = r;
  c.type = type;
  c.profile = profile;
  return c;
}

// The test of a case: its inputs, then the reference's expected fields; a
// recipe whose outputs no port could be held to is refused (see above).
void Finish(RandomCase& c, ojson inputs) {
  const json group_j = json::parse(c.group.dump()), inputs_j = json::parse(inputs.dump());
  const ojson computed = FusionExpected(group_j, inputs_j);
  const std::string why = Undecidable(c.type, c.group, computed);
  if (!why.empty()) throw Error("fusion recipe: the float32 mirror fails its own tolerance (" + why + ")");
  for (const auto& [k, v] : computed.items()) inputs[k] = v;
  c.test = inputs;
}

// Draw a recipe until it builds: a recipe that Build refuses (undecidable,
// above) is replaced by the next draw of the same stream; after 16 tries the
// last draw is returned with its edges gone (`plain`).
//
// The case built last is kept (per thread), so that DrawCase's build of the
// recipe just drawn does not compute it a second time.
struct LastBuilt {
  ojson recipe;
  RandomCase c;
};
thread_local LastBuilt last_built;

ojson DrawBuildable(CaseRng& rng, const std::function<ojson(CaseRng&, bool plain)>& draw,
                    const std::function<RandomCase(const ojson&)>& build) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    ojson r = draw(rng, false);
    try {
      RandomCase c = build(r);
      last_built = {r, std::move(c)};
      return r;
    } catch (const Error&) {
    }
  }
  return draw(rng, true);
}

// `build`, or the case DrawBuildable built from this very recipe.
RandomCase Cached(const ojson& r, const std::function<RandomCase(const ojson&)>& build) {
  if (!last_built.recipe.is_null() && last_built.recipe == r) return last_built.c;
  return build(r);
}

// ------------------------------------------------------------------ GateFunctionTest (§FUS.4, §FUS.6)

constexpr uint64_t kClampBits = 0x3EB0C6F7A0B5ED8DULL;  // the double nearest 1e-6
constexpr uint64_t kClampF32Bits = 0x358637BDULL;       // fl32(1e-6)
constexpr uint64_t kSign64 = 0x8000000000000000ULL;

uint64_t DrawDotBits(CaseRng& rng) {
  const uint64_t sign = rng.Chance(1, 2) ? kSign64 : 0;
  switch (rng.Below(8)) {
    case 0:
    case 1:
    case 2: {  // the named points: +-0 (twice as often), the clamp and its neighbours, +-inf, NaN,
               // the smallest subnormal, the largest double
      const uint64_t f32_clamp = std::bit_cast<uint64_t>(static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(kClampF32Bits))));
      const uint64_t points[] = {0, 0, kClampBits, kClampBits - 1, kClampBits + 1, f32_clamp,
                                 0x7FF0000000000000ULL, 0x7FF8000000000000ULL, 1, 0x7FEFFFFFFFFFFFFFULL};
      return sign | points[rng.Below(10)];
    }
    case 3: {  // within 2^40 ulps of the clamp, either side
      const uint64_t off = static_cast<uint64_t>(rng.Scaled(0, int64_t{1} << 40));
      return sign | (rng.Chance(1, 2) ? kClampBits + off : kClampBits - off);
    }
    case 4: return rng.Next();  // any float64 bit pattern
    case 5: {                   // any float32 bit pattern, as the double it is
      const float x = std::bit_cast<float>(static_cast<uint32_t>(rng.Next()));
      return std::bit_cast<uint64_t>(static_cast<double>(x));
    }
    case 6: {  // tiny: below the clamp, subnormal or normal
      const uint64_t field = static_cast<uint64_t>(rng.In(0, 1002));
      return sign | field << 52 | (rng.Next() & 0xFFFFFFFFFFFFFULL);
    }
    default: {  // ordinary: |dot| in [2^-24, 2^8)
      const uint64_t field = static_cast<uint64_t>(rng.In(1023 - 24, 1023 + 7));
      return sign | field << 52 | (rng.Next() & 0xFFFFFFFFFFFFFULL);
    }
  }
}

RandomCase BuildGateFunction(const ojson& r, const std::string& profile) {
  RandomCase c = NewCase(r, "GateFunctionTest", profile);
  const uint64_t bits = r["dot"];
  const double dot = std::bit_cast<double>(bits);
  const bool v41 = profile == "v4.1";
  c.group = {{"type", "GateFunctionTest"},
             {"comment", std::string("random: the ") + (v41 ? "v4.1" : "demo") + " gate as a function of " + (v41 ? "dot" : "g")},
             {"profile", profile},
             {"tolerance", FusionTolerance("GateFunctionTest", profile)}};
  Finish(c, {{"dot", FloatHex(dot)}});
  c.spec_refs = {v41 ? "§FUS.4" : "§FUS.6"};
  c.size = "dot " + FloatHex(dot);
  c.measure = Complexity64(bits);
  return c;
}

std::vector<ojson> ShrinkGateFunction(const ojson& r) {
  const uint64_t b = r["dot"];
  const uint64_t field = (b >> 52) & 0x7FF, mant = b & 0xFFFFFFFFFFFFFULL;
  std::vector<uint64_t> cands = {0, 0x3FF0000000000000ULL, b & ~kSign64};
  if (field != 0x7FF && mant != 0) {  // the lower half of the significant mantissa bits cleared
    const int sig = 52 - std::countr_zero(mant);
    cands.push_back(b & ~((uint64_t{1} << (52 - sig / 2)) - 1));
  }
  if (field != 0 && field != 0x7FF && field != 1023) {  // the exponent halfway to 0
    const int64_t e = static_cast<int64_t>(field) - 1023;
    cands.push_back((b & ~(uint64_t{0x7FF} << 52)) | static_cast<uint64_t>(1023 + e / 2) << 52);
  }
  std::vector<ojson> out;
  for (uint64_t x : cands) {
    if (x == b) continue;
    ojson c = r;
    c["dot"] = x;
    out.push_back(c);
  }
  return out;
}

// ------------------------------------------------------------------ V41GateTest (§FUS.3)

const std::vector<std::string> kV41Keys = {"x", "key", "value", "qWeight", "kWeight"};
const char* const kEpsHex[] = {"0x1.79ca10c924223p-67", "0x1.0c6f7a0b5ed8dp-20"};  // 1e-20 (shipped), 1e-6

ojson DrawV41Gate(CaseRng& rng, bool plain) {
  ojson r;
  r["type"] = "V41GateTest";
  const int64_t dim = rng.Chance(1, 4) ? 64 : rng.Scaled(1, 64);
  const int64_t hc = rng.Chance(1, 2) ? 4 : rng.In(1, 5);
  r["dim"] = dim;
  r["hc"] = hc;
  const int64_t eps_kind = rng.Below(4);
  // eps: 1e-20 (shipped), 1e-6, or a power of two in [2^-80, 2^-10] (exact from its exponent)
  r["eps"] = eps_kind < 2 ? std::bit_cast<uint64_t>(ParseFloat(kEpsHex[eps_kind], "eps"))
                          : static_cast<uint64_t>(1023 - rng.In(10, 80)) << 52;
  const bool masked = rng.Chance(1, 4);
  r["masked"] = masked;
  const size_t n = static_cast<size_t>(hc * dim);
  // Scales as in the fixed vectors: the key 2^1, the others 2^0.
  for (const std::string& key : kV41Keys) {
    r[key] = DrawFloats(rng, key == "value" ? static_cast<size_t>(dim) : n, Fmt::kBf16, key == "key" ? 1 : 0, plain);
  }
  if (masked && !plain && rng.Chance(1, 2)) {  // §FUS.3 MaskedNonFinite / NegativeZeroH
    const size_t h_at = static_cast<size_t>(rng.Below(static_cast<int64_t>(n)));
    const size_t v_at = static_cast<size_t>(rng.Below(dim));
    const uint32_t v_bits = rng.Chance(1, 2) ? 0x7F80 : 0x7FC0;
    r["x"][h_at] = 0x8000;
    r["value"][v_at] = v_bits;
  }
  if (!plain && rng.Chance(1, 8) && dim % 2 == 0) {
    // §FUS.3 stream c with h orthogonal to w*key in small exact values: the
    // pairs cancel exactly, so its dot is +0 in every summation order.
    const size_t s = static_cast<size_t>(rng.Below(hc)) * static_cast<size_t>(dim);
    for (size_t i = 0; i < static_cast<size_t>(dim); ++i) {
      r["x"][s + i] = 0x3F80;
      r["key"][s + i] = i % 2 == 0 ? 0x3F00 : 0xBF00;
      r["qWeight"][s + i] = 0x3F80;
      r["kWeight"][s + i] = 0x3F80;
    }
  }
  r["short"] = !plain && rng.Chance(1, 20) ? kV41Keys[rng.Below(5)] : "";
  return r;
}

RandomCase BuildV41Gate(const ojson& r) {
  RandomCase c = NewCase(r, "V41GateTest", "v4.1");
  const size_t dim = r["dim"], hc = r["hc"];
  const double eps = std::bit_cast<double>(r["eps"].get<uint64_t>());
  c.group = V41GateGroupJson("random: post-wkv gate, dim " + std::to_string(dim) + ", hc " + std::to_string(hc) +
                                 ", eps " + FloatHex(eps),
                             dim, hc, eps);
  ojson in;
  for (const std::string& key : kV41Keys) in[key] = ShortenedIf(r, key, r[key]);
  in["masked"] = r["masked"];
  Finish(c, in);
  c.spec_refs = {"§FUS.3", "§FUS.4"};
  c.size = "dim " + std::to_string(dim) + ", hc " + std::to_string(hc) + (r["masked"].get<bool>() ? ", masked" : "");
  c.measure = 128 * static_cast<int64_t>(dim + hc) + ArrayMeasure(r, kV41Keys, Fmt::kBf16) + (r["masked"].get<bool>() ? 1 : 0);
  return c;
}

std::vector<ojson> ShrinkV41Gate(const ojson& r) {
  std::vector<ojson> out;
  const size_t dim = r["dim"], hc = r["hc"];
  auto reshape = [&](size_t hc2, size_t dim2) {
    ojson c = r;
    c["hc"] = hc2;
    c["dim"] = dim2;
    for (const std::string& key : kV41Keys) {
      c[key] = key == "value" ? Cut2(r[key], 1, dim, 1, dim2) : Cut2(r[key], hc, dim, hc2, dim2);
    }
    out.push_back(c);
  };
  for (int64_t h : Smaller(static_cast<int64_t>(hc), 1)) reshape(static_cast<size_t>(h), dim);
  for (int64_t d : Smaller(static_cast<int64_t>(dim), 1)) reshape(hc, static_cast<size_t>(d));
  if (r["masked"].get<bool>()) {
    ojson c = r;
    c["masked"] = false;
    out.push_back(c);
  }
  SimplifyFloats(r, kV41Keys, Fmt::kBf16, out);
  return out;
}

// ------------------------------------------------------------------ WkvTest (§FUS.2)

// E4M3 codes that are not NaN ((c & 0x7F) == 0x7F), with 0, -0, 448, the
// smallest subnormal and 1.0 favoured; E8M0 scale bytes that keep every
// float32 sum finite and normal enough (§FUS.2.2; 0x00 and 0xFF are the
// storage suites' edges, not the GEMM's).
uint32_t DrawCode(CaseRng& rng) {
  if (rng.Chance(1, 8)) {
    const uint32_t edges[] = {0x00, 0x80, 0x7E, 0xFE, 0x01, 0x38};
    return edges[rng.Below(6)];
  }
  uint32_t c = static_cast<uint32_t>(rng.Below(256));
  if ((c & 0x7F) == 0x7F) c = 0x38;
  return c;
}

ojson DrawWkv(CaseRng& rng, bool plain) {
  ojson r;
  r["type"] = "WkvTest";
  const bool fp8 = rng.Chance(2, 3);
  r["fp8"] = fp8;
  // in: whole K blocks of 32 for fp8 (§FUS.2.2); out past 32 and 128 rows so
  // that the scale's row index n / 32 matters (Fp8Blocks32).
  const int64_t in = fp8 ? 32 * rng.In(1, 8) : rng.Scaled(1, 96);
  const int64_t out = rng.Chance(1, 3) ? rng.In(129, 160) : rng.Scaled(1, 80);
  r["in"] = in;
  r["out"] = out;
  const int e_scales[] = {0, 8, -20, 0};
  const int e_scale = e_scales[rng.Below(4)];
  r["e"] = DrawFloats(rng, static_cast<size_t>(in), Fmt::kBf16, e_scale, plain);
  if (fp8) {
    ojson codes = ojson::array(), scales = ojson::array();
    for (int64_t i = 0; i < out * in; ++i) codes.push_back(DrawCode(rng));
    const int64_t ns = (out + 31) / 32 * (in / 32);
    for (int64_t i = 0; i < ns; ++i) scales.push_back(rng.Chance(1, 8) ? rng.In(90, 170) : rng.In(118, 129));
    r["codes"] = codes;
    r["scales"] = scales;
  } else {
    ojson w = ojson::array();
    for (int64_t i = 0; i < out * in; ++i) w.push_back(OrdinaryBits(rng, Fmt::kBf16, -3));
    r["weight"] = w;
  }
  r["short"] = !plain && rng.Chance(1, 20) ? "e" : "";
  return r;
}

RandomCase BuildWkv(const ojson& r) {
  RandomCase c = NewCase(r, "WkvTest", "v4.1");
  const int64_t in = r["in"], out = r["out"];
  const bool fp8 = r["fp8"];
  if (fp8 && (in % 32 != 0 || r["scales"].size() != static_cast<size_t>((out + 31) / 32 * (in / 32)))) {
    throw Error("wkv recipe: the scales do not fit the shape");
  }
  c.group = {{"type", "WkvTest"},
             {"comment", "random: wkv projection, out " + std::to_string(out) + ", in " + std::to_string(in) +
                             (fp8 ? ", fp8 32x32 blocks" : ", bf16")},
             {"profile", "v4.1"},
             {"tolerance", FusionTolerance("WkvTest", "v4.1")}};
  ojson inputs = {{"e", ShortenedIf(r, "e", r["e"])}, {"outFeatures", out}};
  if (fp8) {
    inputs["weightCodes"] = r["codes"];
    inputs["weightScales"] = r["scales"];
  } else {
    inputs["weight"] = r["weight"];
  }
  Finish(c, inputs);
  c.spec_refs = {"§FUS.2"};
  c.size = "out " + std::to_string(out) + ", in " + std::to_string(in) + (fp8 ? ", fp8" : ", bf16");
  int64_t m = 128 * (in + out) + ArrayMeasure(r, {"e"}, Fmt::kBf16);
  if (fp8) {
    for (const ojson& x : r["codes"]) m += x == 0x38 ? 0 : x == 0 ? 1 : 2 + std::popcount(x.get<uint32_t>());
    for (const ojson& x : r["scales"]) m += x == 127 ? 0 : 1;
  } else {
    m += ArrayMeasure(r, {"weight"}, Fmt::kBf16);
  }
  c.measure = m;
  return c;
}

std::vector<ojson> ShrinkWkv(const ojson& r) {
  std::vector<ojson> out;
  const int64_t in = r["in"], nout = r["out"];
  const bool fp8 = r["fp8"];
  auto reshape = [&](int64_t out2, int64_t in2) {
    ojson c = r;
    c["out"] = out2;
    c["in"] = in2;
    c["e"] = Cut2(r["e"], 1, static_cast<size_t>(in), 1, static_cast<size_t>(in2));
    if (fp8) {
      c["codes"] = Cut2(r["codes"], static_cast<size_t>(nout), static_cast<size_t>(in), static_cast<size_t>(out2),
                        static_cast<size_t>(in2));
      c["scales"] = Cut2(r["scales"], static_cast<size_t>((nout + 31) / 32), static_cast<size_t>(in / 32),
                         static_cast<size_t>((out2 + 31) / 32), static_cast<size_t>(in2 / 32));
    } else {
      c["weight"] = Cut2(r["weight"], static_cast<size_t>(nout), static_cast<size_t>(in), static_cast<size_t>(out2),
                         static_cast<size_t>(in2));
    }
    out.push_back(c);
  };
  for (int64_t o : Smaller(nout, 1)) reshape(o, in);
  if (fp8) {
    for (int64_t b : Smaller(in / 32, 1)) reshape(nout, 32 * b);
  } else {
    for (int64_t i : Smaller(in, 1)) reshape(nout, i);
  }
  SimplifyFloats(r, {"e"}, Fmt::kBf16, out);
  if (fp8) {
    SimplifyValues(r, "codes", 0x38, out);
    SimplifyValues(r, "scales", 127, out);
  } else {
    SimplifyFloats(r, {"weight"}, Fmt::kBf16, out);
  }
  return out;
}

// ------------------------------------------------------------------ demo-v1 parameters (§FUS.5-§FUS.7)

// The demo parameter arrays, all float32: the Linear weights of scale 2^-2,
// biases 2^-3, norm weights around 1, conv taps 2^-1 (as the fixed vectors).
const std::vector<std::string> kDemoGateKeys = {"keyWeight", "keyBias", "norm1Weight", "norm2Weight", "valueWeight",
                                                "valueBias"};
const std::vector<std::string> kConvKeys = {"convNormWeight", "convWeight"};

int DemoScale(const std::string& key) {
  if (key == "keyBias" || key == "valueBias") return -3;
  if (key == "convWeight") return -1;
  if (key == "keyWeight" || key == "valueWeight") return -2;
  return 0;  // the norm weights
}

size_t DemoCount(const std::string& key, size_t hc, size_t hidden, size_t in, size_t kernel) {
  if (key == "keyWeight") return hc * hidden * in;
  if (key == "valueWeight") return hidden * in;
  if (key == "valueBias") return hidden;
  if (key == "convWeight") return hc * hidden * kernel;
  return hc * hidden;
}

ojson DrawDemoArray(CaseRng& rng, const std::string& key, size_t n, bool plain) {
  return DrawFloats(rng, n, Fmt::kF32, DemoScale(key), plain);
}

// A demo group's parameters from the recipe: the arrays it holds, and for
// the ones a test type does not read (the conv's in DemoGateTest, the gate's
// in ShortConvTest) the simple values 1 (norm weights) and 0 (the others).
void AddRecipeParams(ojson& g, const ojson& r, size_t hc, size_t hidden, size_t in, size_t kernel, size_t dilation) {
  AddDemoParamArrays(g, hc, hidden, in, kernel, dilation, [&](const std::string& key, size_t n) {
    if (r.contains(key)) return ValuesOf(r[key], Fmt::kF32);
    return std::vector<double>(n, key.find("norm") != std::string::npos || key == "convNormWeight" ? 1.0 : 0.0);
  });
}

// The recipe's demo arrays cut to new shapes: [hc][hidden][in] weights,
// [hc][hidden] biases and norms, [hidden][in] and [hidden] of the value
// projection, [hc][hidden][kernel] taps (the newest kept: tap kernel - 1
// multiplies the current step, §FUS.7).
void CutDemoArrays(ojson& c, const ojson& r, size_t hc, size_t hidden, size_t in, size_t kernel, size_t hc2,
                   size_t hidden2, size_t in2, size_t kernel2) {
  for (const auto& [key, value] : r.items()) {
    if (key == "keyWeight") c[key] = Cut3(value, hc, hidden, in, hc2, hidden2, in2);
    if (key == "keyBias" || key == "norm1Weight" || key == "norm2Weight" || key == "convNormWeight") {
      c[key] = Cut2(value, hc, hidden, hc2, hidden2);
    }
    if (key == "valueWeight") c[key] = Cut2(value, hidden, in, hidden2, in2);
    if (key == "valueBias") c[key] = Cut2(value, 1, hidden, 1, hidden2);
    if (key == "convWeight") {
      ojson taps = ojson::array();
      for (size_t ch = 0; ch < hc2 * hidden2; ++ch) {
        const size_t old = (ch / hidden2) * hidden + ch % hidden2;
        for (size_t j = kernel - kernel2; j < kernel; ++j) taps.push_back(value[old * kernel + j]);
      }
      c[key] = taps;
    }
  }
}

// ------------------------------------------------------------------ DemoGateTest (§FUS.5, §FUS.6)

ojson DrawDemoGate(CaseRng& rng, bool plain) {
  ojson r;
  r["type"] = "DemoGateTest";
  const int64_t hc = rng.Chance(1, 2) ? 2 : rng.In(1, 4);
  const int64_t hidden = rng.Chance(1, 4) ? 16 : rng.Scaled(1, 24);
  const int64_t in = rng.Chance(1, 4) ? 32 : rng.Scaled(1, 48);
  r["hc"] = hc;
  r["hidden"] = hidden;
  r["in"] = in;
  for (const std::string& key : kDemoGateKeys) {
    r[key] = DrawDemoArray(rng, key, DemoCount(key, static_cast<size_t>(hc), static_cast<size_t>(hidden),
                                               static_cast<size_t>(in), 4), plain);
  }
  r["e"] = DrawFloats(rng, static_cast<size_t>(in), Fmt::kF32, 0, plain);
  // The hidden state: scale 2 as in the fixed vectors, or 2^-14 (mean square
  // far below 1e-5, where the norm's eps matters, §FUS.5) one time in four.
  const int64_t state_kind = rng.Below(4);
  r["state"] = DrawFloats(rng, static_cast<size_t>(hc * hidden), Fmt::kF32, state_kind == 0 ? -14 : 1, plain);
  r["short"] = !plain && rng.Chance(1, 20) ? (rng.Chance(1, 2) ? "e" : "state") : "";
  return r;
}

RandomCase BuildDemoGate(const ojson& r) {
  RandomCase c = NewCase(r, "DemoGateTest", "demo-v1");
  const size_t hc = r["hc"], hidden = r["hidden"], in = r["in"];
  c.group = {{"type", "DemoGateTest"},
             {"comment", "random: demo gate and value, hc " + std::to_string(hc) + ", hidden " + std::to_string(hidden) +
                             ", in " + std::to_string(in)},
             {"profile", "demo-v1"}};
  AddRecipeParams(c.group, r, hc, hidden, in, 4, 3);
  c.group["tolerance"] = FusionTolerance("DemoGateTest", "demo-v1");
  Finish(c, {{"e", HexOf(ShortenedIf(r, "e", r["e"]), Fmt::kF32)},
             {"hidden", HexOf(ShortenedIf(r, "state", r["state"]), Fmt::kF32)}});
  c.spec_refs = {"§FUS.5", "§FUS.6"};
  c.size = "hc " + std::to_string(hc) + ", hidden " + std::to_string(hidden) + ", in " + std::to_string(in);
  std::vector<std::string> keys = kDemoGateKeys;
  keys.push_back("e");
  keys.push_back("state");
  c.measure = 128 * static_cast<int64_t>(hc + hidden + in) + ArrayMeasure(r, keys, Fmt::kF32);
  return c;
}

std::vector<ojson> ShrinkDemoGate(const ojson& r) {
  std::vector<ojson> out;
  const size_t hc = r["hc"], hidden = r["hidden"], in = r["in"];
  auto reshape = [&](size_t hc2, size_t hidden2, size_t in2) {
    ojson c = r;
    c["hc"] = hc2;
    c["hidden"] = hidden2;
    c["in"] = in2;
    CutDemoArrays(c, r, hc, hidden, in, 4, hc2, hidden2, in2, 4);
    c["e"] = Cut2(r["e"], 1, in, 1, in2);
    c["state"] = Cut2(r["state"], hc, hidden, hc2, hidden2);
    out.push_back(c);
  };
  for (int64_t h : Smaller(static_cast<int64_t>(hc), 1)) reshape(static_cast<size_t>(h), hidden, in);
  for (int64_t h : Smaller(static_cast<int64_t>(hidden), 1)) reshape(hc, static_cast<size_t>(h), in);
  for (int64_t i : Smaller(static_cast<int64_t>(in), 1)) reshape(hc, hidden, static_cast<size_t>(i));
  std::vector<std::string> keys = {"e", "state"};
  keys.insert(keys.end(), kDemoGateKeys.begin(), kDemoGateKeys.end());
  SimplifyFloats(r, keys, Fmt::kF32, out);
  return out;
}

// ------------------------------------------------------------------ ShortConvTest (§FUS.7)

// §FUS.7 A tap that is ±inf or NaN and reads the zero padding (tap j < kernel - 1
// at step 0 already) gives NaN where the product with the padding is formed and
// the value without that term where the padding is skipped; torch's own CPU
// kernels do either, by shape, so the spec leaves it open and no random case
// may depend on it: such a recipe is refused and drawn again (Build throws).
void RefuseNonFiniteTapOnPadding(const ojson& conv_weight, size_t kernel) {
  for (size_t i = 0; i < conv_weight.size(); ++i) {
    if (i % kernel == kernel - 1) continue;  // the last tap reads the present step, never the padding
    const double w = ValueOf(conv_weight[i].get<uint32_t>(), Fmt::kF32);
    if (!std::isfinite(w)) {
      throw Error("ShortConv recipe: tap " + std::to_string(i % kernel) + " of channel " + std::to_string(i / kernel) +
                  " is " + FloatHex(w) + " and reads the zero padding, where §FUS.7 allows NaN or no term");
    }
  }
}

ojson DrawShortConv(CaseRng& rng, bool plain) {
  ojson r;
  r["type"] = "ShortConvTest";
  const int64_t hc = rng.Chance(1, 2) ? 2 : rng.In(1, 4);
  const int64_t hidden = rng.Chance(1, 4) ? 8 : rng.Scaled(1, 16);
  const int64_t kernel = rng.Chance(1, 2) ? 4 : rng.In(1, 6);
  const int64_t dilation = rng.Chance(1, 2) ? rng.In(2, 5) : rng.Scaled(1, 8);  // max_ngram_size, or any
  const int64_t steps = rng.Scaled(1, 24);
  r["hc"] = hc;
  r["hidden"] = hidden;
  r["kernel"] = kernel;
  r["dilation"] = dilation;
  r["steps"] = steps;
  for (const std::string& key : kConvKeys) {
    r[key] = DrawDemoArray(rng, key, DemoCount(key, static_cast<size_t>(hc), static_cast<size_t>(hidden), 1,
                                               static_cast<size_t>(kernel)), plain);
  }
  // The values: scale 1, or 2^-9 (mean square near 1e-5, where ShortConv's
  // eps matters, §FUS.7) one time in four, or an impulse at t = 0.
  const int64_t kind = rng.Below(8);
  const size_t n = static_cast<size_t>(steps * hc * hidden);
  ojson v = ojson::array();
  if (kind == 0 && !plain) {
    for (size_t i = 0; i < n; ++i) v.push_back(i < static_cast<size_t>(hc * hidden) ? kOneF32 : 0u);
  } else if (kind <= 2 && !plain) {
    for (size_t i = 0; i < n; ++i) v.push_back(OrdinaryBits(rng, Fmt::kF32, -9));
  } else {
    v = DrawFloats(rng, n, Fmt::kF32, 0, plain);
  }
  r["value"] = v;
  r["short"] = !plain && rng.Chance(1, 20) ? "value" : "";
  return r;
}

RandomCase BuildShortConv(const ojson& r) {
  RandomCase c = NewCase(r, "ShortConvTest", "demo-v1");
  const size_t hc = r["hc"], hidden = r["hidden"], kernel = r["kernel"], dilation = r["dilation"], steps = r["steps"];
  RefuseNonFiniteTapOnPadding(r["convWeight"], kernel);
  c.group = {{"type", "ShortConvTest"},
             {"comment", "random: ShortConv, hc " + std::to_string(hc) + ", hidden " + std::to_string(hidden) + ", kernel " +
                             std::to_string(kernel) + ", dilation " + std::to_string(dilation)},
             {"profile", "demo-v1"}};
  AddRecipeParams(c.group, r, hc, hidden, 1, kernel, dilation);
  c.group["tolerance"] = FusionTolerance("ShortConvTest", "demo-v1");
  Finish(c, {{"steps", steps}, {"value", HexOf(ShortenedIf(r, "value", r["value"]), Fmt::kF32)}});
  c.spec_refs = {"§FUS.7"};
  c.size = "steps " + std::to_string(steps) + ", hc " + std::to_string(hc) + ", hidden " + std::to_string(hidden) +
           ", kernel " + std::to_string(kernel) + ", dilation " + std::to_string(dilation);
  c.measure = 128 * static_cast<int64_t>(steps + hc + hidden + kernel + dilation) +
              ArrayMeasure(r, {"convNormWeight", "convWeight", "value"}, Fmt::kF32);
  return c;
}

std::vector<ojson> ShrinkShortConv(const ojson& r) {
  std::vector<ojson> out;
  const size_t hc = r["hc"], hidden = r["hidden"], kernel = r["kernel"], steps = r["steps"];
  const int64_t dilation = r["dilation"];
  auto reshape = [&](size_t steps2, size_t hc2, size_t hidden2, size_t kernel2) {
    ojson c = r;
    c["steps"] = steps2;
    c["hc"] = hc2;
    c["hidden"] = hidden2;
    c["kernel"] = kernel2;
    CutDemoArrays(c, r, hc, hidden, 1, kernel, hc2, hidden2, 1, kernel2);
    c["value"] = Cut3(r["value"], steps, hc, hidden, steps2, hc2, hidden2);
    out.push_back(c);
  };
  for (int64_t t : Smaller(static_cast<int64_t>(steps), 1)) reshape(static_cast<size_t>(t), hc, hidden, kernel);
  for (int64_t h : Smaller(static_cast<int64_t>(hc), 1)) reshape(steps, static_cast<size_t>(h), hidden, kernel);
  for (int64_t h : Smaller(static_cast<int64_t>(hidden), 1)) reshape(steps, hc, static_cast<size_t>(h), kernel);
  for (int64_t k : Smaller(static_cast<int64_t>(kernel), 1)) reshape(steps, hc, hidden, static_cast<size_t>(k));
  for (int64_t d : Smaller(dilation, 1)) {
    ojson c = r;
    c["dilation"] = d;
    out.push_back(c);
  }
  SimplifyFloats(r, {"value", "convNormWeight", "convWeight"}, Fmt::kF32, out);
  return out;
}

// ------------------------------------------------------------------ EngramForwardTest (§FUS.10)

// The recipe: "profile", "layerIds", "maxNgram", "heads", "width" (head_dim
// in v4.1, the row width in demo-v1), "bases", "seed" (demo-v1), "v", "pad",
// "tableSeed", "hc", "dim" (dim or hidden_size), "kernel" (demo-v1), the
// weights, "ids" and "state" ([T][hc][dim]: bf16 x in v4.1, float32 hidden in
// demo-v1). Small shapes: 1-2 layers (only the first is used, §FUS.10), max
// n-gram 2-4, 1-3 heads, 1-12 positions.

size_t ForwardIn(const ojson& r) {
  return static_cast<size_t>((r["maxNgram"].get<int64_t>() - 1) * r["heads"].get<int64_t>() * r["width"].get<int64_t>());
}

ojson ForwardConfig(const ojson& r) {
  const bool v41 = r["profile"] == "v4.1";
  const std::vector<int64_t> layer_ids = r["layerIds"].get<std::vector<int64_t>>();
  if (v41) {
    ojson cfg = {{"engram_layer_ids", layer_ids},
                 {"engram_vocab_size", r["bases"][0]},
                 {"engram_max_ngram_size", r["maxNgram"]},
                 {"engram_n_heads", r["heads"]},
                 {"engram_head_dim", r["width"]},
                 {"engram_pad_id", 2},
                 {"engram_compressed_vocab_size", r["v"]},
                 {"dim", r["dim"]},
                 {"hc_mult", r["hc"]},
                 {"norm_eps", std::bit_cast<double>(r["eps"].get<uint64_t>())}};
    const Layout layout = BuildLayout(ParseConfig(json::parse(cfg.dump()), "<generator>"), r["v"].get<int64_t>(),
                                      r["pad"].get<int64_t>());
    std::vector<int64_t> sums;
    for (const LayerLayout& l : layout.layers) sums.push_back(l.num_embeddings);
    cfg["engram_num_embeddings"] = sums;
    return cfg;
  }
  ojson cfg = DemoConfigJson();
  cfg["engram_vocab_size"] = r["bases"];
  cfg["max_ngram_size"] = r["maxNgram"];
  cfg["n_embed_per_ngram"] = r["heads"].get<int64_t>() * r["width"].get<int64_t>();
  cfg["n_head_per_ngram"] = r["heads"];
  cfg["layer_ids"] = layer_ids;
  cfg["seed"] = r["seed"];
  cfg["kernel_size"] = r["kernel"];
  cfg["hidden_size"] = r["dim"];
  cfg["hc_mult"] = r["hc"];
  return cfg;
}

std::vector<std::string> ForwardArrays(const ojson& r) {
  if (r["profile"] == "v4.1") return {"qWeight", "kWeight", "state"};
  std::vector<std::string> keys = kDemoGateKeys;
  keys.insert(keys.end(), kConvKeys.begin(), kConvKeys.end());
  keys.push_back("state");
  return keys;
}

// The fp8 wkv weight of a v4.1 forward recipe for its current shape: codes
// [(hc + 1) dim][in], and scales [ceil(out / 32)][in / 32] taken in order from
// the recipe's list (repeated when a shrink made the shape larger in blocks).
void WkvFor(const ojson& r, ojson& codes, ojson& scales) {
  const size_t in = ForwardIn(r), nout = r["dim"].get<size_t>() * (r["hc"].get<size_t>() + 1);
  codes = ojson::array();
  scales = ojson::array();
  const ojson& c = r["codes"];
  const ojson& s = r["scales"];
  for (size_t i = 0; i < nout * in; ++i) codes.push_back(c[i % c.size()]);
  for (size_t i = 0; i < (nout + 31) / 32 * (in / 32); ++i) scales.push_back(s[i % s.size()]);
}

ojson DrawForward(CaseRng& rng, bool plain) {
  ojson r;
  r["type"] = "EngramForwardTest";
  const bool v41 = rng.Chance(1, 2);
  r["profile"] = v41 ? "v4.1" : "demo-v1";
  const int64_t layers = rng.Chance(2, 3) ? 1 : 2;
  std::vector<int64_t> layer_ids;
  while (static_cast<int64_t>(layer_ids.size()) < layers) {
    const int64_t id = rng.Below(64);
    if (std::find(layer_ids.begin(), layer_ids.end(), id) == layer_ids.end()) layer_ids.push_back(id);
  }
  r["layerIds"] = layer_ids;
  const int64_t max_ngram = rng.In(2, 4);
  r["maxNgram"] = max_ngram;
  r["heads"] = rng.In(1, 2);
  r["width"] = v41 ? (rng.Chance(1, 8) ? 64 : 32) : rng.In(1, 4);
  ojson bases = ojson::array();
  for (int64_t k = 0; k < (v41 ? 1 : max_ngram - 1); ++k) bases.push_back(rng.Scaled(2, 1000));
  r["bases"] = bases;
  r["seed"] = v41 ? 0 : rng.Below(1000);
  const int64_t v = rng.Chance(1, 4) ? rng.In(2, 8) : rng.Scaled(2, 200);
  r["v"] = v;
  const int64_t p = rng.Below(3);
  r["pad"] = p == 0 ? std::min<int64_t>(2, v - 1) : p == 1 ? v - 1 : rng.Below(v);
  r["tableSeed"] = rng.Next();
  const int64_t hc = v41 && rng.Chance(1, 2) ? 4 : rng.In(1, 4);
  const int64_t dim = rng.Chance(1, 2) ? 8 : rng.Scaled(1, 16);
  r["hc"] = hc;
  r["dim"] = dim;
  const size_t in = ForwardIn(r);
  if (v41) {
    const int64_t eps_kind = rng.Below(2);
    r["eps"] = std::bit_cast<uint64_t>(ParseFloat(kEpsHex[eps_kind], "eps"));
    r["qWeight"] = DrawFloats(rng, static_cast<size_t>(hc * dim), Fmt::kBf16, 0, plain);
    r["kWeight"] = DrawFloats(rng, static_cast<size_t>(hc * dim), Fmt::kBf16, 0, plain);
    const size_t nout = static_cast<size_t>(dim * (hc + 1));
    ojson codes = ojson::array(), scales = ojson::array();
    for (size_t i = 0; i < nout * in; ++i) codes.push_back(DrawCode(rng));
    for (size_t i = 0; i < (nout + 31) / 32 * (in / 32); ++i) scales.push_back(rng.In(118, 129));
    r["codes"] = codes;
    r["scales"] = scales;
  } else {
    r["kernel"] = rng.Chance(1, 2) ? 4 : rng.In(1, 4);
    const size_t kernel = r["kernel"];
    for (const std::string& key : kDemoGateKeys) {
      r[key] = DrawDemoArray(rng, key, DemoCount(key, static_cast<size_t>(hc), static_cast<size_t>(dim), in, kernel), plain);
    }
    for (const std::string& key : kConvKeys) {
      r[key] = DrawDemoArray(rng, key, DemoCount(key, static_cast<size_t>(hc), static_cast<size_t>(dim), in, kernel), plain);
    }
  }
  // Positions: ids below V with 0, V - 1 and the pad favoured; DEAD spans
  // (v4.1: masked positions, §FUS.3) of 1 ... max n-gram positions.
  const int64_t T = rng.Scaled(1, 10);
  ojson ids = ojson::array();
  while (static_cast<int64_t>(ids.size()) < T) {
    if (v41 && rng.Chance(1, 8)) {
      const int64_t len = rng.In(1, max_ngram);
      for (int64_t k = 0; k < len && static_cast<int64_t>(ids.size()) < T; ++k) ids.push_back(kDead);
      continue;
    }
    const int64_t pick = rng.Below(8);
    ids.push_back(pick == 0 ? 0 : pick == 1 ? v - 1 : pick == 2 ? r["pad"].get<int64_t>() : rng.Below(v));
  }
  r["ids"] = ids;
  const size_t n = static_cast<size_t>(T * hc * dim);
  r["state"] = DrawFloats(rng, n, v41 ? Fmt::kBf16 : Fmt::kF32, 0, plain);
  r["short"] = !plain && rng.Chance(1, 20) ? "state" : "";
  return r;
}

RandomCase BuildForward(const ojson& r) {
  RandomCase c;
  c.recipe = r;
  c.type = "EngramForwardTest";
  const bool v41 = r["profile"] == "v4.1";
  c.profile = r["profile"];
  const size_t hc = r["hc"], dim = r["dim"], in = ForwardIn(r);
  const ojson cfg = ForwardConfig(r);
  const std::string shape = std::to_string(r["layerIds"].size()) + " layer(s), max " + r["maxNgram"].dump() + ", " +
                            r["heads"].dump() + " heads, " + (v41 ? "head_dim " : "width ") + r["width"].dump() + ", " +
                            (v41 ? "dim " : "hidden ") + std::to_string(dim) + ", hc " + std::to_string(hc);
  c.group = {{"type", "EngramForwardTest"},
             {"comment", "random: " + std::string(v41 ? "v4.1: " : "demo-v1: ") + shape},
             {"profile", r["profile"]},
             {"config", cfg},
             {"compressedVocabSize", r["v"]},
             {"compressedPad", r["pad"]},
             {"tableSeed", r["tableSeed"]}};
  const ojson state = ShortenedIf(r, "state", r["state"]);
  if (v41) {
    ojson codes, scales;
    WkvFor(r, codes, scales);
    c.group["qWeight"] = r["qWeight"];
    c.group["kWeight"] = r["kWeight"];
    c.group["wkvWeightCodes"] = codes;
    c.group["wkvWeightScales"] = scales;
    c.group["tolerance"] = FusionTolerance("EngramForwardTest", "v4.1");
    Finish(c, {{"ids", r["ids"]}, {"x", state}});
  } else {
    RefuseNonFiniteTapOnPadding(r["convWeight"], r["kernel"]);
    AddRecipeParams(c.group, r, hc, dim, in, r["kernel"], r["maxNgram"]);
    c.group["tolerance"] = FusionTolerance("EngramForwardTest", "demo-v1");
    Finish(c, {{"ids", r["ids"]}, {"hidden", HexOf(state, Fmt::kF32)}});
  }
  c.spec_refs = v41 ? std::vector<std::string>{"§FUS.2", "§FUS.3", "§FUS.10"}
                    : std::vector<std::string>{"§FUS.5", "§FUS.6", "§FUS.7", "§FUS.10"};
  const int64_t T = static_cast<int64_t>(r["ids"].size());
  c.size = "T " + std::to_string(T) + ", " + shape + ", V " + r["v"].dump();
  int64_t m = 128 * (T + static_cast<int64_t>(hc + dim + in) + static_cast<int64_t>(r["layerIds"].size()) +
                     r["maxNgram"].get<int64_t>() + r["heads"].get<int64_t>()) +
              BitLength(r["v"].get<uint64_t>()) + (r["tableSeed"] != 0 ? 1 : 0) +
              ArrayMeasure(r, ForwardArrays(r), v41 ? Fmt::kBf16 : Fmt::kF32);
  if (!v41) m += 128 * r["kernel"].get<int64_t>();
  c.measure = m;
  return c;
}

std::vector<ojson> ShrinkForward(const ojson& r) {
  std::vector<ojson> out;
  const bool v41 = r["profile"] == "v4.1";
  const size_t hc = r["hc"], dim = r["dim"], in = ForwardIn(r), T = r["ids"].size();
  const size_t kernel = v41 ? 1 : r["kernel"].get<size_t>();
  // A new shape: the state cut to [T2][hc2][dim2]; the demo arrays cut (their
  // `in` follows max n-gram, heads and width); the v4.1 weights cut, the wkv
  // codes and scales refilled in order by WkvFor.
  auto reshape = [&](ojson c, size_t T2, size_t hc2, size_t dim2, size_t kernel2) {
    c["hc"] = hc2;
    c["dim"] = dim2;
    c["state"] = Cut3(r["state"], T, hc, dim, T2, hc2, dim2);
    ojson ids = ojson::array();
    for (size_t t = 0; t < T2; ++t) ids.push_back(r["ids"][t]);
    c["ids"] = ids;
    const size_t in2 = ForwardIn(c);
    if (v41) {
      c["qWeight"] = Cut2(r["qWeight"], hc, dim, hc2, dim2);
      c["kWeight"] = Cut2(r["kWeight"], hc, dim, hc2, dim2);
    } else {
      c["kernel"] = kernel2;
      CutDemoArrays(c, r, hc, dim, in, kernel, hc2, dim2, in2, kernel2);
    }
    out.push_back(c);
  };
  for (int64_t t : Smaller(static_cast<int64_t>(T), 1)) reshape(r, static_cast<size_t>(t), hc, dim, kernel);
  for (int64_t h : Smaller(static_cast<int64_t>(hc), 1)) reshape(r, T, static_cast<size_t>(h), dim, kernel);
  for (int64_t d : Smaller(static_cast<int64_t>(dim), 1)) reshape(r, T, hc, static_cast<size_t>(d), kernel);
  if (!v41) {
    for (int64_t k : Smaller(static_cast<int64_t>(kernel), 1)) reshape(r, T, hc, dim, static_cast<size_t>(k));
  }
  // The hash side: a layer fewer, max n-gram - 1 (demo-v1: a base fewer), a
  // head fewer, a narrower row, V / 2 (ids and pad moved below it), table seed 0.
  if (r["layerIds"].size() > 1) {
    ojson c = r;
    c["layerIds"].erase(c["layerIds"].size() - 1);
    out.push_back(c);
  }
  if (r["maxNgram"] > 2) {
    ojson c = r;
    c["maxNgram"] = r["maxNgram"].get<int64_t>() - 1;
    if (!v41) c["bases"].erase(c["bases"].size() - 1);
    reshape(c, T, hc, dim, kernel);
  }
  if (r["heads"] > 1) {
    ojson c = r;
    c["heads"] = r["heads"].get<int64_t>() - 1;
    reshape(c, T, hc, dim, kernel);
  }
  if (r["width"] > (v41 ? 32 : 1)) {
    ojson c = r;
    c["width"] = v41 ? 32 : r["width"].get<int64_t>() - 1;
    reshape(c, T, hc, dim, kernel);
  }
  const int64_t v = r["v"];
  if (v > 2) {
    ojson c = r;
    const int64_t v2 = v / 2;
    c["v"] = v2;
    c["pad"] = std::min(r["pad"].get<int64_t>(), v2 - 1);
    for (auto& id : c["ids"]) {
      if (id != kDead) id = id.get<int64_t>() % v2;
    }
    out.push_back(c);
  }
  if (r["tableSeed"] != 0) {
    ojson c = r;
    c["tableSeed"] = 0;
    out.push_back(c);
  }
  for (size_t t = 0; t < T; ++t) {  // a DEAD position made an ordinary id (0)
    if (r["ids"][t] != kDead) continue;
    ojson c = r;
    c["ids"][t] = 0;
    out.push_back(c);
  }
  SimplifyFloats(r, ForwardArrays(r), v41 ? Fmt::kBf16 : Fmt::kF32, out);
  return out;
}

// ------------------------------------------------------------------ the suites

// The draw of one case of a suite whose cases have several types.
struct Kind {
  int weight;
  std::function<ojson(CaseRng&, bool plain)> draw;
  std::function<RandomCase(const ojson&)> build;
};

ojson DrawOf(const std::string& suite, const std::vector<Kind>& kinds, uint64_t seed, int64_t index) {
  CaseRng rng(seed, suite, index);
  int total = 0;
  for (const Kind& k : kinds) total += k.weight;
  int64_t pick = rng.Below(total);
  for (const Kind& k : kinds) {
    if (pick < k.weight) return DrawBuildable(rng, k.draw, k.build);
    pick -= k.weight;
  }
  throw Error("unreachable");
}

ojson DrawDot(CaseRng& rng, bool plain) {
  return {{"type", "GateFunctionTest"}, {"dot", plain ? uint64_t{0} : DrawDotBits(rng)}};
}

RandomCase BuildGateV41Uncached(const ojson& r) {
  if (r["type"] == "GateFunctionTest") return BuildGateFunction(r, "v4.1");
  if (r["type"] == "V41GateTest") return BuildV41Gate(r);
  return BuildWkv(r);
}
RandomCase BuildGateV41(const ojson& r) { return Cached(r, BuildGateV41Uncached); }
std::vector<ojson> ShrinkGateV41(const ojson& r) {
  if (r["type"] == "GateFunctionTest") return ShrinkGateFunction(r);
  if (r["type"] == "V41GateTest") return ShrinkV41Gate(r);
  return ShrinkWkv(r);
}

RandomCase BuildGateDemoUncached(const ojson& r) {
  if (r["type"] == "GateFunctionTest") return BuildGateFunction(r, "demo-v1");
  return BuildDemoGate(r);
}
RandomCase BuildGateDemo(const ojson& r) { return Cached(r, BuildGateDemoUncached); }
RandomCase BuildShortConvCached(const ojson& r) { return Cached(r, BuildShortConv); }
RandomCase BuildForwardCached(const ojson& r) { return Cached(r, BuildForward); }
std::vector<ojson> ShrinkGateDemo(const ojson& r) {
  if (r["type"] == "GateFunctionTest") return ShrinkGateFunction(r);
  return ShrinkDemoGate(r);
}

}  // namespace

RandomSuite RandomGateV41() {
  // GateFunctionTest 1 in 3, V41GateTest 1 in 2, WkvTest 1 in 6.
  auto draw = [](uint64_t seed, int64_t index) {
    static const std::vector<Kind> kinds = {
        {2, DrawDot, BuildGateV41Uncached}, {3, DrawV41Gate, BuildGateV41Uncached}, {1, DrawWkv, BuildGateV41Uncached}};
    return DrawOf("gate_v41", kinds, seed, index);
  };
  return {"gate_v41", "fusion.schema.json", "ENGRAM-FUSION", draw, BuildGateV41, ShrinkGateV41};
}

RandomSuite RandomGateDemo() {
  // GateFunctionTest 1 in 3, DemoGateTest 2 in 3.
  auto draw = [](uint64_t seed, int64_t index) {
    static const std::vector<Kind> kinds = {{1, DrawDot, BuildGateDemoUncached}, {2, DrawDemoGate, BuildGateDemoUncached}};
    return DrawOf("gate_demo", kinds, seed, index);
  };
  return {"gate_demo", "fusion.schema.json", "ENGRAM-FUSION", draw, BuildGateDemo, ShrinkGateDemo};
}

RandomSuite RandomShortConv() {
  auto draw = [](uint64_t seed, int64_t index) {
    static const std::vector<Kind> kinds = {{1, DrawShortConv, BuildShortConv}};
    return DrawOf("short_conv_demo", kinds, seed, index);
  };
  return {"short_conv_demo", "fusion.schema.json", "ENGRAM-FUSION", draw, BuildShortConvCached, ShrinkShortConv};
}

RandomSuite RandomEngramForward() {
  auto draw = [](uint64_t seed, int64_t index) {
    static const std::vector<Kind> kinds = {{1, DrawForward, BuildForward}};
    return DrawOf("engram_forward", kinds, seed, index);
  };
  return {"engram_forward", "fusion.schema.json", "ENGRAM-FUSION", draw, BuildForwardCached, ShrinkForward};
}

}  // namespace engram::vectors
