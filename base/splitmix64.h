/// \file
/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014; Vigna's splitmix64.c): the one definition every
/// part of the project uses.
///
/// Where the project uses it: the accumulated vectors' input stream
/// (spec/conformance.md §CONF.5, `SplitMix64Of`), the synthetic FP8 tables
/// (spec/storage.md §STO.5, `SplitMix64`), the generator's test inputs and
/// random cases, the synthetic weights of `engram explain`/`gate`/`bench`, and
/// the CUDA benchmarks and tests (the functions are `__host__ __device__`
/// under nvcc, so a kernel and its host reference compute the same values).
#ifndef ENGRAM_BASE_SPLITMIX64_H_
#define ENGRAM_BASE_SPLITMIX64_H_

#include <cstdint>

#if defined(__CUDACC__)
#define ENGRAM_SPLITMIX64_HD __host__ __device__
#else
#define ENGRAM_SPLITMIX64_HD
#endif

namespace engram {

/// The Weyl increment (2^64 / the golden ratio, odd).
inline constexpr uint64_t kSplitMix64Golden = 0x9E3779B97F4A7C15ULL;

/// The finaliser: a bijection of 64-bit words that mixes every input bit into
/// every output bit (Stafford's variant 13 of MurmurHash3's fmix64).
ENGRAM_SPLITMIX64_HD constexpr uint64_t SplitMix64Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// §CONF.5 SplitMix64(z): the increment applied once to the input, then the
/// finaliser. The i-th output of the stream started at s is SplitMix64Of(s + i
/// * golden) (i from 0), so any element is computed without the ones before.
ENGRAM_SPLITMIX64_HD constexpr uint64_t SplitMix64Of(uint64_t z) { return SplitMix64Mix(z + kSplitMix64Golden); }

/// The sequential generator: each Next() adds the increment to the state and
/// returns the finaliser of the new state.
struct SplitMix64 {
  uint64_t state = 0;
  ENGRAM_SPLITMIX64_HD constexpr uint64_t Next() { return SplitMix64Mix(state += kSplitMix64Golden); }
};

}  // namespace engram

#endif  // ENGRAM_BASE_SPLITMIX64_H_
