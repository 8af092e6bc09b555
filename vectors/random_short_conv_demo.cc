// spec/conformance.md §CONF.7 — random cases of the suite short_conv_demo
// (§FUS): ShortConvTest. What the fusion suites' random cases share:
// random_fusion.cc.
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

// ------------------------------------------------------------------ ShortConvTest (§FUS.7)

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

RandomCase BuildShortConvCached(const ojson& r) { return Cached(r, BuildShortConv); }

}  // namespace

}  // namespace engram::vectors::random_fusion

namespace engram::vectors {

RandomSuite RandomShortConv() {
  using namespace random_fusion;  // in the body: the library builds in unity batches (CMakeLists.txt)
  auto draw = [](uint64_t seed, int64_t index) {
    static const std::vector<Kind> kinds = {{1, DrawShortConv, BuildShortConv}};
    return DrawOf("short_conv_demo", kinds, seed, index);
  };
  return {"short_conv_demo", "fusion.schema.json", "ENGRAM-FUSION", draw, BuildShortConvCached, ShrinkShortConv};
}

}  // namespace engram::vectors
