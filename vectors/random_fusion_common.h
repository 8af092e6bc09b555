// What the random cases of the four fusion suites share (spec/conformance.md
// §CONF.7, §FUS): random_gate_v41.cc, random_gate_demo.cc,
// random_short_conv_demo.cc and random_engram_forward.cc. Not an interface:
// what the rest of the tree uses is vectors/random_cases.h. Defined in
// random_fusion.cc.
#ifndef ENGRAM_VECTORS_RANDOM_FUSION_COMMON_H_
#define ENGRAM_VECTORS_RANDOM_FUSION_COMMON_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vectors/random_cases.h"

namespace engram::vectors::random_fusion {

// ------------------------------------------------------------------ values

// The format of an array's bit patterns: bf16 or float32.
enum class Fmt { kBf16, kF32 };

constexpr uint32_t kOneF32 = 0x3F800000;

double ValueOf(uint32_t bits, Fmt f);
uint32_t OrdinaryBits(CaseRng& rng, Fmt f, int scale);
ojson DrawFloats(CaseRng& rng, size_t n, Fmt f, int scale, bool plain);
ojson HexOf(const ojson& a, Fmt f);
ojson ShortenedIf(const ojson& r, const std::string& key, ojson a);

// ------------------------------------------------------------------ shapes and shrinking

ojson Cut2(const ojson& a, size_t rows, size_t cols, size_t rows2, size_t cols2);
ojson Cut3(const ojson& a, size_t A, size_t B, size_t C, size_t A2, size_t B2, size_t C2);
std::vector<int64_t> Smaller(int64_t n, int64_t lo);
void SimplifyValues(const ojson& r, const std::string& key, uint32_t simple, std::vector<ojson>& out);
void SimplifyFloats(const ojson& r, const std::vector<std::string>& keys, Fmt f, std::vector<ojson>& out);
int64_t ArrayMeasure(const ojson& r, const std::vector<std::string>& keys, Fmt f);

// ------------------------------------------------------------------ cases

RandomCase NewCase(const ojson& r, const std::string& type, const std::string& profile);
void Finish(RandomCase& c, ojson inputs);
RandomCase Cached(const ojson& r, const std::function<RandomCase(const ojson&)>& build);

// GateFunctionTest, a type of both gate suites (§FUS.4, §FUS.6).
RandomCase BuildGateFunction(const ojson& r, const std::string& profile);
std::vector<ojson> ShrinkGateFunction(const ojson& r);
ojson DrawDot(CaseRng& rng, bool plain);

// ------------------------------------------------------------------ v4.1 inputs (§FUS.2, §FUS.3)

// The hex text of the two eps values drawn: 1e-20 (shipped) and 1e-6.
extern const char* const kEpsHex[2];
// An E4M3 weight code (WkvTest and EngramForwardTest).
uint32_t DrawCode(CaseRng& rng);

// ------------------------------------------------------------------ demo-v1 parameters (§FUS.5-§FUS.7)

extern const std::vector<std::string> kDemoGateKeys;
extern const std::vector<std::string> kConvKeys;
size_t DemoCount(const std::string& key, size_t hc, size_t hidden, size_t in, size_t kernel);
ojson DrawDemoArray(CaseRng& rng, const std::string& key, size_t n, bool plain);
void AddRecipeParams(ojson& g, const ojson& r, size_t hc, size_t hidden, size_t in, size_t kernel, size_t dilation);
void CutDemoArrays(ojson& c, const ojson& r, size_t hc, size_t hidden, size_t in, size_t kernel, size_t hc2,
                   size_t hidden2, size_t in2, size_t kernel2);
// §FUS.7 Throws for a recipe whose result the spec leaves open (ShortConvTest and
// EngramForwardTest).
void RefuseNonFiniteTapOnPadding(const ojson& conv_weight, size_t kernel);

// ------------------------------------------------------------------ the suites

// The draw of one case of a suite whose cases have several types.
struct Kind {
  int weight;
  std::function<ojson(CaseRng&, bool plain)> draw;
  std::function<RandomCase(const ojson&)> build;
};

ojson DrawOf(const std::string& suite, const std::vector<Kind>& kinds, uint64_t seed, int64_t index);

}  // namespace engram::vectors::random_fusion

#endif  // ENGRAM_VECTORS_RANDOM_FUSION_COMMON_H_
