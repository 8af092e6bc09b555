// cuda/host_launch.cc — HostBackend: the kernels of hash_kernels.h,
// storage_kernels.h and fusion_kernels.h (the v4.1 gate/update) run by
// loops over the same grid as engram_cuda.cu launches (blocks of
// kBlockThreads, g = block * kBlockThreads + thread, threads with g >= n
// idle), compiled by the host compiler. Also the emulated tensor-parallel
// lookup. This is what a machine without a GPU tests.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "cuda/engram_cuda.h"
#include "cuda/fusion_impl.h"
#include "cuda/hash_impl.h"
#include "cuda/storage_impl.h"
#include "base/error.h"

namespace engram::cuda {
namespace {

// The grid of a launch of n threads, visited block by block, thread by thread.
template <class Body>
void EmulateGrid(int64_t n, Body body) {
  if (n <= 0) return;
  const uint32_t blocks = BlocksFor(n);
  for (uint32_t block = 0; block < blocks; ++block) {
    for (uint32_t thread = 0; thread < kBlockThreads; ++thread) {
      const int64_t g = GlobalIndex(block, thread, kBlockThreads);
      if (g < n) body(g);
    }
  }
}

}  // namespace

void HostEmulateGrid(int64_t n, void (*thread)(const void* args, int64_t g), const void* args) {
  EmulateGrid(n, [&](int64_t g) { thread(args, g); });
}

HostBackend::HostBackend(int device) : device_(device) {}

void* HostBackend::Alloc(size_t bytes) {
  // 16-byte alignment, as the device's 16-byte stores need (cudaMalloc gives 256).
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (p == nullptr) throw Error("host backend: out of memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}
void HostBackend::Free(void* p) { std::free(p); }
void* HostBackend::AllocHostMapped(size_t bytes, void** kernel_ptr) {
  void* p = Alloc(bytes);
  *kernel_ptr = p;
  return p;
}
void HostBackend::FreeHostMapped(void* p) { Free(p); }
void HostBackend::ToBackend(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void HostBackend::ToHost(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void HostBackend::Fill(void* dst, int byte, size_t bytes) { std::memset(dst, byte, bytes); }
void HostBackend::Sync() {}

// Same thread counts as the device launches in engram_cuda.cu.
void HostBackend::Gather(const HashArgs& a) {
  EmulateGrid(a.tokens, [&](int64_t g) { GatherThread(a, g); });
}
void HostBackend::Mix(const HashArgs& a) {
  EmulateGrid(a.tokens, [&](int64_t g) { MixThread(a, g); });
}
void HostBackend::Hash(const HashArgs& a) {
  EmulateGrid(a.tokens * a.layers * (a.max_ngram - 1) * a.heads, [&](int64_t g) { HashThread(a, g); });
}
void HostBackend::Update(const HashArgs& a) {
  EmulateGrid(a.sequences, [&](int64_t g) { UpdateStateThread(a, static_cast<int32_t>(g)); });
}
void HostBackend::RollbackCheck(const HashArgs& a) {
  EmulateGrid(a.sequences, [&](int64_t g) { RollbackCheckThread(a, static_cast<int32_t>(g)); });
}
void HostBackend::RollbackApply(const HashArgs& a) {
  EmulateGrid(a.sequences, [&](int64_t g) { RollbackApplyThread(a, static_cast<int32_t>(g)); });
}
void HostBackend::Fork(const HashArgs& a) {
  EmulateGrid(a.sequences, [&](int64_t g) { ForkThread(a, static_cast<int32_t>(g)); });
}
void HostBackend::Lookup(const LookupArgs& a) {
  EmulateGrid(a.items * (a.head_dim / kElementsPerThread), [&](int64_t g) { LookupThread(a, g); });
}

void HostBackend::FusionGate(const FusionV41Args& a) {
  EmulateGrid(a.tokens * a.hc, [&](int64_t g) { FusionGateThread(a, g); });
}
void HostBackend::FusionUpdate(const FusionV41Args& a) {
  EmulateGrid(a.tokens * a.hc * a.dim, [&](int64_t g) { FusionUpdateThread(a, g); });
}

template class Hasher<HostBackend>;
template class Lookup<HostBackend>;
template class FusionV41<HostBackend>;

uint16_t Bf16SumAsDevice(uint16_t a, uint16_t b) {
  float fa, fb;
  const uint32_t ua = static_cast<uint32_t>(a) << 16, ub = static_cast<uint32_t>(b) << 16;
  std::memcpy(&fa, &ua, 4);
  std::memcpy(&fb, &ub, 4);
  const float sum = fa + fb;  // exact here when at most one operand is non-zero
  if (std::isnan(sum)) return 0x7FFF;  // NVIDIA's canonical NaN
  uint32_t u;
  std::memcpy(&u, &sum, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest even (no NaN here)
  return static_cast<uint16_t>(u >> 16);
}

std::vector<uint16_t> HostTensorParallelLookup(const RowSource& source, std::span<const int64_t> ids, int world) {
  std::vector<uint16_t> sum;
  for (int r = 0; r < world; ++r) {
    const Shard s = RowShard(source.rows(), r, world);
    HostLookup rank(source, TableMemory::kBackend, s.begin, s.end);
    std::vector<uint16_t> part = rank.Rows(ids);
    if (r == 0) {
      sum = std::move(part);  // world 1: no all_reduce, the partial is the result
    } else {
      for (size_t i = 0; i < sum.size(); ++i) sum[i] = Bf16SumAsDevice(sum[i], part[i]);
    }
  }
  return sum;
}

}  // namespace engram::cuda
