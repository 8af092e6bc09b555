/* A plug-in that dies inside the table entry points that the plug-in host
 * hands a temporary file to (spec §CONF.3): built once per ENGRAM_TABLE_TRAP
 * variant by conformance/CMakeLists.txt and run by runner_test.cc, which checks
 * that no temporary file of the host is left in $TMPDIR afterwards.
 *   1: abort() in engram_table_open_safetensors / engram_table_open_packed (a crash)
 *   2: never returns from them (a hang: the runner's timeout SIGKILLs the host)
 */
#include <stdlib.h>
#include <unistd.h>

#include "engram/conformance.h"

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {ENGRAM_CONFORMANCE_ABI_VERSION, "table-trap", "0", "table_lookup",
                                                 "v4.1,demo-v1"};
  return &info;
}

static engram_table* Trap(void) {
#if ENGRAM_TABLE_TRAP == 1
  abort();
#else
  for (;;) pause();
#endif
  return NULL;
}

engram_table* engram_table_open_safetensors(const char* path, const char* tensor_prefix, char* err, size_t err_len) {
  (void)path, (void)tensor_prefix, (void)err, (void)err_len;
  return Trap();
}

engram_table* engram_table_open_packed(const char* path, int64_t head_dim, char* err, size_t err_len) {
  (void)path, (void)head_dim, (void)err, (void)err_len;
  return Trap();
}

void engram_table_destroy(engram_table* table) { (void)table; }
