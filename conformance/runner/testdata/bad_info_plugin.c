/* Plug-ins whose engram_conformance_info() must not be trusted (spec §CONF.2,
 * §CONF.3): built once per ENGRAM_BAD_INFO variant by conformance/CMakeLists.txt
 * and run by runner_test.cc, which checks that `engram conform` refuses to
 * start (exit 2, the reason named) instead of skipping everything and saying OK.
 *   1: ABI version 99
 *   2: claims the unknown suite "nope"
 *   3: a name that is not UTF-8
 *   4: claims no suite at all
 */
#include "engram/conformance.h"

#if ENGRAM_BAD_INFO == 1
#define ABI 99
#define NAME "abi-99"
#define SUITES "multipliers"
#elif ENGRAM_BAD_INFO == 2
#define ABI ENGRAM_CONFORMANCE_ABI_VERSION
#define NAME "claims-nope"
#define SUITES "multipliers,nope"
#elif ENGRAM_BAD_INFO == 3
#define ABI ENGRAM_CONFORMANCE_ABI_VERSION
#define NAME "bad-\xff\xfe-utf8"
#define SUITES "multipliers"
#else
#define ABI ENGRAM_CONFORMANCE_ABI_VERSION
#define NAME "claims-nothing"
#define SUITES ""
#endif

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {ABI, NAME, "0", SUITES, "v4.1,demo-v1"};
  return &info;
}
