// Whether this test binary is built with AddressSanitizer: under it the
// resident set includes shadow memory and the allocator's quarantine, so the
// §ERR.3 peak-memory bounds are checked in plain builds only; and the tests
// that repeat one code path over many random cases draw fewer there
// (SanitizedCount), since the sanitizers look for errors along code paths,
// which a few dozen cases already walk (the release build draws them all).
#ifndef ENGRAM_TESTUTIL_SANITIZED_H_
#define ENGRAM_TESTUTIL_SANITIZED_H_

namespace engram::testutil {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// `n` in a plain build, `sanitized` under AddressSanitizer.
inline constexpr long long SanitizedCount(long long n, long long sanitized) { return kSanitized ? sanitized : n; }

}  // namespace engram::testutil

#endif  // ENGRAM_TESTUTIL_SANITIZED_H_
