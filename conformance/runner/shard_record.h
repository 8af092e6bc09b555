// spec/conformance.md §CONF.9 item 2 — what one shard's run records for the
// merge (engram report merge, merge.h): its --report-json "shard" object.
#ifndef ENGRAM_CONFORMANCE_RUNNER_SHARD_RECORD_H_
#define ENGRAM_CONFORMANCE_RUNNER_SHARD_RECORD_H_

#include <nlohmann/json.hpp>

#include "conformance/runner/random_run.h"
#include "conformance/runner/report.h"
#include "conformance/runner/run_state.h"

namespace engram::conform {

// §CONF.9 item 2 What a merge needs of this process's share: what work it is
// part of (everything that changes which cases run or how they are judged),
// which share it ran, the counts and the problems found while running (not
// the verdict's judgement of the whole run's scope, which the merge makes
// from the sums), the digest of its requests, and the shrunk failing cases as
// recipes (rebuilt by the merge into one vectors directory).
// `hello` is the implementation's handshake, `v` the share's verdict.
nlohmann::ordered_json ShardRecord(const Run& run, const RandomRun& random, const nlohmann::ordered_json& hello,
                                   const Verdict& v);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_SHARD_RECORD_H_
