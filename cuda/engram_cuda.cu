// cuda/engram_cuda.cu — the CUDA kernels (one-line wrappers around the
// per-element functions of hash_kernels.h, storage_kernels.h and
// fusion_kernels.h), DeviceBackend, and the NCCL
// tensor-parallel lookup.
#include <cuda_runtime.h>
#ifdef ENGRAM_HAVE_NCCL
#include <nccl.h>
#endif

#include <string>
#include <vector>

#include "cuda/engram_cuda.h"
#include "cuda/fusion_impl.h"
#include "cuda/fusion_kernels.h"
#include "cuda/hash_impl.h"
#include "cuda/hash_kernels.h"
#include "cuda/kernel_common.h"
#include "cuda/storage_impl.h"
#include "cuda/storage_kernels.h"
#include "base/error.h"

namespace engram::cuda {
namespace {

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Error(std::string("CUDA: ") + what + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

#ifdef ENGRAM_HAVE_NCCL
void CheckNccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    std::string last;
    if (const char* l = ncclGetLastError(nullptr); l != nullptr && *l != '\0') last = std::string(" (") + l + ")";
    throw Error(std::string("NCCL: ") + what + " failed: " + ncclGetErrorString(r) + last);
  }
}
#endif

cudaStream_t AsStream(void* s) { return static_cast<cudaStream_t>(s); }

// Kernel wrappers: the grid logic of kernel_common.h (g = block * block_dim
// + thread, idle when g >= n), then the shared per-element function.
__global__ void GatherKernel(HashArgs a) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < a.tokens) GatherThread(a, g);
}

__global__ void MixKernel(HashArgs a) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < a.tokens) MixThread(a, g);
}

__global__ void HashKernel(HashArgs a, int64_t n) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < n) HashThread(a, g);
}

__global__ void UpdateStateKernel(HashArgs a) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < a.sequences) UpdateStateThread(a, static_cast<int32_t>(g));
}

__global__ void RollbackCheckKernel(HashArgs a) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < a.sequences) RollbackCheckThread(a, static_cast<int32_t>(g));
}

__global__ void RollbackApplyKernel(HashArgs a) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < a.sequences) RollbackApplyThread(a, static_cast<int32_t>(g));
}

__global__ void ForkKernel(HashArgs a) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < a.sequences) ForkThread(a, static_cast<int32_t>(g));
}

__global__ void LookupKernel(LookupArgs a, int64_t n) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < n) LookupThread(a, g);
}

__global__ void FusionGateKernel(FusionV41Args a, int64_t n) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < n) FusionGateThread(a, g);
}

__global__ void FusionUpdateKernel(FusionV41Args a, int64_t n) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < n) FusionUpdateThread(a, g);
}

}  // namespace

int DeviceCount() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: "no device" is an answer, not a failure
    return 0;
  }
  return n;
}

std::string DeviceDescription(int device) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(e);
  }
  if (device < 0 || device >= n) return "no CUDA device " + std::to_string(device) + " (" + std::to_string(n) + " found)";
  cudaDeviceProp p{};
  Check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  return std::string(p.name) + ", sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.totalGlobalMem >> 20) + " MiB, " + std::to_string(p.multiProcessorCount) + " SMs";
}

DeviceBackend::DeviceBackend(int device) : device_(device) {
  const int n = DeviceCount();
  if (device < 0 || device >= n) {
    throw Error("CUDA: device " + std::to_string(device) + " does not exist (" + std::to_string(n) + " devices)");
  }
  Check(cudaSetDevice(device_), "cudaSetDevice");
  cudaStream_t s = nullptr;
  Check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = s;
}

DeviceBackend::~DeviceBackend() {
  if (stream_ != nullptr) {
    cudaSetDevice(device_);
    cudaStreamSynchronize(AsStream(stream_));
    cudaStreamDestroy(AsStream(stream_));
  }
}

void* DeviceBackend::Alloc(size_t bytes) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error("CUDA: cudaMalloc of " + std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(e));
  }
  return p;
}

void DeviceBackend::Free(void* p) {
  cudaSetDevice(device_);
  cudaStreamSynchronize(AsStream(stream_));
  cudaFree(p);
}

void* DeviceBackend::AllocHostMapped(size_t bytes, void** kernel_ptr) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  void* p = nullptr;
  const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error("CUDA: cudaHostAlloc(mapped) of " + std::to_string(bytes) + " bytes failed: " + cudaGetErrorString(e));
  }
  Check(cudaHostGetDevicePointer(kernel_ptr, p, 0), "cudaHostGetDevicePointer");
  return p;
}

void DeviceBackend::FreeHostMapped(void* p) {
  cudaSetDevice(device_);
  cudaStreamSynchronize(AsStream(stream_));
  cudaFreeHost(p);
}

// Both copies return when the data has arrived (callers pass stack buffers).
void DeviceBackend::ToBackend(void* dst, const void* src, size_t bytes) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, AsStream(stream_)), "cudaMemcpyAsync(H2D)");
  Check(cudaStreamSynchronize(AsStream(stream_)), "cudaStreamSynchronize");
}

void DeviceBackend::ToHost(void* dst, const void* src, size_t bytes) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, AsStream(stream_)), "cudaMemcpyAsync(D2H)");
  Check(cudaStreamSynchronize(AsStream(stream_)), "cudaStreamSynchronize");
}

void DeviceBackend::Fill(void* dst, int byte, size_t bytes) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  Check(cudaMemsetAsync(dst, byte, bytes, AsStream(stream_)), "cudaMemsetAsync");
}

void DeviceBackend::Sync() {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  Check(cudaStreamSynchronize(AsStream(stream_)), "cudaStreamSynchronize (a kernel failed)");
}

void DeviceBackend::Gather(const HashArgs& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  GatherKernel<<<BlocksFor(a.tokens), kBlockThreads, 0, AsStream(stream_)>>>(a);
  Check(cudaGetLastError(), "launch of the gather kernel");
}

void DeviceBackend::Mix(const HashArgs& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  MixKernel<<<BlocksFor(a.tokens), kBlockThreads, 0, AsStream(stream_)>>>(a);
  Check(cudaGetLastError(), "launch of the mix kernel");
}

void DeviceBackend::Hash(const HashArgs& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  const int64_t n = a.tokens * a.layers * (a.max_ngram - 1) * a.heads;  // one thread per output value
  HashKernel<<<BlocksFor(n), kBlockThreads, 0, AsStream(stream_)>>>(a, n);
  Check(cudaGetLastError(), "launch of the hash kernel");
}

void DeviceBackend::Update(const HashArgs& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  UpdateStateKernel<<<BlocksFor(a.sequences), kBlockThreads, 0, AsStream(stream_)>>>(a);
  Check(cudaGetLastError(), "launch of the state update kernel");
}

void DeviceBackend::RollbackCheck(const HashArgs& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  RollbackCheckKernel<<<BlocksFor(a.sequences), kBlockThreads, 0, AsStream(stream_)>>>(a);
  Check(cudaGetLastError(), "launch of the rollback check kernel");
}

void DeviceBackend::RollbackApply(const HashArgs& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  RollbackApplyKernel<<<BlocksFor(a.sequences), kBlockThreads, 0, AsStream(stream_)>>>(a);
  Check(cudaGetLastError(), "launch of the rollback kernel");
}

void DeviceBackend::Fork(const HashArgs& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  ForkKernel<<<BlocksFor(a.sequences), kBlockThreads, 0, AsStream(stream_)>>>(a);
  Check(cudaGetLastError(), "launch of the fork kernel");
}

void DeviceBackend::Lookup(const LookupArgs& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  const int64_t n = a.items * (a.head_dim / kElementsPerThread);
  LookupKernel<<<BlocksFor(n), kBlockThreads, 0, AsStream(stream_)>>>(a, n);
  Check(cudaGetLastError(), "launch of the lookup kernel");
}

void DeviceBackend::FusionGate(const FusionV41Args& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  const int64_t n = a.tokens * a.hc;
  FusionGateKernel<<<BlocksFor(n), kBlockThreads, 0, AsStream(stream_)>>>(a, n);
  Check(cudaGetLastError(), "launch of the fusion gate kernel");
}

void DeviceBackend::FusionUpdate(const FusionV41Args& a) {
  Check(cudaSetDevice(device_), "cudaSetDevice");
  const int64_t n = a.tokens * a.hc * a.dim;
  FusionUpdateKernel<<<BlocksFor(n), kBlockThreads, 0, AsStream(stream_)>>>(a, n);
  Check(cudaGetLastError(), "launch of the fusion update kernel");
}

template class Hasher<DeviceBackend>;
template class Lookup<DeviceBackend>;
template class FusionV41<DeviceBackend>;

// ---------------------------------------------------------------------------
// §STO.7 Tensor parallel: a shard per GPU, NCCL all_reduce(sum, bf16)
// ---------------------------------------------------------------------------

TensorParallelLookup::TensorParallelLookup(const RowSource& source, int world, TableMemory memory) : world_(world) {
  const int n = DeviceCount();
  if (world < 1 || world > n) {
    throw Error("tensor parallel: world " + std::to_string(world) + " needs that many GPUs; " + std::to_string(n) +
                " found");
  }
  for (int r = 0; r < world; ++r) {
    const Shard s = RowShard(source.rows(), r, world);
    ranks_.push_back(std::make_unique<DeviceLookup>(source, memory, s.begin, s.end, r));
  }
#ifdef ENGRAM_HAVE_NCCL
  std::vector<ncclComm_t> comms(static_cast<size_t>(world));
  std::vector<int> devices;
  for (int r = 0; r < world; ++r) devices.push_back(r);
  CheckNccl(ncclCommInitAll(comms.data(), world, devices.data()), "ncclCommInitAll");
  for (ncclComm_t c : comms) comms_.push_back(c);
#else
  if (world > 1) throw Error("tensor parallel: this build has no NCCL (world " + std::to_string(world) + ")");
#endif
}

TensorParallelLookup::~TensorParallelLookup() {
#ifdef ENGRAM_HAVE_NCCL
  for (void* c : comms_) ncclCommDestroy(static_cast<ncclComm_t>(c));
#endif
}

std::vector<uint16_t> TensorParallelLookup::Rows(std::span<const int64_t> ids) {
  const size_t n = ids.size();
  const int64_t head_dim = ranks_[0]->head_dim();
  const size_t values = n * static_cast<size_t>(head_dim);
  std::vector<Buffer<DeviceBackend>> in, out;
  for (int r = 0; r < world_; ++r) {
    DeviceBackend& b = ranks_[static_cast<size_t>(r)]->backend();
    in.emplace_back(&b, std::max<size_t>(8, n * sizeof(int64_t)));
    out.emplace_back(&b, std::max<size_t>(16, values * 2));
    if (n > 0) b.ToBackend(in.back().as<void>(), ids.data(), n * sizeof(int64_t));
    ranks_[static_cast<size_t>(r)]->Launch(in.back().as<int64_t>(), static_cast<int64_t>(n), out.back().as<uint16_t>());
  }
#ifdef ENGRAM_HAVE_NCCL
  if (values > 0) {
    // One thread drives every communicator: the calls must be grouped.
    CheckNccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < world_; ++r) {
      DeviceBackend& b = ranks_[static_cast<size_t>(r)]->backend();
      Check(cudaSetDevice(b.device()), "cudaSetDevice");
      CheckNccl(ncclAllReduce(out[static_cast<size_t>(r)].as<void>(), out[static_cast<size_t>(r)].as<void>(), values,
                              ncclBfloat16, ncclSum, static_cast<ncclComm_t>(comms_[static_cast<size_t>(r)]),
                              AsStream(b.stream())),
                "ncclAllReduce(sum, bf16)");
    }
    CheckNccl(ncclGroupEnd(), "ncclGroupEnd");
  }
#endif
  for (int r = 0; r < world_; ++r) ranks_[static_cast<size_t>(r)]->Finish();  // sync + id check
  std::vector<uint16_t> result(values);
  if (values > 0) ranks_[0]->backend().ToHost(result.data(), out[0].as<void>(), values * 2);
  return result;
}

}  // namespace engram::cuda
