// §STO.11 The storage suites through the C ABI: decodes, table lookups (synthetic,
// from safetensors and packed files, float tables) and both tensor-parallel shardings.
#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "base/hex.h"
#include "conformance/host/marshal.h"
#include "conformance/host/outputs.h"
#include "conformance/host/plugin_api.h"
#include "conformance/host/sparse_file.h"
#include "reference/input_files.h"

namespace engram::host {
namespace {

// A table handle, released with the library's own destroy.
class Table {
 public:
  Table(const Api& api, engram_table* handle) : api_(api), handle_(handle) {}
  ~Table() {
    if (handle_ != nullptr && api_.table_destroy != nullptr) api_.table_destroy(handle_);
  }
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  const engram_table* get() const { return handle_; }

  // §STO.5 the group's `table` object.
  static std::unique_ptr<Table> Synthetic(const Api& api, const json& t) {
    Need(api.table_synthetic, "engram_table_synthetic");
    Need(api.table_destroy, "engram_table_destroy");
    if (t.at("layout") != "synthetic") throw Unsupported{"table layout " + t.at("layout").dump()};
    char err[kErrLen] = "";
    engram_table* h = api.table_synthetic(U64(t.at("seed")), I64(t.at("rows")),
                                          I64(t.at("headDim")), t.value("edgeRows", false) ? 1 : 0, err, sizeof err);
    if (h == nullptr) throw Refused{err};
    return std::make_unique<Table>(api, h);
  }

 private:
  const Api& api_;
  engram_table* handle_;
};

std::vector<uint16_t> Lookup(const Api& api, const Table& table, const std::vector<int64_t>& ids, size_t head_dim) {
  Need(api.table_lookup, "engram_table_lookup");
  std::vector<uint16_t> out(ids.size() * head_dim);
  char err[kErrLen] = "";
  if (api.table_lookup(table.get(), ids.data(), ids.size(), out.data(), out.size(), err, sizeof err) != 0) throw Refused{err};
  return out;
}

// §STO.11 SafetensorsLookupTest / PackedLookupTest: the file is materialised
// (header and the listed rows' bytes at their offsets, holes elsewhere) and
// opened through the library's own reader.
json BytesLookup(const Api& api, const std::string& type, const json& group, const json& test) {
  const bool packed = type == "PackedLookupTest";
  const int64_t rows = group.at("rows"), head_dim = group.at("headDim");
  int64_t size = 0;
  if (packed) {
    Need(api.table_open_packed, "engram_table_open_packed");
    size = rows * I64(group.at("rowLength"));
  } else {
    Need(api.table_open_safetensors, "engram_table_open_safetensors");
    const std::string header = group.at("header");
    const json h = ParseJson(header, "the group's safetensors header");  // §ERR.5
    int64_t end = 0;
    for (const auto& [name, tensor] : h.items()) {
      if (tensor.is_object() && tensor.contains("data_offsets")) end = std::max(end, I64(tensor["data_offsets"][1]));
    }
    size = I64(group.at("dataOffset")) + end;
  }
  Need(api.table_destroy, "engram_table_destroy");
  SparseFile file(size);
  if (!packed) {
    const std::string header = group.at("header");
    std::vector<uint8_t> head(8);
    for (int i = 0; i < 8; ++i) head[static_cast<size_t>(i)] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
    head.insert(head.end(), header.begin(), header.end());
    file.Write(0, head);
  }
  for (const json& rb : test.at("rowBytes")) {
    if (packed) {
      file.Write(I64(rb.at("offset")), HexBytes(rb.at("packed"), "rowBytes.packed"));
    } else {
      file.Write(I64(rb.at("codesOffset")), HexBytes(rb.at("codes"), "rowBytes.codes"));
      file.Write(I64(rb.at("scalesOffset")), HexBytes(rb.at("scales"), "rowBytes.scales"));
    }
  }
  char err[kErrLen] = "";
  engram_table* h = nullptr;
  if (packed) {
    h = api.table_open_packed(file.path().c_str(), head_dim, err, sizeof err);
  } else {
    std::string prefix = group.at("tensors").at("weight");
    if (prefix.size() > 7 && prefix.substr(prefix.size() - 7) == ".weight") prefix.resize(prefix.size() - 7);
    h = api.table_open_safetensors(file.path().c_str(), prefix.c_str(), err, sizeof err);
  }
  if (h == nullptr) throw Refused{err};
  Table table(api, h);
  const auto ids = test.at("rowIds").get<std::vector<int64_t>>();
  return {{"rows", Bf16Rows(Lookup(api, table, ids, static_cast<size_t>(head_dim)), static_cast<size_t>(head_dim))}};
}

// §STO.7 world ranks' partial lookups, then the library's all_reduce.
json RowShard(const Api& api, const json& group, const json& test) {
  Need(api.table_row_shard_lookup, "engram_table_row_shard_lookup");
  Need(api.shard_reduce, "engram_shard_reduce");
  auto table = Table::Synthetic(api, group.at("table"));
  const size_t d = Count(group.at("table").at("headDim"));
  const int32_t world = group.at("world");
  const auto ids = test.at("rowIds").get<std::vector<int64_t>>();
  const size_t count = ids.size() * d;
  std::vector<uint16_t> partials(static_cast<size_t>(world) * count), out(count);
  char err[kErrLen] = "";
  for (int32_t r = 0; r < world; ++r) {
    if (api.table_row_shard_lookup(table->get(), r, world, ids.data(), ids.size(), partials.data() + static_cast<size_t>(r) * count,
                                   count, err, sizeof err) != 0) {
      throw Refused{"rank " + std::to_string(r) + ": " + err};
    }
  }
  if (api.shard_reduce(partials.data(), world, count, out.data(), err, sizeof err) != 0) throw Refused{err};
  return {{"rows", Bf16Rows(out, d)}};
}

// §STO.8 each rank's columns of every position, gathered in rank order.
json HeadShard(const Api& api, const json& group, const json& test) {
  Need(api.table_head_shard_lookup, "engram_table_head_shard_lookup");
  auto table = Table::Synthetic(api, group.at("table"));
  const size_t d = Count(group.at("table").at("headDim"));
  const int32_t world = group.at("world"), columns = group.at("columns");
  const auto ids = test.at("rowIds").get<std::vector<int64_t>>();
  if (columns < 1 || ids.size() % static_cast<size_t>(columns) != 0) throw Refused{"rowIds is not [positions][columns]"};
  const size_t positions = ids.size() / static_cast<size_t>(columns);
  std::vector<std::vector<uint16_t>> parts;
  char err[kErrLen] = "";
  for (int32_t r = 0; r < world; ++r) {
    std::vector<uint16_t> part(ids.size() * d);
    size_t written = 0;
    if (api.table_head_shard_lookup(table->get(), r, world, columns, ids.data(), ids.size(), part.data(), part.size(),
                                    &written, err, sizeof err) != 0) {
      throw Refused{"rank " + std::to_string(r) + ": " + err};
    }
    part.resize(std::min(written, part.size()));
    parts.push_back(std::move(part));
  }
  // The all_gather: position by position, the ranks' columns in rank order.
  std::vector<uint16_t> out;
  for (size_t p = 0; p < positions; ++p) {
    for (const auto& part : parts) {
      const size_t per_position = part.size() / positions;
      out.insert(out.end(), part.begin() + static_cast<std::ptrdiff_t>(p * per_position),
                 part.begin() + static_cast<std::ptrdiff_t>((p + 1) * per_position));
    }
  }
  return {{"rows", Bf16Rows(out, d)}};
}

}  // namespace

// §STO.11 fp8_decode, table_lookup, tp_shard.
json StorageOutputs(const Api& api, const std::string& type, const json& group, const json& test) {
  char err[kErrLen] = "";
  auto decode = [&](uint8_t code, uint8_t scale) {
    Need(api.decode_element, "engram_decode_element");
    uint16_t bits = 0;
    if (api.decode_element(code, scale, &bits, err, sizeof err) != 0) throw Refused{err};
    return bits;
  };
  auto bf16_as_f32 = [](uint16_t bits) {  // exact: bf16 is the top half of a float32
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return F32Hex(f);
  };
  if (type == "E4M3DecodeTest") {
    // The code's value times 2^0 (scale 127): exact in bf16 (3 mantissa bits).
    return {{"f32Bits", bf16_as_f32(decode(test.at("code").get<uint8_t>(), 127))}};
  }
  if (type == "E8M0DecodeTest") {
    // 1.0 (code 0x38) times 2^(s-127): a power of two, exact in bf16.
    return {{"f32Bits", bf16_as_f32(decode(0x38, test.at("scale").get<uint8_t>()))}};
  }
  if (type == "ElementDecodeTest") {
    std::vector<uint16_t> v(256);
    for (int c = 0; c < 256; ++c) v[static_cast<size_t>(c)] = decode(static_cast<uint8_t>(c), test.at("scale").get<uint8_t>());
    return {{"bf16", HexOfU16(v)}};
  }
  if (type == "SyntheticLookupTest") {
    auto table = Table::Synthetic(api, group.at("table"));
    const size_t d = Count(group.at("table").at("headDim"));
    return {{"rows", Bf16Rows(Lookup(api, *table, test.at("rowIds").get<std::vector<int64_t>>(), d), d)}};
  }
  if (type == "SafetensorsLookupTest" || type == "PackedLookupTest") return BytesLookup(api, type, group, test);
  if (type == "FloatLookupTest") {
    Need(api.float_table_lookup, "engram_float_table_lookup");
    const json& t = group.at("table");
    if (t.at("layout") != "synthetic-float") throw Unsupported{"table layout " + t.at("layout").dump()};
    const auto ids = test.at("rowIds").get<std::vector<int64_t>>();
    const size_t w = Count(t.at("width"));
    std::vector<float> out(ids.size() * w);
    if (api.float_table_lookup(U64(t.at("seed")), I64(t.at("rows")), static_cast<int64_t>(w), ids.data(),
                               ids.size(), out.data(), out.size(), err, sizeof err) != 0) {
      throw Refused{err};
    }
    json rows = json::array();
    for (size_t i = 0; i < ids.size(); ++i) {
      std::string row;
      for (size_t j = 0; j < w; ++j) row += F32Hex(out[i * w + j]);
      rows.push_back(row);
    }
    return {{"rows", rows}};
  }
  if (type == "RowShardTest") return RowShard(api, group, test);
  if (type == "HeadShardTest") return HeadShard(api, group, test);
  throw Unsupported{"test type " + type};
}

}  // namespace engram::host
