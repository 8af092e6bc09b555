/* A C-ABI plug-in built against engram/conformance.h as plain C99 that claims
 * every suite but exports only the required engram_conformance_info(): the
 * shape of a library written for an older feature level. plugin_test.cc checks
 * that `engram conform --lib` reports its tests `skipped` (the host finds no
 * entry point) and neither crashes nor fails. Compiling this file with
 * -std=c99 -pedantic is also the check that the header is C99.
 */
#include "engram/conformance.h"

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {
      ENGRAM_CONFORMANCE_ABI_VERSION, "minimal-c99", "0",
      "multipliers,layout,hash_v41,hash_demo,hash_state,accumulated,fp8_decode,table_lookup,tp_shard,token_map,"
      "gate_v41,gate_demo,short_conv_demo,engram_forward,serving_v41",
      "v4.1,demo-v1"};
  return &info;
}
