// vectors/random_stream.h: the cases a random run draws ahead on worker
// threads are DrawCase's cases, in index order, whatever the number of
// threads; a reader may stop early; a case that cannot be generated is an
// error at its place in the order.
#include "vectors/random_stream.h"

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"

namespace random_stream_test {
namespace {

using engram::vectors::CaseStream;
using engram::vectors::DrawCase;
using engram::vectors::RandomCase;
using engram::vectors::RandomSuite;
using engram::vectors::RandomSuites;

std::string Bytes(const RandomCase& c) { return c.group.dump() + "\n" + c.test.dump() + "\n" + c.recipe.dump(); }

// Every generator: 4 threads with a short lookahead (so that workers wait for
// the reader and finish out of order) give the serial cases, byte for byte.
TEST(CaseStream, ThreadsGiveTheSerialCasesInOrder) {
  constexpr int64_t kCases = 64;
  for (const RandomSuite& gen : RandomSuites()) {
    CaseStream stream(gen, 7, kCases, 4, 3);
    RandomCase c;
    int64_t i = 0;
    while (stream.Next(c)) {
      ASSERT_LT(i, kCases) << gen.suite;
      ASSERT_EQ(Bytes(c), Bytes(DrawCase(gen, 7, i))) << gen.suite << " case " << i;
      ++i;
    }
    EXPECT_EQ(i, kCases) << gen.suite;
    EXPECT_FALSE(stream.Next(c)) << gen.suite;
  }
}

// One thread builds each case when it is asked for; the cases are the same.
TEST(CaseStream, OneThreadBuildsOnDemand) {
  const RandomSuite& gen = RandomSuites().front();
  CaseStream stream(gen, 3, 5, 1);
  RandomCase c;
  for (int64_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(stream.Next(c));
    EXPECT_EQ(Bytes(c), Bytes(DrawCase(gen, 3, i)));
  }
  EXPECT_FALSE(stream.Next(c));
}

// A run that stops at its first failure leaves a stream of 10^6 cases after
// a few: the destructor stops the workers at once (the lookahead bounds what
// they built).
TEST(CaseStream, AReaderThatStopsEarlyEndsTheWorkers) {
  const RandomSuite& gen = RandomSuites().front();
  CaseStream stream(gen, 1, 1000000, 3, 16);
  RandomCase c;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(stream.Next(c));
}

// A case that cannot be generated is reported where it stands: the cases
// before it arrive first, then Next() throws the generator's message.
TEST(CaseStream, AGeneratorErrorArrivesInItsPlace) {
  RandomSuite bad = RandomSuites().front();
  bad.draw = [](uint64_t, int64_t index) { return engram::vectors::ojson{{"index", index}}; };
  bad.build = [](const engram::vectors::ojson& r) -> RandomCase {
    if (r["index"] == 5) throw engram::Error("case 5: planted generator error");
    RandomCase c;
    c.recipe = r;
    return c;
  };
  for (int threads : {1, 4}) {
    CaseStream stream(bad, 1, 100, threads, 4);
    RandomCase c;
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(stream.Next(c)) << threads;
      EXPECT_EQ(c.recipe["index"], i) << threads;
    }
    try {
      stream.Next(c);
      ADD_FAILURE() << "no error at case 5 with " << threads << " thread(s)";
    } catch (const engram::Error& e) {
      EXPECT_STREQ(e.what(), "case 5: planted generator error");
    }
    ASSERT_TRUE(stream.Next(c)) << "the case after the error, " << threads << " thread(s)";
    EXPECT_EQ(c.recipe["index"], 6);
  }
}

}  // namespace
}  // namespace random_stream_test
