// cuda/fusion.h — engram::cuda's fusion beyond the v4.1 gate/update
// (FusionV41, engram_cuda.h): the wkv projection of v4.1 (§FUS.2) and the
// demo-v1 layer (§FUS.5-§FUS.7), plus the gate as a function of the dot
// product for both profiles (§FUS.4, §FUS.6).
//
// Each class is a template over a Backend (HostBackend / DeviceBackend of
// engram_cuda.h), like FusionV41: the per-element work is in
// cuda/fusion_kernels.h, run through Backend::Run (fusion_host.cc,
// fusion_cuda.cu); the host logic (argument checks, buffers) is in
// cuda/fusion_impl.h. Every result is bit for bit the float32 mirror of
// reference/fusion.h (Precision::kFloat32): cuda/fusion_test.cc checks it.
//
// Argument errors throw engram::Error naming the argument and its value.
#ifndef ENGRAM_CUDA_FUSION_H_
#define ENGRAM_CUDA_FUSION_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cuda/engram_cuda.h"
#include "cuda/fusion_kernels.h"

namespace engram::cuda {

// §FUS.4 / §FUS.6 The gate of each dot product: v41 = true gives
// sigmoid(copysign(sqrt(max(|d|, 1e-6)), d)), false the demo's
// sigmoid(sqrt(max(|d|, 1e-6)) * sign(d)). Float32, the mirror of
// GateV41 / GateDemo (kFloat32) for float32 inputs.
template <class Backend>
std::vector<float> GateFunction(bool v41, std::span<const float> dots, int device = 0);

// §FUS.2 The wkv projection kv = bf16(e W^T) of a batch of tokens, with a
// bf16 weight (the mirror's LinearNoBias + ToBf16) or an fp8 weight with
// 32x32 E8M0 block scales, the activation quantized per 32 values first
// (§FUS.2.1 QuantizeActivation, §FUS.2.2 Fp8Linear(kFloat32) + ToBf16).
template <class Backend>
class Wkv {
 public:
  // bf16 weight [out_features][in_features] (bit patterns).
  Wkv(int64_t out_features, int64_t in_features, std::span<const uint16_t> weight, int device = 0);
  // fp8 weight: codes [out_features][in_features] E4M3fn, scales
  // [ceil(out_features/32)][in_features/32] E8M0; in_features a multiple of 32.
  Wkv(int64_t out_features, int64_t in_features, std::span<const uint8_t> codes, std::span<const uint8_t> scales,
      int device = 0);
  ~Wkv();
  Wkv(const Wkv&) = delete;
  Wkv& operator=(const Wkv&) = delete;

  // e: [tokens][in_features] bf16 -> kv [tokens][out_features] bf16. fp8:
  // act_codes()/act_scales() then hold the quantized activations; a
  // non-finite activation throws engram::Error naming its token and index
  // (§FUS.2.1), and then they are not updated.
  std::vector<uint16_t> Apply(std::span<const uint16_t> e);

  // Asynchronous form on backend pointers: features [0, split) of token t go
  // to kv[t * split + n], the rest (if split < out_features) to
  // kv_tail[t * (out_features - split) + n - split] — e.g. v4.1's keys and
  // value (split = hc * dim). split < 0 means out_features. Finish() waits
  // and throws for a non-finite activation.
  void Launch(int64_t tokens, const uint16_t* e, uint16_t* kv, uint16_t* kv_tail = nullptr, int64_t split = -1);
  void Finish();

  bool fp8() const { return fp8_; }
  int64_t out_features() const { return base_.out; }
  int64_t in_features() const { return base_.in; }
  const std::vector<uint8_t>& act_codes() const { return act_codes_; }    // [tokens][in] after Apply (fp8)
  const std::vector<uint8_t>& act_scales() const { return act_scales_; }  // [tokens][in/32] after Apply (fp8)
  Backend& backend() { return backend_; }

 private:
  void Reserve(int64_t tokens);

  Backend backend_;
  WkvArgs base_;
  bool fp8_ = false;
  Buffer<Backend> weight_, codes_, scales_, error_;
  Buffer<Backend> a_codes_, a_scales_;  // fp8 scratch, grown as needed
  int64_t token_capacity_ = 0;
  const uint16_t* last_e_ = nullptr;  // for Finish()'s message
  bool pending_ = false;
  std::vector<uint8_t> act_codes_, act_scales_;
};

// §STO.10 The demo-v1 multi-head embedding: a float32 table (copied into
// backend memory, or mapped pinned host memory) gathered by row id.
template <class Backend>
class FloatLookup {
 public:
  FloatLookup(const FloatRowSource& source, TableMemory memory = TableMemory::kBackend, int device = 0);
  ~FloatLookup();
  FloatLookup(const FloatLookup&) = delete;
  FloatLookup& operator=(const FloatLookup&) = delete;
  // out[i][0..width) = row ids[i]; throws engram::Error naming the index and
  // id of the first id outside [0, rows).
  std::vector<float> Rows(std::span<const int64_t> ids);
  int64_t rows() const { return args_.rows; }
  int64_t width() const { return static_cast<int64_t>(args_.by_width.d); }
  Backend& backend() { return backend_; }

 private:
  Backend backend_;
  FloatGatherArgs args_;
  void* host_table_ = nullptr;  // mapped: the host address
  Buffer<Backend> device_table_, error_;
};

// demo-v1 parameters of one Engram layer, float32 (reference DemoParams'
// shapes, spec §FUS.10).
struct DemoWeights {
  int32_t hc = 0, hidden = 0, in = 0;  // streams, hidden size, (max_ngram-1) * n_embed_per_ngram
  int32_t kernel = 0, dilation = 0;    // ShortConv kernel_size, dilation (= max_ngram_size)
  std::span<const float> key_w;        // [hc][hidden][in]
  std::span<const float> key_b;        // [hc][hidden]
  std::span<const float> norm1_w;      // [hc][hidden] RMSNorm of the key
  std::span<const float> norm2_w;      // [hc][hidden] RMSNorm of the hidden state
  std::span<const float> value_w;      // [hidden][in]
  std::span<const float> value_b;      // [hidden]
  std::span<const float> conv_norm_w;  // [hc][hidden] ShortConv RMSNorm
  std::span<const float> conv_w;       // [hc*hidden][kernel], tap 0 = oldest
};

// §FUS.5-§FUS.7 The demo-v1 layer: gates and values of a batch of tokens,
// ShortConv over a sequence, and both chained (Forward).
template <class Backend>
class FusionDemo {
 public:
  explicit FusionDemo(const DemoWeights& w, int device = 0);

  // §FUS.6 e: [tokens][in], hidden: [tokens][hc][hidden] -> value
  // [tokens][hc][hidden] (gate_c * Linear_v(e)); gates()/dots() then hold
  // [tokens][hc] (dots: g = sum / sqrt(hidden)). The mirror of DemoGateToken.
  std::vector<float> Gate(std::span<const float> e, std::span<const float> hidden);
  // §FUS.7 value: [steps][hc][hidden] -> ShortConv(value) [steps][hc*hidden].
  // The mirror of ShortConv(...).act.
  std::vector<float> ShortConv(std::span<const float> value, int64_t steps);
  // §FUS.7 The layer over `steps` tokens: e [steps][in], hidden
  // [steps][hc][hidden] -> output = value + ShortConv(value); hidden_after()
  // = output + hidden, gates(), dots() and values() are kept. The mirror of
  // DemoForward.
  std::vector<float> Forward(std::span<const float> e, std::span<const float> hidden, int64_t steps);

  // Asynchronous forms on backend pointers (sizes as above; proj is scratch
  // of [tokens][(hc+1)*hidden] floats, normed of [steps][hc*hidden]).
  void LaunchGate(int64_t tokens, const float* e, const float* hidden, float* proj, float* dots, float* gates,
                  float* value);
  // output, hidden and hidden_after are optional (nullptr): see ShortConvArgs.
  void LaunchShortConv(int64_t steps, const float* value, float* normed, float* act, float* output = nullptr,
                       const float* hidden = nullptr, float* hidden_after = nullptr);

  const std::vector<float>& gates() const { return gates_; }
  const std::vector<float>& dots() const { return dots_; }
  const std::vector<float>& values() const { return values_; }
  const std::vector<float>& hidden_after() const { return hidden_after_; }
  int32_t hc() const { return gate_.hc; }
  int32_t hidden() const { return gate_.hidden; }
  int32_t in() const { return gate_.in; }
  Backend& backend() { return backend_; }

 private:
  void CheckTokens(std::span<const float> e, std::span<const float> hidden, int64_t steps, const char* what) const;

  Backend backend_;
  DemoGateArgs gate_;
  ShortConvArgs conv_;
  Buffer<Backend> proj_w_, proj_b_, norm1_w_, norm2_w_, conv_norm_w_, conv_w_;
  std::vector<float> gates_, dots_, values_, hidden_after_;
};

using HostFloatLookup = FloatLookup<HostBackend>;
using DeviceFloatLookup = FloatLookup<DeviceBackend>;
using HostWkv = Wkv<HostBackend>;
using DeviceWkv = Wkv<DeviceBackend>;
using HostFusionDemo = FusionDemo<HostBackend>;
using DeviceFusionDemo = FusionDemo<DeviceBackend>;

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_FUSION_H_
