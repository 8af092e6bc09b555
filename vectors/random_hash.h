// spec/conformance.md §CONF.7 — the parts of the hash suites' generators
// (random_hash.cc) that the hand-off generator (random_hash_state.cc) draws
// its layouts and ids with, so that hash_state's distributions are exactly
// those §CONF.7 states for hash_v41 and hash_demo.
#ifndef ENGRAM_VECTORS_RANDOM_HASH_H_
#define ENGRAM_VECTORS_RANDOM_HASH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/layout.h"
#include "vectors/random_cases.h"

namespace engram::vectors {

// n ids for a layout with (v, pad, max_ngram): uniform below V with V - 1, 0
// and the pad favoured; DEAD spans of 1..max n-gram + 1 (v4.1); negative ids
// down to INT64_MIN (demo-v1).
std::vector<int64_t> DrawIds(CaseRng& rng, bool v41, int64_t v, int64_t pad, int max_ngram, int64_t n);
// The layout part of a recipe: "layerIds", "maxNgram", "heads", "bases", "seed", "v", "pad".
ojson DrawLayoutPart(CaseRng& rng, bool v41);
// The configuration JSON of a recipe's layout part (without engram_num_embeddings).
ojson ConfigOf(const ojson& r, bool v41);
// One number per layout part and per ids list that every shrink step lowers.
int64_t LayoutMeasure(const ojson& r);
int64_t IdsMeasure(const std::vector<int64_t>& ids);

// A layout with the config and layers JSON of its groups.
struct BuiltLayout {
  std::string key;
  Layout layout;
  ojson config, layers;
  std::string fingerprint;  // §LAY.5, computed once for the cases that share the layout
};
// The layout of a recipe's layout part, cached for the cases that share it
// (throws engram::Error for a layout that cannot be built).
const BuiltLayout& LayoutFor(const ojson& r, bool v41);

// Shrink candidates: smaller ids lists (halves, one position fewer, smaller
// values), ids under a smaller V, and smaller layout parts (a layer fewer,
// smaller layer ids, max n-gram - 1, fewer heads, smaller bases, seed, pad).
std::vector<std::vector<int64_t>> SmallerIds(const std::vector<int64_t>& ids, int64_t pad);
std::vector<int64_t> UnderV(std::vector<int64_t> ids, int64_t v, int64_t old_v);
std::vector<ojson> ShrinkLayout(const ojson& r);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_RANDOM_HASH_H_
