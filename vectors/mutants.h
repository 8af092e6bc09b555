// Known porting bugs, implemented on purpose (spec/conformance.md §CONF.4,
// the divergence catalogue of spec/vectors.md §VEC.12).
//
// A KNOWN_DIVERGENCE flag is put on exactly the tests that a port with that
// bug fails: the generator recomputes each test with the mutant below and
// compares the outcome the way the runner does (exactly, or within the §FUS.9
// tolerance for float outputs). A port with the bug therefore fails exactly
// the tests flagged with it, which the planted-bug adapters check
// (engram_numpy_port --bug ..., runner_test.cc).
#ifndef ENGRAM_VECTORS_MUTANTS_H_
#define ENGRAM_VECTORS_MUTANTS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/fusion.h"
#include "reference/layout.h"
#include "reference/token_map.h"

namespace engram::vectors {

enum class Mutant {
  kNoDeadBlocking,    // v4.1: a DEAD slot reads pad, older slots are still read (no cumulative blocking)
  kDeadAsId,          // v4.1: DEAD (-1) hashed as an ordinary id (no pad, no blocking: -1 * m enters the mix)
  kTruncatedMod,      // C-style % (sign of the dividend) instead of floor-mod on negative mixes
  kInt32Multipliers,  // multipliers drawn with int32 bounds: max(1, ((2^31-1) / V) / 2) (MaxText)
  kSignGate,          // v4.1 gate with torch.sign() instead of copysign: 0.5 at dot = +-0 (a llama.cpp port)
  kE8M0BitShift,      // E8M0 scale decoded as the float32 with bits (s << 23): 0x00 -> 0.0, 0xFF -> inf
  kPythonWrapperDecode,  // token texts decoded through transformers' Python wrapper (clean_up_tokenization)
  kRowIdUint32,       // v4.1: row ids stored as uint32_t, so a row id >= 2^32 comes out mod 2^32 (Luce-Org/lucebox)
  kRowIdInt32,        // v4.1: row ids kept as int32, so a row id >= 2^31 does not fit (vLLM's int32 hash output)
  kNegativeIdToPad,   // demo-v1: a negative id hashed as the pad (a llama.cpp port: compute_hash maps tid < 0 to pad_id)
};

// The note flag of a mutant: "NoDeadBlocking", "DeadAsOrdinaryId", "FloorMod",
// "Int32Multipliers", "SignedZeroCopysign", "E8M0BitShift", "PythonWrapperDecode", "RowIdUint32",
// "RowIdInt32", "NegativeIdToPad".
std::string MutantFlag(Mutant m);
// The hash-family mutants that can change outputs of `profile`.
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
// Whether MutantRows(m, layout, ...) equals the reference's rows for every id sequence, decided from the
// layout alone: kRowIdUint32 when every row id is below 2^32, kRowIdInt32 when every row id is below 2^31
// (a layer's row ids lie below its num_embeddings, §LAY.3), as on DeepSeek-V4.1-Flash. False for every
// other mutant (not decided here).
bool MutantRowsEqualReference(Mutant m, const Layout& layout);

// §STO.2 An E8M0 scale as the mutant decodes it (kE8M0BitShift: the float32
// whose bits are s << 23, so 0x00 -> 0.0 and 0xFF -> +inf; 1 ... 254 agree
// with 2^(s-127)). Other mutants: the reference decode.
double MutantE8M0(Mutant m, uint8_t scale);
// §STO.3 One element (code, scale) -> bf16 bits, with the mutant's scale decode.
uint16_t MutantDecodeElement(Mutant m, uint8_t code, uint8_t scale);
// §STO.3 A row of codes with one scale per 32 codes, as the mutant decodes it.
std::vector<uint16_t> MutantDecodeRow(Mutant m, std::span<const uint8_t> codes, std::span<const uint8_t> scales);

// §FUS.4 The v4.1 gate as the mutant computes it (kSignGate: sigmoid(sign(dot)
// * sqrt(max(|dot|, 1e-6))) with torch.sign, 0 at +-0 and NaN).
GateParts MutantGateV41(Mutant m, double dot, Precision p);
// §FUS.3 One v4.1 stream with the mutant's gate: the reference trace `ref`
// (computed by FuseV41Stream in precision `p` from the same inputs) with the
// gate and the output recomputed. Only the gate function differs, so every
// value before the gate is the reference's.
V41StreamTrace MutantFuseV41Stream(Mutant m, const V41StreamTrace& ref, std::span<const uint16_t> h_bits,
                                   std::span<const uint16_t> value_bits, bool masked, Precision p);

// §TOK.4 The compressed map of `tokenizer` as the mutant builds it
// (kPythonWrapperDecode: each single-id text goes through transformers'
// clean_up_tokenization before the key is taken).
std::vector<int64_t> MutantTokenMap(Mutant m, const Tokenizer& tokenizer);
// transformers' clean_up_tokenization (clean_up_tokenization_spaces=True).
std::string CleanUpTokenizationSpaces(std::string text);

// ---------------------------------------------------------------------------
// §VEC.12 Policies of real ports that differ from the spec's (spec/vectors.md).

// Validation gaps of upstream code: configurations that the upstream demo
// (engram_demo_v1.py, spec/sources.md [SRC-DEMO]) or the official V4.1 layout
// code (EngramLayout.from_args, spec/sources.md [SRC-V41]) accepts and §CFG.4 /
// §LAY.4 refuse. Each is a gap to flag, not a behaviour to copy.
enum class ConfigGap {
  kDuplicateLayerIds,      // layer ids [1, 1]: the demo overwrites the layer, the V4.1 code builds it twice
  kZeroHeads,              // zero heads per order: every order gets an empty list of primes (both)
  kMaxNgramOne,            // max n-gram 1: no order at all (the V4.1 code's and the demo's loops run zero times)
  kNumEmbeddingsUnchecked, // V4.1 engram_num_embeddings never compared with the prime sums
  kExtraBases,             // demo: more engram_vocab_size entries than n-gram orders (the extras never read)
  kNumEmbeddingsAtLeast,   // V4.1 engram_num_embeddings refused only below the prime sums (NeMo Automodel)
};
inline constexpr ConfigGap kConfigGaps[] = {ConfigGap::kDuplicateLayerIds, ConfigGap::kZeroHeads,
                                            ConfigGap::kMaxNgramOne, ConfigGap::kNumEmbeddingsUnchecked,
                                            ConfigGap::kExtraBases, ConfigGap::kNumEmbeddingsAtLeast};
// §VEC.12 vLLM's layout code (vllm/models/deepseek_v41/common/engram.py `_is_prime`, a Miller-Rabin with
// the witnesses 2, 7, 61 after trial division by the primes up to 37) declares its witness 61 itself composite:
// for n = 61, pow(61, d, 61) = 0 is neither 1 nor n - 1. Its prime search therefore skips 61. The primes
// [layer][order][head] of `config` as a search that rejects `skipped` draws them (§LAY.2 otherwise).
std::vector<std::vector<std::vector<int64_t>>> PrimesSkipping(const EngramConfig& config, uint64_t skipped);
// "MillerRabinWitness61": the flag of that mutant (planted bug: engram_numpy_port --bug miller-rabin-61).
inline constexpr const char* kMillerRabin61Flag = "MillerRabinWitness61";

// "UpstreamDuplicateLayerIds", "UpstreamZeroHeads", "UpstreamMaxNgramOne",
// "UpstreamNumEmbeddingsUnchecked", "UpstreamExtraBases", "NumEmbeddingsAtLeast".
std::string ConfigGapFlag(ConfigGap gap);
// The numpy port's bug that plants the gap: "upstream-duplicate-layers",
// "upstream-zero-heads", "upstream-max-ngram-1", "upstream-num-embeddings", "upstream-extra-bases",
// "num-embeddings-at-least".
std::string ConfigGapBug(ConfigGap gap);
// Whether a port with the gap accepts `config` (read as `profile`, for V and
// pad) where the reference refuses it: the configuration breaks the rule the
// gap skips, and the reference accepts it once that rule is met (duplicates
// dropped, one head per order, max n-gram 2, engram_num_embeddings left out,
// the extra bases dropped; for kNumEmbeddingsAtLeast: left out, and every
// stated entry at least its layer's sum, one above it).
// Each gap applies to the profiles whose code has it: duplicates, zero heads
// and max n-gram 1 to both, the two num_embeddings gaps to v4.1, the extra
// bases to demo-v1.
bool GapAccepts(ConfigGap gap, const nlohmann::json& config, const std::string& profile, int64_t v, int64_t pad);

// A fork's rollback (a llama.cpp port, v4.1): the state keeps only the last
// max_ngram - 1 ids, so after a rollback of k the positions whose slots the
// removed ids had overwritten read back as DEAD, whatever rollbackCapacity
// says. Returns each append's rows and each step's history as such a port
// reports them, for the HashStateTest `steps` (ops append / rollback / fork).
struct StepOutcome {
  std::vector<int64_t> rows;     // append: [ids][layers][cols] flattened; else empty
  int64_t position_after = -1;   // append / rollback
  std::vector<int64_t> history;  // append / rollback: the last min(position, max - 1) ids
};
std::vector<StepOutcome> RollbackDeadSteps(const Layout& layout, const nlohmann::ordered_json& steps);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_MUTANTS_H_
