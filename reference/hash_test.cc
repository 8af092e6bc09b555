// Tests for spec/hash.md (§HASH.1-§HASH.7).
//
// Expected values never come from the code under test: they are computed by
// conformance/crosscheck/numpy_hash.py (an independent numpy implementation;
// the command is named beside each literal), derived by hand from spec/layout.md
// (the primes of the tiny examples), or stated as laws the output must obey
// (blocking, chunking, rollback, fork, ranges).
#include "reference/hash.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/config.h"
#include "base/error.h"
#include "reference/layout.h"
#include "reference/random.h"
#include "reference/token_map.h"
#include "testutil/hash_gen.h"

namespace engram {
namespace {

using ::testing::HasSubstr;
using Ids = std::vector<int64_t>;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// rows[t][layer][col] of a flat output.
int64_t RowAt(const Layout& layout, const Ids& rows, size_t t, size_t layer, int col) {
  const size_t cols = static_cast<size_t>(layout.columns());
  return rows[(t * layout.layers.size() + layer) * cols + static_cast<size_t>(col)];
}

// The rows of position t (all layers), as a vector.
Ids PositionRows(const Layout& layout, const Ids& rows, size_t t) {
  const size_t per = layout.layers.size() * static_cast<size_t>(layout.columns());
  return Ids(rows.begin() + static_cast<std::ptrdiff_t>(t * per), rows.begin() + static_cast<std::ptrdiff_t>((t + 1) * per));
}

Ids Concat(const Ids& a, const Ids& b) {
  Ids out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

Ids Feed(HashState& state, const Ids& ids) {
  Ids rows;
  state.Append(ids, rows);
  return rows;
}

Layout LayoutFromJson(const nlohmann::json& doc, int64_t v, int64_t pad) {
  return BuildLayout(ParseConfig(doc, "<test>"), v, pad);
}

// ---------------------------------------------------------------------------
// Random scenarios for the properties
// ---------------------------------------------------------------------------

// The generators shared with cuda/engram_cuda_test.cc (testutil/hash_gen.h).
using testutil::DrawChunks;
using testutil::DrawId;
using testutil::DrawLayout;
using testutil::DrawProfile;

struct Scenario {
  Layout layout;
  Ids ids;
};

Ids DrawIds(const Layout& layout, int max_len = 40) {
  const int n = *rc::gen::inRange(0, max_len + 1);
  Ids ids;
  for (int i = 0; i < n; ++i) ids.push_back(DrawId(layout));
  return ids;
}

// ---------------------------------------------------------------------------
// §HASH.3-§HASH.4 Hand-checked tiny examples
// ---------------------------------------------------------------------------

// demo-v1, one layer (id 0), max 3, 2 heads, bases [11, 13], seed 0, V = 20, pad 2.
// §LAY.2 by hand: order 2 starts at 10 -> 11, 13; order 3 starts at 12 -> 17, 19
// (13 taken). Offsets [0, 11, 24, 41], 60 rows.
nlohmann::json TinyDemoConfig() {
  return {{"layer_ids", {0}},       {"max_ngram_size", 3}, {"n_head_per_ngram", 2},
          {"engram_vocab_size", {11, 13}}, {"n_embed_per_ngram", 2}, {"seed", 0}};
}

TEST(HashExample, TinyDemoLayoutByHand) {
  const Layout layout = LayoutFromJson(TinyDemoConfig(), 20, 2);
  ASSERT_EQ(layout.layers.size(), 1u);
  const LayerLayout& l = layout.layers[0];
  EXPECT_EQ(l.primes, (std::vector<std::vector<int64_t>>{{11, 13}, {17, 19}}));
  EXPECT_EQ(l.offsets, (Ids{0, 11, 24, 41}));
  EXPECT_EQ(l.num_embeddings, 60);
  // numpy: np.random.default_rng(0).integers(0, (2**63-1)//20//2, size=3, dtype=np.int64)*2+1
  EXPECT_EQ(l.multipliers, (Ids{293746730769426857, 124417161582231291, 18895702746224901}));
}

// §HASH.2 (demo: pads before the start, negatives hashed as they are), §HASH.3, §HASH.4.
TEST(HashExample, TinyDemoRowsMatchNumpy) {
  const Layout layout = LayoutFromJson(TinyDemoConfig(), 20, 2);
  const Ids ids = {5, 7, -3, 19, 2, 0};
  // python3 -c "import numpy_hash as n; L=n.build_layout([0],3,2,[11,13],0,20);
  //   print(n.hash_rows([5,7,-3,19,2,0],'demo-v1',2,L,3,2).reshape(6,-1).tolist())"
  // (run in conformance/crosscheck; re-checked with Python big ints and explicit wrap).
  const Ids expected = {5, 11, 40, 53,  1, 11, 40, 51,  10, 15, 35, 44,
                        8, 15, 26, 46,  1, 14, 39, 58,  8, 12, 29, 56};
  EXPECT_EQ(HashSequence(layout, ids), expected);
}

// The same by an independent loop over the layout's multipliers and primes,
// with Python-style floor-mod written with `%` (not DivisionFreeMod).
TEST(HashExample, TinyDemoRowsFromFirstPrinciples) {
  const Layout layout = LayoutFromJson(TinyDemoConfig(), 20, 2);
  const LayerLayout& l = layout.layers[0];
  const Ids ids = {5, 7, -3, 19, 2, 0, kInt64Min, -(int64_t{1} << 62), 3};
  Ids expected;
  for (size_t t = 0; t < ids.size(); ++t) {
    uint64_t mix = 0;
    for (int s = 0; s < 3; ++s) {
      const int64_t tok = static_cast<int64_t>(t) >= s ? ids[t - static_cast<size_t>(s)] : 2;
      mix ^= static_cast<uint64_t>(tok) * static_cast<uint64_t>(l.multipliers[static_cast<size_t>(s)]);
      if (s == 0) continue;
      for (int h = 0; h < 2; ++h) {
        const int64_t p = l.primes[static_cast<size_t>(s - 1)][static_cast<size_t>(h)];
        int64_t r = static_cast<int64_t>(mix) % p;
        if (r < 0) r += p;
        expected.push_back(r + l.offsets[static_cast<size_t>((s - 1) * 2 + h)]);
      }
    }
  }
  EXPECT_EQ(HashSequence(layout, ids), expected);
}

// v4.1, same tiny shape with base 11 for both orders (§CFG.2: one base), V = 20, pad 2.
// §LAY.2 by hand: order 2 -> 11, 13; order 3 restarts at 10 -> 17, 19.
nlohmann::json TinyV41Config() {
  return {{"engram_layer_ids", {0}}, {"engram_max_ngram_size", 3}, {"engram_n_heads", 2},
          {"engram_vocab_size", 11}, {"engram_head_dim", 4},       {"engram_pad_id", 2},
          {"engram_num_embeddings", {60}}, {"engram_compressed_vocab_size", 20}};
}

TEST(HashExample, TinyV41RowsWithDeadMatchNumpy) {
  const Layout layout = LayoutFromJson(TinyV41Config(), 20, 2);
  EXPECT_EQ(layout.layers[0].primes, (std::vector<std::vector<int64_t>>{{11, 13}, {17, 19}}));
  const Ids ids = {5, 7, kDead, 19, 2, kDead, kDead, 4, 6};
  // python3 -c "import numpy_hash as n; L=n.build_layout([0],3,2,[11,11],0,20);
  //   print(n.hash_rows([5,7,-1,19,2,-1,-1,4,6],'v4.1',2,L,3,2).reshape(9,-1).tolist())"
  const Ids expected = {5, 11, 40, 53,  1, 11, 40, 51,  2, 22, 34, 55,  9, 16, 33, 53,  1, 14, 40, 59,
                        2, 22, 34, 55,  2, 22, 34, 55,  4, 20, 39, 53,  6, 18, 28, 52};
  EXPECT_EQ(HashSequence(layout, ids), expected);
}

// ---------------------------------------------------------------------------
// §HASH.2 v4.1 blocking laws
// ---------------------------------------------------------------------------

// A DEAD current id makes every slot read pad: the position hashes exactly
// like an all-pad window, i.e. like a pad at position 0 (before-start slots read pad).
RC_GTEST_PROP(HashBlocking, DeadCurrentHashesLikeAllPadWindow_HASH2, ()) {
  const Layout layout = DrawLayout(Profile::kV41);
  const Ids ids = DrawIds(layout);
  const Ids rows = HashSequence(layout, ids);
  const Ids all_pad = HashSequence(layout, Ids{layout.pad});
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] == kDead) RC_ASSERT(PositionRows(layout, rows, t) == all_pad);
  }
}

// A DEAD at d influences exactly positions d ... d + max - 1: replacing it by
// any other id leaves every other position unchanged.
RC_GTEST_PROP(HashBlocking, DeadAffectsOnlyTheNextMaxPositions_HASH2, ()) {
  const Layout layout = DrawLayout(Profile::kV41);
  Ids ids = DrawIds(layout);
  RC_PRE(!ids.empty());
  const size_t d = *rc::gen::inRange<size_t>(0, ids.size());
  ids[d] = kDead;
  Ids other = ids;
  other[d] = *rc::gen::inRange<int64_t>(0, layout.compressed_vocab_size);
  const Ids a = HashSequence(layout, ids);
  const Ids b = HashSequence(layout, other);
  for (size_t t = 0; t < ids.size(); ++t) {
    if (t >= d && t < d + static_cast<size_t>(layout.max_ngram)) continue;
    RC_ASSERT(PositionRows(layout, a, t) == PositionRows(layout, b, t));
  }
}

// No n-gram crosses a DEAD: every position after a DEAD at d hashes as if the
// sequence started at d + 1 (ids before the DEAD never reach it).
RC_GTEST_PROP(HashBlocking, NothingCrossesADead_HASH2, ()) {
  const Layout layout = DrawLayout(Profile::kV41);
  const Ids ids = DrawIds(layout);
  const Ids rows = HashSequence(layout, ids);
  for (size_t d = 0; d < ids.size(); ++d) {
    if (ids[d] != kDead) continue;
    const Ids suffix(ids.begin() + static_cast<std::ptrdiff_t>(d + 1), ids.end());
    const Ids fresh = HashSequence(layout, suffix);
    for (size_t t = d + 1; t < ids.size(); ++t) {
      RC_ASSERT(PositionRows(layout, rows, t) == PositionRows(layout, fresh, t - d - 1));
    }
  }
}

// Sequence start reads pad (both profiles): the first position of [x] hashes
// like the last position of [pad] * (max - 1) + [x]; and in v4.1 also like the
// position after a DEAD.
RC_GTEST_PROP(HashBlocking, SequenceStartReadsPad_HASH2, ()) {
  const Layout layout = DrawLayout(DrawProfile());
  const int64_t x = DrawId(layout);
  const Ids first = HashSequence(layout, Ids{x});
  Ids padded(static_cast<size_t>(layout.max_ngram - 1), layout.pad);
  padded.push_back(x);
  const Ids rows = HashSequence(layout, padded);
  RC_ASSERT(PositionRows(layout, rows, padded.size() - 1) == first);
  if (layout.profile == Profile::kV41) {
    const Ids after_dead = HashSequence(layout, Ids{*rc::gen::inRange<int64_t>(0, layout.compressed_vocab_size), kDead, x});
    RC_ASSERT(PositionRows(layout, after_dead, 2) == first);
  }
}

// demo-v1 has no blocking: -1 is an ordinary (negative) id, and a -1 current id
// does not hash like an all-pad window in general.
TEST(HashBlocking, DemoMinusOneIsNotDead_HASH2) {
  const Layout layout = LayoutFromJson(TinyDemoConfig(), 20, 2);
  const Ids rows = HashSequence(layout, Ids{5, -1, 7});
  // Blocking would have made position 2 ignore the 5 two slots back.
  const Ids rows2 = HashSequence(layout, Ids{6, -1, 7});
  EXPECT_NE(PositionRows(layout, rows, 2), PositionRows(layout, rows2, 2));
  EXPECT_NE(PositionRows(layout, rows, 1), HashSequence(layout, Ids{2}));
}

// ---------------------------------------------------------------------------
// §HASH.4 floor-mod, §HASH.7 division-free modulo
// ---------------------------------------------------------------------------

int64_t PercentFloorMod(int64_t x, int64_t p) {
  int64_t r = x % p;
  return r < 0 ? r + p : r;
}

TEST(DivisionFreeMod, EdgeValues_HASH7) {
  const std::vector<uint64_t> moduli = {2, 3, 5, 11, 4294967291ULL, 4294967311ULL, (1ULL << 61) - 1,
                                        9223372036854775783ULL /* largest prime < 2^63 */};
  const std::vector<uint64_t> xs = {0, 1, 2, 3, (1ULL << 32) - 1, 1ULL << 32, (1ULL << 63) - 1, 1ULL << 63,
                                    UINT64_MAX - 1, UINT64_MAX};
  for (uint64_t p : moduli) {
    const DivisionFreeMod mod(p);
    for (uint64_t x : xs) {
      EXPECT_EQ(mod.Mod(x), x % p) << "x=" << x << " p=" << p;
      const int64_t sx = static_cast<int64_t>(x);
      EXPECT_EQ(mod.FloorMod(sx), PercentFloorMod(sx, static_cast<int64_t>(p))) << "x=" << sx << " p=" << p;
    }
    // Multiples of p and their neighbours, including the largest multiple below 2^64.
    for (uint64_t q : {uint64_t{1}, uint64_t{2}, uint64_t{12345}, UINT64_MAX / p}) {
      for (uint64_t x : {q * p - 1, q * p, q * p + 1}) EXPECT_EQ(mod.Mod(x), x % p) << "x=" << x << " p=" << p;
    }
    EXPECT_EQ(mod.FloorMod(kInt64Min), PercentFloorMod(kInt64Min, static_cast<int64_t>(p)));
    EXPECT_EQ(mod.FloorMod(-1), static_cast<int64_t>(p - 1));
  }
}

TEST(DivisionFreeMod, RefusesModuliOutsideRange_HASH7) {
  // Run in a child process: a division by zero must be a refusal, not SIGFPE.
  EXPECT_EXIT(
      {
        try {
          DivisionFreeMod m(0);
          (void)m;
        } catch (const Error&) {
          std::exit(0);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_THROW(DivisionFreeMod(1), Error);
  EXPECT_THROW(DivisionFreeMod(1ULL << 63), Error);
}

uint64_t DrawModulus() {
  const int kind = *rc::gen::inRange(0, 4);
  uint64_t start = 0;
  if (kind == 0) start = *rc::gen::inRange<uint64_t>(1, 100);
  else if (kind == 1) start = *rc::gen::inRange<uint64_t>(1, 1ULL << 32);
  else start = *rc::gen::inRange<uint64_t>(1, (1ULL << 63) - 100);
  return FindNextPrime(start, {});
}

RC_GTEST_PROP(DivisionFreeMod, ModEqualsPercentForRandomPrimes_HASH7, (uint64_t x)) {
  const uint64_t p = DrawModulus();
  const uint64_t y = *rc::gen::inRange<uint64_t>(0, UINT64_MAX);
  const DivisionFreeMod mod(p);
  RC_ASSERT(mod.Mod(x) == x % p);
  RC_ASSERT(mod.Mod(y) == y % p);
}

RC_GTEST_PROP(DivisionFreeMod, FloorModEqualsPythonPercent_HASH4, (int64_t x)) {
  const uint64_t p = DrawModulus();
  const int64_t y = static_cast<int64_t>(*rc::gen::inRange<uint64_t>(0, UINT64_MAX));
  const DivisionFreeMod mod(p);
  const int64_t sp = static_cast<int64_t>(p);
  RC_ASSERT(mod.FloorMod(x) == PercentFloorMod(x, sp));
  RC_ASSERT(mod.FloorMod(y) == PercentFloorMod(y, sp));
  RC_ASSERT(mod.FloorMod(y) >= 0);
  RC_ASSERT(mod.FloorMod(y) < sp);
}

// demo-v1 negative ids (near -2^62 the products wrap): every residue in [0, p).
TEST(HashDemo, NegativeIdsUseFloorMod_HASH4) {
  const Layout layout = LayoutFromJson(TinyDemoConfig(), 20, 2);
  const Ids ids = {-1, -3, kInt64Min, -(int64_t{1} << 62), -(int64_t{1} << 62) - 1, -7};
  const Ids rows = HashSequence(layout, ids);
  const LayerLayout& l = layout.layers[0];
  for (size_t t = 0; t < ids.size(); ++t) {
    for (int col = 0; col < layout.columns(); ++col) {
      const int64_t r = RowAt(layout, rows, t, 0, col);
      EXPECT_GE(r, l.offsets[static_cast<size_t>(col)]);
      EXPECT_LT(r, l.offsets[static_cast<size_t>(col)] + l.prime(col));
    }
  }
}

// §HASH.4 every row lies in [offset, offset + p) of its column.
RC_GTEST_PROP(HashRows, EveryRowInItsColumnRange_HASH4, ()) {
  const Layout layout = DrawLayout(DrawProfile());
  const Ids ids = DrawIds(layout);
  const Ids rows = HashSequence(layout, ids);
  RC_ASSERT(rows.size() == ids.size() * layout.layers.size() * static_cast<size_t>(layout.columns()));
  for (size_t t = 0; t < ids.size(); ++t) {
    for (size_t li = 0; li < layout.layers.size(); ++li) {
      const LayerLayout& l = layout.layers[li];
      for (int col = 0; col < layout.columns(); ++col) {
        const int64_t r = RowAt(layout, rows, t, li, col);
        RC_ASSERT(r >= l.offsets[static_cast<size_t>(col)]);
        RC_ASSERT(r < l.offsets[static_cast<size_t>(col)] + l.prime(col));
        RC_ASSERT(r < l.num_embeddings);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// §HASH.5 chunking and decode
// ---------------------------------------------------------------------------

RC_GTEST_PROP(HashChunking, AnySplitGivesOneShotRows_HASH5, ()) {
  const Layout layout = DrawLayout(DrawProfile());
  const Ids ids = DrawIds(layout);
  const std::vector<size_t> chunks = DrawChunks(ids.size());
  HashState state(layout);
  Ids rows;
  size_t at = 0;
  for (size_t c : chunks) {
    state.Append(std::span<const int64_t>(ids.data() + at, c), rows);
    at += c;
    RC_ASSERT(state.position() == static_cast<int64_t>(at));
  }
  RC_ASSERT(rows == HashSequence(layout, ids));
  // §HASH.5 history: the last min(position, max - 1) ids, oldest first, DEAD kept.
  const size_t h = std::min(ids.size(), static_cast<size_t>(layout.max_ngram - 1));
  RC_ASSERT(state.History() == Ids(ids.end() - static_cast<std::ptrdiff_t>(h), ids.end()));
}

RC_GTEST_PROP(HashChunking, PrefillThenTokenByTokenDecode_HASH5, ()) {
  const Layout layout = DrawLayout(DrawProfile());
  const Ids ids = DrawIds(layout);
  const size_t prefill = *rc::gen::inRange<size_t>(0, ids.size() + 1);
  HashState state(layout);
  Ids rows;
  state.Append(std::span<const int64_t>(ids.data(), prefill), rows);
  for (size_t t = prefill; t < ids.size(); ++t) state.Append(std::span<const int64_t>(ids.data() + t, 1), rows);
  RC_ASSERT(rows == HashSequence(layout, ids));
}

TEST(HashChunking, ShippedV41TokenByTokenEqualsOneShot_HASH5) {
  const Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);
  Ids ids;
  uint64_t s = 12345;
  for (int i = 0; i < 300; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    ids.push_back((s >> 33) % 7 == 0 ? kDead : static_cast<int64_t>((s >> 17) % 99092));
  }
  HashState state(layout);
  Ids rows;
  for (int64_t id : ids) state.Append(std::span<const int64_t>(&id, 1), rows);
  EXPECT_EQ(rows, HashSequence(layout, ids));
}

// ---------------------------------------------------------------------------
// §HASH.6 rollback and fork
// ---------------------------------------------------------------------------

RC_GTEST_PROP(HashRollback, FeedABRollbackBThenCEqualsFeedAThenC_HASH6, ()) {
  const Layout layout = DrawLayout(DrawProfile());
  const Ids a = DrawIds(layout, 20);
  const Ids b = DrawIds(layout, 12);
  const Ids c = DrawIds(layout, 12);
  const size_t capacity = b.size() + *rc::gen::inRange<size_t>(0, 4);

  HashState state(layout, capacity);
  const Ids rows_a = Feed(state, a);
  Feed(state, b);
  state.Rollback(b.size());
  RC_ASSERT(state.position() == static_cast<int64_t>(a.size()));
  const Ids rows_c = Feed(state, c);

  RC_ASSERT(Concat(rows_a, rows_c) == HashSequence(layout, Concat(a, c)));
  const Ids ac = Concat(a, c);
  const size_t h = std::min(ac.size(), static_cast<size_t>(layout.max_ngram - 1));
  RC_ASSERT(state.History() == Ids(ac.end() - static_cast<std::ptrdiff_t>(h), ac.end()));
}

// Several rollbacks and appends in any order against a model that keeps the
// whole sequence. The state retains the last max - 1 + capacity ids (hash.h);
// a rollback consumes retained ids and only later feeds replenish them, so a
// rollback by k is guaranteed when the ids preceding the last k are still held.
RC_GTEST_PROP(HashRollback, RandomAppendRollbackScriptMatchesModel_HASH6, ()) {
  const Layout layout = DrawLayout(DrawProfile());
  const size_t capacity = *rc::gen::inRange<size_t>(0, 6);
  const size_t look_back = static_cast<size_t>(layout.max_ngram - 1);
  HashState state(layout, capacity);
  Ids model;
  size_t retained = 0;  // how many of the latest ids the state is guaranteed to hold
  const int steps = *rc::gen::inRange(1, 12);
  for (int i = 0; i < steps; ++i) {
    if (*rc::gen::inRange(0, 3) == 0 && !model.empty()) {
      std::vector<size_t> allowed;
      for (size_t k = 0; k <= model.size(); ++k) {
        if (retained >= k + std::min(model.size() - k, look_back)) allowed.push_back(k);
      }
      const size_t k = *rc::gen::elementOf(allowed);
      state.Rollback(k);
      model.resize(model.size() - k);
      retained -= k;
    } else {
      const Ids more = DrawIds(layout, 6);
      const Ids rows = Feed(state, more);
      const Ids all = HashSequence(layout, Concat(model, more));
      RC_ASSERT(rows == Ids(all.end() - static_cast<std::ptrdiff_t>(rows.size()), all.end()));
      model = Concat(model, more);
      retained = std::min(retained + more.size(), look_back + capacity);
    }
    RC_ASSERT(state.position() == static_cast<int64_t>(model.size()));
    const size_t h = std::min(model.size(), look_back);
    RC_ASSERT(state.History() == Ids(model.end() - static_cast<std::ptrdiff_t>(h), model.end()));
  }
}

// k > capacity with a truncated history must be refused, and the state must be usable as before.
RC_GTEST_PROP(HashRollback, BeyondCapacityThrows_HASH6, ()) {
  const Layout layout = DrawLayout(DrawProfile());
  const size_t capacity = *rc::gen::inRange<size_t>(0, 4);
  const size_t keep = static_cast<size_t>(layout.max_ngram - 1) + capacity;
  // Enough ids that the oldest ones must have been dropped.
  Ids a;
  const size_t n = keep + 1 + *rc::gen::inRange<size_t>(0, 10);
  for (size_t i = 0; i < n; ++i) a.push_back(DrawId(layout));
  const size_t k = *rc::gen::inRange<size_t>(capacity + 1, n + 1);
  HashState state(layout, capacity);
  Feed(state, a);
  RC_ASSERT_THROWS_AS(state.Rollback(k), Error);
  // SHOULD leave the state unchanged.
  RC_ASSERT(state.position() == static_cast<int64_t>(n));
  const Ids c = DrawIds(layout, 6);
  const Ids rows_c = Feed(state, c);
  const Ids all = HashSequence(layout, Concat(a, c));
  RC_ASSERT(rows_c == Ids(all.end() - static_cast<std::ptrdiff_t>(rows_c.size()), all.end()));
}

RC_GTEST_PROP(HashRollback, MoreThanPositionThrows_HASH6, ()) {
  const Layout layout = DrawLayout(DrawProfile());
  const Ids a = DrawIds(layout, 10);
  HashState state(layout, *rc::gen::inRange<size_t>(0, 50));
  Feed(state, a);
  const size_t k = a.size() + *rc::gen::inRange<size_t>(1, 5);
  RC_ASSERT_THROWS_AS(state.Rollback(k), Error);
  RC_ASSERT(state.position() == static_cast<int64_t>(a.size()));
}

// Counts of 2^63 and more (size_t, from a C caller) are refused, not wrapped
// into a negative int64 that passes the position check; the state is unchanged.
TEST(HashRollback, HugeCountsThrow_HASH6) {
  const Layout layout = LayoutFromJson(TinyV41Config(), 20, 2);
  HashState state(layout, 4);
  Feed(state, Ids{5, 6, 7, 8});
  const Ids history = state.History();
  for (size_t k : {SIZE_MAX, SIZE_MAX - 1, size_t{1} << 63, (size_t{1} << 63) + 4}) {
    EXPECT_THROW(state.Rollback(k), Error) << k;
    EXPECT_EQ(state.position(), 4);
    EXPECT_EQ(state.History(), history);
  }
}

TEST(HashRollback, MessagesNameTheCount_HASH6) {
  const Layout layout = LayoutFromJson(TinyV41Config(), 20, 2);
  HashState state(layout, 1);
  Feed(state, Ids{1, 2, 3, 4, 5, 6});
  try {
    state.Rollback(7);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("7"));
  }
  try {
    state.Rollback(3);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("3"));
  }
  state.Rollback(0);  // a no-op
  EXPECT_EQ(state.position(), 6);
  state.Rollback(1);
  EXPECT_EQ(state.position(), 5);
  EXPECT_EQ(state.History(), (Ids{4, 5}));
}

// Within capacity the whole history is retained near the start: rolling back to
// position 0 is then possible even beyond the nominal capacity.
TEST(HashRollback, ShortSequenceFullyRetained_HASH6) {
  const Layout layout = LayoutFromJson(TinyV41Config(), 20, 2);
  HashState state(layout, 0);
  Feed(state, Ids{7, 8});
  state.Rollback(2);
  EXPECT_EQ(state.position(), 0);
  EXPECT_EQ(Feed(state, Ids{3, 4}), HashSequence(layout, Ids{3, 4}));
}

RC_GTEST_PROP(HashFork, CopiesAreIndependent_HASH6, ()) {
  const Layout layout = DrawLayout(DrawProfile());
  const Ids prefix = DrawIds(layout, 20);
  const Ids cont1 = DrawIds(layout, 10);
  const Ids cont2 = DrawIds(layout, 10);
  HashState original(layout, *rc::gen::inRange<size_t>(0, 4));
  const Ids prefix_rows = Feed(original, prefix);
  const Ids history_before = original.History();

  HashState fork = original;  // §HASH.6 fork by copy
  const Ids rows2 = Feed(fork, cont2);
  // The original is unaffected by the fork's feed ...
  RC_ASSERT(original.position() == static_cast<int64_t>(prefix.size()));
  RC_ASSERT(original.History() == history_before);
  const Ids rows1 = Feed(original, cont1);
  // ... and each gives the one-shot rows of prefix + its continuation.
  RC_ASSERT(Concat(prefix_rows, rows1) == HashSequence(layout, Concat(prefix, cont1)));
  RC_ASSERT(Concat(prefix_rows, rows2) == HashSequence(layout, Concat(prefix, cont2)));
  RC_ASSERT(fork.position() == static_cast<int64_t>(prefix.size() + cont2.size()));
}

// ---------------------------------------------------------------------------
// §HASH.1 CompressIds and CheckCompressedIds
// ---------------------------------------------------------------------------

// Raw 0,1 -> 0; 2 -> 1; 3 -> 2; 4 -> 1 (a 5-token tokenizer with V = 3).
TokenMap SmallMap() {
  return ParseTokenMap(nlohmann::json::array({0, 0, 1, 2, 1}), "<small map>");
}

nlohmann::json SmallV41Config() {
  // primes for base 5, 1 head, max 2: 5 -> num_embeddings 5.
  return {{"engram_layer_ids", {3}}, {"engram_max_ngram_size", 2}, {"engram_n_heads", 1},
          {"engram_vocab_size", 5}, {"engram_head_dim", 4},       {"engram_pad_token_id", 2},
          {"engram_num_embeddings", {5}}, {"engram_compressed_vocab_size", 3}};
}

nlohmann::json SmallDemoConfig() {
  return {{"layer_ids", {3}}, {"max_ngram_size", 2}, {"n_head_per_ngram", 1}, {"engram_vocab_size", {5}},
          {"n_embed_per_ngram", 1}, {"pad_id", 2}};
}

TEST(CompressIds, V41MapsIdsAndMakesMinusOneDead_HASH1) {
  const TokenMap tm = SmallMap();
  const Layout layout = LayoutFromJson(SmallV41Config(), tm.compressed_size, tm.map[2]);
  EXPECT_EQ(layout.pad, 1);
  EXPECT_EQ(CompressIds(layout, tm, Ids{0, 1, 2, 3, 4, -1}), (Ids{0, 0, 1, 2, 1, kDead}));
}

TEST(CompressIds, V41MaskZeroMakesDead_HASH1) {
  const TokenMap tm = SmallMap();
  const Layout layout = LayoutFromJson(SmallV41Config(), tm.compressed_size, 1);
  const std::vector<uint8_t> mask = {1, 0, 1, 0};
  EXPECT_EQ(CompressIds(layout, tm, Ids{3, 3, 4, -1}, mask), (Ids{2, kDead, 1, kDead}));
}

TEST(CompressIds, V41RefusesOtherNegativeIds_HASH1) {
  const TokenMap tm = SmallMap();
  const Layout layout = LayoutFromJson(SmallV41Config(), tm.compressed_size, 1);
  try {
    CompressIds(layout, tm, Ids{0, -2, 1});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("position 1"));
    EXPECT_THAT(e.what(), HasSubstr("-2"));
  }
}

TEST(CompressIds, V41RefusesIdsBeyondTheMap_HASH1) {
  const TokenMap tm = SmallMap();
  const Layout layout = LayoutFromJson(SmallV41Config(), tm.compressed_size, 1);
  try {
    CompressIds(layout, tm, Ids{0, 1, 2, 5});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("position 3"));
    EXPECT_THAT(e.what(), HasSubstr("5"));
  }
}

// §HASH.1: a masked position becomes DEAD *after* its raw id has been checked,
// so a masked -2 or a masked id beyond the map is still refused.
TEST(CompressIds, V41MaskedIdsAreStillChecked_HASH1) {
  const TokenMap tm = SmallMap();
  const Layout layout = LayoutFromJson(SmallV41Config(), tm.compressed_size, 1);
  const std::vector<uint8_t> mask = {1, 0};
  EXPECT_THROW(CompressIds(layout, tm, Ids{0, -2}, mask), Error);
  EXPECT_THROW(CompressIds(layout, tm, Ids{0, 5}, mask), Error);
}

TEST(CompressIds, MaskOfWrongLengthIsRefused_HASH1) {
  const TokenMap tm = SmallMap();
  const Layout layout = LayoutFromJson(SmallV41Config(), tm.compressed_size, 1);
  const std::vector<uint8_t> mask = {1, 1, 1};
  EXPECT_THROW(CompressIds(layout, tm, Ids{0, 1}, mask), Error);
}

TEST(CompressIds, DemoPassesNegativesThrough_HASH1) {
  const TokenMap tm = SmallMap();
  const Layout layout = LayoutFromJson(SmallDemoConfig(), tm.compressed_size, 1);
  EXPECT_EQ(CompressIds(layout, tm, Ids{-1, 3, -2, kInt64Min, 4}), (Ids{-1, 2, -2, kInt64Min, 1}));
  try {
    CompressIds(layout, tm, Ids{0, 9});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("position 1"));
    EXPECT_THAT(e.what(), HasSubstr("9"));
  }
}

// §HASH.1 "demo-v1 defines no mask; supplying one MUST be refused."
TEST(CompressIds, DemoRefusesAnyMask_HASH1) {
  const TokenMap tm = SmallMap();
  const Layout layout = LayoutFromJson(SmallDemoConfig(), tm.compressed_size, 1);
  const std::vector<uint8_t> zeros = {1, 0};
  EXPECT_THROW(CompressIds(layout, tm, Ids{0, 1}, zeros), Error);
  const std::vector<uint8_t> ones = {1, 1};
  EXPECT_THROW(CompressIds(layout, tm, Ids{0, 1}, ones), Error);
}

TEST(CheckCompressedIds, V41Refusals_HASH1) {
  const Layout layout = LayoutFromJson(SmallV41Config(), 3, 1);
  EXPECT_NO_THROW(CheckCompressedIds(layout, Ids{0, 1, 2, kDead}));
  for (const auto& [ids, pos, value] : std::vector<std::tuple<Ids, std::string, std::string>>{
           {{0, 3}, "position 1", "3"}, {{0, 1, -2}, "position 2", "-2"}, {{kInt64Min}, "position 0", "-9223372036854775808"},
           {{kInt64Max}, "position 0", "9223372036854775807"}}) {
    try {
      CheckCompressedIds(layout, ids);
      ADD_FAILURE() << "expected a refusal for " << value;
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(pos));
      EXPECT_THAT(e.what(), HasSubstr(value));
    }
  }
}

TEST(CheckCompressedIds, DemoRefusals_HASH1) {
  const Layout layout = LayoutFromJson(SmallDemoConfig(), 3, 1);
  EXPECT_NO_THROW(CheckCompressedIds(layout, Ids{0, 1, 2, -1, -2, kInt64Min}));
  try {
    CheckCompressedIds(layout, Ids{-5, 3});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("position 1"));
    EXPECT_THAT(e.what(), HasSubstr("3"));
  }
}

// A refused Append produces no rows and leaves the state as it was (§GEN.4).
TEST(CheckCompressedIds, RefusedAppendChangesNothing_HASH1) {
  const Layout layout = LayoutFromJson(SmallV41Config(), 3, 1);
  HashState state(layout);
  Ids rows = Feed(state, Ids{0, 2});
  const size_t before = rows.size();
  EXPECT_THROW(state.Append(Ids{1, 3}, rows), Error);
  EXPECT_EQ(rows.size(), before);
  EXPECT_EQ(state.position(), 2);
  EXPECT_EQ(Concat(rows, Feed(state, Ids{1})), HashSequence(layout, Ids{0, 2, 1}));
}

// ---------------------------------------------------------------------------
// The published V4.1 layout through the hash
// ---------------------------------------------------------------------------

TEST(HashV41, ShippedConfigRowsInRangeAndPadWindow_HASH4) {
  const Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);
  ASSERT_EQ(layout.columns(), 24);
  const Ids rows = HashSequence(layout, Ids{kDead, 0, 99091, kDead, 2});
  // positions 0 and 3 (DEAD) both hash as the all-pad window.
  EXPECT_EQ(PositionRows(layout, rows, 0), PositionRows(layout, rows, 3));
  for (size_t li = 0; li < 2; ++li) {
    for (int col = 0; col < 24; ++col) {
      for (size_t t = 0; t < 5; ++t) {
        const int64_t r = RowAt(layout, rows, t, li, col);
        EXPECT_GE(r, layout.layers[li].offsets[static_cast<size_t>(col)]);
        EXPECT_LT(r, layout.layers[li].offsets[static_cast<size_t>(col)] + layout.layers[li].prime(col));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Cross-check against conformance/crosscheck/numpy_hash.py
// ---------------------------------------------------------------------------

// python3 conformance/crosscheck/numpy_hash.py --out /tmp/h.json
// ENGRAM_NUMPY_HASH_CROSSCHECK=/tmp/h.json ./reference_tests --gtest_filter='NumpyCrosscheck.Hash*'
TEST(NumpyCrosscheck, HashFileIfPresent) {
  const char* path = std::getenv("ENGRAM_NUMPY_HASH_CROSSCHECK");
  if (path == nullptr || *path == '\0') GTEST_SKIP() << "ENGRAM_NUMPY_HASH_CROSSCHECK is not set";
  const nlohmann::json doc = ReadJsonFile(path, engram::InputKind::kVectorFile);
  ASSERT_TRUE(doc.contains("cases"));
  size_t n_cases = 0, n_v41 = 0, n_positions = 0, n_values = 0;
  for (size_t i = 0; i < doc["cases"].size(); ++i) {
    const nlohmann::json& c = doc["cases"][i];
    SCOPED_TRACE("case " + std::to_string(i) + " (" + c["profile"].get<std::string>() + ")");
    const std::optional<Profile> profile = ParseProfile(c["profile"].get<std::string>());
    ASSERT_TRUE(profile.has_value());
    // Detection must agree with the profile the case was written for (§CFG.1).
    const EngramConfig config = ParseConfig(c["config"], "numpy case " + std::to_string(i));
    ASSERT_EQ(config.profile, *profile);
    const Layout layout = BuildLayout(config, c["compressed_vocab_size"].get<int64_t>(), c["compressed_pad"].get<int64_t>());
    const Ids ids = c["ids"].get<Ids>();
    Ids expected;
    for (const auto& pos : c["rows"]) {
      for (const auto& layer : pos) {
        for (const auto& v : layer) expected.push_back(v.get<int64_t>());
      }
    }
    const Ids rows = HashSequence(layout, ids);
    ASSERT_EQ(rows.size(), expected.size());
    for (size_t k = 0; k < rows.size(); ++k) {
      const size_t per = layout.layers.size() * static_cast<size_t>(layout.columns());
      ASSERT_EQ(rows[k], expected[k]) << "position " << k / per << " layer " << (k % per) / static_cast<size_t>(layout.columns())
                                      << " column " << k % static_cast<size_t>(layout.columns());
    }
    // And token by token (§HASH.5).
    HashState state(layout);
    Ids step_rows;
    for (int64_t id : ids) state.Append(std::span<const int64_t>(&id, 1), step_rows);
    ASSERT_EQ(step_rows, expected);
    ++n_cases;
    n_v41 += *profile == Profile::kV41 ? 1 : 0;
    n_positions += ids.size();
    n_values += rows.size();
  }
  std::cout << "[numpy hash crosscheck] " << n_cases << " cases (" << n_v41 << " v4.1), " << n_positions
            << " positions, " << n_values << " row ids equal\n";
  RecordProperty("cases", static_cast<int>(n_cases));
  RecordProperty("row_ids", static_cast<int>(n_values));
  EXPECT_GT(n_cases, 0u);
}

}  // namespace
}  // namespace engram
