// spec/fusion.md — suite `gate_demo` (§FUS.10): generator and verifier of the
// demo-v1 gate (GateFunctionTest, DemoGateTest). What the fusion suites share
// (AddTest, the verifiers, the §FUS.9.1 bounds, the GateFunctionTest, the
// demo-v1 parameters): suite_fusion.cc.
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
// DemoGateTest (§FUS.5, §FUS.6)

namespace {

DemoTokenTrace DemoGateTokenOf(Bug bug, std::span<const double> e, std::span<const double> hidden,
                               const DemoParams& q, Precision p) {
  if (bug) return MutantDemoGateToken(*bug, e, hidden, q, p);
  return DemoGateToken(e, hidden, q, p);
}

ojson DemoStreamJson(const DemoStreamTrace& s, bool with_scale) {
  ojson j = {{"key", HexList(s.key)},
             {"rstdKey", Hex(s.normed_key.rstd)},
             {"normedKey", HexList(s.normed_key.y)},
             {"rstdQuery", Hex(s.normed_query.rstd)},
             {"normedQuery", HexList(s.normed_query.y)},
             {"sum", Hex(s.sum)},
             {"g", Hex(s.g)}};
  if (with_scale) j["dotScale"] = Hex(s.dot_scale);
  const ojson parts = GatePartsJson(s.gate_parts);
  for (const auto& [k, v] : parts.items()) j[k] = v;
  return j;
}

}  // namespace

// DemoGateTest: e [in], hidden [hc][hidden] (hex floats).
ojson ComputeDemoGate(const json& group, const json& test, Bug bug) {
  const DemoParams q = ReadDemoParams(group);
  const std::vector<double> e = ReadHexList(test.at("e"), "e"), hidden = ReadHexList(test.at("hidden"), "hidden");
  ojson out;
  try {
    DemoTokenTrace r = DemoGateTokenOf(bug, e, hidden, q, k64), m = DemoGateTokenOf(bug, e, hidden, q, k32);
    ojson g64 = ojson::array(), g32 = ojson::array(), inter = ojson::array(), v_low = ojson::array(),
          v_high = ojson::array();
    std::vector<double> v64, v32;
    // §FUS.9.1 value = gate * Linear_v(e) over every gate the gate's rule allows
    // and every float32 evaluation of the projection.
    const json tol = json::parse(FusionTolerance("DemoGateTest", "demo-v1").dump());
    const std::vector<double> p_err = LinearBiasErrorBound(e, q.value_w, q.value_b);
    for (size_t c = 0; c < q.hc; ++c) {
      g64.push_back(FloatHex(r.streams[c].gate));
      g32.push_back(FloatHex(m.streams[c].gate));
      v64.insert(v64.end(), r.streams[c].value.begin(), r.streams[c].value.end());
      v32.insert(v32.end(), m.streams[c].value.begin(), m.streams[c].value.end());
      const double allowance = DemoGateAllowance(tol, true, r.streams[c], m.streams[c]);
      for (size_t j = 0; j < q.hidden; ++j) {
        const auto [lo, hi] = Bounds(r.streams[c].value[j], DemoValueRange(r.value_proj[j], p_err[j],
                                                                           r.streams[c].gate - allowance,
                                                                           r.streams[c].gate + allowance));
        v_low.push_back(FloatHex(lo));
        v_high.push_back(FloatHex(hi));
      }
      inter.push_back({{"float64", DemoStreamJson(r.streams[c], true)}, {"float32", DemoStreamJson(m.streams[c], false)}});
    }
    out["result"] = "valid";
    out["gate"] = {{"float64", g64}, {"float32", g32}};
    out["value"] = {{"float64", HexList(v64)}, {"float32", HexList(v32)}};
    out["valueLow64"] = v_low;
    out["valueHigh64"] = v_high;
    out["intermediate"] = {{"valueProj", {{"float64", HexList(r.value_proj)}, {"float32", HexList(m.value_proj)}}},
                           {"streams", inter}};
  } catch (const Error& err) {
    out["result"] = "invalid";
    out["error"] = err.what();
  }
  return out;
}

namespace {

// ---------------------------------------------------------------------------
// gate_demo

ojson GenerateGateDemo() {
  SuiteBuilder b("gate_demo", "fusion.schema.json", "ENGRAM-FUSION");
  CommonNotes(b);
  AddFusionNote(b, FusionMutant::kDemoCopysign, true);
  b.Note("ClampMin", "EDGE_CASE", "|g| <= 1e-6 is raised to 1e-6 before the square root.", "§FUS.6");
  AddFusionNote(b, FusionMutant::kPlusEps, true);
  b.Note("SignNoise", "EDGE_CASE",
         "g is tiny and nonzero (below the clamp): the gate is sigmoid(+0.001) or sigmoid(-0.001) by the sign of g "
         "alone, a jump of 5e-4 across 0; only g = +-0 gives 0.5. Where g is rounding noise around 0 its sign can "
         "depend on the summation order (in DemoGateTest §FUS.9's gateSlope term allows for that).",
         "§FUS.6");
  AddFusionNote(b, FusionMutant::kGateNormEps, true);
  b.Note("NaNPropagation", "EDGE_CASE", "NaN in g: the gate is NaN (sign(NaN) = 0, but sqrt(NaN) * 0 is NaN).",
         "§FUS.6");
  b.Note("ShapeMismatch", "INVALID_INPUT", "Inputs whose lengths do not match the parameters must be refused.",
         "§FUS.6");

  ojson gf = {{"type", "GateFunctionTest"}, {"comment", "the demo gate as a function of g"}, {"profile", "demo-v1"},
              {"tolerance", GateGroupTolerance()}};
  size_t g = b.Group(gf);
  const std::vector<std::pair<double, std::vector<std::string>>> gs = {
      {0.0, {}}, {-0.0, {}}, {1e-7, {"ClampMin", "SignNoise"}},
      {-1e-7, {"ClampMin", "SignNoise"}}, {1e-6, {"ClampMin"}}, {4e-6, {}},
      {0.25, {}}, {-2.0, {}}, {std::nan(""), {"NaNPropagation"}}};
  for (const auto& [x, flags] : gs) {
    AddTest(b, g, gf, ComputeGateFunction, "g = " + FloatHex(x), flags, {"§FUS.6"}, {{"dot", Hex(x)}});
  }

  ojson dg = {{"type", "DemoGateTest"},
              {"comment", "demo gate and value, hc 2, hidden 16, in 32"},
              {"profile", "demo-v1"}};
  InputRng rng(0x44454D4F);
  const size_t hc = 2, hidden = 16, in = 32;
  AddDemoParams(dg, rng, hc, hidden, in, 4, 3);
  dg["tolerance"] = FusionTolerance("DemoGateTest", "demo-v1");
  size_t dgi = b.Group(dg);
  for (int i = 0; i < 3; ++i) {
    AddTest(b, dgi, dg, ComputeDemoGate, "random e and hidden state", {}, {"§FUS.5", "§FUS.6"},
            {{"e", HexList(RandomValues(rng, in, 0))}, {"hidden", HexList(RandomValues(rng, hc * hidden, 1))}});
  }
  {
    std::vector<double> h = RandomValues(rng, hc * hidden, 1);
    for (size_t j = 0; j < hidden; ++j) h[j] = 0.0;  // stream 0 all zero: normed query 0, g = +0
    AddTest(b, dgi, dg, ComputeDemoGate, "stream 0 hidden state all zero: g = +0, gate exactly 0.5",
            {}, {"§FUS.6"}, {{"e", HexList(RandomValues(rng, in, 0))}, {"hidden", HexList(h)}});
  }
  {
    std::vector<double> h = RandomValues(rng, hc * hidden, -14);  // mean square ~1e-8 << 1e-5
    AddTest(b, dgi, dg, ComputeDemoGate, "tiny hidden state: eps 2^-23 vs 1e-5 changes the normed query",
            {}, {"§FUS.5"}, {{"e", HexList(RandomValues(rng, in, 0))}, {"hidden", HexList(h)}});
  }
  AddTest(b, dgi, dg, ComputeDemoGate, "e is one value short", {"ShapeMismatch"}, {"§FUS.6"},
          {{"e", HexList(RandomValues(rng, in - 1, 0))}, {"hidden", HexList(RandomValues(rng, hc * hidden, 1))}});
  return b.Finish();
}

}  // namespace

}  // namespace engram::vectors::fusion

namespace engram::vectors {

SuiteDef GateDemoSuite() { return {"gate_demo", "fusion.schema.json", fusion::GenerateGateDemo, fusion::FusionVerifiers()}; }

}  // namespace engram::vectors
