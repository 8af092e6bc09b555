// §STO engram_conformance._core's storage functions: reference/storage.cc's decoding and shards, with the CLI's
// bounds on every integer.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>

#include "base/error.h"
#include "conformance/cli/common.h"
#include "python/src/args.h"
#include "python/src/bind.h"
#include "reference/storage.h"

namespace engram::py {
namespace {

using namespace nb::literals;

// The CLI's caps (conformance/cli/cmd_lookup.cc, common.h), and the bounds a configuration allows
// (reference/config.cc: heads <= 4096, max n-gram <= 64).
const IntRule kWorld{1, engram::cli::kMaxWorld, engram::cli::kWorldWhy};
const IntRule kRows{0, int64_t{1} << 62, "a table's row count; at most 2^62, so that rank * part stays an int64"};
const IntRule kColumns{1, 63 * 4096, "(max n-gram - 1) * heads, at most 63 * 4096 (§CFG)"};
const IntRule kByte{0, 255, "one byte, §STO.1-§STO.2"};

// A rank below `world`.
IntRule RankRule(int64_t world) { return {0, world - 1, "ranks are 0 ... world - 1"}; }

// §STO.3 bf16 bits of codes[..., d] times scales[..., d/32].
nb::ndarray<nb::numpy, uint16_t> DecodeRows(nb::handle codes_obj, nb::handle scales_obj) {
  const auto codes = ByteArray(codes_obj, "codes", Elements::kE4M3);
  const auto scales = ByteArray(scales_obj, "scales", Elements::kE8M0);
  if (codes.ndim() == 0) throw engram::Error("codes: a scalar; expected an array [..., head_dim]");
  const size_t d = codes.shape.back();
  if (d % engram::kScaleBlock != 0) {
    throw engram::Error("codes: the last dimension is " + std::to_string(d) + ", not a multiple of 32 (§STO.3)");
  }
  std::vector<size_t> want = codes.shape;
  want.back() = d / engram::kScaleBlock;
  if (scales.shape != want) {
    throw engram::Error("scales: shape " + ShapeText(scales.shape) + " but codes of shape " + ShapeText(codes.shape) +
                        " need " + ShapeText(want) + " (one scale per 32 codes, §STO.3)");
  }
  auto out = Owned<uint16_t>(codes.shape);
  for (size_t i = 0; i < codes.size(); ++i) {
    out.data()[i] = engram::DecodeElement(codes.data[i], scales.data[i / engram::kScaleBlock]);
  }
  return out;
}

// §STO.7 [begin, end) of rank `rank`, or of every rank (a list) when rank is None.
nb::object RowShards(nb::handle rows_obj, nb::handle world_obj, nb::handle rank_obj) {
  const int64_t rows = Int(rows_obj, "rows", kRows);
  const int world = static_cast<int>(Int(world_obj, "world", kWorld));
  if (!rank_obj.is_none()) {
    const engram::Shard s = engram::RowShard(rows, static_cast<int>(Int(rank_obj, "rank", RankRule(world))), world);
    return nb::make_tuple(s.begin, s.end);
  }
  nb::list all;
  for (int r = 0; r < world; ++r) {
    const engram::Shard s = engram::RowShard(rows, r, world);
    all.append(nb::make_tuple(s.begin, s.end));
  }
  return all;
}

void BindDecoding(nb::module_& m) {
  m.def("decode_rows", &DecodeRows, "codes"_a.none(), "scales"_a.none(),
        nb::sig("def decode_rows(codes: numpy.typing.ArrayLike, scales: numpy.typing.ArrayLike) "
                "-> numpy.typing.NDArray[numpy.uint16]"),
        "§STO.3 bf16 bits of codes[..., d] times scales[..., d/32].");
  m.def("decode_e4m3", [](nb::handle c) { return engram::DecodeE4M3(static_cast<uint8_t>(Int(c, "code", kByte))); },
        "code"_a.none(), nb::sig("def decode_e4m3(code: int) -> float"), "§STO.1");
  m.def("decode_e8m0", [](nb::handle s) { return engram::DecodeE8M0(static_cast<uint8_t>(Int(s, "scale", kByte))); },
        "scale"_a.none(), nb::sig("def decode_e8m0(scale: int) -> float"), "§STO.2");
  m.def("decode_element", [](nb::handle c, nb::handle s) {
    return engram::DecodeElement(static_cast<uint8_t>(Int(c, "code", kByte)), static_cast<uint8_t>(Int(s, "scale", kByte)));
  }, "code"_a.none(), "scale"_a.none(), nb::sig("def decode_element(code: int, scale: int) -> int"), "§STO.3");
}

}  // namespace

void BindStorage(nb::module_& m) {
  BindDecoding(m);
  m.def("row_shards", &RowShards, "rows"_a.none(), "world"_a.none(), "rank"_a.none() = nb::none(),
        nb::sig("def row_shards(rows: int, world: int, rank: int | None = None) "
                "-> tuple[int, int] | list[tuple[int, int]]"),
        "§STO.7 (begin, end) of rank, or a list over every rank when rank is None.");
  m.def("head_shard", [](nb::handle columns, nb::handle world_obj, nb::handle rank) {
    const int world = static_cast<int>(Int(world_obj, "world", kWorld));
    const engram::HeadRange s = engram::HeadShard(static_cast<int>(Int(columns, "columns", kColumns)),
                                                  static_cast<int>(Int(rank, "rank", RankRule(world))), world);
    return std::make_pair(s.begin, s.end);
  }, "columns"_a.none(), "world"_a.none(), "rank"_a.none(),
        nb::sig("def head_shard(columns: int, world: int, rank: int) -> tuple[int, int]"), "§STO.8");
  m.def("owner_rank", [](nb::handle rows_obj, nb::handle world, nb::handle row) {
    const int64_t rows = Int(rows_obj, "rows", {1, kRows.hi, kRows.why});
    return engram::OwnerRank(rows, static_cast<int>(Int(world, "world", kWorld)),
                             Int(row, "row", {0, rows - 1, "a row of the table"}));
  }, "rows"_a.none(), "world"_a.none(), "row"_a.none(),
        nb::sig("def owner_rank(rows: int, world: int, row: int) -> int"), "§STO.7");
}

}  // namespace engram::py
