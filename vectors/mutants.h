// Known porting bugs, implemented on purpose (spec/conformance.md §CONF.4).
//
// A KNOWN_DIVERGENCE flag is put on exactly the tests whose expected outputs
// change under that bug: the generator recomputes each test with the mutant
// below and compares. A port with the bug therefore fails exactly the tests
// flagged with it, which the planted-bug adapters check
// (conformance/examples/numpy_adapter.py --bug ...).
#ifndef ENGRAM_VECTORS_MUTANTS_H_
#define ENGRAM_VECTORS_MUTANTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/layout.h"

namespace engram::vectors {

enum class Mutant {
  kNoDeadBlocking,    // v4.1: a DEAD slot reads pad, older slots are still read (no cumulative blocking)
  kTruncatedMod,      // C-style % (sign of the dividend) instead of floor-mod on negative mixes
  kInt32Multipliers,  // multipliers drawn with int32 bounds: max(1, ((2^31-1) / V) / 2) (MaxText)
};

// The note flag of a mutant: "NoDeadBlocking", "FloorMod", "Int32Multipliers".
std::string MutantFlag(Mutant m);
// The mutants that can change outputs of `profile`.
std::vector<Mutant> MutantsFor(Profile profile);

// §RNG.4 multipliers as the mutant draws them (unchanged unless kInt32Multipliers).
std::vector<int64_t> MutantMultipliers(Mutant m, int64_t seed, int64_t layer_id, int64_t v, int max_ngram);
// The layout with the mutant's multipliers (`seed` is the configuration's seed).
Layout MutantLayout(Mutant m, const Layout& layout, int64_t seed);
// Row ids of a whole sequence from its start as the mutant computes them
// (pass the layout MutantLayout gave).
// `first_position` is the sequence position of ids[0] (its predecessors are
// not available: use it for a chunk preceded by max_ngram - 1 context ids and
// emit rows only from index `emit_from`).
std::vector<int64_t> MutantRows(Mutant m, const Layout& layout, const std::vector<int64_t>& ids,
                                int64_t first_position = 0, size_t emit_from = 0);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_MUTANTS_H_
