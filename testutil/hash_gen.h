// testutil/hash_gen.h — the RapidCheck generators of the hash
// properties (header-only, like everything in testutil/): random
// layouts, compressed ids and chunkings, shared by reference/hash_test.cc (the
// reference's laws) and cuda/engram_cuda_test.cc (engram::cuda against the
// reference), so that both draw their cases from one definition.
//
// rc::gen::inRange scales with the test size and yields its lower bound at
// size 0, so lengths are drawn as non-empty chunks plus explicit zeros.
#ifndef ENGRAM_TESTUTIL_HASH_GEN_H_
#define ENGRAM_TESTUTIL_HASH_GEN_H_

#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "reference/config.h"
#include "reference/hash.h"
#include "reference/layout.h"

namespace engram::testutil {

inline Profile DrawProfile() { return *rc::gen::element(Profile::kV41, Profile::kDemoV1); }

inline int64_t DrawVocab() {
  if (*rc::gen::inRange(0, 10) < 7) return *rc::gen::inRange<int64_t>(1, 60);
  return *rc::gen::elementOf(std::vector<int64_t>{1, 2, 99092, int64_t{1} << 31, int64_t{1} << 40, int64_t{1} << 62,
                                                  std::numeric_limits<int64_t>::max()});
}

// The configuration of a random layout (§LAY): 1-3 distinct layer ids below
// 60, max n-gram 2-5, 1-4 heads, bases 2-79 (v4.1: one for every order).
inline EngramConfig DrawLayoutConfig(Profile profile) {
  EngramConfig c = profile == Profile::kV41 ? V41FlashConfig() : DemoV1Config();
  c.max_ngram = *rc::gen::inRange(2, 6);
  c.heads = *rc::gen::inRange(1, 5);
  const int n_layers = *rc::gen::inRange(1, 4);
  std::vector<int64_t> layer_ids;
  while (static_cast<int>(layer_ids.size()) < n_layers) {
    const int64_t id = *rc::gen::inRange<int64_t>(0, 60);
    if (std::find(layer_ids.begin(), layer_ids.end(), id) == layer_ids.end()) layer_ids.push_back(id);
  }
  c.layer_ids = layer_ids;
  c.bases.clear();
  if (profile == Profile::kV41) {
    c.bases.assign(static_cast<size_t>(c.max_ngram - 1), *rc::gen::inRange<int64_t>(2, 80));
    c.num_embeddings.clear();  // §LAY.4 check skipped: no shipped sums for random layouts
    c.compressed_vocab_size.reset();
    c.seed = 0;
  } else {
    for (int i = 0; i < c.max_ngram - 1; ++i) c.bases.push_back(*rc::gen::inRange<int64_t>(2, 80));
    c.seed = *rc::gen::inRange<int64_t>(0, 1000);
  }
  return c;
}

// The layout of `c` over V = vocab, with a drawn pad id below min(V, 50).
inline Layout BuildDrawnLayout(const EngramConfig& c, int64_t vocab) {
  const int64_t pad = *rc::gen::inRange<int64_t>(0, std::min<int64_t>(vocab, 50));
  return BuildLayout(c, vocab, pad);
}

// A random layout over V = vocab (drawn by the caller first).
inline Layout DrawLayout(Profile profile, int64_t vocab) { return BuildDrawnLayout(DrawLayoutConfig(profile), vocab); }

// A random layout over a drawn V (drawn after the configuration).
inline Layout DrawLayout(Profile profile) {
  const EngramConfig c = DrawLayoutConfig(profile);
  return BuildDrawnLayout(c, DrawVocab());
}

// A compressed id of `layout`: v4.1 in [0, V) or DEAD; demo-v1 < V, negatives included.
inline int64_t DrawId(const Layout& layout) {
  constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
  const int kind = *rc::gen::inRange(0, 20);
  if (layout.profile == Profile::kV41) {
    if (kind < 5) return kDead;
    if (kind < 7) return layout.pad;
    return *rc::gen::inRange<int64_t>(0, layout.compressed_vocab_size);
  }
  if (kind < 3) return *rc::gen::inRange<int64_t>(-5, 0);
  if (kind < 5) return *rc::gen::inRange<int64_t>(kInt64Min, 0);
  if (kind < 6) {
    return *rc::gen::elementOf(std::vector<int64_t>{kInt64Min, -(int64_t{1} << 62), -(int64_t{1} << 62) - 1, int64_t{-1}});
  }
  if (kind < 8) return layout.pad;
  return *rc::gen::inRange<int64_t>(0, layout.compressed_vocab_size);
}

// Chunk sizes (zeros included) adding up to n. With decode_steps, half the
// chunks are one-id decode steps and the rest prefill chunks.
template <class Int>
std::vector<Int> DrawChunks(Int n, bool decode_steps = false) {
  std::vector<Int> chunks;
  Int left = n;
  while (left > 0) {
    if (*rc::gen::inRange(0, 4) == 1) chunks.push_back(0);
    const Int c = decode_steps && *rc::gen::arbitrary<bool>() ? Int{1} : *rc::gen::inRange<Int>(1, left + 1);
    chunks.push_back(c);
    left -= c;
  }
  if (*rc::gen::arbitrary<bool>()) chunks.push_back(0);
  return chunks;
}

}  // namespace engram::testutil

#endif  // ENGRAM_TESTUTIL_HASH_GEN_H_
