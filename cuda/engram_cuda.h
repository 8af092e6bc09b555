// cuda/engram_cuda.h — engram::cuda, the optimized CUDA/NCCL implementation.
//
// Three pieces, each checked bit for bit against the reference
// (reference/hash.h, reference/storage.h) by cuda/engram_cuda_test.cc:
//
//  * Hasher: compressed-id gather + every layer x column of every position,
//    for a batch of sequences of mixed lengths (prefill chunks and one-token
//    decode steps laid end to end, CSR style), with each sequence's state
//    (position + last max_ngram-1 compressed ids, §HASH.5) kept in a *slot*
//    in the backend's memory and updated by the kernels.
//  * Lookup: gather rows of a packed FP8 table (§STO.4) and decode
//    E4M3 x E8M0 -> bf16 (§STO.3), from device memory or from mapped pinned
//    host memory, optionally only a shard of the rows (§STO.7).
//  * TensorParallelLookup (device only): one shard per GPU, NCCL all_reduce.
//
// Every class is a template over a Backend:
//  * HostBackend (always built): host memory, kernels run by loops over the
//    same grid (cuda/host_launch.cc). CI runs these.
//  * DeviceBackend (engram_cuda.cu): a CUDA device and stream.
// DeviceHasher / DeviceLookup and HostHasher / HostLookup are the aliases.
//
// Errors (refused ids, bad arguments, CUDA and NCCL failures) are thrown as
// engram::Error naming the argument and value, or carrying
// cudaGetErrorString / ncclGetErrorString.
#ifndef ENGRAM_CUDA_ENGRAM_CUDA_H_
#define ENGRAM_CUDA_ENGRAM_CUDA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cuda/fusion_kernels.h"
#include "cuda/hash_kernels.h"
#include "cuda/storage_kernels.h"
#include "reference/layout.h"
#include "reference/storage.h"
#include "reference/token_map.h"

namespace engram::cuda {

// Number of CUDA devices; 0 when cudaGetDeviceCount fails (no driver, no GPU).
int DeviceCount();
// "NVIDIA H200, sm_90, 139.8 GiB" or the reason there is none.
std::string DeviceDescription(int device);

// The host launcher's grid loop (host_launch.cc's EmulateGrid) over a
// type-erased kernel function: thread(args, g) for every g in [0, n).
// HostBackend::Run (fusion_host.cc) goes through it.
void HostEmulateGrid(int64_t n, void (*thread)(const void* args, int64_t g), const void* args);

// Host memory, kernels emulated by loops (host_launch.cc).
class HostBackend {
 public:
  explicit HostBackend(int device = 0);
  void* Alloc(size_t bytes);
  void Free(void* p);
  // Memory the kernels can read that lives in host RAM (mapped pinned memory
  // on a device; plain memory here). *kernel_ptr is the address kernels use.
  void* AllocHostMapped(size_t bytes, void** kernel_ptr);
  void FreeHostMapped(void* p);
  void ToBackend(void* dst, const void* src, size_t bytes);
  void ToHost(void* dst, const void* src, size_t bytes);
  void Fill(void* dst, int byte, size_t bytes);
  void Gather(const HashArgs& a);
  void Mix(const HashArgs& a);
  void Hash(const HashArgs& a);
  void Update(const HashArgs& a);
  void RollbackCheck(const HashArgs& a);
  void RollbackApply(const HashArgs& a);
  void Fork(const HashArgs& a);
  void Lookup(const LookupArgs& a);
  void FusionGate(const FusionV41Args& a);
  void FusionUpdate(const FusionV41Args& a);
  // Runs F(a, g) for every g in [0, n) over the kernel grid: the generic
  // launch of the fusion kernels (cuda/fusion_kernels.h); defined and
  // instantiated in fusion_host.cc.
  template <class Args, void (*F)(const Args&, int64_t)>
  void Run(const Args& a, int64_t n);
  void Sync();
  int device() const { return device_; }
  static constexpr bool kEmulated = true;

 private:
  int device_;
};

// A CUDA device and a stream on it (engram_cuda.cu). Every call first makes
// `device` current.
class DeviceBackend {
 public:
  explicit DeviceBackend(int device = 0);
  ~DeviceBackend();
  DeviceBackend(const DeviceBackend&) = delete;
  DeviceBackend& operator=(const DeviceBackend&) = delete;
  void* Alloc(size_t bytes);
  void Free(void* p);
  void* AllocHostMapped(size_t bytes, void** kernel_ptr);
  void FreeHostMapped(void* p);
  void ToBackend(void* dst, const void* src, size_t bytes);
  void ToHost(void* dst, const void* src, size_t bytes);
  void Fill(void* dst, int byte, size_t bytes);
  void Gather(const HashArgs& a);
  void Mix(const HashArgs& a);
  void Hash(const HashArgs& a);
  void Update(const HashArgs& a);
  void RollbackCheck(const HashArgs& a);
  void RollbackApply(const HashArgs& a);
  void Fork(const HashArgs& a);
  void Lookup(const LookupArgs& a);
  void FusionGate(const FusionV41Args& a);
  void FusionUpdate(const FusionV41Args& a);
  // Launches F(a, g) for g in [0, n) on the stream (a templated __global__
  // wrapper); defined and instantiated in fusion_cuda.cu.
  template <class Args, void (*F)(const Args&, int64_t)>
  void Run(const Args& a, int64_t n);
  void Sync();
  int device() const { return device_; }
  void* stream() const { return stream_; }  // a cudaStream_t
  static constexpr bool kEmulated = false;

 private:
  int device_;
  void* stream_ = nullptr;
};

// A buffer in a backend's memory (RAII).
template <class Backend>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend* backend, size_t bytes) : backend_(backend), bytes_(bytes) {
    ptr_ = bytes > 0 ? backend->Alloc(bytes) : nullptr;
  }
  ~Buffer() { Reset(); }
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      Reset();
      backend_ = o.backend_; ptr_ = o.ptr_; bytes_ = o.bytes_;
      o.ptr_ = nullptr; o.bytes_ = 0;
    }
    return *this;
  }
  void Reset() {
    if (ptr_ != nullptr) backend_->Free(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  Backend* backend_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// The state of one slot (§HASH.5): position and the last
// min(position, max_ngram - 1) compressed ids, oldest first (the reference's
// HashState::position() / History()). With a rollback capacity, GetSlot(s,
// true) and SetSlot may carry up to `capacity` more (older) ids: the ones a
// rollback restores (§HASH.6).
struct SlotState {
  int64_t position = 0;
  std::vector<int64_t> history;
};

// §HASH The hash of a batch of sequences with per-slot state.
template <class Backend>
class Hasher {
 public:
  // `slots` states, all at position 0. With a token map the inputs are raw
  // tokenizer ids (compressed on the backend, §HASH.1); without, they are
  // compressed ids (checked as CheckCompressedIds does). Each slot keeps
  // `rollback_capacity` ids beyond the max_ngram - 1 that hashing needs, so
  // that Rollback can forget up to that many (§HASH.6), on the backend.
  Hasher(const Layout& layout, int32_t slots, const TokenMap* token_map = nullptr, int device = 0,
         int32_t rollback_capacity = 0);
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  // Hashes sequence q = ids[offset_q, offset_q + lengths[q]) (offsets are the
  // running sum of `lengths`) continuing the state of slot `slots[q]`, and
  // returns rows[t][layer][col] for all ids in order (§HASH.4). Slots in one
  // batch must be distinct. v4.1 `mask` (optional, one per id): 0 = DEAD.
  // Refused ids throw engram::Error naming the position in the batch and the
  // id; then no slot state changes.
  std::vector<int64_t> Append(std::span<const int32_t> slots, std::span<const int64_t> lengths,
                              std::span<const int64_t> ids, std::span<const uint8_t> mask = {});

  // The same on pointers in the backend's memory, asynchronously (nothing is
  // checked on the host; `slots` must be distinct and in range). `offsets`
  // has sequences + 1 entries, offsets[0] = 0. rows_out holds
  // tokens * layers * columns values. Call Finish() before reading anything.
  void Launch(const int32_t* slots, const int64_t* offsets, int32_t sequences, const int64_t* ids,
              int64_t tokens, int64_t* rows_out, const uint8_t* mask = nullptr);
  // Waits for the last Launch and throws if one of its ids was refused.
  void Finish();

  // §HASH.6 For every entry e, rolls slot slots[e] back by counts[e] ids:
  // afterwards it is the state after its first position - counts[e] ids.
  // Slots distinct. Refused with engram::Error naming the entry, slot, count
  // and what is on record when a count is negative, exceeds the position, or
  // needs ids no longer retained (rollback capacity); then no slot changes.
  void Rollback(std::span<const int32_t> slots, std::span<const int64_t> counts);
  // §HASH.6 For every entry e, slot to[e] becomes a copy of slot from[e]
  // (position and every id on record), on the backend. The targets must be
  // distinct and none may be a source of the same call.
  void Fork(std::span<const int32_t> from, std::span<const int32_t> to);

  // The slot's position and history; with_rollback_ids: every id on record
  // (up to max_ngram - 1 + rollback capacity), else the last min(position,
  // max_ngram - 1).
  SlotState GetSlot(int32_t slot, bool with_rollback_ids = false);
  // Sets a slot's state (a sequence moved here from elsewhere, §HASH.5 2, or
  // a fork: SetSlot(b, GetSlot(a, true))). history: at least min(position,
  // max-1) ids and at most min(position, max-1 + rollback capacity); the
  // older ones are what a later Rollback can restore (§HASH.9 import).
  void SetSlot(int32_t slot, const SlotState& state);
  void ResetSlot(int32_t slot) { SetSlot(slot, SlotState{}); }

  int32_t slots() const { return slots_; }
  int32_t rollback_capacity() const { return capacity_; }
  int64_t values_per_token() const { return static_cast<int64_t>(layers_) * columns_; }
  Backend& backend() { return backend_; }

 private:
  void Reserve(int64_t tokens, int32_t sequences);
  void CheckSlot(int32_t slot, const char* what) const;

  Backend backend_;
  HashArgs base_;  // layout, map and state pointers; batch fields per call
  // A rollback batch (slots, counts; `to` empty) or a fork batch (slots are the sources, `to` the targets).
  void SlotBatch(std::span<const int32_t> slots, std::span<const int64_t> counts, std::span<const int32_t> to);

  int32_t layers_ = 0, columns_ = 0, keep_ = 0, slots_ = 0, capacity_ = 0;
  Buffer<Backend> multipliers_, columns_buf_, map_, positions_, retained_, history_, error_;
  Buffer<Backend> compressed_, token_seq_, mixes_;  // scratch, grown as needed
  int64_t token_capacity_ = 0;
  // For the host-span Append only.
  Buffer<Backend> in_ids_, in_offsets_, in_slots_, in_mask_, out_rows_;
  const int64_t* last_ids_ = nullptr;  // for the error message of Finish()
  bool pending_ = false;
};

// Where a table's rows live.
enum class TableMemory { kBackend, kHostMapped };

// §STO.6 Lookup + decode from one packed FP8 table (one layer), or from the
// shard [shard_begin, shard_end) of it (§STO.7).
template <class Backend>
class Lookup {
 public:
  // Copies rows [shard_begin, shard_end) of `source` into packed rows in
  // backend memory or mapped pinned host memory. shard_end < 0: all rows.
  Lookup(const RowSource& source, TableMemory memory, int64_t shard_begin = 0, int64_t shard_end = -1,
         int device = 0);
  // An uninitialised table of `rows` packed rows (the benchmark fills it on
  // the device, through kernel_table(); tests use the RowSource constructor).
  Lookup(int64_t rows, int64_t head_dim, TableMemory memory, int device = 0);
  ~Lookup();
  Lookup(const Lookup&) = delete;
  Lookup& operator=(const Lookup&) = delete;

  // Decoded rows out[i][0..head_dim) for ids (global row ids, each in
  // [0, rows)); ids outside the shard give +0 rows. Throws engram::Error
  // naming the index and id of the first id outside [0, rows).
  std::vector<uint16_t> Rows(std::span<const int64_t> ids);

  // Asynchronous form on backend pointers (out 16-byte aligned); item i reads
  // ids[id_offset + (i / id_group) * id_stride + i % id_group].
  void Launch(const int64_t* ids, int64_t items, uint16_t* out, int64_t id_group = 1, int64_t id_stride = 1,
              int64_t id_offset = 0);
  void Finish();

  // The bytes of the table as kernels see them (packed rows of the shard).
  uint8_t* kernel_table() const { return static_cast<uint8_t*>(kernel_table_); }
  int64_t table_bytes() const { return table_bytes_; }
  int64_t head_dim() const { return args_.head_dim; }
  int64_t rows() const { return args_.rows; }
  Backend& backend() { return backend_; }

 private:
  void Allocate(int64_t stored_rows, TableMemory memory);

  Backend backend_;
  LookupArgs args_;
  TableMemory memory_;
  void* host_table_ = nullptr;    // mapped: the host address
  void* kernel_table_ = nullptr;  // what kernels read
  Buffer<Backend> device_table_, error_, in_ids_, out_;
  int64_t table_bytes_ = 0;
  const int64_t* last_ids_ = nullptr;
  int64_t last_group_[3] = {1, 1, 0};  // id_group, id_stride, id_offset of the last Launch
  bool pending_ = false;
};

// §FUS.3 The v4.1 gate and update after wkv for a batch of tokens: per
// (token, stream) the norms, dot product, signed square root, sigmoid and
// mask, then out = bf16(h + gate * v). Float32 throughout, operation for
// operation the mirror of reference/fusion.h (FuseV41Stream, kFloat32).
template <class Backend>
class FusionV41 {
 public:
  // q_weight, k_weight: [hc][dim] bf16 bits; eps: norm_eps.
  FusionV41(int32_t hc, int32_t dim, double eps, std::span<const uint16_t> q_weight, std::span<const uint16_t> k_weight,
            int device = 0);
  // x, key: [tokens][hc][dim]; value: [tokens][dim]; live (optional):
  // [tokens], 0 = masked. Returns out [tokens][hc][dim]; gates()/dots() then
  // hold [tokens][hc].
  std::vector<uint16_t> Apply(std::span<const uint16_t> x, std::span<const uint16_t> key,
                              std::span<const uint16_t> value, std::span<const uint8_t> live = {});
  // Asynchronous form on backend pointers (dot, gate: [tokens][hc] floats).
  void Launch(int64_t tokens, const uint16_t* x, const uint16_t* key, const uint16_t* value, const uint8_t* live,
              float* dot, float* gate, uint16_t* out);
  const std::vector<float>& gates() const { return gates_; }
  const std::vector<float>& dots() const { return dots_; }
  Backend& backend() { return backend_; }

 private:
  Backend backend_;
  FusionV41Args base_;
  Buffer<Backend> qw_, kw_;
  std::vector<float> gates_, dots_;
};

using HostHasher = Hasher<HostBackend>;
using DeviceHasher = Hasher<DeviceBackend>;
using HostLookup = Lookup<HostBackend>;
using DeviceLookup = Lookup<DeviceBackend>;
using HostFusionV41 = FusionV41<HostBackend>;
using DeviceFusionV41 = FusionV41<DeviceBackend>;

// §STO.7 The emulated tensor-parallel lookup: each rank's shard lookup by the
// host launcher, then the all_reduce(sum, bf16) as NCCL computes it on a GPU
// (Bf16SumAsDevice). Shards are engram::RowShard (§STO.7). Runs anywhere.
std::vector<uint16_t> HostTensorParallelLookup(const RowSource& source, std::span<const int64_t> ids, int world);
// a + b in bf16 as the GPU computes it (float add, round to nearest even;
// a NaN result is the canonical 0x7FFF of NVIDIA hardware).
uint16_t Bf16SumAsDevice(uint16_t a, uint16_t b);

// §STO.7 Tensor parallel on `world` GPUs (devices 0..world-1), one process,
// one NCCL communicator per rank (ncclCommInitAll), launches grouped with
// ncclGroupStart/End. Throws engram::Error with NCCL's or CUDA's message.
class TensorParallelLookup {
 public:
  TensorParallelLookup(const RowSource& source, int world, TableMemory memory = TableMemory::kBackend);
  ~TensorParallelLookup();
  TensorParallelLookup(const TensorParallelLookup&) = delete;
  TensorParallelLookup& operator=(const TensorParallelLookup&) = delete;
  // The summed rows (rank 0's buffer after the all_reduce).
  std::vector<uint16_t> Rows(std::span<const int64_t> ids);
  int world() const { return world_; }

 private:
  int world_;
  std::vector<std::unique_ptr<DeviceLookup>> ranks_;
  std::vector<void*> comms_;  // ncclComm_t
};

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_ENGRAM_CUDA_H_
