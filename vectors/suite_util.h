// JSON shapes shared by the generator and the verifier (spec/vectors.md).
#ifndef ENGRAM_VECTORS_SUITE_UTIL_H_
#define ENGRAM_VECTORS_SUITE_UTIL_H_

#include <vector>

#include <nlohmann/json.hpp>

#include "reference/hash.h"
#include "reference/layout.h"

namespace engram::vectors {

// §VEC.6 [{"layerId", "multipliers", "primes", "offsets", "numEmbeddings"}].
inline nlohmann::ordered_json LayersJson(const Layout& layout) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerLayout& l : layout.layers) {
    layers.push_back({{"layerId", l.layer_id},
                      {"multipliers", l.multipliers},
                      {"primes", l.primes},
                      {"offsets", l.offsets},
                      {"numEmbeddings", l.num_embeddings}});
  }
  return layers;
}

// §HASH.8 one {"window", "blocked", "tokens", "mixes", "residues"} per position.
inline nlohmann::ordered_json TraceJson(const std::vector<PositionTrace>& traces) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const PositionTrace& p : traces) {
    out.push_back({{"window", p.window}, {"blocked", p.blocked}, {"tokens", p.tokens},
                   {"mixes", p.mixes}, {"residues", p.residues}});
  }
  return out;
}

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_SUITE_UTIL_H_
