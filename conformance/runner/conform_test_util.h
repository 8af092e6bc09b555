// The old path of testutil/conform.h, kept while conformance/host/
// plugin_host_test.cc still includes it; delete it with that include.
#ifndef ENGRAM_CONFORMANCE_RUNNER_CONFORM_TEST_UTIL_H_
#define ENGRAM_CONFORMANCE_RUNNER_CONFORM_TEST_UTIL_H_

#include "testutil/conform.h"

#endif  // ENGRAM_CONFORMANCE_RUNNER_CONFORM_TEST_UTIL_H_
