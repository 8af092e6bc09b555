/// \file
/// §ERR.3 Sizes multiplied before anything is allocated or indexed with them.
///
/// A product of sizes that does not fit in 64 bits wraps: 4 · 2^62 is 0 in
/// size_t, and a buffer of 0 values then "has the expected size" and is indexed
/// as if it held 2^64. Every size product that a caller's numbers reach (a
/// parameter dict from Python, a JSON input, a vector test) goes through
/// SizeProduct, which refuses instead of wrapping.
#ifndef ENGRAM_BASE_CHECKED_MATH_H_
#define ENGRAM_BASE_CHECKED_MATH_H_

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"

namespace engram {

/// a · b, or nothing when the product does not fit in size_t.
constexpr std::optional<size_t> CheckedMul(size_t a, size_t b) {
  size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// §ERR.3 The product of `factors` (1 for none). Throws engram::Error
/// "<what>: the size 4 · 4611686018427387904 does not fit in 64 bits (§ERR.3)"
/// when it does not fit in size_t, naming every factor.
inline size_t SizeProduct(std::initializer_list<size_t> factors, std::string_view what) {
  size_t product = 1;
  bool fits = true;
  for (size_t f : factors) {
    const std::optional<size_t> next = CheckedMul(product, f);
    if (!next) fits = false;
    product = next.value_or(0);
    if (!fits) break;
  }
  // A zero factor makes any product fit, even after an overflow among the others.
  for (size_t f : factors) {
    if (f == 0) return 0;
  }
  if (fits) return product;
  std::string shown;
  for (size_t f : factors) shown += (shown.empty() ? "" : " · ") + std::to_string(f);
  throw Error(std::string(what) + ": the size " + shown + " does not fit in 64 bits (§ERR.3)");
}

}  // namespace engram

#endif  // ENGRAM_BASE_CHECKED_MATH_H_
