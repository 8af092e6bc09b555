/// \file
/// spec/random.md — numpy-exact random numbers and the per-layer hash multipliers.
///
/// Engram draws its hash multipliers with numpy:
///   np.random.default_rng(seed + 10007 * layer_id).integers(0, bound, size=max_ngram, dtype=np.int64)
/// To be bit-exact without numpy we reproduce the exact chain numpy runs:
/// SeedSequence (§RNG.1) -> PCG64 (§RNG.2) -> bounded integers (§RNG.3) ->
/// multipliers (§RNG.4).
#ifndef ENGRAM_REFERENCE_RANDOM_H_
#define ENGRAM_REFERENCE_RANDOM_H_

#include <cstdint>
#include <string_view>
#include <vector>

namespace engram {

/// The 128-bit unsigned integer the PCG64 state and the 64-bit Lemire product
/// need. It is a GCC/Clang extension; `__extension__` keeps -Wpedantic quiet.
__extension__ typedef unsigned __int128 uint128_t;

/// §RNG.1 numpy.random.SeedSequence with no spawn key and the default pool size
/// of 4 uint32 words. `entropy` is the non-negative integer seed.
class SeedSequence {
 public:
  /// §RNG.1 steps 1-4: mixes `entropy` into the pool.
  explicit SeedSequence(uint64_t entropy);
  /// §RNG.1 The 4-word mixed entropy pool (SeedSequence.pool).
  const std::vector<uint32_t>& pool() const { return pool_; }
  /// §RNG.1 step 5 SeedSequence.generate_state(n, np.uint32).
  std::vector<uint32_t> GenerateState32(size_t n_words) const;
  /// §RNG.1 step 6 SeedSequence.generate_state(n, np.uint64): pairs of 32-bit words, low word first.
  std::vector<uint64_t> GenerateState64(size_t n_words) const;

 private:
  std::vector<uint32_t> pool_;
};

/// §RNG.2 numpy.random.PCG64: a 128-bit LCG with the XSL-RR 64-bit output.
class Pcg64 {
 public:
  /// §RNG.2 step 4 Seeds exactly as PCG64(SeedSequence(seed)) does.
  explicit Pcg64(const SeedSequence& seq);
  /// Seeds from explicit 128-bit state/increment halves (testing and vectors).
  Pcg64(uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo);

  /// §RNG.2 step 3: advance the LCG, then the XSL-RR output of the new state.
  uint64_t Next64();
  /// §RNG.2 step 5 numpy's next_uint32 for PCG64: one 64-bit draw serves two calls, low half first.
  uint32_t Next32();

  uint64_t state_hi() const;  ///< high 64 bits of the 128-bit state
  uint64_t state_lo() const;  ///< low 64 bits of the state
  uint64_t inc_hi() const;    ///< high 64 bits of the odd increment
  uint64_t inc_lo() const;    ///< low 64 bits of the increment

 private:
  uint128_t state_ = 0;
  uint128_t inc_ = 0;
  bool has_uint32_ = false;
  uint32_t uinteger_ = 0;
};

/// §RNG.3 The path numpy's random_bounded_uint64_fill takes for a range
/// `rng` = high - low - 1 (inclusive width minus one).
enum class BoundedPath {
  kConstant,   ///< rng == 0: every draw is `low`, no generator call
  kLemire32,   ///< rng < 2^32 - 1: Lemire's method on buffered 32-bit draws
  kMasked32,   ///< rng == 2^32 - 1: a buffered 32-bit draw as is
  kRaw64,      ///< rng == 2^64 - 1: a raw 64-bit draw
  kLemire64,   ///< otherwise: Lemire's method on 64-bit draws (128-bit product)
};
/// §RNG.3 The path for a range width `rng` = high - 1 - low (chosen once per call).
BoundedPath BoundedPathFor(uint64_t rng);
/// §RNG.3 The path's name in the vectors: "constant", "lemire32", "masked32", "raw64", "lemire64".
std::string_view BoundedPathName(BoundedPath path);

/// §RNG.3 Generator.integers(low, high, size=n, dtype=np.int64) with
/// endpoint=False. Requires low < high (throws engram::Error otherwise).
std::vector<int64_t> Integers(Pcg64& gen, int64_t low, int64_t high, size_t n);
/// §RNG.3 Same with high as an exclusive bound that may be 2^63 (numpy accepts it for int64).
/// high_exclusive is read as two's complement, so static_cast<uint128_t>(negative int64) works.
std::vector<int64_t> IntegersWide(Pcg64& gen, int64_t low, uint128_t high_exclusive, size_t n);

/// §RNG.4 bound = max(1, (INT64_MAX / V) / 2) for compressed vocab size V >= 1.
int64_t MultiplierBound(int64_t compressed_vocab_size);
/// §RNG.4 The layer seed: seed + 10007 * layer_id (throws on overflow / negative).
uint64_t LayerSeed(int64_t seed, int64_t layer_id);
/// §RNG.4 multipliers m_i = 2 r_i + 1, r = default_rng(LayerSeed).integers(0, bound, max_ngram).
std::vector<int64_t> LayerMultipliers(int64_t seed, int64_t layer_id, int64_t compressed_vocab_size,
                                      int max_ngram);

}  // namespace engram

#endif  // ENGRAM_REFERENCE_RANDOM_H_
