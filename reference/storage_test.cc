// Tests for spec/storage.md (§STO.1-§STO.10).
//
// Expected values never come from the code under test: they are derived by
// hand from the E4M3fn / E8M0 / bf16 definitions (the derivation is in the
// comment beside each literal), computed by an integer-only exact-rounding
// oracle written here (ExactDecode), read from the numpy/ml_dtypes oracle file
// of conformance/crosscheck/numpy_storage.py, or stated as laws (sharded ==
// unsharded, partitions, determinism).
#include "reference/storage.h"
#include "base/hex.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/config.h"
#include "base/error.h"
#include "base/splitmix64.h"

namespace engram {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Real V4.1 figures (spec/sources.md [SRC-V41-CONFIG]): rows of layer 1's table, row width.
constexpr int64_t kV41Rows = 384006168;
constexpr int64_t kHeadDim = 256;

bool IsNegZero(uint16_t b) { return b == 0x8000; }

// ---------------------------------------------------------------------------
// An independent oracle: exact value sign * M * 2^E (M < 16 an integer) rounded
// once to bf16 with integer arithmetic only (no float operations at all).
uint16_t ExactDecode(uint8_t code, uint8_t scale) {
  if ((code & 0x7F) == 0x7F || scale == 0xFF) return kBf16NaN;
  const uint16_t sign = (code & 0x80) ? 0x8000 : 0;
  const int e = (code >> 3) & 15, m = code & 7;
  const int M = e == 0 ? m : 8 + m;
  const int E = (e == 0 ? -9 : e - 10) + (scale - 127);
  if (M == 0) return sign;
  int bits = 0;
  while ((M >> bits) != 0) ++bits;
  const int top = E + bits - 1;           // 2^top <= |value| < 2^(top+1)
  if (top >= 128) return sign | 0x7F80;   // >= 2^128: overflow (a 4-bit significand below 2^128 fits)
  const int q = std::max(top, -126) - 7;  // quantum of bf16 at this magnitude (2^-133 when subnormal)
  uint32_t n;                             // |value| / 2^q, rounded to nearest even
  if (E >= q) {
    n = static_cast<uint32_t>(M) << (E - q);
  } else {
    const int shift = q - E;
    if (shift > 5) {
      n = 0;  // |value| < 2^(q-1): below half a quantum
    } else {
      n = static_cast<uint32_t>(M) >> shift;
      const uint32_t rem = static_cast<uint32_t>(M) & ((1u << shift) - 1), half = 1u << (shift - 1);
      if (rem > half || (rem == half && (n & 1))) ++n;
    }
  }
  if (top < -126 || n < 128) return sign | static_cast<uint16_t>(n);  // subnormal (carry into 0x80 is the min normal)
  return sign | static_cast<uint16_t>(((top + 127) << 7) | (n - 128));
}

// ---------------------------------------------------------------------------
// §STO.1 E4M3fn

TEST(StorageE4M3, HandDerivedValues_STO1) {
  EXPECT_EQ(DecodeE4M3(0x00), 0.0f);
  EXPECT_FALSE(std::signbit(DecodeE4M3(0x00)));
  EXPECT_EQ(DecodeE4M3(0x80), 0.0f);  // -0
  EXPECT_TRUE(std::signbit(DecodeE4M3(0x80)));
  EXPECT_EQ(DecodeE4M3(0x01), std::ldexp(1.0f, -9));        // e=0, m=1: 1 * 2^-9 (smallest subnormal)
  EXPECT_EQ(DecodeE4M3(0x07), 7.0f * std::ldexp(1.0f, -9));  // e=0, m=7
  EXPECT_EQ(DecodeE4M3(0x08), std::ldexp(1.0f, -6));        // e=1, m=0: 1.0 * 2^(1-7)
  EXPECT_EQ(DecodeE4M3(0x38), 1.0f);                        // e=7, m=0
  EXPECT_EQ(DecodeE4M3(0x3C), 1.5f);                        // e=7, m=4: 1.5
  EXPECT_EQ(DecodeE4M3(0x40), 2.0f);                        // e=8
  EXPECT_EQ(DecodeE4M3(0x7E), 448.0f);                      // e=15, m=6: 1.75 * 2^8 (largest)
  EXPECT_EQ(DecodeE4M3(0xFE), -448.0f);
  EXPECT_EQ(DecodeE4M3(0x78), 256.0f);  // e=15, m=0 is a number, not an infinity
  EXPECT_TRUE(std::isnan(DecodeE4M3(0x7F)));
  EXPECT_TRUE(std::isnan(DecodeE4M3(0xFF)));
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    const float v = DecodeE4M3(static_cast<uint8_t>(c));
    nans += std::isnan(v);
    EXPECT_FALSE(std::isinf(v)) << c;
    if (!std::isnan(v)) EXPECT_EQ(std::signbit(v), (c & 0x80) != 0) << c;
  }
  EXPECT_EQ(nans, 2);
}

// ---------------------------------------------------------------------------
// §STO.2 E8M0

TEST(StorageE8M0, HandDerivedValues_STO2) {
  EXPECT_EQ(DecodeE8M0(127), 1.0);
  EXPECT_EQ(DecodeE8M0(128), 2.0);
  EXPECT_EQ(DecodeE8M0(0), std::ldexp(1.0, -127));  // not 0.0 (the `byte << 23` bug)
  EXPECT_GT(DecodeE8M0(0), 0.0);
  EXPECT_EQ(DecodeE8M0(254), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(DecodeE8M0(0xFF)));  // not inf
  // 2^-127 is a float32 subnormal (bits 0x00400000): the float conversion is exact.
  const float f = static_cast<float>(DecodeE8M0(0));
  uint32_t u;
  std::memcpy(&u, &f, 4);
  EXPECT_EQ(u, 0x00400000u);
}

// ---------------------------------------------------------------------------
// §STO.3 bf16 rounding and element decode

TEST(StorageBf16, RoundToNearestEven_STO3) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3F80);                            // 1.0: exponent 127 << 7
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);     // halfway 1 .. 1+2^-7, even is 1.0
  EXPECT_EQ(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // halfway 1+2^-7 .. 1+2^-6: even is up
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);  // just above halfway
  EXPECT_EQ(FloatToBf16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(FloatToBf16(std::ldexp(1.0f, -133)), 0x0001);  // smallest bf16 subnormal
  EXPECT_EQ(FloatToBf16(std::ldexp(1.0f, -134)), 0x0000);  // half of it: tie to even 0
  EXPECT_EQ(FloatToBf16(-std::ldexp(1.0f, -140)), 0x8000);  // underflow keeps the sign
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7F80);  // (2-2^-23)*2^127 >= bf16 max + half ulp
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(FloatToBf16(std::nanf("")), kBf16NaN);
  EXPECT_EQ(FloatToBf16(-std::nanf("")), kBf16NaN);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const uint16_t v = static_cast<uint16_t>(b);
    const float f = Bf16ToFloat(v);
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToBf16(f), v) << b;  // every bf16 value is a float and converts back unchanged
  }
}

TEST(StorageDecode, AllPairsEqualExactIntegerOracle_STO3) {
  size_t n = 0, nan = 0, inf = 0, zero = 0, sub = 0;
  for (int s = 0; s < 256; ++s) {
    for (int c = 0; c < 256; ++c) {
      const uint16_t got = DecodeElement(static_cast<uint8_t>(c), static_cast<uint8_t>(s));
      const uint16_t want = ExactDecode(static_cast<uint8_t>(c), static_cast<uint8_t>(s));
      ASSERT_EQ(got, want) << "code 0x" << std::hex << c << " scale 0x" << s;
      ++n;
      nan += got == kBf16NaN;
      inf += (got & 0x7FFF) == 0x7F80;
      zero += (got & 0x7FFF) == 0;
      sub += (got & 0x7F80) == 0 && (got & 0x7F) != 0;
    }
  }
  EXPECT_EQ(n, 65536u);
  // NaN: 2 codes x 255 scales + 256 codes with scale 0xFF = 766.
  EXPECT_EQ(nan, 766u);
  // Every class occurs (the exhaustive vectors exercise each).
  EXPECT_GT(inf, 0u);
  EXPECT_GT(zero, 2u * 255u);
  EXPECT_GT(sub, 0u);
}

TEST(StorageDecode, HandDerivedProducts_STO3) {
  EXPECT_EQ(DecodeElement(0x38, 127), 0x3F80);  // 1.0 * 2^0
  EXPECT_EQ(DecodeElement(0x38, 0x00), 0x0040);  // 1.0 * 2^-127 = 64 * 2^-133: bf16 subnormal 0x40
  EXPECT_EQ(DecodeElement(0x01, 0x00), 0x0000);  // 2^-9 * 2^-127 = 2^-136 < half of 2^-133: +0
  EXPECT_EQ(DecodeElement(0x81, 0x00), 0x8000);  // the same, negative: -0
  EXPECT_EQ(DecodeElement(0x04, 0x00), 0x0000);  // 4 * 2^-136 = 2^-134: exactly half a quantum, even = 0
  EXPECT_EQ(DecodeElement(0x0C, 0x00), 0x0002);  // 1.5*2^-6*2^-127 = 3*2^-134 = 1.5 quanta: tie to even 2
  EXPECT_EQ(DecodeElement(0x7E, 254), 0x7F80);  // 448 * 2^127 = 1.75 * 2^135: overflow to +inf
  EXPECT_EQ(DecodeElement(0xFE, 247), 0xFF80);  // -1.75 * 2^(8+120) = -1.75 * 2^128: -inf
  EXPECT_EQ(DecodeElement(0x7E, 246), 0x7F60);  // 1.75 * 2^127: finite, exponent 254, fraction 0x60
  EXPECT_EQ(DecodeElement(0x80, 200), 0x8000);  // -0 times any finite scale stays -0
  EXPECT_EQ(DecodeElement(0x00, 0xFF), kBf16NaN);  // 0 * NaN = NaN
  EXPECT_EQ(DecodeElement(0x7F, 127), kBf16NaN);
}

TEST(StorageDecode, RowUsesOneScalePer32Elements_STO3) {
  RowBytes row;
  row.codes.assign(64, 0x38);  // 1.0 everywhere
  row.scales = {127, 128};
  const std::vector<uint16_t> v = DecodeRow(row);
  for (int j = 0; j < 64; ++j) EXPECT_EQ(v[j], j < 32 ? 0x3F80 : 0x4000) << j;  // 1.0 then 2.0
  row.scales = {127};
  EXPECT_THROW(DecodeRow(row), Error);
}

TEST(StorageBf16, AddKeepsValuesAndTurnsNegativeZeroPositive_STO7) {
  EXPECT_EQ(Bf16Add(0x8000, 0x0000), 0x0000);  // -0 + +0 = +0 under RNE
  EXPECT_EQ(Bf16Add(0x0000, 0x8000), 0x0000);
  EXPECT_EQ(Bf16Add(0x8000, 0x8000), 0x8000);  // -0 + -0 = -0
  EXPECT_EQ(Bf16Add(0xC000, 0x0000), 0xC000);  // x + 0 = x
  EXPECT_EQ(Bf16Add(0x0001, 0x0000), 0x0001);  // subnormal survives
  EXPECT_EQ(Bf16Add(0x7F80, 0x0000), 0x7F80);
  EXPECT_EQ(Bf16Add(kBf16NaN, 0x0000), kBf16NaN);
  EXPECT_EQ(Bf16Add(0x3F80, 0x3F80), 0x4000);  // 1 + 1 = 2
  EXPECT_TRUE(Bf16Match(0x7FC0, 0xFFFF));       // any NaN matches any NaN
  EXPECT_FALSE(Bf16Match(0x0000, 0x8000));      // zero signs are compared
}

// ---------------------------------------------------------------------------
// §STO.5 synthetic tables

TEST(StorageSynthetic, WordIsTheSplitMix64StreamFromSeedXorRowGolden_STO5) {
  // The k-th word of a row is the (k+1)-th output of plain sequential
  // SplitMix64 started from seed ^ (row * 0x9E3779B97F4A7C15).
  // (The generator itself is checked against known answers in base/splitmix64_test.cc.)
  for (int64_t row : {int64_t{0}, int64_t{1}, int64_t{77}, kV41Rows - 1}) {
    engram::SplitMix64 g{12345 ^ (static_cast<uint64_t>(row) * engram::kSplitMix64Golden)};
    for (uint64_t k = 0; k < 10; ++k) EXPECT_EQ(SyntheticWord(12345, row, k), g.Next()) << row << " " << k;
  }
}

TEST(StorageSynthetic, OrdinaryRowsAreFiniteAndInRange_STO5) {
  auto t = SyntheticTable(7, kV41Rows, kHeadDim);
  EXPECT_EQ(t->rows(), kV41Rows);
  size_t neg_zero_rows = 0;
  for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{1000}, kV41Rows / 2, kV41Rows - 1}) {
    const RowBytes b = t->Row(r);
    ASSERT_EQ(b.codes.size(), 256u);
    ASSERT_EQ(b.scales.size(), 8u);
    for (uint8_t s : b.scales) EXPECT_TRUE(s >= 110 && s <= 130) << int(s);
    for (uint8_t c : b.codes) EXPECT_NE(c & 0x7F, 0x7F);
    bool nz = false;
    for (uint16_t v : DecodeRow(b)) {
      EXPECT_FALSE(std::isnan(Bf16ToFloat(v)) || std::isinf(Bf16ToFloat(v)));
      nz |= IsNegZero(v);
    }
    neg_zero_rows += nz;
    EXPECT_EQ(b.codes, t->Row(r).codes);  // deterministic
  }
  EXPECT_NE(t->Row(0).codes, t->Row(1).codes);
  EXPECT_NE(SyntheticTable(8, kV41Rows, kHeadDim)->Row(0).codes, t->Row(0).codes);
  EXPECT_THROW(t->Row(kV41Rows), Error);
  EXPECT_THROW(t->Row(-1), Error);
}

TEST(StorageSynthetic, EdgeRowsAreOneInEightAndHitEveryEdge_STO5) {
  auto t = SyntheticTable(3, 1 << 20, kHeadDim, true);
  int64_t edge = 0;
  bool nan_code = false, scale00 = false, scaleff = false, underflow = false, neg_zero = false, subnormal = false;
  const int64_t n = 20000;
  for (int64_t r = 0; r < n; ++r) {
    if (!SyntheticIsEdgeRow(3, r)) continue;
    ++edge;
    const RowBytes b = t->Row(r);
    for (uint8_t s : b.scales) {
      scale00 |= s == 0x00;
      scaleff |= s == 0xFF;
    }
    for (uint8_t c : b.codes) nan_code |= (c & 0x7F) == 0x7F;
    const std::vector<uint16_t> v = DecodeRow(b);
    for (size_t j = 0; j < v.size(); ++j) {
      neg_zero |= IsNegZero(v[j]);
      subnormal |= (v[j] & 0x7F80) == 0 && (v[j] & 0x7F) != 0;
      underflow |= (v[j] & 0x7FFF) == 0 && (b.codes[j] & 0x7F) != 0;
    }
  }
  // Binomial(20000, 1/8): mean 2500, sd ~47; 6 sd bounds.
  EXPECT_GT(edge, 2500 - 282);
  EXPECT_LT(edge, 2500 + 282);
  EXPECT_TRUE(nan_code && scale00 && scaleff && underflow && neg_zero && subnormal);
}

TEST(StorageSynthetic, FloatTableValuesAreExact24BitFractions_STO10) {
  auto t = SyntheticFloatTable(0, 1000, 64);
  double sum = 0;
  for (int64_t r = 0; r < 1000; ++r) {
    for (float v : t->Row(r)) {
      ASSERT_GE(v, -1.0f);
      ASSERT_LT(v, 1.0f);
      const double scaled = static_cast<double>(v) * 8388608.0;  // * 2^23
      ASSERT_EQ(scaled, std::floor(scaled));
      sum += v;
    }
  }
  EXPECT_LT(std::fabs(sum / 64000.0), 0.02);  // centred
  const std::vector<int64_t> ids = {5, 0, 999};
  const std::vector<float> got = LookupFloatRows(*t, ids);
  ASSERT_EQ(got.size(), 3u * 64u);
  EXPECT_EQ(std::vector<float>(got.begin() + 64, got.begin() + 128), t->Row(0));
  const std::vector<int64_t> bad = {1000};
  EXPECT_THROW(LookupFloatRows(*t, bad), Error);
}

// ---------------------------------------------------------------------------
// §STO.6 lookup

TEST(StorageLookup, RowsInOrderAndIdsChecked_STO6) {
  auto t = SyntheticTable(1, kV41Rows, kHeadDim);
  const std::vector<int64_t> ids = {kV41Rows - 1, 0, 0, 123456789};
  const std::vector<uint16_t> out = LookupRows(*t, ids);
  ASSERT_EQ(out.size(), 4u * 256u);
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::vector<uint16_t> row = DecodeRow(t->Row(ids[i]));
    EXPECT_TRUE(std::equal(row.begin(), row.end(), out.begin() + static_cast<std::ptrdiff_t>(i * 256)));
  }
  const std::vector<int64_t> bad = {0, kV41Rows};
  try {
    LookupRows(*t, bad);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("row id #1 is 384006168, outside [0, 384006168)"));
  }
}

// ---------------------------------------------------------------------------
// §STO.7 row sharding

TEST(StorageShard, RealSizePartsByHand_STO7) {
  // 384006168 = 2^3 * 3 * 7 * ... : divisible by 1, 2, 3, 4, 7, 8; not by 16 or 64.
  EXPECT_EQ(ShardPart(kV41Rows, 8), 48000771);
  EXPECT_EQ(ShardPart(kV41Rows, 7), 54858024);
  EXPECT_EQ(ShardPart(kV41Rows, 16), 24000386);  // ceil(24000385.5)
  EXPECT_EQ(RowShard(kV41Rows, 15, 16).begin, 360005790);  // 15 * 24000386
  EXPECT_EQ(RowShard(kV41Rows, 15, 16).end, kV41Rows);     // last shard: 24000378 rows
  EXPECT_EQ(ShardPart(kV41Rows, 64), 6000097);  // ceil(6000096.375)
  EXPECT_EQ(RowShard(kV41Rows, 63, 64).end - RowShard(kV41Rows, 63, 64).begin, kV41Rows - 63 * 6000097);
  EXPECT_EQ(OwnerRank(kV41Rows, 16, 360005789), 14);
  EXPECT_EQ(OwnerRank(kV41Rows, 16, 360005790), 15);
  // Tiny table: 5 rows over 4 ranks: part 2, the last rank owns nothing.
  EXPECT_EQ(RowShard(5, 2, 4).begin, 4);
  EXPECT_EQ(RowShard(5, 2, 4).end, 5);
  EXPECT_EQ(RowShard(5, 3, 4).begin, RowShard(5, 3, 4).end);
  EXPECT_THROW(RowShard(5, 4, 4), Error);
  EXPECT_THROW(RowShard(5, 0, 0), Error);
}

RC_GTEST_PROP(StorageShard, ShardsPartitionTheRows_STO7, ()) {
  const int64_t rows = *rc::gen::inRange<int64_t>(1, 100000);
  const int world = *rc::gen::inRange(1, 65);
  int64_t next = 0;
  for (int r = 0; r < world; ++r) {
    const Shard s = RowShard(rows, r, world);
    RC_ASSERT(s.begin == std::min(next, rows));
    RC_ASSERT(s.end >= s.begin);
    if (s.end > s.begin) {
      RC_ASSERT(OwnerRank(rows, world, s.begin) == r);
      RC_ASSERT(OwnerRank(rows, world, s.end - 1) == r);
    }
    next = s.end;
  }
  RC_ASSERT(next == rows);
}

// The law of §STO.7: the bf16 sum of all ranks' masked lookups equals the
// unsharded lookup, except that -0 becomes +0 whenever world >= 2.
void CheckReduceLaw(const RowSource& t, const std::vector<int64_t>& ids, int world) {
  const std::vector<uint16_t> whole = LookupRows(t, ids);
  std::vector<std::vector<uint16_t>> parts;
  for (int r = 0; r < world; ++r) parts.push_back(ShardLookup(t, ids, r, world));
  // Each element is nonzero on at most one rank; masked elements are +0.
  for (size_t k = 0; k < whole.size(); ++k) {
    const int64_t id = ids[k / static_cast<size_t>(t.head_dim())];
    const int owner = OwnerRank(t.rows(), world, id);
    for (int r = 0; r < world; ++r) {
      if (r == owner) {
        RC_ASSERT(parts[static_cast<size_t>(r)][k] == whole[k]);
      } else {
        RC_ASSERT(parts[static_cast<size_t>(r)][k] == 0);
      }
    }
  }
  const std::vector<uint16_t> sum = ReduceShards(parts);
  RC_ASSERT(sum.size() == whole.size());
  for (size_t k = 0; k < whole.size(); ++k) {
    const uint16_t want = (world >= 2 && whole[k] == 0x8000) ? 0x0000 : whole[k];
    RC_ASSERT(sum[k] == want);
  }
}

RC_GTEST_PROP(StorageShard, ReducedShardsEqualUnshardedEveryWorld_STO7, ()) {
  const bool edges = *rc::gen::arbitrary<bool>();
  const int64_t rows = *rc::gen::element<int64_t>(1, 2, 5, 63, 64, 65, 1000, 4097, kV41Rows);
  auto t = SyntheticTable(*rc::gen::arbitrary<uint64_t>(), rows, 32, edges);
  const size_t n = *rc::gen::inRange<size_t>(1, 12);
  std::vector<int64_t> ids;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t u = *rc::gen::arbitrary<uint64_t>();
    ids.push_back(i == 0 ? 0 : i == 1 ? rows - 1 : static_cast<int64_t>(u % static_cast<uint64_t>(rows)));
  }
  for (int world = 1; world <= 64; ++world) CheckReduceLaw(*t, ids, world);
}

TEST(StorageShard, NegativeZeroTurnsPositiveOnlyWhenReduced_STO7) {
  // A packed one-row table whose codes are all 0x80 (-0).
  const fs::path p = fs::temp_directory_path() / ("engram_sto_negzero_" + std::to_string(::getpid()));
  struct RemoveAtExit {
    fs::path p;
    ~RemoveAtExit() {
      std::error_code ec;
      fs::remove(p, ec);
    }
  } remove_at_exit{p};
  {
    std::ofstream f(p, std::ios::binary);
    const std::string codes(32, '\x80'), scale(1, '\x7f');
    f << codes << scale << codes << scale;
  }
  auto t = OpenPackedRows(p, 32);
  const std::vector<int64_t> ids = {1};
  EXPECT_EQ(LookupRows(*t, ids)[0], 0x8000);
  EXPECT_EQ(ReduceShards({ShardLookup(*t, ids, 0, 1)})[0], 0x8000);  // world 1: no all_reduce, -0 kept
  EXPECT_EQ(ReduceShards({ShardLookup(*t, ids, 0, 2), ShardLookup(*t, ids, 1, 2)})[0], 0x0000);  // +0
  EXPECT_EQ(HeadShardLookup(*t, ids, 1, 0, 2)[0], 0x8000);  // head sharding gathers: -0 kept
}

TEST(StorageShard, LocalIdsReadAsGlobalDiffer_STO7) {
  // The divergence "TP shards read from row 0": rank 1 of 2 reading row
  // id - begin of the *global* table returns another row's values.
  auto t = SyntheticTable(11, kV41Rows, kHeadDim);
  const Shard s = RowShard(kV41Rows, 1, 2);
  const std::vector<int64_t> ids = {s.begin + 5};
  const std::vector<int64_t> wrong = {5};
  EXPECT_EQ(ShardLookup(*t, ids, 1, 2), LookupRows(*t, ids));
  EXPECT_NE(LookupRows(*t, wrong), LookupRows(*t, ids));
}

// ---------------------------------------------------------------------------
// §STO.8 head sharding

TEST(StorageHeads, HeadRangesByHand_STO8) {
  EXPECT_EQ(HeadShard(24, 0, 7).begin, 0);  // ceil(24/7) = 4 heads per rank
  EXPECT_EQ(HeadShard(24, 5, 7).end, 24);   // ranks 0..5 own 4 each
  EXPECT_EQ(HeadShard(24, 6, 7).begin, HeadShard(24, 6, 7).end);  // rank 6 owns none
  EXPECT_EQ(HeadShard(24, 63, 64).begin, 24);  // ceil(24/64) = 1: ranks 24..63 own none
  EXPECT_EQ(HeadShard(24, 23, 64).end, 24);
}

RC_GTEST_PROP(StorageHeads, GatheredHeadsEqualUnshardedBitForBit_STO8, ()) {
  const int64_t rows = *rc::gen::element<int64_t>(24, 1000, kV41Rows);
  auto t = SyntheticTable(*rc::gen::arbitrary<uint64_t>(), rows, 32, *rc::gen::arbitrary<bool>());
  const int64_t positions = *rc::gen::inRange<int64_t>(1, 4);
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < positions * 24; ++i) ids.push_back(static_cast<int64_t>(*rc::gen::arbitrary<uint64_t>() % static_cast<uint64_t>(rows)));
  const std::vector<uint16_t> whole = LookupRows(*t, ids);
  for (int world = 1; world <= 64; ++world) {
    std::vector<std::vector<uint16_t>> parts;
    for (int r = 0; r < world; ++r) parts.push_back(HeadShardLookup(*t, ids, 24, r, world));
    RC_ASSERT(GatherHeads(parts, positions, 24, world, 32) == whole);
  }
}

// ---------------------------------------------------------------------------
// §STO.4 files: good and bad inputs

class StorageFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("engram_sto_files_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A safetensors file: 8-byte LE length, the header text, then `data`.
  fs::path Safetensors(const std::string& name, const std::string& header, const std::string& data,
                       int64_t claimed_length = -1) {
    const fs::path p = dir_ / name;
    std::ofstream f(p, std::ios::binary);
    uint64_t n = claimed_length < 0 ? header.size() : static_cast<uint64_t>(claimed_length);
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xFF));
    f << header << data;
    return p;
  }
  // A valid 3-row, head_dim-32 table under prefix "t": codes 3*32 bytes then 3 scales.
  static std::string Header(const std::string& wdtype = "F8_E4M3", const std::string& wshape = "[3,32]",
                            const std::string& woff = "[0,96]", const std::string& sdtype = "F8_E8M0",
                            const std::string& sshape = "[3,1]", const std::string& soff = "[96,99]") {
    return R"({"__metadata__":{"format":"pt"},"t.weight":{"dtype":")" + wdtype + R"(","shape":)" + wshape +
           R"(,"data_offsets":)" + woff + R"(},"t.scale":{"dtype":")" + sdtype + R"(","shape":)" + sshape +
           R"(,"data_offsets":)" + soff + "}}";
  }
  static std::string Data() {
    std::string d;
    for (int i = 0; i < 96; ++i) d += static_cast<char>(i);
    d += std::string("\x7f\x80\x00", 3);
    return d;
  }
  std::string ErrorOf(const fs::path& p, const std::string& prefix = "t") {
    try {
      OpenSafetensors(p, prefix);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }
  fs::path dir_;
};

TEST_F(StorageFiles, SafetensorsReadsRowsAtTheirOffsets_STO4) {
  auto t = OpenSafetensors(Safetensors("ok.safetensors", Header(), Data()), "t");
  EXPECT_EQ(t->rows(), 3);
  EXPECT_EQ(t->head_dim(), 32);
  const RowBytes r1 = t->Row(1);
  EXPECT_EQ(r1.codes.front(), 32);  // row 1 codes are bytes 32 .. 63 of the data section
  EXPECT_EQ(r1.codes.back(), 63);
  EXPECT_EQ(r1.scales, std::vector<uint8_t>{0x80});  // scale of row 1: data byte 97
  EXPECT_EQ(t->Row(2).scales, std::vector<uint8_t>{0x00});
  EXPECT_THROW(t->Row(3), Error);
}

TEST_F(StorageFiles, SafetensorsBadInputsNameFileTensorField_STO4) {
  const fs::path tiny = dir_ / "tiny.safetensors";
  std::ofstream(tiny, std::ios::binary) << "abc";
  EXPECT_THAT(ErrorOf(tiny), HasSubstr("tiny.safetensors: truncated: 3 bytes"));

  EXPECT_THAT(ErrorOf(Safetensors("len.safetensors", Header(), Data(), 100000)),
              HasSubstr("len.safetensors: header length 100000 runs past the end of the file"));
  EXPECT_THAT(ErrorOf(Safetensors("json.safetensors", "{\"t.weight\": [", "")),
              HasSubstr("json.safetensors: header: malformed JSON"));
  EXPECT_THAT(ErrorOf(Safetensors("dtype.safetensors", Header("BF16"), Data())),
              HasSubstr("tensor 't.weight': field 'dtype' is \"BF16\", expected \"F8_E4M3\""));
  EXPECT_THAT(ErrorOf(Safetensors("sdtype.safetensors", Header("F8_E4M3", "[3,32]", "[0,96]", "F32"), Data())),
              HasSubstr("tensor 't.scale': field 'dtype' is \"F32\", expected \"F8_E8M0\""));
  EXPECT_THAT(ErrorOf(Safetensors("shape.safetensors", Header("F8_E4M3", "[3,32]", "[0,96]", "F8_E8M0", "[3,2]", "[96,102]"),
                                  Data() + "xxx")),
              HasSubstr("tensor 't.scale': field 'shape' is [3, 2], expected [3, 1]"));
  EXPECT_THAT(ErrorOf(Safetensors("rank.safetensors", Header("F8_E4M3", "[96]"), Data())),
              HasSubstr("tensor 't.weight': field 'shape' is [96], expected [rows >= 1, head_dim]"));
  EXPECT_THAT(ErrorOf(Safetensors("hd.safetensors", Header("F8_E4M3", "[4,24]"), Data())),
              HasSubstr("tensor 't.weight': field 'shape'[1]: head_dim 24 is not a positive multiple of 32"));
  EXPECT_THAT(ErrorOf(Safetensors("missing.safetensors", Header(), Data()), "layers.1.engram.embed"),
              HasSubstr("tensor 'layers.1.engram.embed.weight' not found in the header (2 tensors: t.scale, t.weight)"));
  EXPECT_THAT(ErrorOf(Safetensors("off.safetensors", Header("F8_E4M3", "[3,32]", "[0,96]", "F8_E8M0", "[3,1]", "[96,200]"),
                                  Data())),
              HasSubstr("tensor 't.scale': field 'data_offsets' [96, 200] runs past the end of the data section (99 bytes)"));
  EXPECT_THAT(ErrorOf(Safetensors("span.safetensors", Header("F8_E4M3", "[3,32]", "[0,90]"), Data())),
              HasSubstr("tensor 't.weight': field 'data_offsets' [0, 90] spans 90 bytes, but shape [3, 32] of 1-byte "
                        "elements needs 96"));
  EXPECT_THAT(ErrorOf(Safetensors("neg.safetensors", Header("F8_E4M3", "[3,32]", "[-1,96]"), Data())),
              HasSubstr("tensor 't.weight': field 'data_offsets'[0] is -1, expected a non-negative 64-bit integer"));
  EXPECT_THAT(ErrorOf(Safetensors("order.safetensors", Header("F8_E4M3", "[3,32]", "[96,0]"), Data())),
              HasSubstr("field 'data_offsets' [96, 0] has begin > end"));
  EXPECT_THAT(ErrorOf(dir_ / "nope.safetensors"), HasSubstr("nope.safetensors: cannot open"));
}

TEST_F(StorageFiles, PackedRowsLayoutAndBadSizes_STO4) {
  const fs::path p = dir_ / "rows.packed";
  {
    std::ofstream f(p, std::ios::binary);
    for (int r = 0; r < 3; ++r) {
      f << std::string(32, static_cast<char>(0x38 + r)) << static_cast<char>(127 + r);  // 33-byte rows
    }
  }
  auto t = OpenPackedRows(p, 32);
  EXPECT_EQ(t->rows(), 3);
  const std::vector<int64_t> ids = {2};
  // Row 2: code 0x3A = 1.25 (e=7, m=2), scale 129 = 2^2 -> 5.0 = 0x40A0 (exponent 129, fraction 0x20).
  EXPECT_EQ(LookupRows(*t, ids)[0], 0x40A0);
  const fs::path bad = dir_ / "bad.packed";
  std::ofstream(bad, std::ios::binary) << std::string(270, '\0');
  try {
    OpenPackedRows(bad, 256);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.packed: size 270 is not a multiple of the 264-byte row (256 codes + 8 scales); "
                                    "6 bytes left over"));
  }
  const fs::path empty = dir_ / "empty.packed";
  std::ofstream(empty, std::ios::binary).flush();
  EXPECT_THROW(OpenPackedRows(empty, 256), Error);
  EXPECT_THROW(OpenPackedRows(p, 33), Error);  // head_dim not a multiple of 32
}

// §STO.4 memory bound: a sparse file with the real table's size (~101 GB of
// address space, a few KB on disk) is opened and read without loading it.
TEST_F(StorageFiles, RealSizeSparseSafetensorsIsNeverLoaded_STO4) {
  const int64_t wbytes = kV41Rows * kHeadDim, sbytes = kV41Rows * (kHeadDim / 32);
  const std::string header = R"({"layers.1.engram.embed.weight":{"dtype":"F8_E4M3","shape":[384006168,256],"data_offsets":[0,)" +
                             std::to_string(wbytes) + R"(]},"layers.1.engram.embed.scale":{"dtype":"F8_E8M0","shape":[384006168,8],"data_offsets":[)" +
                             std::to_string(wbytes) + "," + std::to_string(wbytes + sbytes) + "]}}";
  const fs::path p = Safetensors("big.safetensors", header, "");
  const int64_t data_at = 8 + static_cast<int64_t>(header.size());
  const int fd = ::open(p.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  if (::ftruncate(fd, data_at + wbytes + sbytes) != 0) {
    ::close(fd);
    GTEST_SKIP() << "this filesystem cannot hold a sparse file of " << (wbytes + sbytes) << " bytes";
  }
  // The last row: codes 0x38 (1.0), scales 128 (x2) -> 2.0 = 0x4000.
  const std::string codes(256, '\x38'), scales(8, '\x80');
  ASSERT_EQ(::pwrite(fd, codes.data(), 256, data_at + (kV41Rows - 1) * 256), 256);
  ASSERT_EQ(::pwrite(fd, scales.data(), 8, data_at + wbytes + (kV41Rows - 1) * 8), 8);
  ::close(fd);
  struct rusage before {}, after {};
  ::getrusage(RUSAGE_SELF, &before);
  auto t = OpenSafetensors(p, "layers.1.engram.embed");
  EXPECT_EQ(t->rows(), kV41Rows);
  const std::vector<int64_t> ids = {kV41Rows - 1, 0, kV41Rows / 2};
  const std::vector<uint16_t> v = LookupRows(*t, ids);
  EXPECT_EQ(v[0], 0x4000);
  EXPECT_EQ(v[256], 0x0000);  // holes read as zero bytes: code 0 -> +0
  ::getrusage(RUSAGE_SELF, &after);
  // ru_maxrss is in KiB: the lookups touch a handful of pages, far below 64 MiB.
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);
  std::cout << "[storage] opened a " << (data_at + wbytes + sbytes) << "-byte safetensors table; max RSS grew by "
            << (after.ru_maxrss - before.ru_maxrss) << " KiB\n";
}

// ---------------------------------------------------------------------------
// Cross-checks against conformance/crosscheck/numpy_storage.py (numpy, exact
// rationals, ml_dtypes; safetensors file written by the `safetensors` package).
// ENGRAM_NUMPY_STORAGE_CROSSCHECK=/tmp/s.json ./reference_tests --gtest_filter='NumpyStorage*'

nlohmann::json CrosscheckDoc() {
  const char* path = std::getenv("ENGRAM_NUMPY_STORAGE_CROSSCHECK");
  if (path == nullptr || *path == '\0') return nullptr;
  return ReadJsonFile(path, engram::InputKind::kVectorFile);
}

uint16_t HexBf16(const std::string& hex, size_t j) { return static_cast<uint16_t>(std::stoul(hex.substr(4 * j, 4), nullptr, 16)); }

TEST(NumpyStorageCrosscheck, AllCodeScalePairsIfPresent) {
  const nlohmann::json doc = CrosscheckDoc();
  if (doc.is_null()) GTEST_SKIP() << "ENGRAM_NUMPY_STORAGE_CROSSCHECK is not set";
  ASSERT_EQ(doc["bf16"].size(), 256u);
  size_t n = 0;
  for (int s = 0; s < 256; ++s) {
    const std::string hex = doc["bf16"][static_cast<size_t>(s)];
    for (int c = 0; c < 256; ++c) {
      ASSERT_EQ(DecodeElement(static_cast<uint8_t>(c), static_cast<uint8_t>(s)), HexBf16(hex, static_cast<size_t>(c)))
          << "scale " << s << " code " << c;
      ++n;
    }
  }
  for (int c = 0; c < 256; ++c) {
    const float f = DecodeE4M3(static_cast<uint8_t>(c));
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint32_t want = doc["e4m3_f32_bits"][static_cast<size_t>(c)];
    if (std::isnan(f)) {
      EXPECT_EQ(want & 0x7F800000u, 0x7F800000u);
    } else {
      EXPECT_EQ(u, want) << c;
    }
    const float sc = static_cast<float>(DecodeE8M0(static_cast<uint8_t>(c)));
    std::memcpy(&u, &sc, 4);
    const uint32_t want_s = doc["e8m0_f32_bits"][static_cast<size_t>(c)];
    if (!std::isnan(sc)) EXPECT_EQ(u, want_s) << c;
  }
  std::cout << "[numpy storage crosscheck] " << n << " (code, scale) pairs equal; oracles agreeing in the file: "
            << doc["methods_agreeing"].dump() << " (ml_dtypes " << doc["ml_dtypes_version"].dump() << ")\n";
}

TEST(NumpyStorageCrosscheck, PythonWrittenTablesIfPresent) {
  const nlohmann::json doc = CrosscheckDoc();
  if (doc.is_null()) GTEST_SKIP() << "ENGRAM_NUMPY_STORAGE_CROSSCHECK is not set";
  const nlohmann::json& t = doc["tables"];
  std::vector<std::unique_ptr<RowSource>> sources;
  sources.push_back(OpenPackedRows(t["packed"].get<std::string>(), t["head_dim"].get<int64_t>()));
  if (t["safetensors"].is_string()) {
    sources.push_back(OpenSafetensors(t["safetensors"].get<std::string>(), t["prefix"].get<std::string>()));
  } else {
    ADD_FAILURE() << "no safetensors file in the cross-check (install ml_dtypes and safetensors)";
  }
  size_t n = 0;
  for (const auto& src : sources) {
    ASSERT_EQ(src->rows(), t["rows"].get<int64_t>()) << src->name();
    for (int64_t r = 0; r < src->rows(); ++r) {
      const nlohmann::json& want = t["row_bytes"][static_cast<size_t>(r)];
      const RowBytes b = src->Row(r);
      ASSERT_EQ(HexOfBytes(b.codes), want["codes"].get<std::string>()) << src->name() << " row " << r;
      ASSERT_EQ(HexOfBytes(b.scales), want["scales"].get<std::string>()) << src->name() << " row " << r;
      ASSERT_EQ(HexOfU16(DecodeRow(b)), want["bf16"].get<std::string>()) << src->name() << " row " << r;
      ++n;
    }
  }
  std::cout << "[numpy storage crosscheck] " << n << " rows equal across " << sources.size()
            << " file layouts (writer: " << t["writer"].dump() << ")\n";
}

}  // namespace
}  // namespace engram
