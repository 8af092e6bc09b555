// Tests for spec/fusion.md. Expected values come from hand derivations (each
// explained in a comment), from laws (RapidCheck properties), or from the
// independent numpy implementation conformance/crosscheck/numpy_fusion.py.
#include "reference/fusion.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <span>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <rapidcheck/gtest.h>

#include "reference/config.h"
#include "base/error.h"

namespace engram {
namespace {

constexpr Precision k64 = Precision::kFloat64;
constexpr Precision k32 = Precision::kFloat32;

uint16_t Bf(double v) { return ToBf16(v); }

std::vector<uint16_t> Fill(size_t n, double v) { return std::vector<uint16_t>(n, Bf(v)); }

// --------------------------------------------------------------------------
// §FUS.9 text form and bf16 rounding

TEST(FloatHex, MatchesPythonFloatHex) {
  // Values printed by CPython's float.hex().
  EXPECT_EQ(FloatHex(1.0), "0x1.0000000000000p+0");
  EXPECT_EQ(FloatHex(0.1), "0x1.999999999999ap-4");
  EXPECT_EQ(FloatHex(-2.5), "-0x1.4000000000000p+1");
  EXPECT_EQ(FloatHex(0.0), "0x0.0p+0");
  EXPECT_EQ(FloatHex(-0.0), "-0x0.0p+0");
  EXPECT_EQ(FloatHex(5e-324), "0x0.0000000000001p-1022");
  EXPECT_EQ(FloatHex(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(FloatHex(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(FloatHex(std::nan("")), "nan");
  EXPECT_EQ(ParseFloat("0x1.999999999999ap-4", "t"), 0.1);
  EXPECT_TRUE(std::signbit(ParseFloat("-0x0.0p+0", "t")));
  EXPECT_THROW(ParseFloat("0x1.8p+0junk", "field"), Error);
  EXPECT_THROW(ParseFloat("", "field"), Error);
}

TEST(Bf16, RoundToNearestEven) {
  EXPECT_EQ(ToBf16(1.0), 0x3F80);
  // 1 + 2^-8 is halfway between 1 (even mantissa) and 1 + 2^-7: ties to 1.
  EXPECT_EQ(ToBf16(1.0 + std::ldexp(1, -8)), 0x3F80);
  // 1 + 3*2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(ToBf16(1.0 + 3 * std::ldexp(1, -8)), 0x3F82);
  // Just above the tie rounds up (no double rounding through float32).
  EXPECT_EQ(ToBf16(1.0 + std::ldexp(1, -8) + std::ldexp(1, -40)), 0x3F81);
  EXPECT_EQ(ToBf16(-0.0), 0x8000);
  EXPECT_EQ(ToBf16(3.4e38), 0x7F80);  // above max bf16 + half an ulp: inf
  EXPECT_EQ(ToBf16(std::ldexp(1, -133)), 0x0001);  // smallest bf16 subnormal
  EXPECT_EQ(ToBf16(std::nan("")) & 0x7F80, 0x7F80);
  EXPECT_TRUE(FaithfulBf16(0x3F80, 1.0 + std::ldexp(1, -9)));
  EXPECT_TRUE(FaithfulBf16(0x3F81, 1.0 + std::ldexp(1, -9)));
  EXPECT_FALSE(FaithfulBf16(0x3F82, 1.0 + std::ldexp(1, -9)));
  // Just above 1, the bracket is [1, 1 + 2^-7]; 1 - 2^-8 is a bf16 value but not in it.
  EXPECT_FALSE(FaithfulBf16(0x3F7F, 1.0 + std::ldexp(1, -20)));
}

// --------------------------------------------------------------------------
// §FUS.4 / §FUS.6 gates at the edges

TEST(Gate, SignedZeroV41VersusDemo) {
  // copysign: +0 -> sigmoid(+sqrt(1e-6)) = sigmoid(0.001), -0 -> sigmoid(-0.001).
  EXPECT_DOUBLE_EQ(GateV41(0.0, k64).gate, 1.0 / (1.0 + std::exp(-0.001)));
  EXPECT_DOUBLE_EQ(GateV41(-0.0, k64).gate, 1.0 / (1.0 + std::exp(0.001)));
  EXPECT_GT(GateV41(0.0, k64).gate, 0.5);
  EXPECT_LT(GateV41(-0.0, k64).gate, 0.5);
  // demo: sign(0) = 0 -> sigmoid(0) = 0.5 exactly, in both precisions, for both zeros.
  EXPECT_EQ(GateDemo(0.0, k64).gate, 0.5);
  EXPECT_EQ(GateDemo(-0.0, k64).gate, 0.5);
  EXPECT_EQ(GateDemo(0.0, k32).gate, 0.5);
  EXPECT_EQ(GateDemo(-0.0, k32).gate, 0.5);
}

// §FUS.6: the demo gate's input is a float32 tensor upstream, so a float64 g
// that rounds to +-0 in float32 has sign 0 and gives exactly 0.5 in the mirror
// (torch: tensor(1e-50, float32) = +0, sign(+0) = 0, sigmoid(0) = 0.5); the
// float64 evaluation keeps sigmoid(+-0.001).
TEST(Gate, DemoFloat32InputRoundsToZeroFirst) {
  for (double g : {1e-50, -1e-50, std::ldexp(1.0, -151), -std::ldexp(1.0, -1074)}) {
    EXPECT_EQ(GateDemo(g, k32).gate, 0.5) << g;
    EXPECT_EQ(GateDemo(g, k32).signed_root, 0.0) << g;
    EXPECT_EQ(GateDemo(g, k64).gate, GateDemo(std::copysign(1e-6, g), k64).gate) << g;
  }
  // The smallest float32 subnormal survives the rounding: its sign counts.
  const double tiny = std::ldexp(1.0, -149);
  EXPECT_GT(GateDemo(tiny, k32).gate, 0.5);
  EXPECT_LT(GateDemo(-tiny, k32).gate, 0.5);
}

TEST(Gate, ClampBelowOneMillionth) {
  // Every |dot| <= 1e-6 gives the same gate as 1e-6 itself.
  for (double d : {1e-300, 1e-9, 5e-7, 1e-6}) {
    EXPECT_EQ(GateV41(d, k64).gate, GateV41(1e-6, k64).gate) << d;
    EXPECT_EQ(GateV41(-d, k64).gate, GateV41(-1e-6, k64).gate) << d;
    EXPECT_EQ(GateDemo(d, k64).gate, GateDemo(1e-6, k64).gate) << d;
  }
  // float32: the clamp is float32(1e-6) = 9.99999997e-7, and sqrt of it rounds to float32.
  EXPECT_EQ(GateClamp(k32), static_cast<double>(1e-6f));
  EXPECT_EQ(GateV41(1e-9, k32).root, static_cast<double>(std::sqrt(1e-6f)));
  // Just above the clamp the square root is taken of |dot| itself.
  EXPECT_DOUBLE_EQ(GateV41(4e-6, k64).root, 2e-3);
}

TEST(Gate, NaNPropagatesInfinitiesSaturate) {
  EXPECT_TRUE(std::isnan(GateV41(std::nan(""), k64).gate));
  EXPECT_TRUE(std::isnan(GateV41(std::nan(""), k32).gate));
  EXPECT_TRUE(std::isnan(GateDemo(std::nan(""), k64).gate));  // sqrt(NaN) * sign(NaN)=0 is NaN
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(GateV41(inf, k64).gate, 1.0);
  EXPECT_EQ(GateV41(-inf, k64).gate, 0.0);
  EXPECT_EQ(GateDemo(-inf, k32).gate, 0.0);
}

// --------------------------------------------------------------------------
// §FUS.3 v4.1 post-wkv, by hand

TEST(V41, HandComputedStream) {
  // dim 4, h = k = 1, weights 1, eps 0: mean(h^2) = mean(k^2) = 1, rstd = 1,
  // sum = 4, dot = 4 / sqrt(4) = 2, gate = sigmoid(sqrt(2)), out = 1 + gate * 0.5.
  auto one = Fill(4, 1.0), half = Fill(4, 0.5);
  for (Precision p : {k64, k32}) {
    V41StreamTrace t = FuseV41Stream(one, one, half, one, one, 0.0, false, p);
    EXPECT_EQ(t.rstd, 1.0);
    EXPECT_EQ(t.sum_hwk, 4.0);
    EXPECT_EQ(t.dot, 2.0);
    const double g = 1.0 / (1.0 + std::exp(-std::sqrt(2.0)));
    EXPECT_NEAR(t.gate, g, p == k64 ? 1e-16 : 1e-7);
    EXPECT_NEAR(t.out[0], 1.0 + 0.5 * g, p == k64 ? 1e-15 : 2e-7);
    EXPECT_EQ(t.out_bf16[0], ToBf16(1.0 + 0.5 * g));
  }
}

TEST(V41, ZeroStreamAndMask) {
  // h = 0: mean 0, rstd_h = eps^-1/2 (1e10 for eps 1e-20), dot = +0 -> gate sigmoid(0.001).
  auto zero = Fill(8, 0.0), one = Fill(8, 1.0), v = Fill(8, 2.0);
  V41StreamTrace t = FuseV41Stream(zero, one, v, one, one, 1e-20, false, k64);
  EXPECT_DOUBLE_EQ(t.rstd_h, 1e10);
  EXPECT_EQ(t.dot, 0.0);
  EXPECT_FALSE(std::signbit(t.dot));
  EXPECT_DOUBLE_EQ(t.gate, 1.0 / (1.0 + std::exp(-0.001)));
  // Masked: the gate is exactly 0 and out == h bit for bit (finite v, h not -0).
  auto h = Fill(8, -3.25);
  V41StreamTrace m = FuseV41Stream(h, one, v, one, one, 1e-20, true, k32);
  EXPECT_EQ(m.gate, 0.0);
  EXPECT_EQ(m.out_bf16, h);
  // -0 in h with a positive v: -0 + 0*2 = -0 + +0 = +0 (the sign of zero is lost, as in torch).
  std::vector<uint16_t> negzero(8, 0x8000);
  V41StreamTrace z = FuseV41Stream(negzero, one, v, one, one, 1e-20, true, k32);
  EXPECT_EQ(z.out_bf16[0], 0x0000);
  // A NaN value element is NaN in out even when masked: 0 * NaN = NaN.
  std::vector<uint16_t> vnan = v;
  vnan[3] = 0x7FC0;
  V41StreamTrace n = FuseV41Stream(h, one, vnan, one, one, 1e-20, true, k64);
  EXPECT_TRUE(std::isnan(n.out[3]));
  EXPECT_EQ(n.out[2], -3.25);
  // A NaN in h poisons dot and so the gate of the whole stream (unmasked).
  std::vector<uint16_t> hnan = h;
  hnan[0] = 0x7FC0;
  V41StreamTrace hn = FuseV41Stream(hnan, one, v, one, one, 1e-20, false, k32);
  EXPECT_TRUE(std::isnan(hn.gate));
  EXPECT_TRUE(std::isnan(hn.out[5]));
}

TEST(V41, RefusesMismatchedLengths) {
  auto a = Fill(8, 1.0), b = Fill(7, 1.0);
  EXPECT_THROW(FuseV41Stream(a, b, a, a, a, 1e-20, false, k64), Error);
  EXPECT_THROW(FuseV41Stream({}, {}, {}, {}, {}, 1e-20, false, k64), Error);
}

// --------------------------------------------------------------------------
// §FUS.2 fp8 wkv, by hand

TEST(Fp8, EncodeE4M3) {
  EXPECT_EQ(EncodeE4M3Saturating(1.0), 0x38);    // (8 + 0) * 2^(7 - 10)
  EXPECT_EQ(EncodeE4M3Saturating(-1.0), 0xB8);
  EXPECT_EQ(EncodeE4M3Saturating(448.0), 0x7E);  // the largest finite value
  EXPECT_EQ(EncodeE4M3Saturating(1e9), 0x7E);    // saturates, never NaN
  EXPECT_EQ(EncodeE4M3Saturating(std::ldexp(1, -10)), 0x00);     // tie 0 / 2^-9: even code 0
  EXPECT_EQ(EncodeE4M3Saturating(3 * std::ldexp(1, -10)), 0x02);  // tie 2^-9 / 2^-8: even code 2
  EXPECT_EQ(EncodeE4M3Saturating(-0.0), 0x80);
  EXPECT_EQ(EncodeE4M3Saturating(std::nan("")), 0x7F);
}

TEST(Fp8, QuantizeAndGemmByHand) {
  // 32 activations of 1.0: amax = 1, t = fl32(1/448) in [2^-9, 2^-8) -> scale 2^-8
  // (E8M0 byte 119), codes = e4m3(1 * 2^8 = 256) = (8 + 0) * 2^(15 - 10) -> 0x78.
  QuantizedActivation q = QuantizeActivation(Fill(32, 1.0));
  ASSERT_EQ(q.scales.size(), 1u);
  EXPECT_EQ(q.scales[0], 119);
  for (uint8_t c : q.codes) EXPECT_EQ(c, 0x78);
  // 448 exactly: t = fl32(448 * fl32(1/448)); either 1 - 2^-24 or 1 (-> scale 2^0),
  // so the code is 448 = 0x7E. An all-zero block uses amax 1e-4 and codes 0.
  QuantizedActivation q2 = QuantizeActivation(Fill(32, 448.0));
  EXPECT_EQ(q2.codes[0], 0x7E);
  EXPECT_EQ(q2.scales[0], 127);
  QuantizedActivation q3 = QuantizeActivation(Fill(32, 0.0));
  EXPECT_EQ(q3.codes[0], 0x00);
  // One output: 32 * (256 * 2^-8) * (1 * 2^0) = 32 in both precisions.
  std::vector<uint8_t> w(32, 0x38), ws(1, 127);
  for (Precision p : {k64, k32}) EXPECT_EQ(Fp8Linear(q, w, ws, 1, 32, p)[0], 32.0);
  // Weight scale layout [ceil(out/32)][in/32]: 33 outputs use two row blocks.
  std::vector<uint8_t> w33(33 * 32, 0x38), ws33 = {127, 128};
  std::vector<double> y = Fp8Linear(q, w33, ws33, 33, 32, k64);
  EXPECT_EQ(y[31], 32.0);
  EXPECT_EQ(y[32], 64.0);  // row 32 is in row block 1, scale 2^1
  EXPECT_THROW(Fp8Linear(q, w33, ws, 33, 32, k64), Error);
  EXPECT_THROW(QuantizeActivation(Fill(31, 1.0)), Error);
  std::vector<uint16_t> bad = Fill(32, 1.0);
  bad[4] = 0x7F80;  // +inf
  EXPECT_THROW(QuantizeActivation(bad), Error);
}

// --------------------------------------------------------------------------
// §FUS.5-§FUS.7 demo-v1, by hand

DemoParams TinyDemo(size_t hc, size_t hidden, size_t in, size_t kernel, size_t dilation) {
  DemoParams q;
  q.hc = hc;
  q.hidden = hidden;
  q.in = in;
  q.kernel = kernel;
  q.dilation = dilation;
  q.key_w.assign(hc * hidden * in, 0.25);
  q.key_b.assign(hc * hidden, 0.0);
  q.norm1_w.assign(hc * hidden, 1.0);
  q.norm2_w.assign(hc * hidden, 1.0);
  q.value_w.assign(hidden * in, 0.5);
  q.value_b.assign(hidden, 0.0);
  q.conv_norm_w.assign(hc * hidden, 1.0);
  q.conv_w.assign(hc * hidden * kernel, 0.0);
  for (size_t ch = 0; ch < hc * hidden; ++ch) {
    for (size_t j = 0; j < kernel; ++j) q.conv_w[ch * kernel + j] = static_cast<double>(j + 1);
  }
  return q;
}

TEST(Demo, ShortConvTapOrderByHand) {
  // One channel, kernel 4, dilation 3; an impulse at t = 0 (value 1). normed[0]
  // = 1 * rsqrt(1 + 1e-5), later steps are 0. Conv1d is a cross-correlation over
  // left padding: conv[t] = sum_j w[j] x[t - (3 - j) * 3], so the impulse shows
  // up at t = 0, 3, 6, 9 with taps w[3], w[2], w[1], w[0] = 4, 3, 2, 1.
  DemoParams q = TinyDemo(1, 1, 1, 4, 3);
  std::vector<double> value(12, 0.0);
  value[0] = 1.0;
  ShortConvTrace s = ShortConv(value, 12, q, k64);
  const double n0 = 1.0 / std::sqrt(1.0 + 1e-5);
  EXPECT_DOUBLE_EQ(s.normed[0], n0);
  for (size_t t = 0; t < 12; ++t) {
    double want = 0.0;
    if (t % 3 == 0 && t <= 9) want = static_cast<double>(4 - t / 3) * n0;
    EXPECT_DOUBLE_EQ(s.conv[t], want) << "t = " << t;
    EXPECT_DOUBLE_EQ(s.act[t], want / (1.0 + std::exp(-want))) << "t = " << t;
  }
}

// §FUS.7: the left padding is zeros that the taps multiply (IEEE: inf * 0 and
// NaN * 0 are NaN), as torch's Conv1d does; a finite tap on the padding adds
// +-0, which leaves the +0 accumulator as it is.
TEST(Demo, ShortConvNonFiniteTapMeetsPadding) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double w0 : {inf, -inf, std::nan("")}) {
    DemoParams q = TinyDemo(1, 1, 1, 4, 1);
    q.conv_w[0] = w0;  // tap 0 reads t - 3: the padding for t = 0, 1, 2
    std::vector<double> value(5, 1.0);
    for (Precision p : {k64, k32}) {
      ShortConvTrace s = ShortConv(value, 5, q, p);
      for (size_t t = 0; t < 3; ++t) EXPECT_TRUE(std::isnan(s.conv[t])) << "w0 " << w0 << ", t = " << t;
      for (size_t t = 3; t < 5; ++t) {  // tap 0 on a real step: w0 * n with n ~ 1
        if (std::isnan(w0)) EXPECT_TRUE(std::isnan(s.conv[t])) << t;
        else EXPECT_EQ(s.conv[t], w0) << t;
      }
    }
  }
  // A finite tap on the padding changes nothing, -0 included.
  DemoParams q = TinyDemo(1, 1, 1, 4, 1);
  q.conv_w = {-0.0, -3.0, 2.0, 0.5};
  std::vector<double> value = {1.0, 1.0};
  const ShortConvTrace s = ShortConv(value, 2, q, k32);
  const double n0 = s.normed[0];
  EXPECT_EQ(s.conv[0], Round(0.5 * n0, k32));
  EXPECT_EQ(s.conv[1], Round(Round(2.0 * n0, k32) + Round(0.5 * n0, k32), k32));
}

TEST(Demo, GateByHand) {
  // in 2, hidden 2, one stream: e = (1, 1), key = 0.25 + 0.25 = 0.5 per element;
  // RMSNorm(key) = 0.5 / sqrt(0.25 + eps) ~ 1 - 2 eps; hidden (3, 3) normalizes
  // to ~1 too; g = (sum of two ~1 products) / sqrt(2) ~ sqrt(2);
  // gate = sigmoid(sqrt(sqrt 2)) = sigmoid(2^(1/4)).
  DemoParams q = TinyDemo(1, 2, 2, 1, 1);
  std::vector<double> e = {1.0, 1.0}, hidden = {3.0, 3.0};
  DemoTokenTrace tok = DemoGateToken(e, hidden, q, k64);
  EXPECT_EQ(tok.value_proj[0], 1.0);
  EXPECT_EQ(tok.streams[0].key[0], 0.5);
  EXPECT_NEAR(tok.streams[0].g, std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(tok.streams[0].gate, 1.0 / (1.0 + std::exp(-std::pow(2.0, 0.25))), 1e-6);
  EXPECT_EQ(tok.streams[0].value[0], tok.streams[0].gate * 1.0);
  // An all-zero hidden state: normed query 0, g = +0 -> gate 0.5 exactly.
  std::vector<double> zero = {0.0, 0.0};
  EXPECT_EQ(DemoGateToken(e, zero, q, k32).streams[0].gate, 0.5);
}

TEST(Demo, RefusesBadParameters) {
  DemoParams q = TinyDemo(1, 2, 2, 1, 1);
  q.conv_w.pop_back();
  std::vector<double> e = {1.0, 1.0}, hidden = {3.0, 3.0};
  EXPECT_THROW(DemoGateToken(e, hidden, q, k64), Error);
}

// --------------------------------------------------------------------------
// Properties

RC_GTEST_PROP(FusionProperties, GateInUnitInterval, (int32_t raw, bool demo, bool f32)) {
  const double dot = static_cast<double>(raw) * 1e-6;
  const Precision p = f32 ? k32 : k64;
  const double g = demo ? GateDemo(dot, p).gate : GateV41(dot, p).gate;
  RC_ASSERT(g >= 0.0);
  RC_ASSERT(g <= 1.0);
}

RC_GTEST_PROP(FusionProperties, V41GateSymmetricAwayFromZero, (int32_t raw)) {
  RC_PRE(raw != 0);
  const double dot = static_cast<double>(raw) * 1e-7;
  // sigmoid(-x) = 1 - sigmoid(x); copysign makes the signed root odd in dot.
  RC_ASSERT(std::fabs(GateV41(-dot, k64).gate - (1.0 - GateV41(dot, k64).gate)) <= 1e-15);
  RC_ASSERT(GateV41(-dot, k64).signed_root == -GateV41(dot, k64).signed_root);
}

RC_GTEST_PROP(FusionProperties, GateMonotoneInDot, (int32_t a, int32_t b)) {
  const double x = static_cast<double>(std::min(a, b)) * 1e-5, y = static_cast<double>(std::max(a, b)) * 1e-5;
  RC_ASSERT(GateV41(x, k64).gate <= GateV41(y, k64).gate);
  RC_ASSERT(GateDemo(x, k32).gate <= GateDemo(y, k32).gate);
}

// Random bf16 vector with entries k/16 for k in [-64, 64] (never -0).
std::vector<uint16_t> SmallBf16(const std::vector<int>& ks) {
  std::vector<uint16_t> out;
  for (int k : ks) out.push_back(ToBf16(static_cast<double>(k % 65) / 16.0 + 0.0));
  return out;
}

RC_GTEST_PROP(FusionProperties, MaskedOutputIsHBitExact, ()) {
  const size_t dim = *rc::gen::inRange<size_t>(1, 40);
  auto gen = rc::gen::container<std::vector<int>>(dim, rc::gen::arbitrary<int>());
  const auto h = SmallBf16(*gen), k = SmallBf16(*gen), v = SmallBf16(*gen), w = SmallBf16(*gen);
  for (Precision p : {k64, k32}) {
    V41StreamTrace t = FuseV41Stream(h, k, v, w, w, 1e-20, true, p);
    RC_ASSERT(t.gate == 0.0);
    RC_ASSERT(t.out_bf16 == h);
  }
}

RC_GTEST_PROP(FusionProperties, ShortConvIsCausal, ()) {
  const size_t steps = *rc::gen::inRange<size_t>(2, 12);
  const size_t cut = *rc::gen::inRange<size_t>(1, steps);
  DemoParams q = TinyDemo(2, 3, 2, 4, 3);
  auto values = *rc::gen::container<std::vector<int>>(steps * 6, rc::gen::inRange(-100, 100));
  std::vector<double> a(values.begin(), values.end()), b = a;
  for (size_t i = cut * 6; i < b.size(); ++i) b[i] = b[i] * 3.0 + 1.0;  // change only t >= cut
  for (Precision p : {k64, k32}) {
    ShortConvTrace sa = ShortConv(a, steps, q, p), sb = ShortConv(b, steps, q, p);
    for (size_t i = 0; i < cut * 6; ++i) RC_ASSERT(sa.act[i] == sb.act[i]);
  }
}

// §FUS.12 Carried across calls. By hand: one channel, kernel 2, dilation 2 (W =
// 2), taps 1 (tap 0, two steps back) and 2 (the present). A state imported as
// the normed rows [a, b] makes the next step read a: conv = 1 * a + 2 * n.
TEST(Demo, ConvStateImportedRowsAreReadAsTheyAre) {
  DemoParams q = TinyDemo(1, 1, 1, 2, 2);
  ShortConvState s(q, 0, k64);
  ASSERT_EQ(s.WindowSteps(), 2u);
  s.Import(std::vector<double>{3.0, 5.0});  // not normalized again: a raw value would be 1
  const ShortConvStateTrace t = s.Append(std::vector<double>{2.0, -1.0}, 2);
  const double n = 1.0 / std::sqrt(1.0 + 1e-5);  // RMSNorm of one value x is x / |x| * rsqrt(1 + eps / x^2)
  const double n0 = 2.0 / std::sqrt(4.0 + 1e-5), n1 = -1.0 / std::sqrt(1.0 + 1e-5);
  EXPECT_DOUBLE_EQ(t.normed[0], n0);
  EXPECT_DOUBLE_EQ(t.normed[1], n1);
  EXPECT_DOUBLE_EQ(t.conv[0], 3.0 + 2.0 * n0);  // step 0 reads the imported a = 3
  EXPECT_DOUBLE_EQ(t.conv[1], 5.0 + 2.0 * n1);  // step 1 reads b = 5
  EXPECT_EQ(t.window, (std::vector<double>{3.0, n0, 5.0, n1}));
  EXPECT_EQ(s.Window(), (std::vector<double>{n0, n1}));
  EXPECT_LT(std::fabs(n1 + n), 1e-15);
}

// §FUS.12 the depth rule of §HASH.6 in steps: a fresh or imported state rolls
// back nothing; beyond the depth the reference refuses and keeps its state.
TEST(Demo, ConvStateRollbackWithinTheDepthOnly) {
  DemoParams q = TinyDemo(1, 2, 1, 3, 1);
  ShortConvState s(q, 2, k32);
  EXPECT_THROW(s.Rollback(1), Error);
  s.Append(std::vector<double>(2 * 3, 0.5), 3);
  EXPECT_EQ(s.Depth(), 2u);
  const std::vector<double> before = s.Window();
  EXPECT_THROW(s.Rollback(3), Error);
  EXPECT_EQ(s.Window(), before);
  s.Rollback(2);
  EXPECT_EQ(s.Depth(), 0u);
  EXPECT_THROW(s.Append(std::vector<double>(3, 0.5), 2), Error);  // 3 values for 2 steps of 2
  EXPECT_THROW(s.Import(std::vector<double>(3, 0.0)), Error);     // W * hc * hidden = 4
  ShortConvState one(TinyDemo(1, 1, 1, 1, 3), 0, k64);            // kernel 1: no state at all
  EXPECT_EQ(one.WindowSteps(), 0u);
  EXPECT_EQ(one.Append(std::vector<double>{2.0}, 1).act.size(), 1u);
  EXPECT_TRUE(one.Window().empty());
}

// §FUS.12 Where a chunk starts is invisible: any cut of a sequence into calls
// gives ShortConv's outputs bit for bit (both precisions), and the state after
// is the last W normed rows (+0 before the start).
RC_GTEST_PROP(FusionProperties, ConvStateChunksEqualTheWholeSequence, ()) {
  const size_t hc = *rc::gen::inRange<size_t>(1, 3), hidden = *rc::gen::inRange<size_t>(1, 4);
  const size_t kernel = *rc::gen::inRange<size_t>(1, 5), dilation = *rc::gen::inRange<size_t>(1, 4);
  const size_t steps = *rc::gen::inRange<size_t>(0, 16), C = hc * hidden;
  DemoParams q = TinyDemo(hc, hidden, 1, kernel, dilation);
  auto taps = *rc::gen::container<std::vector<int>>(C * kernel, rc::gen::inRange(-8, 8));
  for (size_t i = 0; i < taps.size(); ++i) q.conv_w[i] = taps[i] / 4.0;
  auto ints = *rc::gen::container<std::vector<int>>(steps * C, rc::gen::inRange(-100, 100));
  const std::vector<double> value(ints.begin(), ints.end());
  for (Precision p : {k64, k32}) {
    const ShortConvTrace whole = ShortConv(value, steps, q, p);
    ShortConvState s(q, *rc::gen::inRange<size_t>(0, 4), p);
    std::vector<double> act;
    for (size_t t = 0; t < steps;) {
      // A chunk of 1 ... the rest, now and then an empty call before it.
      if (*rc::gen::inRange(0, 4) == 0) s.Append({}, 0);
      const size_t n = *rc::gen::inRange<size_t>(1, steps - t + 1);
      const ShortConvStateTrace c = s.Append(std::span(value).subspan(t * C, n * C), n);
      act.insert(act.end(), c.act.begin(), c.act.end());
      t += n;
    }
    RC_ASSERT(act == whole.act);
    const size_t W = (kernel - 1) * dilation;
    std::vector<double> last(W * C, 0.0);
    for (size_t r = 0; r < W && r < steps; ++r) {
      for (size_t ch = 0; ch < C; ++ch) last[(W - 1 - r) * C + ch] = whole.normed[(steps - 1 - r) * C + ch];
    }
    RC_ASSERT(s.Window() == last);
  }
}

// §FUS.12 A rollback by k within the depth leaves the state of the sequence
// without its last k steps: appends after it give the outputs of that
// sequence, as if the rolled-back steps had never come.
RC_GTEST_PROP(FusionProperties, ConvStateRollbackForgetsTheDraft, ()) {
  const size_t kernel = *rc::gen::inRange<size_t>(1, 5), dilation = *rc::gen::inRange<size_t>(1, 4);
  const size_t C = 2, capacity = *rc::gen::inRange<size_t>(1, 6);
  DemoParams q = TinyDemo(1, 2, 1, kernel, dilation);
  for (size_t i = 0; i < q.conv_w.size(); ++i) q.conv_w[i] = static_cast<double>(i % 5) - 2.0;
  const size_t prefix = *rc::gen::inRange<size_t>(0, 10), draft = *rc::gen::inRange<size_t>(1, capacity + 1);
  const size_t k = *rc::gen::inRange<size_t>(0, draft + 1), after = *rc::gen::inRange<size_t>(1, 6);
  auto gen = [&](size_t n) {
    auto ints = *rc::gen::container<std::vector<int>>(n * C, rc::gen::inRange(-50, 50));
    return std::vector<double>(ints.begin(), ints.end());
  };
  const std::vector<double> a = gen(prefix), d = gen(draft), b = gen(after);
  ShortConvState s(q, capacity, k32);
  s.Append(a, prefix);
  s.Append(d, draft);
  s.Rollback(k);
  const std::vector<double> got = s.Append(b, after).act;
  std::vector<double> kept = a;
  kept.insert(kept.end(), d.begin(), d.end() - static_cast<ptrdiff_t>(k * C));
  kept.insert(kept.end(), b.begin(), b.end());
  const size_t total = kept.size() / C;
  const ShortConvTrace whole = ShortConv(kept, total, q, k32);
  RC_ASSERT(got == std::vector<double>(whole.act.end() - static_cast<ptrdiff_t>(after * C), whole.act.end()));
}

// §FUS.9.1 SiLU is not monotone: its range over [lo, hi] holds SiLU of every
// point of the interval (in float64 and as the float32 mirror rounds it), the
// minimum -0.27846 included where the interval straddles x* = -1.27846.
RC_GTEST_PROP(FusionProperties, SiluRangeHoldsEveryPoint, (int16_t a, int16_t b, uint8_t at)) {
  const double x0 = a / 4096.0, x1 = b / 4096.0;  // |x| < 8
  const Range r = SiluRange({std::min(x0, x1), std::max(x0, x1)});
  const double x = std::min(x0, x1) + (std::max(x0, x1) - std::min(x0, x1)) * (at / 255.0);
  for (Precision p : {k64, k32}) {
    const double s = Silu(Round(x, p), p);
    if (Round(x, p) < std::min(x0, x1) || Round(x, p) > std::max(x0, x1)) continue;
    RC_ASSERT(r.lo <= s);
    RC_ASSERT(s <= r.hi);
  }
}

// §FUS.9.1 ShortConvRange holds the float32 mirror's ShortConv of every value
// in the box (here: each element at an end or inside its interval).
RC_GTEST_PROP(FusionProperties, ShortConvRangeHoldsEveryValueInTheBox, ()) {
  const size_t steps = *rc::gen::inRange<size_t>(1, 9);
  const size_t hidden = *rc::gen::inRange<size_t>(1, 4);
  DemoParams q = TinyDemo(2, hidden, 2, 3, 2);
  const size_t n = steps * 2 * hidden;
  const auto centre = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(-3000, 3000));
  const auto width = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(0, 50));
  const auto pick = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(0, 3));
  std::vector<Range> box(n);
  std::vector<double> point(n);
  for (size_t i = 0; i < n; ++i) {
    const double c = centre[i] / 1024.0, w = width[i] / 65536.0;
    box[i] = {c - w, c + w};
    point[i] = pick[i] == 0 ? box[i].lo : pick[i] == 1 ? box[i].hi : Round(c, k32);
  }
  const std::vector<Range> range = ShortConvRange(box, steps, q);
  const ShortConvTrace m = ShortConv(point, steps, q, k32);
  for (size_t i = 0; i < n; ++i) {
    RC_ASSERT(range[i].lo <= m.act[i]);
    RC_ASSERT(m.act[i] <= range[i].hi);
  }
}

RC_GTEST_PROP(FusionProperties, MirrorWithinToleranceOfReference, ()) {
  // §FUS.3 step 5, §FUS.9: in both precisions the bf16 cast of out is faithful
  // to the value it casts. (The float32 mirror's out is not always faithful to
  // the float64 r: its gate differs from r's by a float32 rounding, which can
  // move h + gate * v across a bf16 value: a RapidCheck run found such inputs,
  // dim 46 of these small values.)
  const size_t dim = *rc::gen::inRange<size_t>(1, 64);
  auto gen = rc::gen::container<std::vector<int>>(dim, rc::gen::arbitrary<int>());
  const auto h = SmallBf16(*gen), k = SmallBf16(*gen), v = SmallBf16(*gen), w = SmallBf16(*gen);
  V41StreamTrace r = FuseV41Stream(h, k, v, w, w, 1e-20, false, k64);
  V41StreamTrace m = FuseV41Stream(h, k, v, w, w, 1e-20, false, k32);
  for (size_t i = 0; i < dim; ++i) {
    RC_ASSERT(FaithfulBf16(r.out_bf16[i], r.out[i]));
    RC_ASSERT(FaithfulBf16(m.out_bf16[i], m.out[i]));
  }
}

// --------------------------------------------------------------------------
// §FUS.9 the bf16 GEMM's flush to zero

// A float32 value (in a double) below 2^-126 in magnitude -> a zero of its sign (FTZ / DAZ).
double Flush(double v) { return std::fabs(v) < std::ldexp(1.0, -126) ? std::copysign(0.0, v) : v; }

// One output of a bf16 GEMM in float32: the terms in `order` added to `lanes`
// accumulators (term i to lane i % lanes, each an FMA: one rounding), the
// lanes summed left to right; subnormal factors read as 0 when `daz`; every
// result (and the bf16 cast's input) flushed to zero when `ftz`.
double Bf16Dot(std::span<const double> x, std::span<const double> w, const std::vector<size_t>& order, size_t lanes,
               bool daz, bool ftz) {
  auto f = [&](double v) { return ftz ? Flush(v) : v; };
  std::vector<double> acc(lanes, 0.0);
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t k = order[i];
    const double a = daz ? Flush(x[k]) : x[k], b = daz ? Flush(w[k]) : w[k];
    acc[i % lanes] = f(Round(acc[i % lanes] + a * b, k32));  // the product is exact in a double
  }
  double sum = 0.0;
  for (double v : acc) sum = f(Round(sum + v, k32));
  return f(sum);
}

TEST(Bf16GemmFlush, HandDerivations) {
  const double p = std::ldexp(1.0, -60);
  // 2^-60 * 2^-65 - 2^-60 * 2^-66 = 2^-126: both products are multiples of 2^-126, so no
  // partial sum in any order is subnormal: nothing may be flushed, the interval is the point.
  {
    const std::vector<double> x = {p, p}, w = {std::ldexp(1.0, -65), -std::ldexp(1.0, -66)};
    const std::vector<Range> r = Bf16GemmFlushRange(x, w, 1, LinearNoBias(x, w, 1, k64));
    EXPECT_EQ(r[0].lo, std::ldexp(1.0, -126));
    EXPECT_EQ(r[0].hi, std::ldexp(1.0, -126));
  }
  // One product 2^-130 (not a multiple of 2^-126): one group may be flushed, 2^-130 ± 2^-126.
  {
    const std::vector<double> x = {p}, w = {std::ldexp(1.0, -70)};
    const std::vector<Range> r = Bf16GemmFlushRange(x, w, 1, LinearNoBias(x, w, 1, k64));
    EXPECT_EQ(r[0].lo, std::ldexp(1.0, -130) - std::ldexp(1.0, -126));
    EXPECT_EQ(r[0].hi, std::ldexp(1.0, -130) + std::ldexp(1.0, -126));
  }
  // 1 + 2^-130 * 2^123: the subnormal factor may be read as 0 (DAZ), dropping the term 2^-7, and
  // the terms are multiples of 2^-126: [1, 1 + 2^-7].
  {
    const std::vector<double> x = {1.0, std::ldexp(1.0, -130)}, w = {1.0, std::ldexp(1.0, 123)};
    const std::vector<Range> r = Bf16GemmFlushRange(x, w, 1, LinearNoBias(x, w, 1, k64));
    EXPECT_EQ(r[0].lo, 1.0);
    EXPECT_EQ(r[0].hi, 1.0 + std::ldexp(1.0, -7));
  }
  // A negative term with a subnormal factor widens the other side: 1 - 2^-7 ... 1.
  {
    const std::vector<double> x = {1.0, -std::ldexp(1.0, -130)}, w = {1.0, std::ldexp(1.0, 123)};
    const std::vector<Range> r = Bf16GemmFlushRange(x, w, 1, LinearNoBias(x, w, 1, k64));
    EXPECT_EQ(r[0].lo, 1.0 - std::ldexp(1.0, -7));
    EXPECT_EQ(r[0].hi, 1.0);
  }
  // Not finite: the point.
  {
    const std::vector<double> x = {std::numeric_limits<double>::infinity()}, w = {1.0};
    const std::vector<Range> r = Bf16GemmFlushRange(x, w, 1, LinearNoBias(x, w, 1, k64));
    EXPECT_TRUE(std::isinf(r[0].lo) && std::isinf(r[0].hi));
  }
}

// §FUS.9 every flushing evaluation (DAZ or not; the terms in increasing, decreasing or
// VDPBF16PS's pair order; 1, 2 or 16 accumulators summed at the end) gives a bf16 value
// within [lo, hi]: bf16 values with exponents near 2^-63, whose products straddle 2^-126,
// and a few subnormal factors, zeros and large values. Where the same evaluation without
// the flush is not faithful to the float64 value (a huge term cancelling another rounds
// small ones away in one order and not in another), faithfulBf16's premise fails before
// any flush (§FUS.2: the random cases keep only cases where it holds): such an order is
// skipped.
RC_GTEST_PROP(FusionProperties, Bf16GemmFlushRangeHoldsEveryFlushingOrder, ()) {
  const size_t in = *rc::gen::inRange<size_t>(1, 48);
  const size_t out = *rc::gen::inRange<size_t>(1, 4);
  const int base = *rc::gen::inRange(-68, -56);
  auto value = [&](int kind, int mant, int exp) {
    const double m = 1.0 + (mant & 0x7F) / 128.0, s = (mant & 0x80) ? -1.0 : 1.0;
    switch (kind) {
      case 0: return 0.0;
      case 1: return Bf16Value(ToBf16(s * std::ldexp(m, -127 - (exp & 7))));  // a bf16 subnormal
      case 2: return s * std::ldexp(m, (exp & 7) * 16);                        // 1 ... 2^112: a DAZ term weighs
      default: return s * std::ldexp(m, base - (exp & 7));                     // tiny, normal
    }
  };
  auto draw = [&](size_t n) {
    const auto kinds = *rc::gen::container<std::vector<int>>(n, rc::gen::weightedElement<int>({{1, 0}, {3, 1}, {1, 2}, {8, 3}}));
    const auto mants = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(0, 256));
    const auto exps = *rc::gen::container<std::vector<int>>(n, rc::gen::inRange(0, 8));
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = value(kinds[i], mants[i], exps[i]);
    return v;
  };
  const std::vector<double> x = draw(in), w = draw(in * out);
  const std::vector<double> r = LinearNoBias(x, w, out, k64);
  const std::vector<Range> range = Bf16GemmFlushRange(x, w, out, r);
  std::vector<size_t> up(in), down(in), pairs;
  for (size_t k = 0; k < in; ++k) up[k] = k, down[k] = in - 1 - k;
  for (size_t k = 0; k < in; k += 2) {
    if (k + 1 < in) pairs.push_back(k + 1);
    pairs.push_back(k);
  }
  for (size_t n = 0; n < out; ++n) {
    const auto row = std::span<const double>(w).subspan(n * in, in);
    RC_ASSERT(range[n].lo <= r[n] && r[n] <= range[n].hi);
    double kept = 0;  // the float64 value without the terms DAZ drops
    for (size_t k = 0; k < in; ++k) kept += Flush(x[k]) * Flush(row[k]);
    for (const auto* order : {&up, &down, &pairs}) {
      for (size_t lanes : {size_t{1}, size_t{2}, size_t{16}}) {
        for (bool daz : {false, true}) {
          if (!FaithfulBf16(ToBf16(Bf16Dot(x, row, *order, lanes, daz, false)), daz ? kept : r[n])) continue;
          const uint16_t bits = ToBf16(Bf16Dot(x, row, *order, lanes, daz, true));
          RC_ASSERT(FaithfulBf16Between(bits, range[n].lo, range[n].hi));
        }
      }
    }
  }
}

// --------------------------------------------------------------------------
// The numpy oracle (conformance/crosscheck/numpy_fusion.py)

std::vector<uint16_t> Bits(const nlohmann::json& a) { return a.get<std::vector<uint16_t>>(); }
double Hex(const nlohmann::json& s) { return ParseFloat(s.get<std::string>(), "crosscheck"); }
std::vector<double> Hexes(const nlohmann::json& a) {
  std::vector<double> out;
  for (const auto& s : a) out.push_back(Hex(s));
  return out;
}
// float64 vs float64: equal up to a different summation order.
void Close64(double ours, double numpy, double scale, const std::string& what) {
  if (std::isnan(numpy)) {
    EXPECT_TRUE(std::isnan(ours)) << what;
    return;
  }
  EXPECT_LE(std::fabs(ours - numpy), 1e-12 * std::max({std::fabs(numpy), scale, 1e-300})) << what;
}

TEST(NumpyCrosscheck, FusionFileIfPresent) {
  const char* path = std::getenv("ENGRAM_NUMPY_FUSION_CROSSCHECK");
  if (path == nullptr || *path == '\0') GTEST_SKIP() << "ENGRAM_NUMPY_FUSION_CROSSCHECK is not set";
  const nlohmann::json doc = ReadJsonFile(path, engram::InputKind::kVectorFile);
  size_t n_v41 = 0, n_gates = 0, n_fp8 = 0, n_demo = 0, n_values = 0;
  for (const auto& c : doc.at("v41")) {
    SCOPED_TRACE("v41 case " + std::to_string(n_v41));
    const double eps = Hex(c["eps"]);
    const bool masked = c["masked"].get<bool>();
    auto run = [&](Precision p) {
      return FuseV41Stream(Bits(c["h"]), Bits(c["key"]), Bits(c["value"]), Bits(c["q_weight"]), Bits(c["k_weight"]),
                           eps, masked, p);
    };
    V41StreamTrace r = run(k64), m = run(k32);
    const double scale = Hex(c["f64"]["dot_scale"]);
    Close64(r.rstd, Hex(c["f64"]["rstd"]), 0, "rstd");
    Close64(r.dot, Hex(c["f64"]["dot"]), scale, "dot");
    Close64(r.dot_scale, scale, 0, "dot_scale");
    Close64(r.gate, Hex(c["f64"]["gate"]), 0, "gate");
    const std::vector<double> out64 = Hexes(c["f64"]["out"]);
    for (size_t i = 0; i < out64.size(); ++i) Close64(r.out[i], out64[i], 0, "out " + std::to_string(i));
    // numpy float32 (pairwise sums, numpy's exp) as the "port", the C++ mirror as
    // the mirror: the §FUS.9 rule must hold.
    const double np_dot = Hex(c["f32"]["dot"]), np_gate = Hex(c["f32"]["gate"]);
    EXPECT_TRUE(WithinTolerance(np_dot, r.dot, m.dot, 2, std::ldexp(1, -18), scale))
        << "numpy f32 dot " << np_dot << " ref " << r.dot << " mirror " << m.dot;
    EXPECT_TRUE(WithinTolerance(Hex(c["f32"]["rstd"]), r.rstd, m.rstd, 2, std::ldexp(1, -20), std::fabs(r.rstd)));
    EXPECT_TRUE(WithinTolerance(np_gate, r.gate, m.gate, 2, std::ldexp(1, -18), 1.0))
        << "numpy f32 gate " << np_gate << " ref " << r.gate << " mirror " << m.gate;
    const std::vector<uint16_t> np_out = Bits(c["f32"]["out_bf16"]);
    for (size_t i = 0; i < np_out.size(); ++i) {
      EXPECT_TRUE(FaithfulBf16(np_out[i], r.out[i])) << "numpy out " << i;
      EXPECT_TRUE(FaithfulBf16(m.out_bf16[i], r.out[i])) << "mirror out " << i;
    }
    if (masked) EXPECT_EQ(m.out_bf16, Bits(c["h"]));
    n_values += out64.size();
    ++n_v41;
  }
  for (const auto& g : doc.at("gates")) {
    const double x = Hex(g["x"]);
    SCOPED_TRACE("gate input " + g["x"].get<std::string>());
    Close64(GateV41(x, k64).gate, Hex(g["v41_f64"]), 0, "v41 gate f64");
    Close64(GateDemo(x, k64).gate, Hex(g["demo_f64"]), 0, "demo gate f64");
    // float32: numpy's float32 exp vs the mirror's rounded double exp: a few ulps.
    EXPECT_TRUE(WithinTolerance(Hex(g["v41_f32"]), GateV41(x, k64).gate, GateV41(x, k32).gate, 2, std::ldexp(1, -22), 1));
    EXPECT_TRUE(WithinTolerance(Hex(g["demo_f32"]), GateDemo(x, k64).gate, GateDemo(x, k32).gate, 2, std::ldexp(1, -22), 1));
    ++n_gates;
  }
  for (const auto& f : doc.at("fp8")) {
    SCOPED_TRACE("fp8 case " + std::to_string(n_fp8));
    QuantizedActivation q = QuantizeActivation(Bits(f["x"]));
    EXPECT_EQ(q.codes, f["a_codes"].get<std::vector<uint8_t>>());
    EXPECT_EQ(q.scales, f["a_scales"].get<std::vector<uint8_t>>());
    const auto wc = f["w_codes"].get<std::vector<uint8_t>>(), ws = f["w_scales"].get<std::vector<uint8_t>>();
    const size_t out = f["out"], in = f["in"];
    std::vector<double> y64 = Fp8Linear(q, wc, ws, out, in, k64), y32 = Fp8Linear(q, wc, ws, out, in, k32);
    const std::vector<double> np64 = Hexes(f["y64"]);
    const std::vector<uint16_t> np32 = Bits(f["y32_bf16"]);
    for (size_t n = 0; n < out; ++n) {
      Close64(y64[n], np64[n], 0, "fp8 y64 " + std::to_string(n));
      EXPECT_TRUE(FaithfulBf16(np32[n], y64[n])) << "numpy fp8 y32 " << n;
      EXPECT_TRUE(FaithfulBf16(ToBf16(y32[n]), y64[n])) << "mirror fp8 y32 " << n;
    }
    n_values += out;
    ++n_fp8;
  }
  for (const auto& d : doc.at("demo")) {
    SCOPED_TRACE("demo case " + std::to_string(n_demo));
    DemoParams q;
    q.hc = d["hc"];
    q.hidden = d["hidden"];
    q.in = d["in"];
    q.kernel = d["kernel"];
    q.dilation = d["dilation"];
    q.key_w = Hexes(d["key_w"]);
    q.key_b = Hexes(d["key_b"]);
    q.norm1_w = Hexes(d["norm1_w"]);
    q.norm2_w = Hexes(d["norm2_w"]);
    q.value_w = Hexes(d["value_w"]);
    q.value_b = Hexes(d["value_b"]);
    q.conv_norm_w = Hexes(d["conv_norm_w"]);
    q.conv_w = Hexes(d["conv_w"]);
    const size_t steps = d["steps"];
    const std::vector<double> e = Hexes(d["e"]), hidden = Hexes(d["hidden_states"]);
    DemoForwardTrace r = DemoForward(e, hidden, steps, q, k64), m = DemoForward(e, hidden, steps, q, k32);
    const std::vector<double> out64 = Hexes(d["f64"]["output"]), out32 = Hexes(d["f32"]["output"]);
    const std::vector<double> g64 = Hexes(d["f64"]["gates"]), g32 = Hexes(d["f32"]["gates"]);
    for (size_t t = 0; t < steps; ++t) {
      for (size_t c = 0; c < q.hc; ++c) {
        Close64(r.tokens[t].streams[c].gate, g64[t * q.hc + c], 0, "demo gate");
        EXPECT_TRUE(WithinTolerance(g32[t * q.hc + c], r.tokens[t].streams[c].gate, m.tokens[t].streams[c].gate, 2,
                                    std::ldexp(1, -18), 1.0));
      }
    }
    const size_t C = q.hc * q.hidden;
    for (size_t t = 0; t < steps; ++t) {
      for (size_t c = 0; c < q.hc; ++c) {
        double vmax = 0;  // §FUS.9 scale: the max |ref64| of the (token, stream) vector
        for (size_t j = 0; j < q.hidden; ++j) vmax = std::max(vmax, std::fabs(r.output[t * C + c * q.hidden + j]));
        for (size_t j = 0; j < q.hidden; ++j) {
          const size_t i = t * C + c * q.hidden + j;
          Close64(r.output[i], out64[i], vmax, "demo output " + std::to_string(i));
          EXPECT_TRUE(WithinTolerance(out32[i], r.output[i], m.output[i], 2, std::ldexp(1, -17), vmax))
              << "demo f32 output " << i << ": numpy " << out32[i] << " ref " << r.output[i] << " mirror "
              << m.output[i];
        }
      }
    }
    n_values += out64.size();
    ++n_demo;
  }
  std::cout << "[numpy fusion crosscheck] " << n_v41 << " v4.1 streams, " << n_gates << " gate inputs, " << n_fp8
            << " fp8 GEMMs, " << n_demo << " demo sequences, " << n_values << " output values compared\n";
}

}  // namespace
}  // namespace engram
