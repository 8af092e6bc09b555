// Known porting bugs of the table decode and of the tensor-parallel lookup,
// implemented on purpose (spec/storage.md §STO.3, §STO.7; the divergence
// catalogue of spec/vectors.md §VEC.12).
//
// As for vectors/mutants.h: a KNOWN_DIVERGENCE flag of these bugs is set on a
// test iff the bug's outcome fails it under the runner's comparison (bf16 bit
// for bit, any NaN matching any NaN, §CONF.1), in every suite the bug reaches:
//
//   decode bugs (the §STO.3 row decode): fp8_decode (ElementDecodeTest),
//     table_lookup, tp_shard, engram_forward (the v4.1 table rows);
//   shard bugs (the §STO.7 row-sharded lookup): tp_shard (RowShardTest).
//
// The planted bugs of conformance/python/engram_numpy_port (--bug NAME, the
// note's last words) are written independently in Python.
#ifndef ENGRAM_VECTORS_MUTANTS_STORAGE_H_
#define ENGRAM_VECTORS_MUTANTS_STORAGE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "reference/storage.h"
#include "vectors/suite.h"

namespace engram::vectors {

enum class DecodeBug {
  kE8M0BitShift,  // Mutant::kE8M0BitShift: the scale as the float32 with bits s << 23 (0x00 -> 0, 0xFF -> inf)
  kFlushToZero,   // the float32 product with FTZ + DAZ: the scale 2^-127 enters as +0, subnormal products -> +-0
  kBlock128,      // element j decoded with scales[j / 128] (V4's 128-wide blocks) instead of scales[j / 32]
  kNaNDecodedFinite,  // no NaN: E4M3 0x7F / 0xFF as +-480, E8M0 0xFF as 2^128 (Luce-Org/lucebox's element decode)
  kNaNRowRefused,     // a row holding an E4M3 0x7F / 0xFF or an E8M0 0xFF refused (Luce-Org/lucebox's table read)
  kE8M0PowInf,        // the scale as the float32 pow(2, s - 127): 0xFF -> +inf, not NaN (sglang's NPU decode)
};

// Every decode bug, in the order the suites note them.
const std::vector<DecodeBug>& AllDecodeBugs();
// "E8M0BitShift", "FlushToZero", "Block128", "NaNDecodedFinite", "NaNRowRefused", "E8M0PowInf".
std::string DecodeBugFlag(DecodeBug bug);
// The bug's KNOWN_DIVERGENCE note (SuiteBuilder::Divergence, with its planted bug).
void AddDecodeBugNote(SuiteBuilder& b, DecodeBug bug);
// Adds the note unless the suite has it (notes are added where first used).
void NoteDecodeBug(SuiteBuilder& b, DecodeBug bug);

// §STO.3 One row decoded as a port with the bug decodes it (bf16 bits). Empty when that port refuses the row
// (kNaNRowRefused): a refusal differs from every valid output under Bf16Differ, as the runner fails it.
std::vector<uint16_t> DecodeRowWith(DecodeBug bug, const RowBytes& row);
// §STO.1, §STO.2 An E4M3 code and an E8M0 scale as a port with the bug decodes them alone (the E4M3DecodeTest and
// E8M0DecodeTest values, as float32): the reference's values except under kE8M0BitShift, kNaNDecodedFinite and
// kE8M0PowInf.
float E4M3With(DecodeBug bug, uint8_t code);
float E8M0With(DecodeBug bug, uint8_t scale);
// §STO.6 LookupRows with the bug's row decode (ids are checked as LookupRows does); empty when a row is refused.
std::vector<uint16_t> LookupRowsWith(DecodeBug bug, const RowSource& table, std::span<const int64_t> row_ids);
// §STO.9 Whether two bf16 outputs differ under the runner's comparison (bits, any NaN = any NaN; sizes too).
bool Bf16Differ(std::span<const uint16_t> a, std::span<const uint16_t> b);

enum class ShardBug {
  kKeepNegZero,    // the masked all_reduce keeps the owner's bits (-0 stays -0) instead of summing the ranks' +0
  kLocalAsGlobal,  // a rank reads global row (id - begin), its local id, instead of global row id
  kEvenShardsOnly, // a table whose rows are not a multiple of world is refused (sglang's EngramEmbedding asserts)
};

// "NegZeroAllReduce", "TpLocalAsGlobal", "ShardsMustDivide".
std::string ShardBugFlag(ShardBug bug);
// The bug's KNOWN_DIVERGENCE note.
void AddShardBugNote(SuiteBuilder& b, ShardBug bug);

// §STO.7 The reduced output of a row-sharded lookup of `world` ranks as a port
// with the shard bug `bug` and the decode bug `decode` computes it (either may
// be absent: with neither it is the reference's reduced output). Ids outside
// [0, rows) are refused as ShardLookup refuses them. Empty when a rank refuses a row.
std::vector<uint16_t> RowShardLookupWith(std::optional<ShardBug> bug, std::optional<DecodeBug> decode,
                                         const RowSource& table, std::span<const int64_t> row_ids, int world);

// §VEC.12 RowOutsideTableZeroed: the official V4.1 lookup (ParallelEngramEmbedding, spec/sources.md
// [SRC-V41]) masks every id outside its rank's part (looked up at local row 0, zeroed after the decode)
// before the all_reduce, so an id outside [0, rows) gives a +0 row where §STO.6 refuses it. (Where the
// last part runs past the table, world 16 and 64 here, an id there reads that shard's padding row, which
// no table defines: modelled as +0; the test is refused by the reference, so any row fails it.) In-range
// ids give the reference's rows (world 1: LookupRows; else the row-sharded reduction).
std::vector<uint16_t> LookupMaskingOutside(const RowSource& table, std::span<const int64_t> row_ids, int world);
// The flag, and its note (added unless the suite has it).
inline constexpr const char* kRowOutsideFlag = "RowOutsideTableZeroed";
void NoteRowOutsideZeroed(SuiteBuilder& b);

// §STO.8 The gathered output of a head-sharded lookup as a port with the decode
// bug computes it (absent: the reference's output); empty when a rank refuses a row.
std::vector<uint16_t> HeadShardLookupWith(std::optional<DecodeBug> decode, const RowSource& table,
                                          std::span<const int64_t> row_ids, int columns, int world);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_MUTANTS_STORAGE_H_
