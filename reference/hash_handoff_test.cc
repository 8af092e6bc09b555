// §HASH.9 history hand-off and §LAY.5 layout fingerprints: laws as
// RapidCheck properties, plus the refusals of both history forms.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "reference/config.h"
#include "base/error.h"
#include "reference/hash.h"
#include "reference/layout.h"

// A namespace of its own: the suite's files are compiled together (unity build).
namespace engram::handoff_test {
namespace {

using testing::HasSubstr;
using Ids = std::vector<int64_t>;

// A small random layout of either profile (V small so that DEAD/negatives matter).
struct Case {
  Layout layout;
  int64_t v;
};

Case RandomCase() {
  const bool v41 = *rc::gen::arbitrary<bool>();
  const int max_ngram = *rc::gen::element(2, 3, 4, 5);
  const int heads = *rc::gen::element(1, 2, 3);
  const int64_t v = *rc::gen::element<int64_t>(3, 17, 1000);
  nlohmann::json doc;
  if (v41) {
    doc = {{"engram_layer_ids", {0, 4}}, {"engram_vocab_size", 50}, {"engram_max_ngram_size", max_ngram},
           {"engram_n_heads", heads}, {"engram_head_dim", 4}, {"engram_pad_id", 1}};
  } else {
    doc = {{"engram_vocab_size", std::vector<int64_t>(static_cast<size_t>(max_ngram - 1), 40)},
           {"max_ngram_size", max_ngram}, {"n_head_per_ngram", heads}, {"n_embed_per_ngram", heads},
           {"layer_ids", {2}}, {"pad_id", 1}, {"seed", 3}};
  }
  return {BuildLayout(ParseConfig(doc, "test"), v, 1), v};
}

Ids RandomIds(const Case& c, size_t n) {
  const bool v41 = c.layout.profile == Profile::kV41;
  const int64_t low = v41 ? -1 : -5;  // DEAD in v4.1, negatives in demo-v1
  return *rc::gen::container<Ids>(n, rc::gen::inRange<int64_t>(low, c.v));
}

Ids Feed(HashState& s, const Ids& ids) {
  Ids rows;
  s.Append(ids, rows);
  return rows;
}

Ids Concat(Ids a, const Ids& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

RC_GTEST_PROP(HashHandoff, ExportImportContinueEqualsNeverStopping_HASH9, ()) {
  const Case c = RandomCase();
  const size_t n = *rc::gen::inRange<size_t>(0, 30);
  const Ids ids = RandomIds(c, n);
  const size_t split = *rc::gen::inRange<size_t>(0, n + 1);
  HashState first(c.layout);
  const Ids a = Feed(first, Ids(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(split)));
  // Through both documented forms, as another instance would receive it.
  const HashHistory sent = first.Export();
  const HashHistory via_binary = DecodeHistoryBinary(EncodeHistoryBinary(sent), "binary");
  const HashHistory via_json = HistoryFromJson(nlohmann::json::parse(HistoryToJson(sent).dump()), "json");
  RC_ASSERT(via_binary.position == sent.position && via_binary.ids == sent.ids);
  RC_ASSERT(via_json.position == sent.position && via_json.ids == sent.ids);
  HashState second = HashState::Import(c.layout, via_binary);
  const Ids b = Feed(second, Ids(ids.begin() + static_cast<std::ptrdiff_t>(split), ids.end()));
  RC_ASSERT(Concat(a, b) == HashSequence(c.layout, ids));
}

// A batch of sequences hashed in micro-batches, each holding one segment of
// some sequences and carrying state only through exported histories.
RC_GTEST_PROP(HashHandoff, MicroBatchSplitEqualsUnsplitBatch_HASH9, ()) {
  const Case c = RandomCase();
  const size_t count = *rc::gen::inRange<size_t>(1, 5);
  std::vector<Ids> seqs;
  for (size_t i = 0; i < count; ++i) seqs.push_back(RandomIds(c, *rc::gen::inRange<size_t>(0, 20)));
  std::vector<HashHistory> hist(count, HashState(c.layout).Export());
  std::vector<size_t> at(count, 0);
  std::vector<Ids> got(count);
  while (true) {
    bool any = false;
    for (size_t i = 0; i < count; ++i) {
      if (at[i] >= seqs[i].size()) continue;
      any = true;
      if (!*rc::gen::arbitrary<bool>()) continue;  // this sequence sits out this micro-batch
      const size_t take = *rc::gen::inRange<size_t>(1, seqs[i].size() - at[i] + 1);
      HashState s = HashState::Import(c.layout, hist[i]);
      got[i] = Concat(got[i], Feed(s, Ids(seqs[i].begin() + static_cast<std::ptrdiff_t>(at[i]),
                                         seqs[i].begin() + static_cast<std::ptrdiff_t>(at[i] + take))));
      hist[i] = s.Export();
      at[i] += take;
    }
    if (!any) break;
  }
  for (size_t i = 0; i < count; ++i) RC_ASSERT(got[i] == HashSequence(c.layout, seqs[i]));
}

RC_GTEST_PROP(HashHandoff, RollbackAfterImport_HASH9, ()) {
  const Case c = RandomCase();
  const Ids prefix = RandomIds(c, *rc::gen::inRange<size_t>(0, 12));
  const Ids draft = RandomIds(c, *rc::gen::inRange<size_t>(0, 6));
  const Ids accepted = RandomIds(c, *rc::gen::inRange<size_t>(0, 6));
  HashState first(c.layout);
  Feed(first, prefix);
  HashState s = HashState::Import(c.layout, first.Export(), draft.size());
  Feed(s, draft);
  s.Rollback(draft.size());
  const Ids rows = Feed(s, accepted);
  const Ids expected = HashSequence(c.layout, Concat(prefix, accepted));
  RC_ASSERT(rows == Ids(expected.end() - static_cast<std::ptrdiff_t>(rows.size()), expected.end()));
  // Without a reserve, rolling back past the imported history is refused
  // (near the start no earlier ids are needed, so it is allowed there).
  if (prefix.size() > static_cast<size_t>(c.layout.max_ngram - 1)) {
    HashState bare = HashState::Import(c.layout, first.Export());
    RC_ASSERT_THROWS_AS(bare.Rollback(1), Error);
  }
}

RC_GTEST_PROP(LayoutFingerprint, ChangesWithEveryHashParameter_LAY5, ()) {
  const Case c = RandomCase();
  const std::string base = LayoutFingerprint(c.layout);
  RC_ASSERT(base == LayoutFingerprint(c.layout));
  Layout other = c.layout;
  switch (*rc::gen::inRange(0, 4)) {
    case 0: other.compressed_vocab_size += 1; break;
    case 1: other.pad += 1; break;
    case 2: other.layers[0].multipliers[0] += 2; break;
    default: other.layers.back().primes.back().back() += 2; break;
  }
  RC_ASSERT(LayoutFingerprint(other) != base);
}

class HistoryRefusals : public testing::Test {
 protected:
  Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);
  HashHistory Good() {
    HashState s(layout);
    Feed(s, Ids{5, 7, -1, 9, 11});
    return s.Export();
  }
};

TEST_F(HistoryRefusals, WrongCountForPosition_HASH9) {
  HashHistory h = Good();
  h.ids.pop_back();
  try {
    HashState::Import(layout, h);
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("position 5 needs 3 ids"));
  }
}

TEST_F(HistoryRefusals, OtherLayoutsFingerprint_HASH9) {
  HashHistory h = Good();
  h.layout_fingerprint = std::string(64, 'a');
  EXPECT_THROW(HashState::Import(layout, h), Error);
}

TEST_F(HistoryRefusals, IdOutOfRange_HASH9) {
  HashHistory h = Good();
  h.ids[0] = 99092;
  EXPECT_THROW(HashState::Import(layout, h), Error);
}

TEST_F(HistoryRefusals, BinaryFormDamage_HASH9) {
  const std::string good = EncodeHistoryBinary(Good());
  EXPECT_EQ(good.size(), 56u + 3 * 8);
  EXPECT_THAT([&] { try { DecodeHistoryBinary(good.substr(0, good.size() - 1), "h.bin"); } catch (const Error& e) { return std::string(e.what()); } return std::string(); }(),
              HasSubstr("h.bin: 3 ids need 80 bytes"));
  std::string magic = good;
  magic[0] = 'X';
  EXPECT_THROW(DecodeHistoryBinary(magic, "h.bin"), Error);
  std::string version = good;
  version[8] = 2;
  EXPECT_THROW(DecodeHistoryBinary(version, "h.bin"), Error);
  EXPECT_THROW(DecodeHistoryBinary("short", "h.bin"), Error);
}

TEST_F(HistoryRefusals, JsonFormDamage_HASH9) {
  nlohmann::json doc = nlohmann::json::parse(HistoryToJson(Good()).dump());
  nlohmann::json no_format = doc;
  no_format.erase("format");
  EXPECT_THROW(HistoryFromJson(no_format, "h.json"), Error);
  nlohmann::json bad_version = doc;
  bad_version["version"] = 7;
  EXPECT_THROW(HistoryFromJson(bad_version, "h.json"), Error);
  nlohmann::json bad_ids = doc;
  bad_ids["history"] = {1, "x"};
  EXPECT_THROW(HistoryFromJson(bad_ids, "h.json"), Error);
  nlohmann::json bad_fp = doc;
  bad_fp["layoutFingerprint"] = "XYZ";
  EXPECT_THROW(HistoryFromJson(bad_fp, "h.json"), Error);
}

// §HASH.9 every integer of the JSON form is an int64: an unsigned 2^64 - 1
// once read as -1 (DEAD, a valid v4.1 history id) and 2^63 as INT64_MIN.
TEST_F(HistoryRefusals, IntegersBeyondInt64AreRefusedNotWrapped_HASH9) {
  const std::string good = HistoryToJson(Good()).dump();
  for (const char* bad : {"18446744073709551615", "9223372036854775808"}) {
    nlohmann::json ids = nlohmann::json::parse(good);
    ids["history"][0] = nlohmann::json::parse(bad);
    try {
      HistoryFromJson(ids, "h.json");
      FAIL() << "history id " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("h.json: key 'history': ") + bad + " is outside the int64 range"));
    }
    nlohmann::json position = nlohmann::json::parse(good);
    position["position"] = nlohmann::json::parse(bad);
    try {
      HistoryFromJson(position, "h.json");
      FAIL() << "position " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("h.json: key 'position': ") + bad + " is outside the int64 range"));
    }
  }
  nlohmann::json largest = nlohmann::json::parse(good);
  largest["history"][0] = std::numeric_limits<int64_t>::max();  // the largest int64 is an integer still read
  EXPECT_EQ(HistoryFromJson(largest, "h.json").ids[0], std::numeric_limits<int64_t>::max());
}

// §HASH.5 the position never wraps: a history imported at 2^63 - 1 takes an
// empty append, and refuses one more id with the state unchanged (before,
// the position wrapped to -2^63, a position that import itself refuses).
TEST_F(HistoryRefusals, AppendPastTheLargestPositionIsRefused_HASH5) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  HashHistory h = Good();
  h.position = kMax;
  HashState s = HashState::Import(layout, h);
  std::vector<int64_t> rows;
  s.Append(Ids{}, rows);
  EXPECT_EQ(s.position(), kMax);
  try {
    s.Append(Ids{3}, rows);
    FAIL() << "accepted an id at position 2^63 - 1";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("past 2^63 - 1"));
  }
  EXPECT_EQ(s.position(), kMax);
  EXPECT_EQ(s.Export().ids, h.ids);
  h.position = kMax - 1;
  HashState one_left = HashState::Import(layout, h);
  EXPECT_THROW(one_left.Append(Ids{3, 4}, rows), Error);
  one_left.Append(Ids{3}, rows);  // exactly up to 2^63 - 1
  EXPECT_EQ(one_left.position(), kMax);
}

TEST_F(HistoryRefusals, MistypedFormatIsAnEngramError_HASH9) {
  // Found by fuzz_history: a non-string "format" once escaped as a JSON type error.
  try {
    HistoryFromJson(nlohmann::json::parse(R"({"format": 0, "version": 1})"), "h.json");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("h.json: key 'format'"));
  }
}

TEST(HistoryBinary, DocumentedByteLayout_HASH9) {
  // Written out from spec/hash.md §HASH.9 by hand: magic, version 1, the
  // fingerprint bytes, position 2 (i64 LE), count 2 (u32 LE), ids 5 and -1.
  HashHistory h{2, {5, -1}, std::string(62, '0') + "ff"};
  const std::string bytes = EncodeHistoryBinary(h);
  std::string expected = "ENGRAMHS";
  expected += std::string("\x01\x00\x00\x00", 4);
  expected += std::string(31, '\0') + "\xff";
  expected += std::string("\x02\x00\x00\x00\x00\x00\x00\x00", 8);
  expected += std::string("\x02\x00\x00\x00", 4);
  expected += std::string("\x05\x00\x00\x00\x00\x00\x00\x00", 8);
  expected += std::string(8, '\xff');
  EXPECT_EQ(bytes, expected);
}

}  // namespace
}  // namespace engram::handoff_test
