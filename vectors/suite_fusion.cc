// spec/fusion.md — what the suites `gate_v41`, `gate_demo`, `short_conv_demo`
// and `engram_forward` (§FUS.10) share: the helpers of their generators and
// verifiers, the GateFunctionTest of both gates, the §FUS.9.1 bounds of the
// gates, the flags of every test (AddTest), the verifier of every fusion
// group type and the functions of vectors/suite_fusion.h. Each suite has a
// file of its own (suite_gate_v41.cc, suite_gate_demo.cc,
// suite_short_conv_demo.cc, suite_engram_forward.cc);
// vectors/suite_fusion_common.h declares what they share.
//
// Every test stores its inputs and, for each output, the float64 reference
// value and the float32-mirror value (§FUS.8), floats as Python float.hex()
// strings, bf16 values as their 16-bit patterns. Each test's expected fields
// come from one Compute*() function; the verifier calls the same function on
// the stored inputs and compares every field exactly.
//
// The KNOWN_DIVERGENCE flags are computed (spec/vectors.md §VEC.12): the same
// Compute*() runs with each fusion mutant (vectors/mutants_fusion.h) and the
// runner's own comparison (CompareOrdered) decides whether the mutant's
// outputs fail the test; the hash-family mutants decide theirs in the
// end-to-end tests.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "vectors/compare.h"
#include "reference/config.h"
#include "base/error.h"
#include "reference/fusion.h"
#include "vectors/mutants_fusion.h"
#include "vectors/mutants_storage.h"
#include "vectors/suite.h"
#include "vectors/suite_fusion.h"
#include "vectors/suite_fusion_common.h"

namespace engram::vectors::fusion {

namespace {

GateParts GateOf(Bug bug, bool demo, double x, Precision p) {
  if (bug) return MutantGate(*bug, demo, x, p);
  return demo ? GateDemo(x, p) : GateV41(x, p);
}

}  // namespace

V41StreamTrace StreamOf(Bug bug, std::span<const uint16_t> h, std::span<const uint16_t> key,
                        std::span<const uint16_t> value, std::span<const uint16_t> qw, std::span<const uint16_t> kw,
                        double eps, bool masked, Precision p) {
  if (bug) return MutantV41Stream(*bug, h, key, value, qw, kw, eps, masked, p);
  return FuseV41Stream(h, key, value, qw, kw, eps, masked, p);
}
std::vector<double> Fp8LinearOf(Bug bug, const QuantizedActivation& a, std::span<const uint8_t> wc,
                                std::span<const uint8_t> ws, size_t out, size_t in, Precision p) {
  if (bug) return MutantFp8Linear(*bug, a, wc, ws, out, in, p);
  return Fp8Linear(a, wc, ws, out, in, p);
}

ojson Hex(double x) { return FloatHex(x); }
ojson HexList(const std::vector<double>& v) {
  ojson a = ojson::array();
  for (double x : v) a.push_back(FloatHex(x));
  return a;
}
std::vector<double> ReadHexList(const json& a, const std::string& field) {
  std::vector<double> out;
  for (const json& s : a) out.push_back(ParseFloat(s.get<std::string>(), field));
  return out;
}
double ReadHex(const json& s, const std::string& field) { return ParseFloat(s.get<std::string>(), field); }
std::vector<uint16_t> ReadBits(const json& a) { return a.get<std::vector<uint16_t>>(); }

// Deterministic small inputs: float32 values k / 2^bits with |k| < 2^20,
// exactly representable, scaled by a power of two.
double RandomValue(InputRng& rng, int exp2) {
  return std::ldexp(static_cast<double>(rng.Below(int64_t{1} << 21) - (int64_t{1} << 20)), exp2 - 20);
}
std::vector<double> RandomValues(InputRng& rng, size_t n, int exp2) {
  std::vector<double> v(n);
  for (double& x : v) x = static_cast<double>(static_cast<float>(RandomValue(rng, exp2)));
  return v;
}
std::vector<uint16_t> RandomBf16(InputRng& rng, size_t n, int exp2) {
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = ToBf16(RandomValue(rng, exp2));
  return v;
}

// §FUS.9 The tolerance table written into every group that has float outputs.
ojson ToleranceJson(const std::vector<std::pair<std::string, ojson>>& rules) {
  ojson t = ojson::object();
  for (const auto& [field, rule] : rules) t[field] = rule;
  return t;
}
ojson Rule(int k, int a_exp2, const std::string& scale) {
  return {{"k", k}, {"a", FloatHex(std::ldexp(1.0, a_exp2))}, {"scale", scale}};
}
ojson FaithfulRule() { return {{"rule", "faithfulBf16"}}; }

ojson GatePartsJson(const GateParts& g) {
  return {{"clamped", Hex(g.clamped)}, {"root", Hex(g.root)}, {"signedRoot", Hex(g.signed_root)}};
}

// ---------------------------------------------------------------------------
// GateFunctionTest (§FUS.4, §FUS.6)

ojson ComputeGateFunction(const json& group, const json& test, Bug bug) {
  const bool demo = group.at("profile") == "demo-v1";
  const double x = ReadHex(test.at("dot"), "dot");
  GateParts a = GateOf(bug, demo, x, k64);
  GateParts b = GateOf(bug, demo, x, k32);
  ojson out;
  out["result"] = "valid";
  out["gate"] = {{"float64", Hex(a.gate)}, {"float32", Hex(b.gate)}};
  out["intermediate"] = {{"float64", GatePartsJson(a)}, {"float32", GatePartsJson(b)}};
  return out;
}

// ---------------------------------------------------------------------------
// §FUS.9.1 bounds of the gates (the gate suites and engram_forward)

// §FUS.9.1 How far a port's gate may be from the float64 gate r.gate under the
// `gate` rule of `tol`: A = k |m - r| + a S. With `dot_rule` (V41GateTest, whose
// tests give the dot) S is gateSlope's 1 + Δ/a, Δ from the dot's tolerance t
// by that rule; without (EngramForwardTest gives no dot) S = 1.
double GateAllowance(const json& tol, const json* dot_rule, const V41StreamTrace& r, const V41StreamTrace& m) {
  const json& rule = tol.at("gate");
  double allowance = rule.at("k").get<double>() * std::fabs(m.gate - r.gate) + ReadHex(rule.at("a"), "a");
  if (dot_rule != nullptr) {
    const double t = dot_rule->at("k").get<double>() * std::fabs(m.dot - r.dot) + ReadHex(dot_rule->at("a"), "a") * r.dot_scale;
    allowance += GateSlopeDelta(false, r.dot, t);
  }
  return allowance;
}

// §FUS.9.1 outLow64 / outHigh64 of one stream: the exact h + g * v over every
// gate g in [g_lo, g_hi] and v_i in [v_lo[i], v_hi[i]] (its faithful bf16
// roundings, or the input itself), hulled with the float64 out r.out[i]; where
// the stream is masked or a value is not finite the interval is r.out[i] alone.
void AddOutBounds(const V41StreamTrace& r, std::span<const uint16_t> h, std::span<const double> v_lo,
                  std::span<const double> v_hi, double g_lo, double g_hi, bool masked, ojson& low, ojson& high) {
  for (size_t i = 0; i < r.out.size(); ++i) {
    double lo = r.out[i], hi = r.out[i];
    const double hv = Bf16Value(h[i]);
    if (!masked && std::isfinite(lo) && std::isfinite(hv) && std::isfinite(v_lo[i]) && std::isfinite(v_hi[i]) &&
        std::isfinite(g_lo) && std::isfinite(g_hi)) {
      const Range o = V41OutRange(hv, v_lo[i], v_hi[i], g_lo, g_hi);
      if (std::isfinite(o.lo) && std::isfinite(o.hi)) {
        lo = std::min(lo, o.lo);
        hi = std::max(hi, o.hi);
      }
    }
    low.push_back(FloatHex(lo));
    high.push_back(FloatHex(hi));
  }
}

// §FUS.9.1 An output's [lo, hi]: the reference r hulled with the range of
// every allowed value; r alone where r or the range is not finite.
std::pair<double, double> Bounds(double r, const Range& range) {
  if (!std::isfinite(r) || !std::isfinite(range.lo) || !std::isfinite(range.hi)) return {r, r};
  return {std::min(r, range.lo), std::max(r, range.hi)};
}

// §FUS.9.1 How far a port's demo gate may be from r.gate under the `gate`
// rule of the DemoGateTest tolerance `tol`: k |m - r| + a S with gateSlope's
// S = 1 + Δ/a, Δ from g's own tolerance (the `g` rule); with `with_slope`
// false (EngramForwardTest gives no g) S = 1.
double DemoGateAllowance(const json& tol, bool with_slope, const DemoStreamTrace& r, const DemoStreamTrace& m) {
  const json& rule = tol.at("gate");
  double allowance = rule.at("k").get<double>() * std::fabs(m.gate - r.gate) + ReadHex(rule.at("a"), "a");
  if (with_slope) {
    const json& g_rule = tol.at("g");
    const double t = g_rule.at("k").get<double>() * std::fabs(m.g - r.g) + ReadHex(g_rule.at("a"), "a") * r.dot_scale;
    allowance += GateSlopeDelta(true, r.g, t);
  }
  return allowance;
}

// ---------------------------------------------------------------------------
// demo-v1 parameters in a group (§FUS.10): flat row-major arrays of hex floats.

DemoParams ReadDemoParams(const json& g) {
  DemoParams q;
  q.hc = g.at("hc");
  q.hidden = g.at("hidden");
  q.in = g.at("in");
  q.kernel = g.at("kernel");
  q.dilation = g.at("dilation");
  q.key_w = ReadHexList(g.at("keyWeight"), "keyWeight");
  q.key_b = ReadHexList(g.at("keyBias"), "keyBias");
  q.norm1_w = ReadHexList(g.at("norm1Weight"), "norm1Weight");
  q.norm2_w = ReadHexList(g.at("norm2Weight"), "norm2Weight");
  q.value_w = ReadHexList(g.at("valueWeight"), "valueWeight");
  q.value_b = ReadHexList(g.at("valueBias"), "valueBias");
  q.conv_norm_w = ReadHexList(g.at("convNormWeight"), "convNormWeight");
  q.conv_w = ReadHexList(g.at("convWeight"), "convWeight");
  return q;
}

// The fixed vectors' parameters: weights of scale 2^-2, biases 2^-3, norm
// weights around 1, conv taps 2^-1, drawn in the key order of AddDemoParams.
void AddDemoParams(ojson& g, InputRng& rng, size_t hc, size_t hidden, size_t in, size_t kernel, size_t dilation) {
  AddDemoParamArrays(g, hc, hidden, in, kernel, dilation, [&](const std::string& key, size_t n) {
    if (key == "norm1Weight" || key == "norm2Weight" || key == "convNormWeight") {
      std::vector<double> v = RandomValues(rng, n, -2);
      for (double& x : v) x += 1.0;
      return v;
    }
    const int exp2 = key == "convWeight" ? -1 : (key == "keyBias" || key == "valueBias") ? -3 : -2;
    return RandomValues(rng, n, exp2);
  });
}

// ---------------------------------------------------------------------------
// Generation helpers

// §VEC.12 The note of a fusion mutant's flag (added where the flag is first
// set). `demo`: the test's profile, for the spec reference of a gate shared
// by both profiles.
void AddFusionNote(SuiteBuilder& b, FusionMutant m, bool demo) {
  const std::string flag = FusionMutantFlag(m), bug = FusionMutantBug(m);
  switch (m) {
    case FusionMutant::kSignGate:
      AddMutantNotes(b, {Mutant::kSignGate});
      return;
    case FusionMutant::kWhereNegative:
      b.Divergence(flag,
                   "dot = -0: copysign gives sigmoid(-0.001). Changes (beyond the §FUS.9 tolerance) under the known bug "
                   "of a v4.1 gate written with where(dot < 0, -root, root) (vLLM), which takes -0 as +0 and gives "
                   "sigmoid(+0.001).",
                   "§FUS.4", bug);
      return;
    case FusionMutant::kPlusEps:
      b.Divergence(flag,
                   "Changes (beyond the §FUS.9 tolerance) under the known bug of sqrt(|d| + 1e-6) instead of "
                   "sqrt(max(|d|, 1e-6)) in the gate (d = dot in v4.1, g in demo-v1; clamp_min written as an "
                   "addition); the difference is largest near the clamp and shrinks as |d| grows.",
                   demo ? "§FUS.6" : "§FUS.4", bug);
      return;
    case FusionMutant::kSkipMasked:
      b.Divergence(flag,
                   "A masked position whose v holds inf or NaN: out = h + 0 * v is NaN there, as in torch. Changes "
                   "under the known bug of skipping masked positions (out = x), which keeps h.",
                   "§FUS.3", bug);
      return;
    case FusionMutant::kWkvBlock128:
      b.Divergence(flag,
                   "fp8 wkv weight scales per 32x32 block, index [n / 32][k / 32]. Changes under the known bug of V4's "
                   "128-wide weight blocks applied to V4.1's scales: the stored [ceil(out/32)][in/32] scale tensor "
                   "indexed [n / 128][k / 128].",
                   "§FUS.2", bug);
      return;
    case FusionMutant::kDemoCopysign:
      b.Divergence(flag,
                   "g = +0 or -0: torch sign() is 0, so the gate is sigmoid(0) = 0.5 exactly. Changes (beyond the "
                   "§FUS.9 tolerance) under the known bug of a demo gate written with copysign (the v4.1 gate "
                   "function), which gives sigmoid(+-0.001) = 0.5 +- 2.5e-4 there.",
                   "§FUS.6", bug);
      return;
    case FusionMutant::kGateNormEps:
      b.Divergence(flag,
                   "The gate's key/query RMSNorms use torch's default eps = float32 epsilon (2^-23). Changes (beyond "
                   "the §FUS.9 tolerance) under the known bug of eps 1e-5 there (ShortConv's eps); the change is "
                   "largest on small-norm inputs.",
                   "§FUS.5", bug);
      return;
    case FusionMutant::kTapOrder:
      b.Divergence(flag,
                   "Conv1d is a cross-correlation over left padding: tap kernel-1 multiplies the current step, tap 0 "
                   "the oldest. Changes (beyond the §FUS.9 tolerance) under the known bug of applying the taps "
                   "time-reversed (tap j to step t - j * dilation).",
                   "§FUS.7", bug);
      return;
    case FusionMutant::kConvNormEps:
      b.Divergence(flag,
                   "ShortConv's RMSNorm uses eps 1e-5 (unlike the gate's norms). Changes (beyond the §FUS.9 "
                   "tolerance) under the known bug of torch's default eps (2^-23) there, as in the gate's norms.",
                   "§FUS.7", bug);
      return;
    case FusionMutant::kNonFiniteActivation:
      b.Divergence(flag,
                   "An fp8 activation holding inf or NaN must be refused (§FUS.2.1). Changes under the official "
                   "code's act_quant (the CPU kernel port), which takes it: amax is NaN or inf, the scale's bit "
                   "trick gives -0 or inf, and every kv is NaN.",
                   "§FUS.2", bug);
      return;
    case FusionMutant::kConvStateRestart:
      b.Divergence(flag,
                   "ShortConv carried across calls: the steps of a call read the normed values of the steps before "
                   "it, from earlier calls or the imported state. Changes (beyond the §FUS.9 tolerance) under the "
                   "known bug of starting every call from a zero state (a kernel without conv_state: each chunk or "
                   "decode step a sequence of its own).",
                   "§FUS.12", bug);
      return;
    case FusionMutant::kGateNoSignedRoot:
      b.Divergence(flag,
                   "The demo gate is sigmoid(sqrt(max(|g|, 1e-6)) * sign(g)). Changes (beyond the §FUS.9 tolerance) "
                   "under the known bug of a gate without the clamp and the signed square root, sigmoid(g) "
                   "(tile-ai/TileOPs' engram kernels, spec/sources.md SRC-DECODE-TILEOPS).",
                   "§FUS.6", bug);
      return;
    case FusionMutant::kGateNormEpsZero:
      b.Divergence(flag,
                   "The gate's key/query RMSNorms use torch's default eps = float32 epsilon (2^-23). Changes (beyond "
                   "the §FUS.9 tolerance) under the known bug of eps 0 there (a llama.cpp port, ggml_rms_norm(x, 0), "
                   "spec/sources.md SRC-PORT-LLAMACPP-ENGRAM): small-norm inputs move, an all-zero key or hidden "
                   "stream gives 0 / 0 = NaN.",
                   "§FUS.5", bug);
      return;
    case FusionMutant::kMaskIgnored:
      b.Divergence(flag,
                   "At a masked position the v4.1 gate is +0 exactly and out = bf16(h + 0 * v). Changes under the "
                   "known bug of a forward that takes no mask and gates masked positions like the others (sglang's "
                   "production Engram.forward, spec/sources.md SRC-PORT-SGLANG).",
                   "§FUS.3", bug);
      return;
    case FusionMutant::kConvRollbackKept:
      b.Divergence(flag,
                   "A rollback forgets the last k steps: later steps read the steps before them. Changes (beyond the "
                   "§FUS.9 tolerance) under the known bug of a rollback that leaves the rejected draft steps in the "
                   "conv state.",
                   "§FUS.12", bug);
      return;
  }
}

namespace {

// §VEC.12 Whether a port with the fusion mutant `m` fails a test, judged as
// the runner judges (engram::vectors::CompareOrdered, §CONF.1 and §FUS.9): the
// mutant's outputs, in the shape the numpy port returns them ({"float64",
// "float32"} for tolerance outputs, of which the runner reads float64; bf16
// bits from the mirror), against the expected ones; a different valid /
// invalid result fails. The same outputs with only the float32 values (a
// float32 port with the bug) must get the same verdict, else the test cannot
// be decided and the generator refuses it.
bool FusionPortFails(FusionMutant m, Compute fn, const ojson& group, const json& group_j, const json& inputs_j,
                     const ojson& expected) {
  const ojson got = fn(group_j, inputs_j, m);
  if (got["result"] != expected["result"]) return true;
  if (expected["result"] != "valid") return false;
  ojson want = expected, as64 = got;
  want.erase("result");
  as64.erase("result");
  as64.erase("intermediate");  // optional, and never compared in groups with a tolerance
  ojson as32 = as64;
  for (auto it = as32.begin(); it != as32.end(); ++it) {
    if (it->is_object() && it->contains("float32")) {
      const ojson only = (*it)["float32"];
      *it = only;
    }
  }
  const std::string type = group_j.at("type");
  const std::string why64 = CompareOrdered(type, group, want, as64);
  const std::string why32 = CompareOrdered(type, group, want, as32);
  if (why64.empty() != why32.empty()) {
    throw Error("generator: the " + FusionMutantFlag(m) + " port (" + FusionMutantBug(m) + ") " +
                (why64.empty() ? "passes" : "fails") + " a " + type + " in float64 but " +
                (why32.empty() ? "passes" : "fails") + " in float32 (" + why64 + why32 +
                "): cannot decide the flag, choose other inputs");
  }
  return !why64.empty();
}

// §CONF.4 For tests where a mutant's output cannot be decided by the rules
// above: the generator refuses to write a test on which it would change
// anything, so that a port with that bug is right to pass (no flag).
void RequireUnchangedUnderMutants(const json& group, const json& test, const ojson& expected) {
  // E8M0BitShift: the fp8 GEMM decodes weight and activation scales; with
  // every scale byte in 1 ... 254 the bit-shift decode is exact (2^(s-127)).
  std::vector<uint8_t> scales;
  if (test.contains("weightScales")) scales = test["weightScales"].get<std::vector<uint8_t>>();
  if (group.contains("wkvWeightScales")) scales = group["wkvWeightScales"].get<std::vector<uint8_t>>();
  if (expected.contains("intermediate") && expected["intermediate"].is_object() &&
      expected["intermediate"].contains("actScales")) {
    for (const auto& s : expected["intermediate"]["actScales"]) scales.push_back(s.get<uint8_t>());
  }
  for (uint8_t s : scales) {
    if (s == 0x00 || s == 0xFF) {
      throw Error("generator: a fusion test uses the E8M0 scale byte " + std::to_string(s) +
                  ", where the E8M0BitShift port differs: flag it or choose other inputs");
    }
  }
}

}  // namespace

void AddTest(SuiteBuilder& b, size_t g, const ojson& group, Compute fn, const std::string& comment,
             std::vector<std::string> flags, const std::vector<std::string>& refs, ojson inputs) {
  const json group_j = json::parse(group.dump()), inputs_j = json::parse(inputs.dump());
  ojson computed = fn(group_j, inputs_j, std::nullopt);
  if (computed["result"] == "valid") RequireUnchangedUnderMutants(group_j, inputs_j, computed);
  // §VEC.12 Every fusion mutant's flag is computed, on every test (valid or not).
  const bool demo = group_j.value("profile", "") == "demo-v1";
  for (FusionMutant m : AllFusionMutants()) {
    const std::string flag = FusionMutantFlag(m);
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) {
      throw Error("generator bug: flag " + flag + " is computed; do not list it by hand");
    }
    if (!FusionPortFails(m, fn, group, group_j, inputs_j, computed)) continue;
    if (!b.HasNote(flag)) AddFusionNote(b, m, demo);  // noted where first used
    flags.push_back(flag);
  }
  if (computed["result"] == "valid" && group_j.at("type") == "EngramForwardTest") {
    const std::vector<Mutant> hash_mutants =
        MutantsFor(group_j.at("profile") == "v4.1" ? Profile::kV41 : Profile::kDemoV1);
    for (Mutant m : hash_mutants) {
      if (!HashMutantFailsForward(m, group_j, inputs_j, computed)) continue;
      if (!b.HasNote(MutantFlag(m))) AddMutantNotes(b, {m});  // noted where first used
      flags.push_back(MutantFlag(m));
    }
    if (group_j.at("profile") == "v4.1") {
      for (DecodeBug bug : AllDecodeBugs()) {
        if (!DecodeBugFailsForward(bug, group_j, inputs_j, computed)) continue;
        NoteDecodeBug(b, bug);
        flags.push_back(DecodeBugFlag(bug));
      }
    }
  }
  for (const auto& [k, v] : computed.items()) inputs[k] = v;
  b.Test(g, comment, flags, refs, inputs);
}

namespace {

TestVerifier Verifier(Compute fn) {
  return [fn](Checker& c, const json& g, const json& t) {
    ojson computed = fn(g, t, std::nullopt);
    if (computed["result"] != t.value("result", "")) {
      c.Problem(t, "result is " + t.value("result", std::string("?")) + " but the reference gives " +
                       computed["result"].get<std::string>());
      return;
    }
    for (const auto& [k, v] : computed.items()) {
      if (k == "error") continue;  // informative only (§VEC.3)
      c.Expect(t, k, json::parse(v.dump()));
    }
  };
}

}  // namespace

void CommonNotes(SuiteBuilder& b) {
  b.Header("Floats are Python float.hex() strings (exact); bf16 values are their 16-bit patterns as integers.");
  b.Header("Every float output carries the float64 reference and the float32 mirror of the PyTorch code;");
  b.Header("a port passes when |ours - float64| <= k * |float32 - float64| + a * scale (group 'tolerance',");
  b.Header("spec §FUS.9); bf16 outputs must be a faithful rounding of the float64 value ('outRef64').");
}

ojson GateGroupTolerance() {
  return ToleranceJson({{"gate", Rule(2, -18, "gateSlope")}});
}

std::map<std::string, TestVerifier> FusionVerifiers() {
  return {{"GateFunctionTest", Verifier(ComputeGateFunction)}, {"V41GateTest", Verifier(ComputeV41Gate)},
          {"WkvTest", Verifier(ComputeWkv)},                   {"DemoGateTest", Verifier(ComputeDemoGate)},
          {"ShortConvTest", Verifier(ComputeShortConv)},       {"ShortConvStateTest", Verifier(ComputeShortConvState)},
          {"EngramForwardTest", [](Checker& c, const json& g, const json& t) {
             Verifier(g.at("profile") == "v4.1" ? ComputeForwardV41 : ComputeForwardDemo)(c, g, t);
           }}};
}

}  // namespace engram::vectors::fusion

namespace engram::vectors {

// The definitions below use the helpers above (namespace fusion) by a using-directive in each body, not at
// namespace scope: the library is compiled in unity batches (CMakeLists.txt engram_batches), where a
// namespace-scope directive would reach the files that follow in the batch.

ojson FusionExpected(const json& group, const json& test) {
  using namespace fusion;
  const std::string type = group.at("type");
  if (type == "GateFunctionTest") return ComputeGateFunction(group, test, std::nullopt);
  if (type == "V41GateTest") return ComputeV41Gate(group, test, std::nullopt);
  if (type == "WkvTest") return ComputeWkv(group, test, std::nullopt);
  if (type == "DemoGateTest") return ComputeDemoGate(group, test, std::nullopt);
  if (type == "ShortConvTest") return ComputeShortConv(group, test, std::nullopt);
  if (type == "ShortConvStateTest") return ComputeShortConvState(group, test, std::nullopt);
  if (type == "EngramForwardTest") {
    return group.at("profile") == "v4.1" ? ComputeForwardV41(group, test, std::nullopt)
                                         : ComputeForwardDemo(group, test, std::nullopt);
  }
  throw Error("FusionExpected: " + type + " is not a fusion test type");
}

ojson FusionTolerance(const std::string& type, const std::string& profile) {
  using namespace fusion;
  if (type == "GateFunctionTest") return GateGroupTolerance();
  if (type == "V41GateTest") return V41GateGroup("", 1, 1, 0)["tolerance"];
  if (type == "WkvTest") return ToleranceJson({{"kv", FaithfulRule()}});
  if (type == "DemoGateTest") {
    return ToleranceJson({{"g", Rule(2, -18, "dotScale")},
                          {"gate", Rule(2, -18, "gateSlope")},
                          {"value", Rule(2, -17, "maxAbsVector")}});
  }
  if (type == "ShortConvTest") return ToleranceJson({{"output", Rule(2, -17, "convTerms")}});
  if (type == "ShortConvStateTest") {
    return ToleranceJson({{"output", Rule(2, -17, "convTerms")}, {"stateOut", Rule(2, -17, "normTerms")}});
  }
  if (type == "EngramForwardTest" && profile == "v4.1") {
    return ToleranceJson({{"kv", FaithfulRule()}, {"gate", Rule(2, -18, "gateSlope")}, {"out", FaithfulRule()}});
  }
  if (type == "EngramForwardTest") {
    return ToleranceJson({{"gate", Rule(2, -18, "gateSlope")},
                          {"output", Rule(2, -17, "maxAbsVector")},
                          {"hiddenAfter", Rule(2, -17, "maxAbsVector")}});
  }
  throw Error("FusionTolerance: " + type + " is not a fusion test type");
}

ojson V41GateGroupJson(const std::string& comment, size_t dim, size_t hc, double eps) {
  using namespace fusion;
  return V41GateGroup(comment, dim, hc, eps);
}

void AddDemoParamArrays(ojson& g, size_t hc, size_t hidden, size_t in, size_t kernel, size_t dilation,
                   const std::function<std::vector<double>(const std::string& key, size_t n)>& values) {
  using namespace fusion;
  // One statement per array: the order of the draws is the key order.
  g["hc"] = hc;
  g["hidden"] = hidden;
  g["in"] = in;
  g["kernel"] = kernel;
  g["dilation"] = dilation;
  g["keyWeight"] = HexList(values("keyWeight", hc * hidden * in));
  g["keyBias"] = HexList(values("keyBias", hc * hidden));
  g["norm1Weight"] = HexList(values("norm1Weight", hc * hidden));
  g["norm2Weight"] = HexList(values("norm2Weight", hc * hidden));
  g["valueWeight"] = HexList(values("valueWeight", hidden * in));
  g["valueBias"] = HexList(values("valueBias", hidden));
  g["convNormWeight"] = HexList(values("convNormWeight", hc * hidden));
  g["convWeight"] = HexList(values("convWeight", hc * hidden * kernel));
}

}  // namespace engram::vectors
