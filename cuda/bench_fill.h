// The benchmark's synthetic table, filled on the device (engram_cuda_bench,
// cuda/bench.cc). Its own CUDA file, so that the benchmark's host code (JSON
// output, the layout) is compiled once by the host compiler, not once per
// device architecture by nvcc as well.
#ifndef ENGRAM_CUDA_BENCH_FILL_H_
#define ENGRAM_CUDA_BENCH_FILL_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace engram::cuda::bench {

/// Which codes a benchmark table holds. The lookup kernel decodes a thread's 8
// elements two at a time when all 8 codes are normal and finite (as in a real
// table, whose elements are rarely 2^-6 below their block's scale), and one
// at a time otherwise, so the code mix changes the speed:
//  * kNormal: codes with exponent bits 1..15, random sign, no NaN (a real table);
//  * kUniform: every finite code equally likely (zeros and subnormals are
//    1/16 of the codes, so about 4 threads in 10, and nearly every warp,
//    take the per-element path).
// Scales are 110 .. 130 in both (§STO.5's ordinary rows).
enum class Codes { kNormal, kUniform };

/// Fills `rows` packed rows (head_dim codes, then head_dim / 32 scales each)
/// at device pointer `p` from a counter-based hash of `seed`, on stream `s`,
/// and waits for it. Returns the launch's error, else the stream's.
cudaError_t FillTable(void* p, int64_t rows, int64_t head_dim, uint64_t seed, Codes codes, cudaStream_t s);

}  // namespace engram::cuda::bench

#endif  // ENGRAM_CUDA_BENCH_FILL_H_
