// §HASH.10-§HASH.11, §CON.7, §VEC.14: the encodings of suite serving_v41 carry one logical case each (laws as RapidCheck
// properties), the committed vectors keep the no-leak control, and the verifier catches a case that does not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "reference/config.h"
#include "reference/hash.h"
#include "testutil/vectors.h"
#include "vectors/generator.h"
#include "vectors/serving.h"
#include "vectors/suite.h"

// A namespace of its own: the suite's files are compiled together (unity build).
namespace engram::vectors::serving_test {
namespace {

using Ids = std::vector<int64_t>;
using testing::HasSubstr;

Layout SmallLayout(int max_ngram) {
  const nlohmann::json doc = {{"engram_layer_ids", {0, 4}}, {"engram_vocab_size", 50}, {"engram_max_ngram_size", max_ngram},
                              {"engram_n_heads", 2},        {"engram_head_dim", 4},    {"engram_pad_id", 1}};
  return BuildLayout(ParseConfig(doc, "test"), 17, 1);
}

// A random packed case of small positions (every encoding carries it) with DEAD ids and the ids beneath them.
ServingCase RandomCase(const Layout& layout, bool drafts) {
  ServingCase c;
  c.type = drafts ? "DraftTreeTest" : "PackedBatchTest";
  PackedCall& call = c.call;
  call.cu_seqlens = {0};
  const size_t w = static_cast<size_t>(layout.max_ngram - 1);
  auto id = [&] { return *rc::gen::inRange<int64_t>(0, layout.compressed_vocab_size); };
  auto dead = [&] { return *rc::gen::inRange(0, 4) == 0; };
  const size_t requests = *rc::gen::inRange<size_t>(1, 5);
  for (size_t r = 0; r < requests; ++r) {
    HashHistory h{*rc::gen::inRange<int64_t>(0, 20), {}, LayoutFingerprint(layout)};
    Ids under;
    for (size_t i = 0; i < std::min<size_t>(static_cast<size_t>(h.position), w); ++i) {
      under.push_back(id());
      h.ids.push_back(dead() ? kDead : under.back());
    }
    call.histories.push_back(h);
    c.history_under.push_back(under);
    const size_t n = *rc::gen::inRange<size_t>(0, 5);
    std::vector<int64_t> depth;
    Ids path;
    for (size_t j = 0; j < n; ++j) {
      c.under.push_back(id());
      call.ids.push_back(dead() ? kDead : c.under.back());
      if (drafts) {
        const int64_t parent = *rc::gen::inRange<int64_t>(-1, static_cast<int64_t>(j));
        call.parents.push_back(parent);
        depth.push_back(parent < 0 ? 0 : depth[static_cast<size_t>(parent)] + 1);
        call.positions.push_back(h.position + depth.back());
        if (parent == (path.empty() ? -1 : path.back()) && *rc::gen::arbitrary<bool>()) path.push_back(static_cast<int64_t>(j));
      } else {
        call.positions.push_back(h.position + static_cast<int64_t>(j));
      }
    }
    call.cu_seqlens.push_back(static_cast<int64_t>(call.ids.size()));
    if (drafts) call.accepted.push_back(path);
  }
  for (size_t p = drafts ? 0 : *rc::gen::inRange<size_t>(0, 3); p > 0; --p) {
    c.under.push_back(id());
    call.ids.push_back(dead() ? kDead : c.under.back());
    call.positions.push_back(0);
  }
  return c;
}

// §CON.7 Each encoding that carries a case reads back to a call with the same outcome, and its outputs read
// back (through the state they carry) to the same states: the encodings are one logical case.
RC_GTEST_PROP(ServingEncodings, EveryEncodingCarriesTheSameCall_CON7, ()) {
  const Layout layout = SmallLayout(*rc::gen::element(2, 3, 4));
  const bool drafts = *rc::gen::arbitrary<bool>();
  const ServingCase logical = RandomCase(layout, drafts);
  const ServingOutcome want = ServingReference(layout, logical);
  size_t carried = 0;
  for (const char* e : kServingEncodings) {
    ServingCase c = logical;
    c.encoding = e;
    if (!EncodingCarries(e, c)) continue;
    ++carried;
    if (c.encoding == "slotCache") LaySlotCache(layout, c, *rc::gen::arbitrary<uint64_t>());
    const ServingCase seen = AsSeen(layout, c);
    const ServingOutcome got = ServingReference(layout, seen);
    RC_ASSERT(got.rows == want.rows);
    for (size_t r = 0; r < want.requests.size(); ++r) {
      // An empty request hands its state on as it came; the position-free encodings read it at any position
      // that keeps the window whole, so only the window is compared there.
      RC_ASSERT(got.requests[r].ids == want.requests[r].ids || logical.call.cu_seqlens[r] == logical.call.cu_seqlens[r + 1]);
    }
    RC_ASSERT(ServingOutputs(layout, seen, got) == ServingOutputs(layout, c, ServingReference(layout, c)));
  }
  RC_ASSERT(carried >= 3u);  // engram, vllm and onnxruntime carry every case
}

// §HASH.10 the no-leak control over the committed vectors: every valid test differs from the naive flatten.
TEST(ServingVectors, EveryValidCaseDiffersFromTheNaiveFlatten_HASH10) {
  size_t valid = 0;
  for (const nlohmann::ordered_json& g : test::Suite("serving_v41")["testGroups"]) {
    const Layout layout = GroupLayout(nlohmann::json::parse(g.dump()));
    for (const nlohmann::ordered_json& t : g["tests"]) {
      if (t["result"] != "valid") continue;
      ++valid;
      const ServingCase c = ReadServingCase(layout, g["type"], nlohmann::json::parse(t.dump()));
      const ojson expected = ServingOutputs(layout, c, ServingReference(layout, c));
      EXPECT_NE(ServingOutputs(layout, c, ServingMutantOutcome(layout, c, ServingMutant::kNaiveFlatten)), expected)
          << "tcId " << t["tcId"];
    }
  }
  EXPECT_GT(valid, 40u);
}

// §VEC.12 the two boundary bugs flag different tests: each fails a test the other passes, in every group.
TEST(ServingVectors, CrossRequestLeakAndRestartEachCallAreToldApart_VEC14) {
  for (const nlohmann::ordered_json& g : test::Suite("serving_v41")["testGroups"]) {
    if (g["type"] != "PackedBatchTest") continue;
    size_t leak_only = 0, restart_only = 0;
    for (const nlohmann::ordered_json& t : g["tests"]) {
      const auto& f = t["flags"];
      const bool leak = std::find(f.begin(), f.end(), "CrossRequestLeak") != f.end();
      const bool restart = std::find(f.begin(), f.end(), "RestartEachCall") != f.end();
      leak_only += leak && !restart;
      restart_only += restart && !leak;
    }
    EXPECT_GT(leak_only, 0u) << g["comment"];
    EXPECT_GT(restart_only, 0u) << g["comment"];
  }
}

// The verifier refuses a valid test that the naive flatten passes (one request from its sequence's start).
TEST(ServingVectors, VerifyRefusesACaseTheNaiveFlattenPasses_HASH10) {
  ojson doc = GenerateSuite("serving_v41");
  ojson& g = doc["testGroups"][0];
  const Layout layout = GroupLayout(nlohmann::json::parse(g.dump()));
  ServingCase c;
  c.type = "PackedBatchTest";
  c.encoding = "engram";
  c.call.ids = {3, 4, 5};
  c.under = c.call.ids;
  c.call.cu_seqlens = {0, 3};
  c.call.positions = {0, 1, 2};
  c.call.histories = {HashHistory{0, {}, LayoutFingerprint(layout)}};
  c.history_under = {{}};
  ojson t = g["tests"][0];
  ojson fields = ServingInputs(layout, c);
  fields["result"] = "valid";
  const ojson out = ServingOutputs(layout, c, ServingReference(layout, c));
  for (const auto& [k, v] : out.items()) fields[k] = v;
  ojson replaced = {{"tcId", t["tcId"]}, {"comment", ""}, {"flags", ojson::array()}, {"specRef", {"§HASH.10"}}};
  for (const auto& [k, v] : fields.items()) replaced[k] = v;
  g["tests"][0] = replaced;
  std::vector<std::string> problems;
  VerifySuite("serving_v41.json", nlohmann::json::parse(doc.dump()), problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("naive flatten"));
}

// §CON.7 What an encoding cannot mean is refused on reading, naming the key.
TEST(ServingEncodings, ReadingNamesWhatIsWrong_CON7) {
  const Layout layout = SmallLayout(3);
  auto refusal = [&](const nlohmann::json& test) {
    try {
      ReadServingCase(layout, "PackedBatchTest", test);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  const nlohmann::json base = {{"encoding", "vllm"}, {"ids", {3, 4}}, {"deadMask", {false, true}}, {"cuSeqlens", {0, 2}},
                               {"positions", {5, 6}}, {"lookbackTokenIds", {{1, 2}}}, {"lookbackDeadMask", {{false, false}}}};
  EXPECT_EQ(refusal(base), "(read)");
  nlohmann::json t = base;
  t["encoding"] = "tensorrt";
  EXPECT_THAT(refusal(t), HasSubstr("encoding: \"tensorrt\""));
  t = base;
  t["deadMask"] = {false};
  EXPECT_THAT(refusal(t), HasSubstr("deadMask"));
  t = base;
  t["lookbackTokenIds"] = {{1, -1}};  // position 5 needs both ids
  EXPECT_THAT(refusal(t), HasSubstr("lookbackTokenIds[0][1] = -1 (not known) at position 3"));
  t = base;
  t["lookbackTokenIds"] = {{1, 2, 3}};
  EXPECT_THAT(refusal(t), HasSubstr("lookbackTokenIds[0]: not max_ngram - 1 = 2 entries"));
}

}  // namespace
}  // namespace engram::vectors::serving_test
