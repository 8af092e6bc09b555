// The benchmark's synthetic table, filled on the device (cuda/bench_fill.h).
#include "cuda/bench_fill.h"

#include "base/splitmix64.h"

namespace engram::cuda::bench {
namespace {

__global__ void FillTableKernel(uint8_t* p, int64_t rows, int64_t head_dim, uint64_t seed, Codes codes) {
  const int64_t row_bytes = head_dim + head_dim / 32;
  const int64_t n = rows * row_bytes;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = i; k < n; k += stride) {
    const uint64_t h = engram::SplitMix64Mix(seed + static_cast<uint64_t>(k) * engram::kSplitMix64Golden);  // a counter-based hash
    if (k % row_bytes >= head_dim) {
      p[k] = static_cast<uint8_t>(110 + h % 21);
    } else if (codes == Codes::kNormal) {
      p[k] = static_cast<uint8_t>(((h >> 8) & 0x80) | (8 + h % 119));  // magnitude 8 .. 0x7E
    } else {
      p[k] = static_cast<uint8_t>(((h >> 8) & 0x80) | (h % 127));  // magnitude 0 .. 0x7E
    }
  }
}

}  // namespace

cudaError_t FillTable(void* p, int64_t rows, int64_t head_dim, uint64_t seed, Codes codes, cudaStream_t s) {
  FillTableKernel<<<4096, 256, 0, s>>>(static_cast<uint8_t*>(p), rows, head_dim, seed, codes);
  const cudaError_t launched = cudaGetLastError();
  return launched != cudaSuccess ? launched : cudaStreamSynchronize(s);
}

}  // namespace engram::cuda::bench
