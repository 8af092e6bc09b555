// Snippet for docs/random.md (spec §RNG): the numpy chain SeedSequence ->
// PCG64 -> bounded integers -> multipliers, for V4.1 layer 1.
#include <cstdio>
#include <string>

#include "reference/random.h"

using namespace engram;

int main() {
  //! [chain]
  const int64_t V = 99092;                       // compressed vocabulary size (§TOK)
  const uint64_t layer_seed = LayerSeed(0, 1);   // §RNG.4: seed + 10007 * layer_id
  SeedSequence seq(layer_seed);                  // §RNG.1
  Pcg64 gen(seq);                                // §RNG.2
  const int64_t bound = MultiplierBound(V);      // §RNG.4: max(1, (2^63-1) / V / 2)
  std::vector<int64_t> r = Integers(gen, 0, bound, 4);  // §RNG.3 (path lemire64)
  //! [chain]
  std::printf("layer seed       %llu\n", static_cast<unsigned long long>(layer_seed));
  std::printf("pool             ");
  for (uint32_t w : seq.pool()) std::printf(" 0x%08x", w);
  std::printf("\ngenerate_state64 ");
  for (uint64_t w : seq.GenerateState64(4)) std::printf(" 0x%016llx", static_cast<unsigned long long>(w));
  std::printf("\nbound            %lld  (path %s)\n", static_cast<long long>(bound),
              std::string(BoundedPathName(BoundedPathFor(static_cast<uint64_t>(bound - 1)))).c_str());
  std::printf("draws r          ");
  for (int64_t x : r) std::printf(" %lld", static_cast<long long>(x));
  std::printf("\nmultipliers 2r+1 ");
  for (int64_t x : r) std::printf(" %lld", static_cast<long long>(2 * x + 1));
  std::printf("\n");

  //! [layers]
  for (int64_t layer : {1, 14}) {
    std::vector<int64_t> m = LayerMultipliers(/*seed=*/0, layer, V, /*max_ngram=*/4);
    std::printf("layer %2lld:", static_cast<long long>(layer));
    for (int64_t x : m) std::printf(" %lld", static_cast<long long>(x));
    std::printf("\n");
  }
  //! [layers]

  //! [overflow]
  // §RNG.4 consequence: (V-1) * m < 2^63 for every multiplier, so products of valid ids never overflow.
  const uint128_t worst = static_cast<uint128_t>(V - 1) * static_cast<uint128_t>(2 * bound - 1);
  std::printf("(V-1)*(2*bound-1) = %lld < 2^63-1 = %lld\n", static_cast<long long>(worst),
              static_cast<long long>(INT64_MAX));
  //! [overflow]

  //! [paths]
  // §RNG.3: the path depends only on the width of the range.
  const uint64_t widths[] = {0, 1, 99, 0xFFFFFFFEull, 0xFFFFFFFFull, 0x100000000ull, ~0ull};
  for (uint64_t rng : widths) {
    std::printf("rng = %20llu -> %s\n", static_cast<unsigned long long>(rng),
                std::string(BoundedPathName(BoundedPathFor(rng))).c_str());
  }
  //! [paths]
  return 0;
}
