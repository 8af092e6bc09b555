// cuda/fusion_host.cc — HostBackend::Run, the generic host launch of the
// fusion kernels (cuda/fusion_kernels.h): F(a, g) over the same grid as the
// device launch, through host_launch.cc's EmulateGrid loop (HostEmulateGrid);
// and the HostBackend instantiations of GateFunction, Wkv and FusionDemo.
#include <cstdint>

#include "cuda/engram_cuda.h"
#include "cuda/fusion.h"
#include "cuda/fusion_impl.h"
#include "cuda/fusion_kernels.h"

namespace engram::cuda {

template <class Args, void (*F)(const Args&, int64_t)>
void HostBackend::Run(const Args& a, int64_t n) {
  HostEmulateGrid(n, [](const void* args, int64_t g) { F(*static_cast<const Args*>(args), g); }, &a);
}

// Every fusion kernel (fusion_cuda.cu has the same list for the device).
template void HostBackend::Run<GateArgs, &GateFunctionThread>(const GateArgs&, int64_t);
template void HostBackend::Run<FloatGatherArgs, &FloatGatherThread>(const FloatGatherArgs&, int64_t);
template void HostBackend::Run<WkvArgs, &WkvBf16Thread>(const WkvArgs&, int64_t);
template void HostBackend::Run<WkvArgs, &ActQuantThread>(const WkvArgs&, int64_t);
template void HostBackend::Run<WkvArgs, &WkvFp8Thread>(const WkvArgs&, int64_t);
template void HostBackend::Run<DemoGateArgs, &DemoProjThread>(const DemoGateArgs&, int64_t);
template void HostBackend::Run<DemoGateArgs, &DemoGateThread>(const DemoGateArgs&, int64_t);
template void HostBackend::Run<DemoGateArgs, &DemoValueThread>(const DemoGateArgs&, int64_t);
template void HostBackend::Run<ShortConvArgs, &ConvNormThread>(const ShortConvArgs&, int64_t);
template void HostBackend::Run<ShortConvArgs, &ConvThread>(const ShortConvArgs&, int64_t);

template std::vector<float> GateFunction<HostBackend>(bool, std::span<const float>, int);
template class FloatLookup<HostBackend>;
template class Wkv<HostBackend>;
template class FusionDemo<HostBackend>;

}  // namespace engram::cuda
