// cuda/hash_impl.h — the host-side logic of Hasher (cuda/engram_cuda.h),
// shared by both backends: argument checks, buffers, kernel arguments and
// error messages. Included by host_launch.cc (HostBackend) and engram_cuda.cu
// (DeviceBackend), which instantiate the templates. Internal.
#ifndef ENGRAM_CUDA_HASH_IMPL_H_
#define ENGRAM_CUDA_HASH_IMPL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/engram_cuda.h"
#include "base/error.h"

namespace engram::cuda {

// ---------------------------------------------------------------------------
// Hasher
// ---------------------------------------------------------------------------

template <class Backend>
Hasher<Backend>::Hasher(const Layout& layout, int32_t slots, const TokenMap* token_map, int device,
                        int32_t rollback_capacity)
    : backend_(device) {
  if (layout.max_ngram < 2 || layout.heads < 1 || layout.layers.empty()) {
    throw Error("cuda hasher: layout needs max_ngram >= 2, heads >= 1 and a layer (got max_ngram " +
                std::to_string(layout.max_ngram) + ", heads " + std::to_string(layout.heads) + ", " +
                std::to_string(layout.layers.size()) + " layers)");
  }
  if (slots < 1) throw Error("cuda hasher: slots must be >= 1, got " + std::to_string(slots));
  // A slot's row holds max_ngram - 1 + capacity ids, counted in int32 by the kernels.
  if (rollback_capacity < 0 || rollback_capacity > INT32_MAX - (layout.max_ngram - 1)) {
    throw Error("cuda hasher: rollback capacity " + std::to_string(rollback_capacity) + " is outside [0, " +
                std::to_string(INT32_MAX - (layout.max_ngram - 1)) + "]");
  }
  layers_ = static_cast<int32_t>(layout.layers.size());
  columns_ = layout.columns();
  keep_ = layout.max_ngram - 1;
  slots_ = slots;
  capacity_ = rollback_capacity;

  // §RNG.4 multipliers and §HASH.7 division-free constants, per layer.
  std::vector<int64_t> multipliers;
  std::vector<HashColumn> columns;
  for (const LayerLayout& l : layout.layers) {
    multipliers.insert(multipliers.end(), l.multipliers.begin(), l.multipliers.end());
    for (int col = 0; col < columns_; ++col) {
      const uint64_t p = static_cast<uint64_t>(l.prime(col));
      if (p < 2 || p >= (uint64_t{1} << 63)) throw Error("cuda hasher: prime " + std::to_string(p) + " outside [2, 2^63)");
      const int64_t n = 2 + col / layout.heads;  // §HASH.4 col = (n - 2) * heads + head
      const int64_t layer = static_cast<int64_t>(columns.size()) / columns_;
      columns.push_back(HashColumn{p, UINT64_MAX / p, l.offsets[static_cast<size_t>(col)], layer * keep_ + n - 2});
    }
  }
  multipliers_ = Buffer<Backend>(&backend_, multipliers.size() * sizeof(int64_t));
  backend_.ToBackend(multipliers_.template as<void>(), multipliers.data(), multipliers_.bytes());
  columns_buf_ = Buffer<Backend>(&backend_, columns.size() * sizeof(HashColumn));
  backend_.ToBackend(columns_buf_.template as<void>(), columns.data(), columns_buf_.bytes());

  base_.layers = layers_;
  base_.max_ngram = layout.max_ngram;
  base_.heads = layout.heads;
  base_.v41 = layout.profile == Profile::kV41 ? 1 : 0;
  base_.pad = layout.pad;
  base_.vocab = layout.compressed_vocab_size;
  base_.capacity = capacity_;
  base_.by_token_values = MakeFastDiv(static_cast<uint64_t>(layers_) * static_cast<uint64_t>(columns_));
  base_.multipliers = multipliers_.template as<int64_t>();
  base_.columns = columns_buf_.template as<HashColumn>();
  if (token_map != nullptr) {
    for (int64_t c : token_map->map) {
      if (c < 0 || c >= layout.compressed_vocab_size) {
        throw Error("cuda hasher: token map " + token_map->source + " has compressed id " + std::to_string(c) +
                    " outside [0, " + std::to_string(layout.compressed_vocab_size) + ")");
      }
    }
    map_ = Buffer<Backend>(&backend_, std::max<size_t>(1, token_map->map.size()) * sizeof(int64_t));
    if (!token_map->map.empty()) backend_.ToBackend(map_.template as<void>(), token_map->map.data(), token_map->map.size() * sizeof(int64_t));
    base_.token_map = map_.template as<int64_t>();
    base_.map_size = token_map->tokens();
  }
  positions_ = Buffer<Backend>(&backend_, static_cast<size_t>(slots) * sizeof(int64_t));
  retained_ = Buffer<Backend>(&backend_, static_cast<size_t>(slots) * sizeof(int64_t));
  history_ = Buffer<Backend>(&backend_, static_cast<size_t>(slots) * static_cast<size_t>(keep_ + capacity_) * sizeof(int64_t));
  error_ = Buffer<Backend>(&backend_, sizeof(unsigned long long));
  backend_.Fill(positions_.template as<void>(), 0, positions_.bytes());
  backend_.Fill(retained_.template as<void>(), 0, retained_.bytes());
  backend_.Fill(history_.template as<void>(), 0, history_.bytes());
  base_.positions = positions_.template as<int64_t>();
  base_.retained = retained_.template as<int64_t>();
  base_.history = history_.template as<int64_t>();
  base_.error = error_.template as<unsigned long long>();
  backend_.Sync();
}

template <class Backend>
Hasher<Backend>::~Hasher() {
  try {
    backend_.Sync();
  } catch (...) {  // never throw from a destructor; the buffers are freed anyway
  }
}

template <class Backend>
void Hasher<Backend>::Reserve(int64_t tokens, int32_t sequences) {
  (void)sequences;
  if (tokens <= token_capacity_) return;
  const int64_t cap = std::max<int64_t>(tokens, 2 * token_capacity_);
  compressed_ = Buffer<Backend>(&backend_, static_cast<size_t>(cap) * sizeof(int64_t));
  token_seq_ = Buffer<Backend>(&backend_, static_cast<size_t>(cap) * sizeof(int32_t));
  mixes_ = Buffer<Backend>(&backend_, static_cast<size_t>(cap) * static_cast<size_t>(layers_) * static_cast<size_t>(keep_) *
                                          sizeof(uint64_t));
  token_capacity_ = cap;
}

template <class Backend>
void Hasher<Backend>::CheckSlot(int32_t slot, const char* what) const {
  if (slot < 0 || slot >= slots_) {
    throw Error(std::string(what) + ": slot " + std::to_string(slot) + " is outside [0, " + std::to_string(slots_) + ")");
  }
}

template <class Backend>
void Hasher<Backend>::Launch(const int32_t* slots, const int64_t* offsets, int32_t sequences, const int64_t* ids,
                             int64_t tokens, int64_t* rows_out, const uint8_t* mask) {
  if (pending_) Finish();
  HashArgs a = base_;
  a.sequences = sequences;
  a.seq_offsets = offsets;
  a.seq_slots = slots;
  a.raw_ids = ids;
  a.tokens = tokens;
  a.mask = mask;
  a.rows = rows_out;
  Reserve(tokens, sequences);
  a.compressed = compressed_.template as<int64_t>();
  a.token_seq = token_seq_.template as<int32_t>();
  a.mixes = mixes_.template as<uint64_t>();
  backend_.Fill(a.error, 0xFF, sizeof(unsigned long long));  // kNoError
  if (tokens > 0) {
    backend_.Gather(a);
    backend_.Mix(a);
    backend_.Hash(a);
  }
  if (sequences > 0) backend_.Update(a);
  last_ids_ = ids;
  pending_ = true;
}

template <class Backend>
void Hasher<Backend>::Finish() {
  if (!pending_) return;
  pending_ = false;
  unsigned long long bad = kNoError;
  backend_.ToHost(&bad, error_.template as<void>(), sizeof(bad));
  backend_.Sync();
  if (bad == kNoError) return;
  int64_t id = 0;
  backend_.ToHost(&id, last_ids_ + bad, sizeof(id));
  backend_.Sync();
  const bool v41 = base_.v41 != 0;
  std::string why;
  if (base_.token_map != nullptr) {
    why = v41 && id < 0 ? "is negative; v4.1 accepts only -1 (masked)"
                        : "is not a token id: must be < " + std::to_string(base_.map_size);
  } else {
    why = id >= base_.vocab ? "is not a compressed id: must be < " + std::to_string(base_.vocab)
                            : "is negative; v4.1 compressed ids are in [0, " + std::to_string(base_.vocab) + ") or -1 (DEAD)";
  }
  throw Error("ids: position " + std::to_string(bad) + " (id " + std::to_string(id) + ") " + why +
              " (no slot state was changed)");
}

template <class Backend>
std::vector<int64_t> Hasher<Backend>::Append(std::span<const int32_t> slots, std::span<const int64_t> lengths,
                                             std::span<const int64_t> ids, std::span<const uint8_t> mask) {
  if (slots.size() != lengths.size()) {
    throw Error("batch: " + std::to_string(slots.size()) + " slots but " + std::to_string(lengths.size()) + " lengths");
  }
  if (slots.size() > static_cast<size_t>(INT32_MAX)) throw Error("batch: too many sequences");
  std::vector<int64_t> offsets{0};
  std::vector<uint8_t> seen(static_cast<size_t>(slots_), 0);
  for (size_t q = 0; q < slots.size(); ++q) {
    CheckSlot(slots[q], ("batch: sequence " + std::to_string(q)).c_str());
    if (seen[static_cast<size_t>(slots[q])]++) {
      throw Error("batch: sequence " + std::to_string(q) + " uses slot " + std::to_string(slots[q]) +
                  " again; the slots of one batch must be distinct");
    }
    if (lengths[q] < 0) throw Error("batch: sequence " + std::to_string(q) + " has length " + std::to_string(lengths[q]));
    offsets.push_back(offsets.back() + lengths[q]);
  }
  if (offsets.back() != static_cast<int64_t>(ids.size())) {
    throw Error("batch: the lengths add up to " + std::to_string(offsets.back()) + " but there are " +
                std::to_string(ids.size()) + " ids");
  }
  if (!mask.empty()) {
    if (mask.size() != ids.size()) {
      throw Error("mask has " + std::to_string(mask.size()) + " entries but there are " + std::to_string(ids.size()) + " ids");
    }
    if (!base_.v41) throw Error("mask: demo-v1 has no masking (only v4.1 marks positions DEAD)");
    if (base_.token_map == nullptr) throw Error("mask: only raw ids (a hasher with a token map) take a mask");
  }
  const int64_t tokens = static_cast<int64_t>(ids.size());
  const int32_t sequences = static_cast<int32_t>(slots.size());
  auto upload = [&](Buffer<Backend>& buf, const void* src, size_t bytes) {
    if (buf.bytes() < bytes || buf.bytes() == 0) buf = Buffer<Backend>(&backend_, std::max<size_t>(bytes, 8));
    if (bytes > 0) backend_.ToBackend(buf.template as<void>(), src, bytes);
  };
  upload(in_ids_, ids.data(), ids.size() * sizeof(int64_t));
  upload(in_offsets_, offsets.data(), offsets.size() * sizeof(int64_t));
  upload(in_slots_, slots.data(), slots.size() * sizeof(int32_t));
  if (!mask.empty()) upload(in_mask_, mask.data(), mask.size());
  const size_t out_values = static_cast<size_t>(tokens) * static_cast<size_t>(values_per_token());
  if (out_rows_.bytes() < out_values * sizeof(int64_t) || out_rows_.bytes() == 0) {
    out_rows_ = Buffer<Backend>(&backend_, std::max<size_t>(out_values * sizeof(int64_t), 8));
  }
  Launch(in_slots_.template as<int32_t>(), in_offsets_.template as<int64_t>(), sequences, in_ids_.template as<int64_t>(),
         tokens, out_rows_.template as<int64_t>(), mask.empty() ? nullptr : in_mask_.template as<uint8_t>());
  Finish();
  std::vector<int64_t> rows(out_values);
  if (out_values > 0) backend_.ToHost(rows.data(), out_rows_.template as<void>(), out_values * sizeof(int64_t));
  backend_.Sync();
  return rows;
}

template <class Backend>
SlotState Hasher<Backend>::GetSlot(int32_t slot, bool with_rollback_ids) {
  CheckSlot(slot, "get slot");
  if (pending_) Finish();
  SlotState s;
  int64_t retained = 0;
  const int32_t row = keep_ + capacity_;
  std::vector<int64_t> hist(static_cast<size_t>(row));
  backend_.ToHost(&s.position, base_.positions + slot, sizeof(int64_t));
  backend_.ToHost(&retained, base_.retained + slot, sizeof(int64_t));
  backend_.ToHost(hist.data(), base_.history + static_cast<int64_t>(slot) * row, hist.size() * sizeof(int64_t));
  backend_.Sync();
  const int64_t n = with_rollback_ids ? retained : std::min<int64_t>(s.position, keep_);
  s.history.assign(hist.end() - static_cast<std::ptrdiff_t>(n), hist.end());  // right-aligned
  return s;
}

template <class Backend>
void Hasher<Backend>::SetSlot(int32_t slot, const SlotState& state) {
  CheckSlot(slot, "set slot");
  if (pending_) Finish();
  if (state.position < 0) throw Error("set slot: position " + std::to_string(state.position) + " is negative");
  const int32_t row = keep_ + capacity_;
  const size_t least = static_cast<size_t>(std::min<int64_t>(state.position, keep_));
  const size_t most = static_cast<size_t>(std::min<int64_t>(state.position, row));
  if (state.history.size() < least || state.history.size() > most) {
    throw Error("set slot: position " + std::to_string(state.position) + " needs " +
                (least == most ? std::to_string(least) : std::to_string(least) + " to " + std::to_string(most)) +
                " history ids (rollback capacity " + std::to_string(capacity_) + "), got " +
                std::to_string(state.history.size()));
  }
  for (int64_t id : state.history) {
    if (id >= base_.vocab || (base_.v41 && id < -1)) {
      throw Error("set slot: history id " + std::to_string(id) + " is not a compressed id of this layout");
    }
  }
  const int64_t retained = static_cast<int64_t>(state.history.size());
  std::vector<int64_t> hist(static_cast<size_t>(row), 0);
  std::copy(state.history.begin(), state.history.end(), hist.end() - static_cast<std::ptrdiff_t>(retained));
  backend_.ToBackend(base_.positions + slot, &state.position, sizeof(int64_t));
  backend_.ToBackend(base_.retained + slot, &retained, sizeof(int64_t));
  backend_.ToBackend(base_.history + static_cast<int64_t>(slot) * row, hist.data(), hist.size() * sizeof(int64_t));
  backend_.Sync();
}

template <class Backend>
void Hasher<Backend>::SlotBatch(std::span<const int32_t> slots, std::span<const int64_t> counts,
                                std::span<const int32_t> to) {
  if (pending_) Finish();
  const bool rollback = to.empty();
  const char* what = rollback ? "rollback" : "fork";
  std::vector<uint8_t> used(static_cast<size_t>(slots_), 0);  // rollback: slots; fork: targets
  for (size_t e = 0; e < slots.size(); ++e) {
    CheckSlot(slots[e], (std::string(what) + ": entry " + std::to_string(e)).c_str());
    if (rollback && used[static_cast<size_t>(slots[e])]++) {
      throw Error("rollback: entry " + std::to_string(e) + " names slot " + std::to_string(slots[e]) +
                  " again; the slots of one call must be distinct");
    }
  }
  if (!rollback) {
    std::vector<uint8_t> source(static_cast<size_t>(slots_), 0);
    for (int32_t s : slots) source[static_cast<size_t>(s)] = 1;
    for (size_t e = 0; e < to.size(); ++e) {
      CheckSlot(to[e], ("fork: entry " + std::to_string(e) + " target").c_str());
      if (used[static_cast<size_t>(to[e])]++ || source[static_cast<size_t>(to[e])]) {
        throw Error("fork: entry " + std::to_string(e) + " target slot " + std::to_string(to[e]) +
                    " is also a target or a source of this call; targets must be distinct and not sources");
      }
    }
  }
  if (slots.empty()) return;
  const size_t n = slots.size();
  Buffer<Backend> in_slots(&backend_, n * sizeof(int32_t));
  Buffer<Backend> in_other(&backend_, n * (rollback ? sizeof(int64_t) : sizeof(int32_t)));
  backend_.ToBackend(in_slots.template as<void>(), slots.data(), n * sizeof(int32_t));
  if (rollback) {
    backend_.ToBackend(in_other.template as<void>(), counts.data(), n * sizeof(int64_t));
  } else {
    backend_.ToBackend(in_other.template as<void>(), to.data(), n * sizeof(int32_t));
  }
  HashArgs a = base_;
  a.sequences = static_cast<int32_t>(n);
  a.seq_slots = in_slots.template as<int32_t>();
  if (!rollback) {
    a.fork_to = in_other.template as<int32_t>();
    backend_.Fork(a);
    backend_.Sync();
    return;
  }
  a.counts = in_other.template as<int64_t>();
  backend_.Fill(a.error, 0xFF, sizeof(unsigned long long));  // kNoError
  backend_.RollbackCheck(a);
  backend_.RollbackApply(a);
  unsigned long long bad = kNoError;
  backend_.ToHost(&bad, a.error, sizeof(bad));
  backend_.Sync();
  if (bad == kNoError) return;
  const size_t e = static_cast<size_t>(bad);
  int64_t position = 0, retained = 0;
  backend_.ToHost(&position, base_.positions + slots[e], sizeof(int64_t));
  backend_.ToHost(&retained, base_.retained + slots[e], sizeof(int64_t));
  backend_.Sync();
  const int64_t k = counts[e];
  std::string why;
  if (k < 0) {
    why = "is negative";
  } else if (k > position) {
    why = "exceeds the position " + std::to_string(position);
  } else {
    why = "needs " + std::to_string(k + std::min<int64_t>(position - k, keep_)) + " ids on record but " +
          std::to_string(retained) + " are retained (rollback capacity " + std::to_string(capacity_) + ")";
  }
  throw Error("rollback: entry " + std::to_string(e) + " (slot " + std::to_string(slots[e]) + ") by " +
              std::to_string(k) + " " + why + " (no slot state was changed)");
}

template <class Backend>
void Hasher<Backend>::Rollback(std::span<const int32_t> slots, std::span<const int64_t> counts) {
  if (slots.size() != counts.size()) {
    throw Error("rollback: " + std::to_string(slots.size()) + " slots but " + std::to_string(counts.size()) + " counts");
  }
  if (slots.size() > static_cast<size_t>(INT32_MAX)) throw Error("rollback: too many entries");
  SlotBatch(slots, counts, {});
}

template <class Backend>
void Hasher<Backend>::Fork(std::span<const int32_t> from, std::span<const int32_t> to) {
  if (from.size() != to.size()) {
    throw Error("fork: " + std::to_string(from.size()) + " sources but " + std::to_string(to.size()) + " targets");
  }
  if (from.size() > static_cast<size_t>(INT32_MAX)) throw Error("fork: too many entries");
  if (from.empty()) return;
  SlotBatch(from, {}, to);
}

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_HASH_IMPL_H_
