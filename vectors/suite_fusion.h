// What the fusion suites' fixed vectors (suite_fusion.cc and the suite files
// suite_gate_v41.cc, suite_gate_demo.cc, suite_short_conv_demo.cc,
// suite_engram_forward.cc) and their random cases (random_fusion.cc and
// random_<suite>.cc) share (spec/fusion.md §FUS.9-§FUS.10), so that a
// random case has exactly the fields, tolerance blocks and intermediate
// values of a committed vector.
#ifndef ENGRAM_VECTORS_SUITE_FUSION_H_
#define ENGRAM_VECTORS_SUITE_FUSION_H_

#include <functional>
#include <string>
#include <vector>

#include "vectors/suite.h"

namespace engram::vectors {

// §FUS.10 The expected fields of a test of any fusion group type ("result",
// the outputs, "intermediate"; "error" for a test that must be refused), as
// the reference computes them: the same function the fixed vectors' generator
// and verifier call.
ojson FusionExpected(const json& group, const json& test);

// §FUS.9 The "tolerance" block of a group of `type` (and, for
// EngramForwardTest, `profile`), as every fixed vector's group has it.
ojson FusionTolerance(const std::string& type, const std::string& profile);

// §FUS.10 A V41GateTest group: type, comment, profile, dim, hc, eps, tolerance.
ojson V41GateGroupJson(const std::string& comment, size_t dim, size_t hc, double eps);

// §FUS.10 The demo-v1 parameters of a group (hc, hidden, in, kernel,
// dilation, then the eight arrays as hex floats), in the fixed vectors' key
// order; values(key, n) gives each array, called in that order.
void AddDemoParamArrays(ojson& g, size_t hc, size_t hidden, size_t in, size_t kernel, size_t dilation,
                        const std::function<std::vector<double>(const std::string& key, size_t n)>& values);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_SUITE_FUSION_H_
