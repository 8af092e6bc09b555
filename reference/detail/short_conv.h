/// \file
/// Reference-internal (not installed): §FUS.7 ShortConv with the two choices
/// a port can get wrong made parameters, so that the divergence catalogue's
/// planted ports (vectors/mutants_fusion.cc) run the reference's one loop
/// instead of a copy of it. The spec has one ShortConv; `engram::ShortConv`
/// (reference/fusion.h) is this with the spec's choices, and is what ports and
/// tools call.
#ifndef ENGRAM_REFERENCE_DETAIL_SHORT_CONV_H_
#define ENGRAM_REFERENCE_DETAIL_SHORT_CONV_H_

#include <cstddef>
#include <span>

#include "reference/fusion.h"

namespace engram::detail {

/// Which kernel tap multiplies the present step.
enum class ShortConvTaps {
  kLastIsPresent,   ///< §FUS.7 (torch Conv1d, a cross-correlation): tap j reads (kernel - 1 - j) dilations back
  kFirstIsPresent,  ///< time-reversed, a known port bug: tap j reads j dilations back
};

/// §FUS.7 ShortConv of `value` ([steps][hc][hidden]) whose RMSNorm uses `norm_eps`
/// and whose taps are read in `taps` order. ShortConv(value, steps, params, p)
/// is ShortConvVariant(value, steps, params, p, kShortConvNormEps,
/// ShortConvTaps::kLastIsPresent).
ShortConvTrace ShortConvVariant(std::span<const double> value, size_t steps, const DemoParams& params, Precision p,
                                double norm_eps, ShortConvTaps taps);

}  // namespace engram::detail

#endif  // ENGRAM_REFERENCE_DETAIL_SHORT_CONV_H_
