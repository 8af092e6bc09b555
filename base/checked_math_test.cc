// base/checked_math.h: size products refuse instead of wrapping (§ERR.3).
#include "base/checked_math.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace engram {
namespace {

constexpr size_t kMax = std::numeric_limits<size_t>::max();

// The product of DemoParams::Check that wrapped to 0 (hc 4, in 2^62).
TEST(SizeProduct, RefusesAProductThatWrapsToZero) {
  try {
    SizeProduct({4, 1, size_t{1} << 62}, "demo-v1 key_w [hc][hidden][in]");
    FAIL() << "4 · 1 · 2^62 was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "demo-v1 key_w [hc][hidden][in]: the size 4 · 1 · 4611686018427387904 does not fit in 64 bits (§ERR.3)");
  }
  EXPECT_THROW(SizeProduct({kMax, 2}, "x"), Error);
  EXPECT_EQ(SizeProduct({kMax, 1}, "x"), kMax);
  EXPECT_EQ(SizeProduct({}, "x"), 1u);
  EXPECT_EQ(SizeProduct({kMax, kMax, 0}, "x"), 0u);  // a zero factor: nothing to allocate, whatever the rest
}

// The law: SizeProduct agrees with 128-bit arithmetic, refusing exactly the products beyond 2^64 - 1.
RC_GTEST_PROP(SizeProduct, EqualsTheExactProductOrRefuses, ()) {
  const size_t a = *rc::gen::arbitrary<size_t>() >> *rc::gen::inRange(0, 64);
  const size_t b = *rc::gen::arbitrary<size_t>() >> *rc::gen::inRange(0, 64);
  const size_t c = *rc::gen::inRange<size_t>(0, 5);
  const unsigned __int128 exact = static_cast<unsigned __int128>(a) * b * c;
  const bool overflow = (static_cast<unsigned __int128>(a) * b) > kMax || exact > kMax;
  if (c == 0 || a == 0 || b == 0) {
    RC_ASSERT(SizeProduct({a, b, c}, "x") == 0u);
  } else if (overflow) {
    RC_ASSERT_THROWS_AS(SizeProduct({a, b, c}, "x"), Error);
  } else {
    RC_ASSERT(SizeProduct({a, b, c}, "x") == static_cast<size_t>(exact));
  }
}

}  // namespace
}  // namespace engram
