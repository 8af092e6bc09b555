// engram_cuda_bench — throughput of the engram::cuda kernels on one GPU,
// against the device's own copy bandwidth measured in the same run.
//
// Prints one JSON object on stdout. Figures (all timed with CUDA events on
// the kernels' stream, best of several repetitions after a warm-up):
//  * copyBandwidth: cudaMemcpy device-to-device of a large buffer; bytes/s
//    counts bytes read + bytes written (2 x size).
//  * hostToDeviceBandwidth: cudaMemcpy from pinned host memory.
//  * hash: V4.1-Flash layout (2 layers x 24 columns), raw ids through a
//    129280-entry token map, a prefill batch and a decode batch. Bytes =
//    ids read + rows written (8 + 384 bytes per token), against the copy
//    bandwidth; and fractionOfWriteBound = (time of a cudaMemset of the same
//    rows buffer) / (time of the hash): the goal is >= 0.8.
//  * lookup: 256-wide rows (264 packed bytes -> 512 bytes of bf16) from a
//    device-memory table of a few GiB and from a mapped pinned host table;
//    bytes = id + row read + row written; goal >= 80% of the copy bandwidth
//    (device table) — a mapped table is bounded by the host link instead.
// Goals are reported, never asserted. Options: --quick (small sizes),
// --device N, --host-table-gib G (0 skips the mapped-host table).
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/bench_fill.h"
#include "cuda/engram_cuda.h"
#include "reference/config.h"
#include "base/error.h"
#include "reference/layout.h"

namespace {

using engram::Error;
using namespace engram::cuda;
using engram::cuda::bench::Codes;
using engram::cuda::bench::FillTable;

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

void Nothing() {}

// Best time in seconds of `reps` runs of f() (after one warm-up) on stream s;
// after() runs outside the timed span (e.g. the id check of Finish()).
template <class F, class G = void (*)()>
double TimeBest(cudaStream_t s, int reps, F f, G after = Nothing) {
  cudaEvent_t a, b;
  Check(cudaEventCreate(&a), "cudaEventCreate");
  Check(cudaEventCreate(&b), "cudaEventCreate");
  f();
  Check(cudaStreamSynchronize(s), "warm-up");
  after();
  float best = 1e30f;
  for (int r = 0; r < reps; ++r) {
    Check(cudaEventRecord(a, s), "cudaEventRecord");
    f();
    Check(cudaEventRecord(b, s), "cudaEventRecord");
    Check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    Check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    best = std::min(best, ms);
    after();
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best / 1000.0;
}

uint64_t Lcg(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 33;
}

struct Options {
  bool quick = false;
  int device = 0;
  double host_table_gib = 8.0;
};

nlohmann::ordered_json BenchHash(const Options& o, double copy_bw, int64_t sequences, int64_t per_seq, const char* what) {
  const engram::Layout layout = engram::BuildLayout(engram::V41FlashConfig(), 99092, 2);
  engram::TokenMap map;
  map.source = "<bench map>";
  map.compressed_size = 99092;
  uint64_t s = 1;
  for (int64_t r = 0; r < 129280; ++r) map.map.push_back(r < 99092 ? r : static_cast<int64_t>(Lcg(s) % 99092));
  DeviceHasher h(layout, static_cast<int32_t>(sequences), &map, o.device);
  DeviceBackend& b = h.backend();
  const int64_t tokens = sequences * per_seq;
  std::vector<int64_t> ids(static_cast<size_t>(tokens)), offsets{0};
  std::vector<int32_t> slots;
  for (auto& id : ids) id = Lcg(s) % 50 == 0 ? -1 : static_cast<int64_t>(Lcg(s) % 129280);
  for (int64_t q = 0; q < sequences; ++q) {
    slots.push_back(static_cast<int32_t>(q));
    offsets.push_back(offsets.back() + per_seq);
  }
  Buffer<DeviceBackend> d_ids(&b, ids.size() * 8), d_off(&b, offsets.size() * 8), d_slots(&b, slots.size() * 4),
      d_rows(&b, static_cast<size_t>(tokens * h.values_per_token()) * 8);
  b.ToBackend(d_ids.as<void>(), ids.data(), d_ids.bytes());
  b.ToBackend(d_off.as<void>(), offsets.data(), d_off.bytes());
  b.ToBackend(d_slots.as<void>(), slots.data(), d_slots.bytes());
  const cudaStream_t st = static_cast<cudaStream_t>(b.stream());
  const double t = TimeBest(st, o.quick ? 3 : 10, [&] {
    h.Launch(d_slots.as<int32_t>(), d_off.as<int64_t>(), static_cast<int32_t>(sequences), d_ids.as<int64_t>(), tokens,
             d_rows.as<int64_t>());
  }, [&] { h.Finish(); });
  const double out_bytes = static_cast<double>(tokens) * h.values_per_token() * 8;
  const double bytes = out_bytes + static_cast<double>(tokens) * 8;
  // The output-write bound measured directly: cudaMemset of the same rows
  // buffer writes those bytes and nothing else, on the same stream.
  const double t_write = TimeBest(st, o.quick ? 3 : 10, [&] {
    Check(cudaMemsetAsync(d_rows.as<void>(), 0, static_cast<size_t>(out_bytes), st), "cudaMemsetAsync(rows)");
  });
  return {{"batch", what},
          {"sequences", sequences},
          {"tokensPerSequence", per_seq},
          {"tokens", tokens},
          {"seconds", t},
          {"tokensPerSecond", tokens / t},
          {"bytesPerSecond", bytes / t},
          {"fractionOfCopyBandwidth", bytes / t / copy_bw},
          {"writeBoundSeconds", t_write},
          {"fractionOfWriteBound", t_write / t},
          {"goal", ">= 0.8 of the output-write bound (fractionOfWriteBound: memset of the same rows / hash)"}};
}

nlohmann::ordered_json BenchLookup(const Options& o, double ref_bw, const char* ref_name, TableMemory memory,
                                   int64_t rows, int64_t items, Codes codes) {
  DeviceLookup lk(rows, 256, memory, o.device);
  DeviceBackend& b = lk.backend();
  const cudaStream_t st = static_cast<cudaStream_t>(b.stream());
  Check(FillTable(lk.kernel_table(), rows, 256, 42, codes, st), "the table fill kernel");
  std::vector<int64_t> ids(static_cast<size_t>(items));
  uint64_t s = 7;
  for (auto& id : ids) id = static_cast<int64_t>(((Lcg(s) << 31) ^ Lcg(s)) % static_cast<uint64_t>(rows));
  Buffer<DeviceBackend> d_ids(&b, ids.size() * 8), d_out(&b, static_cast<size_t>(items) * 512);
  b.ToBackend(d_ids.as<void>(), ids.data(), d_ids.bytes());
  const double t = TimeBest(st, o.quick ? 3 : 10, [&] { lk.Launch(d_ids.as<int64_t>(), items, d_out.as<uint16_t>()); },
                            [&] { lk.Finish(); });
  const double bytes = static_cast<double>(items) * (8 + 264 + 512);
  const double positions = static_cast<double>(items) / 24;  // 24 rows per position and layer
  return {{"table", memory == TableMemory::kBackend ? "device memory" : "mapped pinned host memory"},
          {"codes", codes == Codes::kNormal ? "normal (a real table's mix)" : "uniform (zeros and subnormals too)"},
          {"tableBytes", lk.table_bytes()},
          {"rows", rows},
          {"items", items},
          {"seconds", t},
          {"rowsPerSecond", items / t},
          {"tokensPerSecond", positions / t},
          {"bytesPerSecond", bytes / t},
          {"fractionOf", ref_name},
          {"fraction", bytes / t / ref_bw},
          {"goal", memory == TableMemory::kHostMapped ? "report only (host-link bound)"
                   : codes == Codes::kNormal ? ">= 0.8 of copy bandwidth"
                                             : "report only (the per-element decode path)"}};
}

int Run(const Options& o) {
  nlohmann::ordered_json out;
  out["device"] = DeviceDescription(o.device);
  if (DeviceCount() <= o.device) {
    out["skipped"] = "no CUDA device";
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
  }
  Check(cudaSetDevice(o.device), "cudaSetDevice");
  cudaStream_t st;
  Check(cudaStreamCreate(&st), "cudaStreamCreate");

  // Copy bandwidth: device-to-device and pinned host-to-device.
  const size_t copy_bytes = (o.quick ? 256ull : 2048ull) << 20;
  void *src = nullptr, *dst = nullptr, *pinned = nullptr;
  Check(cudaMalloc(&src, copy_bytes), "cudaMalloc");
  Check(cudaMalloc(&dst, copy_bytes), "cudaMalloc");
  Check(cudaMemsetAsync(src, 1, copy_bytes, st), "cudaMemset");
  const double t_copy = TimeBest(st, 10, [&] { Check(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, st), "D2D"); });
  const double copy_bw = 2.0 * copy_bytes / t_copy;
  const size_t h2d_bytes = (o.quick ? 64ull : 1024ull) << 20;
  Check(cudaMallocHost(&pinned, h2d_bytes), "cudaMallocHost");
  std::memset(pinned, 1, h2d_bytes);
  const double t_h2d = TimeBest(st, 5, [&] { Check(cudaMemcpyAsync(dst, pinned, h2d_bytes, cudaMemcpyHostToDevice, st), "H2D"); });
  const double h2d_bw = h2d_bytes / t_h2d;
  cudaFreeHost(pinned);
  cudaFree(src);
  cudaFree(dst);
  out["copyBandwidth"] = {{"bytes", copy_bytes}, {"seconds", t_copy}, {"bytesPerSecond", copy_bw},
                          {"counts", "read + write"}};
  out["hostToDeviceBandwidth"] = {{"bytes", h2d_bytes}, {"seconds", t_h2d}, {"bytesPerSecond", h2d_bw}};

  // Hash: a prefill batch and a decode step.
  out["hash"] = nlohmann::ordered_json::array();
  out["hash"].push_back(BenchHash(o, copy_bw, o.quick ? 16 : 256, o.quick ? 4096 : 16384, "prefill"));
  out["hash"].push_back(BenchHash(o, copy_bw, o.quick ? 1024 : 65536, 1, "decode"));

  // Lookup from device memory (a few GiB) and from mapped pinned host memory.
  out["lookup"] = nlohmann::ordered_json::array();
  const int64_t dev_rows = o.quick ? (1 << 20) : 12 * (1 << 20);  // 12 Mi rows x 264 B = 3.1 GiB
  for (Codes codes : {Codes::kNormal, Codes::kUniform}) {
    out["lookup"].push_back(
        BenchLookup(o, copy_bw, "copyBandwidth", TableMemory::kBackend, dev_rows, o.quick ? (1 << 18) : (1 << 22), codes));
  }
  double gib = o.host_table_gib;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const double host_gib = pages > 0 && page > 0 ? static_cast<double>(pages) * page / (1ull << 30) : 0;
  gib = std::min(gib, host_gib / 4);  // never pin more than a quarter of host RAM
  if (o.quick) gib = std::min(gib, 0.5);
  if (gib >= 0.25) {
    const int64_t rows = static_cast<int64_t>(gib * (1ull << 30) / 264);
    try {
      out["lookup"].push_back(BenchLookup(o, h2d_bw, "hostToDeviceBandwidth", TableMemory::kHostMapped, rows, o.quick ? (1 << 16) : (1 << 20),
                                          Codes::kNormal));
    } catch (const Error& e) {
      out["lookupHostMappedSkipped"] = e.what();
    }
  } else {
    out["lookupHostMappedSkipped"] = "host table of " + std::to_string(gib) + " GiB (host RAM " + std::to_string(host_gib) +
                                     " GiB) too small";
  }
  cudaStreamDestroy(st);
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      o.quick = true;
    } else if (a == "--device" && i + 1 < argc) {
      o.device = std::atoi(argv[++i]);
    } else if (a == "--host-table-gib" && i + 1 < argc) {
      o.host_table_gib = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: engram_cuda_bench [--quick] [--device N] [--host-table-gib G]\n");
      return 2;
    }
  }
  try {
    return Run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engram_cuda_bench: %s\n", e.what());
    return 1;
  }
}
