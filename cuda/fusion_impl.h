// cuda/fusion_impl.h — the host-side logic of GateFunction, Wkv and
// FusionDemo (cuda/fusion.h) and of FusionV41 (cuda/engram_cuda.h), shared by
// both backends: argument checks, buffers, kernel arguments and error
// messages. Included by fusion_host.cc and host_launch.cc (HostBackend) and
// by fusion_cuda.cu and engram_cuda.cu (DeviceBackend), which instantiate the
// templates (FusionV41 in the latter two). Internal.
#ifndef ENGRAM_CUDA_FUSION_IMPL_H_
#define ENGRAM_CUDA_FUSION_IMPL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "cuda/engram_cuda.h"
#include "cuda/fusion.h"
#include "cuda/fusion_kernels.h"
#include "base/error.h"

namespace engram::cuda {
namespace fusion_detail {

// The product of non-negative sizes, refused (naming `what`) beyond 2^62.
inline int64_t Product(std::initializer_list<int64_t> factors, const std::string& what) {
  int64_t p = 1;
  for (int64_t f : factors) {
    if (f < 0 || (f != 0 && p > (int64_t{1} << 62) / f)) throw Error(what + ": the size overflows");
    p *= f;
  }
  return p;
}

inline void CheckSize(size_t got, int64_t want, const std::string& what, const std::string& shape) {
  if (got != static_cast<size_t>(want)) {
    throw Error(what + " has " + std::to_string(got) + " values; " + shape + " = " + std::to_string(want));
  }
}

// A backend buffer of at least 16 bytes holding a copy of `bytes` from src.
template <class Backend>
Buffer<Backend> Upload(Backend& b, const void* src, size_t bytes) {
  Buffer<Backend> buf(&b, std::max<size_t>(bytes, 16));
  if (bytes > 0) b.ToBackend(buf.template as<void>(), src, bytes);
  return buf;
}

template <class Backend, class T>
Buffer<Backend> Upload(Backend& b, std::span<const T> v) {
  return Upload(b, v.data(), v.size() * sizeof(T));
}

template <class Backend>
Buffer<Backend> Scratch(Backend& b, size_t bytes) {
  return Buffer<Backend>(&b, std::max<size_t>(bytes, 16));
}

template <class T, class Backend>
std::vector<T> Download(Backend& b, const Buffer<Backend>& buf, size_t count) {
  std::vector<T> v(count);
  if (count > 0) b.ToHost(v.data(), buf.template as<void>(), count * sizeof(T));
  return v;
}

// "0x7f80" for a bf16 pattern.
inline std::string Bf16Text(uint16_t bits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%04x", static_cast<unsigned>(bits));
  return text;
}

inline int32_t Dim(int64_t v, const char* name, const char* what) {
  if (v < 1 || v > INT32_MAX) {
    throw Error(std::string(what) + ": " + name + " " + std::to_string(v) + " must be in [1, 2^31)");
  }
  return static_cast<int32_t>(v);
}

}  // namespace fusion_detail

// ---------------------------------------------------------------------------
// GateFunction
// ---------------------------------------------------------------------------

template <class Backend>
std::vector<float> GateFunction(bool v41, std::span<const float> dots, int device) {
  if (dots.empty()) return {};
  Backend b(device);
  Buffer<Backend> d = fusion_detail::Upload(b, dots);
  Buffer<Backend> out = fusion_detail::Scratch(b, dots.size() * sizeof(float));
  GateArgs a;
  a.v41 = v41;
  a.dot = d.template as<float>();
  a.gate = out.template as<float>();
  b.template Run<GateArgs, &GateFunctionThread>(a, static_cast<int64_t>(dots.size()));
  std::vector<float> gates = fusion_detail::Download<float>(b, out, dots.size());
  b.Sync();
  return gates;
}

// ---------------------------------------------------------------------------
// FloatLookup
// ---------------------------------------------------------------------------

template <class Backend>
FloatLookup<Backend>::FloatLookup(const FloatRowSource& source, TableMemory memory, int device) : backend_(device) {
  const int64_t rows = source.rows(), width = source.width();
  if (rows < 0 || width < 1) {
    throw Error("cuda float lookup: " + source.name() + " has " + std::to_string(rows) + " rows of width " +
                std::to_string(width));
  }
  const int64_t values = fusion_detail::Product({rows, width}, "cuda float lookup: " + source.name());
  std::vector<float> table;
  table.reserve(static_cast<size_t>(values));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> row = source.Row(r);
    fusion_detail::CheckSize(row.size(), width, "cuda float lookup: " + source.name() + " row " + std::to_string(r), "width");
    table.insert(table.end(), row.begin(), row.end());
  }
  const size_t bytes = std::max<size_t>(16, table.size() * sizeof(float));
  void* kernel_table = nullptr;
  if (memory == TableMemory::kHostMapped) {
    host_table_ = backend_.AllocHostMapped(bytes, &kernel_table);
    std::copy(table.begin(), table.end(), static_cast<float*>(host_table_));
  } else {
    device_table_ = fusion_detail::Upload(backend_, std::span<const float>(table));
    kernel_table = device_table_.template as<void>();
  }
  error_ = fusion_detail::Scratch(backend_, sizeof(unsigned long long));
  args_.table = static_cast<const float*>(kernel_table);
  args_.rows = rows;
  args_.by_width = MakeFastDiv(static_cast<uint64_t>(width));
  args_.error = error_.template as<unsigned long long>();
  backend_.Sync();
}

template <class Backend>
FloatLookup<Backend>::~FloatLookup() {
  try {
    backend_.Sync();
  } catch (...) {  // never throw from a destructor
  }
  if (host_table_ != nullptr) backend_.FreeHostMapped(host_table_);
}

template <class Backend>
std::vector<float> FloatLookup<Backend>::Rows(std::span<const int64_t> ids) {
  const int64_t values = fusion_detail::Product({static_cast<int64_t>(ids.size()), width()}, "cuda float lookup: ids");
  if (values == 0) return {};
  Buffer<Backend> in = fusion_detail::Upload(backend_, ids);
  Buffer<Backend> out = fusion_detail::Scratch(backend_, static_cast<size_t>(values) * sizeof(float));
  FloatGatherArgs a = args_;
  a.ids = in.template as<int64_t>();
  a.out = out.template as<float>();
  backend_.Fill(a.error, 0xFF, sizeof(unsigned long long));  // kNoError
  backend_.template Run<FloatGatherArgs, &FloatGatherThread>(a, values);
  unsigned long long bad = kNoError;
  backend_.ToHost(&bad, a.error, sizeof(bad));
  std::vector<float> rows = fusion_detail::Download<float>(backend_, out, static_cast<size_t>(values));
  backend_.Sync();
  if (bad != kNoError) {
    throw Error("row ids: index " + std::to_string(bad) + " (row " + std::to_string(ids[static_cast<size_t>(bad)]) +
                ") is outside [0, " + std::to_string(args_.rows) + ")");
  }
  return rows;
}

// ---------------------------------------------------------------------------
// Wkv
// ---------------------------------------------------------------------------

template <class Backend>
Wkv<Backend>::Wkv(int64_t out_features, int64_t in_features, std::span<const uint16_t> weight, int device)
    : backend_(device) {
  if (out_features < 1) throw Error("wkv: out_features " + std::to_string(out_features) + " must be >= 1");
  if (in_features < 1) throw Error("wkv: in_features " + std::to_string(in_features) + " must be >= 1");
  const int64_t n = fusion_detail::Product({out_features, in_features}, "wkv: weight [out_features][in_features]");
  fusion_detail::CheckSize(weight.size(), n, "wkv: weight", "out_features * in_features");
  weight_ = fusion_detail::Upload(backend_, weight);
  base_.in = in_features;
  base_.out = out_features;
  base_.weight = weight_.template as<uint16_t>();
}

template <class Backend>
Wkv<Backend>::Wkv(int64_t out_features, int64_t in_features, std::span<const uint8_t> codes,
                  std::span<const uint8_t> scales, int device)
    : backend_(device), fp8_(true) {
  if (out_features < 1) throw Error("wkv: out_features " + std::to_string(out_features) + " must be >= 1");
  if (in_features < 1 || in_features % kFp8Block != 0) {
    throw Error("wkv: in_features " + std::to_string(in_features) +
                " is not a positive multiple of 32 (the fp8 blocks of §FUS.2.1, §FUS.2.2)");
  }
  const int64_t n = fusion_detail::Product({out_features, in_features}, "wkv: weight codes [out_features][in_features]");
  fusion_detail::CheckSize(codes.size(), n, "wkv: weight codes", "out_features * in_features");
  const int64_t s = ((out_features + kFp8Block - 1) / kFp8Block) * (in_features / kFp8Block);
  fusion_detail::CheckSize(scales.size(), s, "wkv: weight scales", "ceil(out_features/32) * (in_features/32)");
  codes_ = fusion_detail::Upload(backend_, codes);
  scales_ = fusion_detail::Upload(backend_, scales);
  error_ = fusion_detail::Scratch(backend_, sizeof(unsigned long long));
  base_.in = in_features;
  base_.out = out_features;
  base_.w_codes = codes_.template as<uint8_t>();
  base_.w_scales = scales_.template as<uint8_t>();
  base_.error = error_.template as<unsigned long long>();
}

template <class Backend>
Wkv<Backend>::~Wkv() {
  try {
    backend_.Sync();
  } catch (...) {
  }
}

template <class Backend>
void Wkv<Backend>::Reserve(int64_t tokens) {
  if (tokens <= token_capacity_) return;
  const int64_t codes = fusion_detail::Product({tokens, base_.in}, "wkv: activation codes [tokens][in_features]");
  a_codes_ = fusion_detail::Scratch(backend_, static_cast<size_t>(codes));
  a_scales_ = fusion_detail::Scratch(backend_, static_cast<size_t>(codes / kFp8Block));
  token_capacity_ = tokens;
}

template <class Backend>
void Wkv<Backend>::Launch(int64_t tokens, const uint16_t* e, uint16_t* kv, uint16_t* kv_tail, int64_t split) {
  if (pending_) Finish();
  if (tokens < 0) throw Error("wkv: tokens " + std::to_string(tokens) + " is negative");
  if (split < 0) split = base_.out;
  if (split > base_.out) {
    throw Error("wkv: split " + std::to_string(split) + " is beyond out_features " + std::to_string(base_.out));
  }
  if (split < base_.out && kv_tail == nullptr) throw Error("wkv: split " + std::to_string(split) + " needs kv_tail");
  WkvArgs a = base_;
  a.tokens = tokens;
  a.split = split;
  a.e = e;
  a.kv = kv;
  a.kv_tail = kv_tail;
  if (tokens == 0) return;
  // Everything that can throw comes before the call is marked pending, so a
  // refused launch leaves no stale error slot for Finish() to read.
  const int64_t n = fusion_detail::Product({tokens, base_.out}, "wkv: kv [tokens][out_features]");
  if (fp8_) {
    Reserve(tokens);
    a.a_codes = a_codes_.template as<uint8_t>();
    a.a_scales = a_scales_.template as<uint8_t>();
    backend_.Fill(a.error, 0xFF, sizeof(unsigned long long));
  }
  last_e_ = e;
  pending_ = true;
  if (fp8_) {
    backend_.template Run<WkvArgs, &ActQuantThread>(a, tokens * (base_.in / kFp8Block));
    backend_.template Run<WkvArgs, &WkvFp8Thread>(a, n);
  } else {
    backend_.template Run<WkvArgs, &WkvBf16Thread>(a, n);
  }
}

template <class Backend>
void Wkv<Backend>::Finish() {
  if (!pending_) return;
  pending_ = false;
  backend_.Sync();
  if (!fp8_) return;
  unsigned long long bad = kNoError;
  backend_.ToHost(&bad, error_.template as<void>(), sizeof bad);
  if (bad == kNoError) return;
  const int64_t index = static_cast<int64_t>(bad);
  uint16_t bits = 0;
  backend_.ToHost(&bits, last_e_ + index, sizeof bits);
  throw Error("wkv: activation e[" + std::to_string(index / base_.in) + "][" + std::to_string(index % base_.in) +
              "] is " + ((bits & 0x7Fu) != 0 ? "NaN" : (bits & 0x8000u) != 0 ? "-inf" : "inf") + " (bf16 " +
              fusion_detail::Bf16Text(bits) +
              "); the fp8 quantization is specified for finite activations only (§FUS.2.1)");
}

template <class Backend>
std::vector<uint16_t> Wkv<Backend>::Apply(std::span<const uint16_t> e) {
  const size_t in = static_cast<size_t>(base_.in);
  if (e.size() % in != 0) {
    throw Error("wkv: e has " + std::to_string(e.size()) + " values, not a multiple of in_features " +
                std::to_string(in));
  }
  const int64_t tokens = static_cast<int64_t>(e.size() / in);
  const size_t kv_values = static_cast<size_t>(fusion_detail::Product({tokens, base_.out}, "wkv: kv"));
  Buffer<Backend> de = fusion_detail::Upload(backend_, e);
  Buffer<Backend> dkv = fusion_detail::Scratch(backend_, kv_values * sizeof(uint16_t));
  Launch(tokens, de.template as<uint16_t>(), dkv.template as<uint16_t>());
  Finish();
  std::vector<uint16_t> kv = fusion_detail::Download<uint16_t>(backend_, dkv, kv_values);
  if (fp8_) {
    act_codes_ = tokens > 0 ? fusion_detail::Download<uint8_t>(backend_, a_codes_, e.size()) : std::vector<uint8_t>{};
    act_scales_ = tokens > 0 ? fusion_detail::Download<uint8_t>(backend_, a_scales_, e.size() / kFp8Block)
                             : std::vector<uint8_t>{};
  }
  backend_.Sync();
  return kv;
}

// ---------------------------------------------------------------------------
// FusionDemo
// ---------------------------------------------------------------------------

template <class Backend>
FusionDemo<Backend>::FusionDemo(const DemoWeights& w, int device) : backend_(device) {
  using fusion_detail::CheckSize;
  using fusion_detail::Product;
  const char* what = "demo-v1 fusion";
  const int32_t hc = fusion_detail::Dim(w.hc, "hc", what), hidden = fusion_detail::Dim(w.hidden, "hidden", what);
  const int32_t in = fusion_detail::Dim(w.in, "in", what), kernel = fusion_detail::Dim(w.kernel, "kernel", what);
  const int32_t dilation = fusion_detail::Dim(w.dilation, "dilation", what);
  const int64_t streams = Product({hc, hidden}, "demo-v1 fusion: hc * hidden");
  CheckSize(w.key_w.size(), Product({hc, hidden, in}, "demo-v1 fusion: key_w"), "demo-v1 fusion: key_w",
            "hc * hidden * in");
  CheckSize(w.key_b.size(), streams, "demo-v1 fusion: key_b", "hc * hidden");
  CheckSize(w.norm1_w.size(), streams, "demo-v1 fusion: norm1_w", "hc * hidden");
  CheckSize(w.norm2_w.size(), streams, "demo-v1 fusion: norm2_w", "hc * hidden");
  CheckSize(w.value_w.size(), Product({hidden, in}, "demo-v1 fusion: value_w"), "demo-v1 fusion: value_w",
            "hidden * in");
  CheckSize(w.value_b.size(), hidden, "demo-v1 fusion: value_b", "hidden");
  CheckSize(w.conv_norm_w.size(), streams, "demo-v1 fusion: conv_norm_w", "hc * hidden");
  CheckSize(w.conv_w.size(), Product({streams, kernel}, "demo-v1 fusion: conv_w"), "demo-v1 fusion: conv_w",
            "hc * hidden * kernel");
  // The keys of every stream and the value projection as one Linear.
  std::vector<float> proj_w(w.key_w.begin(), w.key_w.end()), proj_b(w.key_b.begin(), w.key_b.end());
  proj_w.insert(proj_w.end(), w.value_w.begin(), w.value_w.end());
  proj_b.insert(proj_b.end(), w.value_b.begin(), w.value_b.end());
  proj_w_ = fusion_detail::Upload(backend_, std::span<const float>(proj_w));
  proj_b_ = fusion_detail::Upload(backend_, std::span<const float>(proj_b));
  norm1_w_ = fusion_detail::Upload(backend_, w.norm1_w);
  norm2_w_ = fusion_detail::Upload(backend_, w.norm2_w);
  conv_norm_w_ = fusion_detail::Upload(backend_, w.conv_norm_w);
  conv_w_ = fusion_detail::Upload(backend_, w.conv_w);
  gate_.hc = hc;
  gate_.hidden = hidden;
  gate_.in = in;
  gate_.sqrt_hidden = static_cast<float>(std::sqrt(static_cast<double>(hidden)));  // math.sqrt, then float32
  gate_.proj_w = proj_w_.template as<float>();
  gate_.proj_b = proj_b_.template as<float>();
  gate_.norm1_w = norm1_w_.template as<float>();
  gate_.norm2_w = norm2_w_.template as<float>();
  conv_.hc = hc;
  conv_.hidden = hidden;
  conv_.kernel = kernel;
  conv_.dilation = dilation;
  conv_.norm_w = conv_norm_w_.template as<float>();
  conv_.conv_w = conv_w_.template as<float>();
}

template <class Backend>
void FusionDemo<Backend>::CheckTokens(std::span<const float> e, std::span<const float> hidden, int64_t steps,
                                      const char* what) const {
  if (steps < 0) throw Error(std::string(what) + ": steps " + std::to_string(steps) + " is negative");
  fusion_detail::CheckSize(e.size(), fusion_detail::Product({steps, gate_.in}, what), std::string(what) + ": e",
                           "tokens * in");
  fusion_detail::CheckSize(hidden.size(), fusion_detail::Product({steps, gate_.hc, gate_.hidden}, what),
                           std::string(what) + ": hidden", "tokens * hc * hidden");
}

template <class Backend>
void FusionDemo<Backend>::LaunchGate(int64_t tokens, const float* e, const float* hidden, float* proj, float* dots,
                                     float* gates, float* value) {
  if (tokens < 0) throw Error("demo-v1 gate: tokens " + std::to_string(tokens) + " is negative");
  if (tokens == 0) return;
  DemoGateArgs a = gate_;
  a.tokens = tokens;
  a.e = e;
  a.hidden_in = hidden;
  a.proj = proj;
  a.g = dots;
  a.gate = gates;
  a.value = value;
  const int64_t streams = tokens * gate_.hc;
  backend_.template Run<DemoGateArgs, &DemoProjThread>(a, (streams + tokens) * gate_.hidden);
  backend_.template Run<DemoGateArgs, &DemoGateThread>(a, streams);
  backend_.template Run<DemoGateArgs, &DemoValueThread>(a, streams * gate_.hidden);
}

template <class Backend>
void FusionDemo<Backend>::LaunchShortConv(int64_t steps, const float* value, float* normed, float* act, float* output,
                                          const float* hidden, float* hidden_after) {
  if (steps < 0) throw Error("ShortConv: steps " + std::to_string(steps) + " is negative");
  if (steps == 0) return;
  ShortConvArgs a = conv_;
  a.steps = steps;
  a.value = value;
  a.normed = normed;
  a.act = act;
  a.output = output;
  a.hidden_in = hidden;
  a.hidden_after = output != nullptr && hidden != nullptr ? hidden_after : nullptr;
  const int64_t streams = steps * conv_.hc;
  backend_.template Run<ShortConvArgs, &ConvNormThread>(a, streams);
  backend_.template Run<ShortConvArgs, &ConvThread>(a, streams * conv_.hidden);
}

template <class Backend>
std::vector<float> FusionDemo<Backend>::Gate(std::span<const float> e, std::span<const float> hidden) {
  const size_t in = static_cast<size_t>(gate_.in);
  if (e.size() % in != 0) {
    throw Error("demo-v1 gate: e has " + std::to_string(e.size()) + " values, not a multiple of in " + std::to_string(in));
  }
  const int64_t tokens = static_cast<int64_t>(e.size() / in);
  CheckTokens(e, hidden, tokens, "demo-v1 gate");
  const size_t streams = static_cast<size_t>(tokens) * static_cast<size_t>(gate_.hc);
  const size_t values = streams * static_cast<size_t>(gate_.hidden);
  Buffer<Backend> de = fusion_detail::Upload(backend_, e), dh = fusion_detail::Upload(backend_, hidden);
  Buffer<Backend> proj = fusion_detail::Scratch(backend_, (values + static_cast<size_t>(tokens) * gate_.hidden) * 4);
  Buffer<Backend> dots = fusion_detail::Scratch(backend_, streams * 4), gates = fusion_detail::Scratch(backend_, streams * 4);
  Buffer<Backend> value = fusion_detail::Scratch(backend_, values * 4);
  LaunchGate(tokens, de.template as<float>(), dh.template as<float>(), proj.template as<float>(),
             dots.template as<float>(), gates.template as<float>(), value.template as<float>());
  backend_.Sync();
  dots_ = fusion_detail::Download<float>(backend_, dots, streams);
  gates_ = fusion_detail::Download<float>(backend_, gates, streams);
  values_ = fusion_detail::Download<float>(backend_, value, values);
  backend_.Sync();
  return values_;
}

template <class Backend>
std::vector<float> FusionDemo<Backend>::ShortConv(std::span<const float> value, int64_t steps) {
  if (steps < 0) throw Error("ShortConv: steps " + std::to_string(steps) + " is negative");
  const int64_t n = fusion_detail::Product({steps, conv_.hc, conv_.hidden}, "ShortConv: value");
  fusion_detail::CheckSize(value.size(), n, "ShortConv: value", "steps * hc * hidden");
  Buffer<Backend> dv = fusion_detail::Upload(backend_, value);
  Buffer<Backend> normed = fusion_detail::Scratch(backend_, value.size() * 4);
  Buffer<Backend> act = fusion_detail::Scratch(backend_, value.size() * 4);
  LaunchShortConv(steps, dv.template as<float>(), normed.template as<float>(), act.template as<float>());
  backend_.Sync();
  std::vector<float> out = fusion_detail::Download<float>(backend_, act, value.size());
  backend_.Sync();
  return out;
}

template <class Backend>
std::vector<float> FusionDemo<Backend>::Forward(std::span<const float> e, std::span<const float> hidden,
                                                int64_t steps) {
  CheckTokens(e, hidden, steps, "demo-v1 forward");
  const size_t streams = static_cast<size_t>(steps) * static_cast<size_t>(gate_.hc);
  const size_t values = streams * static_cast<size_t>(gate_.hidden);
  Buffer<Backend> de = fusion_detail::Upload(backend_, e), dh = fusion_detail::Upload(backend_, hidden);
  Buffer<Backend> proj = fusion_detail::Scratch(backend_, (values + static_cast<size_t>(steps) * gate_.hidden) * 4);
  Buffer<Backend> dots = fusion_detail::Scratch(backend_, streams * 4), gates = fusion_detail::Scratch(backend_, streams * 4);
  Buffer<Backend> value = fusion_detail::Scratch(backend_, values * 4), normed = fusion_detail::Scratch(backend_, values * 4);
  Buffer<Backend> act = fusion_detail::Scratch(backend_, values * 4), output = fusion_detail::Scratch(backend_, values * 4);
  Buffer<Backend> after = fusion_detail::Scratch(backend_, values * 4);
  LaunchGate(steps, de.template as<float>(), dh.template as<float>(), proj.template as<float>(),
             dots.template as<float>(), gates.template as<float>(), value.template as<float>());
  // Same backend (one stream): the conv kernels run after the gate kernels.
  LaunchShortConv(steps, value.template as<float>(), normed.template as<float>(), act.template as<float>(),
                  output.template as<float>(), dh.template as<float>(), after.template as<float>());
  backend_.Sync();
  dots_ = fusion_detail::Download<float>(backend_, dots, streams);
  gates_ = fusion_detail::Download<float>(backend_, gates, streams);
  values_ = fusion_detail::Download<float>(backend_, value, values);
  hidden_after_ = fusion_detail::Download<float>(backend_, after, values);
  std::vector<float> out = fusion_detail::Download<float>(backend_, output, values);
  backend_.Sync();
  return out;
}

// ---------------------------------------------------------------------------
// FusionV41
// ---------------------------------------------------------------------------

template <class Backend>
FusionV41<Backend>::FusionV41(int32_t hc, int32_t dim, double eps, std::span<const uint16_t> q_weight,
                              std::span<const uint16_t> k_weight, int device)
    : backend_(device) {
  if (hc < 1 || dim < 1) throw Error("v4.1 fusion: hc " + std::to_string(hc) + " and dim " + std::to_string(dim) + " must be >= 1");
  const size_t n = static_cast<size_t>(hc) * static_cast<size_t>(dim);
  if (q_weight.size() != n || k_weight.size() != n) {
    throw Error("v4.1 fusion: q_weight has " + std::to_string(q_weight.size()) + " and k_weight " +
                std::to_string(k_weight.size()) + " values; hc * dim = " + std::to_string(n));
  }
  qw_ = Buffer<Backend>(&backend_, n * 2);
  kw_ = Buffer<Backend>(&backend_, n * 2);
  backend_.ToBackend(qw_.template as<void>(), q_weight.data(), n * 2);
  backend_.ToBackend(kw_.template as<void>(), k_weight.data(), n * 2);
  base_.hc = hc;
  base_.dim = dim;
  base_.eps = static_cast<float>(eps);  // a Python float added to a float32 tensor
  base_.inv_sqrt_dim = static_cast<float>(std::pow(static_cast<double>(dim), -0.5));  // dim**-0.5, then float32
  base_.q_weight = qw_.template as<uint16_t>();
  base_.k_weight = kw_.template as<uint16_t>();
}

template <class Backend>
void FusionV41<Backend>::Launch(int64_t tokens, const uint16_t* x, const uint16_t* key, const uint16_t* value,
                                const uint8_t* live, float* dot, float* gate, uint16_t* out) {
  FusionV41Args a = base_;
  a.tokens = tokens;
  a.x = x;
  a.key = key;
  a.value = value;
  a.live = live;
  a.dot = dot;
  a.gate = gate;
  a.out = out;
  if (tokens == 0) return;
  backend_.FusionGate(a);
  backend_.FusionUpdate(a);
}

template <class Backend>
std::vector<uint16_t> FusionV41<Backend>::Apply(std::span<const uint16_t> x, std::span<const uint16_t> key,
                                                std::span<const uint16_t> value, std::span<const uint8_t> live) {
  const size_t per_token = static_cast<size_t>(base_.hc) * static_cast<size_t>(base_.dim);
  if (x.size() % per_token != 0) {
    throw Error("v4.1 fusion: x has " + std::to_string(x.size()) + " values, not a multiple of hc * dim = " + std::to_string(per_token));
  }
  const size_t tokens = x.size() / per_token;
  if (key.size() != x.size()) throw Error("v4.1 fusion: key has " + std::to_string(key.size()) + " values, x has " + std::to_string(x.size()));
  if (value.size() != tokens * static_cast<size_t>(base_.dim)) {
    throw Error("v4.1 fusion: value has " + std::to_string(value.size()) + " values; tokens * dim = " +
                std::to_string(tokens * static_cast<size_t>(base_.dim)));
  }
  if (!live.empty() && live.size() != tokens) {
    throw Error("v4.1 fusion: mask has " + std::to_string(live.size()) + " entries for " + std::to_string(tokens) + " tokens");
  }
  auto up = [&](const void* src, size_t bytes) {
    Buffer<Backend> b(&backend_, std::max<size_t>(bytes, 16));
    if (bytes > 0) backend_.ToBackend(b.template as<void>(), src, bytes);
    return b;
  };
  Buffer<Backend> dx = up(x.data(), x.size() * 2), dk = up(key.data(), key.size() * 2), dv = up(value.data(), value.size() * 2);
  Buffer<Backend> dl = up(live.data(), live.size());
  Buffer<Backend> ddot(&backend_, std::max<size_t>(16, tokens * static_cast<size_t>(base_.hc) * 4));
  Buffer<Backend> dgate(&backend_, std::max<size_t>(16, tokens * static_cast<size_t>(base_.hc) * 4));
  Buffer<Backend> dout(&backend_, std::max<size_t>(16, x.size() * 2));
  Launch(static_cast<int64_t>(tokens), dx.template as<uint16_t>(), dk.template as<uint16_t>(), dv.template as<uint16_t>(),
         live.empty() ? nullptr : dl.template as<uint8_t>(), ddot.template as<float>(), dgate.template as<float>(),
         dout.template as<uint16_t>());
  backend_.Sync();
  std::vector<uint16_t> out(x.size());
  gates_.assign(tokens * static_cast<size_t>(base_.hc), 0.0f);
  dots_.assign(gates_.size(), 0.0f);
  if (!out.empty()) {
    backend_.ToHost(out.data(), dout.template as<void>(), out.size() * 2);
    backend_.ToHost(gates_.data(), dgate.template as<void>(), gates_.size() * 4);
    backend_.ToHost(dots_.data(), ddot.template as<void>(), dots_.size() * 4);
  }
  return out;
}

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_FUSION_IMPL_H_
