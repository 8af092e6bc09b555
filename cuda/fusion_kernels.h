// cuda/fusion_kernels.h — the per-element work of engram::cuda's fusion
// kernels, the device mirror of reference/fusion.*: the float32 operations
// (FMul/FAdd/FDiv/FSqrt, bf16 conversions), the v4.1 gate and update after
// wkv (FusionV41), the gate as a function of the dot product (both profiles),
// the wkv projection (bf16 weight; fp8 activations + 32x32 block-scaled fp8
// weight), and the demo-v1 layer (key/value projections, gate, value,
// ShortConv, output).
//
// Same rules as the other kernel headers (kernel_common.h): every kernel is a
// function F(const Args&, int64_t g) run once per g in [0, n) — the v4.1
// gate/update through DeviceBackend/HostBackend's FusionGate/FusionUpdate
// (engram_cuda.cu, host_launch.cc), the rest by Backend::Run<Args, F>
// (a templated __global__ wrapper in fusion_cuda.cu, the host grid loop in
// fusion_host.cc) —, threads are independent (no shared memory, no
// __syncthreads, no shuffles, no float atomics; the only atomic is the
// integer atomicMin of RecordError), and every float32 operation goes through
// FMul/FAdd/FDiv/FSqrt (below: the _rn intrinsics on the device, so
// nvcc cannot contract a*b+c into an FMA; plain float operations on the host).
// Each thread's sums are sequential in increasing index from +0, exactly as
// the float32 mirror of reference/fusion.h (§FUS.8) writes them, so every
// result is bit for bit the mirror's. The only ENGRAM_DEVICE_ONLY lines of
// this file are the _rn intrinsics in FMul/FAdd/FDiv/FSqrt; the other
// device-specific code is that of the helpers it calls (atomicMin in
// RecordError, kernel_common.h).
//
// exp: sigmoid and SiLU are evaluated in double and rounded once to float32,
// as the mirror does. On the device exp(double) is CUDA's, which may differ
// from glibc's by an ulp of a double; that changes the float32 result only in
// the rare case that it sits on a float32 rounding boundary (README).
#ifndef ENGRAM_CUDA_FUSION_KERNELS_H_
#define ENGRAM_CUDA_FUSION_KERNELS_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuda/kernel_common.h"
#include "cuda/storage_kernels.h"  // DecodeElementBits (the fp8 wkv weight)

namespace engram::cuda {

// ---------------------------------------------------------------------------
// Scalars
// ---------------------------------------------------------------------------

// Every float32 operation is one IEEE round-to-nearest operation, exactly as
// the mirror's Round(double op) of float32 operands (double rounding is
// innocuous for +, *, /, sqrt). On the device the _rn intrinsics keep nvcc
// from contracting a*b+c into an FMA (which would round once instead of
// twice); the host compiler in ISO C++ mode does not contract.
ENGRAM_HD float FMul(float a, float b) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
ENGRAM_HD float FAdd(float a, float b) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
ENGRAM_HD float FDiv(float a, float b) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
ENGRAM_HD float FSqrt(float a) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

ENGRAM_HD float Bf16Float(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// float32 -> bf16, round to nearest even; every NaN -> 0x7FC0 (§STO.3, §FUS.3).
ENGRAM_HD uint16_t FloatToBf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0) return 0x7FC0u;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

ENGRAM_HD float FloatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

ENGRAM_HD uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

ENGRAM_HD bool IsNaN(float x) { return x != x; }

// |x| by clearing the sign bit (NaN stays NaN).
ENGRAM_HD float FAbs(float x) { return FloatFromBits(FloatBits(x) & 0x7FFFFFFFu); }

// §FUS.8 sigmoid: 1 / (1 + exp(-x)) in double, rounded once to float32.
ENGRAM_HD float SigmoidF(float x) {
  return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x))));
}

// §FUS.7 SiLU: x / (1 + exp(-x)) in double, rounded once to float32.
ENGRAM_HD float SiluF(float x) {
  const double d = static_cast<double>(x);
  return static_cast<float>(d / (1.0 + std::exp(-d)));
}

// The float32 nearest 1e-6: the clamp of both gates (the mirror's Round(1e-6)).
inline constexpr float kGateClamp = static_cast<float>(1e-6);

// §FUS.4 v4.1: sigmoid(copysign(sqrt(max(|dot|, 1e-6)), dot)); NaN stays NaN
// (torch's clamp_min), ±0 give sigmoid(±0.001).
ENGRAM_HD float GateV41F(float dot) {
  const float a = FAbs(dot);
  const float clamped = IsNaN(a) ? a : (a < kGateClamp ? kGateClamp : a);
  return SigmoidF(std::copysign(FSqrt(clamped), dot));
}

// §FUS.6 demo-v1: sigmoid(sqrt(max(|g|, 1e-6)) * sign(g)), torch's sign(g) =
// (0 < g) - (g < 0): 0 for ±0 and NaN, so the gate is 0.5 at ±0 and NaN at NaN
// (sqrt(NaN) * 0).
ENGRAM_HD float GateDemoF(float g) {
  const float a = FAbs(g);
  const float clamped = IsNaN(a) ? a : (a < kGateClamp ? kGateClamp : a);
  const float sign = (0.0f < g ? 1.0f : 0.0f) - (g < 0.0f ? 1.0f : 0.0f);  // exact: -1, 0 or 1
  return SigmoidF(FMul(FSqrt(clamped), sign));
}

// ---------------------------------------------------------------------------
// §FUS.3 v4.1 gate and update after wkv, the float32 mirror of §FUS.8
// ---------------------------------------------------------------------------

struct FusionV41Args {
  int64_t tokens = 0;
  int32_t hc = 0;          // streams
  int32_t dim = 0;
  float eps = 0;           // norm_eps rounded to float32
  float inv_sqrt_dim = 0;  // float32(dim ** -0.5), computed on the host as the mirror does
  const uint16_t* x = nullptr;         // [tokens][hc][dim] bf16: the hidden streams h = x_c
  const uint16_t* key = nullptr;       // [tokens][hc][dim] bf16: k_c (wkv output)
  const uint16_t* value = nullptr;     // [tokens][dim] bf16: v (wkv output)
  const uint16_t* q_weight = nullptr;  // [hc][dim] bf16
  const uint16_t* k_weight = nullptr;  // [hc][dim] bf16
  const uint8_t* live = nullptr;       // optional [tokens]; 0 = masked position (gate 0)
  float* dot = nullptr;                // [tokens][hc] out
  float* gate = nullptr;               // [tokens][hc] out
  uint16_t* out = nullptr;             // [tokens][hc][dim] bf16 out: h + gate * v
};

// Kernel 1, one thread per (token, stream): the norms, the dot product and
// the gate, in the mirror's order (sums sequential from +0).
ENGRAM_HD void FusionGateThread(const FusionV41Args& a, int64_t g) {
  const int64_t t = g / a.hc;
  const int32_t c = static_cast<int32_t>(g % a.hc);
  const uint16_t* h = a.x + g * a.dim;
  const uint16_t* k = a.key + g * a.dim;
  const uint16_t* qw = a.q_weight + static_cast<int64_t>(c) * a.dim;
  const uint16_t* kw = a.k_weight + static_cast<int64_t>(c) * a.dim;
  const float n = static_cast<float>(a.dim);
  float sum_h2 = 0.0f, sum_k2 = 0.0f, sum_hwk = 0.0f;
  for (int32_t i = 0; i < a.dim; ++i) {
    const float hi = Bf16Float(h[i]);
    sum_h2 = FAdd(sum_h2, FMul(hi, hi));
  }
  for (int32_t i = 0; i < a.dim; ++i) {
    const float ki = Bf16Float(k[i]);
    sum_k2 = FAdd(sum_k2, FMul(ki, ki));
  }
  const float rstd_h = FDiv(1.0f, FSqrt(FAdd(FDiv(sum_h2, n), a.eps)));
  const float rstd_k = FDiv(1.0f, FSqrt(FAdd(FDiv(sum_k2, n), a.eps)));
  const float rstd = FMul(rstd_h, rstd_k);
  for (int32_t i = 0; i < a.dim; ++i) {
    const float w = FMul(Bf16Float(qw[i]), Bf16Float(kw[i]));  // exact: 16 significant bits
    sum_hwk = FAdd(sum_hwk, FMul(FMul(Bf16Float(h[i]), w), Bf16Float(k[i])));
  }
  const float dot = FMul(FMul(sum_hwk, rstd), a.inv_sqrt_dim);
  // §FUS.4 sigmoid(copysign(sqrt(max(|dot|, 1e-6)), dot)); NaN stays NaN.
  const float abs_dot = dot < 0.0f ? -dot : (dot == 0.0f ? 0.0f : dot);
  const float clamp = 1e-6f;  // the float32 nearest 1e-6, as the mirror's Round(1e-6)
  const float clamped = abs_dot != abs_dot ? abs_dot : (abs_dot < clamp ? clamp : abs_dot);
  const float root = FSqrt(clamped);
  const float signed_root = std::copysign(root, dot);
  // The mirror evaluates 1 / (1 + exp(-x)) in double and rounds once.
  const float gate = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(signed_root))));
  a.dot[g] = dot;
  a.gate[g] = (a.live != nullptr && a.live[t] == 0) ? 0.0f : gate;  // masked_fill: exactly +0
}

// Kernel 2, one thread per element: out = bf16(h + gate * v).
ENGRAM_HD void FusionUpdateThread(const FusionV41Args& a, int64_t g) {
  const int64_t stream_index = g / a.dim;  // t * hc + c
  const int64_t t = stream_index / a.hc;
  const int32_t i = static_cast<int32_t>(g % a.dim);
  const float v = Bf16Float(a.value[t * a.dim + i]);
  a.out[g] = FloatToBf16Bits(FAdd(Bf16Float(a.x[g]), FMul(a.gate[stream_index], v)));
}

// ---------------------------------------------------------------------------
// §FUS.4 / §FUS.6 The gate as a function of the dot product (engram_gate)
// ---------------------------------------------------------------------------

struct GateArgs {
  bool v41 = true;           // true: GateV41F (copysign), false: GateDemoF (sign())
  const float* dot = nullptr;  // [n]
  float* gate = nullptr;       // [n] out
};

// One thread per value.
ENGRAM_HD void GateFunctionThread(const GateArgs& a, int64_t g) {
  a.gate[g] = a.v41 ? GateV41F(a.dot[g]) : GateDemoF(a.dot[g]);
}

// ---------------------------------------------------------------------------
// §FUS.2 wkv: kv = e W^T, bf16 out
// ---------------------------------------------------------------------------

inline constexpr int64_t kFp8Block = 32;  // §FUS.2.1 / §FUS.2.2 block width

// §STO.1 An E4M3fn code as a float (exact; NaN codes give NaN): the element
// decode of storage_kernels.h at scale 2^0 (127), which is exact in bf16.
ENGRAM_HD float E4M3Float(uint8_t code) { return Bf16Float(DecodeElementBits(code, 127)); }

// §STO.2 An E8M0 byte as a float: 2^(s - 127) (0x00 is 2^-127, a float32
// subnormal; 0xFF is NaN): the decode of 1.0 (code 0x38) at scale s, exact.
ENGRAM_HD float E8M0Float(uint8_t s) { return Bf16Float(DecodeElementBits(0x38, s)); }

// x rounded to an integer, ties to even, for 0 <= x < 2^22: adding 2^23
// leaves no fraction bits, so the float addition rounds exactly there.
ENGRAM_HD float RoundToIntegerEven(float x) { return FAdd(FAdd(x, 8388608.0f), -8388608.0f); }

// §FUS.2.1 E4M3fn code of a float32 value: nearest, ties to the even code,
// saturating at ±448 (the kernel clamps before its satfinite cast); NaN ->
// 0x7F. Within a binade the codes are (8 + m) * 2^(E-3) (subnormals m * 2^-9),
// so the even integer of the rounded significand is the even code.
ENGRAM_HD uint8_t EncodeE4M3(float v) {
  const uint32_t bits = FloatBits(v);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  if (IsNaN(v)) return 0x7F;
  const float a = FAbs(v);
  if (a >= 448.0f) return static_cast<uint8_t>(sign | 0x7Eu);
  if (a < 0.015625f) {  // below 2^-6, the smallest normal: quantum 2^-9; 8 rounds to code 0x08 = 2^-6
    const float q = RoundToIntegerEven(FMul(a, 512.0f));  // exact scaling
    return static_cast<uint8_t>(sign | static_cast<uint32_t>(q));
  }
  const int32_t e = static_cast<int32_t>((FloatBits(a) >> 23) & 0xFFu) - 127;  // -6 .. 8
  const float to_significand = FloatFromBits(static_cast<uint32_t>(3 - e + 127) << 23);  // 2^(3-e)
  const uint32_t r = static_cast<uint32_t>(RoundToIntegerEven(FMul(a, to_significand)));  // 8 .. 16
  // r = 16 carries into the next exponent with mantissa 0, as the code layout does.
  return static_cast<uint8_t>(sign | ((static_cast<uint32_t>(e + 7) << 3) + (r - 8)));
}

struct WkvArgs {
  int64_t tokens = 0;
  int64_t in = 0;    // in_features (fp8: a multiple of 32)
  int64_t out = 0;   // out_features
  int64_t split = 0;  // features [0, split) -> kv[t][split], [split, out) -> kv_tail[t][out - split]
  const uint16_t* e = nullptr;         // [tokens][in] bf16 activations
  const uint16_t* weight = nullptr;    // bf16 weight [out][in] (plain wkv)
  const uint8_t* w_codes = nullptr;    // fp8: E4M3fn [out][in]
  const uint8_t* w_scales = nullptr;   // fp8: E8M0 [ceil(out/32)][in/32]
  uint8_t* a_codes = nullptr;          // fp8: [tokens][in] quantized activations (ActQuantThread out)
  uint8_t* a_scales = nullptr;         // fp8: [tokens][in/32] their E8M0 scales
  unsigned long long* error = nullptr;  // fp8: smallest index t * in + k of a non-finite activation
  uint16_t* kv = nullptr;              // [tokens][split] bf16 out
  uint16_t* kv_tail = nullptr;         // [tokens][out - split] bf16 out (unused when split == out)
};

ENGRAM_HD void StoreKv(const WkvArgs& a, int64_t t, int64_t n, float acc) {
  const uint16_t bits = FloatToBf16Bits(acc);
  if (n < a.split) {
    a.kv[t * a.split + n] = bits;
  } else {
    a.kv_tail[t * (a.out - a.split) + (n - a.split)] = bits;
  }
}

// Plain wkv (§FUS.2, the mirror's LinearNoBias + ToBf16), one thread per
// (token, output feature): sum_k e[k] * W[n][k] sequential from +0, each
// product and partial sum rounded to float32, then bf16 (nearest even).
ENGRAM_HD void WkvBf16Thread(const WkvArgs& a, int64_t g) {
  const int64_t t = g / a.out;
  const int64_t n = g % a.out;
  const uint16_t* e = a.e + t * a.in;
  const uint16_t* w = a.weight + n * a.in;
  float acc = 0.0f;
  for (int64_t k = 0; k < a.in; ++k) acc = FAdd(acc, FMul(Bf16Float(e[k]), Bf16Float(w[k])));
  StoreKv(a, t, n, acc);
}

// §FUS.2.1 act_quant, one thread per (token, 32-wide block): amax =
// max(max|x|, fl32(1e-4)), t = fl32(amax * fl32(1/448)), scale = 2^ceil(log2 t)
// from t's bits (t >= 1e-4/448 is normal), codes = e4m3(fl32(x / scale)).
// A non-finite activation is recorded (the host refuses the call).
ENGRAM_HD void ActQuantThread(const WkvArgs& a, int64_t g) {
  const int64_t blocks = a.in / kFp8Block;
  const int64_t t = g / blocks;
  const int64_t first = (g % blocks) * kFp8Block;
  const uint16_t* x = a.e + t * a.in + first;
  float amax = 0.0f;
  for (int64_t i = 0; i < kFp8Block; ++i) {
    const float v = Bf16Float(x[i]);
    if ((x[i] & 0x7F80u) == 0x7F80u) RecordError(a.error, static_cast<unsigned long long>(t * a.in + first + i));
    const float av = FAbs(v);
    amax = amax < av ? av : amax;
  }
  constexpr float kAmaxFloor = static_cast<float>(1e-4);
  constexpr float kInv448 = static_cast<float>(1.0 / 448.0);
  amax = amax < kAmaxFloor ? kAmaxFloor : amax;
  const uint32_t tb = FloatBits(FMul(amax, kInv448));
  const int32_t exponent = static_cast<int32_t>((tb >> 23) & 0xFFu) - 127 + ((tb & 0x7FFFFFu) != 0 ? 1 : 0);
  a.a_scales[g] = static_cast<uint8_t>(exponent + 127);
  const float scale = FloatFromBits(static_cast<uint32_t>(exponent + 127) << 23);  // 2^exponent, -22 <= exponent <= 128
  for (int64_t i = 0; i < kFp8Block; ++i) a.a_codes[t * a.in + first + i] = EncodeE4M3(FDiv(Bf16Float(x[i]), scale));
}

// §FUS.2.2 fp8 GEMM with 32x32 weight blocks, one thread per (token, output
// feature), the mirror of Fp8Linear(kFloat32): per K block a float32 sum of
// the code products (each exact in float32), then
// acc = fl32(acc + fl32(fl32(partial * a_scale) * w_scale)), blocks in K order;
// then bf16.
ENGRAM_HD void WkvFp8Thread(const WkvArgs& a, int64_t g) {
  const int64_t t = g / a.out;
  const int64_t n = g % a.out;
  const int64_t blocks = a.in / kFp8Block;
  const uint8_t* ac = a.a_codes + t * a.in;
  const uint8_t* wc = a.w_codes + n * a.in;
  const uint8_t* ws = a.w_scales + (n / kFp8Block) * blocks;  // row block n / 32
  float acc = 0.0f;
  for (int64_t kb = 0; kb < blocks; ++kb) {
    float partial = 0.0f;
    for (int64_t i = kb * kFp8Block; i < (kb + 1) * kFp8Block; ++i) {
      partial = FAdd(partial, FMul(E4M3Float(ac[i]), E4M3Float(wc[i])));
    }
    acc = FAdd(acc, FMul(FMul(partial, E8M0Float(a.a_scales[t * blocks + kb])), E8M0Float(ws[kb])));
  }
  StoreKv(a, t, n, acc);
}

// ---------------------------------------------------------------------------
// §STO.10 demo-v1 embedding rows: a float32 table gathered by row id
// ---------------------------------------------------------------------------

struct FloatGatherArgs {
  const float* table = nullptr;  // [rows][width]
  int64_t rows = 0;
  FastDiv by_width;              // width
  const int64_t* ids = nullptr;  // [items]
  float* out = nullptr;          // [items][width]
  unsigned long long* error = nullptr;  // smallest item whose id is outside [0, rows)
};

// One thread per output value: out[i][j] = table[ids[i]][j] (consecutive
// threads copy consecutive floats of a row). A bad id is recorded and its
// row left +0; the host then refuses the call.
ENGRAM_HD void FloatGatherThread(const FloatGatherArgs& a, int64_t g) {
  const int64_t item = static_cast<int64_t>(Quotient(static_cast<uint64_t>(g), a.by_width));
  const int64_t width = static_cast<int64_t>(a.by_width.d);
  const int64_t id = a.ids[item];
  if (id < 0 || id >= a.rows) {
    RecordError(a.error, static_cast<unsigned long long>(item));
    a.out[g] = 0.0f;
    return;
  }
  a.out[g] = a.table[id * width + (g - item * width)];
}

// ---------------------------------------------------------------------------
// §FUS.5-§FUS.7 demo-v1
// ---------------------------------------------------------------------------

// ShortConv's RMSNorm eps (1e-5 rounded to float32) and the gate norms' eps
// (torch.finfo(float32).eps = 2^-23, exact).
inline constexpr float kShortConvEpsF = static_cast<float>(1e-5);
inline constexpr float kGateNormEpsF = 1.0f / 8388608.0f;

// §FUS.5 rstd = 1 / sqrt(sum(x^2) / n + eps), the sum sequential from +0.
ENGRAM_HD float RmsRstd(const float* x, int32_t n, float eps) {
  float sum = 0.0f;
  for (int32_t i = 0; i < n; ++i) sum = FAdd(sum, FMul(x[i], x[i]));
  return FDiv(1.0f, FSqrt(FAdd(FDiv(sum, static_cast<float>(n)), eps)));
}

struct DemoGateArgs {
  int64_t tokens = 0;
  int32_t hc = 0, hidden = 0, in = 0;
  float sqrt_hidden = 0;          // fl32(math.sqrt(hidden)), computed on the host as the mirror does
  const float* proj_w = nullptr;  // [(hc+1)*hidden][in]: key_w [hc][hidden][in], then value_w [hidden][in]
  const float* proj_b = nullptr;  // [(hc+1)*hidden]: key_b, then value_b
  const float* norm1_w = nullptr;  // [hc][hidden] RMSNorm of the key
  const float* norm2_w = nullptr;  // [hc][hidden] RMSNorm of the hidden state
  const float* e = nullptr;        // [tokens][in]
  const float* hidden_in = nullptr;  // [tokens][hc][hidden]
  float* proj = nullptr;           // [tokens][(hc+1)*hidden]: keys Linear_c(e), then Linear_v(e)
  float* g = nullptr;              // [tokens][hc] out: sum / sqrt(hidden)
  float* gate = nullptr;           // [tokens][hc] out
  float* value = nullptr;          // [tokens][hc][hidden] out: gate_c * Linear_v(e)
};

// Kernel 1, one thread per (token, projected feature): every stream's key
// Linear_c(e) and the value projection Linear_v(e) as one Linear with bias
// (the mirror's LinearBias: sum_k e[k] * W[n][k] sequential from +0, + b[n]).
ENGRAM_HD void DemoProjThread(const DemoGateArgs& a, int64_t g) {
  const int64_t features = static_cast<int64_t>(a.hc + 1) * a.hidden;
  const int64_t t = g / features;
  const int64_t n = g % features;
  const float* e = a.e + t * a.in;
  const float* w = a.proj_w + n * a.in;
  float acc = 0.0f;
  for (int32_t k = 0; k < a.in; ++k) acc = FAdd(acc, FMul(e[k], w[k]));
  a.proj[g] = FAdd(acc, a.proj_b[n]);
}

// Kernel 2, one thread per (token, stream): k^ = RMSNorm1_c(key), q^ =
// RMSNorm2_c(hidden_c) (eps 2^-23, y = (x * rstd) * w), g = (sum_j k^_j q^_j)
// / sqrt(hidden), gate = GateDemoF(g).
ENGRAM_HD void DemoGateThread(const DemoGateArgs& a, int64_t g) {
  const int64_t t = g / a.hc;
  const int32_t c = static_cast<int32_t>(g % a.hc);
  const int64_t features = static_cast<int64_t>(a.hc + 1) * a.hidden;
  const float* key = a.proj + t * features + static_cast<int64_t>(c) * a.hidden;
  const float* h = a.hidden_in + g * a.hidden;
  const float* w1 = a.norm1_w + static_cast<int64_t>(c) * a.hidden;
  const float* w2 = a.norm2_w + static_cast<int64_t>(c) * a.hidden;
  const float rstd_k = RmsRstd(key, a.hidden, kGateNormEpsF);
  const float rstd_q = RmsRstd(h, a.hidden, kGateNormEpsF);
  float sum = 0.0f;
  for (int32_t j = 0; j < a.hidden; ++j) {
    const float kn = FMul(FMul(key[j], rstd_k), w1[j]);
    const float qn = FMul(FMul(h[j], rstd_q), w2[j]);
    sum = FAdd(sum, FMul(kn, qn));
  }
  const float gv = FDiv(sum, a.sqrt_hidden);
  a.g[g] = gv;
  a.gate[g] = GateDemoF(gv);
}

// Kernel 3, one thread per (token, stream, j): value = gate_c * Linear_v(e)_j.
ENGRAM_HD void DemoValueThread(const DemoGateArgs& a, int64_t g) {
  const int64_t stream_index = g / a.hidden;  // t * hc + c
  const int64_t t = stream_index / a.hc;
  const int64_t j = g % a.hidden;
  const int64_t features = static_cast<int64_t>(a.hc + 1) * a.hidden;
  a.value[g] = FMul(a.gate[stream_index], a.proj[t * features + static_cast<int64_t>(a.hc) * a.hidden + j]);
}

struct ShortConvArgs {
  int64_t steps = 0;
  int32_t hc = 0, hidden = 0, kernel = 0, dilation = 0;
  const float* norm_w = nullptr;  // [hc][hidden] ShortConv RMSNorm weights
  const float* conv_w = nullptr;  // [hc*hidden][kernel], tap 0 = oldest
  const float* value = nullptr;   // [steps][hc][hidden] (= [steps][hc*hidden] channels)
  float* normed = nullptr;        // [steps][hc*hidden] scratch: per-stream RMSNorm (eps 1e-5)
  float* act = nullptr;           // [steps][hc*hidden] out: SiLU(conv) = ShortConv(value)
  float* output = nullptr;        // optional [steps][hc*hidden] out: value + act
  const float* hidden_in = nullptr;  // optional [steps][hc][hidden]
  float* hidden_after = nullptr;  // optional (with output and hidden_in): output + hidden
};

// Kernel 1, one thread per (step, stream): n_c = RMSNorm_c(value_c; eps 1e-5).
ENGRAM_HD void ConvNormThread(const ShortConvArgs& a, int64_t g) {
  const int32_t c = static_cast<int32_t>(g % a.hc);
  const float* x = a.value + g * a.hidden;
  const float* w = a.norm_w + static_cast<int64_t>(c) * a.hidden;
  float* y = a.normed + g * a.hidden;
  const float rstd = RmsRstd(x, a.hidden, kShortConvEpsF);
  for (int32_t j = 0; j < a.hidden; ++j) y[j] = FMul(FMul(x[j], rstd), w[j]);
}

// Kernel 2, one thread per (step, channel): the causal dilated depthwise
// conv, conv[t] = sum_j W[j] * n[t - (kernel-1-j) * dilation] (taps before
// step 0 multiply the zero padding, as in the mirror: W * 0 is NaN for a
// non-finite W; the last tap is the present step), SiLU; then optionally output = value + act and
// hidden_after = output + hidden (§FUS.7).
ENGRAM_HD void ConvThread(const ShortConvArgs& a, int64_t g) {
  const int64_t channels = static_cast<int64_t>(a.hc) * a.hidden;
  const int64_t t = g / channels;
  const int64_t ch = g % channels;
  const float* w = a.conv_w + ch * a.kernel;
  float acc = 0.0f;
  for (int32_t j = 0; j < a.kernel; ++j) {
    const int64_t back = static_cast<int64_t>(a.kernel - 1 - j) * a.dilation;
    const float n = back > t ? 0.0f : a.normed[(t - back) * channels + ch];  // zero padding
    acc = FAdd(acc, FMul(w[j], n));
  }
  const float act = SiluF(acc);
  a.act[g] = act;
  if (a.output != nullptr) {
    const float out = FAdd(a.value[g], act);
    a.output[g] = out;
    if (a.hidden_after != nullptr) a.hidden_after[g] = FAdd(out, a.hidden_in[g]);
  }
}

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_FUSION_KERNELS_H_
