// cuda/test_random.h — the CUDA tests' value source (tests only).
#ifndef ENGRAM_CUDA_TEST_RANDOM_H_
#define ENGRAM_CUDA_TEST_RANDOM_H_

#include <cstdint>

namespace engram::cuda {

// SplitMix64 (a Weyl sequence through the SplitMix64 finaliser). The fusion
// and v4.1 gate properties draw one seed with RapidCheck and take every value
// of a case from it, so that shrinking a failure (thousands of values)
// shrinks only the shapes and stays fast.
struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_TEST_RANDOM_H_
