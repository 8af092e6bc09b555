/// \file
/// spec/layout.md — the prime bucket layout and the per-layer hash parameters.
///
/// Every (layer, n-gram order, head) owns a prime-sized range of table rows.
/// The primes are handed out in a fixed order and never reused (§LAY.2), so
/// that the ranges of one layer are disjoint and the modulus of every head is
/// distinct. Row ranges of one layer are laid end to end (§LAY.3).
#ifndef ENGRAM_REFERENCE_LAYOUT_H_
#define ENGRAM_REFERENCE_LAYOUT_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "reference/config.h"

namespace engram {

/// §LAY.1 Deterministic primality for every 64-bit value.
bool IsPrime(uint64_t n);

/// §LAY.2 The smallest c > start that is prime and not in `seen`.
uint64_t FindNextPrime(uint64_t start, const std::set<uint64_t>& seen);

/// §LAY.3 Everything the hash needs for one layer.
struct LayerLayout {
  int64_t layer_id = 0;  ///< the layer id from the configuration
  std::vector<int64_t> multipliers;          ///< §RNG.4, one per look-back slot (max_ngram)
  std::vector<std::vector<int64_t>> primes;  ///< §LAY.2 [order index n-2][head]
  std::vector<int64_t> offsets;              ///< §LAY.3 per column, col = (n-2)*heads + head
  int64_t num_embeddings = 0;                ///< §LAY.3 sum of the layer's primes

  /// §LAY.3 The modulus of column `col` (order-major flattening of `primes`).
  int64_t prime(int col) const;
};

/// §LAY.3 The layout record: built by BuildLayout() from a configuration, V
/// and the compressed pad; the only input of the hash (§HASH) besides the ids.
struct Layout {
  Profile profile = Profile::kV41;  ///< §CFG.1
  int64_t compressed_vocab_size = 0;  ///< V: every compressed id is < V
  int64_t pad = 0;                    ///< the *compressed* pad id
  int max_ngram = 0;                ///< largest n-gram order (§CFG)
  int heads = 0;                    ///< heads per order (§CFG)
  std::vector<LayerLayout> layers;    ///< in layer_ids order
  /// §LAY.6 Empty for a standard layout; for an explicit (non-standard) one,
  /// what the configuration stated, for every output to say so.
  std::string non_standard;

  /// §LAY.3 Number of n-gram orders, max_ngram - 1.
  int orders() const { return max_ngram - 1; }
  /// Columns per layer, (max_ngram - 1) * heads, order-major (§LAY.3).
  int columns() const { return orders() * heads; }
};

/// §LAY.5 SHA-256 (hex) of the layout's canonical description: profile, V,
/// compressed pad, max n-gram, heads, and per layer its id, multipliers and
/// primes. Two layouts hash alike exactly when they hash ids alike.
std::string LayoutFingerprint(const Layout& layout);

/// Builds the layout of `config` for a token map of `compressed_vocab_size` ids
/// whose entry for the raw pad id is `compressed_pad`.
/// §LAY.4 v4.1: refuses a config whose engram_num_embeddings differ from the
/// prime sums, or whose engram_compressed_vocab_size differs from V.
Layout BuildLayout(const EngramConfig& config, int64_t compressed_vocab_size, int64_t compressed_pad);

}  // namespace engram

#endif  // ENGRAM_REFERENCE_LAYOUT_H_
