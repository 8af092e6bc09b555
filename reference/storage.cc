// spec/storage.md — FP8 decode, table files, synthetic tables, lookup and
// tensor-parallel sharding. Each rule cites its § id.
#include "reference/storage.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "reference/input_files.h"
#include "base/error.h"
#include "base/splitmix64.h"

namespace engram {

// ---------------------------------------------------------------------------
// §STO.1 – §STO.3 conversions

float DecodeE4M3(uint8_t code) {
  // §STO.1 S.EEEE.MMM, bias 7. 0x7F and 0xFF are the only NaNs; no infinities.
  if ((code & 0x7F) == 0x7F) return std::numeric_limits<float>::quiet_NaN();
  const int e = (code >> 3) & 0xF;
  const int m = code & 0x7;
  // Normal: 1.m x 2^(e-7) = (8+m) x 2^(e-10); subnormal (e = 0): m x 2^-9.
  // Both are integers below 16 times a power of two, hence exact in float.
  const float magnitude = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(static_cast<float>(8 + m), e - 10);
  return (code & 0x80) ? -magnitude : magnitude;  // 0x80 is -0
}

double DecodeE8M0(uint8_t scale) {
  // §STO.2 2^(s-127); 0xFF is NaN; 0x00 is 2^-127 (a float32 subnormal), not 0.
  if (scale == 0xFF) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(scale) - 127);
}

uint16_t FloatToBf16(float value) {
  // §STO.3 Round to nearest, ties to even, on the float32 bit pattern: add
  // 0x7FFF plus the lowest kept bit, then drop the low 16 bits. The carry runs
  // into the exponent exactly as RNE requires (including to infinity and
  // across the subnormal/normal boundary). Every NaN becomes 0x7FC0 (torch).
  if (std::isnan(value)) return kBf16NaN;
  uint32_t u;
  std::memcpy(&u, &value, sizeof u);
  const uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7FFFu + lsb) >> 16);
}

float Bf16ToFloat(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t DecodeElement(uint8_t code, uint8_t scale) {
  // §STO.3 As DeepSeek's torch code: weight.float() * scale.float() in
  // float32 (exact but for overflow to +-inf, proof in the spec), then one
  // RNE rounding to bf16. The scale 2^-127 converts to float exactly.
  const float product = DecodeE4M3(code) * static_cast<float>(DecodeE8M0(scale));
  return FloatToBf16(product);
}

bool Bf16Match(uint16_t a, uint16_t b) {
  // §STO.9 identical bits, or both NaN (exponent all ones, mantissa non-zero).
  auto is_nan = [](uint16_t v) { return (v & 0x7F80) == 0x7F80 && (v & 0x007F) != 0; };
  return a == b || (is_nan(a) && is_nan(b));
}

uint16_t Bf16Add(uint16_t a, uint16_t b) {
  // §STO.7 float32 addition then RNE to bf16 equals the correctly rounded bf16
  // sum (24 >= 2*8 + 2: double rounding is innocuous). -0 + +0 = +0 (RNE).
  return FloatToBf16(Bf16ToFloat(a) + Bf16ToFloat(b));
}

std::vector<uint16_t> DecodeRow(const RowBytes& row) {
  // §STO.3 element j uses the scale of its 32-element block, scales[j / 32].
  const size_t n = row.codes.size();
  if (n % kScaleBlock != 0 || row.scales.size() != n / kScaleBlock) {
    throw Error("row has " + std::to_string(n) + " codes and " + std::to_string(row.scales.size()) +
                " scales; expected one scale per " + std::to_string(kScaleBlock) + " codes");
  }
  std::vector<uint16_t> out(n);
  for (size_t j = 0; j < n; ++j) out[j] = DecodeElement(row.codes[j], row.scales[j / kScaleBlock]);
  return out;
}

// ---------------------------------------------------------------------------
// §STO.4 files

namespace {

void CheckHeadDim(int64_t head_dim, const std::string& where) {
  if (head_dim <= 0 || head_dim % kScaleBlock != 0) {
    throw Error(where + ": head_dim " + std::to_string(head_dim) + " is not a positive multiple of " +
                std::to_string(kScaleBlock));
  }
}

std::string RowOutside(const std::string& name, int64_t row, int64_t rows) {
  return name + ": row " + std::to_string(row) + " is outside [0, " + std::to_string(rows) + ")";
}

// A read-only private mapping of a whole file. Pages are faulted in only when
// a row is read, so the table is never loaded as a whole (§STO.4 memory bound).
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) : path_(path.string()) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error(path_ + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      throw Error(path_ + ": cannot stat: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw Error(path_ + (S_ISDIR(st.st_mode) ? ": is a directory, not a table file" : ": not a regular file (a table is mapped into memory)"));
    }
    size_ = static_cast<int64_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, fd_, 0);
      if (p == MAP_FAILED) {
        const int err = errno;
        ::close(fd_);
        throw Error(path_ + ": cannot mmap " + std::to_string(size_) + " bytes: " + std::strerror(err));
      }
      data_ = static_cast<const uint8_t*>(p);
    }
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(size_));
    if (fd_ >= 0) ::close(fd_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
  const uint8_t* data_ = nullptr;
};

// Rows whose codes and scales lie at fixed strides in a mapped file.
class MappedRows final : public RowSource {
 public:
  MappedRows(std::unique_ptr<MappedFile> file, std::string name, int64_t rows, int64_t head_dim, int64_t codes_at,
             int64_t codes_stride, int64_t scales_at, int64_t scales_stride)
      : file_(std::move(file)), name_(std::move(name)), rows_(rows), head_dim_(head_dim), codes_at_(codes_at),
        codes_stride_(codes_stride), scales_at_(scales_at), scales_stride_(scales_stride) {}
  int64_t rows() const override { return rows_; }
  int64_t head_dim() const override { return head_dim_; }
  std::string name() const override { return name_; }
  RowBytes Row(int64_t row) const override {
    if (row < 0 || row >= rows_) throw Error(RowOutside(name_, row, rows_));
    // Offsets are int64: a real table's weight spans ~98 GB (> 2^32).
    const uint8_t* c = file_->data() + codes_at_ + row * codes_stride_;
    const uint8_t* s = file_->data() + scales_at_ + row * scales_stride_;
    RowBytes out;
    out.codes.assign(c, c + head_dim_);
    out.scales.assign(s, s + head_dim_ / kScaleBlock);
    return out;
  }

 private:
  std::unique_ptr<MappedFile> file_;
  std::string name_;
  int64_t rows_, head_dim_, codes_at_, codes_stride_, scales_at_, scales_stride_;
};

// safetensors: MAX_HEADER_SIZE of the reference implementation.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorEntry {
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;
};

int64_t NonNegativeInt(const nlohmann::json& v, const std::string& where) {
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return static_cast<int64_t>(u);
  }
  throw Error(where + " is " + v.dump() + ", expected a non-negative 64-bit integer");
}

TensorEntry ParseEntry(const nlohmann::json& header, const std::string& file, const std::string& tensor,
                       const std::string& required_dtype, const std::string& dtype_note, int64_t data_bytes) {
  const std::string where = file + ": tensor '" + tensor + "'";
  auto it = header.find(tensor);
  if (it == header.end()) {
    std::string names;
    int listed = 0;
    for (const auto& [k, v] : header.items()) {
      if (k == "__metadata__") continue;
      if (listed++ < 8) names += (names.empty() ? "" : ", ") + k;
    }
    if (listed > 8) names += ", ...";
    throw Error(where + " not found in the header (" + std::to_string(listed) + " tensors: " +
                (names.empty() ? "none" : names) + ")");
  }
  const nlohmann::json& e = *it;
  if (!e.is_object()) throw Error(where + ": header entry is " + e.dump() + ", expected an object");
  TensorEntry t;
  if (!e.contains("dtype") || !e["dtype"].is_string()) throw Error(where + ": field 'dtype' is missing or not a string");
  t.dtype = e["dtype"].get<std::string>();
  if (t.dtype != required_dtype) {
    throw Error(where + ": field 'dtype' is \"" + t.dtype + "\", expected \"" + required_dtype + "\" (" + dtype_note + ")");
  }
  if (!e.contains("shape") || !e["shape"].is_array()) throw Error(where + ": field 'shape' is missing or not an array");
  for (size_t i = 0; i < e["shape"].size(); ++i) {
    t.shape.push_back(NonNegativeInt(e["shape"][i], where + ": field 'shape'[" + std::to_string(i) + "]"));
  }
  if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2) {
    throw Error(where + ": field 'data_offsets' is missing or not a [begin, end] pair");
  }
  t.begin = NonNegativeInt(e["data_offsets"][0], where + ": field 'data_offsets'[0]");
  t.end = NonNegativeInt(e["data_offsets"][1], where + ": field 'data_offsets'[1]");
  const std::string offsets = "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]";
  if (t.begin > t.end) throw Error(where + ": field 'data_offsets' " + offsets + " has begin > end");
  if (t.end > data_bytes) {
    throw Error(where + ": field 'data_offsets' " + offsets + " runs past the end of the data section (" +
                std::to_string(data_bytes) + " bytes)");
  }
  return t;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Bytes of a 1-byte-per-element 2-D tensor, or -1 on int64 overflow.
int64_t ElementsOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

}  // namespace

std::unique_ptr<RowSource> OpenSafetensors(const std::filesystem::path& path, const std::string& tensor_prefix) {
  auto file = std::make_unique<MappedFile>(path);
  const std::string& p = file->path();
  const int64_t size = file->size();
  // §STO.4 (a) 8-byte little-endian header length N, then N bytes of JSON.
  if (size < 8) {
    throw Error(p + ": truncated: " + std::to_string(size) + " bytes, but a safetensors file starts with an 8-byte header length");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file->data()[i];
  if (n > static_cast<uint64_t>(size - 8)) {
    throw Error(p + ": header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) +
                " bytes)");
  }
  if (n > kMaxHeaderBytes) {
    throw Error(p + ": header length " + std::to_string(n) + " exceeds the safetensors limit of " +
                std::to_string(kMaxHeaderBytes) + " bytes");
  }
  const char* text = reinterpret_cast<const char*>(file->data() + 8);
  // Trailing spaces (padding) are whitespace; §ERR.5 a tensor named twice is refused.
  const nlohmann::json header = ParseJson(std::string_view(text, static_cast<size_t>(n)), p + ": header");
  if (!header.is_object()) throw Error(p + ": header is " + std::string(header.type_name()) + ", expected a JSON object");
  const int64_t data_at = 8 + static_cast<int64_t>(n);
  const int64_t data_bytes = size - data_at;

  // §STO.4 (b) the two tensors of one layer's table.
  const std::string wname = tensor_prefix + ".weight", sname = tensor_prefix + ".scale";
  const TensorEntry w = ParseEntry(header, p, wname, "F8_E4M3", "float8_e4m3fn codes", data_bytes);
  const TensorEntry s = ParseEntry(header, p, sname, "F8_E8M0", "float8_e8m0fnu scales", data_bytes);
  if (w.shape.size() != 2 || w.shape[0] < 1) {
    throw Error(p + ": tensor '" + wname + "': field 'shape' is " + ShapeText(w.shape) + ", expected [rows >= 1, head_dim]");
  }
  const int64_t rows = w.shape[0], head_dim = w.shape[1];
  CheckHeadDim(head_dim, p + ": tensor '" + wname + "': field 'shape'[1]");
  const std::vector<int64_t> want_scale = {rows, head_dim / kScaleBlock};
  if (s.shape != want_scale) {
    throw Error(p + ": tensor '" + sname + "': field 'shape' is " + ShapeText(s.shape) + ", expected " +
                ShapeText(want_scale) + " (one scale per " + std::to_string(kScaleBlock) + " codes of '" + wname +
                "' " + ShapeText(w.shape) + ")");
  }
  for (const auto* t : {&w, &s}) {
    const std::string& tn = t == &w ? wname : sname;
    const int64_t need = ElementsOf(t->shape);
    if (need < 0 || t->end - t->begin != need) {
      throw Error(p + ": tensor '" + tn + "': field 'data_offsets' [" + std::to_string(t->begin) + ", " +
                  std::to_string(t->end) + "] spans " + std::to_string(t->end - t->begin) + " bytes, but shape " +
                  ShapeText(t->shape) + " of 1-byte elements needs " + (need < 0 ? "more than 2^63" : std::to_string(need)));
    }
  }
  std::string name = p + ":" + tensor_prefix;
  return std::make_unique<MappedRows>(std::move(file), std::move(name), rows, head_dim, data_at + w.begin, head_dim,
                                      data_at + s.begin, head_dim / kScaleBlock);
}

std::unique_ptr<RowSource> OpenPackedRows(const std::filesystem::path& path, int64_t head_dim) {
  CheckHeadDim(head_dim, path.string());
  auto file = std::make_unique<MappedFile>(path);
  const int64_t row_bytes = head_dim + head_dim / kScaleBlock;  // §STO.4 codes, then scales
  const int64_t size = file->size();
  if (size == 0) throw Error(file->path() + ": empty file: no rows");
  if (size % row_bytes != 0) {
    throw Error(file->path() + ": size " + std::to_string(size) + " is not a multiple of the " +
                std::to_string(row_bytes) + "-byte row (" + std::to_string(head_dim) + " codes + " +
                std::to_string(head_dim / kScaleBlock) + " scales); " + std::to_string(size % row_bytes) +
                " bytes left over");
  }
  std::string name = file->path();
  return std::make_unique<MappedRows>(std::move(file), std::move(name), size / row_bytes, head_dim, 0, row_bytes,
                                      head_dim, row_bytes);
}

// ---------------------------------------------------------------------------
// §STO.5 synthetic tables

namespace {

constexpr uint64_t kGolden = kSplitMix64Golden;

uint8_t ByteOf(uint64_t seed, int64_t row, uint64_t first_word, uint64_t index) {
  const uint64_t w = SyntheticWord(seed, row, first_word + index / 8);
  return static_cast<uint8_t>(w >> (8 * (index % 8)));  // byte 0 = least significant
}

class SyntheticRows final : public RowSource {
 public:
  SyntheticRows(uint64_t seed, int64_t rows, int64_t head_dim, bool edges)
      : seed_(seed), rows_(rows), head_dim_(head_dim), edges_(edges) {}
  int64_t rows() const override { return rows_; }
  int64_t head_dim() const override { return head_dim_; }
  std::string name() const override {
    return "synthetic(seed " + std::to_string(seed_) + (edges_ ? ", edge rows" : "") + ")";
  }
  RowBytes Row(int64_t row) const override {
    if (row < 0 || row >= rows_) throw Error(RowOutside(name(), row, rows_));
    const uint64_t n_scales = static_cast<uint64_t>(head_dim_ / kScaleBlock);
    const uint64_t scale_words = (n_scales + 7) / 8;
    const bool edge = edges_ && SyntheticIsEdgeRow(seed_, row);
    RowBytes out;
    out.scales.resize(n_scales);
    out.codes.resize(static_cast<size_t>(head_dim_));
    for (uint64_t b = 0; b < n_scales; ++b) {
      const uint8_t x = ByteOf(seed_, row, 1, b);
      out.scales[b] = edge ? x : static_cast<uint8_t>(110 + x % 21);  // ordinary rows: 110 .. 130
    }
    for (uint64_t j = 0; j < out.codes.size(); ++j) {
      const uint8_t x = ByteOf(seed_, row, 1 + scale_words, j);
      // Ordinary rows: the NaN codes 0x7F/0xFF become 0x7E/0xFE (+-448).
      out.codes[j] = (!edge && (x & 0x7F) == 0x7F) ? static_cast<uint8_t>(x ^ 1) : x;
    }
    return out;
  }

 private:
  uint64_t seed_;
  int64_t rows_, head_dim_;
  bool edges_;
};

class SyntheticFloats final : public FloatRowSource {
 public:
  SyntheticFloats(uint64_t seed, int64_t rows, int64_t width) : seed_(seed), rows_(rows), width_(width) {}
  int64_t rows() const override { return rows_; }
  int64_t width() const override { return width_; }
  std::string name() const override { return "synthetic float table (seed " + std::to_string(seed_) + ")"; }
  std::vector<float> Row(int64_t row) const override {
    if (row < 0 || row >= rows_) throw Error(RowOutside(name(), row, rows_));
    std::vector<float> out(static_cast<size_t>(width_));
    for (int64_t j = 0; j < width_; ++j) {
      // §STO.10 the top 24 bits as an integer in [-2^23, 2^23), over 2^23:
      // a 24-bit integer times a power of two, exact in float32.
      const int64_t v = static_cast<int64_t>(SyntheticWord(seed_, row, static_cast<uint64_t>(j)) >> 40) - (int64_t{1} << 23);
      out[static_cast<size_t>(j)] = std::ldexp(static_cast<float>(v), -23);
    }
    return out;
  }

 private:
  uint64_t seed_;
  int64_t rows_, width_;
};

void CheckRows(int64_t rows, const std::string& what) {
  if (rows < 1) throw Error(what + ": rows " + std::to_string(rows) + " must be >= 1");
}

}  // namespace

uint64_t SyntheticWord(uint64_t seed, int64_t row, uint64_t k) {
  // §STO.5 word k of row r: the (k+1)-th SplitMix64 output from the state
  // seed XOR (r * golden), i.e. SplitMix64Mix(seed ^ (r * golden) + (k + 1) * golden), mod 2^64.
  const uint64_t base = seed ^ (static_cast<uint64_t>(row) * kGolden);
  return SplitMix64Mix(base + (k + 1) * kGolden);
}

bool SyntheticIsEdgeRow(uint64_t seed, int64_t row) { return (SyntheticWord(seed, row, 0) >> 61) == 0; }

std::unique_ptr<RowSource> SyntheticTable(uint64_t seed, int64_t rows, int64_t head_dim, bool edge_rows) {
  CheckRows(rows, "synthetic table");
  CheckHeadDim(head_dim, "synthetic table");
  return std::make_unique<SyntheticRows>(seed, rows, head_dim, edge_rows);
}

std::unique_ptr<FloatRowSource> SyntheticFloatTable(uint64_t seed, int64_t rows, int64_t width) {
  CheckRows(rows, "synthetic float table");
  if (width < 1) throw Error("synthetic float table: width " + std::to_string(width) + " must be >= 1");
  return std::make_unique<SyntheticFloats>(seed, rows, width);
}

// ---------------------------------------------------------------------------
// §STO.6 lookup

namespace {

void CheckIds(std::span<const int64_t> ids, int64_t rows, const std::string& name) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= rows) {
      throw Error(name + ": row id #" + std::to_string(i) + " is " + std::to_string(ids[i]) + ", outside [0, " +
                  std::to_string(rows) + ")");
    }
  }
}

void CheckWorld(int rank, int world) {
  if (world < 1) throw Error("world size " + std::to_string(world) + " must be >= 1");
  if (rank < 0 || rank >= world) {
    throw Error("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(world) + ")");
  }
}

}  // namespace

std::vector<uint16_t> LookupRows(const RowSource& table, std::span<const int64_t> row_ids) {
  CheckIds(row_ids, table.rows(), table.name());
  const size_t d = static_cast<size_t>(table.head_dim());
  std::vector<uint16_t> out(row_ids.size() * d);
  for (size_t i = 0; i < row_ids.size(); ++i) {
    const std::vector<uint16_t> row = DecodeRow(table.Row(row_ids[i]));
    std::copy(row.begin(), row.end(), out.begin() + static_cast<std::ptrdiff_t>(i * d));
  }
  return out;
}

std::vector<float> LookupFloatRows(const FloatRowSource& table, std::span<const int64_t> row_ids) {
  CheckIds(row_ids, table.rows(), table.name());
  const size_t w = static_cast<size_t>(table.width());
  std::vector<float> out(row_ids.size() * w);
  for (size_t i = 0; i < row_ids.size(); ++i) {
    const std::vector<float> row = table.Row(row_ids[i]);
    std::copy(row.begin(), row.end(), out.begin() + static_cast<std::ptrdiff_t>(i * w));
  }
  return out;
}

// ---------------------------------------------------------------------------
// §STO.7 row sharding

int64_t ShardPart(int64_t rows, int world) {
  CheckWorld(0, world);
  return rows / world + (rows % world != 0 ? 1 : 0);  // ceil(rows / world)
}

Shard RowShard(int64_t rows, int rank, int world) {
  CheckWorld(rank, world);
  const int64_t part = ShardPart(rows, world);
  // Clipped to [0, rows): the last ranks may own fewer rows, or none.
  const int64_t begin = std::min(rows, rank * part);
  const int64_t end = std::min(rows, (rank + 1) * part);
  return {begin, end};
}

int OwnerRank(int64_t rows, int world, int64_t row) {
  if (row < 0 || row >= rows) throw Error(RowOutside("owner rank", row, rows));
  return static_cast<int>(row / ShardPart(rows, world));
}

std::vector<uint16_t> ShardLookup(const RowSource& table, std::span<const int64_t> row_ids, int rank, int world) {
  CheckWorld(rank, world);
  CheckIds(row_ids, table.rows(), table.name());
  const Shard shard = RowShard(table.rows(), rank, world);
  const size_t d = static_cast<size_t>(table.head_dim());
  // Masked rows are assigned +0 (bf16 0x0000), as `y[mask] = 0` does.
  std::vector<uint16_t> out(row_ids.size() * d, 0);
  for (size_t i = 0; i < row_ids.size(); ++i) {
    const int64_t id = row_ids[i];
    if (id < shard.begin || id >= shard.end) continue;
    // The rank reads its local row id - begin of its slice; the slice holds
    // global rows [begin, end), so that is global row `id`.
    const std::vector<uint16_t> row = DecodeRow(table.Row(id));
    std::copy(row.begin(), row.end(), out.begin() + static_cast<std::ptrdiff_t>(i * d));
  }
  return out;
}

std::vector<uint16_t> ReduceShards(const std::vector<std::vector<uint16_t>>& partials) {
  if (partials.empty()) throw Error("ReduceShards: no partial lookups");
  std::vector<uint16_t> acc = partials[0];
  for (size_t r = 1; r < partials.size(); ++r) {
    if (partials[r].size() != acc.size()) {
      throw Error("ReduceShards: rank " + std::to_string(r) + " has " + std::to_string(partials[r].size()) +
                  " values, rank 0 has " + std::to_string(acc.size()));
    }
    for (size_t k = 0; k < acc.size(); ++k) acc[k] = Bf16Add(acc[k], partials[r][k]);
  }
  return acc;
}

// ---------------------------------------------------------------------------
// §STO.8 head sharding

HeadRange HeadShard(int columns, int rank, int world) {
  CheckWorld(rank, world);
  if (columns < 1) throw Error("head sharding: columns " + std::to_string(columns) + " must be >= 1");
  const int hp = (columns + world - 1) / world;
  return {std::min(columns, rank * hp), std::min(columns, (rank + 1) * hp)};
}

std::vector<uint16_t> HeadShardLookup(const RowSource& table, std::span<const int64_t> row_ids, int columns, int rank,
                                      int world) {
  const HeadRange hr = HeadShard(columns, rank, world);
  if (row_ids.size() % static_cast<size_t>(columns) != 0) {
    throw Error("head sharding: " + std::to_string(row_ids.size()) + " row ids are not a whole number of positions of " +
                std::to_string(columns) + " columns");
  }
  CheckIds(row_ids, table.rows(), table.name());
  const size_t positions = row_ids.size() / static_cast<size_t>(columns);
  std::vector<int64_t> mine;
  for (size_t p = 0; p < positions; ++p) {
    for (int c = hr.begin; c < hr.end; ++c) mine.push_back(row_ids[p * static_cast<size_t>(columns) + static_cast<size_t>(c)]);
  }
  return LookupRows(table, mine);
}

std::vector<uint16_t> GatherHeads(const std::vector<std::vector<uint16_t>>& partials, int64_t positions, int columns,
                                  int world, int64_t head_dim) {
  if (static_cast<int>(partials.size()) != world) {
    throw Error("GatherHeads: " + std::to_string(partials.size()) + " partials for world " + std::to_string(world));
  }
  std::vector<uint16_t> out;
  out.reserve(static_cast<size_t>(positions * columns * head_dim));
  for (int64_t p = 0; p < positions; ++p) {
    for (int r = 0; r < world; ++r) {
      const HeadRange hr = HeadShard(columns, r, world);
      const int64_t block = (hr.end - hr.begin) * head_dim;
      if (static_cast<int64_t>(partials[static_cast<size_t>(r)].size()) != positions * block) {
        throw Error("GatherHeads: rank " + std::to_string(r) + " has " +
                    std::to_string(partials[static_cast<size_t>(r)].size()) + " values, expected " +
                    std::to_string(positions * block));
      }
      auto from = partials[static_cast<size_t>(r)].begin() + static_cast<std::ptrdiff_t>(p * block);
      out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(block));
    }
  }
  return out;
}

}  // namespace engram
