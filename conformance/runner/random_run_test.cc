// The random phase's per-suite rules (random_run.h SuiteTally, spec/conformance.md §CONF.7): which failing
// cases are shrunk, when drawing stops, and what the suite's summary line says.
#include "conformance/runner/random_run.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace engram::conform {
namespace random_run_test {
namespace {

// §CONF.7 --max-shrunk M: of n failing cases, the first min(n, M) are shrunk and the rest kept as they
// failed; a negative M shrinks every one.
RC_GTEST_PROP(SuiteTally, MaxShrunkShrinksTheFirstMFailures_CONF7, ()) {
  Options o;
  o.max_shrunk = *rc::gen::inRange<int64_t>(-1, 6);
  const int64_t n = *rc::gen::inRange<int64_t>(0, 12);
  SuiteTally t;
  int64_t shrunk = 0;
  for (int64_t k = 0; k < n; ++k) {
    const bool shrinks = t.ShrinksNextFailure(o);
    ++t.failures;
    if (shrinks) {
      ++shrunk;
      RC_ASSERT(t.unshrunk == 0);  // a kept case is never followed by a shrunk one
    } else {
      ++t.unshrunk;
    }
  }
  RC_ASSERT(shrunk == (o.max_shrunk < 0 ? n : std::min(n, o.max_shrunk)));
}

// §CONF.7 the limits, checked after each judged case in a fixed order; 0 turns a count limit off.
TEST(SuiteTally, StopsAtTheFirstLimitReached_CONF7) {
  Options o;
  o.max_consecutive_timeouts = 3;
  o.max_random_failures = 2;
  SuiteTally t;
  EXPECT_EQ(t.StopAfterCase(o, false), "");
  EXPECT_EQ(t.StopAfterCase(o, true), "--random-seconds");
  t.failures = 2;
  EXPECT_EQ(t.StopAfterCase(o, true), "--max-random-failures");
  t.unanswered_in_a_row = 3;
  EXPECT_EQ(t.StopAfterCase(o, true), "--max-timeouts");
  o.max_consecutive_timeouts = 0;
  o.max_random_failures = 0;
  EXPECT_EQ(t.StopAfterCase(o, false), "");
  t.unanswered_in_a_row = 2;
  t.failures = 1;
  o.max_consecutive_timeouts = 3;
  o.max_random_failures = 2;
  EXPECT_EQ(t.StopAfterCase(o, false), "");
}

// The summary line names a stop only when it cut the suite's share short, and every count that is not zero.
TEST(SuiteTally, LineSaysWhatWasAskedAndWhyItStopped_CONF7) {
  SuiteTally t;
  t.drawn = 5;
  t.asked = 5;
  t.stopped = "--random-seconds";
  EXPECT_EQ(t.Line("hash_v41", 0, 5), "random: hash_v41: 5 case(s) asked");
  EXPECT_EQ(t.Line("hash_v41", 0, 9), "random: hash_v41: 5 case(s) asked (stopped after case 5: --random-seconds)");
  t.out_of_scope = 2;
  t.failures = 3;
  t.unshrunk = 1;
  t.abandoned = 4;
  EXPECT_EQ(t.Line("layout", 1, 5),
            "random: layout: 5 case(s) asked (1 trivial passes not counted as tested), 2 of another profile not "
            "asked, 3 failing (1 of them not shrunk: --max-shrunk) (4 request(s) written ahead were not waited for "
            "at the time budget; the implementation was stopped)");
}

}  // namespace
}  // namespace random_run_test
}  // namespace engram::conform
