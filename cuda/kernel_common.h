// cuda/kernel_common.h — what every engram::cuda kernel shares: the grid
// logic, the error slot, and the division-free integer arithmetic.
//
// Each kernel in engram_cuda.cu and fusion_cuda.cu is a one-line __global__
// wrapper around a per-element function (hash_kernels.h, storage_kernels.h,
// fusion_kernels.h): it computes the global thread index g = block *
// block_dim + thread and, when g is in range, calls the *Thread function with
// g. The host launcher (host_launch.cc, fusion_host.cc) runs exactly the same
// functions over the same grid with loops standing in for blockIdx/threadIdx,
// compiled by the host compiler. That is how a machine without a GPU (CI)
// executes every kernel code path against the reference (reference/hash.cc,
// reference/storage.cc, reference/fusion.cc). The kernel headers mirror the
// reference's files: hash_kernels.h (reference/hash.*), storage_kernels.h
// (reference/storage.*), fusion_kernels.h (reference/fusion.*).
//
// Rules that keep the emulation faithful:
//  * no shared memory, no __syncthreads, no warp shuffles: each thread is
//    independent, so the order the host visits threads in cannot matter;
//  * no floating-point arithmetic in the decode: E4M3 x E8M0 -> bf16 is done
//    on integer bit fields (exactly, §STO.3), so device flush-to-zero or NaN
//    canonicalisation cannot make the GPU differ from the host;
//  * the only device-specific lines are marked ENGRAM_DEVICE_ONLY: the
//    64x64->128 high product (__umul64hi vs unsigned __int128), atomicMin,
//    the 8-byte load / 16-byte store of the lookup (memcpy on the host) and
//    the _rn float intrinsics of the fusion (plain float operations on the host).
#ifndef ENGRAM_CUDA_KERNEL_COMMON_H_
#define ENGRAM_CUDA_KERNEL_COMMON_H_


#include <cstdint>
#include <cmath>
#include <cstring>
#include <bit>

#ifdef __CUDACC__
#define ENGRAM_HD __host__ __device__ __forceinline__
#else
#define ENGRAM_HD inline
#endif

namespace engram::cuda {

// The lookup moves codes and bf16 results as little-endian words; so do
// NVIDIA GPUs.
static_assert(std::endian::native == std::endian::little, "engram::cuda assumes a little-endian host");

// ---------------------------------------------------------------------------
// Grid logic shared by kernels and host launcher
// ---------------------------------------------------------------------------

inline constexpr uint32_t kBlockThreads = 256;
// "No error" in an error slot: errors are recorded as the smallest offending
// index with atomicMin, so the slot starts at the largest value.
inline constexpr unsigned long long kNoError = ~0ull;

ENGRAM_HD int64_t GlobalIndex(uint32_t block, uint32_t thread, uint32_t block_dim) {
  return static_cast<int64_t>(block) * block_dim + thread;
}

// Blocks needed for n threads (n >= 1) of kBlockThreads.
inline uint32_t BlocksFor(int64_t n) {
  return static_cast<uint32_t>((n + kBlockThreads - 1) / kBlockThreads);
}

ENGRAM_HD void RecordError(unsigned long long* slot, unsigned long long index) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  atomicMin(slot, index);
#else
  if (index < *slot) *slot = index;
#endif
}

// ---------------------------------------------------------------------------
// §HASH.7 Division-free modulo
// ---------------------------------------------------------------------------

// High 64 bits of a 64x64-bit product.
ENGRAM_HD uint64_t MulHi64(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __umul64hi(a, b);
#else
  __extension__ typedef unsigned __int128 u128;
  return static_cast<uint64_t>((static_cast<u128>(a) * b) >> 64);
#endif
}

// §HASH.7 x mod p for every uint64 x: q' = umulhi(x, m) is floor(x/p) or one
// less, so one conditional subtraction finishes (proof in spec/hash.md).
ENGRAM_HD uint64_t ModP(uint64_t x, uint64_t p, uint64_t m) {
  const uint64_t q = MulHi64(x, m);
  uint64_t r = x - q * p;
  if (r >= p) r -= p;
  return r;
}

// Index arithmetic without 64-bit division. A GPU has no 64-bit divide
// instruction: `g / d` on int64 compiles to a software routine of ~70
// instructions, which dominated kernels that move a few bytes per thread.
// The same argument as §HASH.7 (for every d >= 1, not only primes: m =
// floor((2^64 - 1) / d) >= (2^64 - d) / d, so x * m / 2^64 > x / d - 1) makes
// umulhi(x, m) equal floor(x / d) or one less; one correction is exact.
//
// The same holds with 32 bits (x, d < 2^32, m32 = floor((2^32 - 1) / d)), and
// a 32 x 32 -> 64-bit product is one instruction where the 64-bit high
// product is several, so Quotient takes that path when x and d are below 2^32
// — every thread index of a grid below 2^32 threads, i.e. every realistic
// batch; the branch is the same for (almost) all threads of a warp.
// Build one with MakeFastDiv; the defaults (d = 1, d32 = 0: no 32-bit path)
// keep a FastDiv made some other way on the 64-bit path, which needs only d, m.
struct FastDiv {
  uint64_t d = 1;
  uint64_t m = ~0ull;  // floor((2^64 - 1) / d)
  uint32_t d32 = 0;    // d when d < 2^32, else 0 (no 32-bit path)
  uint32_t m32 = 0;    // floor((2^32 - 1) / d) when d < 2^32
};
inline FastDiv MakeFastDiv(uint64_t d) {  // d >= 1 (host side)
  if (d > 0xFFFFFFFFull) return FastDiv{d, ~0ull / d, 0u, 0u};
  return FastDiv{d, ~0ull / d, static_cast<uint32_t>(d), static_cast<uint32_t>(0xFFFFFFFFu / d)};
}
ENGRAM_HD uint64_t Quotient(uint64_t x, FastDiv f) {
  if (x <= 0xFFFFFFFFull && f.d32 != 0) {
    const uint32_t x32 = static_cast<uint32_t>(x);
    uint32_t q = static_cast<uint32_t>((static_cast<uint64_t>(x32) * f.m32) >> 32);
    if (x32 - q * f.d32 >= f.d32) ++q;  // q * d32 <= x32: no wrap-around
    return q;
  }
  uint64_t q = MulHi64(x, f.m);
  if (x - q * f.d >= f.d) ++q;
  return q;
}

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_KERNEL_COMMON_H_
