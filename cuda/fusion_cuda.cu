// cuda/fusion_cuda.cu — DeviceBackend::Run, the generic device launch of the
// fusion kernels: one templated __global__ wrapper (g = block * block_dim +
// thread, idle when g >= n, then the per-element function of
// cuda/fusion_kernels.h), 256-thread blocks on the backend's stream; and the
// DeviceBackend instantiations of GateFunction, Wkv and FusionDemo.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda/engram_cuda.h"
#include "cuda/fusion.h"
#include "cuda/fusion_impl.h"
#include "cuda/fusion_kernels.h"
#include "base/error.h"

namespace engram::cuda {
namespace {

void CheckCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Error(std::string("CUDA: ") + what + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  }
}

template <class Args, void (*F)(const Args&, int64_t)>
__global__ void RunKernel(Args a, int64_t n) {
  const int64_t g = GlobalIndex(blockIdx.x, threadIdx.x, blockDim.x);
  if (g < n) F(a, g);
}

}  // namespace

template <class Args, void (*F)(const Args&, int64_t)>
void DeviceBackend::Run(const Args& a, int64_t n) {
  if (n <= 0) return;
  CheckCuda(cudaSetDevice(device_), "cudaSetDevice");
  RunKernel<Args, F><<<BlocksFor(n), kBlockThreads, 0, static_cast<cudaStream_t>(stream_)>>>(a, n);
  CheckCuda(cudaGetLastError(), "launch of a fusion kernel");
}

// Every fusion kernel (fusion_host.cc has the same list for the host).
template void DeviceBackend::Run<GateArgs, &GateFunctionThread>(const GateArgs&, int64_t);
template void DeviceBackend::Run<FloatGatherArgs, &FloatGatherThread>(const FloatGatherArgs&, int64_t);
template void DeviceBackend::Run<WkvArgs, &WkvBf16Thread>(const WkvArgs&, int64_t);
template void DeviceBackend::Run<WkvArgs, &ActQuantThread>(const WkvArgs&, int64_t);
template void DeviceBackend::Run<WkvArgs, &WkvFp8Thread>(const WkvArgs&, int64_t);
template void DeviceBackend::Run<DemoGateArgs, &DemoProjThread>(const DemoGateArgs&, int64_t);
template void DeviceBackend::Run<DemoGateArgs, &DemoGateThread>(const DemoGateArgs&, int64_t);
template void DeviceBackend::Run<DemoGateArgs, &DemoValueThread>(const DemoGateArgs&, int64_t);
template void DeviceBackend::Run<ShortConvArgs, &ConvNormThread>(const ShortConvArgs&, int64_t);
template void DeviceBackend::Run<ShortConvArgs, &ConvThread>(const ShortConvArgs&, int64_t);

template std::vector<float> GateFunction<DeviceBackend>(bool, std::span<const float>, int);
template class FloatLookup<DeviceBackend>;
template class Wkv<DeviceBackend>;
template class FusionDemo<DeviceBackend>;

}  // namespace engram::cuda
