// The JSON forms of suite hash_state's hand-offs (spec/hash.md §HASH.9),
// shared by its fixed vectors (suite_hash_state.cc) and its random cases
// (random_hash_state.cc), so that both write the same fields.
#ifndef ENGRAM_VECTORS_SUITE_HASH_STATE_H_
#define ENGRAM_VECTORS_SUITE_HASH_STATE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/suite.h"

namespace engram::vectors {

// §HASH.9 The binary form of `h` as lower-case hex (a test's "historyInBinary").
std::string HistoryBinaryHex(const HashHistory& h);
// A segment's "historyIn" / "historyOut": {"position", "history"}.
ojson HistoryJson(const HashHistory& h);
// One instance's share of a sequence: import `in`, hash ids[from, to), export
// into `out`. The segment: from, to, historyIn, historyInBinary, rows, historyOut.
ojson HandoffSegment(const Layout& layout, const HashHistory& in, const std::vector<int64_t>& ids, size_t from,
                     size_t to, HashHistory& out);
// A test's "segments": `ids` cut at `cuts` (ascending, each in [0, ids.size()];
// equal cuts give empty segments), the first segment importing `start`, each
// later one the history the one before it exported.
ojson HandoffSegments(const Layout& layout, const HashHistory& start, const std::vector<int64_t>& ids,
                      const std::vector<size_t>& cuts);
// A test's "microBatches": micro-batch b holds segment b of every sequence
// that has ids in it (sequence i cut at cuts[i], continuing from starts[i]);
// empty segments and empty micro-batches are left out.
ojson HandoffMicroBatches(const Layout& layout, const std::vector<HashHistory>& starts,
                          const std::vector<std::vector<int64_t>>& seqs, const std::vector<std::vector<size_t>>& cuts);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_SUITE_HASH_STATE_H_
