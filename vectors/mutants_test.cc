// vectors/mutants.h: MutantRowsEqualReference, the shortcut the accumulated suite's generator takes for a
// mutant that cannot differ from the reference on a layout (RowIdUint32, RowIdInt32). Checked against the mutant's own rows
// (MutantRows) and the reference's (HashState), never against the shortcut itself.
#include "vectors/mutants.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/config.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/suite.h"

namespace mutants_test {
namespace {

using engram::BuildLayout;
using engram::HashState;
using engram::Layout;
using engram::ParseConfig;
using engram::vectors::Mutant;
using engram::vectors::MutantRows;
using engram::vectors::MutantRowsEqualReference;
using engram::vectors::SmallV41Config;

Layout V41Layout(int64_t base, int max_ngram, int heads, int64_t v) {
  const auto config = SmallV41Config({1}, base, max_ngram, heads, v);
  return BuildLayout(ParseConfig(nlohmann::json::parse(config.dump()), "<test>"), v, 2);
}

std::vector<int64_t> ReferenceRows(const Layout& layout, const std::vector<int64_t>& ids) {
  HashState state(layout);
  std::vector<int64_t> rows;
  state.Append(ids, rows);
  return rows;
}

// The law the shortcut stands for: where it says "equal", the mutant's rows are the reference's for any ids
// (RowIdUint32 on tables of at most 2^32 rows, RowIdInt32 on tables of at most 2^31: every row id fits, so
// keeping it in 32 bits changes nothing).
RC_GTEST_PROP(MutantRowsEqualReference, WhereItHoldsTheMutantHashesAsTheReference, ()) {
  const bool int32 = *rc::gen::arbitrary<bool>();
  const Mutant m = int32 ? Mutant::kRowIdInt32 : Mutant::kRowIdUint32;
  // at most 12 columns of primes near the base: below 2^31 (2^32) rows
  const int64_t base = *rc::gen::inRange<int64_t>(2, int64_t{1} << (int32 ? 26 : 27));
  const int max_ngram = *rc::gen::inRange(2, 5);
  const int heads = *rc::gen::inRange(1, 5);
  const int64_t v = *rc::gen::inRange<int64_t>(3, 1000);
  const Layout layout = V41Layout(base, max_ngram, heads, v);
  RC_ASSERT(MutantRowsEqualReference(m, layout));
  const auto ids = *rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(0, v));
  RC_ASSERT(MutantRows(m, layout, ids) == ReferenceRows(layout, ids));
}

// Beyond 2^32 rows it does not hold, and the mutant does differ there: the shortcut never hides a
// difference. Two columns of about 1.5 * 2^31 rows each: a table of about 1.5 * 2^32 rows (between 2^32
// and 2^33, so a bound off by a factor of two is caught), whose second column's rows are mostly >= 2^32.
TEST(MutantRowsEqualReference, NotForTablesBeyond2To32Rows) {
  const Layout layout = V41Layout(int64_t{3} << 30, 3, 1, 1000);
  ASSERT_GT(layout.layers[0].num_embeddings, int64_t{1} << 32);
  ASSERT_LT(layout.layers[0].num_embeddings, int64_t{1} << 33);
  EXPECT_FALSE(MutantRowsEqualReference(Mutant::kRowIdUint32, layout));
  const std::vector<int64_t> ids = {5, 17, 999, 3, 250, 7, 42, 600};
  EXPECT_NE(MutantRows(Mutant::kRowIdUint32, layout, ids), ReferenceRows(layout, ids));
}

// RowIdInt32 the same at 2^31: two columns of about 1.5 * 2^30 rows each (the hash_v41 vectors' int32 group),
// a table between 2^31 and 2^32 rows whose second column's rows are mostly >= 2^31.
TEST(MutantRowsEqualReference, NotForTablesBeyond2To31RowsWhenInt32) {
  const Layout layout = V41Layout(int64_t{3} << 29, 2, 2, 1000);
  ASSERT_GT(layout.layers[0].num_embeddings, int64_t{1} << 31);
  ASSERT_LT(layout.layers[0].num_embeddings, int64_t{1} << 32);
  EXPECT_FALSE(MutantRowsEqualReference(Mutant::kRowIdInt32, layout));
  EXPECT_TRUE(MutantRowsEqualReference(Mutant::kRowIdUint32, layout));
  const std::vector<int64_t> ids = {5, 17, 999, 3, 250, 7, 42, 600};
  EXPECT_NE(MutantRows(Mutant::kRowIdInt32, layout, ids), ReferenceRows(layout, ids));
  EXPECT_EQ(MutantRows(Mutant::kRowIdUint32, layout, ids), ReferenceRows(layout, ids));
}

// Only RowIdUint32 and RowIdInt32 are decided from the layout; for the others the generator walks the stream.
TEST(MutantRowsEqualReference, NoOtherMutantIsDecidedFromTheLayout) {
  const Layout layout = V41Layout(1000, 3, 2, 100);
  for (Mutant m : {Mutant::kNoDeadBlocking, Mutant::kDeadAsId, Mutant::kTruncatedMod, Mutant::kInt32Multipliers}) {
    EXPECT_FALSE(MutantRowsEqualReference(m, layout)) << engram::vectors::MutantFlag(m);
  }
}

}  // namespace
}  // namespace mutants_test
