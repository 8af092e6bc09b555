// Whether this test binary is built with AddressSanitizer: under it the
// resident set includes shadow memory and the allocator's quarantine, so the
// §ERR.3 peak-memory bounds are checked in plain builds only.
#ifndef ENGRAM_CONFORMANCE_TESTUTIL_SANITIZED_H_
#define ENGRAM_CONFORMANCE_TESTUTIL_SANITIZED_H_

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

}  // namespace engram::testutil

#endif  // ENGRAM_CONFORMANCE_TESTUTIL_SANITIZED_H_
