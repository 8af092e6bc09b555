// cuda/storage_impl.h — the host-side logic of Lookup (cuda/engram_cuda.h),
// shared by both backends: argument checks, buffers, kernel arguments and
// error messages. Included by host_launch.cc (HostBackend) and engram_cuda.cu
// (DeviceBackend), which instantiate the templates. Internal.
#ifndef ENGRAM_CUDA_STORAGE_IMPL_H_
#define ENGRAM_CUDA_STORAGE_IMPL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/engram_cuda.h"
#include "base/error.h"

namespace engram::cuda {

// ---------------------------------------------------------------------------
// Lookup
// ---------------------------------------------------------------------------

template <class Backend>
void Lookup<Backend>::Allocate(int64_t stored_rows, TableMemory memory) {
  memory_ = memory;
  table_bytes_ = stored_rows * args_.row_bytes;
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(table_bytes_, 8));
  if (memory == TableMemory::kHostMapped) {
    host_table_ = backend_.AllocHostMapped(bytes, &kernel_table_);
  } else {
    device_table_ = Buffer<Backend>(&backend_, bytes);
    kernel_table_ = device_table_.template as<void>();
  }
  args_.table = static_cast<const uint8_t*>(kernel_table_);
  error_ = Buffer<Backend>(&backend_, sizeof(unsigned long long));
}

template <class Backend>
Lookup<Backend>::Lookup(int64_t rows, int64_t head_dim, TableMemory memory, int device) : backend_(device) {
  if (head_dim <= 0 || head_dim % 32 != 0) throw Error("cuda lookup: head_dim " + std::to_string(head_dim) + " is not a positive multiple of 32");
  if (rows < 0) throw Error("cuda lookup: rows " + std::to_string(rows) + " is negative");
  args_.head_dim = head_dim;
  args_.row_bytes = head_dim + head_dim / 32;
  args_.rows = rows;
  args_.shard_begin = 0;
  args_.shard_end = rows;
  Allocate(rows, memory);
}

template <class Backend>
Lookup<Backend>::Lookup(const RowSource& source, TableMemory memory, int64_t shard_begin, int64_t shard_end, int device)
    : backend_(device) {
  const int64_t rows = source.rows();
  const int64_t head_dim = source.head_dim();
  if (head_dim <= 0 || head_dim % 32 != 0) {
    throw Error("cuda lookup: " + source.name() + " head_dim " + std::to_string(head_dim) + " is not a positive multiple of 32");
  }
  if (shard_end < 0) shard_end = rows;
  if (shard_begin < 0 || shard_begin > shard_end || shard_end > rows) {
    throw Error("cuda lookup: shard [" + std::to_string(shard_begin) + ", " + std::to_string(shard_end) +
                ") is not inside [0, " + std::to_string(rows) + ") of " + source.name());
  }
  args_.head_dim = head_dim;
  args_.row_bytes = head_dim + head_dim / 32;
  args_.rows = rows;
  args_.shard_begin = shard_begin;
  args_.shard_end = shard_end;
  Allocate(shard_end - shard_begin, memory);
  // §STO.4 packed rows: codes then scales.
  std::vector<uint8_t> packed(static_cast<size_t>(table_bytes_));
  for (int64_t r = shard_begin; r < shard_end; ++r) {
    const RowBytes row = source.Row(r);
    if (static_cast<int64_t>(row.codes.size()) != head_dim || static_cast<int64_t>(row.scales.size()) != head_dim / 32) {
      throw Error("cuda lookup: " + source.name() + " row " + std::to_string(r) + " has " + std::to_string(row.codes.size()) +
                  " codes and " + std::to_string(row.scales.size()) + " scales; expected " + std::to_string(head_dim) +
                  " and " + std::to_string(head_dim / 32));
    }
    uint8_t* dst = packed.data() + (r - shard_begin) * args_.row_bytes;
    std::copy(row.codes.begin(), row.codes.end(), dst);
    std::copy(row.scales.begin(), row.scales.end(), dst + head_dim);
  }
  if (memory == TableMemory::kHostMapped) {
    std::copy(packed.begin(), packed.end(), static_cast<uint8_t*>(host_table_));
  } else if (!packed.empty()) {
    backend_.ToBackend(kernel_table_, packed.data(), packed.size());
    backend_.Sync();
  }
}

template <class Backend>
Lookup<Backend>::~Lookup() {
  try {
    backend_.Sync();
  } catch (...) {
  }
  if (host_table_ != nullptr) backend_.FreeHostMapped(host_table_);
}

template <class Backend>
void Lookup<Backend>::Launch(const int64_t* ids, int64_t items, uint16_t* out, int64_t id_group, int64_t id_stride,
                             int64_t id_offset) {
  if (pending_) Finish();
  // The kernel stores 8 bf16 (16 bytes) at a time.
  if (reinterpret_cast<uintptr_t>(out) % 16 != 0) throw Error("cuda lookup: the output buffer is not 16-byte aligned");
  if (id_group < 1) throw Error("cuda lookup: id_group " + std::to_string(id_group) + " must be >= 1");
  LookupArgs a = args_;
  a.ids = ids;
  a.items = items;
  a.id_group = id_group;
  a.by_id_group = MakeFastDiv(static_cast<uint64_t>(id_group));
  a.by_row_threads = MakeFastDiv(static_cast<uint64_t>(a.head_dim / kElementsPerThread));
  a.id_stride = id_stride;
  a.id_offset = id_offset;
  a.out = out;
  a.error = error_.template as<unsigned long long>();
  backend_.Fill(a.error, 0xFF, sizeof(unsigned long long));
  if (items > 0) backend_.Lookup(a);
  last_ids_ = ids;
  last_group_[0] = id_group;
  last_group_[1] = id_stride;
  last_group_[2] = id_offset;
  pending_ = true;
}

template <class Backend>
void Lookup<Backend>::Finish() {
  if (!pending_) return;
  pending_ = false;
  unsigned long long bad = kNoError;
  backend_.ToHost(&bad, error_.template as<void>(), sizeof(bad));
  backend_.Sync();
  if (bad == kNoError) return;
  const int64_t item = static_cast<int64_t>(bad);
  const int64_t at = last_group_[2] + (item / last_group_[0]) * last_group_[1] + item % last_group_[0];
  int64_t id = 0;
  backend_.ToHost(&id, last_ids_ + at, sizeof(id));
  backend_.Sync();
  throw Error("row ids: index " + std::to_string(item) + " (row " + std::to_string(id) + ") is outside [0, " +
              std::to_string(args_.rows) + ")");
}

template <class Backend>
std::vector<uint16_t> Lookup<Backend>::Rows(std::span<const int64_t> ids) {
  const size_t n = ids.size();
  if (in_ids_.bytes() < n * sizeof(int64_t) || in_ids_.bytes() == 0) in_ids_ = Buffer<Backend>(&backend_, std::max<size_t>(8, n * sizeof(int64_t)));
  const size_t out_values = n * static_cast<size_t>(args_.head_dim);
  if (out_.bytes() < out_values * 2 || out_.bytes() == 0) out_ = Buffer<Backend>(&backend_, std::max<size_t>(16, out_values * 2));
  if (n > 0) backend_.ToBackend(in_ids_.template as<void>(), ids.data(), n * sizeof(int64_t));
  Launch(in_ids_.template as<int64_t>(), static_cast<int64_t>(n), out_.template as<uint16_t>());
  Finish();
  std::vector<uint16_t> out(out_values);
  if (out_values > 0) backend_.ToHost(out.data(), out_.template as<void>(), out_values * 2);
  backend_.Sync();
  return out;
}

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_STORAGE_IMPL_H_
