// cuda/cuda_plugin.cc — engram::cuda as a conformance plug-in (spec §CONF.3).
//
// libengram_cuda_plugin.so exports the C ABI of conformance/include/engram/
// conformance.h for what the CUDA implementation computes, so that
// `engram conform --lib` checks it through the same plug-in host as the
// reference and any port: the runner has no special path for it.
//
// Every answer comes from the engram::cuda classes, on one backend chosen once
// per process (Chosen() below):
//  * DeviceBackend when engram::cuda::DeviceCount() > 0 (a real GPU),
//  * HostBackend otherwise: the kernels' per-element functions run by loops
//    on the host (cuda/host_launch.cc), what CI can execute;
//  * ENGRAM_CUDA_PLUGIN_BACKEND=host|device forces one. `device` without a GPU
//    claims no suite and no profile, so every vector is reported `skipped` and
//    the info name says why.
//
// What runs where:
//  * hashing (hash_v41, hash_demo, hash_state, accumulated): a one-slot
//    Hasher<Backend> per sequence, created with the sequence's rollback
//    capacity. The rows and the slot's state (position, history and the ids a
//    rollback restores, §HASH.5-§HASH.6) are the kernels' own: rollback is
//    Hasher::Rollback (kernels), a fork copies the slot with every retained
//    id (GetSlot(0, true) into a new hasher's SetSlot), an import is SetSlot.
//  * the layout (§LAY) is built by the reference: it is an input of the CUDA
//    hasher, not something it computes. The `layout` and `multipliers` suites
//    are therefore not claimed.
//  * fp8_decode: DecodeElementBits of cuda/storage_kernels.h, through the lookup
//    kernel over a table whose row s holds every code 0x00..0xFF with scale s.
//  * table_lookup, tp_shard: the lookup kernel (Lookup<Backend>) over a small
//    table holding just the rows a call needs (the vectors' tables are
//    real-size, ~10^11 bytes); ids are remapped into it. Row shards use the
//    kernel's own shard path (ids outside the shard give +0 rows); the
//    all_reduce is Bf16SumAsDevice, the host model of NCCL's bf16 sum that
//    engram::cuda's tensor-parallel emulation uses (one GPU cannot run a
//    multi-rank NCCL communicator).
//  * gate_v41: engram_v41_gate through FusionV41<Backend> (FusionGateThread,
//    FusionUpdateThread); engram_gate through GateFunction<Backend> (both
//    profiles, the dot rounded to float32); engram_wkv_bf16 / engram_wkv_fp8
//    through Wkv<Backend> (cuda/fusion.h: LinearNoBias, act_quant + the 32x32
//    block-scaled fp8 GEMM).
//  * gate_demo, short_conv_demo: engram_demo_gate / engram_short_conv through
//    FusionDemo<Backend> (key/value projections, gate, value; ShortConv).
//  * engram_forward: the kernels chained — Hasher<Backend> (the first layer's
//    row ids), then v4.1: the lookup kernel over the §STO.5 synthetic table's
//    rows, Wkv<Backend> (fp8), FusionV41<Backend>; demo-v1: the §STO.10 float
//    table's rows through the gather kernel (FloatLookup<Backend>, which also
//    answers engram_float_table_lookup), FusionDemo<Backend>::Forward.
// Not exported (its suite unclaimed): the token map (host-side work in every
// engine; engram::cuda starts from token ids).
#include "engram/conformance.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/plugins/abi_shims.h"
#include "conformance/plugins/plugin_inputs.h"
#include "cuda/engram_cuda.h"
#include "cuda/fusion.h"
#include "reference/config.h"
#include "base/error.h"
#include "reference/layout.h"
#include "reference/storage.h"

namespace {

using engram::plugin::CheckCapacity;
using engram::plugin::CheckLen;
using engram::plugin::Guard;
using engram::plugin::GuardHandle;
using engram::plugin::GuardOr;

using engram::Error;
using engram::cuda::DeviceBackend;
using engram::cuda::HostBackend;

// ---------------------------------------------------------------- backend choice

enum class Which { kHost, kDevice, kNone };

struct Choice {
  Which which = Which::kNone;
  std::string name;    // engram_conformance_info()->name
  std::string suites;  // claimed suites ("" when no backend can run)
  std::string profiles;
  std::string why;     // kNone: the reason, for refusals
};

constexpr const char* kSuites =
    "hash_v41,hash_demo,hash_state,accumulated,fp8_decode,table_lookup,tp_shard,gate_v41,gate_demo,short_conv_demo,"
    "engram_forward";

// The part of DeviceDescription() before the first comma: "NVIDIA H200".
std::string DeviceName(int device) {
  const std::string d = engram::cuda::DeviceDescription(device);
  return d.substr(0, d.find(','));
}

Choice Choose() {
  Choice c;
  const char* env = std::getenv("ENGRAM_CUDA_PLUGIN_BACKEND");
  const std::string want = env != nullptr ? env : "";
  if (want != "" && want != "host" && want != "device") {
    c.why = "ENGRAM_CUDA_PLUGIN_BACKEND=\"" + want + "\" is neither \"host\" nor \"device\"";
    c.name = "engram-cuda (" + c.why + "; nothing claimed)";
    return c;
  }
  const int devices = want == "host" ? 0 : engram::cuda::DeviceCount();
  if (want == "host" || (want.empty() && devices == 0)) {
    c.which = Which::kHost;
    c.name = "engram-cuda (host emulation)";
  } else if (devices > 0) {
    c.which = Which::kDevice;
    c.name = "engram-cuda (" + DeviceName(0) + ")";
  } else {
    c.why = "ENGRAM_CUDA_PLUGIN_BACKEND=device but " + engram::cuda::DeviceDescription(0);
    c.name = "engram-cuda (" + c.why + "; nothing claimed)";
    return c;
  }
  c.suites = kSuites;
  c.profiles = "v4.1,demo-v1";
  return c;
}

const Choice& Chosen() {
  static const Choice c = Choose();
  return c;
}

// Calls f.template operator()<Backend>() on the chosen backend.
template <typename F>
auto OnBackend(F&& f) {
  switch (Chosen().which) {
    case Which::kDevice:
      return f.template operator()<DeviceBackend>();
    case Which::kHost:
      return f.template operator()<HostBackend>();
    case Which::kNone:
      break;
  }
  throw Error("engram-cuda: no backend: " + Chosen().why);
}

// ---------------------------------------------------------------- hashing

// One sequence on the chosen backend: slot 0 of a one-slot Hasher<Backend>.
class SlotHasher {
 public:
  virtual ~SlotHasher() = default;
  virtual std::vector<int64_t> Append(std::span<const int64_t> ids) = 0;
  // with_rollback_ids: every id on record, else the last min(position, max - 1).
  virtual engram::cuda::SlotState Get(bool with_rollback_ids = false) = 0;
  virtual void Set(const engram::cuda::SlotState& s) = 0;
  virtual void Rollback(int64_t k) = 0;
};

template <class Backend>
class SlotHasherOn final : public SlotHasher {
 public:
  SlotHasherOn(const engram::Layout& layout, int32_t capacity) : h_(layout, 1, nullptr, 0, capacity) {}
  std::vector<int64_t> Append(std::span<const int64_t> ids) override {
    const int32_t slot = 0;
    const int64_t length = static_cast<int64_t>(ids.size());
    return h_.Append(std::span<const int32_t>(&slot, 1), std::span<const int64_t>(&length, 1), ids);
  }
  engram::cuda::SlotState Get(bool with_rollback_ids) override { return h_.GetSlot(0, with_rollback_ids); }
  void Set(const engram::cuda::SlotState& s) override { h_.SetSlot(0, s); }
  void Rollback(int64_t k) override {
    const int32_t slot = 0;
    h_.Rollback(std::span<const int32_t>(&slot, 1), std::span<const int64_t>(&k, 1));
  }

 private:
  engram::cuda::Hasher<Backend> h_;
};

std::unique_ptr<SlotHasher> NewSlotHasher(const engram::Layout& layout, size_t capacity) {
  // The slot row holds max_ngram - 1 + capacity int64 ids; keep the count an int32.
  if (capacity > static_cast<size_t>(INT32_MAX - layout.max_ngram)) {
    throw Error("rollback_capacity: " + std::to_string(capacity) + " is larger than this implementation supports (" +
                std::to_string(INT32_MAX - layout.max_ngram) + ")");
  }
  return OnBackend([&]<class Backend>() -> std::unique_ptr<SlotHasher> {
    return std::make_unique<SlotHasherOn<Backend>>(layout, static_cast<int32_t>(capacity));
  });
}

// ---------------------------------------------------------------- tables

// §STO.6 The rows one call needs, renumbered 0 .. k-1, plus (shards) one row k
// that stands for "a row some other rank owns" and is never read: a Lookup
// over this source with shard [0, k) writes +0 for id k, through the kernel's
// own out-of-shard path.
class NeededRows final : public engram::RowSource {
 public:
  NeededRows(const engram::RowSource& source, std::vector<int64_t> rows, bool sentinel)
      : source_(source), rows_(std::move(rows)), sentinel_(sentinel) {}
  int64_t rows() const override { return static_cast<int64_t>(rows_.size()) + (sentinel_ ? 1 : 0); }
  int64_t head_dim() const override { return source_.head_dim(); }
  engram::RowBytes Row(int64_t row) const override {
    if (row < 0 || row >= static_cast<int64_t>(rows_.size())) {
      throw Error(name() + ": row " + std::to_string(row) + " is not one of the " + std::to_string(rows_.size()) +
                  " rows copied");
    }
    return source_.Row(rows_[static_cast<size_t>(row)]);
  }
  std::string name() const override { return source_.name() + " (the rows of one lookup)"; }

 private:
  const engram::RowSource& source_;
  std::vector<int64_t> rows_;
  bool sentinel_;
};

void CheckRowIds(const engram::RowSource& source, std::span<const int64_t> ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= source.rows()) {
      throw Error("row_ids: index " + std::to_string(i) + " (row " + std::to_string(ids[i]) + ") is outside [0, " +
                  std::to_string(source.rows()) + ") of " + source.name());
    }
  }
}

// Decoded rows of `ids` (each in [0, rows)) through the lookup kernel; ids
// outside [begin, end) give +0 rows (a rank's partial lookup, §STO.7).
std::vector<uint16_t> KernelRows(const engram::RowSource& source, std::span<const int64_t> ids, int64_t begin,
                                 int64_t end) {
  std::map<int64_t, int64_t> index;  // global row -> row of the small table
  std::vector<int64_t> needed;
  for (int64_t id : ids) {
    if (id >= begin && id < end && index.emplace(id, static_cast<int64_t>(needed.size())).second) needed.push_back(id);
  }
  const int64_t k = static_cast<int64_t>(needed.size());
  std::vector<int64_t> local(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    auto it = index.find(ids[i]);
    local[i] = it != index.end() ? it->second : k;  // k: not this shard's row
  }
  const NeededRows small(source, std::move(needed), /*sentinel=*/true);
  return OnBackend([&]<class Backend>() {
    engram::cuda::Lookup<Backend> lookup(small, engram::cuda::TableMemory::kBackend, 0, k);
    return lookup.Rows(local);
  });
}

// §STO.3 All 65536 (code, scale) decodes, computed once by the lookup kernel
// (DecodeElementBits): row s of a 256 x 256 table holds codes 0x00 .. 0xFF and
// eight copies of the scale byte s.
class AllPairs final : public engram::RowSource {
 public:
  int64_t rows() const override { return 256; }
  int64_t head_dim() const override { return 256; }
  engram::RowBytes Row(int64_t row) const override {
    engram::RowBytes r;
    for (int c = 0; c < 256; ++c) r.codes.push_back(static_cast<uint8_t>(c));
    r.scales.assign(8, static_cast<uint8_t>(row));
    return r;
  }
  std::string name() const override { return "every (code, scale) pair"; }
};

const std::vector<uint16_t>& DecodedPairs() {
  static std::mutex mu;
  static std::vector<uint16_t> pairs;  // [scale][code]
  std::lock_guard<std::mutex> lock(mu);
  if (pairs.empty()) {
    std::vector<int64_t> ids(256);
    for (int s = 0; s < 256; ++s) ids[static_cast<size_t>(s)] = s;
    const AllPairs table;
    pairs = KernelRows(table, ids, 0, 256);
  }
  return pairs;
}

}  // namespace

struct engram_hasher {
  const engram_layout* layout;
  std::unique_ptr<SlotHasher> slot;
  size_t capacity;
};

extern "C" {

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {ENGRAM_CONFORMANCE_ABI_VERSION, Chosen().name.c_str(), "0.1.0",
                                                 Chosen().suites.c_str(), Chosen().profiles.c_str()};
  return &info;
}

// ---------------------------------------------------------------- §LAY layout (the reference: an input of the hasher)


// ---------------------------------------------------------------- §HASH hashing (Hasher<Backend>)

engram_hasher* engram_hasher_create(const engram_layout* layout, size_t rollback_capacity, char* err, size_t err_len) {
  return GuardHandle(err, err_len, [&] {
    if (layout == nullptr) throw Error("layout: NULL");
    return new engram_hasher{layout, NewSlotHasher(layout->layout, rollback_capacity), rollback_capacity};
  });
}

engram_hasher* engram_hasher_fork(const engram_hasher* h) {
  return GuardOr<engram_hasher*>(nullptr, [&] {  // the ABI gives fork no error buffer
    // §HASH.6 A fork is a second slot holding the same state, the ids a
    // rollback restores included.
    auto copy = std::make_unique<engram_hasher>();
    copy->layout = h->layout;
    copy->slot = NewSlotHasher(h->layout->layout, h->capacity);
    copy->slot->Set(h->slot->Get(/*with_rollback_ids=*/true));
    copy->capacity = h->capacity;
    return copy.release();
  });
}

void engram_hasher_destroy(engram_hasher* h) { delete h; }

int engram_hasher_append(engram_hasher* h, const int64_t* ids, size_t n, int64_t* rows, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    // The kernels check the ids (§HASH.1) and change no state when one is refused.
    const std::vector<int64_t> out = h->slot->Append(std::span<const int64_t>(ids, n));
    std::copy(out.begin(), out.end(), rows);
    return 0;
  });
}

int engram_hasher_rollback(engram_hasher* h, size_t k, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    // §HASH.6 on the backend: refused (state unchanged) when k exceeds the
    // position or needs ids beyond the rollback capacity.
    if (k > static_cast<size_t>(INT64_MAX)) throw Error("rollback by " + std::to_string(k) + ": too large");
    h->slot->Rollback(static_cast<int64_t>(k));
    return 0;
  });
}

int64_t engram_hasher_position(const engram_hasher* h) {
  return GuardOr<int64_t>(-1, [&] {  // a backend failure; the ABI has no error buffer here
    return h->slot->Get().position;
  });
}

size_t engram_hasher_history(const engram_hasher* h, int64_t* ids) {
  return GuardOr<size_t>(0, [&] {
    const engram::cuda::SlotState s = h->slot->Get();
    std::copy(s.history.begin(), s.history.end(), ids);
    return s.history.size();
  });
}

int engram_hasher_import(engram_hasher* h, int64_t position, const int64_t* ids, size_t count,
                         const char* layout_fingerprint, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    // §HASH.9 A history from another layout would silently hash differently.
    const std::string fp = layout_fingerprint != nullptr ? layout_fingerprint : "";
    if (!fp.empty() && fp != h->layout->fingerprint) {
      throw Error("history: layoutFingerprint " + fp + " is not this layout's " + h->layout->fingerprint);
    }
    // SetSlot refuses a negative position, a count other than
    // min(position, max_ngram - 1) and ids that are not compressed ids.
    // §HASH.9 A history holds exactly min(position, max_ngram - 1) ids (SetSlot
    // would also take the older ids a rollback restores); the slot then
    // retains only these for a later rollback.
    const int64_t exact = std::min<int64_t>(std::max<int64_t>(position, 0), h->layout->layout.max_ngram - 1);
    if (count > static_cast<size_t>(exact)) {
      throw Error("history: " + std::to_string(count) + " ids for position " + std::to_string(position) +
                  "; a history holds min(position, max_ngram - 1) = " + std::to_string(exact));
    }
    engram::cuda::SlotState s{position, std::vector<int64_t>(ids, ids + count)};
    h->slot->Set(s);
    return 0;
  });
}

// ---------------------------------------------------------------- §STO decode and tables (the lookup kernel)

int engram_decode_element(uint8_t code, uint8_t scale, uint16_t* bf16_bits, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    *bf16_bits = DecodedPairs()[static_cast<size_t>(scale) * 256 + code];
    return 0;
  });
}

int engram_table_lookup(const engram_table* table, const int64_t* row_ids, size_t n, uint16_t* out, size_t out_len,
                        char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const engram::RowSource& src = *table->source;
    CheckCapacity(out_len, n * static_cast<size_t>(src.head_dim()), "out");
    const std::span<const int64_t> ids(row_ids, n);
    CheckRowIds(src, ids);
    const std::vector<uint16_t> v = KernelRows(src, ids, 0, src.rows());
    std::copy(v.begin(), v.end(), out);
    return 0;
  });
}

int engram_table_row_shard_lookup(const engram_table* table, int32_t rank, int32_t world, const int64_t* row_ids,
                                  size_t n, uint16_t* out, size_t out_len, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (world < 1) throw Error("world: " + std::to_string(world) + " (at least 1)");
    if (rank < 0 || rank >= world) throw Error("rank: " + std::to_string(rank) + " is not in [0, world)");
    const engram::RowSource& src = *table->source;
    CheckCapacity(out_len, n * static_cast<size_t>(src.head_dim()), "out");
    const std::span<const int64_t> ids(row_ids, n);
    CheckRowIds(src, ids);  // §STO.7 ids outside the table are refused, not masked away
    const engram::Shard s = engram::RowShard(src.rows(), rank, world);
    const std::vector<uint16_t> v = KernelRows(src, ids, s.begin, s.end);
    std::copy(v.begin(), v.end(), out);
    return 0;
  });
}

int engram_shard_reduce(const uint16_t* partials, int32_t world, size_t count, uint16_t* out, char* err,
                        size_t err_len) {
  return Guard(err, err_len, [&] {
    if (world < 1) throw Error("world: " + std::to_string(world) + " (at least 1)");
    // §STO.7 rank 0 first; world 1 is no all_reduce at all (the partial, −0 kept).
    std::copy(partials, partials + count, out);
    for (int32_t r = 1; r < world; ++r) {
      const uint16_t* part = partials + static_cast<size_t>(r) * count;
      for (size_t i = 0; i < count; ++i) out[i] = engram::cuda::Bf16SumAsDevice(out[i], part[i]);
    }
    return 0;
  });
}

int engram_table_head_shard_lookup(const engram_table* table, int32_t rank, int32_t world, int32_t columns,
                                   const int64_t* row_ids, size_t n, uint16_t* out, size_t out_len, size_t* written,
                                   char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (world < 1) throw Error("world: " + std::to_string(world) + " (at least 1)");
    if (rank < 0 || rank >= world) throw Error("rank: " + std::to_string(rank) + " is not in [0, world)");
    if (columns < 1) throw Error("columns: " + std::to_string(columns) + " (at least 1)");
    const size_t cols = static_cast<size_t>(columns);
    if (n % cols != 0) {
      throw Error("row_ids: " + std::to_string(n) + " ids are not [positions][" + std::to_string(columns) + " columns]");
    }
    const engram::RowSource& src = *table->source;
    CheckRowIds(src, std::span<const int64_t>(row_ids, n));
    // §STO.8 This rank's columns of every position.
    const engram::HeadRange heads = engram::HeadShard(columns, rank, world);
    std::vector<int64_t> mine;
    for (size_t p = 0; p < n / cols; ++p) {
      for (int c = heads.begin; c < heads.end; ++c) mine.push_back(row_ids[p * cols + static_cast<size_t>(c)]);
    }
    const size_t need = mine.size() * static_cast<size_t>(src.head_dim());
    CheckCapacity(out_len, need, "out");
    const std::vector<uint16_t> v = KernelRows(src, mine, 0, src.rows());
    std::copy(v.begin(), v.end(), out);
    *written = v.size();
    return 0;
  });
}

// ---------------------------------------------------------------- §FUS.3 the v4.1 gate after wkv (FusionV41<Backend>)

int engram_v41_gate(size_t dim, size_t hc, double eps, engram_bf16_span_t x, engram_bf16_span_t key,
                    engram_bf16_span_t value, engram_bf16_span_t q_weight, engram_bf16_span_t k_weight, int32_t masked,
                    double* gate, uint16_t* out, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (dim == 0 || hc == 0) throw Error("dim and hc must be >= 1");
    if (dim > INT32_MAX || hc > INT32_MAX) throw Error("dim and hc must fit int32");
    CheckLen(x.len, hc * dim, "x [hc][dim]");
    CheckLen(key.len, hc * dim, "key [hc][dim]");
    CheckLen(value.len, dim, "value [dim]");
    CheckLen(q_weight.len, hc * dim, "qWeight [hc][dim]");
    CheckLen(k_weight.len, hc * dim, "kWeight [hc][dim]");
    const uint8_t live = masked != 0 ? 0 : 1;
    OnBackend([&]<class Backend>() {
      engram::cuda::FusionV41<Backend> fusion(static_cast<int32_t>(hc), static_cast<int32_t>(dim), eps,
                                              std::span<const uint16_t>(q_weight.data, q_weight.len),
                                              std::span<const uint16_t>(k_weight.data, k_weight.len));
      const std::vector<uint16_t> o =
          fusion.Apply(std::span<const uint16_t>(x.data, x.len), std::span<const uint16_t>(key.data, key.len),
                       std::span<const uint16_t>(value.data, value.len), std::span<const uint8_t>(&live, 1));
      std::copy(o.begin(), o.end(), out);
      // Float32 gates, widened (exactly) to the ABI's doubles.
      for (size_t c = 0; c < hc; ++c) gate[c] = static_cast<double>(fusion.gates()[c]);
    });
    return 0;
  });
}

}  // extern "C"

// ---------------------------------------------------------------- §FUS.2, §FUS.4-§FUS.7, §FUS.10 (cuda/fusion.h)
//
// engram_gate: GateFunction<Backend> (the dot rounded to float32 first, as a
// float32 implementation receives it); engram_wkv_bf16 / engram_wkv_fp8:
// Wkv<Backend>; engram_demo_gate / engram_short_conv: FusionDemo<Backend>;
// the forward entry points chain the kernels: Hasher<Backend> (the first
// layer's row ids) -> rows -> wkv -> gate. v4.1 rows come from the lookup
// kernel (KernelRows over the §STO.5 synthetic table's bytes, an input);
// demo-v1 rows come from the float gather kernel (KernelFloatRows over the
// §STO.10 synthetic float table's values, an input), which also answers
// engram_float_table_lookup.
// Float inputs are float32 values given as doubles: each is rounded to float32
// (exact for the vectors' values); float32 outputs widen exactly to doubles.

namespace {

size_t MulSize(std::initializer_list<size_t> factors, const char* what) {
  size_t p = 1;
  for (size_t f : factors) {
    if (__builtin_mul_overflow(p, f, &p)) throw Error(std::string(what) + ": the size overflows");
  }
  return p;
}

std::vector<float> ToFloats(const double* data, size_t len) {
  std::vector<float> v(len);
  for (size_t i = 0; i < len; ++i) v[i] = static_cast<float>(data[i]);
  return v;
}

int32_t DemoDim(size_t v, const char* name) {
  if (v < 1 || v > static_cast<size_t>(INT32_MAX)) {
    throw Error(std::string("params: ") + name + " = " + std::to_string(v) + " (must be in [1, 2^31))");
  }
  return static_cast<int32_t>(v);
}

// engram_demo_params_t -> float32 copies + DemoWeights, every length checked
// and named as the vectors name the field (spec §FUS.10).
struct DemoLayer {
  std::vector<float> key_w, key_b, norm1_w, norm2_w, value_w, value_b, conv_norm_w, conv_w;
  engram::cuda::DemoWeights w;

  explicit DemoLayer(const engram_demo_params_t* p) {
    if (p == nullptr) throw Error("params: NULL");
    const int32_t hc = DemoDim(p->hc, "hc"), hidden = DemoDim(p->hidden, "hidden"), in = DemoDim(p->in, "in");
    const int32_t kernel = DemoDim(p->kernel, "kernel"), dilation = DemoDim(p->dilation, "dilation");
    const size_t streams = MulSize({p->hc, p->hidden}, "params");
    CheckLen(p->key_weight.len, MulSize({streams, p->in}, "keyWeight"), "keyWeight [hc][hidden][in]");
    CheckLen(p->key_bias.len, streams, "keyBias [hc][hidden]");
    CheckLen(p->norm1_weight.len, streams, "norm1Weight [hc][hidden]");
    CheckLen(p->norm2_weight.len, streams, "norm2Weight [hc][hidden]");
    CheckLen(p->value_weight.len, MulSize({p->hidden, p->in}, "valueWeight"), "valueWeight [hidden][in]");
    CheckLen(p->value_bias.len, p->hidden, "valueBias [hidden]");
    CheckLen(p->conv_norm_weight.len, streams, "convNormWeight [hc][hidden]");
    CheckLen(p->conv_weight.len, MulSize({streams, p->kernel}, "convWeight"), "convWeight [hc*hidden][kernel]");
    key_w = ToFloats(p->key_weight.data, p->key_weight.len);
    key_b = ToFloats(p->key_bias.data, p->key_bias.len);
    norm1_w = ToFloats(p->norm1_weight.data, p->norm1_weight.len);
    norm2_w = ToFloats(p->norm2_weight.data, p->norm2_weight.len);
    value_w = ToFloats(p->value_weight.data, p->value_weight.len);
    value_b = ToFloats(p->value_bias.data, p->value_bias.len);
    conv_norm_w = ToFloats(p->conv_norm_weight.data, p->conv_norm_weight.len);
    conv_w = ToFloats(p->conv_weight.data, p->conv_weight.len);
    w = engram::cuda::DemoWeights{hc, hidden, in, kernel, dilation, key_w, key_b, norm1_w, norm2_w,
                                  value_w, value_b, conv_norm_w, conv_w};
  }
  DemoLayer(const DemoLayer&) = delete;
  DemoLayer& operator=(const DemoLayer&) = delete;
};

// §HASH.4 The row ids of the layout's first layer ([n][columns]) through a
// one-slot Hasher<Backend>: its rows are [n][layers][columns].
std::vector<int64_t> FirstLayerKernelRows(const engram::Layout& layout, const int64_t* ids, size_t n) {
  const std::vector<int64_t> all = OnBackend([&]<class Backend>() {
    engram::cuda::Hasher<Backend> hasher(layout, 1);
    const int32_t slot = 0;
    const int64_t length = static_cast<int64_t>(n);
    return hasher.Append(std::span<const int32_t>(&slot, 1), std::span<const int64_t>(&length, 1),
                         std::span<const int64_t>(ids, n));
  });
  const size_t layers = layout.layers.size(), cols = static_cast<size_t>(layout.columns());
  std::vector<int64_t> rows;
  rows.reserve(n * cols);
  for (size_t t = 0; t < n; ++t) rows.insert(rows.end(), all.begin() + static_cast<std::ptrdiff_t>(t * layers * cols),
                                             all.begin() + static_cast<std::ptrdiff_t>(t * layers * cols + cols));
  return rows;
}

// §STO.10 The float rows a call needs, renumbered 0 .. k-1 (the vectors'
// demo tables are real-size: only these rows are generated and copied).
class NeededFloatRows final : public engram::FloatRowSource {
 public:
  NeededFloatRows(const engram::FloatRowSource& source, std::vector<int64_t> rows)
      : source_(source), rows_(std::move(rows)) {}
  int64_t rows() const override { return static_cast<int64_t>(rows_.size()); }
  int64_t width() const override { return source_.width(); }
  std::vector<float> Row(int64_t row) const override { return source_.Row(rows_.at(static_cast<size_t>(row))); }
  std::string name() const override { return source_.name() + " (the rows of one lookup)"; }

 private:
  const engram::FloatRowSource& source_;
  std::vector<int64_t> rows_;
};

// §STO.10 Float rows of `ids` through the gather kernel (FloatLookup<Backend>).
std::vector<float> KernelFloatRows(const engram::FloatRowSource& source, std::span<const int64_t> ids) {
  std::map<int64_t, int64_t> index;  // global row -> row of the small table
  std::vector<int64_t> needed, local(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= source.rows()) {
      throw Error("row_ids: index " + std::to_string(i) + " (row " + std::to_string(ids[i]) + ") is outside [0, " +
                  std::to_string(source.rows()) + ") of " + source.name());
    }
    auto [it, fresh] = index.emplace(ids[i], static_cast<int64_t>(needed.size()));
    if (fresh) needed.push_back(ids[i]);
    local[i] = it->second;
  }
  const NeededFloatRows small(source, std::move(needed));
  return OnBackend([&]<class Backend>() {
    engram::cuda::FloatLookup<Backend> lookup(small);
    return lookup.Rows(local);
  });
}

// §FUS.2 kv for `tokens` tokens of `in` values; in == 0 or out == 0 (a sum of
// nothing: +0) never reaches the kernels.
template <class MakeWkv>
std::vector<uint16_t> WkvOnBackend(std::span<const uint16_t> e, size_t in, size_t out, MakeWkv make) {
  if (in == 0 || out == 0) return std::vector<uint16_t>(in == 0 ? out : 0, 0x0000);
  if (in > static_cast<size_t>(INT64_MAX) || out > static_cast<size_t>(INT64_MAX)) throw Error("wkv: size too large");
  return OnBackend([&]<class Backend>() {
    std::unique_ptr<engram::cuda::Wkv<Backend>> wkv = make.template operator()<Backend>();
    return wkv->Apply(e);
  });
}

}  // namespace

extern "C" {

int engram_gate(const char* profile, double dot, double* gate, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const std::string p = profile != nullptr ? profile : "";
    if (p != "v4.1" && p != "demo-v1") throw Error("profile: \"" + p + "\" is neither \"v4.1\" nor \"demo-v1\"");
    // A float32 implementation receives the dot as float32, as the published
    // code does: a non-zero dot below float32's range rounds to ±0, where
    // sign() (demo-v1) is 0 and the gate 0.5 (§FUS.6; the mirror does the same).
    const float d = static_cast<float>(dot);
    const std::vector<float> g = OnBackend([&]<class Backend>() {
      return engram::cuda::GateFunction<Backend>(p == "v4.1", std::span<const float>(&d, 1));
    });
    *gate = static_cast<double>(g.at(0));
    return 0;
  });
}

int engram_wkv_bf16(engram_bf16_span_t e, engram_bf16_span_t weight, size_t out_features, uint16_t* kv, char* err,
                    size_t err_len) {
  return Guard(err, err_len, [&] {
    CheckLen(weight.len, MulSize({out_features, e.len}, "weight"), "weight [out][in]");
    const std::vector<uint16_t> y = WkvOnBackend(
        std::span<const uint16_t>(e.data, e.len), e.len, out_features, [&]<class Backend>() {
          return std::make_unique<engram::cuda::Wkv<Backend>>(static_cast<int64_t>(out_features),
                                                              static_cast<int64_t>(e.len),
                                                              std::span<const uint16_t>(weight.data, weight.len));
        });
    std::copy(y.begin(), y.end(), kv);
    return 0;
  });
}

int engram_wkv_fp8(engram_bf16_span_t e, engram_u8_span_t weight_codes, engram_u8_span_t weight_scales,
                   size_t out_features, uint16_t* kv, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (e.len % 32 != 0) throw Error("e: " + std::to_string(e.len) + " values, not a multiple of 32");
    CheckLen(weight_codes.len, MulSize({out_features, e.len}, "weightCodes"), "weightCodes [out][in]");
    CheckLen(weight_scales.len, MulSize({(out_features + 31) / 32, e.len / 32}, "weightScales"),
             "weightScales [ceil(out/32)][in/32]");
    const std::vector<uint16_t> y = WkvOnBackend(
        std::span<const uint16_t>(e.data, e.len), e.len, out_features, [&]<class Backend>() {
          return std::make_unique<engram::cuda::Wkv<Backend>>(
              static_cast<int64_t>(out_features), static_cast<int64_t>(e.len),
              std::span<const uint8_t>(weight_codes.data, weight_codes.len),
              std::span<const uint8_t>(weight_scales.data, weight_scales.len));
        });
    std::copy(y.begin(), y.end(), kv);
    return 0;
  });
}

int engram_demo_gate(const engram_demo_params_t* params, engram_f64_span_t e, engram_f64_span_t hidden, double* gate,
                     double* value, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const DemoLayer q(params);
    CheckLen(e.len, params->in, "e [in]");
    CheckLen(hidden.len, params->hc * params->hidden, "hidden [hc][hidden]");
    const std::vector<float> ef = ToFloats(e.data, e.len), hf = ToFloats(hidden.data, hidden.len);
    OnBackend([&]<class Backend>() {
      engram::cuda::FusionDemo<Backend> demo(q.w);
      const std::vector<float> v = demo.Gate(ef, hf);
      std::copy(v.begin(), v.end(), value);
      std::copy(demo.gates().begin(), demo.gates().end(), gate);
    });
    return 0;
  });
}

int engram_short_conv(const engram_demo_params_t* params, size_t steps, engram_f64_span_t value, double* output,
                      char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const DemoLayer q(params);
    if (steps > static_cast<size_t>(INT64_MAX)) throw Error("steps: " + std::to_string(steps) + " is too large");
    CheckLen(value.len, MulSize({steps, params->hc, params->hidden}, "value"), "value [steps][hc][hidden]");
    const std::vector<float> vf = ToFloats(value.data, value.len);
    OnBackend([&]<class Backend>() {
      engram::cuda::FusionDemo<Backend> demo(q.w);
      const std::vector<float> o = demo.ShortConv(vf, static_cast<int64_t>(steps));
      std::copy(o.begin(), o.end(), output);
    });
    return 0;
  });
}

int engram_forward_v41(const engram_layout* layout, uint64_t table_seed, const engram_v41_fusion_params_t* params,
                       const int64_t* ids, size_t n, engram_bf16_span_t x, uint16_t* out, double* gate, size_t gate_len,
                       size_t* gate_count, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (layout == nullptr) throw Error("layout: NULL");
    if (params == nullptr) throw Error("params: NULL");
    const engram::EngramConfig& cfg = layout->config;
    const engram::Layout& lay = layout->layout;
    if (cfg.profile != engram::Profile::kV41) throw Error("layout: not a v4.1 configuration");
    if (lay.layers.empty()) throw Error("layout: no layers");
    if (cfg.hidden_size < 1 || cfg.hc_mult < 1 || cfg.hidden_size > INT32_MAX || cfg.hc_mult > INT32_MAX) {
      throw Error("layout: the configuration gives no usable dim / hc_mult");
    }
    const size_t dim = static_cast<size_t>(cfg.hidden_size), hc = static_cast<size_t>(cfg.hc_mult);
    const size_t hd = static_cast<size_t>(cfg.head_dim), cols = static_cast<size_t>(lay.columns());
    const size_t in = cols * hd, nout = dim * (hc + 1);
    CheckLen(x.len, MulSize({n, hc, dim}, "x"), "x [n][hc][dim]");
    CheckLen(params->q_weight.len, hc * dim, "qWeight [hc][dim]");
    CheckLen(params->k_weight.len, hc * dim, "kWeight [hc][dim]");
    CheckLen(params->wkv_codes.len, MulSize({nout, in}, "wkvWeightCodes"), "wkvWeightCodes [dim*(hc+1)][columns*head_dim]");
    CheckLen(params->wkv_scales.len, ((nout + 31) / 32) * (in / 32), "wkvWeightScales [ceil(out/32)][in/32]");
    CheckCapacity(gate_len, n * hc, "gate");
    // §FUS.10 ids -> the first layer's rows (hash kernels) -> table rows (lookup
    // kernel) -> fp8 wkv (Wkv) -> gate and update (FusionV41).
    const std::vector<int64_t> rows = FirstLayerKernelRows(lay, ids, n);
    const auto table = engram::SyntheticTable(table_seed, lay.layers[0].num_embeddings, static_cast<int64_t>(hd));
    const std::vector<uint16_t> e = KernelRows(*table, rows, 0, table->rows());
    OnBackend([&]<class Backend>() {
      engram::cuda::Wkv<Backend> wkv(static_cast<int64_t>(nout), static_cast<int64_t>(in),
                                     std::span<const uint8_t>(params->wkv_codes.data, params->wkv_codes.len),
                                     std::span<const uint8_t>(params->wkv_scales.data, params->wkv_scales.len));
      const std::vector<uint16_t> kv = wkv.Apply(e);
      // kv[t] = keys [hc][dim], then the value [dim] (§FUS.2).
      std::vector<uint16_t> keys, values;
      std::vector<uint8_t> live(n);
      for (size_t t = 0; t < n; ++t) {
        keys.insert(keys.end(), kv.begin() + static_cast<std::ptrdiff_t>(t * nout),
                    kv.begin() + static_cast<std::ptrdiff_t>(t * nout + hc * dim));
        values.insert(values.end(), kv.begin() + static_cast<std::ptrdiff_t>(t * nout + hc * dim),
                      kv.begin() + static_cast<std::ptrdiff_t>((t + 1) * nout));
        live[t] = ids[t] == -1 ? 0 : 1;  // §HASH.1 DEAD = a masked position (§FUS.3)
      }
      engram::cuda::FusionV41<Backend> fusion(static_cast<int32_t>(hc), static_cast<int32_t>(dim), cfg.norm_eps,
                                              std::span<const uint16_t>(params->q_weight.data, params->q_weight.len),
                                              std::span<const uint16_t>(params->k_weight.data, params->k_weight.len));
      const std::vector<uint16_t> o = fusion.Apply(std::span<const uint16_t>(x.data, x.len), keys, values, live);
      std::copy(o.begin(), o.end(), out);
      std::copy(fusion.gates().begin(), fusion.gates().end(), gate);
    });
    *gate_count = n * hc;
    return 0;
  });
}

int engram_float_table_lookup(uint64_t seed, int64_t rows, int64_t width, const int64_t* row_ids, size_t n, float* out,
                              size_t out_len, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (rows < 1) throw Error("rows: " + std::to_string(rows) + " (a table has at least one row)");
    if (width < 1) throw Error("width: " + std::to_string(width) + " (at least 1)");
    CheckCapacity(out_len, MulSize({n, static_cast<size_t>(width)}, "out"), "out");
    const auto table = engram::SyntheticFloatTable(seed, rows, width);
    const std::vector<float> v = KernelFloatRows(*table, std::span<const int64_t>(row_ids, n));
    std::copy(v.begin(), v.end(), out);
    return 0;
  });
}

int engram_forward_demo(const engram_layout* layout, uint64_t table_seed, const engram_demo_params_t* params,
                        const int64_t* ids, size_t n, engram_f64_span_t hidden, double* output, double* hidden_after,
                        double* gate, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    if (layout == nullptr) throw Error("layout: NULL");
    const engram::Layout& lay = layout->layout;
    if (layout->config.profile != engram::Profile::kDemoV1) throw Error("layout: not a demo-v1 configuration");
    if (lay.layers.empty()) throw Error("layout: no layers");
    const DemoLayer q(params);
    const size_t cols = static_cast<size_t>(lay.columns());
    if (params->in % cols != 0) {
      throw Error("params: in = " + std::to_string(params->in) + " is not a multiple of the " + std::to_string(cols) +
                  " columns");
    }
    CheckLen(hidden.len, MulSize({n, params->hc, params->hidden}, "hidden"), "hidden [n][hc][hidden]");
    const std::vector<int64_t> rows = FirstLayerKernelRows(lay, ids, n);
    // §STO.10 The float table's rows through the gather kernel (the table's
    // values are the reference's synthetic ones: an input).
    const auto table = engram::SyntheticFloatTable(table_seed, lay.layers[0].num_embeddings,
                                                   static_cast<int64_t>(params->in / cols));
    const std::vector<float> e = KernelFloatRows(*table, rows);
    const std::vector<float> hf = ToFloats(hidden.data, hidden.len);
    OnBackend([&]<class Backend>() {
      engram::cuda::FusionDemo<Backend> demo(q.w);
      const std::vector<float> o = demo.Forward(e, hf, static_cast<int64_t>(n));
      std::copy(o.begin(), o.end(), output);
      std::copy(demo.hidden_after().begin(), demo.hidden_after().end(), hidden_after);
      std::copy(demo.gates().begin(), demo.gates().end(), gate);
    });
    return 0;
  });
}

}  // extern "C"
