// spec/fusion.md — suite `short_conv_demo` (§FUS.10): generator and verifier of
// the demo-v1 ShortConv (ShortConvTest). What the fusion suites share (AddTest,
// the verifiers, the demo-v1 parameters): suite_fusion.cc.
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
// ShortConvTest (§FUS.7)

namespace {

ShortConvTrace ShortConvOf(Bug bug, std::span<const double> value, size_t steps, const DemoParams& q, Precision p) {
  if (bug) return MutantShortConv(*bug, value, steps, q, p);
  return ShortConv(value, steps, q, p);
}

}  // namespace

// ShortConvTest: steps, value [T][hc][hidden].
ojson ComputeShortConv(const json& group, const json& test, Bug bug) {
  const DemoParams q = ReadDemoParams(group);
  const size_t steps = test.at("steps");
  const std::vector<double> value = ReadHexList(test.at("value"), "value");
  ojson out;
  try {
    ShortConvTrace r = ShortConvOf(bug, value, steps, q, k64), m = ShortConvOf(bug, value, steps, q, k32);
    out["result"] = "valid";
    out["output"] = {{"float64", HexList(r.act)}, {"float32", HexList(m.act)}};
    out["intermediate"] = {{"float64", {{"normed", HexList(r.normed)}, {"conv", HexList(r.conv)}}},
                           {"float32", {{"normed", HexList(m.normed)}, {"conv", HexList(m.conv)}}}};
  } catch (const Error& err) {
    out["result"] = "invalid";
    out["error"] = err.what();
  }
  return out;
}

namespace {

// ---------------------------------------------------------------------------
// short_conv_demo

ojson GenerateShortConv() {
  SuiteBuilder b("short_conv_demo", "fusion.schema.json", "ENGRAM-FUSION");
  CommonNotes(b);
  AddFusionNote(b, FusionMutant::kTapOrder, true);
  b.Note("Dilation", "BASIC", "dilation = max_ngram_size: tap j reads step t - (kernel-1-j) * dilation.", "§FUS.7");
  b.Note("SequenceStart", "EDGE_CASE", "Steps before the start read the zero padding.", "§FUS.7");
  AddFusionNote(b, FusionMutant::kConvNormEps, true);
  b.Note("ShapeMismatch", "INVALID_INPUT", "value must have steps * hc * hidden entries.", "§FUS.7");

  ojson sg = {{"type", "ShortConvTest"}, {"comment", "ShortConv, hc 2, hidden 8, kernel 4, dilation 3"},
              {"profile", "demo-v1"}};
  InputRng rng(0x434F4E56);
  const size_t hc = 2, hidden = 8;
  AddDemoParams(sg, rng, hc, hidden, 1, 4, 3);
  sg["tolerance"] = FusionTolerance("ShortConvTest", "demo-v1");
  size_t g = b.Group(sg);
  const size_t C = hc * hidden;
  {
    std::vector<double> v(12 * C, 0.0);
    for (size_t ch = 0; ch < C; ++ch) v[ch] = 1.0;  // an impulse at t = 0 in every channel
    AddTest(b, g, sg, ComputeShortConv, "impulse at t = 0: the taps appear at t = 0, 3, 6, 9 in the order 3, 2, 1, 0",
            {"Dilation", "SequenceStart"}, {"§FUS.7"}, {{"steps", 12}, {"value", HexList(v)}});
  }
  for (size_t steps : {1, 5, 13}) {
    AddTest(b, g, sg, ComputeShortConv, "random values, " + std::to_string(steps) + " steps",
            {"Dilation", "SequenceStart"}, {"§FUS.7"},
            {{"steps", steps}, {"value", HexList(RandomValues(rng, steps * C, 0))}});
  }
  AddTest(b, g, sg, ComputeShortConv, "small values: the RMSNorm eps 1e-5 dominates", {}, {"§FUS.7"},
          {{"steps", 4}, {"value", HexList(RandomValues(rng, 4 * C, -9))}});
  AddTest(b, g, sg, ComputeShortConv, "value has one entry too few", {"ShapeMismatch"}, {"§FUS.7"},
          {{"steps", 2}, {"value", HexList(RandomValues(rng, 2 * C - 1, 0))}});
  return b.Finish();
}

}  // namespace

}  // namespace engram::vectors::fusion

namespace engram::vectors {

SuiteDef ShortConvDemoSuite() { return {"short_conv_demo", "fusion.schema.json", fusion::GenerateShortConv, fusion::FusionVerifiers()}; }

}  // namespace engram::vectors
