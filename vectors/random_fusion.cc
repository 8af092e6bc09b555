// spec/conformance.md §CONF.7 — what the random cases of the fusion suites
// (§FUS) share: the draws of values and arrays, the shrinking of shapes and
// values, the §FUS.9 decidability check, the GateFunctionTest of both gates,
// the demo-v1 parameters and the draw of a case of several types. Each suite
// has a file of its own: random_gate_v41.cc (GateFunctionTest, V41GateTest,
// WkvTest), random_gate_demo.cc (GateFunctionTest, DemoGateTest),
// random_short_conv_demo.cc (ShortConvTest) and random_engram_forward.cc
// (EngramForwardTest, both profiles); vectors/random_fusion_common.h declares
// what they share.
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
#include "reference/fusion.h"
#include "vectors/compare.h"
#include "vectors/random_cases.h"
#include "vectors/random_fusion_common.h"
#include "vectors/suite.h"
#include "vectors/suite_fusion.h"

namespace engram::vectors::random_fusion {

// ------------------------------------------------------------------ values

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
  const std::string why64 = CompareOrdered(type, group, want, as64);
  return why64.empty() ? CompareOrdered(type, group, want, as32) : why64;
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

// ------------------------------------------------------------------ v4.1 inputs (§FUS.2, §FUS.3)

const char* const kEpsHex[] = {"0x1.79ca10c924223p-67", "0x1.0c6f7a0b5ed8dp-20"};  // 1e-20 (shipped), 1e-6

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

// ------------------------------------------------------------------ the suites

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

}  // namespace engram::vectors::random_fusion
