// The JSON forms of the storage suites' tables and shards (spec/storage.md,
// §STO.5-§STO.8), shared by their fixed vectors (suite_storage.cc) and their
// random cases (random_storage.cc), so that both write the same fields.
#ifndef ENGRAM_VECTORS_SUITE_STORAGE_H_
#define ENGRAM_VECTORS_SUITE_STORAGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/storage.h"
#include "vectors/suite.h"

namespace engram::vectors {

// A group's "table": {"layout", "seed", "rows", then "headDim" and "edgeRows"
// (synthetic) or "width" (synthetic-float)}.
ojson TableJson(const std::string& layout, uint64_t seed, int64_t rows, int64_t width, bool edges);
// §STO.7 A RowShardTest group's "shards": [begin, end) of every rank.
ojson ShardsJson(int64_t rows, int world);
// §STO.7 The intermediate "owners": the owning rank and local row of each id.
ojson OwnersJson(int64_t rows, int world, const std::vector<int64_t>& ids);
// §STO.7 The row-sharded lookup: every rank's partial, then the bf16 all_reduce.
std::vector<uint16_t> Reduced(const RowSource& s, const std::vector<int64_t>& ids, int world);
// bf16 values, `d` per row, as one hex string per row.
ojson RowsHex(const std::vector<uint16_t>& v, size_t d);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_SUITE_STORAGE_H_
