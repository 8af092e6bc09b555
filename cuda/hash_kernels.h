// cuda/hash_kernels.h — the per-element work of engram::cuda's hash kernels
// (§HASH.1-§HASH.6): compressed-id gather, rolling mix, residues, the slot
// state update, rollback and fork. The device mirror of reference/hash.*;
// the grid logic, the error slot and §HASH.7's division-free modulo are in
// kernel_common.h, whose rules these functions follow.
#ifndef ENGRAM_CUDA_HASH_KERNELS_H_
#define ENGRAM_CUDA_HASH_KERNELS_H_

#include <cstdint>

#include "cuda/kernel_common.h"

namespace engram::cuda {

// ---------------------------------------------------------------------------
// Hash kernels (§HASH.1-§HASH.5)
// ---------------------------------------------------------------------------

// One hash column (a (layer, order, head) bucket): its prime p, the
// precomputed m = floor((2^64 - 1) / p) of §HASH.7, the column's row offset,
// and which of a token's mixes it reduces, layer * (max_ngram - 1) + n - 2
// for its n-gram order n (col = (n - 2) * heads + head, §HASH.4), stored so
// that the kernel needs no division to find them.
struct HashColumn {
  uint64_t p = 0;
  uint64_t m = 0;
  int64_t offset = 0;
  int64_t mix = 0;
};

// Everything the hash kernels (gather, hash, state update, rollback, fork) read and write. Plain pointers into one
// memory space (device memory, or host memory for the emulation).
struct HashArgs {
  // Layout (§LAY, §RNG.4)
  int32_t layers = 0;
  int32_t max_ngram = 0;
  int32_t heads = 0;
  int32_t v41 = 1;           // 1: v4.1 (DEAD blocking), 0: demo-v1
  int64_t pad = 0;           // compressed pad id
  int64_t vocab = 0;         // V: compressed ids are < V
  const int64_t* multipliers = nullptr;  // [layers][max_ngram]
  const HashColumn* columns = nullptr;   // [layers][(max_ngram-1)*heads]

  // Compressed-id gather (§HASH.1). token_map == nullptr: the ids are already
  // compressed and are only checked.
  const int64_t* token_map = nullptr;    // [map_size] raw -> compressed
  int64_t map_size = 0;
  const uint8_t* mask = nullptr;         // optional [tokens]; v4.1: 0 marks DEAD

  // The batch: sequences laid end to end (CSR).
  int64_t tokens = 0;                    // total ids in the batch
  int32_t sequences = 0;
  const int64_t* seq_offsets = nullptr;  // [sequences + 1], seq_offsets[0] = 0
  const int32_t* seq_slots = nullptr;    // [sequences] state slot of each sequence
  const int64_t* raw_ids = nullptr;      // [tokens]

  // Per-slot state (§HASH.5, §HASH.6): position and the ids before it,
  // right-aligned in a row of max_ngram-1 + capacity: the last max_ngram-1
  // are what hashing reads, the capacity more are what Rollback restores.
  // retained[slot] counts the ids on record (the rest of the row is unused).
  int32_t capacity = 0;                  // rollback capacity (§HASH.6)
  int64_t* positions = nullptr;          // [slots]
  int64_t* retained = nullptr;           // [slots]
  int64_t* history = nullptr;            // [slots][max_ngram - 1 + capacity]

  // Index arithmetic of the hash kernel: values per token, layers * columns.
  FastDiv by_token_values;

  // Rollback and fork batches: entry e names slot seq_slots[e] (sequences
  // entries) and rolls it back by counts[e], or copies it to fork_to[e].
  const int64_t* counts = nullptr;
  const int32_t* fork_to = nullptr;

  // Scratch and outputs
  int64_t* compressed = nullptr;         // [tokens] compressed ids (gather output)
  int32_t* token_seq = nullptr;          // [tokens] sequence index of each token
  uint64_t* mixes = nullptr;             // [tokens][layers][max_ngram - 1] §HASH.3 mix of each order n = 2 ..
  int64_t* rows = nullptr;               // [tokens][layers][columns] (§HASH.4)
  unsigned long long* error = nullptr;   // smallest refused token index, kNoError if none
};

// Kernel 1, one thread per token: the sequence the token belongs to (binary
// search in the CSR offsets) and its compressed id, checked as §HASH.1 does.
ENGRAM_HD void GatherThread(const HashArgs& a, int64_t t) {
  // The last sequence whose offset is <= t. Empty sequences share offsets
  // with the next one; upper_bound skips them.
  int32_t lo = 0, hi = a.sequences;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (a.seq_offsets[mid] <= t) lo = mid; else hi = mid;
  }
  a.token_seq[t] = lo;

  const int64_t raw = a.raw_ids[t];
  int64_t id = raw;
  bool bad = false;
  if (a.token_map != nullptr) {
    if (a.v41) {
      // §HASH.1 raw -1 is a masked position; other negatives are refused; a
      // masked (mask[t] == 0) id must still be a valid token id.
      if (raw == -1) {
        id = -1;
      } else if (raw < 0 || raw >= a.map_size) {
        bad = true;
      } else {
        id = a.token_map[raw];
        if (a.mask != nullptr && a.mask[t] == 0) id = -1;
      }
    } else {
      // demo-v1 copies negative ids through unchanged.
      if (raw >= a.map_size) bad = true;
      else if (raw >= 0) id = a.token_map[raw];
    }
  } else {
    // Already compressed (CheckCompressedIds): < V; v4.1 also >= 0 or -1.
    if (raw >= a.vocab || (a.v41 && raw < -1)) bad = true;
  }
  if (bad) {
    RecordError(a.error, static_cast<unsigned long long>(t));
    id = a.pad;  // keeps the rest of the batch computing something defined
  }
  a.compressed[t] = id;
}

// Kernel 2, one thread per token: the rolling mix (§HASH.3) of every layer
// and n-gram order, mixes[t][layer][n - 2]. The window tok_s, s = 0 ..
// max_ngram - 1, comes from this chunk or else from the slot's history
// (§HASH.2), with the left padding and (v4.1) the DEAD blocking: once a slot
// is blocked, older slots are too. The mix of order n is the XOR of tok_s *
// multiplier[layer][s] over s < n, so the orders of a layer share one running
// XOR. Computed once per token here, not by each of the token's heads: the
// hash threads only reduce it. The window is re-read for each layer (cached
// loads) so that no per-thread array is needed (max_ngram is a runtime value).
ENGRAM_HD void MixThread(const HashArgs& a, int64_t t) {
  const int32_t orders = a.max_ngram - 1;
  const int32_t seq = a.token_seq[t];
  const int64_t i = t - a.seq_offsets[seq];  // index within this chunk
  const int32_t slot = a.seq_slots[seq];
  const int64_t pos = a.positions[slot] + i;  // §HASH.5 absolute position
  // The slot's last max-1 ids (right-aligned after the rollback capacity).
  const int64_t* hist = a.history + static_cast<int64_t>(slot) * (orders + a.capacity) + a.capacity;
  for (int32_t layer = 0; layer < a.layers; ++layer) {
    const int64_t* mult = a.multipliers + static_cast<int64_t>(layer) * a.max_ngram;
    uint64_t* out = a.mixes + (t * a.layers + layer) * orders;
    uint64_t rolling = 0;
    bool blocked = false;
    for (int32_t s = 0; s < a.max_ngram; ++s) {
      // §HASH.2 tok_s: s positions back; from this chunk, else from the history.
      const bool before_start = pos < s;
      int64_t x = a.pad;
      if (!before_start) x = i >= s ? a.compressed[t - s] : hist[orders + (i - s)];
      if (a.v41) {
        blocked = blocked || before_start || x == -1;  // once blocked, older slots stay blocked
      } else {
        blocked = before_start;  // demo-v1: left padding only
      }
      const int64_t tok = blocked ? a.pad : x;
      // §HASH.3 int64 products wrap in two's complement: unsigned arithmetic.
      rolling ^= static_cast<uint64_t>(tok) * static_cast<uint64_t>(mult[s]);
      if (s >= 1) out[s - 1] = rolling;  // the mix of order n = s + 1
    }
  }
}

// Kernel 3, one thread per output value (token, layer, column): the residue
// (§HASH.4) of the column's mix. g is the index of the value in
// rows[t][layer][col], so the threads of a warp write 32 consecutive int64
// (coalesced), and a thread is one cached load, the §HASH.7 reduction and
// one store.
ENGRAM_HD void HashThread(const HashArgs& a, int64_t g) {
  const int64_t t = static_cast<int64_t>(Quotient(static_cast<uint64_t>(g), a.by_token_values));
  const HashColumn c = a.columns[g - t * static_cast<int64_t>(a.by_token_values.d)];  // [layer][col]
  const uint64_t rolling = a.mixes[t * a.layers * (a.max_ngram - 1) + c.mix];
  // §HASH.4 floor-mod: for a negative mix (demo-v1 only) p - 1 - (~x mod p).
  const bool negative = static_cast<int64_t>(rolling) < 0;
  uint64_t r = ModP(negative ? ~rolling : rolling, c.p, c.m);
  if (negative) r = c.p - 1 - r;
  a.rows[g] = static_cast<int64_t>(r) + c.offset;
}

// Kernel 4, one thread per sequence: append the chunk to the slot's state
// (§HASH.5) — unless some id of the batch was refused, in which case no
// state changes (as the reference refuses a call before changing anything).
ENGRAM_HD void UpdateStateThread(const HashArgs& a, int32_t seq) {
  if (*a.error != kNoError) return;
  const int32_t keep = a.max_ngram - 1 + a.capacity;  // the whole row: hashing's ids + rollback's
  const int64_t start = a.seq_offsets[seq];
  const int64_t n = a.seq_offsets[seq + 1] - start;
  const int32_t slot = a.seq_slots[seq];
  int64_t* hist = a.history + static_cast<int64_t>(slot) * keep;
  // Slot k holds the id (keep - k) places from the end. Ascending k reads
  // slot k + n (> k, not yet overwritten) before writing slot k.
  for (int32_t k = 0; k < keep; ++k) {
    const int64_t d = keep - k;  // 1 = most recent
    if (d <= n) {
      hist[k] = a.compressed[start + n - d];
    } else {
      hist[k] = hist[k + n];  // slots of ids before position 0 are never read
    }
  }
  a.positions[slot] += n;
  const int64_t kept = a.retained[slot] + n;
  a.retained[slot] = kept < keep ? kept : keep;
}

// §HASH.6 Rollback, kernel 1, one thread per entry: refuse (record the
// entry) a count that is negative, exceeds the position, or needs ids that
// are no longer on record: the state after it must hold the
// min(position - k, max - 1) ids before the new position.
ENGRAM_HD void RollbackCheckThread(const HashArgs& a, int32_t e) {
  const int32_t slot = a.seq_slots[e];
  const int64_t k = a.counts[e];
  const int64_t pos = a.positions[slot];
  const int64_t orders = a.max_ngram - 1;
  const bool ok = k >= 0 && k <= pos && k + (pos - k < orders ? pos - k : orders) <= a.retained[slot];
  if (!ok) RecordError(a.error, static_cast<unsigned long long>(e));
}

// §HASH.6 Rollback, kernel 2, one thread per entry: forget the last k ids —
// shift the row right by k (descending, so each id is read before it is
// overwritten) — unless an entry was refused: then no slot changes.
ENGRAM_HD void RollbackApplyThread(const HashArgs& a, int32_t e) {
  if (*a.error != kNoError) return;
  const int32_t slot = a.seq_slots[e];
  const int64_t k = a.counts[e];
  const int64_t keep = a.max_ngram - 1 + a.capacity;
  int64_t* hist = a.history + static_cast<int64_t>(slot) * keep;
  const int64_t kept = a.retained[slot] - k;  // ids still on record afterwards
  for (int64_t j = keep - 1; j >= keep - kept; --j) hist[j] = hist[j - k];
  a.positions[slot] -= k;
  a.retained[slot] = kept;
}

// §HASH.6 Fork, one thread per entry: slot fork_to[e] becomes a copy of slot
// seq_slots[e] (position, every id on record). Targets are distinct and are
// not sources of the same batch (checked on the host), so threads never race.
ENGRAM_HD void ForkThread(const HashArgs& a, int32_t e) {
  const int32_t from = a.seq_slots[e];
  const int32_t to = a.fork_to[e];
  const int64_t keep = a.max_ngram - 1 + a.capacity;
  for (int64_t j = 0; j < keep; ++j) a.history[to * keep + j] = a.history[from * keep + j];
  a.positions[to] = a.positions[from];
  a.retained[to] = a.retained[from];
}

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_HASH_KERNELS_H_
