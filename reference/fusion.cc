// spec/fusion.md — gating and value fusion of both profiles, in float64 (the
// reference) and in the float32 mirror of DeepSeek's PyTorch code.
//
// Conventions of this file: every value is a double. In the float32 mirror a
// value is always a float32 number stored in a double, and R() rounds the
// result of every operation that torch performs in float32. Computing one
// +, -, *, / or sqrt in double and rounding once to float32 gives exactly the
// float32 result (double has more than 2*24+2 bits), so the mirror is bit-exact
// float32 arithmetic without relying on the compiler's float evaluation (no
// x87, no fused multiply-add: each product is rounded before it is added).
#include "reference/fusion.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "base/checked_math.h"
#include "base/error.h"
#include "reference/detail/short_conv.h"
#include "reference/storage.h"

namespace engram {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The spacing of bf16 values in the binade of x (x finite, nonzero): bf16 has
// 8 significant bits, normal exponents down to -126, subnormal spacing 2^-133.
double Bf16Quantum(double x) {
  int e = 0;
  std::frexp(x, &e);  // |x| = m * 2^e, m in [0.5, 1): the leading bit is 2^(e-1)
  return std::ldexp(1.0, std::max(e - 8, -133));
}

// The high 16 bits of f: a truncation, exact only when f is already a bf16
// value (or ±0, ±inf); FloatToBf16 (§STO.3) is the rounding conversion.
uint16_t TruncateToBf16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

// Row codes, scales and bf16 values decode exactly as spec/storage.md says.
double E4M3Value(uint8_t code) { return DecodeE4M3(code); }     // §STO.1
double E8M0Value(uint8_t s) { return DecodeE8M0(s); }            // §STO.2

void CheckSize(size_t got, size_t want, const std::string& what) {
  if (got != want) {
    throw Error(what + ": has " + std::to_string(got) + " values, expected " + std::to_string(want));
  }
}

// §ERR.3 The same against a product of dimensions, checked before it is
// compared: a product that wraps (4 · 2^62 = 0) would match an empty buffer.
void CheckSize(size_t got, std::initializer_list<size_t> dims, const std::string& what) {
  CheckSize(got, SizeProduct(dims, what), what);
}

}  // namespace

const char* PrecisionName(Precision p) { return p == Precision::kFloat64 ? "float64" : "float32"; }

double Round(double x, Precision p) {
  if (p == Precision::kFloat64) return x;
  return static_cast<double>(static_cast<float>(x));  // round to nearest even; overflow -> inf
}

// §FUS.9 Python float.hex(): "[-]0x<lead>.<13 hex digits>p<sign><exp>".
std::string FloatHex(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  std::string sign = std::signbit(x) ? "-" : "";
  if (x == 0) return sign + "0x0.0p+0";
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
  const int lead = biased == 0 ? 0 : 1;
  const int exp = biased == 0 ? -1022 : biased - 1023;
  char buf[64];
  std::snprintf(buf, sizeof buf, "0x%d.%013llxp%c%d", lead, static_cast<unsigned long long>(mantissa),
                exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return sign + buf;
}

double ParseFloat(const std::string& text, const std::string& where) {
  if (text.empty()) throw Error(where + ": empty string is not a number");
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) throw Error(where + ": '" + text + "' is not a number");
  return v;
}

double Bf16Value(uint16_t bits) { return Bf16ToFloat(bits); }

// §FUS.3 The cast to bf16: round to nearest, ties to even, straight from the
// double (no double rounding through float32). Overflow goes to inf.
uint16_t ToBf16(double x) {
  if (std::isnan(x)) return 0x7FC0;
  if (std::isinf(x) || x == 0) return TruncateToBf16(static_cast<float>(x));
  const double q = Bf16Quantum(x);
  const double r = std::nearbyint(x / q) * q;  // x / q is exact; nearbyint rounds ties to even
  return TruncateToBf16(static_cast<float>(r));  // r is a bf16 value (or 2^128 -> inf)
}

double GateClamp(Precision p) { return Round(1e-6, p); }

double Sigmoid(double x, Precision p) { return Round(1.0 / (1.0 + std::exp(-x)), p); }

double Silu(double x, Precision p) { return Round(x / (1.0 + std::exp(-x)), p); }

// §FUS.4 v4.1: sigmoid(copysign(sqrt(max(|dot|, 1e-6)), dot)).
GateParts GateV41(double dot, Precision p) {
  GateParts g;
  const double a = std::fabs(dot);
  // torch's clamp_min propagates NaN: max(NaN, c) is NaN, not c.
  g.clamped = std::isnan(a) ? kNaN : std::max(a, GateClamp(p));
  g.root = Round(std::sqrt(g.clamped), p);
  // copysign takes the sign bit: dot = -0 gives -sqrt(1e-6), so the gate
  // just below 0.5; +0 gives the gate just above.
  g.signed_root = std::copysign(g.root, dot);
  g.gate = Sigmoid(g.signed_root, p);
  return g;
}

// §FUS.6 demo-v1: sigmoid(sqrt(max(|g|, 1e-6)) * sign(g)). torch.sign is
// (0 < g) - (g < 0): 0 for +0, -0 and NaN.
GateParts GateDemo(double gv, Precision p) {
  // The published code computes g as a float32 tensor: a float64 g (the input
  // of a GateFunctionTest) is first rounded, so one that underflows to +-0 has
  // sign 0 and gives exactly 0.5 (a no-op for a g the mirror computed itself).
  gv = Round(gv, p);
  GateParts g;
  const double a = std::fabs(gv);
  g.clamped = std::isnan(a) ? kNaN : std::max(a, GateClamp(p));
  g.root = Round(std::sqrt(g.clamped), p);
  const double sign = (0 < gv ? 1.0 : 0.0) - (gv < 0 ? 1.0 : 0.0);
  g.signed_root = Round(g.root * sign, p);  // root >= 0.001 or NaN: +0 when sign is 0
  g.gate = Sigmoid(g.signed_root, p);
  return g;
}

// §FUS.2 y[n] = sum_k x[k] * w[n][k], sequential from +0.
std::vector<double> LinearNoBias(std::span<const double> x, std::span<const double> w, size_t out, Precision p) {
  CheckSize(w.size(), {out, x.size()}, "wkv weight");
  std::vector<double> y(out);
  for (size_t n = 0; n < out; ++n) {
    double acc = 0.0;
    for (size_t k = 0; k < x.size(); ++k) acc = Round(acc + Round(x[k] * w[n * x.size() + k], p), p);
    y[n] = acc;
  }
  return y;
}

// §FUS.2.1 Nearest E4M3fn value, ties to the even code, saturating at 448.
uint8_t EncodeE4M3Saturating(double v) {
  if (std::isnan(v)) return 0x7F;
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  const double a = std::fabs(v);
  if (a >= 448.0) return sign | 0x7E;  // the clamp to +-448 before the cast
  // Codes 0x00 .. 0x7E are increasing in value: find the first code >= a.
  uint8_t hi = 0;
  while (E4M3Value(hi) < a) ++hi;
  if (E4M3Value(hi) == a || hi == 0) return sign | hi;
  const uint8_t lo = static_cast<uint8_t>(hi - 1);
  const double dlo = a - E4M3Value(lo), dhi = E4M3Value(hi) - a;
  uint8_t code = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) == 0 ? lo : hi);
  return sign | code;
}

// §FUS.2.1 act_quant with 32-wide blocks and power-of-two (E8M0) scales.
QuantizedActivation QuantizeActivation(std::span<const uint16_t> x_bf16) {
  constexpr size_t kBlock = 32;
  if (x_bf16.size() % kBlock != 0) {
    throw Error("activation: length " + std::to_string(x_bf16.size()) + " is not a multiple of 32");
  }
  const Precision f32 = Precision::kFloat32;
  const double inv448 = Round(1.0 / 448.0, f32);  // the kernel's float32 constant
  const double amax_floor = Round(1e-4, f32);
  QuantizedActivation q;
  q.codes.resize(x_bf16.size());
  for (size_t b = 0; b < x_bf16.size() / kBlock; ++b) {
    double amax = 0.0;
    for (size_t i = 0; i < kBlock; ++i) {
      const double x = Bf16Value(x_bf16[b * kBlock + i]);
      if (!std::isfinite(x)) {
        throw Error("activation: element " + std::to_string(b * kBlock + i) + " is " + FloatHex(x) +
                    "; the fp8 quantization is specified for finite activations only (§FUS.2.1)");
      }
      amax = std::max(amax, std::fabs(x));
    }
    amax = std::max(amax, amax_floor);
    // fast_round_scale: 2^ceil(log2(t)) read off t's float32 bits (exponent,
    // plus one when any mantissa bit is set). t >= 1e-4/448 is a normal float.
    const float t = static_cast<float>(Round(amax * inv448, f32));
    uint32_t bits = 0;
    std::memcpy(&bits, &t, sizeof bits);
    const int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + ((bits & 0x7FFFFF) != 0 ? 1 : 0);
    q.scales.push_back(static_cast<uint8_t>(exponent + 127));
    const double s = std::ldexp(1.0, exponent);
    for (size_t i = 0; i < kBlock; ++i) {
      const double x = Bf16Value(x_bf16[b * kBlock + i]);
      q.codes[b * kBlock + i] = EncodeE4M3Saturating(Round(x / s, f32));  // x / s is exact (s = 2^k)
    }
  }
  return q;
}

// §FUS.2.2 fp8 GEMM, weight scales per 32x32 block.
std::vector<double> Fp8Linear(const QuantizedActivation& a, std::span<const uint8_t> w_codes,
                              std::span<const uint8_t> w_scales, size_t out, size_t in, Precision p) {
  constexpr size_t kBlock = 32;
  if (in % kBlock != 0) throw Error("fp8 wkv: in_features " + std::to_string(in) + " is not a multiple of 32");
  CheckSize(a.codes.size(), in, "fp8 wkv activation codes");
  CheckSize(a.scales.size(), in / kBlock, "fp8 wkv activation scales");
  CheckSize(w_codes.size(), {out, in}, "fp8 wkv weight codes [out][in]");
  const size_t kb_count = in / kBlock, ob_count = (out + kBlock - 1) / kBlock;
  CheckSize(w_scales.size(), {ob_count, kb_count}, "fp8 wkv weight scales [ceil(out/32)][in/32]");
  std::vector<double> y(out);
  for (size_t n = 0; n < out; ++n) {
    double acc = 0.0;
    for (size_t kb = 0; kb < kb_count; ++kb) {
      const double sa = E8M0Value(a.scales[kb]);
      const double sw = E8M0Value(w_scales[(n / kBlock) * kb_count + kb]);  // row block n/32, column block kb
      if (p == Precision::kFloat64) {
        // The exact sum of dequantized products (products are exact in double).
        for (size_t i = kb * kBlock; i < (kb + 1) * kBlock; ++i) {
          acc += (E4M3Value(a.codes[i]) * E4M3Value(w_codes[n * in + i])) * sa * sw;
        }
      } else {
        // One K block: float32 sum of code products (each exact in float32),
        // then scaled by both powers of two and added to the accumulator.
        double partial = 0.0;
        for (size_t i = kb * kBlock; i < (kb + 1) * kBlock; ++i) {
          partial = Round(partial + E4M3Value(a.codes[i]) * E4M3Value(w_codes[n * in + i]), p);
        }
        acc = Round(acc + Round(Round(partial * sa, p) * sw, p), p);
      }
    }
    y[n] = acc;
  }
  return y;
}

// §FUS.3 One (token, stream) of the v4.1 gate, bf16 inputs: decoded exactly
// (h = x.float(), key.float(), value.float()) and run by the value form below.
V41StreamTrace FuseV41Stream(std::span<const uint16_t> h_bits, std::span<const uint16_t> key_bits,
                             std::span<const uint16_t> value_bits, std::span<const uint16_t> qw_bits,
                             std::span<const uint16_t> kw_bits, double eps, bool masked, Precision p) {
  auto decode = [](std::span<const uint16_t> bits) {
    std::vector<double> v(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) v[i] = Bf16Value(bits[i]);
    return v;
  };
  return FuseV41StreamValues(decode(h_bits), decode(key_bits), decode(value_bits), decode(qw_bits), decode(kw_bits),
                             eps, masked, p);
}

// §FUS.3 One (token, stream) of the v4.1 gate on values (bf16 or float32
// values held in doubles).
V41StreamTrace FuseV41StreamValues(std::span<const double> h, std::span<const double> k, std::span<const double> v,
                                   std::span<const double> q_weight, std::span<const double> k_weight, double eps,
                                   bool masked, Precision p) {
  const size_t dim = h.size();
  if (dim == 0) throw Error("v4.1 gate: dim is 0");
  CheckSize(k.size(), dim, "v4.1 gate: key");
  CheckSize(v.size(), dim, "v4.1 gate: value");
  CheckSize(q_weight.size(), dim, "v4.1 gate: q_weight");
  CheckSize(k_weight.size(), dim, "v4.1 gate: k_weight");
  std::vector<double> w(dim);
  for (size_t i = 0; i < dim; ++i) {
    // weight = q_weight.float() * k_weight.float(), rounded to float32: exact
    // for bf16 weights (a bf16 x bf16 product has at most 16 significant
    // bits), one rounding for a port's float32 weights (§FUS.11).
    w[i] = Round(q_weight[i] * k_weight[i], p);
  }
  const double eps_p = Round(eps, p);  // a Python float added to a float32 tensor
  const double n = static_cast<double>(dim);
  V41StreamTrace t;
  // rstd = rsqrt(mean(h^2) + eps) * rsqrt(mean(k^2) + eps), normalized per
  // stream over dim (not jointly over the streams).
  for (size_t i = 0; i < dim; ++i) t.sum_h2 = Round(t.sum_h2 + Round(h[i] * h[i], p), p);
  t.mean_h2 = Round(t.sum_h2 / n, p);
  t.rstd_h = Round(1.0 / Round(std::sqrt(Round(t.mean_h2 + eps_p, p)), p), p);
  for (size_t i = 0; i < dim; ++i) t.sum_k2 = Round(t.sum_k2 + Round(k[i] * k[i], p), p);
  t.mean_k2 = Round(t.sum_k2 / n, p);
  t.rstd_k = Round(1.0 / Round(std::sqrt(Round(t.mean_k2 + eps_p, p)), p), p);
  t.rstd = Round(t.rstd_h * t.rstd_k, p);
  // dot = (h * weight * key).sum(-1) * rstd * dim**-0.5, left to right.
  const double inv_sqrt_dim = Round(std::pow(n, -0.5), p);  // Python's dim**-0.5 (float64), then the tensor's dtype
  double abs_sum = 0.0;
  for (size_t i = 0; i < dim; ++i) {
    const double term = Round(Round(h[i] * w[i], p) * k[i], p);
    t.sum_hwk = Round(t.sum_hwk + term, p);
    abs_sum += std::fabs(h[i] * w[i] * k[i]);
  }
  t.dot = Round(Round(t.sum_hwk * t.rstd, p) * inv_sqrt_dim, p);
  t.dot_scale = abs_sum * t.rstd * std::pow(n, -0.5);
  t.gate_parts = GateV41(t.dot, p);
  // masked_fill(~mask, 0): the gate is exactly +0, whatever dot was (NaN too).
  t.gate = masked ? 0.0 : t.gate_parts.gate;
  // out = (h + gate * value).to(bf16). With gate = 0 this is h + 0 * v: equal
  // to h unless v is not finite (0 * inf = NaN) or h = -0 and 0 * v = +0.
  t.out.resize(dim);
  t.out_bf16.resize(dim);
  for (size_t i = 0; i < dim; ++i) {
    t.out[i] = Round(h[i] + Round(t.gate * v[i], p), p);
    t.out_bf16[i] = ToBf16(t.out[i]);
  }
  return t;
}

void V41FloatWeights::Check() const {
  if (hc == 0 || dim == 0 || head_dim == 0 || columns == 0) {
    throw Error("float32 forward: hc, dim, head_dim and columns must all be >= 1");
  }
  if (table.empty() || table.size() % head_dim != 0) {
    throw Error("float32 forward: embed.weight has " + std::to_string(table.size()) +
                " values, not a positive multiple of head_dim " + std::to_string(head_dim));
  }
  if (hc == std::numeric_limits<size_t>::max()) throw Error("float32 forward: hc " + std::to_string(hc) + " does not fit (§ERR.3)");
  CheckSize(wkv.size(), {hc + 1, dim, columns, head_dim}, "float32 forward: wkv.weight [(hc+1)*dim][columns*head_dim]");
  CheckSize(q_weight.size(), {hc, dim}, "float32 forward: q_weight [hc][dim]");
  CheckSize(k_weight.size(), {hc, dim}, "float32 forward: k_weight [hc][dim]");
}

// §FUS.11 Engram.forward with float32 parameters: embed (a plain lookup, no
// decode), kv = wkv(e) (a float32 linear, not cast to bf16), then §FUS.3 per
// stream with out left in float32 (x.dtype).
std::vector<V41FloatPositionTrace> ForwardV41Float(const V41FloatWeights& w, std::span<const int64_t> rows,
                                                   std::span<const double> x, std::span<const uint8_t> masked,
                                                   size_t steps, double eps, Precision p) {
  w.Check();
  CheckSize(rows.size(), {steps, w.columns}, "float32 forward: row ids [steps][columns]");
  CheckSize(x.size(), {steps, w.hc, w.dim}, "float32 forward: x [steps][hc][dim]");
  if (!masked.empty()) CheckSize(masked.size(), steps, "float32 forward: mask [steps]");
  const size_t in = w.columns * w.head_dim, out_features = (w.hc + 1) * w.dim;
  std::vector<V41FloatPositionTrace> trace(steps);
  for (size_t t = 0; t < steps; ++t) {
    V41FloatPositionTrace& pos = trace[t];
    pos.e.resize(in);
    for (size_t c = 0; c < w.columns; ++c) {
      const int64_t row = rows[t * w.columns + c];
      if (row < 0 || static_cast<size_t>(row) >= w.rows()) {
        throw Error("float32 forward: position " + std::to_string(t) + " column " + std::to_string(c) + ": row id " +
                    std::to_string(row) + " is outside embed.weight's " + std::to_string(w.rows()) + " rows");
      }
      for (size_t j = 0; j < w.head_dim; ++j) pos.e[c * w.head_dim + j] = w.table[row * w.head_dim + j];
    }
    pos.kv = LinearNoBias(pos.e, w.wkv, out_features, p);  // the keys, then the one value
    const std::span<const double> value(&pos.kv[w.hc * w.dim], w.dim);
    for (size_t c = 0; c < w.hc; ++c) {
      auto part = [&](std::span<const double> v, size_t base) { return v.subspan(base, w.dim); };
      pos.streams.push_back(FuseV41StreamValues(part(x, (t * w.hc + c) * w.dim), part(pos.kv, c * w.dim), value,
                                                part(w.q_weight, c * w.dim), part(w.k_weight, c * w.dim), eps,
                                                !masked.empty() && masked[t] != 0, p));
    }
  }
  return trace;
}

// §FUS.5 torch RMSNorm.
RmsNormTrace RmsNorm(std::span<const double> x, std::span<const double> weight, double eps, Precision p) {
  CheckSize(weight.size(), x.size(), "RMSNorm weight");
  if (x.empty()) throw Error("RMSNorm: empty input");
  RmsNormTrace t;
  for (double xi : x) t.sum_sq = Round(t.sum_sq + Round(xi * xi, p), p);
  t.mean_sq = Round(t.sum_sq / static_cast<double>(x.size()), p);
  t.rstd = Round(1.0 / Round(std::sqrt(Round(t.mean_sq + Round(eps, p), p)), p), p);
  t.y.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) t.y[i] = Round(Round(x[i] * t.rstd, p) * weight[i], p);
  return t;
}

// §FUS.5 nn.Linear with bias.
std::vector<double> LinearBias(std::span<const double> x, std::span<const double> w, std::span<const double> b,
                               Precision p) {
  std::vector<double> y = LinearNoBias(x, w, b.size(), p);
  for (size_t n = 0; n < y.size(); ++n) y[n] = Round(y[n] + b[n], p);
  return y;
}

void DemoParams::Check() const {
  if (hc == 0 || hidden == 0 || in == 0 || kernel == 0 || dilation == 0) {
    throw Error("demo-v1 parameters: hc, hidden, in, kernel and dilation must all be >= 1");
  }
  CheckSize(key_w.size(), {hc, hidden, in}, "demo-v1 key_w [hc][hidden][in]");
  CheckSize(key_b.size(), {hc, hidden}, "demo-v1 key_b [hc][hidden]");
  CheckSize(norm1_w.size(), {hc, hidden}, "demo-v1 norm1_w [hc][hidden]");
  CheckSize(norm2_w.size(), {hc, hidden}, "demo-v1 norm2_w [hc][hidden]");
  CheckSize(value_w.size(), {hidden, in}, "demo-v1 value_w [hidden][in]");
  CheckSize(value_b.size(), hidden, "demo-v1 value_b [hidden]");
  CheckSize(conv_norm_w.size(), {hc, hidden}, "demo-v1 conv_norm_w [hc][hidden]");
  CheckSize(conv_w.size(), {hc, hidden, kernel}, "demo-v1 conv_w [hc*hidden][kernel]");
}

// §FUS.6 The demo gate of one token, all streams.
DemoTokenTrace DemoGateToken(std::span<const double> e, std::span<const double> hidden, const DemoParams& q,
                             Precision p) {
  q.Check();
  CheckSize(e.size(), q.in, "demo-v1 gate: embedding e");
  CheckSize(hidden.size(), {q.hc, q.hidden}, "demo-v1 gate: hidden [hc][hidden]");
  const size_t H = q.hidden;
  DemoTokenTrace tok;
  tok.value_proj = LinearBias(e, q.value_w, q.value_b, p);
  const double sqrt_hidden = Round(std::sqrt(static_cast<double>(H)), p);  // math.sqrt, then float32
  for (size_t c = 0; c < q.hc; ++c) {
    DemoStreamTrace s;
    s.key = LinearBias(e, std::span(q.key_w).subspan(c * H * q.in, H * q.in), std::span(q.key_b).subspan(c * H, H), p);
    s.normed_key = RmsNorm(s.key, std::span(q.norm1_w).subspan(c * H, H), kFloat32Epsilon, p);
    s.normed_query = RmsNorm(hidden.subspan(c * H, H), std::span(q.norm2_w).subspan(c * H, H), kFloat32Epsilon, p);
    double abs_sum = 0.0;
    for (size_t j = 0; j < H; ++j) {
      s.sum = Round(s.sum + Round(s.normed_key.y[j] * s.normed_query.y[j], p), p);
      abs_sum += std::fabs(s.normed_key.y[j] * s.normed_query.y[j]);
    }
    s.g = Round(s.sum / sqrt_hidden, p);  // a division, as the demo writes it
    s.dot_scale = abs_sum / std::sqrt(static_cast<double>(H));
    s.gate_parts = GateDemo(s.g, p);
    s.gate = s.gate_parts.gate;
    s.value.resize(H);
    for (size_t j = 0; j < H; ++j) s.value[j] = Round(s.gate * tok.value_proj[j], p);
    tok.streams.push_back(std::move(s));
  }
  return tok;
}

// §FUS.7 ShortConv: per-stream RMSNorm (eps 1e-5), channels c*hidden + j,
// depthwise causal Conv1d (tap j reads position t - (kernel-1-j)*dilation;
// earlier than 0 reads the zero padding), SiLU. The loop lives in
// detail::ShortConvVariant so that the catalogue's planted ports (a wrong eps,
// time-reversed taps) run this very loop.
ShortConvTrace ShortConv(std::span<const double> value, size_t steps, const DemoParams& q, Precision p) {
  return detail::ShortConvVariant(value, steps, q, p, kShortConvNormEps, detail::ShortConvTaps::kLastIsPresent);
}

namespace detail {

ShortConvTrace ShortConvVariant(std::span<const double> value, size_t steps, const DemoParams& q, Precision p,
                                double norm_eps, ShortConvTaps taps) {
  q.Check();
  const size_t H = q.hidden, C = q.hc * q.hidden;
  CheckSize(value.size(), {steps, C}, "ShortConv input [T][hc][hidden]");
  ShortConvTrace s;
  s.normed.assign(steps * C, 0.0);
  for (size_t t = 0; t < steps; ++t) {
    for (size_t c = 0; c < q.hc; ++c) {
      RmsNormTrace n = RmsNorm(value.subspan(t * C + c * H, H), std::span(q.conv_norm_w).subspan(c * H, H), norm_eps, p);
      for (size_t j = 0; j < H; ++j) s.normed[t * C + c * H + j] = n.y[j];
      s.norms.push_back(std::move(n));
    }
  }
  s.conv.assign(steps * C, 0.0);
  s.act.assign(steps * C, 0.0);
  for (size_t t = 0; t < steps; ++t) {
    for (size_t ch = 0; ch < C; ++ch) {
      double acc = 0.0;
      for (size_t j = 0; j < q.kernel; ++j) {
        // Conv1d is a cross-correlation over the input padded with
        // (kernel-1)*dilation zeros on the left; the last tap is the present.
        const size_t taps_back = taps == ShortConvTaps::kLastIsPresent ? q.kernel - 1 - j : j;
        const size_t back = taps_back * q.dilation;
        // Before step 0 the tap reads the zero padding: the term is w * 0, which
        // adds nothing for a finite w (+0 + ±0 = +0: these taps come first) but
        // is NaN for w = ±inf or NaN, as in torch's Conv1d (IEEE arithmetic).
        const double n = back > t ? 0.0 : s.normed[(t - back) * C + ch];
        acc = Round(acc + Round(q.conv_w[ch * q.kernel + j] * n, p), p);
      }
      s.conv[t * C + ch] = acc;
      s.act[t * C + ch] = Silu(acc, p);
    }
  }
  return s;
}

}  // namespace detail

// §FUS.12 A fresh sequence: W rows of the zero padding, so that every tap of
// the first steps reads +0 exactly as §FUS.7's padding does (W * 0 is formed).
ShortConvState::ShortConvState(DemoParams params, size_t rollback_capacity, Precision p)
    : q_(std::move(params)), capacity_(rollback_capacity), p_(p) {
  q_.Check();
  kept_.assign(WindowSteps() * q_.hc * q_.hidden, 0.0);
}

size_t ShortConvState::WindowSteps() const { return (q_.kernel - 1) * q_.dilation; }

// §FUS.12 The exchanged form is the normed values themselves (TileOPs'
// conv_state): they are used as they are, never normalized again.
void ShortConvState::Import(std::span<const double> window) {
  CheckSize(window.size(), WindowSteps() * q_.hc * q_.hidden, "ShortConv state [W][hc*hidden]");
  kept_.assign(window.begin(), window.end());
  depth_ = 0;  // an imported state holds no step before its window
}

ShortConvStateTrace ShortConvState::Run(std::span<const double> value, size_t steps) const {
  const size_t H = q_.hidden, C = q_.hc * q_.hidden, K = q_.kernel;
  CheckSize(value.size(), steps * C, "ShortConv input [steps][hc][hidden]");
  ShortConvStateTrace s;
  s.normed.assign(steps * C, 0.0);
  s.window.assign(steps * K * C, 0.0);
  s.conv.assign(steps * C, 0.0);
  s.act.assign(steps * C, 0.0);
  // The kept rows, then this call's normed rows: the sequence the taps read.
  std::vector<double> rows = kept_;
  const size_t first = kept_.size() / C;  // the row of this call's step 0 (>= W)
  for (size_t t = 0; t < steps; ++t) {
    for (size_t c = 0; c < q_.hc; ++c) {
      RmsNormTrace n = RmsNorm(value.subspan(t * C + c * H, H), std::span(q_.conv_norm_w).subspan(c * H, H), norm_eps_, p_);
      for (size_t j = 0; j < H; ++j) s.normed[t * C + c * H + j] = n.y[j];
    }
    rows.insert(rows.end(), s.normed.begin() + static_cast<ptrdiff_t>(t * C),
                s.normed.begin() + static_cast<ptrdiff_t>((t + 1) * C));
    const size_t now = first + t;
    for (size_t ch = 0; ch < C; ++ch) {
      double acc = 0.0;
      for (size_t j = 0; j < K; ++j) {
        // §FUS.7: the last tap is the present step, tap 0 the oldest; at least
        // W rows precede `now`, so every tap reads a kept step or the padding.
        const size_t back = (taps_reversed_ ? j : K - 1 - j) * q_.dilation;
        const double n = rows[(now - back) * C + ch];
        s.window[(t * K + j) * C + ch] = n;
        acc = Round(acc + Round(q_.conv_w[ch * K + j] * n, p_), p_);
      }
      s.conv[t * C + ch] = acc;
      s.act[t * C + ch] = Silu(acc, p_);
    }
  }
  return s;
}

ShortConvStateTrace ShortConvState::Append(std::span<const double> value, size_t steps) {
  ShortConvStateTrace s = Run(value, steps);
  const size_t C = q_.hc * q_.hidden;
  kept_.insert(kept_.end(), s.normed.begin(), s.normed.end());
  // Keep W steps for the taps and `capacity` more for rollbacks (§HASH.6's depth).
  const size_t keep = (WindowSteps() + capacity_) * C;
  if (kept_.size() > keep) kept_.erase(kept_.begin(), kept_.end() - static_cast<ptrdiff_t>(keep));
  depth_ = std::min(depth_ + steps, capacity_);
  return s;
}

// §FUS.12 A rollback within the depth always finds the W steps before the new
// end among the kept rows (kept >= W + depth); beyond it the reference refuses
// (a policy, §HASH.6 item 3, which no vector tests).
void ShortConvState::Rollback(size_t k) {
  if (k > depth_) {
    throw Error("ShortConv state: rollback by " + std::to_string(k) + " exceeds the rollback depth " +
                std::to_string(depth_) + " (§FUS.12)");
  }
  kept_.resize(kept_.size() - k * q_.hc * q_.hidden);
  depth_ -= k;
}

std::vector<double> ShortConvState::Window() const {
  const size_t n = WindowSteps() * q_.hc * q_.hidden;
  return std::vector<double>(kept_.end() - static_cast<ptrdiff_t>(n), kept_.end());
}

// §FUS.7 The demo layer: gates, value, ShortConv, output, residual add.
DemoForwardTrace DemoForward(std::span<const double> e, std::span<const double> hidden, size_t steps,
                             const DemoParams& q, Precision p) {
  q.Check();
  const size_t C = q.hc * q.hidden;
  CheckSize(e.size(), {steps, q.in}, "demo-v1 forward: e [T][in]");
  CheckSize(hidden.size(), {steps, C}, "demo-v1 forward: hidden [T][hc][hidden]");
  DemoForwardTrace f;
  f.value.assign(steps * C, 0.0);
  for (size_t t = 0; t < steps; ++t) {
    f.tokens.push_back(DemoGateToken(e.subspan(t * q.in, q.in), hidden.subspan(t * C, C), q, p));
    for (size_t c = 0; c < q.hc; ++c) {
      for (size_t j = 0; j < q.hidden; ++j) f.value[t * C + c * q.hidden + j] = f.tokens.back().streams[c].value[j];
    }
  }
  f.conv = ShortConv(f.value, steps, q, p);
  f.output.resize(steps * C);
  f.hidden_after.resize(steps * C);
  for (size_t i = 0; i < steps * C; ++i) {
    f.output[i] = Round(f.value[i] + f.conv.act[i], p);
    f.hidden_after[i] = Round(f.output[i] + hidden[i], p);
  }
  return f;
}

bool WithinTolerance(double ours, double ref64, double mirror, double k, double a, double scale) {
  if (std::isnan(ref64)) return std::isnan(ours);
  if (std::isinf(ref64)) return ours == ref64;
  if (!std::isfinite(ours)) return false;
  const double mirror_err = std::isfinite(mirror) ? std::fabs(mirror - ref64) : std::numeric_limits<double>::infinity();
  return std::fabs(ours - ref64) <= k * mirror_err + a * scale;
}

bool FaithfulBf16(uint16_t bits, double ref64) {
  const double v = Bf16Value(bits);
  if (std::isnan(ref64)) return std::isnan(v);
  if (std::isnan(v)) return false;
  if (v == ref64) return true;  // includes -0 == +0 and infinities
  if (std::isinf(ref64)) return false;
  const double q = Bf16Quantum(ref64);
  const double lo = std::floor(ref64 / q) * q, hi = std::ceil(ref64 / q) * q;
  // A bracket end beyond the largest bf16 is infinity (round to nearest overflows there).
  auto as_bf16 = [](double x) { return Bf16Value(TruncateToBf16(static_cast<float>(x))); };
  return v == as_bf16(lo) || v == as_bf16(hi);
}

// §FUS.9 The bracket ends of x on the bf16 grid of its binade (FaithfulBf16's
// lo and hi), cast so that an end past the largest finite bf16 is the infinity.
double Bf16Below(double x) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  const double q = Bf16Quantum(x);
  return Bf16Value(TruncateToBf16(static_cast<float>(std::floor(x / q) * q)));
}
double Bf16Above(double x) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  const double q = Bf16Quantum(x);
  return Bf16Value(TruncateToBf16(static_cast<float>(std::ceil(x / q) * q)));
}

bool FaithfulBf16Between(uint16_t bits, double lo, double hi) {
  if (lo == hi || (std::isnan(lo) && std::isnan(hi))) return FaithfulBf16(bits, lo);
  const double v = Bf16Value(bits);
  if (std::isnan(lo) || std::isnan(hi)) return std::isnan(v);
  if (std::isnan(v)) return false;
  // Every value of [lo, hi] rounds faithfully to a bf16 value between these two.
  return Bf16Below(lo) <= v && v <= Bf16Above(hi);
}

double GateSlopeDelta(bool demo, double dot, double t) {
  auto g = [&](double d) { return demo ? GateDemo(d, Precision::kFloat64).gate : GateV41(d, Precision::kFloat64).gate; };
  const double g0 = g(dot);
  const double delta = std::max(g(dot + t) - g0, g0 - g(dot - t));
  return std::isfinite(delta) ? delta : 0.0;
}

// §FUS.9 Interval arithmetic on the float64 formula of §FUS.3. Each term
// h_i w_i k_i takes its extremes at one of the two key candidates, and the
// terms vary independently, so the sum's range is exact; the normalization
// 1 / sqrt(mean(k^2) + eps) is bounded apart from the sum (the same k appears
// in both, so the product's range is enclosed, slightly wider than exact).
// Float64 rounding of these bounds is far below the dot tolerance of §FUS.9
// that callers add.
Range V41DotRange(std::span<const uint16_t> h_bits, std::span<const double> key_lo, std::span<const double> key_hi,
                  std::span<const uint16_t> qw_bits, std::span<const uint16_t> kw_bits, double eps) {
  const size_t dim = h_bits.size();
  if (dim == 0) throw Error("v4.1 dot range: dim is 0");
  CheckSize(key_lo.size(), dim, "v4.1 dot range: key_lo");
  CheckSize(key_hi.size(), dim, "v4.1 dot range: key_hi");
  CheckSize(qw_bits.size(), dim, "v4.1 dot range: q_weight");
  CheckSize(kw_bits.size(), dim, "v4.1 dot range: k_weight");
  const double n = static_cast<double>(dim);
  double sum_h2 = 0, num_lo = 0, num_hi = 0, sq_lo = 0, sq_hi = 0;
  for (size_t i = 0; i < dim; ++i) {
    const double h = Bf16Value(h_bits[i]);
    const double hw = h * (Bf16Value(qw_bits[i]) * Bf16Value(kw_bits[i]));  // exact: few significant bits
    sum_h2 += h * h;
    const double a = hw * key_lo[i], b = hw * key_hi[i];
    num_lo += std::min(a, b);
    num_hi += std::max(a, b);
    const double a2 = key_lo[i] * key_lo[i], b2 = key_hi[i] * key_hi[i];
    sq_lo += std::min(a2, b2);
    sq_hi += std::max(a2, b2);
  }
  const double rstd_h = 1.0 / std::sqrt(sum_h2 / n + eps);
  const double rstd_k_lo = 1.0 / std::sqrt(sq_hi / n + eps), rstd_k_hi = 1.0 / std::sqrt(sq_lo / n + eps);
  // The sum times a positive factor in [rstd_k_lo, rstd_k_hi]: each end of the
  // sum takes the factor end that moves it outwards.
  const double c = rstd_h * std::pow(n, -0.5);
  Range r;
  r.lo = (num_lo >= 0 ? num_lo * rstd_k_lo : num_lo * rstd_k_hi) * c;
  r.hi = (num_hi >= 0 ? num_hi * rstd_k_hi : num_hi * rstd_k_lo) * c;
  return r;
}

Range V41OutRange(double h, double v_lo, double v_hi, double g_lo, double g_hi) {
  g_lo = std::max(g_lo, 0.0);
  g_hi = std::min(g_hi, 1.0);
  Range r{h + g_lo * v_lo, h + g_lo * v_lo};
  for (double g : {g_lo, g_hi}) {
    for (double v : {v_lo, v_hi}) {
      const double y = h + g * v;
      r.lo = std::min(r.lo, y);
      r.hi = std::max(r.hi, y);
    }
  }
  return r;
}

// §FUS.9 The flush allowance of a bf16 GEMM (oneDNN's VDPBF16PS / TDPBF16PS
// and VCVTNEPS2BF16 treat subnormal inputs as zero and flush subnormal results,
// spec/sources.md [SRC-X86-BF16]). Every product of two bf16 values is exact in
// double, so the terms, their sums and the multiple-of-2^-126 test are exact
// (the sums' rounding, 2^-53 relative, is far below the widths).
std::vector<Range> Bf16GemmFlushRange(std::span<const double> x, std::span<const double> w, size_t out,
                                      std::span<const double> exact) {
  CheckSize(w.size(), out * x.size(), "wkv weight");
  CheckSize(exact.size(), out, "bf16 GEMM float64 outputs");
  const double min_normal = std::ldexp(1.0, -126);
  auto subnormal = [&](double v) { return v != 0 && std::fabs(v) < min_normal; };
  std::vector<Range> r(out);
  for (size_t n = 0; n < out; ++n) {
    r[n] = {exact[n], exact[n]};
    if (!std::isfinite(exact[n])) continue;  // §FUS.9.1: lo = hi = r where r is not finite
    double kept = 0, daz_pos = 0, daz_neg = 0, groups = 0;
    for (size_t k = 0; k < x.size(); ++k) {
      const double t = x[k] * w[n * x.size() + k];
      // DAZ: a term with a subnormal factor may be read as 0 (the whole term drops out), or kept.
      if (subnormal(x[k]) || subnormal(w[n * x.size() + k])) {
        (t > 0 ? daz_pos : daz_neg) += t;
      } else {
        kept += t;  // apart from the DAZ terms: a huge one would round the small ones away in y
      }
      // FTZ: a flushed partial sum below 2^-126 holds a term with bits below 2^-126 (sums of
      // multiples of 2^-126 are multiples of it, in float32 too); the groups flushed are disjoint.
      if (t != 0 && std::fmod(t, min_normal) != 0) groups += 1;
    }
    r[n].lo = std::min(exact[n], kept + daz_neg - groups * min_normal);
    r[n].hi = std::max(exact[n], kept + daz_pos + groups * min_normal);
  }
  return r;
}

// §FUS.9.1 demo-v1: the values a port may compute from allowed inputs. Every
// bound below is the exact range of the float64 formula over the allowed box
// (or an enclosure of it), widened by the error of any float32 evaluation:
// γ_n for n roundings in any order (Higham's bound), and for underflow the
// absolute 2^-150 of one rounded product (sums of float32 values that land
// in the subnormal range are exact). The float64 rounding of these bounds
// (2^-52 relative) is far below the widths and the tolerance added on top.
namespace {
constexpr double kU32 = 1.0 / 16777216.0;            // 2^-24
constexpr double kUnderflow32 = 0x1p-150;            // half float32's smallest subnormal
constexpr double kSiluArgMin = -1.2784645427610738;  // 1 + x (1 − σ(x)) = 0: SiLU' = 0
double Widen(double magnitude, double rel) { return rel * magnitude; }
double MaxAbs(const Range& r) { return std::max(std::fabs(r.lo), std::fabs(r.hi)); }
// The product of [a.lo, a.hi] and [b.lo, b.hi]: its extremes lie at corners.
Range Times(const Range& a, const Range& b) {
  Range r{a.lo * b.lo, a.lo * b.lo};
  for (double x : {a.lo, a.hi}) {
    for (double y : {b.lo, b.hi}) {
      r.lo = std::min(r.lo, x * y);
      r.hi = std::max(r.hi, x * y);
    }
  }
  return r;
}
bool Finite(const Range& r) { return std::isfinite(r.lo) && std::isfinite(r.hi); }
double SiluExact(double x) { return x / (1.0 + std::exp(-x)); }
}  // namespace

double Float32Gamma(double n) { return n * kU32 / (1 - n * kU32); }

std::vector<double> LinearBiasErrorBound(std::span<const double> x, std::span<const double> w,
                                         std::span<const double> b) {
  const size_t in = x.size();
  CheckSize(w.size(), {b.size(), in}, "Linear error bound: weight");
  // in products and one bias, summed in any order: every term meets at most
  // in + 1 roundings (its product and in additions), so γ_(in+1) of the
  // terms' absolute sum bounds the float32 result's error.
  const double gamma = Float32Gamma(static_cast<double>(in + 1));
  std::vector<double> bound(b.size());
  for (size_t n = 0; n < b.size(); ++n) {
    double terms = std::fabs(b[n]);
    for (size_t k = 0; k < in; ++k) terms += std::fabs(x[k] * w[n * in + k]);
    bound[n] = gamma * terms + static_cast<double>(in) * 2 * kUnderflow32;
  }
  return bound;
}

Range DemoValueRange(double p, double p_err, double g_lo, double g_hi) {
  // A gate is a sigmoid: never outside [0, 1].
  const Range g{std::max(g_lo, 0.0), std::min(g_hi, 1.0)};
  Range v = Times(g, Range{p - p_err, p + p_err});
  const double e = Widen(MaxAbs(v), kU32) + kUnderflow32;  // fl32 of the product
  return {v.lo - e, v.hi + e};
}

Range SiluRange(Range x) {
  Range s;
  if (x.hi <= kSiluArgMin) {
    s = {SiluExact(x.hi), SiluExact(x.lo)};  // decreasing
  } else if (x.lo >= kSiluArgMin) {
    s = {SiluExact(x.lo), SiluExact(x.hi)};  // increasing
  } else {
    s = {SiluExact(kSiluArgMin), std::max(SiluExact(x.lo), SiluExact(x.hi))};
  }
  // torch's float32 SiLU is x / (1 + exp(−x)): exp within 1 ulp (2u), the sum
  // of two positive terms and the division one rounding each: γ_4.
  const double e = Widen(MaxAbs(s), Float32Gamma(4)) + 2 * kUnderflow32;
  s = {s.lo - e, s.hi + e};
  if (x.lo < -88) s.hi = std::max(s.hi, 0.0);  // exp(88.73) overflows float32: x / inf = −0
  return s;
}

std::vector<Range> ShortConvRange(std::span<const Range> value, size_t steps, const DemoParams& q) {
  q.Check();
  const size_t H = q.hidden, C = q.hc * q.hidden, K = q.kernel;
  CheckSize(value.size(), {steps, C}, "ShortConv range input [T][hc][hidden]");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // The normed values n = v · rsqrt(mean(v²) + eps) · w over the box: the sum
  // of squares lies between the sums of each element's smallest and largest
  // square, and rsqrt is decreasing; v and the rsqrt are bounded apart (the
  // same v appears in both: an enclosure).
  std::vector<Range> normed(steps * C);
  for (size_t t = 0; t < steps; ++t) {
    for (size_t c = 0; c < q.hc; ++c) {
      double sq_lo = 0, sq_hi = 0;
      for (size_t j = 0; j < H; ++j) {
        const Range& v = value[t * C + c * H + j];
        const double a = v.lo * v.lo, b = v.hi * v.hi;
        sq_lo += (v.lo <= 0 && v.hi >= 0) ? 0.0 : std::min(a, b);
        sq_hi += std::max(a, b);
      }
      const double n = static_cast<double>(H);
      const Range rs{1.0 / std::sqrt(sq_hi / n + kShortConvNormEps), 1.0 / std::sqrt(sq_lo / n + kShortConvNormEps)};
      for (size_t j = 0; j < H; ++j) {
        const double w = q.conv_norm_w[c * H + j];
        normed[t * C + c * H + j] = Times(Times(value[t * C + c * H + j], rs), Range{w, w});
      }
    }
  }
  // The conv: exact range of Σ_j W_j n_j, then any float32 evaluation of the
  // norm and the conv moves it by at most γ_(K+⌈H/2⌉+5) · T (§FUS.9's convTerms
  // with T over the box), plus per term the underflow of the normed value's
  // two products (2^-150 (1 + |w|), times |W_j|) and of the term's own product.
  const double gamma = Float32Gamma(static_cast<double>(K + (H + 1) / 2 + 5));
  std::vector<Range> out(steps * C);
  for (size_t t = 0; t < steps; ++t) {
    for (size_t ch = 0; ch < C; ++ch) {
      Range conv{0, 0};
      double terms = 0, underflow = 0;
      const double w_norm = q.conv_norm_w[ch];  // channel ch = c * H + j: the same index
      for (size_t j = 0; j < K; ++j) {
        const size_t back = (K - 1 - j) * q.dilation;
        if (back > t) continue;  // the zero padding: W · 0 adds nothing for a finite W
        const double W = q.conv_w[ch * K + j];
        const Range term = Times(Range{W, W}, normed[(t - back) * C + ch]);
        conv.lo += term.lo;
        conv.hi += term.hi;
        terms += MaxAbs(term);
        underflow += (std::fabs(W) * (1 + std::fabs(w_norm)) + 1) * 2 * kUnderflow32;
      }
      const double e = gamma * terms + underflow;
      const Range x{conv.lo - e, conv.hi + e};
      out[t * C + ch] = Finite(x) ? SiluRange(x) : Range{nan, nan};
    }
  }
  return out;
}

}  // namespace engram
