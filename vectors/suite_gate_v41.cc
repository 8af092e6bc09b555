// spec/fusion.md — suite `gate_v41` (§FUS.10): generator and verifier of the
// v4.1 gate (GateFunctionTest, V41GateTest, WkvTest). What the fusion suites
// share (AddTest, the verifiers, the §FUS.9.1 bounds, the GateFunctionTest):
// suite_fusion.cc.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "reference/fusion.h"
#include "vectors/suite.h"
#include "vectors/suite_fusion.h"
#include "vectors/suite_fusion_common.h"

namespace engram::vectors::fusion {

// ---------------------------------------------------------------------------
// V41GateTest (§FUS.3)

namespace {

ojson V41StreamJson(const V41StreamTrace& t, bool with_scale) {
  ojson j = {{"sumH2", Hex(t.sum_h2)},   {"meanH2", Hex(t.mean_h2)}, {"rstdH", Hex(t.rstd_h)},
             {"sumK2", Hex(t.sum_k2)},   {"meanK2", Hex(t.mean_k2)}, {"rstdK", Hex(t.rstd_k)},
             {"rstd", Hex(t.rstd)},      {"sumHwk", Hex(t.sum_hwk)}, {"dot", Hex(t.dot)}};
  if (with_scale) j["dotScale"] = Hex(t.dot_scale);
  const ojson parts = GatePartsJson(t.gate_parts);  // a named object: items() of a temporary dangles
  for (const auto& [k, v] : parts.items()) j[k] = v;
  return j;
}

}  // namespace

// x, key, qWeight, kWeight: [hc][dim] flattened; value: [dim]; masked: bool.
ojson ComputeV41Gate(const json& group, const json& test, Bug bug) {
  const size_t dim = group.at("dim"), hc = group.at("hc");
  const double eps = ReadHex(group.at("eps"), "eps");
  const std::vector<uint16_t> x = ReadBits(test.at("x")), key = ReadBits(test.at("key")),
                              value = ReadBits(test.at("value")), qw = ReadBits(test.at("qWeight")),
                              kw = ReadBits(test.at("kWeight"));
  const bool masked = test.at("masked").get<bool>();
  ojson out;
  try {
    if (x.size() != hc * dim || key.size() != hc * dim || qw.size() != hc * dim || kw.size() != hc * dim) {
      throw Error("x, key, qWeight and kWeight must each have hc * dim = " + std::to_string(hc * dim) + " values");
    }
    ojson out_bits = ojson::array(), ref = ojson::array(), g64 = ojson::array(), g32 = ojson::array(),
          inter = ojson::array(), out_low = ojson::array(), out_high = ojson::array();
    std::vector<double> v_exact;
    for (uint16_t b : value) v_exact.push_back(Bf16Value(b));
    const json tol = json::parse(V41GateGroup("", 1, 1, 0)["tolerance"].dump());
    for (size_t c = 0; c < hc; ++c) {
      auto part = [&](const std::vector<uint16_t>& v) { return std::span(v).subspan(c * dim, dim); };
      V41StreamTrace r = StreamOf(bug, part(x), part(key), value, part(qw), part(kw), eps, masked, k64);
      V41StreamTrace m = StreamOf(bug, part(x), part(key), value, part(qw), part(kw), eps, masked, k32);
      for (uint16_t b : m.out_bf16) out_bits.push_back(b);
      for (double v : r.out) ref.push_back(FloatHex(v));
      // §FUS.9.1 every gate the gate's tolerance allows (v is an input: exact).
      const double allowance = GateAllowance(tol, &tol.at("dot"), r, m);
      AddOutBounds(r, part(x), v_exact, v_exact, r.gate - allowance, r.gate + allowance, masked, out_low, out_high);
      g64.push_back(FloatHex(r.gate));
      g32.push_back(FloatHex(m.gate));
      inter.push_back({{"float64", V41StreamJson(r, true)}, {"float32", V41StreamJson(m, false)}});
    }
    out["result"] = "valid";
    out["gate"] = {{"float64", g64}, {"float32", g32}};
    out["out"] = out_bits;
    out["outRef64"] = ref;
    out["outLow64"] = out_low;
    out["outHigh64"] = out_high;
    out["intermediate"] = inter;
  } catch (const Error& e) {
    out["result"] = "invalid";
    out["error"] = e.what();
  }
  return out;
}

// ---------------------------------------------------------------------------
// WkvTest (§FUS.2): plain bf16 weights or fp8 block-scaled weights.

ojson ComputeWkv(const json& /*group*/, const json& test, Bug bug) {
  const std::vector<uint16_t> e = ReadBits(test.at("e"));
  const size_t out_features = test.at("outFeatures");
  ojson out;
  try {
    std::vector<double> y64, y32;
    std::vector<Range> flush;  // §FUS.9 the bf16 GEMM's flush allowance (plain tests only)
    ojson inter;
    if (test.contains("weight")) {  // bf16 checkpoint: F.linear in bf16
      std::vector<double> ed, w;
      for (uint16_t b : e) ed.push_back(Bf16Value(b));
      for (uint16_t b : ReadBits(test.at("weight"))) w.push_back(Bf16Value(b));
      y64 = LinearNoBias(ed, w, out_features, k64);
      y32 = LinearNoBias(ed, w, out_features, k32);
      flush = Bf16GemmFlushRange(ed, w, out_features, y64);
    } else if (bug && !MutantNonFiniteActivationKv(*bug, e, out_features).empty()) {
      y64 = y32 = MutantNonFiniteActivationKv(*bug, e, out_features);  // the kernel's NaN kv (§VEC.12)
    } else {  // fp8 checkpoint: act_quant + fp8_gemm
      QuantizedActivation q = QuantizeActivation(e);
      const auto wc = test.at("weightCodes").get<std::vector<uint8_t>>();
      const auto ws = test.at("weightScales").get<std::vector<uint8_t>>();
      y64 = Fp8LinearOf(bug, q, wc, ws, out_features, e.size(), k64);
      y32 = Fp8LinearOf(bug, q, wc, ws, out_features, e.size(), k32);
      inter = {{"actCodes", q.codes}, {"actScales", q.scales}, {"float32Accumulator", HexList(y32)}};
    }
    ojson bits = ojson::array();
    for (double v : y32) bits.push_back(ToBf16(v));
    out["result"] = "valid";
    out["kv"] = bits;
    out["kvRef64"] = HexList(y64);
    if (test.contains("weight")) {
      ojson low = ojson::array(), high = ojson::array();
      for (const Range& r : flush) {
        low.push_back(FloatHex(r.lo));
        high.push_back(FloatHex(r.hi));
      }
      out["kvLow64"] = low;
      out["kvHigh64"] = high;
    }
    if (!inter.is_null()) out["intermediate"] = inter;
  } catch (const Error& e) {
    out["result"] = "invalid";
    out["error"] = e.what();
  }
  return out;
}

// ---------------------------------------------------------------------------
// gate_v41

// A V41GateTest group header of the given shape (§FUS.9 tolerances of the v4.1 gate).
ojson V41GateGroup(const std::string& comment, size_t dim, size_t hc, double eps) {
  return {{"type", "V41GateTest"},
          {"comment", comment},
          {"profile", "v4.1"},
          {"dim", dim},
          {"hc", hc},
          {"eps", Hex(eps)},
          {"tolerance", ToleranceJson({{"rstd", Rule(2, -20, "absRef")},
                                       {"dot", Rule(2, -18, "dotScale")},
                                       {"gate", Rule(2, -18, "gateSlope")},
                                       {"out", FaithfulRule()}})}};
}

namespace {

// Random inputs of one V41GateTest (x, key, value, weights), unmasked.
ojson RandomV41GateInput(InputRng& rng, size_t dim, size_t hc) {
  return ojson{{"x", RandomBf16(rng, hc * dim, 0)},
               {"key", RandomBf16(rng, hc * dim, 1)},
               {"value", RandomBf16(rng, dim, 0)},
               {"qWeight", RandomBf16(rng, hc * dim, 0)},
               {"kWeight", RandomBf16(rng, hc * dim, 0)},
               {"masked", false}};
}

// Stream 0 with h orthogonal to w*key in small exact values: the pairs cancel
// exactly, so its dot is +0 in every summation order.
void MakeStreamZeroOrthogonal(ojson& in, size_t dim) {
  std::vector<uint16_t> x = in["x"].get<std::vector<uint16_t>>(), k = in["key"].get<std::vector<uint16_t>>(),
                        q = in["qWeight"].get<std::vector<uint16_t>>(), kw = in["kWeight"].get<std::vector<uint16_t>>();
  for (size_t i = 0; i < dim; ++i) {
    x[i] = ToBf16(1.0);
    k[i] = ToBf16(i % 2 == 0 ? 0.5 : -0.5);
    q[i] = kw[i] = ToBf16(1.0);
  }
  in["x"] = x;
  in["key"] = k;
  in["qWeight"] = q;
  in["kWeight"] = kw;
}

// The notes (flags) of gate_v41.
void GateV41Notes(SuiteBuilder& b) {
  CommonNotes(b);
  AddFusionNote(b, FusionMutant::kSignGate, false);
  AddFusionNote(b, FusionMutant::kWhereNegative, false);
  b.Note("ClampMin", "EDGE_CASE", "|dot| <= 1e-6 is raised to 1e-6 before the square root (clamp_min, not +1e-6).",
         "§FUS.4");
  AddFusionNote(b, FusionMutant::kPlusEps, false);
  b.Note("NaNPropagation", "EDGE_CASE",
         "NaN in h or the key makes dot, the gate and the whole stream's output NaN; NaN in v only its own elements.",
         "§FUS.3");
  b.Note("Masked", "BASIC", "A masked position: gate exactly 0, out = h + 0 * v.", "§FUS.3");
  AddFusionNote(b, FusionMutant::kSkipMasked, false);
  b.Note("NegativeZeroH", "EDGE_CASE", "h = -0 with the gate 0: -0 + 0 * v is +0 when v >= 0 (torch's IEEE sum).",
         "§FUS.3");
  b.Note("ZeroStream", "EDGE_CASE", "h = 0: mean 0, rstd_h = eps^-1/2 (1e10 with eps 1e-20), dot = +0.", "§FUS.3");
  b.Note("PerStreamNorm", "BASIC",
         "Streams differ in scale: the norms are per stream over dim, not over all hc*dim values.", "§FUS.3");
  AddFusionNote(b, FusionMutant::kWkvBlock128, false);
  b.Note("ActQuantPow2", "BASIC", "Activation scales are powers of two per 32 values, amax floored at 1e-4.",
         "§FUS.2");
  b.Note("NonFiniteActivation", "INVALID_INPUT", "The fp8 activation quantization is specified for finite values only.",
         "§FUS.2");
  b.Note("ShapeMismatch", "INVALID_INPUT", "Inputs whose lengths do not match dim / hc must be refused.", "§FUS.3");
  b.Note("GateInOut", "EDGE_CASE",
         "out = h + gate * v cancels, so a gate within its tolerance (sigmoid a float32 ulp off, as torch's is) "
         "moves out by more than a bf16 step: out is judged against every gate the gate's tolerance allows "
         "(outLow64 .. outHigh64).",
         "§FUS.9");

}

// GateFunctionTest: the v4.1 gate as a function of dot (§FUS.4).
void AddGateFunctionTests(SuiteBuilder& b) {
  ojson gf = {{"type", "GateFunctionTest"}, {"comment", "the v4.1 gate as a function of dot"}, {"profile", "v4.1"},
              {"tolerance", GateGroupTolerance()}};
  size_t g = b.Group(gf);
  const double inf = std::numeric_limits<double>::infinity();
  struct D {
    double dot;
    const char* comment;
    std::vector<std::string> flags;
  };
  const std::vector<D> dots = {
      {0.0, "dot = +0: copysign keeps the + sign: sigmoid(+0.001)", {"ClampMin"}},
      {-0.0, "dot = -0: copysign gives sigmoid(-0.001)", {"ClampMin"}},
      {1e-7, "below the clamp", {"ClampMin"}},
      {-1e-7, "below the clamp, negative", {"ClampMin"}},
      {1e-6, "at the clamp", {"ClampMin"}},
      {-1e-6, "at the clamp, negative", {"ClampMin"}},
      {4e-6, "just above the clamp: sqrt(4e-6) = 0.002", {}},
      {0.25, "sqrt(0.25) = 0.5", {}},
      {-0.25, "negative", {}},
      {30.0, "large", {}},
      {-30.0, "large negative", {}},
      {inf, "+inf: gate 1", {}},
      {-inf, "-inf: gate 0", {}},
      {std::nan(""), "NaN propagates", {"NaNPropagation"}},
  };
  for (const D& d : dots) AddTest(b, g, gf, ComputeGateFunction, d.comment, d.flags, {"§FUS.4"}, {{"dot", Hex(d.dot)}});

}

// V41GateTest: the post-wkv gate on random and edge inputs (§FUS.3), dim 64, hc 4.
void AddV41GateTests(SuiteBuilder& b) {
  const size_t dim = 64, hc = 4;
  for (double eps : {1e-20, 1e-6}) {
    ojson vg = V41GateGroup("post-wkv gate, dim 64, hc 4, eps " + FloatHex(eps), dim, hc, eps);
    size_t vgi = b.Group(vg);
    InputRng rng(eps == 1e-20 ? 0x46555331 : 0x46555332);
    auto base = [&]() { return RandomV41GateInput(rng, dim, hc); };
    for (int i = 0; i < 3; ++i) AddTest(b, vgi, vg, ComputeV41Gate, "random inputs", {}, {"§FUS.3"}, base());
    {
      ojson in = base();
      std::vector<uint16_t> x = in["x"].get<std::vector<uint16_t>>();
      for (size_t i = 0; i < dim; ++i) {
        x[i] = ToBf16(Bf16Value(x[i]) * 1024.0);                  // stream 0: large
        x[2 * dim + i] = ToBf16(Bf16Value(x[2 * dim + i]) / 512);  // stream 2: small
      }
      in["x"] = x;
      AddTest(b, vgi, vg, ComputeV41Gate, "streams of very different scale", {"PerStreamNorm"}, {"§FUS.3"}, in);
    }
    {
      ojson in = base();
      std::vector<uint16_t> x = in["x"].get<std::vector<uint16_t>>();
      for (size_t i = 0; i < dim; ++i) x[dim + i] = 0;  // stream 1 all +0
      in["x"] = x;
      AddTest(b, vgi, vg, ComputeV41Gate, "stream 1 is all zero: dot = +0, gate sigmoid(+0.001)",
              {"ZeroStream"}, {"§FUS.3", "§FUS.4"}, in);
    }
    {
      // dot = +0 for all implementations.
      ojson in = base();
      MakeStreamZeroOrthogonal(in, dim);
      AddTest(b, vgi, vg, ComputeV41Gate, "stream 0: h orthogonal to w*key, the sum cancels exactly to +0",
              {"ClampMin"}, {"§FUS.3", "§FUS.4"}, in);
    }
    {
      ojson in = base();
      in["masked"] = true;
      AddTest(b, vgi, vg, ComputeV41Gate, "masked position: gate 0, out == h", {"Masked"}, {"§FUS.3"}, in);
      std::vector<uint16_t> x = in["x"].get<std::vector<uint16_t>>(), v = in["value"].get<std::vector<uint16_t>>();
      x[0] = 0x8000;  // h = -0
      v[0] = ToBf16(1.5);
      v[1] = 0x7F80;  // +inf
      v[2] = 0x7FC0;  // NaN
      in["x"] = x;
      in["value"] = v;
      AddTest(b, vgi, vg, ComputeV41Gate, "masked, with h = -0 and v = inf / NaN: out = h + 0 * v",
              {"Masked", "NegativeZeroH"}, {"§FUS.3"}, in);
    }
    {
      ojson in = base();
      std::vector<uint16_t> x = in["x"].get<std::vector<uint16_t>>(), v = in["value"].get<std::vector<uint16_t>>();
      x[3 * dim + 5] = 0x7FC0;
      v[7] = 0x7FC0;
      in["x"] = x;
      in["value"] = v;
      AddTest(b, vgi, vg, ComputeV41Gate, "NaN in h of stream 3 and in v[7]", {"NaNPropagation"}, {"§FUS.3"}, in);
    }
    {
      ojson in = base();
      std::vector<uint16_t> k = in["key"].get<std::vector<uint16_t>>();
      k.pop_back();
      in["key"] = k;
      AddTest(b, vgi, vg, ComputeV41Gate, "key is one value short", {"ShapeMismatch"}, {"§FUS.3"}, in);
    }
  }

}

// WkvTest: the wkv projection, plain bf16 and fp8 block-scaled (§FUS.2).
void AddWkvTests(SuiteBuilder& b) {
  ojson wg = {{"type", "WkvTest"},
              {"comment", "wkv projection e -> kv = [hc * dim keys | dim value], out = 40 (dim 8, hc 4), in = 64"},
              {"profile", "v4.1"},
              {"tolerance", FusionTolerance("WkvTest", "v4.1")}};
  size_t wgi = b.Group(wg);
  InputRng wrng(0x574B56);
  const size_t win = 64, wout = 40;
  for (int i = 0; i < 2; ++i) {
    AddTest(b, wgi, wg, ComputeWkv, "bf16 weight: F.linear, float32 accumulation, bf16 result", {}, {"§FUS.2"},
            {{"e", RandomBf16(wrng, win, 0)}, {"outFeatures", wout}, {"weight", RandomBf16(wrng, wout * win, -3)}});
  }
  auto fp8_case = [&](int e_exp) {
    std::vector<uint8_t> codes(wout * win), scales(((wout + 31) / 32) * (win / 32));
    for (uint8_t& c : codes) {
      c = static_cast<uint8_t>(wrng.Below(256));
      if ((c & 0x7F) == 0x7F) c = 0x38;
    }
    for (uint8_t& s : scales) s = static_cast<uint8_t>(118 + wrng.Below(12));
    return ojson{{"e", RandomBf16(wrng, win, e_exp)}, {"outFeatures", wout}, {"weightCodes", codes},
                 {"weightScales", scales}};
  };
  AddTest(b, wgi, wg, ComputeWkv, "fp8 weight, 32x32 blocks (40 outputs: two row blocks)", {"ActQuantPow2"},
          {"§FUS.2"}, fp8_case(0));
  AddTest(b, wgi, wg, ComputeWkv, "fp8 weight, large activations", {"ActQuantPow2"}, {"§FUS.2"},
          fp8_case(8));
  {
    ojson in = fp8_case(-20);
    std::vector<uint16_t> e(win, 0);  // all zero: amax floored at 1e-4
    for (size_t i = 32; i < win; ++i) e[i] = ToBf16(std::ldexp(1.0, -20));
    in["e"] = e;
    AddTest(b, wgi, wg, ComputeWkv, "an all-zero block and a tiny block: amax floored at 1e-4",
            {"ActQuantPow2"}, {"§FUS.2"}, in);
  }
  {
    ojson in = fp8_case(0);
    std::vector<uint16_t> e = in["e"].get<std::vector<uint16_t>>();
    e[3] = 0x7FC0;
    in["e"] = e;
    AddTest(b, wgi, wg, ComputeWkv, "NaN activation: refused", {"NonFiniteActivation"}, {"§FUS.2"}, in);
  }

}

// V41GateTests appended after the first vectors: exact cancellations (§FUS.9).
void AddV41GateCancellationTests(SuiteBuilder& b) {
  const size_t dim = 64, hc = 4;
  // V41GateTest, added after the first vectors (appended so that no earlier
  // tcId changes, §VEC.11): dot = +0 exactly and v[0] = -2, so out[0] of
  // stream 0 is 1 - 2 * gate: -0.0005 with copysign's gate, 0 with sign()'s
  // 0.5. Since §FUS.9.1 judges out over every gate the gate's tolerance allows
  // (gateSlope allows sigmoid(-0.001) at dot = +0), out no longer tells the two
  // apart here and SignedZeroCopysign is not on these tests; the
  // GateFunctionTests at dot = +-0 still carry it.
  for (double eps : {1e-20, 1e-6}) {
    ojson cg = V41GateGroup(
        "post-wkv gate at an exact cancellation (dot = +0, out = 1 - 2 * gate), dim 64, hc 4, eps " + FloatHex(eps), dim,
        hc, eps);
    size_t cgi = b.Group(cg);
    InputRng rng(eps == 1e-20 ? 0x46555333 : 0x46555334);
    ojson in = RandomV41GateInput(rng, dim, hc);
    MakeStreamZeroOrthogonal(in, dim);
    std::vector<uint16_t> v = in["value"].get<std::vector<uint16_t>>();
    v[0] = ToBf16(-2.0);
    in["value"] = v;
    AddTest(b, cgi, cg, ComputeV41Gate,
            "stream 0: h orthogonal to w*key, dot = +0; v[0] = -2: out[0] = 1 - 2 * gate", {"ClampMin"},
            {"§FUS.3", "§FUS.4"}, in);
  }

  // V41GateTest, appended: out = h + gate * v cancels. h = 0.5,
  // v = -0.5 everywhere, key = 1, kWeight = 1, qWeight = (32, 19, ..., 19):
  // dot = (32 + 63 * 19) / 8 = 153.625 exactly in every order, and the gate
  // sigmoid(sqrt(dot)) = 0x1.ffff750c95067p-1 in float64 rounds to
  // 0x1.ffff76p-1. torch.sigmoid on CPU was seen giving 0x1.ffff74p-1 where the
  // correctly rounded gate is 0x1.ffff76p-1 (one float32 ulp, within the gate's
  // tolerance); with that gate out = 0.5 * (1 - gate) = 0x1.18p-19 is two bf16
  // steps from the float64 value.
  // §FUS.9 widens out by the gate's tolerance, so that out passes.
  {
    const size_t cdim = 64;
    ojson cg = V41GateGroup("post-wkv gate, out cancels (h = 0.5, v = -0.5, gate near 1), dim 64, hc 1, eps " +
                                FloatHex(1e-20),
                            cdim, 1, 1e-20);
    size_t cgi = b.Group(cg);
    std::vector<uint16_t> q(cdim, ToBf16(19.0));
    q[0] = ToBf16(32.0);
    ojson in = {{"x", std::vector<uint16_t>(cdim, ToBf16(0.5))},
                {"key", std::vector<uint16_t>(cdim, ToBf16(1.0))},
                {"value", std::vector<uint16_t>(cdim, ToBf16(-0.5))},
                {"qWeight", q},
                {"kWeight", std::vector<uint16_t>(cdim, ToBf16(1.0))},
                {"masked", false}};
    AddTest(b, cgi, cg, ComputeV41Gate,
            "out = 0.5 - 0.5 * gate cancels: a gate one float32 ulp off (torch's sigmoid) moves out by two bf16 "
            "steps; out is judged over every gate the gate's tolerance allows",
            {"GateInOut"}, {"§FUS.3", "§FUS.9"}, in);
  }
}

// WkvTests at the underflow boundary of §FUS.9 (appended after the first
// vectors, so that no earlier tcId changes): where a bf16 GEMM may flush to
// zero (oneDNN's bf16 kernels do, and torch sends F.linear there), where it
// may not (no value below 2^-126 arises in any order), and the fp8 GEMM, whose
// float32 operations keep gradual underflow.
void AddWkvUnderflowTests(SuiteBuilder& b) {
  b.Note("Bf16GemmFlushToZero", "EDGE_CASE",
         "bf16 wkv: a product, a partial sum or the result below 2^-126, or a subnormal bf16 factor: a bf16 GEMM may "
         "flush it to zero (DAZ / FTZ, as oneDNN's bf16 kernels do), so kv is judged over kvLow64 .. kvHigh64; "
         "a port that keeps gradual underflow passes too.",
         "§FUS.9");
  b.Note("Bf16GemmSmallestNormal", "EDGE_CASE",
         "bf16 wkv whose products are multiples of 2^-126: no partial sum is subnormal in any order, so no flush is "
         "allowed and kv = 2^-126 exactly; a port that flushes the smallest normal value fails.",
         "§FUS.9");
  b.Note("Fp8GemmSubnormal", "EDGE_CASE",
         "fp8 wkv whose scaled block partial is a float32 subnormal (weight scale 2^-126): the fp8 GEMM keeps "
         "gradual underflow (the kernel's float32 operations), so a port that flushes it to zero fails.",
         "§FUS.9");
  ojson wg = {{"type", "WkvTest"},
              {"comment", "wkv projection at the underflow boundary of §FUS.9"},
              {"profile", "v4.1"},
              {"tolerance", FusionTolerance("WkvTest", "v4.1")}};
  const size_t wgi = b.Group(wg);
  auto p2 = [](int e) { return ToBf16(std::ldexp(1.0, e)); };
  const uint16_t neg = 0x8000;
  {
    // e = [2^-60, 2^-60, 2^-130 (a bf16 subnormal), 1]; rows:
    //  0: 2^-126 - 2^-126 (1 - 2^-7) = 2^-133, a sum that cancels into the subnormals;
    //  1: 2^-60 * 2^-70 = 2^-130, one subnormal product;
    //  2: 1 + 2^-130 * 2^123 = 1 + 2^-7: DAZ reads the subnormal factor as 0 and gives 1;
    //  3: 2^-60 * 2^-67 + 2^-60 * 2^-67 = 2^-126, both products 2^-127 (each below 2^-126).
    const std::vector<uint16_t> e = {p2(-60), p2(-60), p2(-130), p2(0)};
    const std::vector<uint16_t> w = {p2(-66), static_cast<uint16_t>(neg | ToBf16(std::ldexp(1.0 - 1.0 / 128, -66))), 0, 0,
                                     p2(-70), 0, 0, 0,
                                     0, 0, p2(123), p2(0),
                                     p2(-67), p2(-67), 0, 0};
    AddTest(b, wgi, wg, ComputeWkv,
            "bf16 weight: a sum cancelling into the subnormals, a subnormal product, a subnormal factor (DAZ) and two "
            "subnormal products summing to 2^-126: each may be flushed",
            {"Bf16GemmFlushToZero"}, {"§FUS.2", "§FUS.9"}, {{"e", e}, {"outFeatures", 4}, {"weight", w}});
  }
  {
    // Products 2^-125, -2^-126 and 2^-126: multiples of 2^-126, so every partial sum in any order is 0 or at
    // least 2^-126 in magnitude. Rows: 2^-125 - 2^-126 = 2^-126; 2^-126 alone; 3 * 2^-126.
    const std::vector<uint16_t> e = {p2(-60), p2(-60)};
    const std::vector<uint16_t> w = {p2(-65), static_cast<uint16_t>(neg | p2(-66)),
                                     p2(-66), 0,
                                     p2(-65), p2(-66)};
    AddTest(b, wgi, wg, ComputeWkv,
            "bf16 weight: results 2^-126 (the smallest normal) and 3 * 2^-126 from products that are multiples of "
            "2^-126: no flush is allowed",
            {"Bf16GemmSmallestNormal"}, {"§FUS.2", "§FUS.9"}, {{"e", e}, {"outFeatures", 3}, {"weight", w}});
  }
  {
    // fp8: e = 1 everywhere (amax 1: activation scale 2^-8, codes 256), one weight row block with scale byte 1
    // (2^-126). Row 0: codes 0x01 (2^-9): partial 32 * 256 * 2^-9 = 16, acc = 16 * 2^-8 * 2^-126 = 2^-130;
    // row 1: codes 0x08 (2^-6): acc = 2^-127; row 2: codes 0x38 (1): acc = 2^-121, normal.
    const size_t in = 32, out = 3;
    std::vector<uint8_t> codes(out * in);
    for (size_t k = 0; k < in; ++k) {
      codes[0 * in + k] = 0x01;
      codes[1 * in + k] = 0x08;
      codes[2 * in + k] = 0x38;
    }
    AddTest(b, wgi, wg, ComputeWkv,
            "fp8 weight, weight scale 2^-126: the scaled partials 2^-130 and 2^-127 are float32 subnormals, kept "
            "(gradual underflow)",
            {"ActQuantPow2", "Fp8GemmSubnormal"}, {"§FUS.2", "§FUS.9"},
            {{"e", std::vector<uint16_t>(in, p2(0))}, {"outFeatures", out}, {"weightCodes", codes},
             {"weightScales", std::vector<uint8_t>{1}}});
  }
}

ojson GenerateGateV41() {
  SuiteBuilder b("gate_v41", "fusion.schema.json", "ENGRAM-FUSION");
  GateV41Notes(b);
  AddGateFunctionTests(b);
  AddV41GateTests(b);
  AddWkvTests(b);
  AddV41GateCancellationTests(b);
  AddWkvUnderflowTests(b);
  return b.Finish();
}

}  // namespace

}  // namespace engram::vectors::fusion

namespace engram::vectors {

SuiteDef GateV41Suite() { return {"gate_v41", "fusion.schema.json", fusion::GenerateGateV41, fusion::FusionVerifiers()}; }

}  // namespace engram::vectors
