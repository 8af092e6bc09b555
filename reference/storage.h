/// \file
/// spec/storage.md — Engram tables: FP8 codes, scales, row decode, lookup,
/// tensor-parallel sharding (v4.1), and the demo's float multi-head embedding.
///
/// A v4.1 table row is head_dim E4M3fn codes plus head_dim/32 E8M0 scales
/// (one per 32-element block). Decoded value = e4m3 * 2^(scale - 127), rounded
/// to bf16 (§STO.3). Tables are huge (384 M rows x 264 bytes per layer), so
/// rows are always read through a RowSource: a memory-mapped safetensors
/// checkpoint, a packed-row file, or a synthetic table whose rows derive from
/// (seed, row) by a counter-based hash (§STO.5).
#ifndef ENGRAM_REFERENCE_STORAGE_H_
#define ENGRAM_REFERENCE_STORAGE_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace engram {

/// §STO.3 Elements per E8M0 scale (v4.1 blocks of 32 along the row).
inline constexpr int64_t kScaleBlock = 32;
/// §STO.3 The bf16 NaN every decode produces (torch's canonical NaN).
inline constexpr uint16_t kBf16NaN = 0x7FC0;

/// §STO.1 E4M3fn code -> its exact value (NaN for 0x7F/0xFF; no infinities).
float DecodeE4M3(uint8_t code);
/// §STO.2 E8M0 scale byte -> 2^(s-127) as a double (NaN for 0xFF; 0x00 is 2^-127).
double DecodeE8M0(uint8_t scale);
/// §STO.3 float -> bf16 bits, round to nearest even (every NaN -> kBf16NaN).
uint16_t FloatToBf16(float value);
/// §STO.3 bf16 bits -> float (exact).
float Bf16ToFloat(uint16_t bits);
/// §STO.3 One decoded element: e4m3 * 2^(s-127) rounded to bf16.
uint16_t DecodeElement(uint8_t code, uint8_t scale);
/// §STO.9 Conformance equality of two bf16 values: identical bits, or both NaN.
bool Bf16Match(uint16_t a, uint16_t b);

/// §STO.4 One row as stored: head_dim codes and head_dim/32 scales.
struct RowBytes {
  std::vector<uint8_t> codes;   ///< head_dim E4M3fn codes
  std::vector<uint8_t> scales;  ///< head_dim / 32 E8M0 scales
};

/// §STO.3 A row's bf16 values: element j uses scales[j / 32].
std::vector<uint16_t> DecodeRow(const RowBytes& row);

/// §STO.4 Where rows come from. Implementations: safetensors (mmap), packed
/// rows (mmap), synthetic (computed). Reading never loads the whole table.
class RowSource {
 public:
  virtual ~RowSource() = default;
  virtual int64_t rows() const = 0;      ///< R, the table's rows
  virtual int64_t head_dim() const = 0;  ///< d, codes per row (a multiple of 32)
  /// §STO.4 Throws engram::Error naming the source and the row when row is outside [0, rows()).
  virtual RowBytes Row(int64_t row) const = 0;
  virtual std::string name() const = 0;  ///< the file or synthetic table, for messages
};

/// §STO.4 `<prefix>.weight` [rows, head_dim] float8_e4m3fn ("F8_E4M3") and
/// `<prefix>.scale` [rows, head_dim/32] float8_e8m0fnu ("F8_E8M0") from a
/// .safetensors file, memory-mapped read-only. Every problem with the file
/// (truncation, header, dtype, shape, offsets, missing tensor) throws
/// engram::Error naming the file, the tensor and the field.
std::unique_ptr<RowSource> OpenSafetensors(const std::filesystem::path& path, const std::string& tensor_prefix);
/// §STO.4 A packed-row file: rows of head_dim codes then head_dim/32 scales
/// (264 bytes for head_dim 256); its size must be a positive multiple of that.
std::unique_ptr<RowSource> OpenPackedRows(const std::filesystem::path& path, int64_t head_dim);
/// §STO.5 A synthetic table: codes and scales of any row from (seed, row).
/// edge_rows = false: every value is finite (no NaN code, scales 110..130).
/// edge_rows = true: additionally one row in 8 has uniformly random codes and
/// scales (NaN codes, scale 0x00 and 0xFF, bf16 subnormals and underflow).
std::unique_ptr<RowSource> SyntheticTable(uint64_t seed, int64_t rows, int64_t head_dim, bool edge_rows = false);
/// §STO.5 Whether row `row` of SyntheticTable(seed, ..., edge_rows=true) is an edge row.
bool SyntheticIsEdgeRow(uint64_t seed, int64_t row);
/// §STO.5 The counter-based word k of row `row` (SplitMix64 finaliser).
uint64_t SyntheticWord(uint64_t seed, int64_t row, uint64_t k);

/// §STO.6 Lookup: row ids -> decoded bf16 rows, out[i * head_dim + j].
/// Every id must be in [0, rows) (errors name the index and the value).
std::vector<uint16_t> LookupRows(const RowSource& table, std::span<const int64_t> row_ids);

/// §STO.7 Tensor parallel (v4.1): rank r of `world` owns rows
/// [r*part, (r+1)*part) ∩ [0, rows), part = ceil(rows/world).
struct Shard {
  int64_t begin = 0;  ///< first global row owned
  int64_t end = 0;    ///< one past the last (== begin when the rank owns none)
};
/// §STO.7 part = ceil(rows / world), the rows each rank owns (the last ranks may own fewer).
int64_t ShardPart(int64_t rows, int world);
/// §STO.7 The rows rank `rank` of `world` owns: [rank*part, min((rank+1)*part, rows)).
Shard RowShard(int64_t rows, int rank, int world);
/// §STO.7 The rank that owns global row `row`.
int OwnerRank(int64_t rows, int world, int64_t row);
/// A rank's partial lookup: rows outside its shard are +0 (bf16 0x0000); the
/// sum over ranks equals the unsharded lookup with -0 turned +0 (§STO.7).
std::vector<uint16_t> ShardLookup(const RowSource& table, std::span<const int64_t> row_ids, int rank, int world);
/// §STO.7 bf16 element-wise sum of the ranks' partial lookups (the all_reduce):
/// a left fold in rank order, each step bf16(float(acc) + float(partial)).
/// With one partial it is returned unchanged (no all_reduce happens at world 1).
std::vector<uint16_t> ReduceShards(const std::vector<std::vector<uint16_t>>& partials);
/// §STO.9 Two-operand bf16 addition, rounded to nearest even (the reduce step).
uint16_t Bf16Add(uint16_t a, uint16_t b);

/// §STO.8 Head-sharded variant: rank r owns columns (heads)
/// [r*hp, (r+1)*hp) ∩ [0, columns), hp = ceil(columns/world). row_ids are
/// [positions][columns]; the rank's lookup is [positions][its columns][head_dim].
struct HeadRange {
  int begin = 0;  ///< first column owned
  int end = 0;    ///< one past the last (== begin when the rank owns none)
};
/// §STO.8 The columns rank `rank` of `world` owns: [rank*hp, min((rank+1)*hp, columns)).
HeadRange HeadShard(int columns, int rank, int world);
/// §STO.8 A rank's lookup of its columns of every position: [positions][its columns][head_dim].
std::vector<uint16_t> HeadShardLookup(const RowSource& table, std::span<const int64_t> row_ids, int columns,
                                      int rank, int world);
/// §STO.8 The all_gather along the head axis: partials in rank order -> [positions][columns][head_dim].
std::vector<uint16_t> GatherHeads(const std::vector<std::vector<uint16_t>>& partials, int64_t positions, int columns,
                                  int world, int64_t head_dim);

/// §STO.10 demo-v1: the multi-head embedding is a float32 table of
/// n_embed_per_ngram / n_head_per_ngram columns. Synthetic version: value of
/// (row, j) = (int24 from SyntheticWord(seed, row, j)) / 2^23, in [-1, 1), exact in float32.
class FloatRowSource {
 public:
  virtual ~FloatRowSource() = default;
  virtual int64_t rows() const = 0;                     ///< the table's rows
  virtual int64_t width() const = 0;                    ///< float32 values per row
  virtual std::vector<float> Row(int64_t row) const = 0;  ///< row `row`; throws engram::Error outside [0, rows())
  virtual std::string name() const = 0;                 ///< for messages
};
/// §STO.10 The synthetic float table of (seed, rows, width).
std::unique_ptr<FloatRowSource> SyntheticFloatTable(uint64_t seed, int64_t rows, int64_t width);
/// §STO.10 row ids -> float rows, out[i * width + j]; ids must be in [0, rows).
std::vector<float> LookupFloatRows(const FloatRowSource& table, std::span<const int64_t> row_ids);

}  // namespace engram

#endif  // ENGRAM_REFERENCE_STORAGE_H_
