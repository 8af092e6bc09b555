// spec/conformance.md §CONF.7 — random cases of the suite gate_demo (§FUS):
// GateFunctionTest (random_fusion.cc) and DemoGateTest. What the fusion
// suites' random cases share: random_fusion.cc.
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

RandomCase BuildGateDemoUncached(const ojson& r) {
  if (r["type"] == "GateFunctionTest") return BuildGateFunction(r, "demo-v1");
  return BuildDemoGate(r);
}
RandomCase BuildGateDemo(const ojson& r) { return Cached(r, BuildGateDemoUncached); }
std::vector<ojson> ShrinkGateDemo(const ojson& r) {
  if (r["type"] == "GateFunctionTest") return ShrinkGateFunction(r);
  return ShrinkDemoGate(r);
}

}  // namespace

}  // namespace engram::vectors::random_fusion

namespace engram::vectors {

RandomSuite RandomGateDemo() {
  using namespace random_fusion;  // in the body: the library builds in unity batches (CMakeLists.txt)
  // GateFunctionTest 1 in 3, DemoGateTest 2 in 3.
  auto draw = [](uint64_t seed, int64_t index) {
    static const std::vector<Kind> kinds = {{1, DrawDot, BuildGateDemoUncached}, {2, DrawDemoGate, BuildGateDemoUncached}};
    return DrawOf("gate_demo", kinds, seed, index);
  };
  return {"gate_demo", "fusion.schema.json", "ENGRAM-FUSION", draw, BuildGateDemo, ShrinkGateDemo};
}

}  // namespace engram::vectors
