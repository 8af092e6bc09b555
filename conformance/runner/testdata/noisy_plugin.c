/* The reference plug-in made noisy (spec §CONF.3): it prints to stdout when it
 * is loaded and on every engram_conformance_info() call, as a library with a
 * stray printf or a logging constructor does. plugin-host keeps the protocol
 * on descriptors of its own, so the run must still pass (runner_test.cc). The
 * reference plug-in is compiled with engram_conformance_info renamed to
 * engram_reference_conformance_info; this file wraps it.
 */
/* The target renames engram_conformance_info for the reference's sources; this file exports the real one. */
#undef engram_conformance_info
#include <stdio.h>
#include <unistd.h>

#include "engram/conformance.h"

const engram_conformance_info_t* engram_reference_conformance_info(void);

__attribute__((constructor)) static void Loaded(void) {
  printf("hello from plugin (printf at load)\n");
  fflush(stdout);
  (void)!write(1, "hello from plugin (write at load)\n", 34);
}

const engram_conformance_info_t* engram_conformance_info(void) {
  printf("hello from plugin (printf in engram_conformance_info)\n");
  fflush(stdout);
  return engram_reference_conformance_info();
}
