// spec/conformance.md §CONF.7 — random cases of the suite engram_forward
// (§FUS): EngramForwardTest, both profiles. What the fusion suites' random
// cases share: random_fusion.cc.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "reference/config.h"
#include "reference/fusion.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/random_cases.h"
#include "vectors/random_fusion_common.h"
#include "vectors/suite.h"
#include "vectors/suite_fusion.h"

namespace engram::vectors::random_fusion {

namespace {

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

RandomCase BuildForwardCached(const ojson& r) { return Cached(r, BuildForward); }

}  // namespace

}  // namespace engram::vectors::random_fusion

namespace engram::vectors {

RandomSuite RandomEngramForward() {
  using namespace random_fusion;  // in the body: the library builds in unity batches (CMakeLists.txt)
  auto draw = [](uint64_t seed, int64_t index) {
    static const std::vector<Kind> kinds = {{1, DrawForward, BuildForward}};
    return DrawOf("engram_forward", kinds, seed, index);
  };
  return {"engram_forward", "fusion.schema.json", "ENGRAM-FUSION", draw, BuildForwardCached, ShrinkForward};
}

}  // namespace engram::vectors
