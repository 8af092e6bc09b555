// cuda/cuda_plugin.cc — engram::cuda as a conformance plug-in (spec §CONF.3).
//
// libengram_cuda_plugin.so exports the C ABI of conformance/include/engram/
// conformance.h for what the CUDA implementation computes, so that
// `engram conform --lib` checks it through the same plug-in host as the
// reference and any port (issue #5: the runner has no special path for it).
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
//    Hasher<Backend> per sequence. The rows and the slot's state (position and
//    history, §HASH.5) are the kernels' own; rollback and fork (§HASH.6) go
//    through GetSlot/SetSlot, with the plug-in keeping the last
//    max_ngram - 1 + rollback_capacity ids on the host so that a rollback can
//    restore the earlier history (the CUDA state keeps only max_ngram - 1).
//  * the layout (§LAY) is built by the reference: it is an input of the CUDA
//    hasher, not something it computes. The `layout` and `multipliers` suites
//    are therefore not claimed.
//  * fp8_decode: DecodeElementBits of cuda/engram_kernels.h, through the lookup
//    kernel over a table whose row s holds every code 0x00..0xFF with scale s.
//  * table_lookup, tp_shard: the lookup kernel (Lookup<Backend>) over a small
//    table holding just the rows a call needs (the vectors' tables are
//    real-size, ~10^11 bytes); ids are remapped into it. Row shards use the
//    kernel's own shard path (ids outside the shard give +0 rows); the
//    all_reduce is Bf16SumAsDevice, the host model of NCCL's bf16 sum that
//    engram::cuda's tensor-parallel emulation uses (one GPU cannot run a
//    multi-rank NCCL communicator).
//  * gate_v41: engram_v41_gate through FusionV41<Backend> (FusionGateThread,
//    FusionUpdateThread). engram_gate (the gate as a function of a given dot)
//    and wkv are not part of engram::cuda: those tests are `skipped`.
// Not exported (their tests are skipped or their suites unclaimed): the float
// table of demo-v1, the token map, the demo-v1 fusion, ShortConv, forward.
#include "engram/conformance.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/plugins/plugin_inputs.h"
#include "cuda/engram_cuda.h"
#include "reference/config.h"
#include "reference/error.h"
#include "reference/layout.h"
#include "reference/storage.h"

namespace {

using engram::plugin::CheckCapacity;
using engram::plugin::CheckLen;
using engram::plugin::Refuse;

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

constexpr const char* kSuites = "hash_v41,hash_demo,hash_state,accumulated,fp8_decode,table_lookup,tp_shard,gate_v41";

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
  virtual engram::cuda::SlotState Get() = 0;
  virtual void Set(const engram::cuda::SlotState& s) = 0;
};

template <class Backend>
class SlotHasherOn final : public SlotHasher {
 public:
  explicit SlotHasherOn(const engram::Layout& layout) : h_(layout, 1) {}
  std::vector<int64_t> Append(std::span<const int64_t> ids) override {
    const int32_t slot = 0;
    const int64_t length = static_cast<int64_t>(ids.size());
    return h_.Append(std::span<const int32_t>(&slot, 1), std::span<const int64_t>(&length, 1), ids);
  }
  engram::cuda::SlotState Get() override { return h_.GetSlot(0); }
  void Set(const engram::cuda::SlotState& s) override { h_.SetSlot(0, s); }

 private:
  engram::cuda::Hasher<Backend> h_;
};

std::unique_ptr<SlotHasher> NewSlotHasher(const engram::Layout& layout) {
  return OnBackend([&]<class Backend>() -> std::unique_ptr<SlotHasher> {
    return std::make_unique<SlotHasherOn<Backend>>(layout);
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
  // §HASH.6 The last max_ngram - 1 + capacity ids, oldest first: what a
  // rollback needs beyond the slot's max_ngram - 1.
  std::vector<int64_t> recent;
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
  try {
    if (layout == nullptr) throw Error("layout: NULL");
    return new engram_hasher{layout, NewSlotHasher(layout->layout), rollback_capacity, {}};
  } catch (const std::exception& e) {
    Refuse(e, err, err_len);
    return nullptr;
  }
}

engram_hasher* engram_hasher_fork(const engram_hasher* h) {
  try {
    // §HASH.6 A fork is a second slot holding the same state (SetSlot(b, GetSlot(a))).
    auto copy = std::make_unique<engram_hasher>();
    copy->layout = h->layout;
    copy->slot = NewSlotHasher(h->layout->layout);
    copy->slot->Set(h->slot->Get());
    copy->capacity = h->capacity;
    copy->recent = h->recent;
    return copy.release();
  } catch (const std::exception&) {
    return nullptr;  // the ABI gives fork no error buffer
  }
}

void engram_hasher_destroy(engram_hasher* h) { delete h; }

int engram_hasher_append(engram_hasher* h, const int64_t* ids, size_t n, int64_t* rows, char* err, size_t err_len) {
  try {
    // The kernels check the ids (§HASH.1) and change no state when one is refused.
    const std::vector<int64_t> out = h->slot->Append(std::span<const int64_t>(ids, n));
    std::copy(out.begin(), out.end(), rows);
    h->recent.insert(h->recent.end(), ids, ids + n);
    const size_t keep = static_cast<size_t>(h->layout->layout.max_ngram - 1) + h->capacity;
    if (h->recent.size() > keep) h->recent.erase(h->recent.begin(), h->recent.end() - static_cast<std::ptrdiff_t>(keep));
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int engram_hasher_rollback(engram_hasher* h, size_t k, char* err, size_t err_len) {
  try {
    const engram::cuda::SlotState now = h->slot->Get();
    if (static_cast<int64_t>(k) > now.position) {
      throw Error("rollback by " + std::to_string(k) + " but only " + std::to_string(now.position) + " ids were fed");
    }
    // §HASH.6 The state after the rollback needs the min(position, max_ngram - 1)
    // ids before the new position: they must still be on record.
    engram::cuda::SlotState then;
    then.position = now.position - static_cast<int64_t>(k);
    const size_t needed = static_cast<size_t>(std::min<int64_t>(then.position, h->layout->layout.max_ngram - 1));
    if (h->recent.size() < k + needed) {
      throw Error("rollback by " + std::to_string(k) + " exceeds the retained history (rollback capacity " +
                  std::to_string(h->capacity) + ")");
    }
    const auto end = h->recent.end() - static_cast<std::ptrdiff_t>(k);
    then.history.assign(end - static_cast<std::ptrdiff_t>(needed), end);
    h->slot->Set(then);
    h->recent.resize(h->recent.size() - k);
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int64_t engram_hasher_position(const engram_hasher* h) {
  try {
    return h->slot->Get().position;
  } catch (const std::exception&) {
    return -1;  // a backend failure; the ABI has no error buffer here
  }
}

size_t engram_hasher_history(const engram_hasher* h, int64_t* ids) {
  try {
    const engram::cuda::SlotState s = h->slot->Get();
    std::copy(s.history.begin(), s.history.end(), ids);
    return s.history.size();
  } catch (const std::exception&) {
    return 0;
  }
}

int engram_hasher_import(engram_hasher* h, int64_t position, const int64_t* ids, size_t count,
                         const char* layout_fingerprint, char* err, size_t err_len) {
  try {
    // §HASH.9 A history from another layout would silently hash differently.
    const std::string fp = layout_fingerprint != nullptr ? layout_fingerprint : "";
    if (!fp.empty() && fp != h->layout->fingerprint) {
      throw Error("history: layoutFingerprint " + fp + " is not this layout's " + h->layout->fingerprint);
    }
    // SetSlot refuses a negative position, a count other than
    // min(position, max_ngram - 1) and ids that are not compressed ids.
    engram::cuda::SlotState s{position, std::vector<int64_t>(ids, ids + count)};
    h->slot->Set(s);
    h->recent = s.history;
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

// ---------------------------------------------------------------- §STO decode and tables (the lookup kernel)

int engram_decode_element(uint8_t code, uint8_t scale, uint16_t* bf16_bits, char* err, size_t err_len) {
  try {
    *bf16_bits = DecodedPairs()[static_cast<size_t>(scale) * 256 + code];
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int engram_table_lookup(const engram_table* table, const int64_t* row_ids, size_t n, uint16_t* out, size_t out_len,
                        char* err, size_t err_len) {
  try {
    const engram::RowSource& src = *table->source;
    CheckCapacity(out_len, n * static_cast<size_t>(src.head_dim()), "out");
    const std::span<const int64_t> ids(row_ids, n);
    CheckRowIds(src, ids);
    const std::vector<uint16_t> v = KernelRows(src, ids, 0, src.rows());
    std::copy(v.begin(), v.end(), out);
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int engram_table_row_shard_lookup(const engram_table* table, int32_t rank, int32_t world, const int64_t* row_ids,
                                  size_t n, uint16_t* out, size_t out_len, char* err, size_t err_len) {
  try {
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
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int engram_shard_reduce(const uint16_t* partials, int32_t world, size_t count, uint16_t* out, char* err,
                        size_t err_len) {
  try {
    if (world < 1) throw Error("world: " + std::to_string(world) + " (at least 1)");
    // §STO.7 rank 0 first; world 1 is no all_reduce at all (the partial, −0 kept).
    std::copy(partials, partials + count, out);
    for (int32_t r = 1; r < world; ++r) {
      const uint16_t* part = partials + static_cast<size_t>(r) * count;
      for (size_t i = 0; i < count; ++i) out[i] = engram::cuda::Bf16SumAsDevice(out[i], part[i]);
    }
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int engram_table_head_shard_lookup(const engram_table* table, int32_t rank, int32_t world, int32_t columns,
                                   const int64_t* row_ids, size_t n, uint16_t* out, size_t out_len, size_t* written,
                                   char* err, size_t err_len) {
  try {
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
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

// ---------------------------------------------------------------- §FUS.3 the v4.1 gate after wkv (FusionV41<Backend>)

int engram_v41_gate(size_t dim, size_t hc, double eps, engram_bf16_span_t x, engram_bf16_span_t key,
                    engram_bf16_span_t value, engram_bf16_span_t q_weight, engram_bf16_span_t k_weight, int32_t masked,
                    double* gate, uint16_t* out, char* err, size_t err_len) {
  try {
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
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

}  // extern "C"
