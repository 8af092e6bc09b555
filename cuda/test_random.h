// cuda/test_random.h — the CUDA tests' value source (tests only).
#ifndef ENGRAM_CUDA_TEST_RANDOM_H_
#define ENGRAM_CUDA_TEST_RANDOM_H_

#include <cstdint>

#include "base/splitmix64.h"

namespace engram::cuda {

// engram::SplitMix64 (base/splitmix64.h). The fusion and v4.1 gate
// properties draw one seed with RapidCheck and take every value of a case from
// it, so that shrinking a failure (thousands of values) shrinks only the shapes
// and stays fast.
using engram::SplitMix64;

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_TEST_RANDOM_H_
