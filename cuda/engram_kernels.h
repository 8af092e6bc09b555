// cuda/engram_kernels.h — the per-element work of every engram::cuda kernel.
//
// Each kernel in engram_cuda.cu is a one-line __global__ wrapper around a
// function below: it computes the global thread index g = block * block_dim +
// thread and, when g is in range, calls the *Thread function with g. The host
// launcher (host_launch.cc) runs exactly the same functions over the same
// grid with loops standing in for blockIdx/threadIdx, compiled by the host
// compiler. That is how a machine without a GPU (CI) executes every kernel
// code path against the reference (reference/hash.cc, reference/storage.cc).
//
// Rules that keep the emulation faithful:
//  * no shared memory, no __syncthreads, no warp shuffles: each thread is
//    independent, so the order the host visits threads in cannot matter;
//  * no floating-point arithmetic in the decode: E4M3 x E8M0 -> bf16 is done
//    on integer bit fields (exactly, §STO.3), so device flush-to-zero or NaN
//    canonicalisation cannot make the GPU differ from the host;
//  * the only device-specific lines are marked ENGRAM_DEVICE_ONLY: the
//    64x64->128 high product (__umul64hi vs unsigned __int128), atomicMin,
//    and the 8-byte load / 16-byte store of the lookup (memcpy on the host).
#ifndef ENGRAM_CUDA_ENGRAM_KERNELS_H_
#define ENGRAM_CUDA_ENGRAM_KERNELS_H_

#include <cstdint>
#include <cmath>
#include <cstring>
#include <bit>

#ifdef __CUDACC__
#define ENGRAM_HD __host__ __device__ __forceinline__
#else
#define ENGRAM_HD inline
#endif

namespace engram::cuda {

// The lookup moves codes and bf16 results as little-endian words; so do
// NVIDIA GPUs.
static_assert(std::endian::native == std::endian::little, "engram::cuda assumes a little-endian host");

// ---------------------------------------------------------------------------
// Grid logic shared by kernels and host launcher
// ---------------------------------------------------------------------------

inline constexpr uint32_t kBlockThreads = 256;
// "No error" in an error slot: errors are recorded as the smallest offending
// index with atomicMin, so the slot starts at the largest value.
inline constexpr unsigned long long kNoError = ~0ull;

ENGRAM_HD int64_t GlobalIndex(uint32_t block, uint32_t thread, uint32_t block_dim) {
  return static_cast<int64_t>(block) * block_dim + thread;
}

// Blocks needed for n threads (n >= 1) of kBlockThreads.
inline uint32_t BlocksFor(int64_t n) {
  return static_cast<uint32_t>((n + kBlockThreads - 1) / kBlockThreads);
}

ENGRAM_HD void RecordError(unsigned long long* slot, unsigned long long index) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  atomicMin(slot, index);
#else
  if (index < *slot) *slot = index;
#endif
}

// ---------------------------------------------------------------------------
// §HASH.7 Division-free modulo
// ---------------------------------------------------------------------------

// High 64 bits of a 64x64-bit product.
ENGRAM_HD uint64_t MulHi64(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __umul64hi(a, b);
#else
  __extension__ typedef unsigned __int128 u128;
  return static_cast<uint64_t>((static_cast<u128>(a) * b) >> 64);
#endif
}

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

// §HASH.7 x mod p for every uint64 x: q' = umulhi(x, m) is floor(x/p) or one
// less, so one conditional subtraction finishes (proof in spec/hash.md).
ENGRAM_HD uint64_t ModP(uint64_t x, uint64_t p, uint64_t m) {
  const uint64_t q = MulHi64(x, m);
  uint64_t r = x - q * p;
  if (r >= p) r -= p;
  return r;
}

// Index arithmetic without 64-bit division. A GPU has no 64-bit divide
// instruction: `g / d` on int64 compiles to a software routine of ~70
// instructions, which dominated kernels that move a few bytes per thread.
// The same argument as §HASH.7 (for every d >= 1, not only primes: m =
// floor((2^64 - 1) / d) >= (2^64 - d) / d, so x * m / 2^64 > x / d - 1) makes
// umulhi(x, m) equal floor(x / d) or one less; one correction is exact.
//
// The same holds with 32 bits (x, d < 2^32, m32 = floor((2^32 - 1) / d)), and
// a 32 x 32 -> 64-bit product is one instruction where the 64-bit high
// product is several, so Quotient takes that path when x and d are below 2^32
// — every thread index of a grid below 2^32 threads, i.e. every realistic
// batch; the branch is the same for (almost) all threads of a warp.
// Build one with MakeFastDiv; the defaults (d = 1, d32 = 0: no 32-bit path)
// keep a FastDiv made some other way on the 64-bit path, which needs only d, m.
struct FastDiv {
  uint64_t d = 1;
  uint64_t m = ~0ull;  // floor((2^64 - 1) / d)
  uint32_t d32 = 0;    // d when d < 2^32, else 0 (no 32-bit path)
  uint32_t m32 = 0;    // floor((2^32 - 1) / d) when d < 2^32
};
inline FastDiv MakeFastDiv(uint64_t d) {  // d >= 1 (host side)
  if (d > 0xFFFFFFFFull) return FastDiv{d, ~0ull / d, 0u, 0u};
  return FastDiv{d, ~0ull / d, static_cast<uint32_t>(d), static_cast<uint32_t>(0xFFFFFFFFu / d)};
}
ENGRAM_HD uint64_t Quotient(uint64_t x, FastDiv f) {
  if (x <= 0xFFFFFFFFull && f.d32 != 0) {
    const uint32_t x32 = static_cast<uint32_t>(x);
    uint32_t q = static_cast<uint32_t>((static_cast<uint64_t>(x32) * f.m32) >> 32);
    if (x32 - q * f.d32 >= f.d32) ++q;  // q * d32 <= x32: no wrap-around
    return q;
  }
  uint64_t q = MulHi64(x, f.m);
  if (x - q * f.d >= f.d) ++q;
  return q;
}

// ---------------------------------------------------------------------------
// Hash kernels (§HASH.1-§HASH.5)
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// §STO.1-§STO.3 FP8 decode, exact on integer bit fields
// ---------------------------------------------------------------------------

// bf16 of sign * mag * 2^exp2 for 1 <= mag <= 15 (at most 4 significant
// bits), rounded to nearest even. Normal results are exact (bf16 keeps 8
// significant bits); only bf16 subnormals (< 2^-126) round; >= 2^128 is inf.
ENGRAM_HD uint16_t Bf16FromSmall(uint32_t sign, uint32_t mag, int32_t exp2) {
  int32_t bits = 0;  // bit length of mag, 1..4
  while ((mag >> bits) != 0) ++bits;
  const int32_t e = exp2 + bits - 1;  // value = 1.f * 2^e
  const uint16_t s = static_cast<uint16_t>(sign << 15);
  if (e > 127) return static_cast<uint16_t>(s | 0x7F80u);  // overflow: inf
  if (e >= -126) {
    const uint32_t frac = (mag << (8 - bits)) & 0x7Fu;     // the 7 bits after the leading 1
    return static_cast<uint16_t>(s | (static_cast<uint32_t>(e + 127) << 7) | frac);
  }
  // Subnormal: value = f * 2^-133 with f = mag * 2^(exp2 + 133).
  const int32_t up = exp2 + 133;
  if (up >= 0) return static_cast<uint16_t>(s | (mag << up));  // < 2^7 here since e < -126
  const int32_t shift = -up;
  if (shift > 5) return s;  // mag < 16 <= half of 2^shift: rounds to zero
  const uint32_t q = mag >> shift;
  const uint32_t rem = mag & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t f = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
  return static_cast<uint16_t>(s | f);  // f == 128 encodes 2^-126, the smallest normal
}

// §STO.3 One decoded element: E4M3fn code x E8M0 scale -> bf16 bits,
// e4m3 * 2^(scale - 127) rounded to nearest even. E4M3fn: normal
// (8+m) * 2^(e-10), subnormal m * 2^-9, (code & 0x7F) == 0x7F is NaN; E8M0
// 0xFF is NaN, 0x00 is 2^-127 (§STO.1, §STO.2).
ENGRAM_HD uint16_t DecodeElementBits(uint8_t code, uint8_t scale) {
  const uint32_t sign = code >> 7;
  // The reference rounds every NaN to torch's canonical bf16 NaN (kBf16NaN).
  if ((code & 0x7Fu) == 0x7Fu || scale == 0xFFu) return 0x7FC0u;
  const uint32_t e = (code >> 3) & 0xFu;
  const uint32_t m = code & 0x7u;
  const uint32_t mag = e == 0 ? m : 8u + m;
  if (mag == 0) return static_cast<uint16_t>(sign << 15);  // +-0 times any finite scale
  const int32_t exp2 = (e == 0 ? -9 : static_cast<int32_t>(e) - 10) + static_cast<int32_t>(scale) - 127;
  return Bf16FromSmall(sign, mag, exp2);
}

// §STO.3 The same decode for scales 10 <= scale <= 246, where every result
// is a normal, finite bf16 and so needs no rounding: the magnitudes are
// 2^-9 .. 448 (< 2^9) times 2^(scale - 127), i.e. binary exponents
// scale - 136 .. scale - 119, inside bf16's normal range [-126, 127] exactly
// for those scales. Every scale of a real table is in range (§STO.5 ordinary
// rows use 110 .. 130). The lookup kernel decodes a thread's 8 elements (one
// scale) in one of three ways, all checked bit for bit against the reference
// for all 65536 (code, scale) pairs:
//  * scale in range and all 8 codes normal and finite (c = code & 0x7F in
//    8 .. 0x7E, AllNormalCodes — nearly every thread of a real table, whose
//    elements are rarely 2^-6 below their block's scale): DecodePairNormal,
//    two elements per 32-bit operation;
//  * scale in range, some code zero, subnormal or NaN:
//    DecodeElementBitsNormalScale per element, a few selects;
//  * any other scale: DecodeElementBits (rounding to bf16 subnormals, inf, NaN).
inline constexpr uint8_t kNormalScaleMin = 10;
inline constexpr uint8_t kNormalScaleMax = 246;

ENGRAM_HD uint16_t DecodeElementBitsNormalScale(uint8_t code, uint8_t scale) {
  const uint32_t c = code & 0x7Fu;  // the magnitude: exponent e = c >> 3, mantissa m = c & 7
  // A normal E4M3 magnitude (c >= 8) is 1.m * 2^(e-7); its bf16 has exponent
  // field e - 7 + (scale - 127) + 127 = e + scale - 7 (4 .. 254 here) and
  // mantissa m << 4, and as c << 4 = e << 7 | m << 4, one addition places
  // both: (c << 4) + ((scale - 7) << 7). A subnormal one (c = 1 .. 7, value
  // c * 2^-9) equals the normal magnitude c << k (8 .. 15, e = 1) times 2^-k,
  // k = 4 - bit length of c, so the same addition with the exponent lowered by k.
  const uint32_t k = c >= 8 ? 0u : (c >= 4 ? 1u : (c >= 2 ? 2u : 3u));
  const uint32_t mag = ((c << k) << 4) + ((static_cast<uint32_t>(scale) - 7u - k) << 7);
  // Selects, not branches: the 32 threads of a warp decode different codes.
  const uint32_t bits = (static_cast<uint32_t>(code & 0x80u) << 8) | (c == 0 ? 0u : mag);  // +-0 stays +-0
  return static_cast<uint16_t>(c == 0x7Fu ? 0x7FC0u : bits);  // NaN code, as DecodeElementBits
}

// Whether some byte of x is zero. The usual bit trick: (x - 0x01..01) &
// ~x & 0x80..80 is non-zero exactly when x has a zero byte (it may also flag a
// 0x01 byte above a zero byte, which does not change the answer).
ENGRAM_HD bool HasZeroByte(uint32_t x) { return ((x - 0x01010101u) & ~x & 0x80808080u) != 0; }

// Whether all four codes of w (one per byte) are normal and finite E4M3:
// c = code & 0x7F with exponent bits (0x78) not all zero and c != 0x7F.
ENGRAM_HD bool AllNormalCodes(uint32_t w) {
  return !HasZeroByte(w & 0x78787878u) && !HasZeroByte(~w & 0x7F7F7F7Fu);
}

// DecodeElementBitsNormalScale of two normal finite codes at once: `two`
// holds one code in the low byte of each 16-bit half; the result holds their
// bf16 bits in the same halves. e2 = ((scale - 7) << 7) in both halves,
// 10 <= scale <= 246. A half never carries into the next: (c << 4) +
// ((scale - 7) << 7) <= 0x7E0 + 0x7780 < 0x8000, so the sign bit (bit 15) is
// free for the code's sign.
ENGRAM_HD uint32_t DecodePairNormal(uint32_t two, uint32_t e2) {
  const uint32_t c = two & 0x007F007Fu;
  const uint32_t sign = (two & 0x00800080u) << 8;
  return ((c << 4) + e2) | sign;
}

// Codes 0 and 1 (LowPair) or 2 and 3 (HighPair) of a little-endian word of
// four codes, spread into the low bytes of the two 16-bit halves
// (DecodePairNormal's input).
ENGRAM_HD uint32_t LowPair(uint32_t w) { return (w & 0xFFu) | ((w & 0xFF00u) << 8); }
ENGRAM_HD uint32_t HighPair(uint32_t w) { return ((w >> 16) & 0xFFu) | ((w >> 8) & 0xFF0000u); }

// ---------------------------------------------------------------------------
// Lookup kernel (§STO.6, §STO.7)
// ---------------------------------------------------------------------------

// Decoded elements per thread: 8 codes (one 8-byte load) -> 8 bf16 (one
// 16-byte store). head_dim 256 gives 32 threads per row: a warp per row,
// reading the row's 256 code bytes contiguously, its scales from the same
// 264-byte span, and writing 512 contiguous bytes.
inline constexpr int32_t kElementsPerThread = 8;

struct LookupArgs {
  // Packed rows (§STO.4): head_dim E4M3fn codes, then head_dim/32 E8M0 scales.
  const uint8_t* table = nullptr;  // row r of this table at table + r * row_bytes
  int64_t head_dim = 0;            // a multiple of 32
  int64_t row_bytes = 0;           // head_dim + head_dim / 32
  int64_t rows = 0;                // rows of the whole (unsharded) table
  // §STO.7 This table holds global rows [shard_begin, shard_end); ids outside
  // it produce +0 rows (the rank's partial lookup). Unsharded: [0, rows).
  int64_t shard_begin = 0;
  int64_t shard_end = 0;
  // Ids: item i reads ids[id_offset + (i / id_group) * id_stride + i % id_group],
  // e.g. one layer's columns of the hash output rows[t][layer][col]:
  // id_group = columns, id_stride = layers * columns, id_offset = layer * columns.
  const int64_t* ids = nullptr;
  int64_t items = 0;
  int64_t id_group = 1;
  int64_t id_stride = 1;
  int64_t id_offset = 0;
  FastDiv by_row_threads;                // head_dim / kElementsPerThread threads per row
  FastDiv by_id_group;                   // id_group
  uint16_t* out = nullptr;               // [items][head_dim] bf16 bits
  unsigned long long* error = nullptr;   // smallest item index whose id is outside [0, rows)
};

ENGRAM_HD int64_t LookupId(const LookupArgs& a, int64_t item) {
  const int64_t group = static_cast<int64_t>(Quotient(static_cast<uint64_t>(item), a.by_id_group));
  return a.ids[a.id_offset + group * a.id_stride + (item - group * a.id_group)];
}

// One thread per 8 consecutive elements of one output row.
ENGRAM_HD void LookupThread(const LookupArgs& a, int64_t g) {
  const int64_t item = static_cast<int64_t>(Quotient(static_cast<uint64_t>(g), a.by_row_threads));
  const int64_t first = (g - item * static_cast<int64_t>(a.by_row_threads.d)) * kElementsPerThread;  // first element of this thread
  const int64_t id = LookupId(a, item);
  // = out + item * head_dim + first, as head_dim = row threads * 8; written so
  // that nvcc sees the 16-byte alignment (from item * head_dim it emitted four
  // 4-byte stores for the uint4 store below).
  uint16_t* out = a.out + g * kElementsPerThread;
  // The 8 bf16 results, two per word: element 2i in the low half of w[i] (the
  // little-endian order of both the host and the GPU). +0: a row outside the shard.
  uint32_t w[kElementsPerThread / 2] = {0, 0, 0, 0};
  if (id < 0 || id >= a.rows) {
    RecordError(a.error, static_cast<unsigned long long>(item));
  } else if (id >= a.shard_begin && id < a.shard_end) {
    const uint8_t* row = a.table + (id - a.shard_begin) * a.row_bytes;
    const uint8_t scale = row[a.head_dim + first / 32];  // one scale per 32-element block
    uint32_t lo, hi;  // codes first .. first+3 and first+4 .. first+7, one per byte
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY: one 8-byte load when the row start is 8-aligned
    if ((a.row_bytes & 7) == 0) {
      const uint2 c = *reinterpret_cast<const uint2*>(row + first);
      lo = c.x;
      hi = c.y;
    } else {
      std::memcpy(&lo, row + first, 4);
      std::memcpy(&hi, row + first + 4, 4);
    }
#else
    std::memcpy(&lo, row + first, 4);
    std::memcpy(&hi, row + first + 4, 4);
#endif
    const bool normal_scale = scale >= kNormalScaleMin && scale <= kNormalScaleMax;
    if (normal_scale && AllNormalCodes(lo) && AllNormalCodes(hi)) {
      const uint32_t e2 = ((static_cast<uint32_t>(scale) - 7u) << 7) * 0x00010001u;
      w[0] = DecodePairNormal(LowPair(lo), e2);
      w[1] = DecodePairNormal(HighPair(lo), e2);
      w[2] = DecodePairNormal(LowPair(hi), e2);
      w[3] = DecodePairNormal(HighPair(hi), e2);
    } else {
      for (int k = 0; k < kElementsPerThread; ++k) {
        const uint8_t code = static_cast<uint8_t>((k < 4 ? lo : hi) >> (8 * (k % 4)));
        const uint32_t v = normal_scale ? DecodeElementBitsNormalScale(code, scale) : DecodeElementBits(code, scale);
        w[k / 2] |= v << (16 * (k % 2));
      }
    }
  }
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY: one 16-byte store (out rows are 16-byte aligned)
  *reinterpret_cast<uint4*>(out) = make_uint4(w[0], w[1], w[2], w[3]);
#else
  std::memcpy(out, w, sizeof(w));
#endif
}


// ---------------------------------------------------------------------------
// §FUS.3 v4.1 gate and update after wkv, the float32 mirror of §FUS.8
// ---------------------------------------------------------------------------
//
// Every float32 operation is one IEEE round-to-nearest operation, exactly as
// the mirror's Round(double op) of float32 operands (double rounding is
// innocuous for +, *, /, sqrt). On the device the _rn intrinsics keep nvcc
// from contracting a*b+c into an FMA (which would round once instead of
// twice); the host compiler in ISO C++ mode does not contract.
ENGRAM_HD float FMul(float a, float b) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
ENGRAM_HD float FAdd(float a, float b) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
ENGRAM_HD float FDiv(float a, float b) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
ENGRAM_HD float FSqrt(float a) {
#ifdef __CUDA_ARCH__  // ENGRAM_DEVICE_ONLY
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

ENGRAM_HD float Bf16Float(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// float32 -> bf16, round to nearest even; every NaN -> 0x7FC0 (§STO.3, §FUS.3).
ENGRAM_HD uint16_t FloatToBf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0) return 0x7FC0u;
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

struct FusionV41Args {
  int64_t tokens = 0;
  int32_t hc = 0;          // streams
  int32_t dim = 0;
  float eps = 0;           // norm_eps rounded to float32
  float inv_sqrt_dim = 0;  // float32(dim ** -0.5), computed on the host as the mirror does
  const uint16_t* x = nullptr;         // [tokens][hc][dim] bf16: the hidden streams h = x_c
  const uint16_t* key = nullptr;       // [tokens][hc][dim] bf16: k_c (wkv output)
  const uint16_t* value = nullptr;     // [tokens][dim] bf16: v (wkv output)
  const uint16_t* q_weight = nullptr;  // [hc][dim] bf16
  const uint16_t* k_weight = nullptr;  // [hc][dim] bf16
  const uint8_t* live = nullptr;       // optional [tokens]; 0 = masked position (gate 0)
  float* dot = nullptr;                // [tokens][hc] out
  float* gate = nullptr;               // [tokens][hc] out
  uint16_t* out = nullptr;             // [tokens][hc][dim] bf16 out: h + gate * v
};

// Kernel 1, one thread per (token, stream): the norms, the dot product and
// the gate, in the mirror's order (sums sequential from +0).
ENGRAM_HD void FusionGateThread(const FusionV41Args& a, int64_t g) {
  const int64_t t = g / a.hc;
  const int32_t c = static_cast<int32_t>(g % a.hc);
  const uint16_t* h = a.x + g * a.dim;
  const uint16_t* k = a.key + g * a.dim;
  const uint16_t* qw = a.q_weight + static_cast<int64_t>(c) * a.dim;
  const uint16_t* kw = a.k_weight + static_cast<int64_t>(c) * a.dim;
  const float n = static_cast<float>(a.dim);
  float sum_h2 = 0.0f, sum_k2 = 0.0f, sum_hwk = 0.0f;
  for (int32_t i = 0; i < a.dim; ++i) {
    const float hi = Bf16Float(h[i]);
    sum_h2 = FAdd(sum_h2, FMul(hi, hi));
  }
  for (int32_t i = 0; i < a.dim; ++i) {
    const float ki = Bf16Float(k[i]);
    sum_k2 = FAdd(sum_k2, FMul(ki, ki));
  }
  const float rstd_h = FDiv(1.0f, FSqrt(FAdd(FDiv(sum_h2, n), a.eps)));
  const float rstd_k = FDiv(1.0f, FSqrt(FAdd(FDiv(sum_k2, n), a.eps)));
  const float rstd = FMul(rstd_h, rstd_k);
  for (int32_t i = 0; i < a.dim; ++i) {
    const float w = FMul(Bf16Float(qw[i]), Bf16Float(kw[i]));  // exact: 16 significant bits
    sum_hwk = FAdd(sum_hwk, FMul(FMul(Bf16Float(h[i]), w), Bf16Float(k[i])));
  }
  const float dot = FMul(FMul(sum_hwk, rstd), a.inv_sqrt_dim);
  // §FUS.4 sigmoid(copysign(sqrt(max(|dot|, 1e-6)), dot)); NaN stays NaN.
  const float abs_dot = dot < 0.0f ? -dot : (dot == 0.0f ? 0.0f : dot);
  const float clamp = 1e-6f;  // the float32 nearest 1e-6, as the mirror's Round(1e-6)
  const float clamped = abs_dot != abs_dot ? abs_dot : (abs_dot < clamp ? clamp : abs_dot);
  const float root = FSqrt(clamped);
  const float signed_root = std::copysign(root, dot);
  // The mirror evaluates 1 / (1 + exp(-x)) in double and rounds once.
  const float gate = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(signed_root))));
  a.dot[g] = dot;
  a.gate[g] = (a.live != nullptr && a.live[t] == 0) ? 0.0f : gate;  // masked_fill: exactly +0
}

// Kernel 2, one thread per element: out = bf16(h + gate * v).
ENGRAM_HD void FusionUpdateThread(const FusionV41Args& a, int64_t g) {
  const int64_t stream_index = g / a.dim;  // t * hc + c
  const int64_t t = stream_index / a.hc;
  const int32_t i = static_cast<int32_t>(g % a.dim);
  const float v = Bf16Float(a.value[t * a.dim + i]);
  a.out[g] = FloatToBf16Bits(FAdd(Bf16Float(a.x[g]), FMul(a.gate[stream_index], v)));
}

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_ENGRAM_KERNELS_H_
