// What the four fusion suites' files share (spec/fusion.md §FUS.10): the
// generators and verifiers of gate_v41 (suite_gate_v41.cc), gate_demo
// (suite_gate_demo.cc), short_conv_demo (suite_short_conv_demo.cc) and
// engram_forward (suite_engram_forward.cc). Not an interface: what the rest of
// the tree uses is vectors/suite_fusion.h. Defined in suite_fusion.cc unless
// a comment names a suite's file.
#ifndef ENGRAM_VECTORS_SUITE_FUSION_COMMON_H_
#define ENGRAM_VECTORS_SUITE_FUSION_COMMON_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "reference/fusion.h"
#include "vectors/mutants.h"
#include "vectors/mutants_fusion.h"
#include "vectors/mutants_storage.h"
#include "vectors/suite.h"

namespace engram::vectors::fusion {

inline constexpr Precision k64 = Precision::kFloat64;
inline constexpr Precision k32 = Precision::kFloat32;

// A fusion mutant (vectors/mutants_fusion.h) to compute a test with, or none
// (the reference).
using Bug = std::optional<FusionMutant>;

// The reference's computation, or the mutant's where `bug` is set.
V41StreamTrace StreamOf(Bug bug, std::span<const uint16_t> h, std::span<const uint16_t> key,
                        std::span<const uint16_t> value, std::span<const uint16_t> qw, std::span<const uint16_t> kw,
                        double eps, bool masked, Precision p);
std::vector<double> Fp8LinearOf(Bug bug, const QuantizedActivation& a, std::span<const uint8_t> wc,
                                std::span<const uint8_t> ws, size_t out, size_t in, Precision p);

// Floats as hex text, bf16 as bit patterns (§FUS.10).
ojson Hex(double x);
ojson HexList(const std::vector<double>& v);
std::vector<double> ReadHexList(const json& a, const std::string& field);
double ReadHex(const json& s, const std::string& field);
std::vector<uint16_t> ReadBits(const json& a);

// Deterministic small inputs (InputRng).
double RandomValue(InputRng& rng, int exp2);
std::vector<double> RandomValues(InputRng& rng, size_t n, int exp2);
std::vector<uint16_t> RandomBf16(InputRng& rng, size_t n, int exp2);

// §FUS.9 tolerance blocks.
ojson ToleranceJson(const std::vector<std::pair<std::string, ojson>>& rules);
ojson Rule(int k, int a_exp2, const std::string& scale);
ojson FaithfulRule();
ojson GatePartsJson(const GateParts& g);
ojson GateGroupTolerance();

// §FUS.9.1 bounds of the gates.
double GateAllowance(const json& tol, const json* dot_rule, const V41StreamTrace& r, const V41StreamTrace& m);
void AddOutBounds(const V41StreamTrace& r, std::span<const uint16_t> h, std::span<const double> v_lo,
                  std::span<const double> v_hi, double g_lo, double g_hi, bool masked, ojson& low, ojson& high);
std::pair<double, double> Bounds(double r, const Range& range);
double DemoGateAllowance(const json& tol, bool with_slope, const DemoStreamTrace& r, const DemoStreamTrace& m);

// demo-v1 parameters in a group.
DemoParams ReadDemoParams(const json& g);
void AddDemoParams(ojson& g, InputRng& rng, size_t hc, size_t hidden, size_t in, size_t kernel, size_t dilation);

// The expected fields of a test of one group type (with a fusion mutant:
// what a port with that bug computes).
using Compute = ojson (*)(const json&, const json&, Bug);
ojson ComputeGateFunction(const json& group, const json& test, Bug bug);
ojson ComputeV41Gate(const json& group, const json& test, Bug bug);      // suite_gate_v41.cc
ojson ComputeWkv(const json& group, const json& test, Bug bug);          // suite_gate_v41.cc
ojson ComputeDemoGate(const json& group, const json& test, Bug bug);     // suite_gate_demo.cc
ojson ComputeShortConv(const json& group, const json& test, Bug bug);    // suite_short_conv_demo.cc
ojson ComputeShortConvState(const json& group, const json& test, Bug bug);  // suite_short_conv_demo.cc
ojson ComputeForwardV41(const json& group, const json& test, Bug bug);   // suite_engram_forward.cc
ojson ComputeForwardDemo(const json& group, const json& test, Bug bug);  // suite_engram_forward.cc

// A V41GateTest group header of the given shape (suite_gate_v41.cc).
ojson V41GateGroup(const std::string& comment, size_t dim, size_t hc, double eps);

// §VEC.12 Whether a port with a hash-family or table-decode bug fails a valid
// EngramForwardTest (suite_engram_forward.cc).
bool HashMutantFailsForward(Mutant m, const json& group, const json& test, const ojson& expected);
bool DecodeBugFailsForward(DecodeBug bug, const json& group, const json& test, const ojson& expected);

// Generation: notes, one test with its computed fields and flags, the verifiers.
void AddFusionNote(SuiteBuilder& b, FusionMutant m, bool demo);
void AddTest(SuiteBuilder& b, size_t g, const ojson& group, Compute fn, const std::string& comment,
             std::vector<std::string> flags, const std::vector<std::string>& refs, ojson inputs);
void CommonNotes(SuiteBuilder& b);
std::map<std::string, TestVerifier> FusionVerifiers();

}  // namespace engram::vectors::fusion

#endif  // ENGRAM_VECTORS_SUITE_FUSION_COMMON_H_
