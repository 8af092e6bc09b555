#include "vectors/mutants.h"

#include <algorithm>
#include <limits>

#include "reference/hash.h"
#include "reference/random.h"

namespace engram::vectors {

std::string MutantFlag(Mutant m) {
  switch (m) {
    case Mutant::kNoDeadBlocking: return "NoDeadBlocking";
    case Mutant::kTruncatedMod: return "FloorMod";
    case Mutant::kInt32Multipliers: return "Int32Multipliers";
  }
  return "";
}

std::vector<Mutant> MutantsFor(Profile profile) {
  if (profile == Profile::kV41) return {Mutant::kNoDeadBlocking, Mutant::kInt32Multipliers};
  return {Mutant::kTruncatedMod, Mutant::kInt32Multipliers};
}

std::vector<int64_t> MutantMultipliers(Mutant m, int64_t seed, int64_t layer_id, int64_t v, int max_ngram) {
  if (m != Mutant::kInt32Multipliers) return LayerMultipliers(seed, layer_id, v, max_ngram);
  const int64_t bound = std::max<int64_t>(1, (int64_t{std::numeric_limits<int32_t>::max()} / v) / 2);
  Pcg64 gen{SeedSequence(LayerSeed(seed, layer_id))};
  std::vector<int64_t> r = Integers(gen, 0, bound, static_cast<size_t>(max_ngram));
  for (int64_t& x : r) x = 2 * x + 1;
  return r;
}

Layout MutantLayout(Mutant m, const Layout& layout, int64_t seed) {
  Layout out = layout;
  for (LayerLayout& l : out.layers) {
    l.multipliers = MutantMultipliers(m, seed, l.layer_id, layout.compressed_vocab_size, layout.max_ngram);
  }
  return out;
}

std::vector<int64_t> MutantRows(Mutant m, const Layout& layout, const std::vector<int64_t>& ids,
                                int64_t first_position, size_t emit_from) {
  const int w = layout.max_ngram;
  std::vector<int64_t> rows;
  std::vector<int64_t> tok(static_cast<size_t>(w));
  for (size_t t = emit_from; t < ids.size(); ++t) {
    bool block = false;
    for (int s = 0; s < w; ++s) {
      const bool before = first_position + static_cast<int64_t>(t) < s;
      const int64_t x = before ? layout.pad : ids[t - static_cast<size_t>(s)];
      if (layout.profile == Profile::kV41) {
        block = (m == Mutant::kNoDeadBlocking) ? (before || x == kDead) : (block || before || x == kDead);
      } else {
        block = before;
      }
      tok[static_cast<size_t>(s)] = block ? layout.pad : x;
    }
    for (const LayerLayout& l : layout.layers) {
      int64_t rolling = static_cast<int64_t>(static_cast<uint64_t>(tok[0]) * static_cast<uint64_t>(l.multipliers[0]));
      for (int k = 1; k < w; ++k) {
        rolling ^= static_cast<int64_t>(static_cast<uint64_t>(tok[static_cast<size_t>(k)]) *
                                        static_cast<uint64_t>(l.multipliers[static_cast<size_t>(k)]));
        for (int h = 0; h < layout.heads; ++h) {
          const int col = (k - 1) * layout.heads + h;
          const int64_t p = l.prime(col);
          int64_t r = rolling % p;  // C++ % truncates toward zero
          if (m != Mutant::kTruncatedMod && r < 0) r += p;
          rows.push_back(r + l.offsets[static_cast<size_t>(col)]);
        }
      }
    }
  }
  return rows;
}

}  // namespace engram::vectors
