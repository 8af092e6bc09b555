// spec/conformance.md §CONF.7 — random cases of the suite short_conv_demo
// (§FUS): ShortConvTest and ShortConvStateTest (§FUS.12). What the fusion suites' random cases share:
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

// ------------------------------------------------------------------ ShortConvStateTest (§FUS.12)

size_t WindowRows(const ojson& r) { return (r["kernel"].get<size_t>() - 1) * r["dilation"].get<size_t>(); }

// The values of one step range, as DrawShortConv draws them: scale 1, or 2^-9
// (the RMSNorm eps matters) one time in four.
ojson DrawStepValues(CaseRng& rng, size_t n, bool plain) {
  if (!plain && rng.Chance(1, 4)) {
    ojson v = ojson::array();
    for (size_t i = 0; i < n; ++i) v.push_back(OrdinaryBits(rng, Fmt::kF32, -9));
    return v;
  }
  return DrawFloats(rng, n, Fmt::kF32, 0, plain);
}

// §FUS.12 Every rollback within the depth: each k clamped to the depth the
// calls before it leave (a shrunk or drawn script stays one that must succeed).
void ClampRollbacks(ojson& calls, size_t capacity) {
  size_t depth = 0;
  for (ojson& call : calls) {
    if (call["op"] == "append") {
      depth = std::min(depth + call["steps"].get<size_t>(), capacity);
    } else {
      call["k"] = std::min(call["k"].get<size_t>(), depth);
      depth -= call["k"].get<size_t>();
    }
  }
}

ojson DrawShortConvState(CaseRng& rng, bool plain) {
  ojson r;
  r["type"] = "ShortConvStateTest";
  const int64_t hc = rng.Chance(1, 2) ? 2 : rng.In(1, 4);
  const int64_t hidden = rng.Chance(1, 4) ? 8 : rng.Scaled(1, 16);
  const int64_t kernel = rng.Chance(1, 2) ? 4 : rng.In(1, 6);
  const int64_t dilation = rng.Chance(1, 2) ? rng.In(2, 5) : rng.Scaled(1, 8);
  const int64_t capacity = rng.Chance(1, 2) ? 4 : rng.In(0, 8);
  r["hc"] = hc;
  r["hidden"] = hidden;
  r["kernel"] = kernel;
  r["dilation"] = dilation;
  r["rollbackCapacity"] = capacity;
  for (const std::string& key : kConvKeys) {
    r[key] = DrawDemoArray(rng, key, DemoCount(key, static_cast<size_t>(hc), static_cast<size_t>(hidden), 1,
                                               static_cast<size_t>(kernel)), plain);
  }
  const size_t channels = static_cast<size_t>(hc * hidden);
  // One case in three imports the state of a sequence that began elsewhere.
  if (rng.Chance(1, 3)) r["stateIn"] = DrawFloats(rng, WindowRows(r) * channels, Fmt::kF32, 0, plain);
  // 1-8 calls: a one-token decode step (one append in two), a prefill chunk
  // of 1-12 steps (none one time in 16: §CONF.4 trivial) or, once something can be rolled back, a rollback (one call
  // in four) within the depth, all of it one time in three.
  const int64_t n_calls = rng.Scaled(1, 8);
  ojson calls = ojson::array();
  size_t depth = 0;
  for (int64_t i = 0; i < n_calls; ++i) {
    if (depth > 0 && rng.Chance(1, 4)) {
      const size_t k = rng.Chance(1, 3) ? depth : static_cast<size_t>(rng.In(0, static_cast<int64_t>(depth)));
      calls.push_back({{"op", "rollback"}, {"k", k}});
      depth -= k;
      continue;
    }
    const size_t steps = rng.Chance(1, 2) ? 1 : rng.Chance(1, 16) ? 0 : static_cast<size_t>(rng.Scaled(1, 12));
    calls.push_back({{"op", "append"}, {"steps", steps}, {"value", DrawStepValues(rng, steps * channels, plain)}});
    depth = std::min(depth + steps, static_cast<size_t>(capacity));
  }
  r["calls"] = calls;
  // One case in 20 has the imported state or the last append's value one entry
  // short, and must be refused.
  const bool has_append = std::any_of(calls.begin(), calls.end(), [](const ojson& c) { return c["op"] == "append"; });
  std::string short_key;
  if (!plain && rng.Chance(1, 20)) {
    if (r.contains("stateIn") && (!has_append || rng.Chance(1, 2))) {
      short_key = "stateIn";
    } else if (has_append) {
      short_key = "calls";
    }
  }
  r["short"] = short_key;
  return r;
}

RandomCase BuildShortConvState(const ojson& r) {
  RandomCase c = NewCase(r, "ShortConvStateTest", "demo-v1");
  const size_t hc = r["hc"], hidden = r["hidden"], kernel = r["kernel"], dilation = r["dilation"],
               capacity = r["rollbackCapacity"];
  RefuseNonFiniteTapOnPadding(r["convWeight"], kernel);
  c.group = {{"type", "ShortConvStateTest"},
             {"comment", "random: ShortConv carried across calls, hc " + std::to_string(hc) + ", hidden " +
                             std::to_string(hidden) + ", kernel " + std::to_string(kernel) + ", dilation " +
                             std::to_string(dilation) + ", rollback capacity " + std::to_string(capacity)},
             {"profile", "demo-v1"}};
  AddRecipeParams(c.group, r, hc, hidden, 1, kernel, dilation);
  c.group["rollbackCapacity"] = capacity;
  c.group["tolerance"] = FusionTolerance("ShortConvStateTest", "demo-v1");
  ojson inputs = ojson::object();
  if (r.contains("stateIn")) inputs["stateIn"] = HexOf(ShortenedIf(r, "stateIn", r["stateIn"]), Fmt::kF32);
  ojson calls = ojson::array();
  size_t last_append = 0, steps = 0, n_appends = 0;
  for (size_t i = 0; i < r["calls"].size(); ++i) {
    if (r["calls"][i]["op"] == "append") last_append = i;
  }
  for (size_t i = 0; i < r["calls"].size(); ++i) {
    const ojson& call = r["calls"][i];
    if (call["op"] == "rollback") {
      calls.push_back({{"op", "rollback"}, {"k", call["k"]}});
      continue;
    }
    const ojson value = i == last_append ? ShortenedIf(r, "calls", call["value"]) : call["value"];
    calls.push_back({{"op", "append"}, {"steps", call["steps"]}, {"value", HexOf(value, Fmt::kF32)}});
    steps += call["steps"].get<size_t>();
    ++n_appends;
  }
  inputs["calls"] = calls;
  Finish(c, inputs);
  c.spec_refs = {"§FUS.12"};
  c.size = std::to_string(r["calls"].size()) + " calls (" + std::to_string(n_appends) + " appends, " +
           std::to_string(steps) + " steps)" + (r.contains("stateIn") ? ", imported state" : "") + ", hc " +
           std::to_string(hc) + ", hidden " + std::to_string(hidden) + ", kernel " + std::to_string(kernel) +
           ", dilation " + std::to_string(dilation) + ", capacity " + std::to_string(capacity);
  int64_t values = 0;
  for (const ojson& call : r["calls"]) {
    if (call["op"] == "append") values += ArrayMeasure(call, {"value"}, Fmt::kF32);
  }
  c.measure = 128 * static_cast<int64_t>(steps + r["calls"].size() + hc + hidden + kernel + dilation + capacity) +
              values + ArrayMeasure(r, {"convNormWeight", "convWeight"}, Fmt::kF32) +
              (r.contains("stateIn") ? ArrayMeasure(r, {"stateIn"}, Fmt::kF32) : 0);
  return c;
}

// Fewer calls (one dropped, or two neighbouring appends merged into one chunk),
// fewer steps, smaller rollbacks, no imported state, then the shapes and values
// of ShrinkShortConv. Every candidate's rollbacks stay within the depth.
std::vector<ojson> ShrinkShortConvState(const ojson& r) {
  std::vector<ojson> out;
  const size_t hc = r["hc"], hidden = r["hidden"], kernel = r["kernel"], capacity = r["rollbackCapacity"];
  const size_t channels = hc * hidden;
  const ojson& calls = r["calls"];
  auto with_calls = [&](ojson c2) {
    ojson c = r;
    ClampRollbacks(c2, capacity);
    c["calls"] = std::move(c2);
    out.push_back(std::move(c));
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    ojson c2 = calls;
    c2.erase(i);
    with_calls(c2);
  }
  // A merged chunk no longer than the recipe's longest: shrinking never makes a list longer (§CONF.9 item 4).
  size_t longest = 0;
  for (const ojson& call : calls) {
    if (call["op"] == "append") longest = std::max(longest, call["value"].size());
  }
  for (size_t i = 0; i + 1 < calls.size(); ++i) {
    if (calls[i]["op"] != "append" || calls[i + 1]["op"] != "append") continue;
    if (calls[i]["value"].size() + calls[i + 1]["value"].size() > longest) continue;
    ojson c2 = calls, merged = calls[i];
    merged["steps"] = calls[i]["steps"].get<size_t>() + calls[i + 1]["steps"].get<size_t>();
    for (const ojson& v : calls[i + 1]["value"]) merged["value"].push_back(v);
    c2[i] = merged;
    c2.erase(i + 1);
    with_calls(c2);
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    const bool append = calls[i]["op"] == "append";
    const int64_t n = append ? calls[i]["steps"].get<int64_t>() : calls[i]["k"].get<int64_t>();
    for (int64_t m : Smaller(n, 0)) {
      ojson c2 = calls;
      if (append) {
        c2[i]["steps"] = m;
        c2[i]["value"] = Cut2(calls[i]["value"], static_cast<size_t>(n), channels, static_cast<size_t>(m), channels);
      } else {
        c2[i]["k"] = m;
      }
      with_calls(c2);
    }
  }
  if (r.contains("stateIn")) {
    ojson c = r;
    c.erase("stateIn");
    if (c["short"] == "stateIn") c["short"] = "";
    out.push_back(c);
  }
  for (int64_t m : Smaller(static_cast<int64_t>(capacity), 0)) {
    ojson c = r;
    c["rollbackCapacity"] = m;
    ojson c2 = calls;
    ClampRollbacks(c2, static_cast<size_t>(m));
    c["calls"] = c2;
    out.push_back(c);
  }
  // The shapes: every array cut along (the state's rows kept from the front).
  auto reshape = [&](size_t hc2, size_t hidden2, size_t kernel2, size_t dilation2) {
    ojson c = r;
    c["hc"] = hc2;
    c["hidden"] = hidden2;
    c["kernel"] = kernel2;
    c["dilation"] = dilation2;
    CutDemoArrays(c, r, hc, hidden, 1, kernel, hc2, hidden2, 1, kernel2);
    const size_t w = WindowRows(r), w2 = (kernel2 - 1) * dilation2;
    if (r.contains("stateIn")) {
      if (w2 > w) return;  // the state would need rows it does not have
      c["stateIn"] = Cut3(r["stateIn"], w, hc, hidden, w2, hc2, hidden2);
    }
    for (ojson& call : c["calls"]) {
      if (call["op"] != "append") continue;
      const size_t n = call["steps"];
      call["value"] = Cut3(call["value"], n, hc, hidden, n, hc2, hidden2);
    }
    out.push_back(c);
  };
  const size_t dilation = r["dilation"];
  for (int64_t h : Smaller(static_cast<int64_t>(hc), 1)) reshape(static_cast<size_t>(h), hidden, kernel, dilation);
  for (int64_t h : Smaller(static_cast<int64_t>(hidden), 1)) reshape(hc, static_cast<size_t>(h), kernel, dilation);
  for (int64_t k : Smaller(static_cast<int64_t>(kernel), 1)) reshape(hc, hidden, static_cast<size_t>(k), dilation);
  for (int64_t d : Smaller(static_cast<int64_t>(dilation), 1)) reshape(hc, hidden, kernel, static_cast<size_t>(d));
  std::vector<std::string> keys = {"convNormWeight", "convWeight"};
  if (r.contains("stateIn")) keys.push_back("stateIn");
  SimplifyFloats(r, keys, Fmt::kF32, out);
  return out;
}

RandomCase BuildShortConvSuite(const ojson& r) {
  return r["type"] == "ShortConvStateTest" ? BuildShortConvState(r) : BuildShortConv(r);
}
std::vector<ojson> ShrinkShortConvSuite(const ojson& r) {
  return r["type"] == "ShortConvStateTest" ? ShrinkShortConvState(r) : ShrinkShortConv(r);
}

RandomCase BuildShortConvCached(const ojson& r) { return Cached(r, BuildShortConvSuite); }

}  // namespace

}  // namespace engram::vectors::random_fusion

namespace engram::vectors {

RandomSuite RandomShortConv() {
  using namespace random_fusion;  // in the body: the library builds in unity batches (CMakeLists.txt)
  auto draw = [](uint64_t seed, int64_t index) {
    // ShortConvTest 1 in 2, ShortConvStateTest 1 in 2.
    static const std::vector<Kind> kinds = {{1, DrawShortConv, BuildShortConv}, {1, DrawShortConvState, BuildShortConvState}};
    return DrawOf("short_conv_demo", kinds, seed, index);
  };
  return {"short_conv_demo", "fusion.schema.json", "ENGRAM-FUSION", draw, BuildShortConvCached, ShrinkShortConvSuite};
}

}  // namespace engram::vectors
