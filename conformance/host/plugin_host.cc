// `engram plugin-host --lib PATH`: serves the JSON-lines protocol (§CONF.2)
// for a shared library that implements the C ABI (§CONF.3). The runner starts
// it as a child process, so a crash in the library is a reported failure.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "base/error.h"
#include "base/hex.h"
#include "base/sha256.h"
#include "conformance/cli/common.h"
#include "conformance/runner/watched_json.h"
#include "engram/conformance.h"
#include "reference/input_files.h"
#include "reference/fusion.h"
#include "reference/storage.h"
#include "reference/token_map.h"
#include "vectors/accumulate.h"

namespace engram::cli {
namespace {

using json = nlohmann::json;

// The library's entry points; a null pointer means "not implemented".
struct Api {
  decltype(&engram_conformance_info) info = nullptr;
  decltype(&engram_bounded_integers) bounded_integers = nullptr;
  decltype(&engram_multipliers) multipliers = nullptr;
  decltype(&engram_layout_create) layout_create = nullptr;
  decltype(&engram_layout_destroy) layout_destroy = nullptr;
  decltype(&engram_layout_layer_count) layout_layer_count = nullptr;
  decltype(&engram_layout_max_ngram) layout_max_ngram = nullptr;
  decltype(&engram_layout_columns) layout_columns = nullptr;
  decltype(&engram_layout_layer) layout_layer = nullptr;
  decltype(&engram_layout_fingerprint) layout_fingerprint = nullptr;
  decltype(&engram_hasher_create) hasher_create = nullptr;
  decltype(&engram_hasher_fork) hasher_fork = nullptr;
  decltype(&engram_hasher_destroy) hasher_destroy = nullptr;
  decltype(&engram_hasher_append) hasher_append = nullptr;
  decltype(&engram_hasher_rollback) hasher_rollback = nullptr;
  decltype(&engram_hasher_position) hasher_position = nullptr;
  decltype(&engram_hasher_history) hasher_history = nullptr;
  decltype(&engram_hasher_import) hasher_import = nullptr;
  decltype(&engram_decode_element) decode_element = nullptr;
  decltype(&engram_contract_json) contract_json = nullptr;
  // ABI 1.1: tables, token map, fusion.
  decltype(&engram_table_synthetic) table_synthetic = nullptr;
  decltype(&engram_table_open_safetensors) table_open_safetensors = nullptr;
  decltype(&engram_table_open_packed) table_open_packed = nullptr;
  decltype(&engram_table_destroy) table_destroy = nullptr;
  decltype(&engram_table_lookup) table_lookup = nullptr;
  decltype(&engram_table_row_shard_lookup) table_row_shard_lookup = nullptr;
  decltype(&engram_shard_reduce) shard_reduce = nullptr;
  decltype(&engram_table_head_shard_lookup) table_head_shard_lookup = nullptr;
  decltype(&engram_float_table_lookup) float_table_lookup = nullptr;
  decltype(&engram_token_map_build) token_map_build = nullptr;
  decltype(&engram_token_map_destroy) token_map_destroy = nullptr;
  decltype(&engram_token_map_tokens) token_map_tokens = nullptr;
  decltype(&engram_token_map_compressed_size) token_map_compressed_size = nullptr;
  decltype(&engram_token_map_ids) token_map_ids = nullptr;
  decltype(&engram_token_map_check) token_map_check = nullptr;
  decltype(&engram_token_map_key) token_map_key = nullptr;
  decltype(&engram_token_map_compress) token_map_compress = nullptr;
  decltype(&engram_gate) gate = nullptr;
  decltype(&engram_v41_gate) v41_gate = nullptr;
  decltype(&engram_wkv_bf16) wkv_bf16 = nullptr;
  decltype(&engram_wkv_fp8) wkv_fp8 = nullptr;
  decltype(&engram_demo_gate) demo_gate = nullptr;
  decltype(&engram_short_conv) short_conv = nullptr;
  decltype(&engram_forward_v41) forward_v41 = nullptr;
  decltype(&engram_forward_demo) forward_demo = nullptr;

  bool HasLayout() const {
    return layout_create && layout_destroy && layout_layer_count && layout_max_ngram && layout_columns && layout_layer;
  }
  bool HasHasher() const {
    return HasLayout() && hasher_create && hasher_destroy && hasher_append && hasher_position && hasher_history;
  }
};

template <typename F>
void Bind(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
}

Api LoadApi(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) throw Error(path + ": cannot load: " + dlerror());
  Api a;
  Bind(lib, "engram_conformance_info", a.info);
  if (a.info == nullptr) throw Error(path + ": does not export engram_conformance_info (required, see engram/conformance.h)");
  Bind(lib, "engram_bounded_integers", a.bounded_integers);
  Bind(lib, "engram_multipliers", a.multipliers);
  Bind(lib, "engram_layout_create", a.layout_create);
  Bind(lib, "engram_layout_destroy", a.layout_destroy);
  Bind(lib, "engram_layout_layer_count", a.layout_layer_count);
  Bind(lib, "engram_layout_max_ngram", a.layout_max_ngram);
  Bind(lib, "engram_layout_columns", a.layout_columns);
  Bind(lib, "engram_layout_layer", a.layout_layer);
  Bind(lib, "engram_layout_fingerprint", a.layout_fingerprint);
  Bind(lib, "engram_hasher_create", a.hasher_create);
  Bind(lib, "engram_hasher_fork", a.hasher_fork);
  Bind(lib, "engram_hasher_destroy", a.hasher_destroy);
  Bind(lib, "engram_hasher_append", a.hasher_append);
  Bind(lib, "engram_hasher_rollback", a.hasher_rollback);
  Bind(lib, "engram_hasher_position", a.hasher_position);
  Bind(lib, "engram_hasher_history", a.hasher_history);
  Bind(lib, "engram_hasher_import", a.hasher_import);
  Bind(lib, "engram_decode_element", a.decode_element);
  Bind(lib, "engram_contract_json", a.contract_json);
  Bind(lib, "engram_table_synthetic", a.table_synthetic);
  Bind(lib, "engram_table_open_safetensors", a.table_open_safetensors);
  Bind(lib, "engram_table_open_packed", a.table_open_packed);
  Bind(lib, "engram_table_destroy", a.table_destroy);
  Bind(lib, "engram_table_lookup", a.table_lookup);
  Bind(lib, "engram_table_row_shard_lookup", a.table_row_shard_lookup);
  Bind(lib, "engram_shard_reduce", a.shard_reduce);
  Bind(lib, "engram_table_head_shard_lookup", a.table_head_shard_lookup);
  Bind(lib, "engram_float_table_lookup", a.float_table_lookup);
  Bind(lib, "engram_token_map_build", a.token_map_build);
  Bind(lib, "engram_token_map_destroy", a.token_map_destroy);
  Bind(lib, "engram_token_map_tokens", a.token_map_tokens);
  Bind(lib, "engram_token_map_compressed_size", a.token_map_compressed_size);
  Bind(lib, "engram_token_map_ids", a.token_map_ids);
  Bind(lib, "engram_token_map_check", a.token_map_check);
  Bind(lib, "engram_token_map_key", a.token_map_key);
  Bind(lib, "engram_token_map_compress", a.token_map_compress);
  Bind(lib, "engram_gate", a.gate);
  Bind(lib, "engram_v41_gate", a.v41_gate);
  Bind(lib, "engram_wkv_bf16", a.wkv_bf16);
  Bind(lib, "engram_wkv_fp8", a.wkv_fp8);
  Bind(lib, "engram_demo_gate", a.demo_gate);
  Bind(lib, "engram_short_conv", a.short_conv);
  Bind(lib, "engram_forward_v41", a.forward_v41);
  Bind(lib, "engram_forward_demo", a.forward_demo);
  return a;
}

// A refusal by the library, carried to the protocol as {"refused": ...}.
struct Refused {
  std::string message;
};
// §CONF.4, §VEC.4 An integer of a request, as the C type it is passed as,
// by value. nlohmann's get<int64_t>() of 2^63 gives -2^63 and get<uint64_t>()
// of -1 gives 2^64 - 1 (both modulo 2^64): another, valid input would reach
// the library (a MultipliersTest seed of 2^63 read as -2^63). A value outside
// the type is refused, naming it.
int64_t I64(const json& v) {
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return v.get<int64_t>();
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  throw Refused{"the value " + v.dump() + " is not an integer in [-2^63, 2^63)"};
}
uint64_t U64(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  throw Refused{"the value " + v.dump() + " is not an integer in [0, 2^64)"};
}
int32_t I32(const json& v) {
  const int64_t x = I64(v);
  if (x < INT32_MIN || x > INT32_MAX) throw Refused{"the value " + v.dump() + " is not an integer in [-2^31, 2^31)"};
  return static_cast<int32_t>(x);
}
// A count or an index: non-negative, and below 2^31 (no test of any suite
// comes near; a larger one would only be an allocation that fails).
size_t Count(const json& v) {
  const int64_t x = I64(v);
  if (x < 0 || x > INT32_MAX) throw Refused{"the value " + v.dump() + " is not a count in [0, 2^31)"};
  return static_cast<size_t>(x);
}

// An operation the library does not export, carried as {"unsupported": ...}.
struct Unsupported {
  std::string what;
};

class Layout {
 public:
  Layout(const Api& api, const json& group) : api_(api) {
    if (!api.HasLayout()) throw Unsupported{"engram_layout_* entry points"};
    char err[1024] = "";
    const std::string profile = group.value("profile", "");
    handle_ = api.layout_create(group.at("config").dump().c_str(), profile.empty() ? nullptr : profile.c_str(),
                                I64(group.at("compressedVocabSize")), I64(group.at("compressedPad")),
                                err, sizeof(err));
    if (handle_ == nullptr) throw Refused{err};
  }
  ~Layout() { api_.layout_destroy(handle_); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;

  engram_layout* get() const { return handle_; }
  size_t layers() const { return static_cast<size_t>(api_.layout_layer_count(handle_)); }
  size_t columns() const { return static_cast<size_t>(api_.layout_columns(handle_)); }
  size_t max_ngram() const { return static_cast<size_t>(api_.layout_max_ngram(handle_)); }
  std::string fingerprint() const {
    if (api_.layout_fingerprint == nullptr) return "";
    char out[65] = "";
    api_.layout_fingerprint(handle_, out);
    return out;
  }

  // §VEC.6 the layers as the vectors write them.
  json LayersJson() const {
    json out = json::array();
    for (size_t i = 0; i < layers(); ++i) {
      int64_t id = 0, rows = 0;
      std::vector<int64_t> m(max_ngram()), p(columns()), o(columns());
      if (api_.layout_layer(handle_, static_cast<int32_t>(i), &id, m.data(), p.data(), o.data(), &rows) != 0) {
        throw Refused{"engram_layout_layer refused index " + std::to_string(i)};
      }
      const size_t heads = columns() / (max_ngram() - 1);
      json primes = json::array();
      for (size_t order = 0; order + 1 < max_ngram(); ++order) {
        primes.push_back(std::vector<int64_t>(p.begin() + static_cast<std::ptrdiff_t>(order * heads),
                                              p.begin() + static_cast<std::ptrdiff_t>((order + 1) * heads)));
      }
      out.push_back({{"layerId", id}, {"multipliers", m}, {"primes", primes}, {"offsets", o}, {"numEmbeddings", rows}});
    }
    return out;
  }

 private:
  const Api& api_;
  engram_layout* handle_ = nullptr;
};

class Hasher {
 public:
  Hasher(const Api& api, const Layout& layout, size_t capacity) : api_(api), layout_(layout) {
    char err[1024] = "";
    handle_ = api.hasher_create(layout.get(), capacity, err, sizeof(err));
    if (handle_ == nullptr) throw Refused{err};
  }
  Hasher(const Api& api, const Layout& layout, engram_hasher* handle) : api_(api), layout_(layout), handle_(handle) {}
  ~Hasher() { api_.hasher_destroy(handle_); }
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  std::unique_ptr<Hasher> Fork() const {
    if (api_.hasher_fork == nullptr) throw Unsupported{"engram_hasher_fork"};
    engram_hasher* copy = api_.hasher_fork(handle_);
    if (copy == nullptr) throw Refused{"engram_hasher_fork returned no state (NULL)"};
    return std::make_unique<Hasher>(api_, layout_, copy);
  }
  // Rows nested [pos][layer][col].
  json Append(const std::vector<int64_t>& ids) {
    const size_t layers = layout_.layers(), cols = layout_.columns();
    std::vector<int64_t> rows(ids.size() * layers * cols);
    char err[1024] = "";
    if (api_.hasher_append(handle_, ids.data(), ids.size(), rows.data(), err, sizeof(err)) != 0) throw Refused{err};
    json out = json::array();
    for (size_t t = 0; t < ids.size(); ++t) {
      json per_layer = json::array();
      for (size_t l = 0; l < layers; ++l) {
        const auto begin = rows.begin() + static_cast<std::ptrdiff_t>((t * layers + l) * cols);
        per_layer.push_back(std::vector<int64_t>(begin, begin + static_cast<std::ptrdiff_t>(cols)));
      }
      out.push_back(per_layer);
    }
    return out;
  }
  void AppendFlat(const std::vector<int64_t>& ids, std::vector<int64_t>& rows) {
    rows.resize(ids.size() * layout_.layers() * layout_.columns());
    char err[1024] = "";
    if (api_.hasher_append(handle_, ids.data(), ids.size(), rows.data(), err, sizeof(err)) != 0) throw Refused{err};
  }
  void Rollback(size_t k) {
    if (api_.hasher_rollback == nullptr) throw Unsupported{"engram_hasher_rollback"};
    char err[1024] = "";
    if (api_.hasher_rollback(handle_, k, err, sizeof(err)) != 0) throw Refused{err};
  }
  void Import(const json& history, const std::string& fingerprint) {
    if (api_.hasher_import == nullptr) throw Unsupported{"engram_hasher_import"};
    const std::vector<int64_t> ids = history.at("history").get<std::vector<int64_t>>();
    char err[1024] = "";
    if (api_.hasher_import(handle_, I64(history.at("position")), ids.data(), ids.size(), fingerprint.c_str(), err,
                           sizeof(err)) != 0) {
      throw Refused{err};
    }
  }
  int64_t position() const { return api_.hasher_position(handle_); }
  std::vector<int64_t> history() const {
    std::vector<int64_t> ids(layout_.max_ngram());
    ids.resize(api_.hasher_history(handle_, ids.data()));
    return ids;
  }

 private:
  const Api& api_;
  const Layout& layout_;
  engram_hasher* handle_ = nullptr;
};

// ---------------------------------------------------------------- ABI 1.1 mappings

// Every call below hands the library an `err` buffer of this size.
constexpr size_t kErrLen = 1024;

template <typename F>
F Need(F fn, const char* name) {
  if (fn == nullptr) throw Unsupported{name};
  return fn;
}

// §STO.11 text forms: bf16 rows as 4 hex digits per element, float32 as 8, bytes as 2.
std::string F32Hex(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return HexOfU32(u);
}

std::vector<uint8_t> HexBytes(const std::string& hex, const std::string& field) {
  if (hex.size() % 2 != 0) throw Error(field + ": odd number of hex digits");
  std::vector<uint8_t> out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// bf16 rows as the vectors write them: one string per row of `width` values.
json Bf16Rows(const std::vector<uint16_t>& v, size_t width) {
  json out = json::array();
  for (size_t i = 0; i + width <= v.size() && width > 0; i += width) {
    out.push_back(HexOfU16(std::span<const uint16_t>(v.data() + i, width)));
  }
  return out;
}

// §FUS.9 floats as Python float.hex() strings.
json HexFloats(const double* v, size_t n) {
  json out = json::array();
  for (size_t i = 0; i < n; ++i) out.push_back(FloatHex(v[i]));
  return out;
}

std::vector<double> ReadFloats(const json& a, const std::string& field) {
  std::vector<double> out;
  for (const json& s : a) out.push_back(s.is_string() ? ParseFloat(s.get<std::string>(), field) : s.get<double>());
  return out;
}

double ReadFloat(const json& s, const std::string& field) {
  return s.is_string() ? ParseFloat(s.get<std::string>(), field) : s.get<double>();
}

engram_bf16_span_t Span(const std::vector<uint16_t>& v) { return {v.data(), v.size()}; }
engram_u8_span_t Span(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }
engram_f64_span_t Span(const std::vector<double>& v) { return {v.data(), v.size()}; }

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

// A sparse file of the table's real size holding only the test's bytes.
// §CONF.3 It has no name in $TMPDIR for longer than it takes to create it:
// it is unlinked at once and handed to the library as /proc/self/fd/N (which
// opens the same file), so that nothing is left behind however the host ends
// (a library that crashes or hangs in engram_table_open_*, the runner's
// SIGKILL at a timeout). Without /proc, the named file is removed when done.
class SparseFile {
 public:
  explicit SparseFile(int64_t size) {
    std::string templ = (std::filesystem::temp_directory_path() / "engram-plugin-host-XXXXXX").string();
    fd_ = ::mkostemp(templ.data(), O_CLOEXEC);
    if (fd_ < 0) throw Unsupported{"cannot create a temporary file (" + templ + "): " + std::strerror(errno)};
    path_ = "/proc/self/fd/" + std::to_string(fd_);
    const int probe = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (probe >= 0) {
      ::close(probe);
      ::unlink(templ.c_str());
    } else {
      path_ = templ;
      named_ = true;
    }
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      const std::string why = std::strerror(errno);
      Remove();
      throw Unsupported{"cannot make a sparse file of " + std::to_string(size) + " bytes (" + templ + "): " + why};
    }
  }
  ~SparseFile() { Remove(); }
  SparseFile(const SparseFile&) = delete;
  SparseFile& operator=(const SparseFile&) = delete;

  void Write(int64_t offset, const std::vector<uint8_t>& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset) + static_cast<off_t>(done));
      if (n <= 0) throw Unsupported{"cannot write " + path_ + ": " + std::strerror(errno)};
      done += static_cast<size_t>(n);
    }
  }
  // The path the library opens (the descriptor stays open until then).
  const std::string& path() const { return path_; }

 private:
  void Remove() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (named_) ::unlink(path_.c_str());
    named_ = false;
  }

  std::string path_;
  int fd_ = -1;
  bool named_ = false;
};

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

// §HASH.1 TokenLookupTest: the library's map and its compress entry point.
json TokenLookupOutputs(const Api& api, const json& group, const json& test) {
  Need(api.token_map_build, "engram_token_map_build");
  Need(api.token_map_destroy, "engram_token_map_destroy");
  Need(api.token_map_compress, "engram_token_map_compress");
  const std::string text = group.at("tokenizerJson");
  char err[kErrLen] = "";
  engram_token_map* raw_map = api.token_map_build(text.data(), text.size(), err, sizeof err);
  if (raw_map == nullptr) throw Refused{err};
  std::unique_ptr<engram_token_map, decltype(api.token_map_destroy)> m(raw_map, api.token_map_destroy);
  const std::vector<int64_t> raw = test.at("rawIds").get<std::vector<int64_t>>();
  std::vector<uint8_t> mask;
  if (test.contains("mask")) {
    for (const json& f : test["mask"]) mask.push_back(f.get<bool>() ? 1 : 0);
    // The ABI passes one mask byte per id: a mask of another length is this host's to refuse (§HASH.1).
    if (mask.size() != raw.size()) {
      throw Refused{"mask: " + std::to_string(mask.size()) + " flags for " + std::to_string(raw.size()) + " ids"};
    }
  }
  std::vector<int64_t> out(raw.size());
  const std::string profile = group.at("profile");
  if (api.token_map_compress(m.get(), raw.data(), test.contains("mask") ? mask.data() : nullptr, raw.size(),
                             profile.c_str(), out.data(), err, sizeof err) != 0) {
    throw Refused{err};
  }
  return {{"ids", out}};
}

// §TOK TokenMapTest.
json TokenMapOutputs(const Api& api, const json& group, const json& test) {
  Need(api.token_map_build, "engram_token_map_build");
  Need(api.token_map_destroy, "engram_token_map_destroy");
  Need(api.token_map_tokens, "engram_token_map_tokens");
  Need(api.token_map_compressed_size, "engram_token_map_compressed_size");
  Need(api.token_map_ids, "engram_token_map_ids");
  const std::string text = group.at("tokenizerJson");
  char err[kErrLen] = "";
  engram_token_map* raw = api.token_map_build(text.data(), text.size(), err, sizeof err);
  if (raw == nullptr) throw Refused{err};
  std::unique_ptr<engram_token_map, decltype(api.token_map_destroy)> m(raw, api.token_map_destroy);
  const int64_t tokens = api.token_map_tokens(m.get());
  if (tokens < 0) throw Refused{"engram_token_map_tokens returned " + std::to_string(tokens)};
  std::vector<int64_t> map(static_cast<size_t>(tokens));
  api.token_map_ids(m.get(), map.data());
  json out;
  if (test.contains("padId") || test.contains("engramCompressedVocabSize")) {
    Need(api.token_map_check, "engram_token_map_check");
    int64_t pad = 0;
    if (api.token_map_check(m.get(), test.value("padId", int64_t{0}), test.value("engramCompressedVocabSize", int64_t{-1}),
                            &pad, err, sizeof err) != 0) {
      throw Refused{err};
    }
    if (test.contains("padId")) out["compressedPad"] = pad;
  }
  // §TOK.6 the digest of the library's map: int32 little-endian.
  std::string bytes;
  for (int64_t v : map) {
    const auto u = static_cast<uint32_t>(v);
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
  }
  out["tokens"] = tokens;
  out["compressedSize"] = api.token_map_compressed_size(m.get());
  out["sha256"] = Sha256Hex(bytes);
  out["map"] = map;
  if (api.token_map_key != nullptr) {
    json inter = json::array();
    for (int64_t id = 0; id < tokens; ++id) {
      engram_token_key_t k{};
      if (api.token_map_key(m.get(), id, &k) != 0) throw Refused{"engram_token_map_key refused id " + std::to_string(id)};
      auto str = [](const char* p, size_t n) { return p == nullptr ? std::string() : std::string(p, n); };
      json e = {{"id", id}, {"token", str(k.token, k.token_len)}, {"added", k.added != 0}, {"special", k.special != 0},
                {"text", str(k.text, k.text_len)}, {"replacement", k.replacement != 0}};
      if (k.normalized != nullptr) e["normalized"] = str(k.normalized, k.normalized_len);
      e["keyKind"] = k.key_kind != nullptr ? k.key_kind : "";
      e["key"] = str(k.key, k.key_len);
      e["compressedId"] = map[static_cast<size_t>(id)];
      inter.push_back(e);
    }
    out["intermediate"] = inter;
  }
  return out;
}

// The demo-v1 parameters of a group (§FUS.10) and the arrays they point into.
struct DemoParamsHolder {
  std::vector<double> key_w, key_b, norm1_w, norm2_w, value_w, value_b, conv_norm_w, conv_w;
  engram_demo_params_t p{};

  explicit DemoParamsHolder(const json& g)
      : key_w(ReadFloats(g.at("keyWeight"), "keyWeight")),
        key_b(ReadFloats(g.at("keyBias"), "keyBias")),
        norm1_w(ReadFloats(g.at("norm1Weight"), "norm1Weight")),
        norm2_w(ReadFloats(g.at("norm2Weight"), "norm2Weight")),
        value_w(ReadFloats(g.at("valueWeight"), "valueWeight")),
        value_b(ReadFloats(g.at("valueBias"), "valueBias")),
        conv_norm_w(ReadFloats(g.at("convNormWeight"), "convNormWeight")),
        conv_w(ReadFloats(g.at("convWeight"), "convWeight")) {
    p.hc = g.at("hc");
    p.hidden = g.at("hidden");
    p.in = g.at("in");
    p.kernel = g.at("kernel");
    p.dilation = g.at("dilation");
    p.key_weight = Span(key_w);
    p.key_bias = Span(key_b);
    p.norm1_weight = Span(norm1_w);
    p.norm2_weight = Span(norm2_w);
    p.value_weight = Span(value_w);
    p.value_bias = Span(value_b);
    p.conv_norm_weight = Span(conv_norm_w);
    p.conv_weight = Span(conv_w);
  }
  DemoParamsHolder(const DemoParamsHolder&) = delete;
  DemoParamsHolder& operator=(const DemoParamsHolder&) = delete;
};

json FusionOutputs(const Api& api, const std::string& type, const json& group, const json& test) {
  char err[kErrLen] = "";
  if (type == "GateFunctionTest") {
    Need(api.gate, "engram_gate");
    double gate = 0;
    const std::string profile = group.at("profile");
    if (api.gate(profile.c_str(), ReadFloat(test.at("dot"), "dot"), &gate, err, sizeof err) != 0) throw Refused{err};
    return {{"gate", FloatHex(gate)}};
  }
  if (type == "V41GateTest") {
    Need(api.v41_gate, "engram_v41_gate");
    const size_t dim = group.at("dim"), hc = group.at("hc");
    const auto x = test.at("x").get<std::vector<uint16_t>>(), key = test.at("key").get<std::vector<uint16_t>>(),
               value = test.at("value").get<std::vector<uint16_t>>(), qw = test.at("qWeight").get<std::vector<uint16_t>>(),
               kw = test.at("kWeight").get<std::vector<uint16_t>>();
    std::vector<double> gate(hc);
    std::vector<uint16_t> out(hc * dim);
    if (api.v41_gate(dim, hc, ReadFloat(group.at("eps"), "eps"), Span(x), Span(key), Span(value), Span(qw), Span(kw),
                     test.at("masked").get<bool>() ? 1 : 0, gate.data(), out.data(), err, sizeof err) != 0) {
      throw Refused{err};
    }
    return {{"gate", HexFloats(gate.data(), gate.size())}, {"out", out}};
  }
  if (type == "WkvTest") {
    const auto e = test.at("e").get<std::vector<uint16_t>>();
    const size_t out_features = test.at("outFeatures");
    std::vector<uint16_t> kv(out_features);
    if (test.contains("weight")) {
      Need(api.wkv_bf16, "engram_wkv_bf16");
      const auto w = test.at("weight").get<std::vector<uint16_t>>();
      if (api.wkv_bf16(Span(e), Span(w), out_features, kv.data(), err, sizeof err) != 0) throw Refused{err};
    } else {
      Need(api.wkv_fp8, "engram_wkv_fp8");
      const auto wc = test.at("weightCodes").get<std::vector<uint8_t>>(), ws = test.at("weightScales").get<std::vector<uint8_t>>();
      if (api.wkv_fp8(Span(e), Span(wc), Span(ws), out_features, kv.data(), err, sizeof err) != 0) throw Refused{err};
    }
    return {{"kv", kv}};
  }
  if (type == "DemoGateTest") {
    Need(api.demo_gate, "engram_demo_gate");
    const DemoParamsHolder q(group);
    const std::vector<double> e = ReadFloats(test.at("e"), "e"), hidden = ReadFloats(test.at("hidden"), "hidden");
    std::vector<double> gate(q.p.hc), value(q.p.hc * q.p.hidden);
    if (api.demo_gate(&q.p, Span(e), Span(hidden), gate.data(), value.data(), err, sizeof err) != 0) throw Refused{err};
    return {{"gate", HexFloats(gate.data(), gate.size())}, {"value", HexFloats(value.data(), value.size())}};
  }
  if (type == "ShortConvTest") {
    Need(api.short_conv, "engram_short_conv");
    const DemoParamsHolder q(group);
    const size_t steps = test.at("steps");
    const std::vector<double> value = ReadFloats(test.at("value"), "value");
    std::vector<double> output(steps * q.p.hc * q.p.hidden);
    if (api.short_conv(&q.p, steps, Span(value), output.data(), err, sizeof err) != 0) throw Refused{err};
    return {{"output", HexFloats(output.data(), output.size())}};
  }
  if (type == "EngramForwardTest") {
    const bool v41 = group.at("profile") == "v4.1";
    if (v41 ? api.forward_v41 == nullptr : api.forward_demo == nullptr) {
      throw Unsupported{v41 ? "engram_forward_v41" : "engram_forward_demo"};
    }
    Layout layout(api, group);
    const auto ids = test.at("ids").get<std::vector<int64_t>>();
    const uint64_t seed = group.at("tableSeed");
    if (v41) {
      const auto x = test.at("x").get<std::vector<uint16_t>>(), qw = group.at("qWeight").get<std::vector<uint16_t>>(),
                 kw = group.at("kWeight").get<std::vector<uint16_t>>();
      const auto wc = group.at("wkvWeightCodes").get<std::vector<uint8_t>>(),
                 ws = group.at("wkvWeightScales").get<std::vector<uint8_t>>();
      const engram_v41_fusion_params_t p{Span(qw), Span(kw), Span(wc), Span(ws)};
      std::vector<uint16_t> out(x.size());
      std::vector<double> gate(x.size());  // n·hc <= n·hc·dim values
      size_t gate_count = 0;
      if (api.forward_v41(layout.get(), seed, &p, ids.data(), ids.size(), Span(x), out.data(), gate.data(), gate.size(),
                          &gate_count, err, sizeof err) != 0) {
        throw Refused{err};
      }
      return {{"out", out}, {"gate", HexFloats(gate.data(), std::min(gate_count, gate.size()))}};
    }
    const DemoParamsHolder q(group);
    const std::vector<double> hidden = ReadFloats(test.at("hidden"), "hidden");
    const size_t n = ids.size(), per = q.p.hc * q.p.hidden;
    std::vector<double> output(n * per), after(n * per), gate(n * q.p.hc);
    if (api.forward_demo(layout.get(), seed, &q.p, ids.data(), n, Span(hidden), output.data(), after.data(), gate.data(), err,
                         sizeof err) != 0) {
      throw Refused{err};
    }
    return {{"output", HexFloats(output.data(), output.size())},
            {"hiddenAfter", HexFloats(after.data(), after.size())},
            {"gate", HexFloats(gate.data(), gate.size())}};
  }
  throw Unsupported{"test type " + type};
}

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

json RunTest(const Api& api, const std::string& type, const json& group, const json& test) {
  if (type == "BoundedIntegersTest") {
    if (api.bounded_integers == nullptr) throw Unsupported{"engram_bounded_integers"};
    const json& high = test.at("high");
    // high may be 2^63: pass high - 1, which always fits int64.
    const int64_t high_minus_one = high.is_number_unsigned() && high.get<uint64_t>() == (uint64_t{1} << 63)
                                       ? INT64_MAX
                                       : I64(high) - 1;
    std::vector<int64_t> values(Count(test.at("count")));
    char err[1024] = "";
    if (api.bounded_integers(U64(test.at("seed")), I64(test.at("low")), high_minus_one, values.size(),
                             values.data(), err, sizeof(err)) != 0) {
      throw Refused{err};
    }
    return {{"values", values}};
  }
  if (type == "MultipliersTest") {
    if (api.multipliers == nullptr) throw Unsupported{"engram_multipliers"};
    std::vector<int64_t> m(static_cast<size_t>(std::max(0, I32(test.at("maxNgram")))));
    char err[1024] = "";
    if (api.multipliers(I64(test.at("seed")), I64(test.at("layerId")),
                        I64(test.at("compressedVocabSize")), I32(test.at("maxNgram")), m.data(), err,
                        sizeof(err)) != 0) {
      throw Refused{err};
    }
    return {{"multipliers", m}};
  }
  if (type == "LayoutTest") {
    Layout layout(api, test);
    return {{"layers", layout.LayersJson()}};
  }
  if (type == "HashTest") {
    if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
    Layout layout(api, group);
    Hasher h(api, layout, size_t{0});
    return {{"rows", h.Append(test.at("ids").get<std::vector<int64_t>>())}};
  }
  if (type == "HashStateTest") {
    if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
    Layout layout(api, group);
    const size_t capacity = group.value("rollbackCapacity", size_t{0});
    std::map<std::string, std::unique_ptr<Hasher>> seqs;
    // §VEC.7 A rollback, or a fork from, a name no append has started is
    // refused, naming the step and the name.
    auto named = [&](const std::string& name, size_t index, const std::string& op) -> Hasher& {
      auto it = seqs.find(name);
      if (it == seqs.end()) {
        throw Refused{"steps[" + std::to_string(index) + "] (" + op + "): sequence '" + name + "' was never appended to"};
      }
      return *it->second;
    };
    json steps = test.at("steps");
    size_t index = 0;
    for (json& step : steps) {
      const std::string op = step.at("op");
      const size_t at = index++;
      if (op == "append") {
        auto& h = seqs[step.at("seq").get<std::string>()];
        if (!h) h = std::make_unique<Hasher>(api, layout, capacity);
        step["rows"] = h->Append(step.at("ids").get<std::vector<int64_t>>());
        step["positionAfter"] = h->position();
        step["historyAfter"] = h->history();
      } else if (op == "rollback") {
        Hasher& h = named(step.at("seq").get<std::string>(), at, op);
        h.Rollback(Count(step.at("k")));
        step["positionAfter"] = h.position();
        step["historyAfter"] = h.history();
      } else if (op == "fork") {
        // §VEC.7 A fork onto a name that exists replaces that sequence: the
        // unique_ptr assignment destroys the old state (engram_hasher_destroy),
        // so nothing leaks.
        std::unique_ptr<Hasher> copy = named(step.at("from").get<std::string>(), at, op).Fork();
        seqs[step.at("to").get<std::string>()] = std::move(copy);
      } else {
        throw Refused{"steps[" + std::to_string(at) + "]: unknown op " + json(op).dump()};
      }
    }
    return {{"steps", steps}};
  }
  if (type == "HashHandoffTest") {
    if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
    Layout layout(api, group);
    const std::string fingerprint = group.value("layoutFingerprint", layout.fingerprint());
    auto segment = [&](json seg, const std::vector<int64_t>& ids) {
      Hasher h(api, layout, size_t{0});
      h.Import(seg.at("historyIn"), fingerprint);
      const size_t from = Count(seg.at("from")), to = Count(seg.at("to"));
      seg["rows"] = h.Append(std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(from),
                                                  ids.begin() + static_cast<std::ptrdiff_t>(to)));
      seg["historyOut"] = {{"position", h.position()}, {"history", h.history()}};
      return seg;
    };
    if (test.contains("historyIn")) {  // an invalid test: the import must be refused
      Hasher h(api, layout, size_t{0});
      h.Import(test["historyIn"], test["historyIn"].value("layoutFingerprint", fingerprint));
      return {{"imported", true}};
    }
    if (test.contains("segments")) {
      const std::vector<int64_t> ids = test.at("ids").get<std::vector<int64_t>>();
      json segs = json::array();
      for (const json& seg : test.at("segments")) segs.push_back(segment(seg, ids));
      return {{"segments", segs}};
    }
    const auto seqs = test.at("sequences").get<std::vector<std::vector<int64_t>>>();
    json batches = json::array();
    for (const json& micro : test.at("microBatches")) {
      json out = json::array();
      for (const json& seg : micro) out.push_back(segment(seg, seqs.at(Count(seg.at("sequence")))));
      batches.push_back(out);
    }
    return {{"microBatches", batches}};
  }
  if (type == "E4M3DecodeTest" || type == "E8M0DecodeTest" || type == "ElementDecodeTest" || type == "SyntheticLookupTest" ||
      type == "SafetensorsLookupTest" || type == "PackedLookupTest" || type == "FloatLookupTest" || type == "RowShardTest" ||
      type == "HeadShardTest") {
    return StorageOutputs(api, type, group, test);
  }
  if (type == "TokenMapTest") return TokenMapOutputs(api, group, test);
  if (type == "TokenLookupTest") return TokenLookupOutputs(api, group, test);
  if (type == "GateFunctionTest" || type == "V41GateTest" || type == "WkvTest" || type == "DemoGateTest" ||
      type == "ShortConvTest" || type == "EngramForwardTest") {
    return FusionOutputs(api, type, group, test);
  }
  throw Unsupported{"test type " + type + " (this plug-in host does not map it to the C ABI)"};
}

// §CONF.2 The shape of a request, checked before anything is read from it:
// an empty string when it is well formed, else what is wrong.
std::string RequestProblem(const json& request) {
  if (!request.is_object()) return std::string("the request is a JSON ") + request.type_name() + ", not an object";
  if (!request.contains("op") || !request["op"].is_string()) return "key 'op': missing or not a string";
  const std::string op = request["op"];
  auto need = [&](const char* key, bool (json::*is)() const noexcept, const char* type) -> std::string {
    if (!request.contains(key) || !(request[key].*is)()) return "op " + op + ": key '" + key + "': missing or not " + type;
    return "";
  };
  std::string p;
  if (op == "test") {
    if (!(p = need("type", &json::is_string, "a string")).empty()) return p;
    if (!(p = need("group", &json::is_object, "an object")).empty()) return p;
    if (!(p = need("test", &json::is_object, "an object")).empty()) return p;
  }
  if (op == "accumulate") {
    if (!(p = need("group", &json::is_object, "an object")).empty()) return p;
    if (!(p = need("n", &json::is_number_integer, "an integer")).empty()) return p;
    if (!(p = need("seed", &json::is_number_integer, "an integer")).empty()) return p;
  }
  return "";
}

// §CONF.3 engram_conformance_info() as the §CONF.2 hello answer. A library
// that cannot be served (another ABI version, no info, strings that are not
// UTF-8 or lists with empty names) is answered with `error`, which ends the
// run before any test (exit 2): its claims cannot be trusted.
json HelloAnswer(const Api& api) {
  const engram_conformance_info_t* info = api.info();
  auto refuse = [](const std::string& why) {
    return json{{"protocol", 1}, {"name", "?"}, {"suites", json::array()}, {"profiles", json::array()},
                {"error", "engram_conformance_info(): " + why}};
  };
  if (info == nullptr) return refuse("returned NULL");
  if (info->abi_version != ENGRAM_CONFORMANCE_ABI_VERSION) {
    return refuse("ABI version " + std::to_string(info->abi_version) + " is not " +
                  std::to_string(ENGRAM_CONFORMANCE_ABI_VERSION) + " (this host speaks engram/conformance.h version " +
                  std::to_string(ENGRAM_CONFORMANCE_ABI_VERSION) + ")");
  }
  // Each string must be UTF-8: it is passed on as JSON text.
  std::string problem;
  auto text = [&](const char* field, const char* s, bool required) {
    if (s == nullptr || *s == '\0') {
      if (required && problem.empty()) problem = std::string(field) + " is empty";
      return std::string();
    }
    try {
      (void)json(std::string(s)).dump();  // strict: throws on a byte sequence that is not UTF-8
    } catch (const json::exception&) {
      if (problem.empty()) problem = std::string(field) + " is not valid UTF-8: " + json(std::string(s)).dump(-1, ' ', true, json::error_handler_t::replace);
    }
    return std::string(s);
  };
  auto list = [&](const char* field, const char* s) {
    json out = json::array();
    const std::string all = text(field, s, true);
    size_t at = 0;
    while (problem.empty() && at <= all.size()) {
      const size_t comma = std::min(all.find(',', at), all.size());
      const std::string item = all.substr(at, comma - at);
      if (item.empty() || item.find_first_of(" \t") != std::string::npos) {
        problem = std::string(field) + " \"" + all + "\" is not a comma-separated list of names";
      }
      out.push_back(item);
      at = comma + 1;
    }
    return out;
  };
  json hello = {{"protocol", 1},
                {"name", text("name", info->name, true)},
                {"version", text("version", info->version, false)},
                {"suites", list("suites", info->suites)},
                {"profiles", list("profiles", info->profiles)},
                {"features", json::array({"c-abi"})}};
  if (!problem.empty()) {
    // The name often says why a library claims nothing (e.g. a GPU plug-in on a machine without one).
    // (Bytes that are not UTF-8 are replaced when the answer is written.)
    return refuse(problem + " (the library's name: \"" + std::string(info->name ? info->name : "?") + "\")");
  }
  return hello;
}

json Handle(const Api& api, const json& request) {
  if (const std::string problem = RequestProblem(request); !problem.empty()) {
    return {{"refused", "plugin-host: " + problem}};
  }
  const std::string op = request["op"];
  try {
    if (op == "hello") return HelloAnswer(api);
    if (op == "contract") {
      if (api.contract_json != nullptr) {
        std::vector<char> out(1 << 22);
        char err[1024] = "";
        if (api.contract_json(out.data(), out.size(), err, sizeof(err)) == 0) {
          out.back() = '\0';  // a library that filled the whole buffer still ends here
          try {
            return {{"contract", ParseJson(out.data(), "engram_contract_json")}};  // §ERR.5 strict
          } catch (const Error& e) {
            return {{"refused", std::string("engram_contract_json wrote something that is not JSON: ") + e.what()}};
          }
        }
      }
      Layout layout(api, request);
      return {{"contract", nullptr}, {"layers", layout.LayersJson()}};
    }
    if (op == "test") {
      return {{"outputs", RunTest(api, request.at("type").get<std::string>(), request.at("group"), request.at("test"))}};
    }
    if (op == "accumulate") {
      if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
      const json& group = request.at("group");
      Layout layout(api, group);
      Hasher h(api, layout, size_t{0});
      std::vector<int64_t> rows;
      const std::string digest = conform::AccumulateHash(
          group.at("profile").get<std::string>() == "v4.1", I64(group.at("compressedVocabSize")),
          U64(request.at("seed")), I64(request.at("n")),
          [&](const std::vector<int64_t>& ids, std::vector<int64_t>& out) { h.AppendFlat(ids, out); });
      return {{"sha256", digest}};
    }
    if (op == "bye") return {{"bye", true}};
    return {{"unsupported", "op " + op}};
  } catch (const Refused& r) {
    return {{"refused", r.message}};
  } catch (const Unsupported& u) {
    return {{"unsupported", u.what}};
  } catch (const std::exception& e) {
    // Malformed requests are the runner's bug, but must not kill the host.
    return {{"refused", std::string("plugin-host: ") + e.what()}};
  }
}

}  // namespace

void AddPluginHostCommand(CLI::App& app) {
  auto lib = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("plugin-host", "Serve the JSON-lines conformance protocol for a C-ABI library (§CONF.3)");
  cmd->add_option("--lib", *lib, "Shared library implementing engram/conformance.h")->required();
  cmd->callback([lib] {
    // §CONF.3 The protocol keeps descriptors of its own: a library that
    // prints to stdout (or reads stdin) must not corrupt the JSON-lines
    // stream. Before the library is loaded (its constructors may print), the
    // protocol's ends are moved to new descriptors, stdout becomes stderr and
    // stdin /dev/null.
    const int protocol_in = ::dup(0), protocol_out = ::dup(1);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (protocol_in < 0 || protocol_out < 0 || null_fd < 0 || ::dup2(2, 1) < 0 || ::dup2(null_fd, 0) < 0) {
      throw Error(std::string("plugin-host: cannot set up the protocol descriptors: ") + std::strerror(errno));
    }
    ::close(null_fd);
    ::fcntl(protocol_in, F_SETFD, FD_CLOEXEC);
    ::fcntl(protocol_out, F_SETFD, FD_CLOEXEC);
    FILE* in = ::fdopen(protocol_in, "r");
    FILE* out = ::fdopen(protocol_out, "w");
    if (in == nullptr || out == nullptr) throw Error(std::string("plugin-host: fdopen: ") + std::strerror(errno));
    const Api api = LoadApi(*lib);
    char* buf = nullptr;
    size_t cap = 0;
    ssize_t n;
    while ((n = ::getline(&buf, &cap, in)) >= 0) {
      std::string line(buf, static_cast<size_t>(n));
      if (!line.empty() && line.back() == '\n') line.pop_back();
      json request;
      json reply;
      try {
        // §ERR.5 strict, like every input: the one-pass parse, and the strict
        // one (which words the refusal) when that one is in doubt.
        bool parsed = false;
        try {
          parsed = conform::ParseWatched(line, request);
        } catch (const nlohmann::json::exception&) {
        }
        if (!parsed) request = ParseJson(line, "the request");
      } catch (const Error& e) {
        reply = {{"refused", std::string("plugin-host: the request is not JSON (or repeats a key): ") + e.what()}};
      }
      if (reply.is_null()) reply = Handle(api, request);
      // A library may hand back bytes that are not UTF-8: replaced, never fatal to the host.
      const std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) break;
      if (request.is_object() && request.contains("op") && request["op"] == "bye") break;
    }
    std::free(buf);
    std::fclose(in);
    std::fclose(out);
  });
}

}  // namespace engram::cli
