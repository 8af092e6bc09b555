// spec/conformance.md §CONF.7 — random cases of the suite gate_v41 (§FUS):
// GateFunctionTest (random_fusion.cc), V41GateTest and WkvTest. What the
// fusion suites' random cases share: random_fusion.cc.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "reference/fusion.h"
#include "vectors/random_cases.h"
#include "vectors/random_fusion_common.h"
#include "vectors/suite.h"
#include "vectors/suite_fusion.h"

namespace engram::vectors::random_fusion {

namespace {

// ------------------------------------------------------------------ V41GateTest (§FUS.3)

const std::vector<std::string> kV41Keys = {"x", "key", "value", "qWeight", "kWeight"};

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

}  // namespace

}  // namespace engram::vectors::random_fusion

namespace engram::vectors {

RandomSuite RandomGateV41() {
  using namespace random_fusion;  // in the body: the library builds in unity batches (CMakeLists.txt)
  // GateFunctionTest 1 in 3, V41GateTest 1 in 2, WkvTest 1 in 6.
  auto draw = [](uint64_t seed, int64_t index) {
    static const std::vector<Kind> kinds = {
        {2, DrawDot, BuildGateV41Uncached}, {3, DrawV41Gate, BuildGateV41Uncached}, {1, DrawWkv, BuildGateV41Uncached}};
    return DrawOf("gate_v41", kinds, seed, index);
  };
  return {"gate_v41", "fusion.schema.json", "ENGRAM-FUSION", draw, BuildGateV41, ShrinkGateV41};
}

}  // namespace engram::vectors
