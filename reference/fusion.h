/// \file
/// spec/fusion.md — how the looked-up rows update the hidden state: the v4.1
/// gate (wkv projection, normalized dot product, signed square root, sigmoid)
/// and the demo-v1 gate, value projection and ShortConv.
///
/// Every function runs in one of two precisions (§FUS.8):
///  * kFloat64: the reference. Each operation in IEEE float64, in the order the
///    spec writes it. Its results are the values conformance is measured from.
///  * kFloat32: the float32 *mirror* of DeepSeek's PyTorch code: the same
///    operations, each result rounded to float32 exactly where the published
///    code rounds, sums sequential from +0 (torch leaves its order open).
/// Values travel as doubles in both modes (a float32 value is exactly a double),
/// so one set of plain loops serves both; Round() is where the mirror rounds.
///
/// Intermediate values are exposed (traces) for the vectors and for explaining
/// a single position by hand.
#ifndef ENGRAM_REFERENCE_FUSION_H_
#define ENGRAM_REFERENCE_FUSION_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace engram {

/// §FUS.8 The two evaluation modes.
enum class Precision { kFloat64, kFloat32 };

/// §FUS.8 "float64" / "float32".
const char* PrecisionName(Precision p);

/// §FUS.8 The rounding of one operation's result: identity in float64,
/// round-to-nearest-even to float32 in the mirror (overflow -> inf, NaN kept).
double Round(double x, Precision p);

/// §FUS.9 Exact text of a double: Python's float.hex() spelling
/// ("0x1.8000000000000p-3", "-0x0.0p+0", "inf", "-inf", "nan").
std::string FloatHex(double x);
/// §FUS.9 Parses FloatHex's output (and any strtod hex/decimal float). `where` names
/// the field for the error message.
double ParseFloat(const std::string& text, const std::string& where);

/// §FUS.1 bf16 bits <-> value (storage.h's Bf16ToFloat / FloatToBf16, the latter
/// round-to-nearest-even from float32).
double Bf16Value(uint16_t bits);
/// A float32 value (held in a double) -> bf16 bits, round to nearest even (§FUS.1).
uint16_t ToBf16(double float32_value);

/// §FUS.4 The clamp of both gates: |dot| is raised to at least 1e-6 (float32:
/// the float32 nearest 1e-6, as torch's clamp_min on a float32 tensor).
double GateClamp(Precision p);

/// §FUS.4 / §FUS.6 The gate as a function of the scalar dot product.
struct GateParts {
  double clamped = 0;      ///< max(|dot|, 1e-6); NaN stays NaN
  double root = 0;         ///< sqrt(clamped)
  double signed_root = 0;  ///< v4.1: copysign(root, dot); demo: root * sign(dot)
  double gate = 0;         ///< sigmoid(signed_root)
};
/// §FUS.4 v4.1: sigmoid(copysign(sqrt(max(|dot|, 1e-6)), dot)). dot = +0 -> sigmoid(+0.001),
/// dot = -0 -> sigmoid(-0.001).
GateParts GateV41(double dot, Precision p);
/// §FUS.6 demo-v1: sigmoid(sqrt(max(|g|, 1e-6)) * sign(g)), sign(±0) = 0 -> gate 0.5 exactly.
GateParts GateDemo(double g, Precision p);
/// §FUS.4 sigmoid(x) = 1 / (1 + exp(-x)); the mirror rounds the exact-ish
/// double result once to float32.
double Sigmoid(double x, Precision p);
/// §FUS.7 silu(x) = x / (1 + exp(-x)).
double Silu(double x, Precision p);

// ---------------------------------------------------------------------------
// v4.1

/// §FUS.2 Plain wkv (a bf16 checkpoint): y[n] = sum_k e[k] * w[n*in + k], the
/// sum sequential in k from +0 (float32 mirror: each product and partial sum
/// rounded), then rounded to bf16 by the caller through ToBf16.
std::vector<double> LinearNoBias(std::span<const double> x, std::span<const double> w, size_t out, Precision p);

/// §FUS.2.1 E4M3fn encoding of a float32 value: round to nearest, ties to the
/// even code, saturating at +-448 (the kernel's satfinite cast). NaN -> 0x7F.
uint8_t EncodeE4M3Saturating(double float32_value);

/// §FUS.2.1 act_quant: per 32 activations, amax = max(max|x|, 1e-4),
/// scale = 2^ceil(log2(fl32(amax * fl32(1/448)))), codes = e4m3(x / scale).
struct QuantizedActivation {
  std::vector<uint8_t> codes;   ///< one E4M3fn code per activation
  std::vector<uint8_t> scales;  ///< one E8M0 byte per 32 activations (2^(s-127))
};
/// §FUS.2.1 Throws engram::Error when x.size() is not a multiple of 32 or a value is not finite.
QuantizedActivation QuantizeActivation(std::span<const uint16_t> x_bf16);

/// §FUS.2.2 fp8 GEMM with 32x32 block-scaled weights: w_codes [out][in] E4M3fn,
/// w_scales [ceil(out/32)][in/32] E8M0. Float64: the exact sum of the
/// dequantized products (sequential). Float32 mirror: per 32-wide K block a
/// float32 sum of the (exact) code products, then acc += partial * a_scale *
/// w_scale, blocks in K order. The caller rounds to bf16.
std::vector<double> Fp8Linear(const QuantizedActivation& a, std::span<const uint8_t> w_codes,
                              std::span<const uint8_t> w_scales, size_t out, size_t in, Precision p);

/// §FUS.3 One (token, stream) of the v4.1 gate after wkv. All inputs are bf16
/// bit patterns of length dim: h = x_c, key = k_c, value = v, q/k weights of
/// stream c. eps = norm_eps (float32 mirror: rounded to float32).
struct V41StreamTrace {
  double sum_h2 = 0, mean_h2 = 0, rstd_h = 0;  ///< sum h^2, /dim, rsqrt(mean + eps)
  double sum_k2 = 0, mean_k2 = 0, rstd_k = 0;  ///< the same for the key
  double rstd = 0;                             ///< rstd_h * rstd_k
  double sum_hwk = 0;                          ///< sum_i h_i * w_i * k_i
  double dot = 0;                              ///< sum_hwk * rstd * dim^-0.5
  double dot_scale = 0;                        ///< sum_i |h_i w_i k_i| * rstd * dim^-0.5 (float64 only; §FUS.9)
  GateParts gate_parts;                        ///< before the mask
  double gate = 0;                             ///< 0 when masked
  std::vector<double> out;                     ///< h + gate * v before the cast (float64 / float32 values)
  std::vector<uint16_t> out_bf16;              ///< the cast to bf16 (round to nearest even)
};
/// §FUS.3 Runs one (token, stream) of the v4.1 gate after wkv in precision `p`; every
/// intermediate is returned. `masked` gives gate 0 and out = h.
V41StreamTrace FuseV41Stream(std::span<const uint16_t> h, std::span<const uint16_t> key,
                             std::span<const uint16_t> value, std::span<const uint16_t> q_weight,
                             std::span<const uint16_t> k_weight, double eps, bool masked, Precision p);
/// §FUS.3 The same on values (bf16 or float32 numbers held in doubles): the
/// bf16 form above decodes its inputs and calls this; a port's own float32
/// forward (§FUS.11) calls it directly. w = fl32(q_weight * k_weight) in the mirror.
V41StreamTrace FuseV41StreamValues(std::span<const double> h, std::span<const double> key,
                                   std::span<const double> value, std::span<const double> q_weight,
                                   std::span<const double> k_weight, double eps, bool masked, Precision p);

/// §FUS.11 A port's own float32 Engram.forward (its table, wkv, q/k weights
/// and hidden state all float32 values, as in SRC-FIXTURE-MLXGO): no bf16 and
/// no fp8 anywhere; in kFloat32 every operation rounds to float32 where the
/// official code computes in float32 (wkv = a float32 nn.Linear, §FUS.2's plain
/// form without the bf16 cast; then §FUS.3 without the cast of out).
struct V41FloatWeights {
  size_t hc = 0;        ///< streams of the hidden state
  size_t dim = 0;       ///< hidden size of one stream
  size_t head_dim = 0;  ///< row width of the table
  size_t columns = 0;   ///< (max_ngram - 1) * heads rows per position
  std::vector<double> table;     ///< embed.weight [rows][head_dim]
  std::vector<double> wkv;       ///< wkv.weight [(hc+1)*dim][columns*head_dim]
  std::vector<double> q_weight;  ///< [hc][dim]
  std::vector<double> k_weight;  ///< [hc][dim]
  size_t rows() const { return head_dim == 0 ? 0 : table.size() / head_dim; }  ///< table rows
  void Check() const;            ///< throws engram::Error on inconsistent sizes
};
/// §FUS.11 One position of the float forward.
struct V41FloatPositionTrace {
  std::vector<double> e;                ///< the looked-up rows, flattened [columns*head_dim]
  std::vector<double> kv;               ///< wkv(e) [(hc+1)*dim], not rounded to bf16
  std::vector<V41StreamTrace> streams;  ///< §FUS.3 per stream; out is the result (no cast)
};
/// §FUS.11 rows: [steps][columns] row ids of the layer (each < w.rows()); x:
/// [steps][hc][dim]; masked: [steps] (empty: none masked). Throws engram::Error
/// naming the position and column of a row id outside the table.
std::vector<V41FloatPositionTrace> ForwardV41Float(const V41FloatWeights& w, std::span<const int64_t> rows,
                                                   std::span<const double> x, std::span<const uint8_t> masked,
                                                   size_t steps, double eps, Precision p);

// ---------------------------------------------------------------------------
// demo-v1

/// §FUS.5 torch RMSNorm: x * rsqrt(mean(x^2) + eps) * weight (float32 mirror:
/// sum sequential, mean = sum / n, rsqrt = 1 / sqrt, each step rounded).
struct RmsNormTrace {
  double sum_sq = 0, mean_sq = 0, rstd = 0;
  std::vector<double> y;  ///< the normalized, weighted output
};
/// §FUS.5 RMSNorm of `x` with `weight` and `eps` in precision `p`, every intermediate returned.
RmsNormTrace RmsNorm(std::span<const double> x, std::span<const double> weight, double eps, Precision p);
/// torch.finfo(torch.float32).eps = 2^-23, nn.RMSNorm's default eps.
inline constexpr double kFloat32Epsilon = 1.0 / 8388608.0;
/// ShortConv's RMSNorm eps (1e-5; float32 mirror: rounded to float32).
inline constexpr double kShortConvNormEps = 1e-5;

/// §FUS.5 nn.Linear with bias: y[n] = (sum_k x[k] w[n*in+k]) + b[n], sum
/// sequential from +0, the bias added last.
std::vector<double> LinearBias(std::span<const double> x, std::span<const double> w, std::span<const double> b,
                               Precision p);

/// demo-v1 parameters of one Engram layer (all float32 values in the demo).
struct DemoParams {
  size_t hc = 0, hidden = 0, in = 0;  ///< streams, hidden size, (max_ngram-1)*n_embed_per_ngram
  size_t kernel = 0, dilation = 0;    ///< ShortConv kernel_size, dilation = max_ngram_size
  std::vector<double> key_w;          ///< [hc][hidden][in]
  std::vector<double> key_b;          ///< [hc][hidden]
  std::vector<double> norm1_w;        ///< [hc][hidden] RMSNorm of the key
  std::vector<double> norm2_w;        ///< [hc][hidden] RMSNorm of the hidden state (query)
  std::vector<double> value_w;        ///< [hidden][in]
  std::vector<double> value_b;        ///< [hidden]
  std::vector<double> conv_norm_w;    ///< [hc][hidden] ShortConv RMSNorm weights
  std::vector<double> conv_w;         ///< [hc*hidden][kernel] depthwise Conv1d weights (tap 0 = oldest)
  void Check() const;                 ///< throws engram::Error on inconsistent sizes
};

/// §FUS.6 One (token, stream) of the demo gate.
struct DemoStreamTrace {
  std::vector<double> key;          ///< Linear_c(e)
  RmsNormTrace normed_key;          ///< RMSNorm1_c(key)
  RmsNormTrace normed_query;        ///< RMSNorm2_c(hidden_c)
  double sum = 0;                   ///< sum_j k^_j q^_j
  double g = 0;                     ///< sum / sqrt(hidden)
  double dot_scale = 0;             ///< sum_j |k^_j q^_j| / sqrt(hidden) (float64 only)
  GateParts gate_parts;             ///< §FUS.6 clamp, root, signed root, gate
  double gate = 0;                  ///< the stream's gate
  std::vector<double> value;        ///< gate * Linear_v(e)
};
/// §FUS.6 One token of the demo gate: the shared value projection and every stream.
struct DemoTokenTrace {
  std::vector<double> value_proj;   ///< Linear_v(e)
  std::vector<DemoStreamTrace> streams;  ///< one per hyper-connection stream
};
/// §FUS.6 e: [in]; hidden: [hc][hidden] (flattened).
DemoTokenTrace DemoGateToken(std::span<const double> e, std::span<const double> hidden, const DemoParams& params,
                             Precision p);

/// §FUS.7 ShortConv over a sequence. value: [T][hc][hidden] flattened.
struct ShortConvTrace {
  std::vector<RmsNormTrace> norms;  ///< [T*hc] per-stream RMSNorm (eps 1e-5)
  std::vector<double> normed;       ///< [T][hc*hidden] concatenated channels
  std::vector<double> conv;         ///< [T][hc*hidden] causal depthwise conv, truncated to T
  std::vector<double> act;          ///< [T][hc*hidden] SiLU(conv) = ShortConv output
};
/// §FUS.7 ShortConv of `value` ([steps][hc][hidden]) with the layer's norm and conv weights.
ShortConvTrace ShortConv(std::span<const double> value, size_t steps, const DemoParams& params, Precision p);

/// §FUS.12 What one call of a carried ShortConv computed, for its `steps` steps.
struct ShortConvStateTrace {
  std::vector<double> normed;  ///< [steps][hc*hidden] the RMSNorm of each step's value
  std::vector<double> window;  ///< [steps][kernel][hc*hidden] the normed value tap j read at each step
  std::vector<double> conv;    ///< [steps][hc*hidden] Σ_j W[ch][j] · window[t][j][ch]
  std::vector<double> act;     ///< [steps][hc*hidden] SiLU(conv): the output
};

/// §FUS.12 ShortConv carried across calls (prefill chunks, one-token decode
/// steps, rollbacks), as decode kernels run it. The state keeps the normed
/// values of the last W + rollback_capacity steps, W = (kernel - 1) * dilation;
/// its exchanged form is the last W of them (+0 before the sequence's start).
class ShortConvState {
 public:
  /// A fresh sequence (every kept step is the zero padding); throws on
  /// inconsistent parameters.
  ShortConvState(DemoParams params, size_t rollback_capacity, Precision p);
  virtual ~ShortConvState() = default;
  /// W, the steps of the exchanged form.
  size_t WindowSteps() const;
  /// §FUS.12 Replaces the state by the exchanged form of a sequence that began
  /// elsewhere: [W][hc*hidden] normed values, oldest first. The rollback depth
  /// becomes 0. Throws on a wrong length.
  virtual void Import(std::span<const double> window);
  /// §FUS.12 Consumes `steps` steps of value ([steps][hc][hidden]): each output
  /// is §FUS.7's for the sequence consumed so far. Throws on a wrong length.
  virtual ShortConvStateTrace Append(std::span<const double> value, size_t steps);
  /// §FUS.12 Forgets the last k steps consumed; throws (state unchanged) when k
  /// exceeds the rollback depth (§HASH.6's rule, counted in steps).
  virtual void Rollback(size_t k);
  /// §FUS.12 The exchanged form: the last W kept steps, oldest first.
  std::vector<double> Window() const;
  /// §FUS.12 The rollback depth: 0 when fresh or imported, min(d + n, c) after n
  /// steps, max(d - k, 0) after a rollback by k.
  size_t Depth() const { return depth_; }

 protected:
  /// One call's conv over the kept steps: tap j of step t reads the step
  /// (kernel - 1 - j) * dilation back. Throws on a wrong length.
  ShortConvStateTrace Run(std::span<const double> value, size_t steps) const;
  // §FUS.7's choices, which a planted port changes (vectors/mutants_fusion.cc).
  double norm_eps_ = kShortConvNormEps;  ///< the RMSNorm's eps
  bool taps_reversed_ = false;  ///< tap j reads j dilations back (flag TapOrder)
  DemoParams q_;        ///< the layer's sizes and ShortConv weights
  size_t capacity_;     ///< the rollback capacity c
  Precision p_;         ///< float64 reference or float32 mirror
  size_t depth_ = 0;    ///< the rollback depth d (§HASH.6's rule, in steps)
  std::vector<double> kept_;  ///< [W + at most capacity][hc*hidden], oldest first
};

/// §FUS.7 The demo layer over a sequence: e [T][in], hidden [T][hc][hidden].
struct DemoForwardTrace {
  std::vector<DemoTokenTrace> tokens;  ///< [T]
  std::vector<double> value;           ///< [T][hc][hidden] gate * Linear_v(e)
  ShortConvTrace conv;                 ///< §FUS.7 ShortConv(value) and its intermediates
  std::vector<double> output;          ///< [T][hc][hidden] value + ShortConv(value)
  std::vector<double> hidden_after;    ///< [T][hc][hidden] output + hidden (the block's residual add)
};
/// §FUS.7 The demo-v1 Engram layer over `steps` tokens, every intermediate returned.
DemoForwardTrace DemoForward(std::span<const double> e, std::span<const double> hidden, size_t steps,
                             const DemoParams& params, Precision p);

/// §FUS.9 The tolerance of one float output: |ours - ref64| <=
/// k * |mirror - ref64| + a * scale.
bool WithinTolerance(double ours, double ref64, double mirror, double k, double a, double scale);
/// §FUS.9 bf16 outputs: `bits` must be one of the two bf16 values that bracket
/// ref64 (ref64 itself when it is a bf16 value); NaN matches NaN.
bool FaithfulBf16(uint16_t bits, double ref64);

/// §FUS.9 The largest bf16 value <= x (x itself when x is a bf16 value; below
/// the lowest finite bf16, where round to nearest overflows, -infinity).
double Bf16Below(double x);
/// §FUS.9 The smallest bf16 value >= x (x itself when x is a bf16 value; past the
/// largest finite bf16, where round to nearest overflows, +infinity).
double Bf16Above(double x);
/// §FUS.9 faithfulBf16 over an allowed interval [lo, hi] of exact values:
/// `bits` must lie between Bf16Below(lo) and Bf16Above(hi), the faithful
/// roundings of every value of the interval. lo = hi = r is FaithfulBf16(bits, r);
/// a NaN end matches only NaN.
bool FaithfulBf16Between(uint16_t bits, double lo, double hi);

/// §FUS.9 gateSlope's Δ: how far the gate function G (v4.1's G41, or the demo's
/// GD when `demo`) moves when its argument moves by up to `t` from `dot`:
/// max(G(dot + t) - G(dot), G(dot) - G(dot - t)), in float64; 0 where that is not
/// finite (a NaN or infinite dot).
double GateSlopeDelta(bool demo, double dot, double t);

/// §FUS.9 A closed interval of exact values.
struct Range {
  double lo = 0;  ///< the lower end
  double hi = 0;  ///< the upper end
};
/// §FUS.9 An interval that contains the float64 dot of §FUS.3 for every key whose
/// element i is key_lo[i] or key_hi[i] (the two faithful bf16 roundings of the
/// float64 kv, §FUS.2): interval arithmetic in float64 on sum_i h_i w_i k_i (each
/// term's extremes apart) and on rsqrt(mean(k^2) + eps) (the sum of squares
/// between its smallest and largest terms). Either end is NaN when h or a key
/// candidate is NaN.
Range V41DotRange(std::span<const uint16_t> h, std::span<const double> key_lo, std::span<const double> key_hi,
                  std::span<const uint16_t> q_weight, std::span<const uint16_t> k_weight, double eps);
/// §FUS.9 The exact values h + g * v for every gate g in [g_lo, g_hi] ∩ [0, 1]
/// (a gate is a sigmoid: never outside [0, 1]) and v = v_lo or v_hi: the extremes
/// lie at the corners because h + g * v is linear in g for each v.
Range V41OutRange(double h, double v_lo, double v_hi, double g_lo, double g_hi);

/// §FUS.9 The exact values a bf16 GEMM (§FUS.2's plain wkv, y[n] = Σ_k x[k] w[n][k])
/// may reach under flush to zero, per output n, hulled with `exact[n]` (the
/// float64 y): a port may take a subnormal bf16 factor as zero (DAZ: each such
/// term t_k may drop out), and may flush any product, partial sum or result
/// below 2^-126 to zero (FTZ: each flush drops a group of terms whose sum is
/// below 2^-126, and a group needs a term that is not a multiple of 2^-126).
/// So lo = Σ_{k∉D} t_k + Σ_D min(t_k, 0) − N · 2^-126 and hi = Σ_{k∉D} t_k +
/// Σ_D max(t_k, 0) + N · 2^-126 (float64 sums), D the terms with a subnormal
/// factor, N the nonzero terms that are not multiples of 2^-126. Where y is
/// not finite the interval is y alone.
std::vector<Range> Bf16GemmFlushRange(std::span<const double> x, std::span<const double> w, size_t out,
                                      std::span<const double> exact);

/// §FUS.9.1 γ_n = n u / (1 − n u) with u = 2^-24 (float32's unit roundoff): a
/// product of n factors (1 + δ_i), |δ_i| ≤ u, is 1 + θ with |θ| ≤ γ_n.
double Float32Gamma(double n);
/// §FUS.9.1 How far a float32 nn.Linear with bias (§FUS.5) may be from the exact
/// value, in any summation order, products fused or not: per output n,
/// γ_(in+1) · (Σ_k |x_k w[n][k]| + |b_n|) + in · 2^-149 (the last term: a product
/// that underflows is off by up to 2^-150 absolute, and sums never underflow).
std::vector<double> LinearBiasErrorBound(std::span<const double> x, std::span<const double> w,
                                         std::span<const double> b);
/// §FUS.9.1 The demo value fl32(γ · p̂) for every gate γ in [g_lo, g_hi] ∩ [0, 1]
/// and every p̂ within `p_err` of the exact projection `p`: the four corners of
/// the product, widened by the product's own rounding (u · |value| + 2^-150).
Range DemoValueRange(double p, double p_err, double g_lo, double g_hi);
/// §FUS.9.1 SiLU over [x.lo, x.hi] (not monotone: decreasing below its minimum at
/// x* = −1.27846, increasing above), widened by torch's float32 evaluation
/// x / (1 + exp(−x)) (γ_4 relative + 2^-149), and reaching 0 where exp(−x) may
/// overflow to inf (x < −88: x / inf = −0).
Range SiluRange(Range x);
/// §FUS.9.1 ShortConv(value) (§FUS.7) for every value whose element i lies in
/// value[i] ([T][hc][hidden]): the RMSNorm over the box (sum of squares between
/// its smallest and largest terms), the conv's exact range (the taps read
/// distinct steps, so the terms vary independently) widened by the convTerms
/// bound γ_(K+⌈H/2⌉+5) · T and the underflow terms, then SiluRange. An element
/// whose bounds are not finite is [NaN, NaN].
std::vector<Range> ShortConvRange(std::span<const Range> value, size_t steps, const DemoParams& params);

/** \var V41StreamTrace::sum_h2
 *  §FUS.3 sum of h_i^2. */
/** \var V41StreamTrace::mean_h2
 *  §FUS.3 sum_h2 / dim. */
/** \var V41StreamTrace::sum_k2
 *  §FUS.3 sum of k_i^2. */
/** \var V41StreamTrace::mean_k2
 *  §FUS.3 sum_k2 / dim. */
/** \var RmsNormTrace::sum_sq
 *  §FUS.5 sum of x_i^2. */
/** \var RmsNormTrace::mean_sq
 *  §FUS.5 sum_sq / n. */
/** \var RmsNormTrace::rstd
 *  §FUS.5 rsqrt(mean_sq + eps). */
/** \var DemoParams::hc
 *  Hyper-connection streams. */
/** \var DemoParams::hidden
 *  Hidden size per stream. */
/** \var DemoParams::kernel
 *  ShortConv kernel_size. */

}  // namespace engram

#endif  // ENGRAM_REFERENCE_FUSION_H_
