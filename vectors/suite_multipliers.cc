// spec/random.md — suite `multipliers` (§VEC.5): generator and verifier.
#include <algorithm>
#include <limits>
#include <map>

#include "reference/config.h"
#include "base/error.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/random.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

// §VEC.5 The inputs of a BoundedIntegersTest.
struct BoundedInputs {
  uint64_t seed = 0;
  int64_t low = 0;
  uint128_t high = 0;  // exclusive, at most 2^63
  uint64_t count = 0;
};
BoundedInputs BoundedIntegersOf(const json& t);

// ---------------------------------------------------------------------------
// multipliers (§RNG)

ojson PoolJson(uint64_t seed) {
  SeedSequence seq(seed);
  return {{"pool", seq.pool()}, {"generateState", seq.GenerateState64(4)}};
}

void AddMultipliersNotes(SuiteBuilder& b) {
  b.Header("Hash multipliers as numpy draws them: SeedSequence -> PCG64 -> Generator.integers(dtype=int64).");
  b.Header("BoundedIntegersTest exercises every path of numpy's bounded-integer sampler directly;");
  b.Header("MultipliersTest derives the per-layer multipliers m = 2 * integers(0, bound, max_ngram) + 1.");
  b.Note("ConstantPath", "EDGE_CASE", "rng = high - low - 1 = 0: numpy returns low without drawing.", "§RNG.3");
  b.Note("Lemire32Path", "BASIC",
         "rng < 2^32 - 1: Lemire's method on 32-bit halves of 64-bit draws, low half first.", "§RNG.3");
  b.Note("Masked32Path", "EDGE_CASE", "rng = 2^32 - 1: a buffered 32-bit draw is used as is.", "§RNG.3");
  b.Note("Raw64Path", "EDGE_CASE", "rng = 2^64 - 1: a raw 64-bit draw is used as is.", "§RNG.3");
  b.Note("Lemire64Path", "BASIC", "Otherwise: Lemire's method with a 128-bit product.", "§RNG.3");
  b.Note("HighRejection", "EDGE_CASE",
         "A range just above a power of two, where Lemire's method rejects often; ports that skip the "
         "rejection loop (or use modulo) drift here.",
         "§RNG.3");
  b.Note("PublishedV41", "BASIC",
         "The widely published DeepSeek-V4.1-Flash multipliers (V = 99092, seed 0, layers 1 and 14).", "§RNG.4");
  AddMutantNotes(b, {Mutant::kInt32Multipliers});
  b.Note("BoundOne", "EDGE_CASE", "V so large that bound = max(1, ...) = 1: every multiplier is 1.", "§RNG.4");
  b.Note("InvalidVocab", "INVALID_INPUT", "V < 1 has no multiplier bound: implementations must refuse it.", "§RNG.4");
  b.Note("InvalidBounds", "INVALID_INPUT",
         "Inputs numpy's Generator(PCG64(SeedSequence(seed))).integers refuses: low >= high, high beyond 2^63, a "
         "negative seed, a negative count. Implementations must refuse them.",
         "§RNG.3");
  b.Note("InvalidLayerSeed", "INVALID_INPUT",
         "A layer seed seed + 10007 * layer id that is no numpy seed: a negative seed or layer id, or a sum beyond "
         "2^64 - 1. Implementations must refuse it.",
         "§RNG.4");
}

// §RNG.1-§RNG.3 numpy's bounded-integer sampler, every path, several seeds.
void AddBoundedTests(SuiteBuilder& b) {
  // BoundedIntegersTest: (low, high) pairs chosen per path.
  struct Range {
    int64_t low;
    uint128_t high;  // exclusive, may be 2^63
    std::vector<std::string> flags;
    std::string comment;
  };
  const uint128_t two63 = static_cast<uint128_t>(1) << 63;
  const std::vector<Range> ranges = {
      {5, 6, {"ConstantPath"}, "one value: no draw"},
      {-7, static_cast<uint128_t>(int64_t{-6}), {"ConstantPath"}, "one negative value"},
      {0, 10, {"Lemire32Path"}, "small range"},
      {-50, 50, {"Lemire32Path"}, "range across zero"},
      {0, (int64_t{1} << 31) + 1, {"Lemire32Path", "HighRejection"}, "2^31 + 1 values: many rejections"},
      {0, (int64_t{1} << 32) - 1, {"Lemire32Path"}, "2^32 - 1 values: the largest 32-bit Lemire range"},
      {0, int64_t{1} << 32, {"Masked32Path"}, "exactly 2^32 values"},
      {-(int64_t{1} << 31), int64_t{1} << 31, {"Masked32Path"}, "2^32 values centred on zero"},
      {0, (int64_t{1} << 32) + 1, {"Lemire64Path"}, "2^32 + 1 values: the smallest 64-bit Lemire range"},
      {0, 46539438283891, {"Lemire64Path"}, "the V4.1 multiplier bound"},
      {0, (int64_t{1} << 62) + 1, {"Lemire64Path", "HighRejection"}, "2^62 + 1 values: many rejections"},
      {-(int64_t{1} << 62), int64_t{1} << 62, {"Lemire64Path"}, "2^63 values centred on zero"},
      {0, two63, {"Lemire64Path"}, "high = 2^63, the int64 limit"},
      {std::numeric_limits<int64_t>::min(), two63, {"Raw64Path"}, "the whole int64 range"},
  };
  const std::vector<uint64_t> seeds = {0, 1, 42, 10007, 140098, 4294967301ULL, 9223372036854775807ULL};
  const size_t g = b.Group({{"type", "BoundedIntegersTest"}, {"dtype", "int64"}, {"endpoint", false}});
  for (const Range& r : ranges) {
    for (size_t si = 0; si < seeds.size(); si += (r.flags[0] == "ConstantPath" ? 3 : 2)) {
      uint64_t seed = seeds[si];
      Pcg64 gen{SeedSequence(seed)};
      const size_t count = 6;
      std::vector<int64_t> values = IntegersWide(gen, r.low, r.high, count);
      uint64_t rng = static_cast<uint64_t>(r.high - 1 - static_cast<uint128_t>(r.low));
      ojson high = r.high == two63 ? ojson(static_cast<uint64_t>(two63)) : ojson(static_cast<int64_t>(r.high));
      ojson intermediate = PoolJson(seed);
      intermediate["rng"] = rng;
      intermediate["path"] = std::string(BoundedPathName(BoundedPathFor(rng)));
      b.Test(g, r.comment + ", seed " + std::to_string(seed), r.flags, {"§RNG.1", "§RNG.2", "§RNG.3"},
             {{"seed", seed}, {"low", r.low}, {"high", high}, {"count", count}, {"result", "valid"},
              {"intermediate", intermediate}, {"values", values}});
    }
  }
}

// §RNG.4 The per-layer multipliers, valid cases; returns the group, which
// AddInvalidMultipliers continues.
size_t AddMultipliersTests(SuiteBuilder& b) {
  // MultipliersTest
  const size_t g = b.Group({{"type", "MultipliersTest"}});
  auto add_multipliers = [&](int64_t seed, int64_t layer_id, int64_t v, int max_ngram, std::vector<std::string> flags,
                             const std::string& comment) {
    const int64_t bound = MultiplierBound(v);
    const uint64_t rng = static_cast<uint64_t>(bound - 1);
    flags.insert(flags.begin(), BoundedPathFor(rng) == BoundedPath::kConstant   ? "ConstantPath"
                                : BoundedPathFor(rng) == BoundedPath::kLemire32 ? "Lemire32Path"
                                                                                 : "Lemire64Path");
    ojson intermediate = {{"layerSeed", LayerSeed(seed, layer_id)},
                          {"bound", bound},
                          {"path", std::string(BoundedPathName(BoundedPathFor(rng)))}};
    const std::vector<int64_t> m = LayerMultipliers(seed, layer_id, v, max_ngram);
    flags = WithMutantFlags(flags, {Mutant::kInt32Multipliers}, [&](Mutant mu) {
      return MutantMultipliers(mu, seed, layer_id, v, max_ngram) != m;
    });
    b.Test(g, comment, flags, {"§RNG.4"},
           {{"seed", seed}, {"layerId", layer_id}, {"compressedVocabSize", v}, {"maxNgram", max_ngram},
            {"result", "valid"}, {"intermediate", intermediate},
            {"multipliers", LayerMultipliers(seed, layer_id, v, max_ngram)}});
  };
  add_multipliers(0, 1, 99092, 4, {"PublishedV41"}, "DeepSeek-V4.1-Flash layer 1");
  add_multipliers(0, 14, 99092, 4, {"PublishedV41"}, "DeepSeek-V4.1-Flash layer 14");
  add_multipliers(0, 1, 129280, 3, {}, "demo-v1 layer 1, V = 129280");
  add_multipliers(0, 15, 129280, 3, {}, "demo-v1 layer 15, V = 129280");
  add_multipliers(0, 0, 1, 4, {}, "V = 1, layer 0: the largest bound");
  add_multipliers(0, 3, 2, 2, {}, "V = 2");
  add_multipliers(7, 2, 1000, 5, {}, "seed 7");
  add_multipliers(123456789, 40, 50000, 6, {}, "large seed, six slots");
  add_multipliers(0, 1, int64_t{1} << 30, 4, {}, "V = 2^30: bound 2^32 - 1 (largest 32-bit Lemire bound)");
  add_multipliers(0, 1, (int64_t{1} << 30) - 1, 4, {}, "V = 2^30 - 1: bound just above 2^32");
  add_multipliers(0, 2, int64_t{1} << 40, 3, {}, "V = 2^40: small 32-bit bound");
  add_multipliers(0, 1, std::numeric_limits<int64_t>::max() / 2, 4, {"BoundOne"}, "V = (2^63-1)/2: bound 1");
  add_multipliers(5, 9, std::numeric_limits<int64_t>::max(), 3, {"BoundOne"}, "V = 2^63 - 1: bound 1");
  InputRng rng(0x4D554C54);
  for (int i = 0; i < 24; ++i) {
    int64_t v = 1 + rng.Below(int64_t{1} << (1 + rng.Below(40)));
    // One draw per statement: the order in which a call's arguments are
    // evaluated is unspecified (GCC went right to left, clang left to right,
    // and the clang build drew other cases). This is the order the committed
    // vectors were drawn in.
    const int max_ngram = 2 + static_cast<int>(rng.Below(5));
    const int64_t layer = rng.Below(64);
    const int64_t seed = rng.Below(1000);
    add_multipliers(seed, layer, v, max_ngram, {}, "random case");
  }
  return g;
}

// §RNG.4 Multiplier inputs to refuse: V < 1, and layer seeds that are no numpy seed.
void AddInvalidMultipliers(SuiteBuilder& b, size_t g) {
  b.Test(g, "V = 0 must be refused", {"InvalidVocab"}, {"§RNG.4"},
         {{"seed", 0}, {"layerId", 1}, {"compressedVocabSize", 0}, {"maxNgram", 4}, {"result", "invalid"}});
  // §VEC.12 a validation gap of upstream code: both the demo and the official
  // V4.1 code take the bound as max(1, (2^63 - 1) // V // 2) with Python's
  // floor division, which for V < 0 is 1 (every multiplier 1) instead of an
  // error; only V = 0 raises there (division by zero). The flag is set iff
  // that formula yields a bound for a V that §RNG.4 refuses (V < 1).
  const int64_t negative_v = -5;
  std::vector<std::string> negative_flags = {"InvalidVocab"};
  const bool upstream_gives_a_bound = negative_v != 0;
  if (upstream_gives_a_bound && negative_v < 1) {
    b.Divergence("UpstreamNegativeVocab",
                 "A validation gap of upstream code, not a behaviour to copy: the upstream demo (engram_demo_v1.py) "
                 "and the official V4.1 code (compute_hash_multipliers) take the bound as max(1, (2^63 - 1) // V // "
                 "2), which for a negative V is 1 (every multiplier 1), where §RNG.4 refuses V < 1.",
                 "§RNG.4", "upstream-negative-vocab");
    negative_flags.push_back("UpstreamNegativeVocab");
  }
  b.Test(g, "V = -5 must be refused (upstream code gives multipliers of 1)", negative_flags, {"§RNG.4"},
         {{"seed", 0}, {"layerId", 1}, {"compressedVocabSize", negative_v}, {"maxNgram", 4}, {"result", "invalid"}});
  // §RNG.4 The layer seed seed + 10007 * layer_id must be a valid numpy seed.
  auto bad_seed = [&](int64_t seed, int64_t layer_id, const std::string& comment) {
    std::string error;
    try {
      LayerMultipliers(seed, layer_id, 1000, 4);
    } catch (const Error& e) {
      error = e.what();
    }
    if (error.empty()) throw Error("generator: the reference accepts the invalid MultipliersTest '" + comment + "'");
    // §VEC.12 a validation gap of the upstream demo: it draws with default_rng(int(seed + 10007 * layer_id)),
    // a Python integer, and numpy's SeedSequence takes every non-negative integer of any size. The flag is set
    // iff that sum is >= 0 (the demo then accepts what §RNG.4 refuses).
    std::vector<std::string> flags = {"InvalidLayerSeed"};
    const __int128 demo_seed = static_cast<__int128>(seed) + static_cast<__int128>(10007) * layer_id;
    if (demo_seed >= 0) {
      if (!b.HasNote("UpstreamLayerSeedUnchecked")) {
        b.Divergence("UpstreamLayerSeedUnchecked",
                     "A validation gap of the upstream demo (engram_demo_v1.py, NgramHashMapping), not a behaviour "
                     "to copy: it seeds numpy with int(seed + 10007 * layer_id), a Python integer, and numpy's "
                     "SeedSequence takes any non-negative integer, so a negative seed that the layer term lifts to "
                     ">= 0 and a sum beyond 2^64 - 1 are both accepted, where §RNG.4 refuses them.",
                     "§RNG.4", "upstream-layer-seed");
      }
      flags.push_back("UpstreamLayerSeedUnchecked");
    }
    b.Test(g, comment, flags, {"§RNG.4"},
           {{"seed", seed}, {"layerId", layer_id}, {"compressedVocabSize", 1000}, {"maxNgram", 4}, {"result", "invalid"},
            {"error", error}});
  };
  bad_seed(-1, 1, "a negative seed");
  bad_seed(0, -1, "a negative layer id");
  bad_seed(std::numeric_limits<int64_t>::max(), int64_t{1} << 51,
           "seed + 10007 * layer id beyond 2^64 - 1 (seed 2^63 - 1, layer id 2^51)");
}

void AddInvalidBounded(SuiteBuilder& b) {
  // §RNG.1, §RNG.3, §VEC.5 Inputs numpy refuses (ValueError), and so must a
  // port: a group of their own after the others, so that no existing tcId
  // moves (§VEC.11).
  {
    const size_t g = b.Group({{"type", "BoundedIntegersTest"}, {"dtype", "int64"}, {"endpoint", false}});
    const uint64_t above = (uint64_t{1} << 63) + 1;
    auto bad = [&](ojson seed, ojson low, ojson high, ojson count, const std::string& comment) {
      ojson t = {{"seed", seed}, {"low", low}, {"high", high}, {"count", count}};
      std::string error;
      try {
        BoundedIntegersOf(nlohmann::json::parse(t.dump()));
      } catch (const Error& e) {
        error = e.what();
      }
      if (error.empty()) throw Error("generator: the reference accepts the invalid BoundedIntegersTest '" + comment + "'");
      t["result"] = "invalid";
      t["error"] = error;
      b.Test(g, comment, {"InvalidBounds"}, {"§RNG.1", "§RNG.3"}, t);
    };
    bad(1, 5, 5, 6, "low = high: an empty range");
    bad(1, 10, 3, 6, "low > high");
    bad(1, 0, above, 6, "high = 2^63 + 1: beyond int64 (numpy: high is out of bounds for int64)");
    bad(-1, 0, 10, 6, "a negative seed (SeedSequence refuses it)");
    bad(1, 0, 10, -1, "count -1 (negative dimensions are not allowed)");
  }
}

ojson GenerateMultipliers() {
  SuiteBuilder b("multipliers", "multipliers.schema.json", "ENGRAM-MULTIPLIERS");
  AddMultipliersNotes(b);
  AddBoundedTests(b);
  AddInvalidMultipliers(b, AddMultipliersTests(b));
  AddInvalidBounded(b);
  return b.Finish();
}

// §RNG.1, §RNG.3 The inputs of a BoundedIntegersTest, read by value (§VEC.4)
// and checked as numpy checks them. Throws engram::Error naming the key and
// the value for an input numpy refuses.
BoundedInputs BoundedIntegersOf(const json& t) {
  BoundedInputs in;
  const json& seed = t.at("seed");
  if (!seed.is_number_integer() || (!seed.is_number_unsigned() && seed.get<int64_t>() < 0)) {
    throw Error("seed: " + seed.dump() + " is not a seed (SeedSequence takes an integer >= 0)");
  }
  in.seed = seed.get<uint64_t>();
  const json& low = t.at("low");
  if (!low.is_number_integer() || (low.is_number_unsigned() && low.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
    throw Error("low: " + low.dump() + " is not an int64");
  }
  in.low = low.get<int64_t>();
  const json& high = t.at("high");
  if (!high.is_number_integer()) throw Error("high: " + high.dump() + " is not an integer");
  bool below_low = false;  // high <= low
  if (high.is_number_unsigned()) {
    if (high.get<uint64_t>() > (uint64_t{1} << 63)) {
      throw Error("high: " + high.dump() + " is out of bounds for int64 (high may be at most 2^63)");
    }
    in.high = high.get<uint64_t>();
    below_low = in.low >= 0 && high.get<uint64_t>() <= static_cast<uint64_t>(in.low);
  } else {
    in.high = static_cast<uint128_t>(high.get<int64_t>());  // as the reader above: two's complement in 128 bits
    below_low = high.get<int64_t>() <= in.low;
  }
  if (below_low) throw Error("low >= high (low " + low.dump() + ", high " + high.dump() + ")");
  const json& count = t.at("count");
  if (!count.is_number_integer() || (!count.is_number_unsigned() && count.get<int64_t>() < 0)) {
    throw Error("count: " + count.dump() + " is not a number of values (negative dimensions are not allowed)");
  }
  in.count = count.get<uint64_t>();
  return in;
}

void CheckBoundedIntegers(Checker& c, const json& t) {
  BoundedInputs in;
  try {
    in = BoundedIntegersOf(t);
  } catch (const Error& e) {
    if (IsValid(t)) c.Problem(t, std::string("the reference refuses a valid test: ") + e.what());
    return;
  }
  if (!IsValid(t)) {
    c.Problem(t, "the reference accepts an input the vector marks invalid");
    return;
  }
  Pcg64 gen{SeedSequence(in.seed)};
  std::vector<int64_t> values = IntegersWide(gen, in.low, in.high, static_cast<size_t>(in.count));
  c.Expect(t, "values", values);
  SeedSequence seq(in.seed);
  const json& inter = t.at("intermediate");
  c.Same(t, "intermediate.pool", inter.at("pool"), json(seq.pool()));
  c.Same(t, "intermediate.generateState", inter.at("generateState"), json(seq.GenerateState64(4)));
  uint64_t rng = static_cast<uint64_t>(in.high - 1 - static_cast<uint128_t>(in.low));
  c.Same(t, "intermediate.path", inter.at("path"), std::string(BoundedPathName(BoundedPathFor(rng))));
}

void CheckMultipliers(Checker& c, const json& t) {
  // §RNG.4, §VEC.4 the seed is an int64 by value: 2^63 is not -2^63 (get<int64_t>()
  // would wrap it), so a seed outside int64 is an input the reference refuses.
  if (t.at("seed").is_number_unsigned() && t.at("seed").get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    if (IsValid(t)) c.Problem(t, "seed " + t.at("seed").dump() + " is outside int64: the reference refuses it");
    return;
  }
  const int64_t seed = t.at("seed").get<int64_t>();
  const int64_t layer = t.at("layerId").get<int64_t>();
  const int64_t v = t.at("compressedVocabSize").get<int64_t>();
  const int n = t.at("maxNgram").get<int>();
  if (!IsValid(t)) {
    try {
      LayerMultipliers(seed, layer, v, n);
      c.Problem(t, "the reference accepts an input the vector marks invalid");
    } catch (const Error&) {
    }
    return;
  }
  c.Expect(t, "multipliers", LayerMultipliers(seed, layer, v, n));
  const json& in = t.at("intermediate");
  c.Same(t, "intermediate.bound", in.at("bound"), MultiplierBound(v));
  c.Same(t, "intermediate.layerSeed", in.at("layerSeed"), LayerSeed(seed, layer));
}

}  // namespace

SuiteDef MultipliersSuite() {
  return {"multipliers", "multipliers.schema.json", GenerateMultipliers,
          {{"BoundedIntegersTest", [](Checker& c, const json&, const json& t) { CheckBoundedIntegers(c, t); }},
           {"MultipliersTest", [](Checker& c, const json&, const json& t) { CheckMultipliers(c, t); }}}};
}

}  // namespace engram::vectors
