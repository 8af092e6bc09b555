// spec/conformance.md §CONF.7 — randomized conformance: fresh test cases drawn
// from a seed, their expected values computed by the reference, in exactly the
// vector format v1 (same groups, tests, comparison rules; `result: invalid`
// included), and smaller variants of a case for shrinking a failure.
//
// A case is made in two steps. Draw() picks a *recipe*: the small set of
// parameters that define the case (profile, layer ids, max n-gram, heads, V,
// pad, ids, steps, ...), as JSON. Build() turns a recipe into a test group and
// one test, every expected value computed by the reference. Shrink() proposes
// recipes that are smaller in one respect (fewer positions, layers, heads,
// steps; smaller V, max n-gram, ids). Shrinking therefore works on the
// parameters, never on the expected outputs, and every shrunk case is again a
// case of the vector format with reference-computed expectations.
//
// Why not RapidCheck's generators: a RapidCheck Gen draws from its own random
// source, whose sequence is not promised stable across RapidCheck versions
// (and Debian ships whichever version it ships), while §CONF.7 promises that a
// seed names the same cases wherever the same spec version runs. Its shrinking
// is tied to its generators in the same way. So the draw is SplitMix64, keyed
// by (seed, suite, case index) so that any case can be rebuilt on its own, and
// the shrinking is the small greedy search of ShrinkFailure (runner side).
#ifndef ENGRAM_VECTORS_RANDOM_H_
#define ENGRAM_VECTORS_RANDOM_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "vectors/generator.h"

namespace engram::vectors {

// The largest int64, the top of many draws (ids, V, seeds, excesses).
inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// §CONF.7 The version of the case generators: cases of the same seed are the
// same, byte for byte, for the same (kSpecVersion, kRandomVersion).
inline constexpr const char* kRandomVersion = "random-v2";

// SplitMix64 over a counter: the same seed gives the same draws on every
// platform and compiler.
class CaseRng {
 public:
  // The stream of case `index` of `suite` under `seed`.
  CaseRng(uint64_t seed, const std::string& suite, int64_t index);
  uint64_t Next();
  // Uniform in [0, n) (n >= 1; the modulo bias is irrelevant for test inputs).
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }
  // Uniform in [lo, hi] (lo <= hi; the arithmetic is unsigned, so any range works).
  int64_t In(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    const uint64_t x = span == UINT64_MAX ? Next() : Next() % (span + 1);
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + x);
  }
  // True with probability num / den.
  bool Chance(int num, int den) { return Below(den) < num; }
  // A value in [lo, hi] drawn log-uniformly (small values as often as large
  // ones), with the end points themselves more often: edges find bugs.
  int64_t Scaled(int64_t lo, int64_t hi);
  // A sequence length in [0, hi] (hi >= 1): 0 one time in `empty_den`, else
  // Scaled(1, hi). §CONF.4 an empty sequence is trivial (a port passes it
  // without computing), so it is drawn rarely (random-v2; Scaled(0, hi)
  // gave 0 about one time in five).
  int64_t Length(int64_t hi, int empty_den) { return Chance(1, empty_den) ? 0 : Scaled(1, hi); }

 private:
  uint64_t state_;
};

// The number of bits of x (0 for 0): the scale of a drawn value, in the
// measures that shrinking decreases.
inline int BitLength(uint64_t x) {
  int n = 0;
  for (; x != 0; x >>= 1) ++n;
  return n;
}

// One generated case: the recipe it came from and the test it builds.
struct RandomCase {
  ojson recipe;   // the drawn parameters (what Build reads)
  ojson group;    // the test group without "tests" (vector format v1)
  ojson test;     // the test's fields after tcId/comment/flags/specRef: inputs, "result", outputs
  std::string type;     // the group's "type"
  std::string profile;  // "v4.1", "demo-v1", or "" when the case has none
  std::vector<std::string> spec_refs;  // the test's "specRef"
  std::string size;     // for people: "T 24, layers 2, heads 3, max n-gram 4, V 99092"
  int64_t measure = 0;  // one number that every shrink step makes smaller
};

// §CONF.7 Consecutive cases of a hash suite share their layout, this many at
// a time: building a layout (its prime search) costs more than hashing a
// case, and a port serves many sequences per layout too.
inline constexpr int64_t kCasesPerLayout = 8;

// A suite's generator.
struct RandomSuite {
  std::string suite;   // the vector file it extends (v1/<suite>.json)
  std::string schema;  // that file's schema
  std::string algorithm;
  // The recipe of case `index` under `seed` (each generator keys its CaseRng
  // streams by (seed, suite, index) or, for parts shared by a block of
  // cases, by the block).
  std::function<ojson(uint64_t seed, int64_t index)> draw;
  std::function<RandomCase(const ojson& recipe)> build;  // throws engram::Error for a recipe it cannot build
  std::function<std::vector<ojson>(const ojson& recipe)> shrink;  // candidates, each smaller in one respect
  // §CONF.7 item 2 Policy features: where the spec leaves an implementation a
  // choice (§HASH.6: the rollbacks beyond the mandatory ones), the default
  // cases expect only the mandatory outcomes, and the cases that depend on the
  // choice are drawn only when the implementation declares the feature (hello
  // `features`, `engram conform --features`). `features` names those this
  // suite knows; `draw_declared` draws a case for a non-empty subset of them
  // (unset when `features` is empty). The default draw is `draw`, so the
  // default cases do not depend on which features exist.
  std::vector<std::string> features = {};
  std::function<ojson(uint64_t seed, int64_t index, const std::set<std::string>& declared)> draw_declared = nullptr;
  // Optional: draws and builds case `index` in one go (for the features `declared` it knows); when set,
  // DrawCase uses it. A generator that builds a drawn case to check it (serving_v41's no-leak control) hands
  // that case over instead of building it twice; the case is the one build(draw...) gives.
  std::function<RandomCase(uint64_t seed, int64_t index, const std::set<std::string>& declared)> draw_case = nullptr;
};

// §CONF.7 The policy features the generators know, with what declaring one
// means (spec/conformance.md §CONF.7, spec/hash.md §HASH.6).
const std::vector<std::pair<std::string, std::string>>& PolicyFeatures();
// The features of `declared` that `suite` draws differently for (sorted).
std::set<std::string> SuiteFeatures(const RandomSuite& suite, const std::set<std::string>& declared);

// The generators, in suite order (multipliers, layout, hash_v41, hash_demo, table_lookup, tp_shard,
// then hash_state, token_map, gate_v41, gate_demo, short_conv_demo, engram_forward, serving_v41: added after
// the first six, which draw what they drew before).
const std::vector<RandomSuite>& RandomSuites();
// nullptr when `suite` has no generator.
const RandomSuite* FindRandomSuite(const std::string& suite);
// The suites with a generator, and for the others why they have none.
std::vector<std::pair<std::string, std::string>> RandomCoverage();

// Case `index` (0-based) of `suite` under `seed`, for an implementation that
// declared the policy features `declared` (only those the suite knows matter).
RandomCase DrawCase(const RandomSuite& suite, uint64_t seed, int64_t index, const std::set<std::string>& declared = {});

// §CONF.7 A vector document holding `cases` (one group each), in the format
// of v1/<suite>.json; `comments[i]` names each case's seed and origin.
ojson RandomCasesDoc(const RandomSuite& suite, const std::vector<RandomCase>& cases,
                     const std::vector<std::string>& comments, const std::vector<std::string>& header);

// Per-suite generators (random_<area>.cc).
RandomSuite RandomMultipliers();
RandomSuite RandomLayout();
RandomSuite RandomHash(bool v41);
RandomSuite RandomTableLookup();  // SyntheticLookupTest (random_storage.cc)
RandomSuite RandomTpShard();      // RowShardTest and HeadShardTest
RandomSuite RandomHashState();    // HashHandoffTest (random_hash_state.cc)
RandomSuite RandomTokenMap();     // TokenMapTest and TokenLookupTest (random_token_map.cc)
RandomSuite RandomGateV41();      // GateFunctionTest, V41GateTest, WkvTest (random_gate_v41.cc)
RandomSuite RandomGateDemo();     // GateFunctionTest, DemoGateTest (random_gate_demo.cc)
RandomSuite RandomShortConv();    // ShortConvTest (random_short_conv_demo.cc)
RandomSuite RandomEngramForward();  // EngramForwardTest, both profiles (random_engram_forward.cc)
RandomSuite RandomServing();        // PackedBatchTest, DraftTreeTest (random_serving.cc)

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_RANDOM_H_
