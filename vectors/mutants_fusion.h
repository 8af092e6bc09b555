// Known porting bugs of the fusion suites, implemented on purpose (spec/fusion.md,
// the divergence catalogue of spec/vectors.md §VEC.12, its ports in spec/sources.md).
//
// Each mutant is the reference (reference/fusion.h) with one bug. The
// generator runs it on every fusion test and sets the mutant's flag iff the
// outputs it returns fail the test under the runner's comparison (§CONF.1,
// §FUS.9); engram_numpy_port --bug NAME plants the same
// bug, written independently, and conform_tests (PlantedBug) checks that it
// fails exactly the flagged tests.
#ifndef ENGRAM_VECTORS_MUTANTS_FUSION_H_
#define ENGRAM_VECTORS_MUTANTS_FUSION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reference/fusion.h"

namespace engram::vectors {

enum class FusionMutant {
  kSignGate,       // v4.1 gate with torch.sign() instead of copysign: 0.5 at dot = +-0 (Mutant::kSignGate)
  kWhereNegative,  // v4.1 gate sigmoid(where(dot < 0, -root, root)): -0 taken as +0
  kPlusEps,        // both gates: sqrt(|dot| + 1e-6) instead of sqrt(max(|dot|, 1e-6))
  kSkipMasked,     // v4.1: masked positions skipped, out = x (0 * inf / NaN in v never reaches out)
  kWkvBlock128,    // fp8 wkv: weight scale [n / 128][k / 128] of the V4.1 scale tensor instead of [n / 32][k / 32]
  kDemoCopysign,   // demo gate with copysign instead of torch.sign(): sigmoid(+-0.001) at g = +-0
  kGateNormEps,    // demo gate's key/query RMSNorms with eps 1e-5 instead of torch's default 2^-23
  kTapOrder,       // ShortConv taps time-reversed: tap j reads step t - j * dilation
  kConvNormEps,    // ShortConv's RMSNorm with torch's default eps 2^-23 instead of 1e-5
  kNonFiniteActivation,  // fp8 wkv: act_quant takes inf / NaN activations (the official CPU kernel): every kv NaN
  kConvStateRestart,  // §FUS.12 every call starts from a zero state: no conv_state imported or carried
  kConvRollbackKept,  // §FUS.12 a rollback leaves the rejected steps in the conv state
  kGateNoSignedRoot,  // demo gate sigmoid(g): no clamp, no signed square root (tile-ai/TileOPs)
  kGateNormEpsZero,   // demo gate's key/query RMSNorms with eps 0 (a llama.cpp port: ggml_rms_norm(x, 0))
  kMaskIgnored,       // v4.1: the gate is not zeroed at masked positions (sglang's production Engram.forward)
};

// Every fusion mutant, in the order their flags are appended to a test.
const std::vector<FusionMutant>& AllFusionMutants();
// The note flag ("SignedZeroCopysign", "WhereNegativeGate", "PlusEpsClamp",
// "MaskedNonFinite", "Fp8Blocks32", "SignZeroHalf", "RmsNormEps", "TapOrder",
// "ConvNormEps", "NonFiniteActivationAccepted", "ConvStateRestart", "ConvRollbackKept",
// "GateNoSignedRoot", "GateNormEpsZero", "MaskedGateNotZeroed").
std::string FusionMutantFlag(FusionMutant m);
// The planted bug of engram_numpy_port (--bug NAME).
std::string FusionMutantBug(FusionMutant m);

// §FUS.4 / §FUS.6 The gate function of `demo` (GD) or v4.1 (G41) as the mutant
// computes it (the reference's where the mutant does not touch it).
GateParts MutantGate(FusionMutant m, bool demo, double dot, Precision p);

// §FUS.3 One v4.1 stream as the mutant computes it (FuseV41Stream's inputs).
V41StreamTrace MutantV41Stream(FusionMutant m, std::span<const uint16_t> h, std::span<const uint16_t> key,
                               std::span<const uint16_t> value, std::span<const uint16_t> q_weight,
                               std::span<const uint16_t> k_weight, double eps, bool masked, Precision p);

// §FUS.2.2 The fp8 GEMM as the mutant computes it (Fp8Linear's inputs).
std::vector<double> MutantFp8Linear(FusionMutant m, const QuantizedActivation& a, std::span<const uint8_t> w_codes,
                                    std::span<const uint8_t> w_scales, size_t out, size_t in, Precision p);

// §FUS.2.1 The fp8 wkv of an activation holding inf or NaN as kNonFiniteActivation computes it (the
// official CPU act_quant, spec/sources.md [SRC-V41-KERNELS]: amax is NaN or inf, fast_round_scale's bit
// trick makes the block's scale -0 or inf, the block's codes hold NaN, so every output of the fp8 GEMM is
// NaN). Empty for any other mutant or a finite activation: the reference's path (which refuses it).
std::vector<double> MutantNonFiniteActivationKv(FusionMutant m, std::span<const uint16_t> e, size_t out);

// §FUS.6 One token of the demo gate as the mutant computes it (DemoGateToken's inputs).
DemoTokenTrace MutantDemoGateToken(FusionMutant m, std::span<const double> e, std::span<const double> hidden,
                                   const DemoParams& params, Precision p);
// §FUS.7 ShortConv as the mutant computes it (ShortConv's inputs).
ShortConvTrace MutantShortConv(FusionMutant m, std::span<const double> value, size_t steps, const DemoParams& params,
                               Precision p);
// §FUS.12 A carried ShortConv as the mutant runs it (ShortConvState's inputs).
std::unique_ptr<ShortConvState> MutantShortConvState(FusionMutant m, const DemoParams& params, size_t rollback_capacity,
                                                     Precision p);
// §FUS.7 The demo layer as the mutant computes it (DemoForward's inputs).
DemoForwardTrace MutantDemoForward(FusionMutant m, std::span<const double> e, std::span<const double> hidden,
                                   size_t steps, const DemoParams& params, Precision p);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_MUTANTS_FUSION_H_
