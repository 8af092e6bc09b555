// Tests of engram::cuda's fusion kernels (cuda/fusion.h: GateFunction, Wkv,
// FusionDemo) against the float32 mirror of reference/fusion.h
// (Precision::kFloat32). Expected values come only from the reference; every
// output must have identical bits (NaN matching NaN).
//
//  * HostLauncher.* run everywhere: the per-element functions of
//    cuda/fusion_kernels.h compiled by the host compiler, run by
//    HostBackend::Run over the same grid as the device launch. CI runs these.
//  * Device.* run the same properties on a CUDA device and GTEST_SKIP without
//    one.
//
// RapidCheck prints the seed and the shrunk case on failure
// (RC_PARAMS="seed=..." replays it). The values of a case come from one drawn
// seed (SplitMix64), so shrinking shrinks the shapes and stays fast.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/engram_cuda.h"
#include "base/hex.h"
#include "cuda/fusion.h"
#include "cuda/test_failcase.h"
#include "cuda/test_random.h"
#include "reference/config.h"
#include "base/error.h"
#include "reference/fusion.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/storage.h"

// A namespace of its own: the suite's files are compiled together (unity build).
namespace engram::cuda::fusion_test {
namespace {

bool HaveDevice() { return DeviceCount() > 0; }

#define SKIP_WITHOUT_DEVICE()                                \
  do {                                                       \
    if (!HaveDevice()) GTEST_SKIP() << DeviceDescription(0); \
  } while (0)

constexpr Precision k32 = Precision::kFloat32;

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::string Hex(double x) { return FloatHex(x); }

std::string Bf16HexOf(uint16_t b) { return HexOfU16(std::span(&b, 1)); }

// got (float32) has the bits of the mirror's value (a float32 held in a double).
bool SameBits(float got, double mirror) {
  const float m = static_cast<float>(mirror);
  if (std::isnan(got) || std::isnan(m)) return std::isnan(got) && std::isnan(m);
  return Bits(got) == Bits(m);
}

// ---------------------------------------------------------------------------
// Failing cases as files (cuda/test_failcase.h): each property names its case
// and records its shapes and inputs as it draws them; Fail() writes them with
// the first difference found, then fails the property (RC_FAIL).
// ---------------------------------------------------------------------------

using ojson = nlohmann::ordered_json;

struct CaseRecord {
  std::string property;
  ojson group;
  ojson test;
};

CaseRecord& Current() {
  static CaseRecord record;
  return record;
}

// property: e.g. "DemoGate", prefixed with Host/Device by the backend.
template <class Backend>
void BeginCase(const std::string& property, ojson group) {
  Current() = CaseRecord{std::string(Backend::kEmulated ? "Host" : "Device") + property, std::move(group),
                         ojson::object()};
}

void Input(const std::string& key, ojson value) { Current().test[key] = std::move(value); }

ojson HexFloats(std::span<const float> v) {
  ojson a = ojson::array();
  for (float x : v) a.push_back(FloatHex(x));
  return a;
}

ojson HexBf16s(std::span<const uint16_t> v) {
  ojson a = ojson::array();
  for (uint16_t b : v) a.push_back(Bf16HexOf(b));
  return a;
}

[[noreturn]] void Fail(const std::string& why) {
  ojson test = Current().test;
  test["comment"] = why;
  test["flags"] = {"CudaMismatch"};
  WriteFailCaseFile(Current().property, "cuda/fusion_test.cc", Current().group, std::move(test));
  RC_FAIL(why);
  std::abort();  // not reached: RC_FAIL throws
}

// SplitMix64: every value of a case from one drawn seed.
struct Source : SplitMix64 {
  int Below(int n) { return static_cast<int>(Next() % static_cast<uint64_t>(n)); }

  // float32: mostly moderate (2^-8 .. 2^5), some ±0, exact powers of two,
  // large (2^40 .. 2^92), small (2^-60 .. 2^-112), subnormal; with
  // `specials` also NaN, ±inf and values near the float32 maximum.
  float Float(bool specials) {
    const uint64_t r = Next();
    const int kind = static_cast<int>(r % 64);
    const uint32_t sign = (r >> 8) & 1 ? 0x80000000u : 0u;
    const uint32_t mant = static_cast<uint32_t>((r >> 16) & 0x7FFFFFu);
    const uint32_t e = static_cast<uint32_t>((r >> 40) % 14);
    if (kind < 48) return FromBits(sign | ((119u + e) << 23) | mant);
    if (kind < 52) return FromBits(sign);                                     // ±0
    if (kind < 55) return FromBits(sign | ((120u + e) << 23));                // powers of two
    if (kind < 57) return FromBits(sign | ((167u + e * 4) << 23) | mant);     // 2^40 .. 2^92
    if (kind < 59) return FromBits(sign | ((67u - e * 4) << 23) | mant);      // 2^-60 .. 2^-112
    if (kind < 60) return FromBits(sign | (mant >> (r >> 60)));               // subnormal
    if (!specials) return FromBits(sign | ((122u + e) << 23) | mant);
    if (kind < 61) return std::numeric_limits<float>::quiet_NaN();
    if (kind < 62) return FromBits(sign | 0x7F800000u);                       // ±inf
    return FromBits(sign | (253u << 23) | mant);                              // near the maximum
  }
  std::vector<float> Floats(size_t n, bool specials) {
    std::vector<float> v(n);
    for (float& x : v) x = Float(specials);
    return v;
  }

  // bf16 bits, the same classes (specials: NaN, ±inf, near the maximum).
  uint16_t Bf16(bool specials) { return static_cast<uint16_t>(Bits(Float(specials)) >> 16); }
  std::vector<uint16_t> Bf16s(size_t n, bool specials) {
    std::vector<uint16_t> v(n);
    for (uint16_t& x : v) x = Bf16(specials);
    return v;
  }

  // Finite bf16 activations for the fp8 quantization, one magnitude class per
  // 32-wide block: moderate, all ±0, huge (near 2^127), tiny (amax below the
  // 1e-4 floor, subnormals included), or one large value among small ones
  // (codes that round to subnormal E4M3 and to 0).
  std::vector<uint16_t> Fp8Activations(size_t n) {
    std::vector<uint16_t> v(n);
    for (size_t b = 0; b < n; b += 32) {
      const int cls = Below(8);
      for (size_t i = b; i < b + 32 && i < n; ++i) {
        const uint64_t r = Next();
        const uint16_t sign = (r >> 8) & 1 ? 0x8000 : 0;
        const uint16_t mant = static_cast<uint16_t>((r >> 16) & 0x7F);
        const uint16_t e = static_cast<uint16_t>((r >> 24) % 16);
        uint16_t x = static_cast<uint16_t>(sign | ((112 + e) << 7) | mant);    // 2^-15 .. 2^0
        if (cls == 1) x = sign;                                                // ±0
        if (cls == 2) x = static_cast<uint16_t>(sign | ((239 + e) << 7) | mant);  // 2^112 .. 2^127
        if (cls == 3) x = static_cast<uint16_t>(sign | (((r >> 32) % 2 ? e : 90 + e) << 7) | mant);  // tiny
        if (cls == 4 && i == b + (r >> 40) % 32) x = static_cast<uint16_t>(sign | ((140 + e) << 7) | mant);
        if (cls == 5 && (r >> 44) % 4 == 0) x = sign;  // some zeros among moderate values
        v[i] = x;
      }
    }
    return v;
  }
};

// A shape drawn uniformly from [lo, hi) whatever RapidCheck's current size
// (rc::gen::inRange alone yields lo at small sizes); it still shrinks toward lo.
template <class T>
T Draw(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

std::vector<double> Doubles(std::span<const float> v) { return std::vector<double>(v.begin(), v.end()); }

std::vector<double> Bf16Doubles(std::span<const uint16_t> v) {
  std::vector<double> d;
  for (uint16_t b : v) d.push_back(Bf16Value(b));
  return d;
}

// ---------------------------------------------------------------------------
// §FUS.4 / §FUS.6 The gate function
// ---------------------------------------------------------------------------

// GateFunction equals GateV41 / GateDemo (kFloat32) for float32 dots: ±0,
// the clamp and its neighbours, NaN, ±inf and random values.
template <class Backend>
void GateFunctionMatchesMirror() {
  const bool v41 = *rc::gen::arbitrary<bool>();
  Source src{*rc::gen::arbitrary<uint64_t>()};
  const float clamp = static_cast<float>(1e-6);
  std::vector<float> dots = {0.0f, -0.0f, clamp, -clamp, std::nextafter(clamp, 0.0f), std::nextafter(clamp, 1.0f),
                             -std::nextafter(clamp, 0.0f), std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min()};
  const int n = Draw<int32_t>(0, 64);
  for (int i = 0; i < n; ++i) dots.push_back(src.Float(true));
  BeginCase<Backend>("GateFunction", {{"type", "CudaGateFunction"}, {"profile", v41 ? "v4.1" : "demo-v1"}});
  Input("dots", HexFloats(dots));
  const std::vector<float> got = GateFunction<Backend>(v41, dots);
  RC_ASSERT(got.size() == dots.size());
  for (size_t i = 0; i < dots.size(); ++i) {
    const double want = v41 ? GateV41(dots[i], k32).gate : GateDemo(dots[i], k32).gate;
    if (!SameBits(got[i], want)) {
      Fail(std::string(v41 ? "v4.1" : "demo-v1") + " gate of dot " + Hex(dots[i]) + ": got " + Hex(got[i]) +
              ", mirror " + Hex(want));
    }
  }
}

// ---------------------------------------------------------------------------
// §FUS.2 wkv
// ---------------------------------------------------------------------------

// Plain wkv equals ToBf16(LinearNoBias(e, W, out, kFloat32)) bit for bit.
template <class Backend>
void WkvBf16MatchesMirror() {
  const int64_t tokens = Draw<int64_t>(0, 4);
  const int64_t in = Draw<int64_t>(1, 65);
  const int64_t out = Draw<int64_t>(1, 81);
  const bool specials = Draw<int32_t>(0, 4) == 0;
  Source src{*rc::gen::arbitrary<uint64_t>()};
  const std::vector<uint16_t> w = src.Bf16s(static_cast<size_t>(out * in), specials);
  const std::vector<uint16_t> e = src.Bf16s(static_cast<size_t>(tokens * in), specials);
  BeginCase<Backend>("WkvBf16", {{"type", "CudaWkvBf16"}, {"inFeatures", in}, {"outFeatures", out}, {"weight", HexBf16s(w)}});
  Input("e", HexBf16s(e));
  Wkv<Backend> wkv(out, in, w);
  RC_ASSERT(!wkv.fp8());
  const std::vector<uint16_t> kv = wkv.Apply(e);
  RC_ASSERT(kv.size() == static_cast<size_t>(tokens * out));
  const std::vector<double> wd = Bf16Doubles(w);
  for (int64_t t = 0; t < tokens; ++t) {
    const std::vector<double> y =
        LinearNoBias(Bf16Doubles(std::span<const uint16_t>(e).subspan(static_cast<size_t>(t * in), static_cast<size_t>(in))),
                     wd, static_cast<size_t>(out), k32);
    for (int64_t n = 0; n < out; ++n) {
      const uint16_t want = ToBf16(y[static_cast<size_t>(n)]);
      const uint16_t got = kv[static_cast<size_t>(t * out + n)];
      if (got != want) {
        Fail("kv[" + std::to_string(t) + "][" + std::to_string(n) + "]: got " + Bf16HexOf(got) + ", mirror " +
                Bf16HexOf(want) + " (in " + std::to_string(in) + ", out " + std::to_string(out) + ")");
      }
    }
  }
}

// fp8 wkv: the quantized activations equal QuantizeActivation and kv equals
// ToBf16(Fp8Linear(..., kFloat32)) bit for bit; the split launch writes the
// same values to its two outputs.
template <class Backend>
void WkvFp8MatchesMirror() {
  const int64_t tokens = Draw<int64_t>(0, 4);
  const int64_t in = 32 * Draw<int64_t>(1, 4);
  const int64_t out = Draw<int64_t>(1, 81);
  Source src{*rc::gen::arbitrary<uint64_t>()};
  std::vector<uint8_t> codes(static_cast<size_t>(out * in));
  for (uint8_t& c : codes) c = static_cast<uint8_t>(src.Next());  // every code, NaN codes 0x7F/0xFF included
  std::vector<uint8_t> scales(static_cast<size_t>(((out + 31) / 32) * (in / 32)));
  for (uint8_t& s : scales) {
    const int k = src.Below(16);
    s = k == 0 ? 0x00 : k == 1 ? 0xFF : k == 2 ? 0xFE : k == 3 ? 0x01 : static_cast<uint8_t>(112 + src.Below(30));
  }
  const std::vector<uint16_t> e = src.Fp8Activations(static_cast<size_t>(tokens * in));
  BeginCase<Backend>("WkvFp8", {{"type", "CudaWkvFp8"}, {"inFeatures", in}, {"outFeatures", out},
                                {"weightCodes", codes}, {"weightScales", scales}});
  Input("e", HexBf16s(e));
  Wkv<Backend> wkv(out, in, codes, scales);
  RC_ASSERT(wkv.fp8());
  const std::vector<uint16_t> kv = wkv.Apply(e);
  RC_ASSERT(kv.size() == static_cast<size_t>(tokens * out));
  std::vector<uint16_t> want(kv.size());
  for (int64_t t = 0; t < tokens; ++t) {
    const QuantizedActivation q =
        QuantizeActivation(std::span<const uint16_t>(e).subspan(static_cast<size_t>(t * in), static_cast<size_t>(in)));
    for (int64_t k = 0; k < in; ++k) {
      const uint8_t got = wkv.act_codes()[static_cast<size_t>(t * in + k)];
      if (got != q.codes[static_cast<size_t>(k)]) {
        Fail("activation code [" + std::to_string(t) + "][" + std::to_string(k) + "] of bf16 " +
                Bf16HexOf(e[static_cast<size_t>(t * in + k)]) + ": got " + std::to_string(got) + ", mirror " +
                std::to_string(q.codes[static_cast<size_t>(k)]));
      }
    }
    for (int64_t b = 0; b < in / 32; ++b) {
      RC_ASSERT(wkv.act_scales()[static_cast<size_t>(t * (in / 32) + b)] == q.scales[static_cast<size_t>(b)]);
    }
    const std::vector<double> y = Fp8Linear(q, codes, scales, static_cast<size_t>(out), static_cast<size_t>(in), k32);
    for (int64_t n = 0; n < out; ++n) {
      want[static_cast<size_t>(t * out + n)] = ToBf16(y[static_cast<size_t>(n)]);
      if (kv[static_cast<size_t>(t * out + n)] != want[static_cast<size_t>(t * out + n)]) {
        Fail("kv[" + std::to_string(t) + "][" + std::to_string(n) + "]: got " +
                Bf16HexOf(kv[static_cast<size_t>(t * out + n)]) + ", mirror " +
                Bf16HexOf(want[static_cast<size_t>(t * out + n)]));
      }
    }
  }
  // The split launch (v4.1: keys [t][hc*dim] and value [t][dim] apart).
  const int64_t split = Draw<int64_t>(0, out + 1);
  Backend& b = wkv.backend();
  Buffer<Backend> de(&b, std::max<size_t>(16, e.size() * 2));
  Buffer<Backend> d1(&b, std::max<size_t>(16, static_cast<size_t>(tokens * split) * 2));
  Buffer<Backend> d2(&b, std::max<size_t>(16, static_cast<size_t>(tokens * (out - split)) * 2));
  if (!e.empty()) b.ToBackend(de.template as<void>(), e.data(), e.size() * 2);
  wkv.Launch(tokens, de.template as<uint16_t>(), d1.template as<uint16_t>(), d2.template as<uint16_t>(), split);
  wkv.Finish();
  std::vector<uint16_t> k1(static_cast<size_t>(tokens * split)), k2(static_cast<size_t>(tokens * (out - split)));
  if (!k1.empty()) b.ToHost(k1.data(), d1.template as<void>(), k1.size() * 2);
  if (!k2.empty()) b.ToHost(k2.data(), d2.template as<void>(), k2.size() * 2);
  b.Sync();
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t n = 0; n < out; ++n) {
      const uint16_t got = n < split ? k1[static_cast<size_t>(t * split + n)]
                                     : k2[static_cast<size_t>(t * (out - split) + n - split)];
      RC_ASSERT(got == want[static_cast<size_t>(t * out + n)]);
    }
  }
}

// A non-finite activation is refused (§FUS.2.1), naming the first one as
// e[token][index], as the reference's QuantizeActivation refuses it.
template <class Backend>
void WkvFp8RefusesNonFinite() {
  const int64_t tokens = Draw<int64_t>(1, 4);
  const int64_t in = 32 * Draw<int64_t>(1, 3);
  const int64_t out = Draw<int64_t>(1, 40);
  Source src{*rc::gen::arbitrary<uint64_t>()};
  std::vector<uint8_t> codes(static_cast<size_t>(out * in), 0x38);
  std::vector<uint8_t> scales(static_cast<size_t>(((out + 31) / 32) * (in / 32)), 127);
  std::vector<uint16_t> e = src.Fp8Activations(static_cast<size_t>(tokens * in));
  const int bad = Draw<int32_t>(1, 4);
  size_t first = e.size();
  for (int i = 0; i < bad; ++i) {
    const size_t at = static_cast<size_t>(Draw<int64_t>(0, tokens * in));
    e[at] = *rc::gen::element<uint16_t>(0x7F80, 0xFF80, 0x7FC0, 0xFFC1);
    first = std::min(first, at);
  }
  // The reference refuses the first token holding one.
  const size_t t = first / static_cast<size_t>(in);
  bool reference_refused = false;
  try {
    QuantizeActivation(std::span<const uint16_t>(e).subspan(t * static_cast<size_t>(in), static_cast<size_t>(in)));
  } catch (const Error&) {
    reference_refused = true;
  }
  RC_ASSERT(reference_refused);
  BeginCase<Backend>("WkvFp8NonFinite", {{"type", "CudaWkvFp8"}, {"inFeatures", in}, {"outFeatures", out},
                                         {"weightCodes", codes}, {"weightScales", scales}});
  Input("e", HexBf16s(e));
  Wkv<Backend> wkv(out, in, codes, scales);
  const std::string name = "e[" + std::to_string(t) + "][" + std::to_string(first % static_cast<size_t>(in)) + "]";
  try {
    wkv.Apply(e);
    Fail("a non-finite activation was accepted");
  } catch (const Error& err) {
    if (std::string(err.what()).find(name) == std::string::npos) Fail(std::string("message: ") + err.what() + " lacks " + name);
  }
}

// ---------------------------------------------------------------------------
// §FUS.5-§FUS.7 demo-v1
// ---------------------------------------------------------------------------

struct DrawnDemo {
  std::vector<float> key_w, key_b, norm1_w, norm2_w, value_w, value_b, conv_norm_w, conv_w;
  DemoWeights w;
  DemoParams ref;
};

DrawnDemo DrawDemo(Source& src, int32_t hc, int32_t hidden, int32_t in, int32_t kernel, int32_t dilation,
                   bool specials) {
  DrawnDemo d;
  const size_t s = static_cast<size_t>(hc) * static_cast<size_t>(hidden);
  d.key_w = src.Floats(s * static_cast<size_t>(in), specials);
  d.key_b = src.Floats(s, specials);
  d.norm1_w = src.Floats(s, specials);
  d.norm2_w = src.Floats(s, specials);
  d.value_w = src.Floats(static_cast<size_t>(hidden) * static_cast<size_t>(in), specials);
  d.value_b = src.Floats(static_cast<size_t>(hidden), specials);
  d.conv_norm_w = src.Floats(s, specials);
  d.conv_w = src.Floats(s * static_cast<size_t>(kernel), specials);
  d.w = DemoWeights{hc, hidden, in, kernel, dilation, d.key_w, d.key_b, d.norm1_w, d.norm2_w,
                    d.value_w, d.value_b, d.conv_norm_w, d.conv_w};
  d.ref.hc = static_cast<size_t>(hc);
  d.ref.hidden = static_cast<size_t>(hidden);
  d.ref.in = static_cast<size_t>(in);
  d.ref.kernel = static_cast<size_t>(kernel);
  d.ref.dilation = static_cast<size_t>(dilation);
  d.ref.key_w = Doubles(d.key_w);
  d.ref.key_b = Doubles(d.key_b);
  d.ref.norm1_w = Doubles(d.norm1_w);
  d.ref.norm2_w = Doubles(d.norm2_w);
  d.ref.value_w = Doubles(d.value_w);
  d.ref.value_b = Doubles(d.value_b);
  d.ref.conv_norm_w = Doubles(d.conv_norm_w);
  d.ref.conv_w = Doubles(d.conv_w);
  return d;
}

// The weights of a drawn demo layer as a failcase group.
ojson DemoGroup(const char* type, const DrawnDemo& d) {
  return {{"type", type}, {"hc", d.w.hc}, {"hidden", d.w.hidden}, {"in", d.w.in}, {"kernel", d.w.kernel},
          {"dilation", d.w.dilation}, {"keyWeight", HexFloats(d.key_w)}, {"keyBias", HexFloats(d.key_b)},
          {"norm1Weight", HexFloats(d.norm1_w)}, {"norm2Weight", HexFloats(d.norm2_w)},
          {"valueWeight", HexFloats(d.value_w)}, {"valueBias", HexFloats(d.value_b)},
          {"convNormWeight", HexFloats(d.conv_norm_w)}, {"convWeight", HexFloats(d.conv_w)}};
}

// Compares a float vector with the mirror's, naming the first difference.
void ExpectSameBits(const std::string& what, std::span<const float> got, std::span<const double> want) {
  RC_ASSERT(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!SameBits(got[i], want[i])) {
      Fail(what + "[" + std::to_string(i) + "]: got " + Hex(got[i]) + ", mirror " + Hex(want[i]));
    }
  }
}

// §FUS.6 The gate, g and value of every (token, stream) equal
// DemoGateToken(..., kFloat32).
template <class Backend>
void DemoGateMatchesMirror() {
  const int32_t hc = Draw<int32_t>(1, 5), hidden = Draw<int32_t>(1, 65), in = Draw<int32_t>(1, 65);
  const int64_t tokens = Draw<int64_t>(0, 4);
  const bool specials = Draw<int32_t>(0, 5) == 0;
  Source src{*rc::gen::arbitrary<uint64_t>()};
  const DrawnDemo d = DrawDemo(src, hc, hidden, in, 1 + src.Below(4), 1 + src.Below(5), specials);
  const size_t per = static_cast<size_t>(hc) * static_cast<size_t>(hidden);
  const std::vector<float> e = src.Floats(static_cast<size_t>(tokens) * static_cast<size_t>(in), specials);
  const std::vector<float> h = src.Floats(static_cast<size_t>(tokens) * per, specials);
  BeginCase<Backend>("DemoGate", DemoGroup("CudaDemoGate", d));
  Input("e", HexFloats(e));
  Input("hidden", HexFloats(h));
  FusionDemo<Backend> demo(d.w);
  const std::vector<float> value = demo.Gate(e, h);
  RC_ASSERT(value.size() == static_cast<size_t>(tokens) * per);
  for (int64_t t = 0; t < tokens; ++t) {
    const DemoTokenTrace r = DemoGateToken(Doubles(std::span<const float>(e).subspan(static_cast<size_t>(t * in), static_cast<size_t>(in))),
                                           Doubles(std::span<const float>(h).subspan(static_cast<size_t>(t) * per, per)), d.ref, k32);
    for (int32_t c = 0; c < hc; ++c) {
      const size_t s = static_cast<size_t>(t * hc + c);
      const std::string at = "token " + std::to_string(t) + " stream " + std::to_string(c) + " ";
      const DemoStreamTrace& rs = r.streams[static_cast<size_t>(c)];
      if (!SameBits(demo.dots()[s], rs.g)) Fail(at + "g: got " + Hex(demo.dots()[s]) + ", mirror " + Hex(rs.g));
      if (!SameBits(demo.gates()[s], rs.gate)) Fail(at + "gate: got " + Hex(demo.gates()[s]) + ", mirror " + Hex(rs.gate));
      ExpectSameBits(at + "value", std::span<const float>(value).subspan(s * static_cast<size_t>(hidden), static_cast<size_t>(hidden)),
                     rs.value);
    }
  }
}

// §FUS.7 ShortConv over a sequence equals ShortConv(..., kFloat32).act.
template <class Backend>
void ShortConvMatchesMirror() {
  const int32_t hc = Draw<int32_t>(1, 5), hidden = Draw<int32_t>(1, 65);
  const int32_t kernel = Draw<int32_t>(1, 5), dilation = Draw<int32_t>(1, 6);
  const int64_t steps = Draw<int64_t>(0, 13);
  const bool specials = Draw<int32_t>(0, 5) == 0;
  Source src{*rc::gen::arbitrary<uint64_t>()};
  const DrawnDemo d = DrawDemo(src, hc, hidden, 1 + src.Below(3), kernel, dilation, specials);
  const std::vector<float> value =
      src.Floats(static_cast<size_t>(steps) * static_cast<size_t>(hc) * static_cast<size_t>(hidden), specials);
  BeginCase<Backend>("ShortConv", DemoGroup("CudaShortConv", d));
  Input("steps", steps);
  Input("value", HexFloats(value));
  FusionDemo<Backend> demo(d.w);
  const std::vector<float> got = demo.ShortConv(value, steps);
  const ShortConvTrace r = engram::ShortConv(Doubles(value), static_cast<size_t>(steps), d.ref, k32);
  ExpectSameBits("ShortConv output (hc " + std::to_string(hc) + ", hidden " + std::to_string(hidden) + ", kernel " +
                     std::to_string(kernel) + ", dilation " + std::to_string(dilation) + ")",
                 got, r.act);
}

// §FUS.7 The whole demo layer equals DemoForward(..., kFloat32): output,
// hidden_after, gates, g and values.
template <class Backend>
void DemoForwardMatchesMirror() {
  const int32_t hc = Draw<int32_t>(1, 5), hidden = Draw<int32_t>(1, 33), in = Draw<int32_t>(1, 33);
  const int32_t kernel = Draw<int32_t>(1, 5), dilation = Draw<int32_t>(1, 6);
  const int64_t steps = Draw<int64_t>(0, 13);
  const bool specials = Draw<int32_t>(0, 5) == 0;
  Source src{*rc::gen::arbitrary<uint64_t>()};
  const DrawnDemo d = DrawDemo(src, hc, hidden, in, kernel, dilation, specials);
  const size_t per = static_cast<size_t>(hc) * static_cast<size_t>(hidden);
  const std::vector<float> e = src.Floats(static_cast<size_t>(steps) * static_cast<size_t>(in), specials);
  const std::vector<float> h = src.Floats(static_cast<size_t>(steps) * per, specials);
  BeginCase<Backend>("DemoForward", DemoGroup("CudaDemoForward", d));
  Input("steps", steps);
  Input("e", HexFloats(e));
  Input("hidden", HexFloats(h));
  FusionDemo<Backend> demo(d.w);
  const std::vector<float> output = demo.Forward(e, h, steps);
  const DemoForwardTrace r = DemoForward(Doubles(e), Doubles(h), static_cast<size_t>(steps), d.ref, k32);
  ExpectSameBits("output", output, r.output);
  ExpectSameBits("hidden_after", demo.hidden_after(), r.hidden_after);
  ExpectSameBits("value", demo.values(), r.value);
  std::vector<double> gates, dots;
  for (const DemoTokenTrace& t : r.tokens) {
    for (const DemoStreamTrace& s : t.streams) {
      gates.push_back(s.gate);
      dots.push_back(s.g);
    }
  }
  ExpectSameBits("gate", demo.gates(), gates);
  ExpectSameBits("g", demo.dots(), dots);
}

// ---------------------------------------------------------------------------
// §FUS.10 v4.1 end to end
// ---------------------------------------------------------------------------

// The kernels chained on the backend: hash -> lookup -> fp8 wkv with the
// split launch (keys and value straight into FusionV41's inputs, no host round
// trip) -> FusionV41, against HashSequence -> LookupRows ->
// QuantizeActivation + Fp8Linear (kFloat32) + ToBf16 -> FuseV41Stream
// (kFloat32); DEAD positions are masked. A non-finite row value makes both
// refuse.
template <class Backend>
void V41ForwardChainMatchesMirror() {
  EngramConfig c = V41FlashConfig();
  c.max_ngram = Draw<int32_t>(2, 4);
  c.heads = Draw<int32_t>(1, 3);
  c.layer_ids = {Draw<int64_t>(0, 40)};
  c.bases.assign(static_cast<size_t>(c.max_ngram - 1), Draw<int64_t>(2, 100));
  c.num_embeddings.clear();
  c.compressed_vocab_size.reset();
  const int64_t vocab = Draw<int64_t>(1, 60);
  const Layout layout = BuildLayout(c, vocab, Draw<int64_t>(0, vocab));
  const int32_t hc = Draw<int32_t>(1, 5), dim = Draw<int32_t>(1, 40);
  const int64_t head_dim = 32, in = layout.columns() * head_dim, nout = static_cast<int64_t>(dim) * (hc + 1);
  const int64_t tokens = Draw<int64_t>(0, 8);
  const double eps = *rc::gen::element(1e-20, 1e-6);
  Source src{*rc::gen::arbitrary<uint64_t>()};
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < tokens; ++t) ids.push_back(src.Below(4) == 0 ? kDead : static_cast<int64_t>(src.Next() % static_cast<uint64_t>(vocab)));
  const uint64_t table_seed = src.Next();
  const bool edge_rows = src.Below(4) == 0;
  const auto table = SyntheticTable(table_seed, layout.layers[0].num_embeddings, head_dim, edge_rows);
  std::vector<uint8_t> codes(static_cast<size_t>(nout * in));
  for (uint8_t& b : codes) b = static_cast<uint8_t>(src.Next());
  std::vector<uint8_t> scales(static_cast<size_t>(((nout + 31) / 32) * (in / 32)));
  for (uint8_t& b : scales) b = static_cast<uint8_t>(112 + src.Below(24));
  const size_t sd = static_cast<size_t>(dim), shc = static_cast<size_t>(hc), st = static_cast<size_t>(tokens);
  const std::vector<uint16_t> qw = src.Bf16s(shc * sd, false), kw = src.Bf16s(shc * sd, false);
  const std::vector<uint16_t> x = src.Bf16s(st * shc * sd, false);
  std::vector<uint8_t> live(st);
  for (size_t t = 0; t < st; ++t) live[t] = ids[t] == kDead ? 0 : 1;
  BeginCase<Backend>("V41ForwardChain",
                     {{"type", "CudaV41ForwardChain"}, {"compressedVocabSize", vocab}, {"compressedPad", layout.pad},
                      {"maxNgram", c.max_ngram}, {"heads", c.heads}, {"layerId", c.layer_ids[0]}, {"bases", c.bases}, {"hc", hc}, {"dim", dim},
                      {"eps", FloatHex(eps)}, {"tableSeed", table_seed}, {"tableEdgeRows", edge_rows}, {"headDim", head_dim},
                      {"wkvCodes", codes}, {"wkvScales", scales}, {"qWeight", HexBf16s(qw)}, {"kWeight", HexBf16s(kw)}});
  Input("ids", ids);
  Input("x", HexBf16s(x));

  // The reference chain.
  const std::vector<int64_t> ref_rows = HashSequence(layout, ids);
  const std::vector<uint16_t> ref_e = LookupRows(*table, ref_rows);
  std::vector<std::vector<uint16_t>> ref_kv;
  bool ref_refused = false;
  for (size_t t = 0; t < st && !ref_refused; ++t) {
    try {
      const QuantizedActivation q =
          QuantizeActivation(std::span<const uint16_t>(ref_e).subspan(t * static_cast<size_t>(in), static_cast<size_t>(in)));
      std::vector<uint16_t> kv;
      for (double y : Fp8Linear(q, codes, scales, static_cast<size_t>(nout), static_cast<size_t>(in), k32)) kv.push_back(ToBf16(y));
      ref_kv.push_back(kv);
    } catch (const Error&) {
      ref_refused = true;
    }
  }

  // The kernels.
  Hasher<Backend> hasher(layout, 1);
  const std::vector<int64_t> rows = hasher.Append(std::vector<int32_t>{0}, std::vector<int64_t>{tokens}, ids);
  if (rows != ref_rows) Fail("hash rows differ from HashSequence");
  Lookup<Backend> lookup(*table, TableMemory::kBackend);
  const std::vector<uint16_t> e = lookup.Rows(rows);
  if (e != ref_e) Fail("looked-up rows differ from LookupRows");
  Wkv<Backend> wkv(nout, in, codes, scales);
  FusionV41<Backend> fusion(hc, dim, eps, qw, kw);
  Backend& wb = wkv.backend();
  Backend& fb = fusion.backend();
  Buffer<Backend> de(&wb, std::max<size_t>(16, e.size() * 2));
  Buffer<Backend> keys(&wb, std::max<size_t>(16, st * shc * sd * 2)), value(&wb, std::max<size_t>(16, st * sd * 2));
  if (!e.empty()) wb.ToBackend(de.template as<void>(), e.data(), e.size() * 2);
  wkv.Launch(tokens, de.template as<uint16_t>(), keys.template as<uint16_t>(), value.template as<uint16_t>(),
             static_cast<int64_t>(hc) * dim);
  bool refused = false;
  try {
    wkv.Finish();  // waits for the wkv kernels: FusionV41's stream may read their output next
  } catch (const Error&) {
    refused = true;
  }
  RC_ASSERT(refused == ref_refused);
  if (refused) return;
  Buffer<Backend> dx(&fb, std::max<size_t>(16, x.size() * 2)), dlive(&fb, std::max<size_t>(16, st));
  Buffer<Backend> ddot(&fb, std::max<size_t>(16, st * shc * 4)), dgate(&fb, std::max<size_t>(16, st * shc * 4));
  Buffer<Backend> dout(&fb, std::max<size_t>(16, x.size() * 2));
  if (!x.empty()) fb.ToBackend(dx.template as<void>(), x.data(), x.size() * 2);
  if (st > 0) fb.ToBackend(dlive.template as<void>(), live.data(), st);
  fusion.Launch(tokens, dx.template as<uint16_t>(), keys.template as<uint16_t>(), value.template as<uint16_t>(),
                dlive.template as<uint8_t>(), ddot.template as<float>(), dgate.template as<float>(),
                dout.template as<uint16_t>());
  fb.Sync();
  std::vector<uint16_t> out(x.size());
  std::vector<float> gate(st * shc);
  if (!out.empty()) fb.ToHost(out.data(), dout.template as<void>(), out.size() * 2);
  if (!gate.empty()) fb.ToHost(gate.data(), dgate.template as<void>(), gate.size() * 4);
  fb.Sync();
  for (size_t t = 0; t < st; ++t) {
    const std::span<const uint16_t> kv(ref_kv[t]);
    for (size_t ci = 0; ci < shc; ++ci) {
      const V41StreamTrace r =
          FuseV41Stream(std::span<const uint16_t>(x).subspan((t * shc + ci) * sd, sd), kv.subspan(ci * sd, sd),
                        kv.subspan(shc * sd, sd), std::span<const uint16_t>(qw).subspan(ci * sd, sd),
                        std::span<const uint16_t>(kw).subspan(ci * sd, sd), eps, live[t] == 0, k32);
      const std::string at = "token " + std::to_string(t) + " stream " + std::to_string(ci);
      if (!SameBits(gate[t * shc + ci], r.gate)) Fail(at + " gate: got " + Hex(gate[t * shc + ci]) + ", mirror " + Hex(r.gate));
      for (size_t i = 0; i < sd; ++i) {
        const uint16_t got = out[(t * shc + ci) * sd + i];
        if (got != r.out_bf16[i]) {
          Fail(at + " out[" + std::to_string(i) + "]: got " + Bf16HexOf(got) + ", mirror " + Bf16HexOf(r.out_bf16[i]));
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// HostLauncher: everywhere
// ---------------------------------------------------------------------------

// §STO.10 The float gather kernel returns the reference's rows
// (LookupFloatRows) bit for bit, from backend and mapped host memory, for
// random synthetic tables and ids (repeats, first and last rows); an id
// outside the table is refused naming its index and value.
template <class Backend>
void FloatLookupMatchesReference() {
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const int64_t rows = *rc::gen::inRange<int64_t>(1, 50);
  const int64_t width = *rc::gen::inRange<int64_t>(1, 70);
  const auto table = SyntheticFloatTable(seed, rows, width);
  std::vector<int64_t> ids = *rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(0, rows));
  ids.push_back(0);
  ids.push_back(rows - 1);
  const std::vector<float> want = LookupFloatRows(*table, ids);
  BeginCase<Backend>("FloatLookup", {{"type", "CudaFloatLookup"}, {"seed", seed}, {"rows", rows}, {"width", width}});
  Input("rowIds", ids);
  for (TableMemory memory : {TableMemory::kBackend, TableMemory::kHostMapped}) {
    FloatLookup<Backend> lookup(*table, memory);
    const std::vector<float> got = lookup.Rows(ids);
    RC_ASSERT(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (Bits(got[i]) != Bits(want[i])) {
        Fail("value " + std::to_string(i) + ": got " + Hex(got[i]) + ", reference " + Hex(want[i]));
      }
    }
    std::vector<int64_t> bad = ids;
    const size_t at = *rc::gen::inRange<size_t>(0, bad.size());
    bad[at] = *rc::gen::element<int64_t>(-1, rows, rows + 7, INT64_MIN, INT64_MAX);
    bool threw = false;
    try {
      lookup.Rows(bad);
    } catch (const Error& e) {
      // The first bad index is `at` unless an earlier id was bad: there is none.
      threw = std::string(e.what()).find("index " + std::to_string(at) + " (row " + std::to_string(bad[at]) + ")") !=
              std::string::npos;
    }
    RC_ASSERT(threw);
  }
}

RC_GTEST_PROP(HostLauncher, FloatLookupMatchesReference_STO10, ()) { FloatLookupMatchesReference<HostBackend>(); }

RC_GTEST_PROP(HostLauncher, FusionGateFunctionMatchesMirror_FUS4, ()) { GateFunctionMatchesMirror<HostBackend>(); }
RC_GTEST_PROP(HostLauncher, WkvBf16MatchesMirror_FUS2, ()) { WkvBf16MatchesMirror<HostBackend>(); }
RC_GTEST_PROP(HostLauncher, WkvFp8MatchesMirror_FUS2_2, ()) { WkvFp8MatchesMirror<HostBackend>(); }
RC_GTEST_PROP(HostLauncher, WkvFp8RefusesNonFinite_FUS2_1, ()) { WkvFp8RefusesNonFinite<HostBackend>(); }
RC_GTEST_PROP(HostLauncher, DemoGateMatchesMirror_FUS6, ()) { DemoGateMatchesMirror<HostBackend>(); }
RC_GTEST_PROP(HostLauncher, ShortConvMatchesMirror_FUS7, ()) { ShortConvMatchesMirror<HostBackend>(); }
RC_GTEST_PROP(HostLauncher, DemoForwardMatchesMirror_FUS7, ()) { DemoForwardMatchesMirror<HostBackend>(); }
RC_GTEST_PROP(HostLauncher, WkvV41ForwardChainMatchesMirror_FUS10, ()) { V41ForwardChainMatchesMirror<HostBackend>(); }

// §FUS.2.1 Every float32 input of the encoder that the quantization can
// produce (|x| <= 448 after the division, and beyond: saturation), one
// binade sample each: EncodeE4M3 equals the reference's EncodeE4M3Saturating.
TEST(HostLauncher, WkvEncodeE4M3MatchesReference_FUS2_1) {
  int mismatches = 0;
  // Every float32 with the low 13 mantissa bits zero (2^19 patterns, both signs),
  // which covers every E4M3 tie and neighbour, plus random low bits.
  for (uint32_t hi = 0; hi < (1u << 19); ++hi) {
    for (uint32_t low : {0u, 1u, 0xFFFu, 0x1000u, 0x1FFFu}) {
      const float x = FromBits((hi << 13) | low);
      if (std::isnan(x)) continue;
      const uint8_t got = EncodeE4M3(x), want = EncodeE4M3Saturating(x);
      if (got != want && ++mismatches <= 10) {
        ADD_FAILURE() << "x " << Hex(x) << ": got 0x" << std::hex << int{got} << " want 0x" << int{want};
      }
    }
  }
  EXPECT_EQ(EncodeE4M3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(mismatches, 0);
}

// Argument errors name the argument and its value.
void ExpectError(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no engram::Error; expected one naming \"" << part << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(HostLauncher, WkvArgumentErrors) {
  const std::vector<uint16_t> w(6 * 64, 0x3F80);
  ExpectError([&] { HostWkv(6, 64, std::span<const uint16_t>(w).first(100)); }, "wkv: weight has 100 values");
  ExpectError([&] { HostWkv(0, 64, std::span<const uint16_t>(w)); }, "out_features 0");
  ExpectError([&] { HostWkv(6, 0, std::span<const uint16_t>(w)); }, "in_features 0");
  HostWkv plain(6, 64, std::span<const uint16_t>(w));
  ExpectError([&] { plain.Apply(std::vector<uint16_t>(65, 0)); }, "e has 65 values, not a multiple of in_features 64");
  const std::vector<uint8_t> codes(6 * 64, 0x38), scales(2, 127);
  ExpectError([&] { HostWkv(6, 40, std::span<const uint8_t>(codes).first(240), std::span<const uint8_t>(scales)); },
              "in_features 40 is not a positive multiple of 32");
  ExpectError([&] { HostWkv(6, 64, std::span<const uint8_t>(codes).first(10), std::span<const uint8_t>(scales)); },
              "weight codes has 10 values");
  ExpectError([&] { HostWkv(6, 64, std::span<const uint8_t>(codes), std::span<const uint8_t>(scales).first(1)); },
              "weight scales has 1 values; ceil(out_features/32) * (in_features/32) = 2");
  HostWkv fp8(6, 64, std::span<const uint8_t>(codes), std::span<const uint8_t>(scales));
  std::vector<uint16_t> e(128, 0x3F80);
  e[69] = 0x7FC0;  // NaN at token 1, index 5
  ExpectError([&] { fp8.Apply(e); }, "e[1][5] is NaN");
  e[69] = 0xFF80;
  ExpectError([&] { fp8.Apply(e); }, "e[1][5] is -inf");
  e[69] = 0x3F80;
  EXPECT_EQ(fp8.Apply(e).size(), 12u);  // the object stays usable after a refusal
  ExpectError([&] { fp8.Launch(1, nullptr, nullptr, nullptr, 3); }, "split 3 needs kv_tail");
  ExpectError([&] { fp8.Launch(1, nullptr, nullptr, nullptr, 7); }, "split 7 is beyond out_features 6");
}

TEST(HostLauncher, FusionDemoArgumentErrors) {
  const std::vector<float> big(4096, 0.5f);
  const std::span<const float> s(big);
  auto weights = [&](int32_t hc, int32_t hidden, int32_t in, int32_t kernel) {
    const size_t st = static_cast<size_t>(hc) * static_cast<size_t>(hidden);
    return DemoWeights{hc, hidden, in, kernel, 3,
                       s.first(st * static_cast<size_t>(in)), s.first(st), s.first(st), s.first(st),
                       s.first(static_cast<size_t>(hidden) * static_cast<size_t>(in)),
                       s.first(static_cast<size_t>(hidden)), s.first(st), s.first(st * static_cast<size_t>(kernel))};
  };
  DemoWeights w = weights(2, 8, 16, 4);
  EXPECT_NO_THROW(HostFusionDemo{w});
  DemoWeights bad = w;
  bad.hc = 0;
  ExpectError([&] { HostFusionDemo{bad}; }, "hc 0 must be in [1, 2^31)");
  bad = w;
  bad.dilation = -1;
  ExpectError([&] { HostFusionDemo{bad}; }, "dilation -1");
  bad = w;
  bad.key_w = s.first(10);
  ExpectError([&] { HostFusionDemo{bad}; }, "key_w has 10 values; hc * hidden * in = 256");
  bad = w;
  bad.value_b = s.first(7);
  ExpectError([&] { HostFusionDemo{bad}; }, "value_b has 7 values; hidden = 8");
  bad = w;
  bad.conv_w = s.first(63);
  ExpectError([&] { HostFusionDemo{bad}; }, "conv_w has 63 values; hc * hidden * kernel = 64");
  HostFusionDemo demo(w);
  ExpectError([&] { demo.Gate(s.first(32), s.first(31)); }, "demo-v1 gate: hidden has 31 values; tokens * hc * hidden = 32");
  ExpectError([&] { demo.Gate(s.first(33), s.first(32)); }, "e has 33 values, not a multiple of in 16");
  ExpectError([&] { demo.ShortConv(s.first(17), 1); }, "ShortConv: value has 17 values; steps * hc * hidden = 16");
  ExpectError([&] { demo.ShortConv(s.first(0), -1); }, "steps -1 is negative");
  ExpectError([&] { demo.Forward(s.first(32), s.first(31), 2); }, "demo-v1 forward: hidden has 31 values; tokens * hc * hidden = 32");
  ExpectError([&] { demo.Forward(s.first(32), s.first(48), 3); }, "demo-v1 forward: e has 32 values; tokens * in = 48");
  EXPECT_EQ(demo.Forward(s.first(0), s.first(0), 0).size(), 0u);
}

// ---------------------------------------------------------------------------
// Device: the same properties on a GPU (skipped without one)
// ---------------------------------------------------------------------------

template <class F>
void CheckOnDevice(const char* name, F body) {
  EXPECT_TRUE(rc::check(name, body));
}

TEST(Device, FloatLookupMatchesReference_STO10) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device float lookup", [] { FloatLookupMatchesReference<DeviceBackend>(); });
}
TEST(Device, FusionGateFunctionMatchesMirror_FUS4) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device gate function", [] { GateFunctionMatchesMirror<DeviceBackend>(); });
}
TEST(Device, WkvBf16MatchesMirror_FUS2) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device wkv bf16", [] { WkvBf16MatchesMirror<DeviceBackend>(); });
}
TEST(Device, WkvFp8MatchesMirror_FUS2_2) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device wkv fp8", [] { WkvFp8MatchesMirror<DeviceBackend>(); });
}
TEST(Device, WkvFp8RefusesNonFinite_FUS2_1) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device wkv fp8 non-finite", [] { WkvFp8RefusesNonFinite<DeviceBackend>(); });
}
TEST(Device, DemoGateMatchesMirror_FUS6) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device demo gate", [] { DemoGateMatchesMirror<DeviceBackend>(); });
}
TEST(Device, ShortConvMatchesMirror_FUS7) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device ShortConv", [] { ShortConvMatchesMirror<DeviceBackend>(); });
}
TEST(Device, DemoForwardMatchesMirror_FUS7) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device demo forward", [] { DemoForwardMatchesMirror<DeviceBackend>(); });
}
TEST(Device, WkvV41ForwardChainMatchesMirror_FUS10) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device v4.1 forward chain", [] { V41ForwardChainMatchesMirror<DeviceBackend>(); });
}

}  // namespace
}  // namespace engram::cuda::fusion_test
