// Tests for spec/layout.md (§LAY.1-§LAY.4).
//
// Expected values come from outside the code under test: a trial-division
// primality oracle written here, published number-theory facts (Mersenne and
// largest 64-bit primes, Carmichael numbers, strong pseudoprimes), the
// published DeepSeek-V4.1 figures (spec/sources.md [SRC-V41-CONFIG]), or laws.
#include "reference/layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "reference/config.h"
#include "base/error.h"
#include "reference/random.h"

namespace engram {
namespace {

using ::testing::HasSubstr;

// The oracle: trial division by every odd d with d*d <= n. Exact, slow, obvious.
bool TrialDivisionIsPrime(uint64_t n) {
  if (n < 2) return false;
  if (n % 2 == 0) return n == 2;
  for (uint64_t d = 3; d <= n / d; d += 2) {
    if (n % d == 0) return false;
  }
  return true;
}

// The smallest c > start that the oracle calls prime and that is not in seen.
uint64_t OracleNextPrime(uint64_t start, const std::set<uint64_t>& seen) {
  uint64_t c = start + 1;
  while (!TrialDivisionIsPrime(c) || seen.count(c) != 0) ++c;
  return c;
}

// ---------------------------------------------------------------------------
// §LAY.1 primality
// ---------------------------------------------------------------------------

TEST(IsPrime, AgreesWithTrialDivisionBelow200000_LAY1) {
  for (uint64_t n = 0; n < 200000; ++n) ASSERT_EQ(IsPrime(n), TrialDivisionIsPrime(n)) << n;
}

RC_GTEST_PROP(IsPrime, AgreesWithTrialDivisionBelow2To32_LAY1, ()) {
  // rc::gen::inRange scales with the test size; also draw raw 32-bit values.
  const uint64_t a = *rc::gen::inRange<uint64_t>(0, uint64_t{1} << 32);
  const uint64_t b = *rc::gen::arbitrary<uint32_t>();
  RC_ASSERT(IsPrime(a) == TrialDivisionIsPrime(a));
  RC_ASSERT(IsPrime(b) == TrialDivisionIsPrime(b));
  // Odd numbers near a: primes are rare, so also test a's neighbourhood.
  for (uint64_t n = b | 1; n < (b | 1) + 40 && n < (uint64_t{1} << 32); n += 2) {
    RC_ASSERT(IsPrime(n) == TrialDivisionIsPrime(n));
  }
}

// Products of two primes (composite by construction) and squares of primes
// near 2^32: the hardest composites for a sloppy Miller-Rabin.
RC_GTEST_PROP(IsPrime, ProductsOfTwoPrimesAreComposite_LAY1, ()) {
  const uint64_t p = OracleNextPrime(*rc::gen::inRange<uint64_t>(1, uint64_t{1} << 32), {});
  const uint64_t q = OracleNextPrime(*rc::gen::inRange<uint64_t>(1, (uint64_t{1} << 32) - 5), {});
  RC_PRE(p <= UINT64_MAX / q);
  RC_ASSERT(!IsPrime(p * q));
  RC_ASSERT(IsPrime(p));
  RC_ASSERT(IsPrime(q));
}

TEST(IsPrime, Known64BitPrimes_LAY1) {
  const std::vector<uint64_t> primes = {
      2, 3, 5, 37, 41,
      2147483647ULL,                  // 2^31 - 1 (Mersenne)
      4294967291ULL,                  // largest prime < 2^32
      4294967311ULL,                  // smallest prime > 2^32
      2305843009213693951ULL,         // 2^61 - 1 (Mersenne)
      9223372036854775783ULL,         // 2^63 - 25, largest prime < 2^63
      18446744073709551557ULL,        // 2^64 - 59, largest prime < 2^64
      16000057, 16000463, 16000477, 16000889,  // V4.1 layout primes (spec/layout.md §LAY.4 example)
  };
  for (uint64_t p : primes) EXPECT_TRUE(IsPrime(p)) << p;
}

TEST(IsPrime, Known64BitComposites_LAY1) {
  const std::vector<uint64_t> composites = {
      0, 1, 4, 9, 25, 1369 /* 37^2 */, 1681 /* 41^2 */,
      561, 1105, 1729, 2465, 2821, 6601,   // Carmichael numbers
      3215031751ULL,                       // Carmichael; strong pseudoprime to bases 2, 3, 5, 7
      2047,                                // strong pseudoprime base 2 (23 * 89)
      1373653,                             // strong pseudoprime to bases 2, 3
      25326001,                            // strong pseudoprime to bases 2, 3, 5
      4759123141ULL,                       // strong pseudoprime to bases 2, 7, 61
      1122004669633ULL,                    // strong pseudoprime to bases 2, 13, 23, 1662803
      2152302898747ULL,                    // strong pseudoprime to bases 2 .. 11
      3474749660383ULL,                    // strong pseudoprime to bases 2 .. 13
      341550071728321ULL,                  // strong pseudoprime to bases 2 .. 17
      3825123056546413051ULL,              // strong pseudoprime to bases 2 .. 23
      4294967291ULL * 4294967291ULL,       // square of the largest prime < 2^32
      4294967291ULL * 4294967279ULL,       // product of two primes just below 2^32
      (1ULL << 61) - 1 + 2,                // 2^61 + 1 = 3 * ...
      18446744073709551615ULL,             // 2^64 - 1
      18446744073709551557ULL - 2,         // 2^64 - 61 (ends in 5)
  };
  for (uint64_t n : composites) {
    EXPECT_FALSE(IsPrime(n)) << n;
  }
  // 2^64 - 61 and 2^61 + 1: confirm compositeness independently with a small factor.
  EXPECT_EQ(18446744073709551555ULL % 5, 0u);
  EXPECT_EQ(((1ULL << 61) + 1) % 3, 0u);
}

// Every odd number between 2^64 - 59 and 2^64 is composite (2^64 - 59 is the largest prime).
TEST(IsPrime, NoPrimeAbove2To64Minus59_LAY1) {
  for (uint64_t n = 18446744073709551557ULL + 1; n != 0; ++n) EXPECT_FALSE(IsPrime(n)) << n;
}

// ---------------------------------------------------------------------------
// §LAY.2 find_next_prime
// ---------------------------------------------------------------------------

TEST(FindNextPrime, StrictlyAboveStartAndSkipsSeen_LAY2) {
  EXPECT_EQ(FindNextPrime(0, {}), 2u);
  EXPECT_EQ(FindNextPrime(1, {}), 2u);
  EXPECT_EQ(FindNextPrime(2, {}), 3u);  // strictly above start
  EXPECT_EQ(FindNextPrime(1, {2}), 3u);
  EXPECT_EQ(FindNextPrime(10, {}), 11u);
  EXPECT_EQ(FindNextPrime(10, {11}), 13u);
  EXPECT_EQ(FindNextPrime(10, {11, 13}), 17u);
  EXPECT_EQ(FindNextPrime(11, {}), 13u);
  EXPECT_EQ(FindNextPrime(10, {12, 14, 15}), 11u);  // non-primes in seen are irrelevant
  EXPECT_EQ(FindNextPrime(15999999, {}), 16000057u);
  EXPECT_EQ(FindNextPrime(18446744073709551557ULL - 1, {}), 18446744073709551557ULL);
}

TEST(FindNextPrime, NoPrimeLeftIsRefused_LAY2) {
  EXPECT_THROW(FindNextPrime(18446744073709551557ULL, {}), Error);
  EXPECT_THROW(FindNextPrime(18446744073709551557ULL - 1, {18446744073709551557ULL}), Error);
  // Must not wrap around to 2.
  EXPECT_THROW(FindNextPrime(UINT64_MAX, {}), Error);
}

RC_GTEST_PROP(FindNextPrime, MatchesOracleWithRandomSeen_LAY2, ()) {
  const uint64_t start = *rc::gen::inRange<uint64_t>(0, 1u << 20);
  std::set<uint64_t> seen;
  // Take the next few primes (and some composites) into `seen`.
  uint64_t c = start;
  const int taken = *rc::gen::inRange(0, 6);
  for (int i = 0; i < taken; ++i) {
    c = OracleNextPrime(c, {});
    if (*rc::gen::arbitrary<bool>()) seen.insert(c);
    seen.insert(c + 1);
  }
  RC_ASSERT(FindNextPrime(start, seen) == OracleNextPrime(start, seen));
}

// ---------------------------------------------------------------------------
// The shipped V4.1 layout (§LAY.2-§LAY.4, spec/sources.md [SRC-V41-CONFIG])
// ---------------------------------------------------------------------------

std::vector<int64_t> Flatten(const LayerLayout& l) {
  std::vector<int64_t> out;
  for (const auto& order : l.primes) out.insert(out.end(), order.begin(), order.end());
  return out;
}

TEST(BuildLayout, ShippedV41PublishedPrimesAndSums_LAY4) {
  const Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);
  EXPECT_EQ(layout.profile, Profile::kV41);
  EXPECT_EQ(layout.compressed_vocab_size, 99092);
  EXPECT_EQ(layout.pad, 2);
  EXPECT_EQ(layout.max_ngram, 4);
  EXPECT_EQ(layout.heads, 8);
  ASSERT_EQ(layout.layers.size(), 2u);
  const LayerLayout& l1 = layout.layers[0];
  const LayerLayout& l14 = layout.layers[1];
  EXPECT_EQ(l1.layer_id, 1);
  EXPECT_EQ(l14.layer_id, 14);
  const std::vector<int64_t> p1 = Flatten(l1);
  const std::vector<int64_t> p14 = Flatten(l14);
  ASSERT_EQ(p1.size(), 24u);
  ASSERT_EQ(p14.size(), 24u);
  EXPECT_EQ(p1.front(), 16000057);
  EXPECT_EQ(p1.back(), 16000463);
  EXPECT_EQ(p14.front(), 16000477);
  EXPECT_EQ(p14.back(), 16000889);
  EXPECT_EQ(std::accumulate(p1.begin(), p1.end(), int64_t{0}), 384006168);
  EXPECT_EQ(std::accumulate(p14.begin(), p14.end(), int64_t{0}), 384016682);
  EXPECT_EQ(l1.num_embeddings, 384006168);
  EXPECT_EQ(l14.num_embeddings, 384016682);
  // All 48 distinct and increasing in assignment order.
  std::vector<int64_t> all = p1;
  all.insert(all.end(), p14.begin(), p14.end());
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 48u);
  // With equal bases they are exactly the 48 smallest primes >= 16000000 (§LAY.2 consequence).
  uint64_t c = 16000000 - 1;
  for (size_t i = 0; i < all.size(); ++i) {
    c = OracleNextPrime(c, {});
    EXPECT_EQ(all[i], static_cast<int64_t>(c)) << "prime #" << i;
  }
  // V4.1 multipliers (spec/random.md §RNG.4 example, numpy-checked).
  EXPECT_EQ(l1.multipliers, (std::vector<int64_t>{76632096046245, 4839876093313, 35959672319349, 73987337458391}));
  EXPECT_EQ(l14.multipliers, (std::vector<int64_t>{67716810739261, 51510806800915, 30921347202721, 82619226485591}));
}

TEST(BuildLayout, OffsetsAreExclusivePrefixSums_LAY3) {
  const Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);
  for (const LayerLayout& l : layout.layers) {
    const std::vector<int64_t> p = Flatten(l);
    ASSERT_EQ(l.offsets.size(), p.size());
    int64_t running = 0;
    for (size_t col = 0; col < p.size(); ++col) {
      EXPECT_EQ(l.offsets[col], running) << "col " << col;
      EXPECT_EQ(l.prime(static_cast<int>(col)), p[col]);
      running += p[col];
    }
    EXPECT_EQ(l.num_embeddings, running);
  }
  // Column order is order-major: col = (n - 2) * heads + head.
  EXPECT_EQ(layout.layers[0].prime(8), layout.layers[0].primes[1][0]);
  EXPECT_EQ(layout.layers[0].prime(23), layout.layers[0].primes[2][7]);
}

TEST(BuildLayout, RefusesNumEmbeddingsMismatch_LAY4) {
  EngramConfig c = V41FlashConfig();
  c.num_embeddings[1] = 384016683;
  try {
    BuildLayout(c, 99092, 2);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("engram_num_embeddings"));
    EXPECT_THAT(e.what(), HasSubstr("384016683"));  // configured value
    EXPECT_THAT(e.what(), HasSubstr("384016682"));  // computed sum
    EXPECT_THAT(e.what(), HasSubstr(c.source));
  }
}

TEST(BuildLayout, RefusesCompressedVocabMismatch_LAY4) {
  try {
    BuildLayout(V41FlashConfig(), 99093, 2);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("engram_compressed_vocab_size"));
    EXPECT_THAT(e.what(), HasSubstr("99092"));
    EXPECT_THAT(e.what(), HasSubstr("99093"));
  }
}

TEST(BuildLayout, V41ChecksAreSkippedWhenKeysAbsent_LAY4) {
  EngramConfig c = V41FlashConfig();
  c.num_embeddings.clear();
  c.compressed_vocab_size.reset();
  const Layout layout = BuildLayout(c, 1000, 2);
  EXPECT_EQ(layout.layers[0].num_embeddings, 384006168);  // primes do not depend on V
}

TEST(BuildLayout, DemoPerformsNoChecks_LAY4) {
  const Layout layout = BuildLayout(DemoV1Config(), 7, 2);
  EXPECT_EQ(layout.layers.size(), 2u);
  EXPECT_EQ(layout.layers[0].primes[0][0], 646403);  // smallest prime >= 646400 (checked with the oracle below)
  EXPECT_EQ(OracleNextPrime(646399, {}), 646403u);
}

TEST(BuildLayout, RefusesPadOutsideVocabAndBadVocab_LAY3) {
  EXPECT_THROW(BuildLayout(V41FlashConfig(), 99092, 99092), Error);
  EXPECT_THROW(BuildLayout(V41FlashConfig(), 99092, -1), Error);
  EXPECT_THROW(BuildLayout(DemoV1Config(), 0, 0), Error);
  EXPECT_NO_THROW(BuildLayout(DemoV1Config(), 1, 0));
}

// §LAY.2 consequence: layer order matters, [14, 1] and [1, 14] differ.
TEST(BuildLayout, LayerOrderChangesThePrimes_LAY2) {
  EngramConfig a = V41FlashConfig();
  a.num_embeddings.clear();
  EngramConfig b = a;
  b.layer_ids = {14, 1};
  const Layout la = BuildLayout(a, 99092, 2);
  const Layout lb = BuildLayout(b, 99092, 2);
  EXPECT_EQ(lb.layers[0].layer_id, 14);
  EXPECT_EQ(Flatten(lb.layers[0]), Flatten(la.layers[0]));  // the first-listed layer takes the first primes
  EXPECT_EQ(lb.layers[0].multipliers, la.layers[1].multipliers);  // multipliers follow the layer id
}

// ---------------------------------------------------------------------------
// Properties over random small configurations (§LAY.2, §LAY.3, §RNG.4)
// ---------------------------------------------------------------------------

RC_GTEST_PROP(BuildLayout, RandomConfigsObeyTheLayoutLaws_LAY2, ()) {
  const bool v41 = *rc::gen::arbitrary<bool>();
  EngramConfig c = v41 ? V41FlashConfig() : DemoV1Config();
  c.max_ngram = *rc::gen::inRange(2, 6);
  c.heads = *rc::gen::inRange(1, 6);
  const int n_layers = *rc::gen::inRange(1, 4);
  c.layer_ids.clear();
  while (static_cast<int>(c.layer_ids.size()) < n_layers) {
    const int64_t id = *rc::gen::inRange<int64_t>(0, 100);
    if (std::find(c.layer_ids.begin(), c.layer_ids.end(), id) == c.layer_ids.end()) c.layer_ids.push_back(id);
  }
  c.bases.clear();
  const int64_t shared_base = *rc::gen::inRange<int64_t>(2, 200);
  for (int i = 0; i < c.max_ngram - 1; ++i) c.bases.push_back(v41 ? shared_base : *rc::gen::inRange<int64_t>(2, 200));
  c.num_embeddings.clear();
  c.compressed_vocab_size.reset();
  c.seed = v41 ? 0 : *rc::gen::inRange<int64_t>(0, 100000);
  const int64_t v = *rc::gen::inRange<int64_t>(1, int64_t{1} << 40);
  const int64_t pad = *rc::gen::inRange<int64_t>(0, std::min<int64_t>(v, 100));

  const Layout layout = BuildLayout(c, v, pad);
  RC_ASSERT(layout.layers.size() == c.layer_ids.size());
  RC_ASSERT(layout.columns() == (c.max_ngram - 1) * c.heads);

  // An independent replay of §LAY.2 with the trial-division oracle.
  std::set<uint64_t> seen;
  std::set<int64_t> distinct;
  size_t total = 0;
  for (size_t li = 0; li < layout.layers.size(); ++li) {
    const LayerLayout& l = layout.layers[li];
    RC_ASSERT(l.layer_id == c.layer_ids[li]);
    RC_ASSERT(l.primes.size() == static_cast<size_t>(c.max_ngram - 1));
    int64_t running = 0;
    for (int order = 0; order < c.max_ngram - 1; ++order) {
      RC_ASSERT(l.primes[static_cast<size_t>(order)].size() == static_cast<size_t>(c.heads));
      uint64_t start = static_cast<uint64_t>(c.bases[static_cast<size_t>(order)]) - 1;
      for (int h = 0; h < c.heads; ++h) {
        const int64_t p = l.primes[static_cast<size_t>(order)][static_cast<size_t>(h)];
        const uint64_t expect = OracleNextPrime(start, seen);
        RC_ASSERT(static_cast<uint64_t>(p) == expect);
        RC_ASSERT(p > c.bases[static_cast<size_t>(order)] - 1);
        RC_ASSERT(TrialDivisionIsPrime(static_cast<uint64_t>(p)));
        seen.insert(expect);
        distinct.insert(p);
        ++total;
        start = expect;
        const int col = order * c.heads + h;
        RC_ASSERT(l.offsets[static_cast<size_t>(col)] == running);
        running += p;
      }
    }
    RC_ASSERT(l.num_embeddings == running);
    // §RNG.4 multipliers: max_ngram odd values in [1, 2 * bound).
    RC_ASSERT(l.multipliers.size() == static_cast<size_t>(c.max_ngram));
    const int64_t bound = MultiplierBound(v);
    for (int64_t m : l.multipliers) {
      RC_ASSERT(m % 2 == 1);
      RC_ASSERT(m >= 1);
      RC_ASSERT(m < 2 * bound);
      // §HASH.7: (V - 1) * m < 2^63, i.e. products of compressed ids never wrap.
      RC_ASSERT(static_cast<uint128_t>(v - 1) * static_cast<uint128_t>(m) <
                (static_cast<uint128_t>(1) << 63));
    }
  }
  // Primes are distinct across all layers.
  RC_ASSERT(distinct.size() == total);
}

}  // namespace
}  // namespace engram
