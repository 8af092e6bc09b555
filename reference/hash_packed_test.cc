// §HASH.10-§HASH.12 packed calls, speculative drafts and segment resets:
// laws as RapidCheck properties against the per-sequence state of §HASH.5,
// and the refusals with the places they name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "reference/config.h"
#include "reference/hash.h"
#include "reference/layout.h"

// A namespace of its own: the suite's files are compiled together (unity build).
namespace engram::packed_test {
namespace {

using testing::HasSubstr;
using Ids = std::vector<int64_t>;

Layout SmallV41(int max_ngram, int heads, int64_t v) {
  const nlohmann::json doc = {{"engram_layer_ids", {0, 4}}, {"engram_vocab_size", 50},
                              {"engram_max_ngram_size", max_ngram}, {"engram_n_heads", heads},
                              {"engram_head_dim", 4},       {"engram_pad_id", 1}};
  return BuildLayout(ParseConfig(doc, "test"), v, 1);
}

Layout RandomLayout() {
  return SmallV41(*rc::gen::element(2, 3, 4, 5), *rc::gen::element(1, 2), *rc::gen::element<int64_t>(3, 17, 1000));
}

Ids RandomIds(const Layout& layout, size_t n) {
  return *rc::gen::container<Ids>(n, rc::gen::inRange<int64_t>(-1, layout.compressed_vocab_size));
}

// A state somewhere in a sequence: fed a random prefix, or (one time in two) a history of a sequence that
// began elsewhere at a large position.
HashHistory RandomHistory(const Layout& layout) {
  HashState state(layout);
  if (*rc::gen::arbitrary<bool>()) {
    const int64_t position = *rc::gen::inRange<int64_t>(0, int64_t{1} << 40);
    HashHistory h{position, RandomIds(layout, static_cast<size_t>(std::min<int64_t>(position, layout.max_ngram - 1))),
                  LayoutFingerprint(layout)};
    return h;
  }
  Ids rows;
  state.Append(RandomIds(layout, *rc::gen::inRange<size_t>(0, 8)), rows);
  return state.Export();
}

// A packed call of B random requests (some empty), their slots at consecutive positions, then padding.
PackedCall RandomCall(const Layout& layout) {
  PackedCall call;
  const size_t requests = *rc::gen::inRange<size_t>(1, 6);
  call.cu_seqlens = {0};
  for (size_t r = 0; r < requests; ++r) {
    call.histories.push_back(RandomHistory(layout));
    const Ids ids = RandomIds(layout, *rc::gen::element<size_t>(0, 0, 1, 2, 3, 7));
    for (size_t j = 0; j < ids.size(); ++j) {
      call.ids.push_back(ids[j]);
      call.positions.push_back(call.histories.back().position + static_cast<int64_t>(j));
    }
    call.cu_seqlens.push_back(static_cast<int64_t>(call.ids.size()));
  }
  for (size_t p = *rc::gen::inRange<size_t>(0, 4); p > 0; --p) {
    call.ids.push_back(*rc::gen::arbitrary<int64_t>());  // padding: never read, so anything
    call.positions.push_back(*rc::gen::arbitrary<int64_t>());
  }
  return call;
}

Ids Slots(const PackedCall& call, size_t r) {
  return Ids(call.ids.begin() + call.cu_seqlens[r], call.ids.begin() + call.cu_seqlens[r + 1]);
}

RC_GTEST_PROP(HashPacked, EveryRequestContinuesItsOwnState_HASH10, ()) {
  const Layout layout = RandomLayout();
  const PackedCall call = RandomCall(layout);
  const PackedResult got = HashPacked(layout, call);
  Ids rows;
  for (size_t r = 0; r + 1 < call.cu_seqlens.size(); ++r) {
    HashState state = HashState::Import(layout, call.histories[r]);
    state.Append(Slots(call, r), rows);
    const HashHistory out = state.Export();
    RC_ASSERT(got.histories[r].position == out.position);
    RC_ASSERT(got.histories[r].ids == out.ids);
  }
  RC_ASSERT(got.rows == rows);
}

RC_GTEST_PROP(HashPacked, PaddingIsNeverRead_HASH10, ()) {
  const Layout layout = RandomLayout();
  PackedCall call = RandomCall(layout);
  const PackedResult before = HashPacked(layout, call);
  call.ids.push_back(*rc::gen::arbitrary<int64_t>());
  call.positions.push_back(*rc::gen::arbitrary<int64_t>());
  for (size_t t = static_cast<size_t>(call.cu_seqlens.back()); t < call.ids.size(); ++t) {
    call.ids[t] = *rc::gen::arbitrary<int64_t>();
  }
  const PackedResult after = HashPacked(layout, call);
  RC_ASSERT(after.rows == before.rows);
  for (size_t r = 0; r < before.histories.size(); ++r) {
    RC_ASSERT(after.histories[r].position == before.histories[r].position);
    RC_ASSERT(after.histories[r].ids == before.histories[r].ids);
  }
}

// §HASH.11 Random drafts: parents drawn among -1 and the earlier drafts, positions by depth, an accepted
// path walked down from a root.
void AddDrafts(PackedCall& call) {
  call.parents.assign(call.ids.size(), -1);
  for (size_t r = 0; r + 1 < call.cu_seqlens.size(); ++r) {
    const size_t begin = static_cast<size_t>(call.cu_seqlens[r]), end = static_cast<size_t>(call.cu_seqlens[r + 1]);
    std::vector<int64_t> depth;
    for (size_t j = 0; begin + j < end; ++j) {
      const int64_t parent = *rc::gen::inRange<int64_t>(-1, static_cast<int64_t>(j));
      call.parents[begin + j] = parent;
      depth.push_back(parent < 0 ? 0 : depth[static_cast<size_t>(parent)] + 1);
      call.positions[begin + j] = call.histories[r].position + depth.back();
    }
    std::vector<int64_t> path;
    for (int64_t at = -1;;) {
      std::vector<int64_t> children;
      for (size_t j = 0; begin + j < end; ++j) {
        if (call.parents[begin + j] == at) children.push_back(static_cast<int64_t>(j));
      }
      if (children.empty() || !*rc::gen::arbitrary<bool>()) break;
      at = *rc::gen::elementOf(children);
      path.push_back(at);
    }
    call.accepted.push_back(path);
  }
}

RC_GTEST_PROP(HashPacked, EachDraftsWindowFollowsItsPath_HASH11, ()) {
  const Layout layout = RandomLayout();
  PackedCall call = RandomCall(layout);
  AddDrafts(call);
  const PackedResult got = HashPacked(layout, call);
  const size_t per_slot = layout.layers.size() * static_cast<size_t>(layout.columns());
  for (size_t r = 0; r + 1 < call.cu_seqlens.size(); ++r) {
    const size_t begin = static_cast<size_t>(call.cu_seqlens[r]), end = static_cast<size_t>(call.cu_seqlens[r + 1]);
    for (size_t t = begin; t < end; ++t) {
      Ids path;  // the draft, its parent, ..., a root: consumed root first
      for (int64_t j = static_cast<int64_t>(t - begin); j >= 0; j = call.parents[begin + static_cast<size_t>(j)]) {
        path.insert(path.begin(), call.ids[begin + static_cast<size_t>(j)]);
      }
      HashState state = HashState::Import(layout, call.histories[r]);
      Ids rows;
      state.Append(path, rows);
      RC_ASSERT(Ids(rows.end() - static_cast<std::ptrdiff_t>(per_slot), rows.end()) ==
                Ids(got.rows.begin() + static_cast<std::ptrdiff_t>(t * per_slot),
                    got.rows.begin() + static_cast<std::ptrdiff_t>((t + 1) * per_slot)));
    }
    Ids accepted;
    for (int64_t a : call.accepted[r]) accepted.push_back(call.ids[begin + static_cast<size_t>(a)]);
    HashState state = HashState::Import(layout, call.histories[r]);
    Ids rows;
    state.Append(accepted, rows);
    RC_ASSERT(got.histories[r].position == state.position());
    RC_ASSERT(got.histories[r].ids == state.History());
  }
}

// §HASH.11 A linear draft whose first c tokens are accepted leaves the state of appending all k and rolling
// back k - c (§HASH.6), and its rows are those of appending them.
RC_GTEST_PROP(HashPacked, LinearDraftAcceptingCEqualsRollback_HASH11, ()) {
  const Layout layout = RandomLayout();
  PackedCall call = RandomCall(layout);
  const PackedResult packed = HashPacked(layout, call);
  call.parents.assign(call.ids.size(), -1);
  for (size_t r = 0; r + 1 < call.cu_seqlens.size(); ++r) {
    const int64_t k = call.cu_seqlens[r + 1] - call.cu_seqlens[r];
    for (int64_t j = 1; j < k; ++j) call.parents[static_cast<size_t>(call.cu_seqlens[r] + j)] = j - 1;
    const int64_t c = *rc::gen::inRange<int64_t>(0, k + 1);
    std::vector<int64_t> path(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) path[static_cast<size_t>(i)] = i;
    call.accepted.push_back(path);
  }
  const PackedResult drafts = HashPacked(layout, call);
  RC_ASSERT(drafts.rows == packed.rows);
  for (size_t r = 0; r + 1 < call.cu_seqlens.size(); ++r) {
    const Ids slots = Slots(call, r);
    HashState state = HashState::Import(layout, call.histories[r], slots.size());
    Ids rows;
    state.Append(slots, rows);
    state.Rollback(slots.size() - call.accepted[r].size());
    RC_ASSERT(drafts.histories[r].position == state.position());
    RC_ASSERT(drafts.histories[r].ids == state.History());
  }
}

// §HASH.12 With the policy, a restart at 0 hashes the rest of the request as a fresh sequence.
RC_GTEST_PROP(HashPacked, SegmentResetStartsAFreshSequence_HASH12, ()) {
  const Layout layout = RandomLayout();
  PackedCall call;
  call.cu_seqlens = {0};
  call.histories.push_back(RandomHistory(layout));
  const Ids first = RandomIds(layout, *rc::gen::inRange<size_t>(1, 6));
  const Ids second = RandomIds(layout, *rc::gen::inRange<size_t>(1, 6));
  for (size_t j = 0; j < first.size(); ++j) {
    call.ids.push_back(first[j]);
    call.positions.push_back(call.histories[0].position + static_cast<int64_t>(j));
  }
  for (size_t j = 0; j < second.size(); ++j) {
    call.ids.push_back(second[j]);
    call.positions.push_back(static_cast<int64_t>(j));
  }
  call.cu_seqlens.push_back(static_cast<int64_t>(call.ids.size()));
  RC_ASSERT_THROWS_AS(HashPacked(layout, call), Error);  // no policy: a restart breaks §HASH.10 item 3
  call.segment_reset = true;
  const PackedResult got = HashPacked(layout, call);
  HashState state = HashState::Import(layout, call.histories[0]);
  Ids rows;
  state.Append(first, rows);
  HashState fresh(layout);
  fresh.Append(second, rows);
  RC_ASSERT(got.rows == rows);
  RC_ASSERT(got.histories[0].position == static_cast<int64_t>(second.size()));
  RC_ASSERT(got.histories[0].ids == fresh.History());
}

// The refusals, each naming what broke.
class PackedRefusals : public testing::Test {
 protected:
  Layout layout = SmallV41(3, 2, 17);
  PackedCall call = [this] {
    PackedCall c;
    c.ids = {3, 4, 5, 6, 7, 0};  // two requests of 3 and 2 slots, one padding slot
    c.cu_seqlens = {0, 3, 5};
    c.positions = {0, 1, 2, 10, 11, 0};
    c.histories = {HashHistory{0, {}, ""}, HashHistory{10, {8, 9}, ""}};
    return c;
  }();
  std::string Refusal() {
    try {
      HashPacked(layout, call);
    } catch (const Error& e) {
      return e.what();
    }
    return "(accepted)";
  }
};

TEST_F(PackedRefusals, TheExampleIsAccepted_HASH10) {
  EXPECT_EQ(Refusal(), "(accepted)");
  const PackedResult got = HashPacked(layout, call);
  EXPECT_EQ(got.rows.size(), 5u * 2 * 4);
  EXPECT_EQ(got.histories[1].position, 12);
  EXPECT_EQ(got.histories[1].ids, (Ids{6, 7}));
}

TEST_F(PackedRefusals, BoundariesAreChecked_HASH10) {
  call.cu_seqlens = {1, 3, 5};
  EXPECT_THAT(Refusal(), HasSubstr("cuSeqlens[0] = 1"));
  call.cu_seqlens = {0, 3, 2, 5};
  call.histories.push_back(HashHistory{0, {}, ""});
  EXPECT_THAT(Refusal(), HasSubstr("cuSeqlens[2] = 2 is below cuSeqlens[1] = 3"));
  call.cu_seqlens = {0, 3, 7};
  call.histories.pop_back();
  EXPECT_THAT(Refusal(), HasSubstr("cuSeqlens[2] = 7 is beyond the buffer's 6 slots"));
  call.cu_seqlens = {0, 3, 3, 3, 5};  // repeated boundaries: empty requests are fine
  call.histories = {HashHistory{0, {}, ""}, HashHistory{4, {1, 2}, ""}, HashHistory{0, {}, ""},
                    HashHistory{10, {8, 9}, ""}};
  EXPECT_EQ(Refusal(), "(accepted)");
}

TEST_F(PackedRefusals, RequestsNameTheirSlots_HASH10) {
  call.ids[4] = 17;  // = V
  EXPECT_THAT(Refusal(), HasSubstr("slots: ids: position 4 (id 17)"));
  call.ids[4] = 7;
  call.ids[5] = -9;  // padding is never read
  EXPECT_EQ(Refusal(), "(accepted)");
  call.histories[1].ids = {8};
  EXPECT_THAT(Refusal(), HasSubstr("request 1 (slots 3 ... 4): history: position 10 needs 2 ids"));
  call.histories[1].ids = {8, 9};
  call.positions[4] = 13;
  EXPECT_THAT(Refusal(), HasSubstr("request 1 (slots 3 ... 4): slot 4 has position 13, but it continues the "
                                   "request at 11"));
}

TEST_F(PackedRefusals, DraftsNeedATreeAndAPath_HASH11) {
  call.parents = {-1, 0, 0, -1, 0, 0};
  call.positions = {0, 1, 1, 10, 11, 0};
  call.accepted = {{0, 2}, {1}};
  EXPECT_THAT(Refusal(), HasSubstr("request 1 (slots 3 ... 4): accepted[0] = 1 does not continue"));
  call.accepted = {{0, 2}, {0}};
  EXPECT_EQ(Refusal(), "(accepted)");
  EXPECT_EQ(HashPacked(layout, call).histories[0].ids, (Ids{3, 5}));
  call.parents[1] = 1;
  EXPECT_THAT(Refusal(), HasSubstr("draft 1 (slot 1) has parent 1"));
  call.parents[1] = 0;
  call.positions[2] = 2;  // a sibling of draft 1 lies at its depth, not after it
  EXPECT_THAT(Refusal(), HasSubstr("slot 2 has position 2, but it continues the request at 1"));
}

}  // namespace
}  // namespace engram::packed_test
