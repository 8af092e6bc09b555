// spec/hash.md §HASH.10-§HASH.12, spec/contract.md §CON.7 — suite serving_v41's
// test format: one logical packed call written in an engine's own buffers
// (the encodings of §CON.7), the outcome the reference gives, the outcomes of
// the call-shape bugs of the divergence catalogue (§VEC.12, §VEC.14), and the
// outputs each outcome is written as. The generator (suite_serving.cc,
// random_serving.cc), the verifier and the plug-in host share it.
#ifndef ENGRAM_VECTORS_SERVING_H_
#define ENGRAM_VECTORS_SERVING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/generator.h"
#include "vectors/mutants.h"

namespace engram::vectors {

// §CON.7 The encodings, in the order the suite uses them.
inline constexpr const char* kServingEncodings[] = {"engram", "vllm", "onnxruntime", "sglang", "slotCache"};
// §CON.7 item 2 The most positions per request the position-indexed encodings write.
inline constexpr int64_t kServingTableWidth = 64;

// One packed call as a test holds it: the reference's call (DEAD = -1), the ids
// beneath the DEAD slots and history entries where the encoding carries them,
// and the slot cache of the `slotCache` encoding.
struct ServingCase {
  std::string type;      // "PackedBatchTest" or "DraftTreeTest"
  std::string encoding;  // §CON.7
  PackedCall call;
  std::vector<int64_t> under;                       // T: the id beneath each slot (its own id unless DEAD; -1 unknown)
  std::vector<std::vector<int64_t>> history_under;  // B: beneath each history id, the same way
  // `slotCache` only (§CON.7): the cache before the call, its addressing, and where each slot writes.
  int64_t block_size = 0;
  std::vector<std::vector<int64_t>> block_table;
  std::vector<int64_t> slot_mapping;
  std::vector<int64_t> cache;
};

// What a call gives one request: the state after it, with the ids beneath its
// DEAD entries, and (for the slot cache) the ids the call wrote by position.
struct ServingRequestOut {
  int64_t position = 0;              // after the call
  std::vector<int64_t> ids;          // the last min(position, max - 1) ids, oldest first (DEAD = -1)
  std::vector<int64_t> under;        // beneath each
  std::vector<std::pair<int64_t, int64_t>> writes;  // (position, id written: DEAD as -1)
};
struct ServingOutcome {
  std::vector<int64_t> rows;  // [cuSeqlens[B]][layer][col] flattened
  std::vector<ServingRequestOut> requests;
};

// §VEC.12, §VEC.14 The call-shape bugs of the catalogue: what a port with one
// of them computes instead (each validates its input as the reference does).
enum class ServingMutant {
  kCrossRequestLeak,        // a window bounded by the buffer, not by its request: it reads the earlier slots of the
                            // buffer across its request's first boundary, its history only before the buffer's start
  kRestartEachCall,         // every request hashed from a fresh state (no position, no history)
  kPaddingWritesState,      // the padding slots consumed by the last request after its own
  kRejectedDraftsKept,      // every draft, accepted or not, consumed in slot order
  kMaskNotAppliedToHistory, // a masked id is DEAD for its own window only: later windows and the state read the id
  // §HASH.10 the no-leak control, not a catalogue entry: the request slots hashed as one sequence continuing
  // request 0's state. Every valid case differs from it (a flag for it would mark every valid test).
  kNaiveFlatten,
};
inline constexpr ServingMutant kServingMutants[] = {
    ServingMutant::kCrossRequestLeak, ServingMutant::kRestartEachCall, ServingMutant::kPaddingWritesState,
    ServingMutant::kRejectedDraftsKept, ServingMutant::kMaskNotAppliedToHistory};
// "CrossRequestLeak", "RestartEachCall", "PaddingWritesState", "RejectedDraftsKept", "MaskNotAppliedToHistory"
// ("" for kNaiveFlatten).
std::string ServingMutantFlag(ServingMutant m);
// The numpy port's planted bug: "cross-request-leak", "restart-each-call", ..., "naive-flatten".
std::string ServingMutantBug(ServingMutant m);

// §CON.7 The test's inputs (after tcId ... specRef, before `result`), in key order; room is kept for the
// `result` and the outputs to follow without copying the inputs again.
ojson ServingInputs(const Layout& layout, const ServingCase& c);
// §CON.7 The test's expected outputs for `outcome`, in key order.
ojson ServingOutputs(const Layout& layout, const ServingCase& c, const ServingOutcome& outcome);
// §CON.7 Reads a test of `type` back (the inputs only). Throws engram::Error naming the key for what no
// encoding can mean (a list of the wrong length, a block table that does not hold a position); the call's
// own rules (§HASH.10-§HASH.11) are left to HashPacked.
ServingCase ReadServingCase(const Layout& layout, const std::string& type, const nlohmann::json& test);

// The reference's outcome (HashPacked, §HASH.10-§HASH.12), for the case's encoding: the ids beneath DEAD ids of
// the states where some are DEAD, the slot-cache writes for `slotCache` only. Throws engram::Error for what
// HashPacked refuses.
ServingOutcome ServingReference(const Layout& layout, const ServingCase& c);
// The outcome an implementation reported (its rows and states after the call) in the form ServingOutputs
// writes: the ids beneath DEAD entries taken from the case where the reported state holds what the case
// consumed, and for the slot cache the request slots written, then the reported state at its positions.
ServingOutcome ServingOutcomeOf(const Layout& layout, const ServingCase& c, std::vector<int64_t> rows,
                                const std::vector<HashHistory>& histories);
// A call-shape bug's outcome.
ServingOutcome ServingMutantOutcome(const Layout& layout, const ServingCase& c, ServingMutant m);
// A hash-family bug's outcome (vectors/mutants.h: its rows, the states the reference gives); `mutant_layout`
// is MutantLayout(m, layout, seed).
ServingOutcome HashMutantOutcome(const Layout& layout, const Layout& mutant_layout, const ServingCase& c, Mutant m);

// §HASH.10 the no-leak control on rows alone (the naive flatten hands on the reference's states): whether the
// naive flatten's rows differ from `rows`, the reference's. Cheaper than comparing the outputs, and the same.
bool DiffersFromNaiveFlatten(const Layout& layout, const ServingCase& c, const std::vector<int64_t>& rows);

// §CON.7 What the port sees: the case written in its encoding and read back (the ids beneath DEAD entries
// are gone where the encoding does not carry them).
ServingCase AsSeen(const Layout& layout, const ServingCase& c);

// §CON.7 The `slotCache` encoding's cache for the case: a block size of 2 to 4, each request's blocks (enough
// for its positions after the call, and for the last request the padding's too) at physical blocks in an
// order drawn from `seed`, every slot filled with ids drawn from `seed` and each history id at its position's
// slot, and the slot each request slot writes (-1 for padding).
void LaySlotCache(const Layout& layout, ServingCase& c, uint64_t seed);

// §CON.7 item 2 Whether `encoding` can carry the case.
bool EncodingCarries(const std::string& encoding, const ServingCase& c);

// §CONF.4 Where a difference of a serving_v41 test lies, for a person: `difference` starts with the path of
// the first differing output ("rows[7][0][2]: ...", "historyOut[2].history[0]: ...", "slotCacheOut[37]: ...");
// the answer names the request, its boundaries, the slot and its position, and whether the slot's window
// reaches back across its request's first boundary (into its state before the call) or the padding follows
// the request. "" when the path names nothing of the call.
std::string ServingLocation(const std::string& type, const nlohmann::ordered_json& group,
                            const nlohmann::ordered_json& test, const std::string& difference);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_SERVING_H_
