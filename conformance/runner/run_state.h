// spec/conformance.md §CONF.4 — what one conformance run was given and what it
// found while running: shared by the phases of runner.cc and by the verdict
// (verdict.h) and the shard record (shard_record.h) made from it.
#ifndef ENGRAM_CONFORMANCE_RUNNER_RUN_STATE_H_
#define ENGRAM_CONFORMANCE_RUNNER_RUN_STATE_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "conformance/runner/expect_fail.h"
#include "conformance/runner/peer.h"
#include "conformance/runner/report.h"
#include "conformance/runner/runner.h"
#include "conformance/runner/shard.h"
#include "conformance/runner/vector_set.h"

namespace engram::conform {

struct Run {
  const Options& options;
  const VectorSet& vectors;
  const ExpectFail& expect_fail;
  Peer& peer;
  Claims claims;
  std::vector<TestResult> results;
  std::map<std::string, std::vector<std::string>> suite_problems;
  // §CONF.9 per suite (and "contract"): the index range of its tests this
  // shard ran, and the digest of the requests it sent for them.
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  std::map<std::string, CaseDigest> digests;
  // §CONF.8 per suite and profile: the tests of this share, and their results.
  LevelTallies tallies;
};

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_RUN_STATE_H_
