#include "vectors/mutants_fusion.h"

#include <cmath>
#include <limits>
#include <utility>

#include "reference/detail/short_conv.h"
#include "vectors/mutants.h"

namespace engram::vectors {
namespace {

// torch.sign: (0 < x) - (x < 0), 0 for +0, -0 and NaN.
double TorchSign(double x) { return (0 < x ? 1.0 : 0.0) - (x < 0 ? 1.0 : 0.0); }

}  // namespace

const std::vector<FusionMutant>& AllFusionMutants() {
  static const std::vector<FusionMutant> all = {
      FusionMutant::kSignGate,    FusionMutant::kWhereNegative, FusionMutant::kPlusEps,
      FusionMutant::kSkipMasked,  FusionMutant::kWkvBlock128,   FusionMutant::kDemoCopysign,
      FusionMutant::kGateNormEps, FusionMutant::kTapOrder,      FusionMutant::kConvNormEps,
      FusionMutant::kNonFiniteActivation, FusionMutant::kConvStateRestart, FusionMutant::kConvRollbackKept,
      FusionMutant::kGateNoSignedRoot,    FusionMutant::kGateNormEpsZero,  FusionMutant::kMaskIgnored};
  return all;
}

std::string FusionMutantFlag(FusionMutant m) {
  switch (m) {
    case FusionMutant::kSignGate: return MutantFlag(Mutant::kSignGate);
    case FusionMutant::kWhereNegative: return "WhereNegativeGate";
    case FusionMutant::kPlusEps: return "PlusEpsClamp";
    case FusionMutant::kSkipMasked: return "MaskedNonFinite";
    case FusionMutant::kWkvBlock128: return "Fp8Blocks32";
    case FusionMutant::kDemoCopysign: return "SignZeroHalf";
    case FusionMutant::kGateNormEps: return "RmsNormEps";
    case FusionMutant::kTapOrder: return "TapOrder";
    case FusionMutant::kConvNormEps: return "ConvNormEps";
    case FusionMutant::kNonFiniteActivation: return "NonFiniteActivationAccepted";
    case FusionMutant::kConvStateRestart: return "ConvStateRestart";
    case FusionMutant::kConvRollbackKept: return "ConvRollbackKept";
    case FusionMutant::kGateNoSignedRoot: return "GateNoSignedRoot";
    case FusionMutant::kGateNormEpsZero: return "GateNormEpsZero";
    case FusionMutant::kMaskIgnored: return "MaskedGateNotZeroed";
  }
  return "";
}

std::string FusionMutantBug(FusionMutant m) {
  switch (m) {
    case FusionMutant::kSignGate: return "sign";
    case FusionMutant::kWhereNegative: return "where-negative";
    case FusionMutant::kPlusEps: return "plus-eps";
    case FusionMutant::kSkipMasked: return "skip-masked";
    case FusionMutant::kWkvBlock128: return "wkv-block128";
    case FusionMutant::kDemoCopysign: return "copysign";
    case FusionMutant::kGateNormEps: return "rms-norm-eps";
    case FusionMutant::kTapOrder: return "tap-order";
    case FusionMutant::kConvNormEps: return "conv-norm-eps";
    case FusionMutant::kNonFiniteActivation: return "non-finite-activation";
    case FusionMutant::kConvStateRestart: return "conv-state-restart";
    case FusionMutant::kConvRollbackKept: return "conv-rollback-kept";
    case FusionMutant::kGateNoSignedRoot: return "no-signed-root";
    case FusionMutant::kGateNormEpsZero: return "gate-norm-eps-zero";
    case FusionMutant::kMaskIgnored: return "mask-ignored";
  }
  return "";
}

GateParts MutantGate(FusionMutant m, bool demo, double dot, Precision p) {
  if (demo) dot = Round(dot, p);  // the demo gate's input is a float32 tensor (§FUS.6)
  if (!demo && m == FusionMutant::kSignGate) return MutantGateV41(Mutant::kSignGate, dot, p);
  GateParts g = demo ? GateDemo(dot, p) : GateV41(dot, p);
  if (m == FusionMutant::kPlusEps) {
    // sqrt(|d| + 1e-6): one float32 addition in the mirror; NaN stays NaN.
    g.clamped = Round(std::fabs(dot) + GateClamp(p), p);
    g.root = Round(std::sqrt(g.clamped), p);
    g.signed_root = demo ? Round(g.root * TorchSign(dot), p) : std::copysign(g.root, dot);
  } else if (m == FusionMutant::kWhereNegative && !demo) {
    g.signed_root = dot < 0 ? -g.root : g.root;  // -0 < 0 is false: -0 is taken as +0; NaN keeps root (NaN)
  } else if (m == FusionMutant::kDemoCopysign && demo) {
    g.signed_root = std::copysign(g.root, dot);  // the sign bit: +-0 give +-0.001
  } else if (m == FusionMutant::kGateNoSignedRoot && demo) {
    g.signed_root = dot;  // sigmoid(g) itself: no clamp and no square root (g is a float32 value already)
  } else {
    return g;
  }
  g.gate = Sigmoid(g.signed_root, p);
  return g;
}

V41StreamTrace MutantV41Stream(FusionMutant m, std::span<const uint16_t> h, std::span<const uint16_t> key,
                               std::span<const uint16_t> value, std::span<const uint16_t> q_weight,
                               std::span<const uint16_t> k_weight, double eps, bool masked, Precision p) {
  // Every value before the gate is the reference's (no mutant touches them).
  V41StreamTrace t = FuseV41Stream(h, key, value, q_weight, k_weight, eps, masked, p);
  t.gate_parts = MutantGate(m, false, t.dot, p);
  t.gate = masked && m != FusionMutant::kMaskIgnored ? 0.0 : t.gate_parts.gate;  // a port without the mask
  for (size_t i = 0; i < t.out.size(); ++i) {
    if (m == FusionMutant::kSkipMasked && masked) {
      t.out[i] = Bf16Value(h[i]);  // the position is skipped: out keeps x
    } else {
      t.out[i] = Round(Bf16Value(h[i]) + Round(t.gate * Bf16Value(value[i]), p), p);
    }
    t.out_bf16[i] = ToBf16(t.out[i]);
  }
  return t;
}

std::vector<double> MutantFp8Linear(FusionMutant m, const QuantizedActivation& a, std::span<const uint8_t> w_codes,
                                    std::span<const uint8_t> w_scales, size_t out, size_t in, Precision p) {
  constexpr size_t kBlock = 32;
  const size_t kb_count = in / kBlock, ob_count = (out + kBlock - 1) / kBlock;
  if (m != FusionMutant::kWkvBlock128 || in % kBlock != 0 || w_scales.size() != ob_count * kb_count) {
    return Fp8Linear(a, w_codes, w_scales, out, in, p);  // (shapes the reference refuses, it refuses)
  }
  // Output row n, input column k read scale [n / 128][k / 128] of the stored
  // [ceil(out/32)][in/32] tensor: the 32x32 block (nb, kb) gets the scale of
  // block (nb / 4, kb / 4). Handing that rearranged tensor to the reference
  // GEMM computes exactly the mutant.
  std::vector<uint8_t> s(w_scales.size());
  for (size_t nb = 0; nb < ob_count; ++nb) {
    for (size_t kb = 0; kb < kb_count; ++kb) s[nb * kb_count + kb] = w_scales[(nb / 4) * kb_count + kb / 4];
  }
  return Fp8Linear(a, w_codes, s, out, in, p);
}

std::vector<double> MutantNonFiniteActivationKv(FusionMutant m, std::span<const uint16_t> e, size_t out) {
  if (m != FusionMutant::kNonFiniteActivation) return {};
  for (uint16_t b : e) {
    // A NaN (or inf) code in a block makes its partial sum NaN, and every output adds every block.
    if (!std::isfinite(Bf16Value(b))) return std::vector<double>(out, std::numeric_limits<double>::quiet_NaN());
  }
  return {};
}

DemoTokenTrace MutantDemoGateToken(FusionMutant m, std::span<const double> e, std::span<const double> hidden,
                                   const DemoParams& q, Precision p) {
  // DemoGateToken (reference/fusion.cc) with the mutant's norm eps and gate function.
  q.Check();
  if (e.size() != q.in || hidden.size() != q.hc * q.hidden) {
    return DemoGateToken(e, hidden, q, p);  // the reference refuses these shapes
  }
  const double eps = m == FusionMutant::kGateNormEps ? 1e-5 : m == FusionMutant::kGateNormEpsZero ? 0.0 : kFloat32Epsilon;
  const size_t H = q.hidden;
  DemoTokenTrace tok;
  tok.value_proj = LinearBias(e, q.value_w, q.value_b, p);
  const double sqrt_hidden = Round(std::sqrt(static_cast<double>(H)), p);
  for (size_t c = 0; c < q.hc; ++c) {
    DemoStreamTrace s;
    s.key = LinearBias(e, std::span(q.key_w).subspan(c * H * q.in, H * q.in), std::span(q.key_b).subspan(c * H, H), p);
    s.normed_key = RmsNorm(s.key, std::span(q.norm1_w).subspan(c * H, H), eps, p);
    s.normed_query = RmsNorm(hidden.subspan(c * H, H), std::span(q.norm2_w).subspan(c * H, H), eps, p);
    double abs_sum = 0.0;
    for (size_t j = 0; j < H; ++j) {
      s.sum = Round(s.sum + Round(s.normed_key.y[j] * s.normed_query.y[j], p), p);
      abs_sum += std::fabs(s.normed_key.y[j] * s.normed_query.y[j]);
    }
    s.g = Round(s.sum / sqrt_hidden, p);
    s.dot_scale = abs_sum / std::sqrt(static_cast<double>(H));
    s.gate_parts = MutantGate(m, true, s.g, p);
    s.gate = s.gate_parts.gate;
    s.value.resize(H);
    for (size_t j = 0; j < H; ++j) s.value[j] = Round(s.gate * tok.value_proj[j], p);
    tok.streams.push_back(std::move(s));
  }
  return tok;
}

ShortConvTrace MutantShortConv(FusionMutant m, std::span<const double> value, size_t steps, const DemoParams& q,
                               Precision p) {
  // The reference's ShortConv loop (reference/fusion.cc) with the mutant's
  // norm eps and tap order; every other mutant runs it as the spec has it.
  const double eps = m == FusionMutant::kConvNormEps ? kFloat32Epsilon : kShortConvNormEps;
  const detail::ShortConvTaps taps =
      m == FusionMutant::kTapOrder ? detail::ShortConvTaps::kFirstIsPresent : detail::ShortConvTaps::kLastIsPresent;
  return detail::ShortConvVariant(value, steps, q, p, eps, taps);
}

namespace {

// §FUS.12 The reference's carried ShortConv (reference/fusion.cc) with one bug.
class MutantConvState : public ShortConvState {
 public:
  MutantConvState(FusionMutant m, const DemoParams& q, size_t capacity, Precision p)
      : ShortConvState(q, capacity, p), m_(m) {
    if (m == FusionMutant::kConvNormEps) norm_eps_ = kFloat32Epsilon;
    if (m == FusionMutant::kTapOrder) taps_reversed_ = true;
  }
  void Import(std::span<const double> window) override {
    ShortConvState::Import(window);  // (checks the length as the reference does)
    if (m_ == FusionMutant::kConvStateRestart) Restart();
  }
  ShortConvStateTrace Append(std::span<const double> value, size_t steps) override {
    // A kernel without conv_state: every call is a sequence of its own.
    if (m_ == FusionMutant::kConvStateRestart) Restart();
    return ShortConvState::Append(value, steps);
  }
  void Rollback(size_t k) override {
    // Restarting ports hold nothing to roll back; the kept-draft port accepts
    // the rollback (within the depth, as the reference) and changes nothing.
    if (m_ == FusionMutant::kConvStateRestart) return;
    if (m_ == FusionMutant::kConvRollbackKept) {
      if (k > depth_) ShortConvState::Rollback(k);  // refused as the reference refuses
      return;
    }
    ShortConvState::Rollback(k);
  }

 private:
  void Restart() {
    kept_.assign(WindowSteps() * q_.hc * q_.hidden, 0.0);
    depth_ = 0;
  }
  FusionMutant m_;
};

}  // namespace

std::unique_ptr<ShortConvState> MutantShortConvState(FusionMutant m, const DemoParams& params, size_t rollback_capacity,
                                                     Precision p) {
  return std::make_unique<MutantConvState>(m, params, rollback_capacity, p);
}

DemoForwardTrace MutantDemoForward(FusionMutant m, std::span<const double> e, std::span<const double> hidden,
                                   size_t steps, const DemoParams& q, Precision p) {
  // DemoForward (reference/fusion.cc) through the mutant's gate and ShortConv.
  q.Check();
  const size_t C = q.hc * q.hidden;
  if (e.size() != steps * q.in || hidden.size() != steps * C) return DemoForward(e, hidden, steps, q, p);
  DemoForwardTrace f;
  f.value.assign(steps * C, 0.0);
  for (size_t t = 0; t < steps; ++t) {
    f.tokens.push_back(MutantDemoGateToken(m, e.subspan(t * q.in, q.in), hidden.subspan(t * C, C), q, p));
    for (size_t c = 0; c < q.hc; ++c) {
      for (size_t j = 0; j < q.hidden; ++j) f.value[t * C + c * q.hidden + j] = f.tokens.back().streams[c].value[j];
    }
  }
  f.conv = MutantShortConv(m, f.value, steps, q, p);
  f.output.resize(steps * C);
  f.hidden_after.resize(steps * C);
  for (size_t i = 0; i < steps * C; ++i) {
    f.output[i] = Round(f.value[i] + f.conv.act[i], p);
    f.hidden_after[i] = Round(f.output[i] + hidden[i], p);
  }
  return f;
}

}  // namespace engram::vectors
