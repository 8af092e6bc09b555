// cuda/storage_kernels.h — the per-element work of engram::cuda's storage
// kernels: the exact FP8 decode (§STO.1-§STO.3) and the table lookup
// (§STO.6, §STO.7). The device mirror of reference/storage.*; the grid logic,
// the error slot and the division-free index arithmetic are in
// kernel_common.h, whose rules these functions follow.
#ifndef ENGRAM_CUDA_STORAGE_KERNELS_H_
#define ENGRAM_CUDA_STORAGE_KERNELS_H_

#include <cstdint>
#include <cstring>

#include "cuda/kernel_common.h"

namespace engram::cuda {

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

}  // namespace engram::cuda

#endif  // ENGRAM_CUDA_STORAGE_KERNELS_H_
