// spec/conformance.md §CONF.7 — random cases of the suite multipliers (§RNG):
// BoundedIntegersTest over every path of numpy's bounded-integer sampler, and
// MultipliersTest over seeds, layer ids and V.
//
// Distributions: seeds half small (below 1000) and half over all of uint64
// (int64 for MultipliersTest; numpy's SeedSequence takes any non-negative
// integer, and a port that keeps only 32 bits of it differs above 2^32);
// range widths at the path edges of §RNG.3 (1, 2^31 + 1, 2^32 - 1, 2^32,
// 2^32 + 1, 2^62 + 1, 2^64) or of a random bit length; V log-uniform in
// [1, 2^63 - 1], one case in 20 with V <= 0 (refused).
#include <limits>

#include "base/error.h"
#include "reference/random.h"
#include "vectors/random_cases.h"

namespace engram::vectors {
namespace {

__extension__ typedef __int128 int128;  // the sums of a width and a bound

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
const uint128_t kTwo63 = static_cast<uint128_t>(1) << 63;

ojson HighJson(uint128_t high) {  // §VEC.5 high may be 2^63, one more than int64 holds
  return high == kTwo63 ? ojson(static_cast<uint64_t>(high)) : ojson(static_cast<int64_t>(static_cast<uint64_t>(high)));
}

uint128_t HighOf(const ojson& j) {
  return j.is_number_unsigned() && j.get<uint64_t>() == static_cast<uint64_t>(kTwo63)
             ? kTwo63
             : static_cast<uint128_t>(j.get<int64_t>());  // two's complement, as IntegersWide reads it
}

ojson DrawMultipliers(uint64_t seed, int64_t index) {
  CaseRng rng(seed, "multipliers", index);
  ojson r;
  if (rng.Chance(1, 2)) {
    r["type"] = "BoundedIntegersTest";
    r["seed"] = rng.Chance(1, 2) ? static_cast<uint64_t>(rng.Below(1000)) : rng.Next();
    // The width high - low, in [1, 2^64].
    const uint128_t edges[] = {1,
                               (static_cast<uint128_t>(1) << 31) + 1,
                               (static_cast<uint128_t>(1) << 32) - 1,
                               static_cast<uint128_t>(1) << 32,
                               (static_cast<uint128_t>(1) << 32) + 1,
                               (static_cast<uint128_t>(1) << 62) + 1,
                               static_cast<uint128_t>(1) << 64};
    // One draw per statement: the order of two draws in one expression is
    // unspecified in C++, and the cases must not depend on the compiler.
    uint128_t width = 0;
    if (rng.Chance(1, 2)) {
      width = edges[rng.Below(7)];
    } else {
      width = static_cast<uint128_t>(rng.Scaled(1, kInt64Max));
      if (rng.Chance(1, 4)) width *= 2;
    }
    // low - INT64_MIN in [0, room], so that high = low + width <= 2^63; low
    // = 0 (numpy's common case) one time in three when the width allows it.
    const uint128_t room = (static_cast<uint128_t>(1) << 64) - width;
    const uint128_t zero = kTwo63;  // 0 - INT64_MIN
    const uint128_t off = rng.Chance(1, 3) && zero <= room ? zero : static_cast<uint128_t>(rng.Next()) % (room + 1);
    const int128 low = static_cast<int128>(kInt64Min) + static_cast<int128>(off);
    r["low"] = static_cast<int64_t>(low);
    r["high"] = HighJson(static_cast<uint128_t>(low + static_cast<int128>(width)));
    r["count"] = rng.In(1, 16);
    return r;
  }
  r["type"] = "MultipliersTest";
  const int64_t layer = rng.Chance(1, 8) ? rng.Scaled(0, 1000000) : rng.Below(64);
  r["layerId"] = layer;
  r["seed"] = rng.Chance(1, 2) ? rng.Below(1000) : rng.Scaled(0, kInt64Max - 10007 * layer);
  r["v"] = rng.Chance(1, 20) ? -rng.Scaled(0, kInt64Max) : rng.Scaled(1, kInt64Max);
  r["maxNgram"] = rng.In(2, 6);
  return r;
}

RandomCase BuildMultipliers(const ojson& r) {
  RandomCase c;
  c.recipe = r;
  c.type = r["type"];
  if (c.type == "BoundedIntegersTest") {
    const uint64_t seed = r["seed"];
    const int64_t low = r["low"];
    const uint128_t high = HighOf(r["high"]);
    const size_t count = r["count"];
    Pcg64 gen{SeedSequence(seed)};
    const uint64_t width1 = static_cast<uint64_t>(high - 1 - static_cast<uint128_t>(low));
    SeedSequence seq(seed);
    c.group = {{"type", "BoundedIntegersTest"}, {"dtype", "int64"}, {"endpoint", false}};
    c.test = {{"seed", seed}, {"low", low}, {"high", r["high"]}, {"count", count}, {"result", "valid"},
              {"intermediate", {{"pool", seq.pool()}, {"generateState", seq.GenerateState64(4)}, {"rng", width1},
                                {"path", std::string(BoundedPathName(BoundedPathFor(width1)))}}},
              {"values", IntegersWide(gen, low, high, count)}};
    c.spec_refs = {"§RNG.1", "§RNG.2", "§RNG.3"};
    c.size = "count " + std::to_string(count) + ", path " + std::string(BoundedPathName(BoundedPathFor(width1))) +
             ", seed " + std::to_string(seed);
    c.measure = 1000 * static_cast<int64_t>(count) + BitLength(seed) + BitLength(width1);
    return c;
  }
  const int64_t seed = r["seed"], layer = r["layerId"], v = r["v"];
  const int max_ngram = r["maxNgram"];
  c.group = {{"type", "MultipliersTest"}};
  c.test = {{"seed", seed}, {"layerId", layer}, {"compressedVocabSize", v}, {"maxNgram", max_ngram}};
  try {
    const std::vector<int64_t> m = LayerMultipliers(seed, layer, v, max_ngram);
    const int64_t bound = MultiplierBound(v);
    c.test["result"] = "valid";
    c.test["intermediate"] = {{"layerSeed", LayerSeed(seed, layer)}, {"bound", bound},
                              {"path", std::string(BoundedPathName(BoundedPathFor(static_cast<uint64_t>(bound - 1))))}};
    c.test["multipliers"] = m;
  } catch (const Error& e) {
    c.test["result"] = "invalid";
    c.test["error"] = e.what();
  }
  c.spec_refs = {"§RNG.4"};
  c.size = "seed " + std::to_string(seed) + ", layer " + std::to_string(layer) + ", V " + std::to_string(v) +
           ", max n-gram " + std::to_string(max_ngram);
  c.measure = 1000 * max_ngram + BitLength(static_cast<uint64_t>(seed)) + BitLength(static_cast<uint64_t>(layer)) +
              BitLength(v < 0 ? ~static_cast<uint64_t>(v) + 1 : static_cast<uint64_t>(v)) + (v <= 0 ? 64 : 0);
  return c;
}

std::vector<ojson> ShrinkMultipliers(const ojson& r) {
  std::vector<ojson> out;
  auto with = [&](const char* key, const ojson& value) {
    if (r[key] == value) return;
    ojson c = r;
    c[key] = value;
    out.push_back(c);
  };
  if (r["type"] == "BoundedIntegersTest") {
    with("count", 1);
    if (r["count"] > 1) with("count", r["count"].get<int64_t>() - 1);
    with("seed", 0);
    with("seed", r["seed"].get<uint64_t>() / 2);
    with("seed", r["seed"].get<uint64_t>() & 0xFFFFFFFFULL);
    return out;
  }
  with("seed", 0);
  with("seed", r["seed"].get<int64_t>() / 2);
  with("seed", r["seed"].get<int64_t>() & 0xFFFFFFFFLL);
  with("layerId", 0);
  with("layerId", r["layerId"].get<int64_t>() / 2);
  if (r["maxNgram"] > 2) with("maxNgram", r["maxNgram"].get<int>() - 1);
  const int64_t v = r["v"];
  if (v > 1) with("v", v / 2);
  if (v < 0) with("v", v / 2);
  return out;
}

}  // namespace

RandomSuite RandomMultipliers() {
  return {"multipliers", "multipliers.schema.json", "ENGRAM-MULTIPLIERS", DrawMultipliers, BuildMultipliers, ShrinkMultipliers};
}

}  // namespace engram::vectors
