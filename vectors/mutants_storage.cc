#include "vectors/mutants_storage.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "vectors/mutants.h"

namespace engram::vectors {

namespace {

// A float32 subnormal as FTZ/DAZ hardware sees it: a zero of the same sign.
float Flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

// §STO.3 with FTZ + DAZ on the one float32 multiplication: both operands and
// the product are flushed; the conversions around it are bit operations (as
// torch's float8 -> float32 and float32 -> bf16 are) and flush nothing. E4M3
// values are never float32 subnormals (|v| >= 2^-9), so only the scale 2^-127
// (DAZ) and products below 2^-126 (FTZ) change.
uint16_t FtzDecodeElement(uint8_t code, uint8_t scale) {
  const float product = Flush(Flush(DecodeE4M3(code)) * Flush(static_cast<float>(DecodeE8M0(scale))));
  return FloatToBf16(product);
}

void CheckRowIds(const RowSource& table, std::span<const int64_t> row_ids) {
  for (size_t i = 0; i < row_ids.size(); ++i) {
    if (row_ids[i] < 0 || row_ids[i] >= table.rows()) {
      throw Error(table.name() + ": row id " + std::to_string(row_ids[i]) + " (index " + std::to_string(i) +
                  ") is outside [0, " + std::to_string(table.rows()) + ")");
    }
  }
}

// §STO.1 / §STO.2 codes whose decode is NaN: E4M3 0x7F / 0xFF, E8M0 0xFF.
bool IsNaNCode(uint8_t code) { return (code & 0x7F) == 0x7F; }
bool IsNaNScale(uint8_t scale) { return scale == 0xFF; }

// Luce-Org/lucebox's element decode (spec/sources.md [SRC-PORT-LUCEBOX], deepseek4_engram_decode_value): the
// E4M3 formula with no NaN case (exponent 15, mantissa 7 is (8 + 7) * 2^5 = 480) and the scale applied as
// ldexp(v, s - 127), 2^128 for 0xFF (inf times a non-zero value, a signed zero times a zero code), then bf16.
// On every code and scale that is not NaN this is §STO.3's one rounding of the exact product: the reference's.
uint16_t FiniteDecodeElement(uint8_t code, uint8_t scale) {
  if (!IsNaNCode(code) && !IsNaNScale(scale)) return DecodeElement(code, scale);
  return FloatToBf16(std::ldexp(E4M3With(DecodeBug::kNaNDecodedFinite, code), static_cast<int>(scale) - 127));
}

}  // namespace

const std::vector<DecodeBug>& AllDecodeBugs() {
  static const std::vector<DecodeBug> all = {DecodeBug::kBlock128, DecodeBug::kE8M0BitShift, DecodeBug::kFlushToZero,
                                             DecodeBug::kNaNDecodedFinite, DecodeBug::kNaNRowRefused,
                                             DecodeBug::kE8M0PowInf};
  return all;
}

float E4M3With(DecodeBug bug, uint8_t code) {
  if (bug != DecodeBug::kNaNDecodedFinite || !IsNaNCode(code)) return DecodeE4M3(code);
  return (code & 0x80) ? -480.0f : 480.0f;  // exponent 15, mantissa 7 read as a normal number
}

float E8M0With(DecodeBug bug, uint8_t scale) {
  if (bug == DecodeBug::kE8M0BitShift) return static_cast<float>(MutantE8M0(Mutant::kE8M0BitShift, scale));
  if (bug == DecodeBug::kNaNDecodedFinite && IsNaNScale(scale)) return std::ldexp(1.0f, 128);  // overflows: +inf
  // sglang's torch.pow(2.0, s - 127.0) in float32: exact for 0 ... 254, 2^128 overflows to +inf.
  if (bug == DecodeBug::kE8M0PowInf && IsNaNScale(scale)) return std::numeric_limits<float>::infinity();
  return static_cast<float>(DecodeE8M0(scale));
}

std::string DecodeBugFlag(DecodeBug bug) {
  switch (bug) {
    case DecodeBug::kE8M0BitShift: return MutantFlag(Mutant::kE8M0BitShift);
    case DecodeBug::kFlushToZero: return "FlushToZero";
    case DecodeBug::kBlock128: return "Block128";
    case DecodeBug::kNaNDecodedFinite: return "NaNDecodedFinite";
    case DecodeBug::kNaNRowRefused: return "NaNRowRefused";
    case DecodeBug::kE8M0PowInf: return "E8M0PowInf";
  }
  return "";
}

void AddDecodeBugNote(SuiteBuilder& b, DecodeBug bug) {
  switch (bug) {
    case DecodeBug::kE8M0BitShift:
      AddMutantNotes(b, {Mutant::kE8M0BitShift});
      break;
    case DecodeBug::kFlushToZero:
      b.Divergence("FlushToZero",
                   "Changes under the known bug of a row decode whose float32 multiplication flushes subnormals "
                   "(FTZ + DAZ: x86 with torch.set_flush_denormal(True), a CUDA kernel built with ftz / "
                   "--use_fast_math): the scale 0x00 (2^-127) enters the product as +0 and products below 2^-126 "
                   "become a zero of the code's sign. The scale's own float32 bits are unchanged (a bit-level "
                   "conversion).",
                   "§STO.3", "flush-to-zero");
      break;
    case DecodeBug::kBlock128:
      b.Divergence("Block128",
                   "Changes under the known bug of applying V4's 128-wide scale blocks to V4.1's 32-wide ones: "
                   "element j of a row is decoded with the row's scale j / 128 instead of j / 32.",
                   "§STO.3", "block128");
      break;
    case DecodeBug::kNaNDecodedFinite:
      b.Divergence("NaNDecodedFinite",
                   "Changes under the element decode of Luce-Org/lucebox (deepseek4_engram_decode_value, spec/sources.md "
                   "[SRC-PORT-LUCEBOX]), which has no NaN: the E4M3 codes 0x7F / 0xFF decode as +-480 (exponent 15, "
                   "mantissa 7 read as a normal number) and the E8M0 scale 0xFF as 2^128 (inf times a non-zero code, "
                   "a signed zero times code 0x00 / 0x80), where §STO.1 and §STO.2 decode NaN.",
                   "§STO.2", "nan-decoded-finite");
      break;
    case DecodeBug::kNaNRowRefused:
      b.Divergence("NaNRowRefused",
                   "Changes under the table read of Luce-Org/lucebox (DeepSeek4EngramTable::read through decode_row, "
                   "spec/sources.md [SRC-PORT-LUCEBOX]), which refuses (EDOM) a row holding an E4M3 code 0x7F / 0xFF "
                   "or an E8M0 scale 0xFF, where §STO.3 decodes such a row (NaN elements): a valid lookup refused. "
                   "A port that decodes an ElementDecodeTest as one row (as this suite's row of codes 0x00 .. 0xff "
                   "invites) refuses every one of them.",
                   "§STO.3", "nan-row-refused");
      break;
    case DecodeBug::kE8M0PowInf:
      b.Divergence("E8M0PowInf",
                   "Changes under the NPU row decode of sglang (EngramEmbedding._lookup and _forward_offload, "
                   "spec/sources.md [SRC-PORT-SGLANG]), which takes the E8M0 scale as torch.pow(2.0, s - 127.0) in "
                   "float32: 2^128 overflows to +inf for the scale 0xFF, so a non-zero code decodes as +-inf where "
                   "§STO.2 decodes NaN (codes +-0 and the NaN codes still give NaN); the scales 0x00 ... 0xFE "
                   "decode exactly.",
                   "§STO.2", "e8m0-pow-inf");
      break;
  }
}

void NoteDecodeBug(SuiteBuilder& b, DecodeBug bug) {
  if (!b.HasNote(DecodeBugFlag(bug))) AddDecodeBugNote(b, bug);
}

std::vector<uint16_t> DecodeRowWith(DecodeBug bug, const RowBytes& row) {
  if (row.codes.size() != row.scales.size() * static_cast<size_t>(kScaleBlock)) {
    throw Error("mutant row: one scale per 32 codes expected");
  }
  std::vector<uint16_t> out(row.codes.size());
  switch (bug) {
    case DecodeBug::kE8M0BitShift:
      return MutantDecodeRow(Mutant::kE8M0BitShift, row.codes, row.scales);
    case DecodeBug::kFlushToZero:
      for (size_t j = 0; j < out.size(); ++j) out[j] = FtzDecodeElement(row.codes[j], row.scales[j / kScaleBlock]);
      return out;
    case DecodeBug::kBlock128:
      // j / 128 < ceil(d / 128) <= d / 32 for every d that is a multiple of 32.
      for (size_t j = 0; j < out.size(); ++j) out[j] = DecodeElement(row.codes[j], row.scales[j / 128]);
      return out;
    case DecodeBug::kNaNDecodedFinite:
      for (size_t j = 0; j < out.size(); ++j) out[j] = FiniteDecodeElement(row.codes[j], row.scales[j / kScaleBlock]);
      return out;
    case DecodeBug::kE8M0PowInf:
      for (size_t j = 0; j < out.size(); ++j) {
        const uint8_t scale = row.scales[j / kScaleBlock];
        out[j] = IsNaNScale(scale) ? FloatToBf16(DecodeE4M3(row.codes[j]) * E8M0With(bug, scale))
                                   : DecodeElement(row.codes[j], scale);
      }
      return out;
    case DecodeBug::kNaNRowRefused:
      for (size_t j = 0; j < out.size(); ++j) {
        if (IsNaNCode(row.codes[j]) || IsNaNScale(row.scales[j / kScaleBlock])) return {};  // the port refuses
        out[j] = DecodeElement(row.codes[j], row.scales[j / kScaleBlock]);
      }
      return out;
  }
  return out;
}

std::vector<uint16_t> LookupRowsWith(DecodeBug bug, const RowSource& table, std::span<const int64_t> row_ids) {
  CheckRowIds(table, row_ids);
  std::vector<uint16_t> out;
  out.reserve(row_ids.size() * static_cast<size_t>(table.head_dim()));
  for (int64_t id : row_ids) {
    const std::vector<uint16_t> row = DecodeRowWith(bug, table.Row(id));
    if (row.size() != static_cast<size_t>(table.head_dim())) return {};  // one row refused: the lookup is
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

bool Bf16Differ(std::span<const uint16_t> a, std::span<const uint16_t> b) {
  if (a.size() != b.size()) return true;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!Bf16Match(a[i], b[i])) return true;
  }
  return false;
}

std::string ShardBugFlag(ShardBug bug) {
  switch (bug) {
    case ShardBug::kKeepNegZero: return "NegZeroAllReduce";
    case ShardBug::kLocalAsGlobal: return "TpLocalAsGlobal";
    case ShardBug::kEvenShardsOnly: return "ShardsMustDivide";
  }
  return "";
}

void AddShardBugNote(SuiteBuilder& b, ShardBug bug) {
  switch (bug) {
    case ShardBug::kKeepNegZero:
      b.Divergence("NegZeroAllReduce",
                   "Changes under the known bug of a masked all_reduce that keeps -0 (world >= 2): each element is the "
                   "owner rank's bits, as if the other ranks' +0 were not added (IEEE -0 + +0 = +0), so the -0 "
                   "elements of a row stay -0 instead of becoming +0.",
                   "§STO.7", "keep-neg-zero");
      break;
    case ShardBug::kLocalAsGlobal:
      b.Divergence("TpLocalAsGlobal",
                   "Changes under the known bug of a rank that reads its local row id (id - begin of its shard) as a "
                   "global row of the table: an id owned by a rank >= 1 reads another row.",
                   "§STO.7", "local-as-global");
      break;
    case ShardBug::kEvenShardsOnly:
      b.Divergence("ShardsMustDivide",
                   "A table whose rows are not a multiple of world has a shorter last shard (part = ceil(rows / "
                   "world)), and every rank still answers. Changes under the known bug of a row-sharded table that "
                   "requires rows % world == 0 and refuses the others (sglang's EngramEmbedding asserts "
                   "num_embeddings % tp_size == 0, spec/sources.md [SRC-PORT-SGLANG], which the real layer-14 table "
                   "of 384,016,682 rows fails at world 4 and 8): a valid lookup refused.",
                   "§STO.7", "even-shards-only");
      break;
  }
}

std::vector<uint16_t> RowShardLookupWith(std::optional<ShardBug> bug, std::optional<DecodeBug> decode,
                                         const RowSource& table, std::span<const int64_t> row_ids, int world) {
  CheckRowIds(table, row_ids);
  if (bug == ShardBug::kEvenShardsOnly && table.rows() % world != 0) return {};  // the port refuses the table
  const size_t d = static_cast<size_t>(table.head_dim());
  auto decode_row = [&](int64_t row) { return decode ? DecodeRowWith(*decode, table.Row(row)) : DecodeRow(table.Row(row)); };
  std::vector<std::vector<uint16_t>> parts;
  for (int rank = 0; rank < world; ++rank) {
    const Shard s = RowShard(table.rows(), rank, world);
    std::vector<uint16_t> part(row_ids.size() * d, 0);  // masked: +0
    for (size_t i = 0; i < row_ids.size(); ++i) {
      const int64_t id = row_ids[i];
      if (id < s.begin || id >= s.end) continue;
      const int64_t read = bug == ShardBug::kLocalAsGlobal ? id - s.begin : id;
      const std::vector<uint16_t> row = decode_row(read);
      if (row.size() != d) return {};  // the rank refuses the row, so the lookup is refused
      std::copy(row.begin(), row.end(), part.begin() + static_cast<std::ptrdiff_t>(i * d));
    }
    parts.push_back(std::move(part));
  }
  if (bug != ShardBug::kKeepNegZero) return ReduceShards(parts);
  std::vector<uint16_t> out(row_ids.size() * d);
  for (size_t i = 0; i < row_ids.size(); ++i) {
    const std::vector<uint16_t>& owner = parts[static_cast<size_t>(OwnerRank(table.rows(), world, row_ids[i]))];
    std::copy(owner.begin() + static_cast<std::ptrdiff_t>(i * d), owner.begin() + static_cast<std::ptrdiff_t>((i + 1) * d),
              out.begin() + static_cast<std::ptrdiff_t>(i * d));
  }
  return out;
}

std::vector<uint16_t> LookupMaskingOutside(const RowSource& table, std::span<const int64_t> row_ids, int world) {
  const size_t d = static_cast<size_t>(table.head_dim());
  std::vector<int64_t> inside;
  for (int64_t id : row_ids) {
    if (id >= 0 && id < table.rows()) inside.push_back(id);
  }
  const std::vector<uint16_t> rows =
      world == 1 ? LookupRows(table, inside) : RowShardLookupWith(std::nullopt, std::nullopt, table, inside, world);
  std::vector<uint16_t> out(row_ids.size() * d, 0);  // masked: +0 on every rank, +0 after the sum
  size_t next = 0;
  for (size_t i = 0; i < row_ids.size(); ++i) {
    if (row_ids[i] < 0 || row_ids[i] >= table.rows()) continue;
    std::copy(rows.begin() + static_cast<std::ptrdiff_t>(next * d), rows.begin() + static_cast<std::ptrdiff_t>((next + 1) * d),
              out.begin() + static_cast<std::ptrdiff_t>(i * d));
    ++next;
  }
  return out;
}

void NoteRowOutsideZeroed(SuiteBuilder& b) {
  if (b.HasNote(kRowOutsideFlag)) return;
  b.Divergence(kRowOutsideFlag,
               "A row id outside [0, rows) must be refused. Changes under the official V4.1 lookup "
               "(ParallelEngramEmbedding): each rank masks the ids outside its part (read at local row 0, zeroed "
               "after the decode) before the all_reduce, so such an id gives a row of +0 (where the last part runs "
               "past the table, a padding row of that shard) and the lookup is accepted.",
               "§STO.6", "row-outside-zero");
}

std::vector<uint16_t> HeadShardLookupWith(std::optional<DecodeBug> decode, const RowSource& table,
                                          std::span<const int64_t> row_ids, int columns, int world) {
  if (row_ids.size() % static_cast<size_t>(columns) != 0) throw Error("head sharding: not a whole number of positions");
  const size_t positions = row_ids.size() / static_cast<size_t>(columns);
  std::vector<std::vector<uint16_t>> parts;
  for (int rank = 0; rank < world; ++rank) {
    const HeadRange hr = HeadShard(columns, rank, world);
    std::vector<int64_t> mine;
    for (size_t p = 0; p < positions; ++p) {
      for (int c = hr.begin; c < hr.end; ++c) mine.push_back(row_ids[p * static_cast<size_t>(columns) + static_cast<size_t>(c)]);
    }
    parts.push_back(decode ? LookupRowsWith(*decode, table, mine) : LookupRows(table, mine));
    if (parts.back().size() != mine.size() * static_cast<size_t>(table.head_dim())) return {};  // a row refused
  }
  return GatherHeads(parts, static_cast<int64_t>(positions), columns, world, table.head_dim());
}

}  // namespace engram::vectors
