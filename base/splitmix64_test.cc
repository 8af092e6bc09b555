#include "base/splitmix64.h"

#include <gtest/gtest.h>

namespace {

// Known answers: the first outputs of the reference implementation
// (splitmix64.c) seeded with 1234567, as published with it and reproduced by
// other implementations (Java's SplittableRandom mixes differently).
TEST(SplitMix64, KnownAnswersOfTheReferenceImplementation) {
  engram::SplitMix64 g{1234567};
  EXPECT_EQ(g.Next(), 6457827717110365317ULL);
  EXPECT_EQ(g.Next(), 3203168211198807973ULL);
  EXPECT_EQ(g.Next(), 9817491932198370423ULL);
  EXPECT_EQ(g.Next(), 4593380528125082431ULL);
  EXPECT_EQ(g.Next(), 16408922859458223821ULL);
}

// §CONF.5 element i of the stream is SplitMix64Of(seed + i * golden).
TEST(SplitMix64, AnyElementWithoutTheOnesBefore) {
  engram::SplitMix64 g{99};
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(engram::SplitMix64Of(99 + i * engram::kSplitMix64Golden), g.Next()) << i;
}

// The finaliser is usable at compile time (and so in device code under nvcc).
static_assert(engram::SplitMix64Mix(0) == 0, "0 is a fixed point of the finaliser");
static_assert(engram::SplitMix64{1234567}.Next() == 6457827717110365317ULL);

}  // namespace
