// Tests for spec/random.md (§RNG.1-§RNG.4).
//
// Every expected value here comes from outside the code under test: printed
// once by numpy 2.4 (the call is named beside each literal), taken from the
// published Engram V4.1 figures, or stated as a law the output must obey.
#include "reference/random.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"

// A namespace of its own: the suite's files are compiled together (unity build).
namespace engram::random_test {
namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
const uint128_t kTwoTo63 = static_cast<uint128_t>(1) << 63;

// The chain Generator = default_rng(seed) runs: SeedSequence -> PCG64.
Pcg64 DefaultRng(uint64_t seed) { return Pcg64(SeedSequence(seed)); }

// ---------------------------------------------------------------------------
// §RNG.1 SeedSequence
// ---------------------------------------------------------------------------

struct SeedSequenceCase {
  uint64_t entropy;
  std::vector<uint32_t> pool;            // np.random.SeedSequence(entropy).pool
  std::vector<uint64_t> state64;         // .generate_state(4, np.uint64)
  std::vector<uint32_t> state32;         // .generate_state(3, np.uint32)
};

TEST(SeedSequence, MatchesNumpyPoolAndGenerateState) {
  const std::vector<SeedSequenceCase> cases = {
      {0,
       {0xfe40eb07, 0x4f363a36, 0x4eb2009d, 0xc89a7aa7},
       {0xdb2cd7e7b0f478be, 0xabf4641a2c71ba49, 0x20c6ed6d9d7b8d41, 0x2c4099de223c39d4},
       {0xb0f478be, 0xdb2cd7e7, 0x2c71ba49}},
      {1,
       {0xa137e185, 0x0de2fab1, 0x950eae78, 0x54dd0a81},
       {0x672d8ee56d6791ff, 0x8ae19ca14eb1072c, 0x4915796d1322fc4a, 0xd0cc2bdcaba049bd},
       {0x6d6791ff, 0x672d8ee5, 0x4eb1072c}},
      {10007,
       {0xf1a1018d, 0xa7c60c02, 0xfd15d50a, 0x03b81232},
       {0x77d32a348ad70d07, 0x993ed609b84a4fa5, 0xd5f972dec8698e49, 0x7d79ebaebcf148de},
       {0x8ad70d07, 0x77d32a34, 0xb84a4fa5}},
      {(1ULL << 32) + 5,  // two entropy words
       {0x73d34ef0, 0xda919992, 0x5c469880, 0x2789f14b},
       {0xf9c15bd6e249d9ac, 0xb2021b4036320ed7, 0x9388b47fe6dcf739, 0x5eeba8d9ad6439e1},
       {0xe249d9ac, 0xf9c15bd6, 0x36320ed7}},
      {9223372036854775807ULL,  // 2^63 - 1
       {0x09e1e4c3, 0xc2124393, 0x2dc2f6ce, 0x2470a9a4},
       {0x07bddccf9b1009fe, 0x57427703c5f0b45b, 0xb9094b0b99e1a27f, 0x2b9a03bb82aca987},
       {0x9b1009fe, 0x07bddccf, 0xc5f0b45b}},
  };
  for (const SeedSequenceCase& c : cases) {
    SCOPED_TRACE("entropy=" + std::to_string(c.entropy));
    SeedSequence seq(c.entropy);
    EXPECT_EQ(seq.pool(), c.pool);
    EXPECT_EQ(seq.GenerateState64(4), c.state64);
    EXPECT_EQ(seq.GenerateState32(3), c.state32);
  }
}

TEST(SeedSequence, LargestEntropy) {
  // np.random.SeedSequence(2**64 - 1).pool
  const std::vector<uint32_t> expected = {0xfaf3ecf4, 0xfa0f8930, 0xe9f89a67, 0x0e23d1f9};
  EXPECT_EQ(SeedSequence(std::numeric_limits<uint64_t>::max()).pool(), expected);
}

// Law: generate_state(n, uint64) is generate_state(2n, uint32) read as
// little-endian pairs, low word first.
RC_GTEST_PROP(SeedSequence, State64IsLowFirstPairsOfState32, (uint64_t entropy)) {
  const auto n64 = *rc::gen::inRange<size_t>(0, 9);
  SeedSequence seq(entropy);
  const std::vector<uint32_t> words = seq.GenerateState32(2 * n64);
  const std::vector<uint64_t> pairs = seq.GenerateState64(n64);
  RC_ASSERT(pairs.size() == n64);
  for (size_t i = 0; i < n64; ++i) {
    RC_ASSERT(static_cast<uint32_t>(pairs[i]) == words[2 * i]);
    RC_ASSERT(static_cast<uint32_t>(pairs[i] >> 32) == words[2 * i + 1]);
  }
}

// Law: generate_state is a prefix-stable stream (asking for more words only
// appends).
RC_GTEST_PROP(SeedSequence, GenerateStateIsPrefixStable, (uint64_t entropy)) {
  const auto n = *rc::gen::inRange<size_t>(0, 20);
  SeedSequence seq(entropy);
  const std::vector<uint32_t> longer = seq.GenerateState32(n + 5);
  const std::vector<uint32_t> shorter = seq.GenerateState32(n);
  RC_ASSERT(std::vector<uint32_t>(longer.begin(), longer.begin() + n) == shorter);
}

// ---------------------------------------------------------------------------
// §RNG.2 PCG64
// ---------------------------------------------------------------------------

struct Pcg64Case {
  uint64_t seed;
  uint64_t state_hi, state_lo, inc_hi, inc_lo;  // np.random.PCG64(seed).state['state']
  std::vector<uint64_t> raw;                   // np.random.PCG64(seed).random_raw(3)
};

TEST(Pcg64, SeededStateAndFirstRawOutputsMatchNumpy) {
  const std::vector<Pcg64Case> cases = {
      {0, 0x1aa1b5345996452d, 0x09585eb7a69561e3, 0x418ddadb3af71a82, 0x588133bc447873a9,
       {0xa30febcfd9c2825f, 0x4510bdf882d9d721, 0x0a7d3da94ecde8b8}},
      {1, 0x9c5b484bfedb756c, 0x2a6e7d6f320fbc7e, 0x922af2da2645f895, 0xa19857b95740937b,
       {0x8306bdf37922e4ff, 0xf35196bbc152a866, 0x24e7a4f608ec18cd}},
      {42, 0xcea44f6798798f2a, 0xacbc7c9d68860ac8, 0xfa505436c9a8416e, 0x66caf2e28d25abff,
       {0xc621fbcd16d92688, 0x705a5661a791ffc1, 0xdbcd12c26eda1624}},
      {10007, 0x3b34af7676e8ddd5, 0x556a026c98a77d27, 0xabf2e5bd90d31c92, 0xfaf3d75d79e291bd,
       {0xd2c3f84026661e33, 0x0d4fb6969eb57435, 0x62e6e1c58c3bd72b}},
  };
  for (const Pcg64Case& c : cases) {
    SCOPED_TRACE("seed=" + std::to_string(c.seed));
    Pcg64 gen = DefaultRng(c.seed);
    EXPECT_EQ(gen.state_hi(), c.state_hi);
    EXPECT_EQ(gen.state_lo(), c.state_lo);
    EXPECT_EQ(gen.inc_hi(), c.inc_hi);
    EXPECT_EQ(gen.inc_lo(), c.inc_lo);
    std::vector<uint64_t> raw;
    for (size_t i = 0; i < c.raw.size(); ++i) raw.push_back(gen.Next64());
    EXPECT_EQ(raw, c.raw);
  }
}

TEST(Pcg64, LargestSeed) {
  // np.random.PCG64(2**64 - 1).random_raw(2)
  Pcg64 gen = DefaultRng(std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(gen.Next64(), 0xae163a7a8c47568fULL);
  EXPECT_EQ(gen.Next64(), 0xd86659f5f3382359ULL);
}

TEST(Pcg64, ExplicitStateMatchesNumpyStateSetter) {
  // g = np.random.PCG64(); g.state = {'bit_generator': 'PCG64',
  //   'state': {'state': 1, 'inc': 3}, 'has_uint32': 0, 'uinteger': 0}; g.random_raw(3)
  Pcg64 small(0, 1, 0, 3);
  EXPECT_EQ(small.Next64(), 0xec60e53261800aabULL);
  EXPECT_EQ(small.Next64(), 0x3efb1c429cefd272ULL);
  EXPECT_EQ(small.Next64(), 0x05322331643ff3d4ULL);
  // Same with state = 0x0123456789abcdef_fedcba9876543210, inc = 0x1111_2223.
  Pcg64 big(0x0123456789abcdefULL, 0xfedcba9876543210ULL, 0x1111, 0x2223);
  EXPECT_EQ(big.Next64(), 0xb6a3795870105853ULL);
  EXPECT_EQ(big.Next64(), 0x37cb85b6c04b99d0ULL);
  EXPECT_EQ(big.Next64(), 0x4953c01514c65377ULL);
}

TEST(Pcg64, Next32BuffersLowHalfFirstAsNumpy) {
  // np.random.default_rng(0).integers(0, 2**32, 4, dtype=np.int64) (the masked-32 path, i.e. plain
  // next_uint32) gives [0xd9c2825f, 0xa30febcf, 0x82d9d721, 0x4510bdf8]: the halves of
  // PCG64(0).random_raw(2) = [0xa30febcfd9c2825f, 0x4510bdf882d9d721], low half first.
  Pcg64 gen = DefaultRng(0);
  EXPECT_EQ(gen.Next32(), 0xd9c2825fU);
  EXPECT_EQ(gen.Next32(), 0xa30febcfU);
  EXPECT_EQ(gen.Next32(), 0x82d9d721U);
  EXPECT_EQ(gen.Next32(), 0x4510bdf8U);
}

// Law: two Next32 calls split one Next64 draw, low half first.
RC_GTEST_PROP(Pcg64, Next32PairsReconstructNext64, (uint64_t seed)) {
  const auto draws = *rc::gen::inRange(1, 16);
  Pcg64 wide = DefaultRng(seed);
  Pcg64 narrow = DefaultRng(seed);
  for (int i = 0; i < draws; ++i) {
    const uint64_t low = narrow.Next32();
    const uint64_t high = narrow.Next32();
    RC_ASSERT(wide.Next64() == (low | (high << 32)));
  }
}

// Law: the explicit-state constructor resumes a generator exactly where a
// seeded one stands.
RC_GTEST_PROP(Pcg64, ExplicitStateResumesStream, (uint64_t seed)) {
  const auto skip = *rc::gen::inRange(0, 10);
  Pcg64 gen = DefaultRng(seed);
  for (int i = 0; i < skip; ++i) gen.Next64();
  Pcg64 copy(gen.state_hi(), gen.state_lo(), gen.inc_hi(), gen.inc_lo());
  for (int i = 0; i < 5; ++i) RC_ASSERT(copy.Next64() == gen.Next64());
}

// Law: the increment is always odd (PCG needs it for a full period).
RC_GTEST_PROP(Pcg64, SeededIncrementIsOdd, (uint64_t seed)) {
  RC_ASSERT((DefaultRng(seed).inc_lo() & 1) == 1U);
}

// ---------------------------------------------------------------------------
// §RNG.3 Bounded integers
// ---------------------------------------------------------------------------

TEST(BoundedPathFor, Boundaries) {
  EXPECT_EQ(BoundedPathFor(0), BoundedPath::kConstant);
  EXPECT_EQ(BoundedPathFor(1), BoundedPath::kLemire32);
  EXPECT_EQ(BoundedPathFor(0xFFFFFFFEULL), BoundedPath::kLemire32);
  EXPECT_EQ(BoundedPathFor(0xFFFFFFFFULL), BoundedPath::kMasked32);
  EXPECT_EQ(BoundedPathFor(0x100000000ULL), BoundedPath::kLemire64);
  EXPECT_EQ(BoundedPathFor(0xFFFFFFFFFFFFFFFEULL), BoundedPath::kLemire64);
  EXPECT_EQ(BoundedPathFor(0xFFFFFFFFFFFFFFFFULL), BoundedPath::kRaw64);
  EXPECT_EQ(BoundedPathName(BoundedPath::kConstant), "constant");
  EXPECT_EQ(BoundedPathName(BoundedPath::kLemire32), "lemire32");
  EXPECT_EQ(BoundedPathName(BoundedPath::kMasked32), "masked32");
  EXPECT_EQ(BoundedPathName(BoundedPath::kRaw64), "raw64");
  EXPECT_EQ(BoundedPathName(BoundedPath::kLemire64), "lemire64");
}

// Law: the classification in §RNG.3, stated independently for each path.
RC_GTEST_PROP(BoundedPathFor, ClassificationLaws, ()) {
  // Mix uniform values with values near the boundaries, which uniform draws miss.
  const uint64_t rng = *rc::gen::oneOf(
      rc::gen::arbitrary<uint64_t>(), rc::gen::inRange<uint64_t>(0, 4),
      rc::gen::inRange<uint64_t>(0xFFFFFFFCULL, 0x100000004ULL),
      rc::gen::map(rc::gen::inRange<uint64_t>(0, 4), [](uint64_t d) { return ~uint64_t{0} - d; }));
  const BoundedPath path = BoundedPathFor(rng);
  RC_ASSERT((path == BoundedPath::kConstant) == (rng == 0));
  RC_ASSERT((path == BoundedPath::kLemire32) == (rng > 0 && rng < 0xFFFFFFFFULL));
  RC_ASSERT((path == BoundedPath::kMasked32) == (rng == 0xFFFFFFFFULL));
  RC_ASSERT((path == BoundedPath::kRaw64) == (rng == ~uint64_t{0}));
  RC_ASSERT((path == BoundedPath::kLemire64) == (rng > 0xFFFFFFFFULL && rng != ~uint64_t{0}));
}

TEST(Integers, ConstantPathMatchesNumpy) {
  // np.random.default_rng(3).integers(-7, -6, size=3, dtype=np.int64)
  Pcg64 gen = DefaultRng(3);
  EXPECT_EQ(Integers(gen, -7, -6, 3), (std::vector<int64_t>{-7, -7, -7}));
  // No generator call was made: the next raw draw is still the first one,
  // np.random.PCG64(3).random_raw() — compare with a fresh generator.
  Pcg64 fresh = DefaultRng(3);
  EXPECT_EQ(gen.Next64(), fresh.Next64());
}

TEST(Integers, Lemire32PathMatchesNumpy) {
  // np.random.default_rng(5).integers(0, 1000, size=8, dtype=np.int64)
  Pcg64 a = DefaultRng(5);
  EXPECT_EQ(Integers(a, 0, 1000, 8), (std::vector<int64_t>{670, 805, 22, 807, 468, 515, 630, 285}));
  // np.random.default_rng(5).integers(-100, 2**31, size=6, dtype=np.int64)
  Pcg64 b = DefaultRng(5);
  EXPECT_EQ(Integers(b, -100, int64_t{1} << 31, 6),
            (std::vector<int64_t>{1728730595, 48647320, 1006851754, 613753718, 823278340, 877189469}));
  // np.random.default_rng(21).integers(0, 2**31 + 1, size=10, dtype=np.int64):
  // rng + 1 = 2^31 + 1 rejects about half of all draws.
  Pcg64 c = DefaultRng(21);
  EXPECT_EQ(Integers(c, 0, (int64_t{1} << 31) + 1, 10),
            (std::vector<int64_t>{1677437249, 829042257, 1301046589, 1000846326, 520540898, 1970005601,
                                  1451660688, 423468175, 2131896412, 449866629}));
}

TEST(Integers, Masked32PathMatchesNumpy) {
  // np.random.default_rng(7).integers(-5, 2**32 - 5, size=6, dtype=np.int64)
  Pcg64 a = DefaultRng(7);
  EXPECT_EQ(Integers(a, -5, (int64_t{1} << 32) - 5, 6),
            (std::vector<int64_t>{4058335878, 2684764580, 2938530448, 3853503927, 2483747165, 3331544666}));
  // np.random.default_rng(7).integers(0, 2**32, size=6, dtype=np.int64)
  Pcg64 b = DefaultRng(7);
  EXPECT_EQ(Integers(b, 0, int64_t{1} << 32, 6),
            (std::vector<int64_t>{4058335883, 2684764585, 2938530453, 3853503932, 2483747170, 3331544671}));
}

TEST(Integers, Raw64PathMatchesNumpy) {
  // np.random.default_rng(9).integers(-2**63, 2**63, size=4, dtype=np.int64)
  Pcg64 gen = DefaultRng(9);
  EXPECT_EQ(IntegersWide(gen, kInt64Min, kTwoTo63, 4),
            (std::vector<int64_t>{6829892309130839841, -3932528384880999392, 1902747525677753278,
                                  5119600199360223992}));
}

TEST(Integers, Lemire64PathMatchesNumpy) {
  // np.random.default_rng(11).integers(0, 2**32 + 1, size=5, dtype=np.int64)
  Pcg64 a = DefaultRng(11);
  EXPECT_EQ(Integers(a, 0, (int64_t{1} << 32) + 1, 5),
            (std::vector<int64_t>{552204816, 2144382091, 2583415775, 123218352, 635337695}));
  // np.random.default_rng(11).integers(-2**62, 2**62 + 12345, size=5, dtype=np.int64)
  Pcg64 b = DefaultRng(11);
  EXPECT_EQ(Integers(b, -(int64_t{1} << 62), (int64_t{1} << 62) + 12345, 5),
            (std::vector<int64_t>{-4347076620844501173, -3247308706414264344, 3949549575045662828,
                                  -3962170845507565441, 4135100119417722343}));
  // np.random.default_rng(22).integers(-2**62, 2**62 + 1, size=10, dtype=np.int64):
  // rng + 1 = 2^63 + 1 rejects about half of all draws.
  Pcg64 c = DefaultRng(22);
  EXPECT_EQ(Integers(c, -(int64_t{1} << 62), (int64_t{1} << 62) + 1, 10),
            (std::vector<int64_t>{-1232732122843175747, 1412943927696917753, 4498013666235499473,
                                  -4149214199558630276, -209112727018394250, -2614958034654793369,
                                  2739495827201131687, -729578968459946513, 3826264484846875555,
                                  -1018286515756100536}));
  // np.random.default_rng(17).integers(0, 2**63, size=5, dtype=np.int64)
  Pcg64 d = DefaultRng(17);
  EXPECT_EQ(IntegersWide(d, 0, kTwoTo63, 5),
            (std::vector<int64_t>{7794439212943009337, 1484714707775215653, 5144285461880948901,
                                  3394938241273377201, 1982489696262273526}));
}

TEST(Integers, RejectsEmptyRanges) {
  Pcg64 gen = DefaultRng(0);
  EXPECT_THROW(Integers(gen, 5, 5, 1), Error);
  EXPECT_THROW(Integers(gen, 6, 5, 1), Error);
  EXPECT_THROW(IntegersWide(gen, 5, 5, 1), Error);
  EXPECT_THROW(IntegersWide(gen, 0, kTwoTo63 + 1, 1), Error);
}

// Law: every result lies in [low, high), and exactly n come back.
RC_GTEST_PROP(Integers, ResultsWithinRange, (uint64_t seed, int64_t a, int64_t b)) {
  RC_PRE(a != b);
  const int64_t low = a < b ? a : b;
  const int64_t high = a < b ? b : a;
  const auto n = *rc::gen::inRange<size_t>(0, 20);
  Pcg64 gen = DefaultRng(seed);
  const std::vector<int64_t> values = Integers(gen, low, high, n);
  RC_ASSERT(values.size() == n);
  for (int64_t v : values) {
    RC_ASSERT(v >= low);
    RC_ASSERT(v < high);
  }
}

// Law: widths of exactly 2^32 (the masked-32 path) also stay in range.
RC_GTEST_PROP(Integers, Exactly2To32WideStaysInRange, (uint64_t seed)) {
  const int64_t low = *rc::gen::inRange<int64_t>(kInt64Min, kInt64Max - (int64_t{1} << 32) + 1);
  const int64_t high = low + (int64_t{1} << 32);
  Pcg64 gen = DefaultRng(seed);
  for (int64_t v : Integers(gen, low, high, 8)) {
    RC_ASSERT(v >= low);
    RC_ASSERT(v < high);
  }
}

// Law: IntegersWide with a high that fits int64 is Integers.
RC_GTEST_PROP(Integers, WideAgreesWithNarrow, (uint64_t seed, int64_t a, int64_t b)) {
  RC_PRE(a != b);
  const int64_t low = a < b ? a : b;
  const int64_t high = a < b ? b : a;
  Pcg64 narrow = DefaultRng(seed);
  Pcg64 wide = DefaultRng(seed);
  RC_ASSERT(Integers(narrow, low, high, 6) == IntegersWide(wide, low, static_cast<uint128_t>(high), 6));
}

// ---------------------------------------------------------------------------
// §RNG.4 Multipliers
// ---------------------------------------------------------------------------

TEST(MultiplierBound, PublishedAndEdgeValues) {
  EXPECT_EQ(MultiplierBound(99092), 46539438283891);  // published V4.1 bound
  EXPECT_EQ(MultiplierBound(1), kInt64Max / 2);       // (2^63 - 1) // 1 // 2
  EXPECT_EQ(MultiplierBound(int64_t{1} << 62), 1);    // (2^63 - 1) // 2^62 = 1, // 2 = 0 -> max(1, 0)
  EXPECT_EQ(MultiplierBound(kInt64Max), 1);
  EXPECT_THROW(MultiplierBound(0), Error);
  EXPECT_THROW(MultiplierBound(-5), Error);
}

TEST(MultiplierBound, ErrorNamesTheValue) {
  try {
    MultiplierBound(-17);
    FAIL() << "expected engram::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-17"), std::string::npos) << e.what();
  }
}

TEST(LayerSeed, ArithmeticAndErrors) {
  EXPECT_EQ(LayerSeed(0, 0), 0U);
  EXPECT_EQ(LayerSeed(0, 1), 10007U);
  EXPECT_EQ(LayerSeed(3, 14), 3U + 10007U * 14U);
  EXPECT_EQ(LayerSeed(kInt64Max, 0), static_cast<uint64_t>(kInt64Max));
  EXPECT_THROW(LayerSeed(-1, 0), Error);
  EXPECT_THROW(LayerSeed(0, -1), Error);
  EXPECT_THROW(LayerSeed(kInt64Max, kInt64Max), Error);  // far beyond 2^64
}

TEST(LayerMultipliers, PublishedV41Values) {
  // Published Engram V4.1 multipliers: seed 0, V = 99092, max_ngram 4.
  EXPECT_EQ(LayerMultipliers(0, 1, 99092, 4),
            (std::vector<int64_t>{76632096046245, 4839876093313, 35959672319349, 73987337458391}));
  EXPECT_EQ(LayerMultipliers(0, 14, 99092, 4),
            (std::vector<int64_t>{67716810739261, 51510806800915, 30921347202721, 82619226485591}));
}

TEST(LayerMultipliers, ConstantWhenBoundIsOne) {
  // bound 1 -> r = 0 -> every multiplier is 1, whatever the seed.
  EXPECT_EQ(LayerMultipliers(7, 3, kInt64Max, 4), (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(LayerMultipliers, Errors) {
  EXPECT_THROW(LayerMultipliers(0, 1, 0, 4), Error);
  EXPECT_THROW(LayerMultipliers(-1, 1, 99092, 4), Error);
  EXPECT_THROW(LayerMultipliers(0, 1, 99092, -1), Error);
}

// Law: multipliers are odd, positive and below 2 * bound, so id * m < 2^63
// for every id < V.
RC_GTEST_PROP(LayerMultipliers, OddPositiveBelowTwiceBound, ()) {
  const int64_t seed = *rc::gen::inRange<int64_t>(0, int64_t{1} << 40);
  const int64_t layer_id = *rc::gen::inRange<int64_t>(0, 1000);
  const int64_t v = *rc::gen::oneOf(rc::gen::inRange<int64_t>(1, 1 << 20),
                                    rc::gen::inRange<int64_t>(1, kInt64Max));
  const int max_ngram = *rc::gen::inRange(0, 9);
  const int64_t bound = MultiplierBound(v);
  const std::vector<int64_t> m = LayerMultipliers(seed, layer_id, v, max_ngram);
  RC_ASSERT(m.size() == static_cast<size_t>(max_ngram));
  for (int64_t x : m) {
    RC_ASSERT(x % 2 == 1);
    RC_ASSERT(x > 0);
    RC_ASSERT(x < 2 * bound || bound == 1);  // bound 1 gives exactly 1 = 2 * 0 + 1 < 2
    RC_ASSERT(x <= kInt64Max / v);
  }
}

// ---------------------------------------------------------------------------
// Cross-check against a numpy-generated file
// (conformance/crosscheck/numpy_multipliers.py --out FILE), if one is named.
// ---------------------------------------------------------------------------

TEST(NumpyCrosscheck, FileIfPresent) {
  const char* path = std::getenv("ENGRAM_NUMPY_CROSSCHECK");
  if (path == nullptr || *path == '\0') {
    GTEST_SKIP() << "ENGRAM_NUMPY_CROSSCHECK not set";
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot open " << path;
  const nlohmann::json doc = nlohmann::json::parse(in);

  size_t checked = 0;
  for (const nlohmann::json& c : doc.at("multipliers")) {
    const int64_t seed = c.at("seed").get<int64_t>();
    const int64_t layer_id = c.at("layer_id").get<int64_t>();
    const int64_t v = c.at("V").get<int64_t>();
    const int max_ngram = c.at("max_ngram").get<int>();
    const std::vector<int64_t> expected = c.at("values").get<std::vector<int64_t>>();
    ASSERT_EQ(LayerMultipliers(seed, layer_id, v, max_ngram), expected) << "multipliers case " << c.dump();
    ++checked;
  }
  for (const nlohmann::json& c : doc.at("integers")) {
    const uint64_t seed = c.at("seed").get<uint64_t>();
    const int64_t low = c.at("low").get<int64_t>();
    const size_t n = c.at("n").get<size_t>();
    const std::vector<int64_t> expected = c.at("values").get<std::vector<int64_t>>();
    Pcg64 gen = DefaultRng(seed);
    const nlohmann::json& high = c.at("high");
    // high = 2^63 does not fit int64: nlohmann reads it as an unsigned number.
    if (high.is_number_unsigned() && high.get<uint64_t>() > static_cast<uint64_t>(kInt64Max)) {
      ASSERT_EQ(IntegersWide(gen, low, high.get<uint64_t>(), n), expected) << "integers case " << c.dump();
    } else {
      ASSERT_EQ(Integers(gen, low, high.get<int64_t>(), n), expected) << "integers case " << c.dump();
    }
    ++checked;
  }
  EXPECT_GT(checked, 0U);
  std::cout << "[ crosscheck ] " << checked << " numpy cases matched (numpy "
            << doc.value("numpy_version", std::string("?")) << ")\n";
}

}  // namespace
}  // namespace engram::random_test
