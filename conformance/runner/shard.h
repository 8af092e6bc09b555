// spec/conformance.md §CONF.9 — shards of a conformance run: which share of
// the work one process runs, where that choice came from, and a digest of the
// cases it asked that adds up across shards.
#ifndef ENGRAM_CONFORMANCE_RUNNER_SHARD_H_
#define ENGRAM_CONFORMANCE_RUNNER_SHARD_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace engram::conform {

// §CONF.9 item 1 The share of the work of one process: shard `index` of
// `count` (0-based), and where those numbers came from ("--shard-index/
// --shard-count", "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS", ..., or "none":
// the whole run, index 0 of 1).
struct Shard {
  int64_t index = 0;
  int64_t count = 1;
  std::string source = "none";
  bool Partial() const { return count > 1; }
};

// §CONF.9 item 1 The shard from the flags, else from the environment, in the
// order of §CONF.9: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS; TEST_SHARD_INDEX/
// TEST_TOTAL_SHARDS (Bazel); SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT
// (the index counted from SLURM_ARRAY_TASK_MIN in steps of SLURM_ARRAY_TASK_
// STEP, checked against SLURM_ARRAY_TASK_MAX); JOB_COMPLETION_INDEX with the
// count from --shard-count;
// CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL. `env` reads a variable (nullopt: unset).
// Throws engram::Error naming the variable or flag and its value when a
// source is half set, not a number, or out of range (0 <= index < count <= 2^20).
Shard ChooseShard(std::optional<int64_t> flag_index, std::optional<int64_t> flag_count,
                  const std::function<std::optional<std::string>(const char*)>& env);

// §CONF.9 item 1 A shard number as the environment or an option gives it:
// the ASCII digits 0-9 only, at most 10 of them. Throws engram::Error naming
// `name` and the value.
int64_t ShardNumber(const std::string& name, const std::string& value);

// A count given as text (an option of the pytest plugin): the ASCII digits
// 0-9 only, within [lo, hi]. Throws engram::Error naming `name`, the value
// and the range. The command line's options follow the same rule (CLI11
// validators, conformance/cli/common.h IntIn).
int64_t DecimalIn(const std::string& name, const std::string& value, int64_t lo, int64_t hi);

// §CONF.9 item 1 Bazel asks a sharded test to create TEST_SHARD_STATUS_FILE
// (it then knows the test understood the sharding): touched when set,
// whichever variables gave the shard. It must be a regular file or be
// created; a FIFO or a directory is refused without blocking. Throws
// engram::Error naming the variable and the path.
void TouchShardStatusFile(const std::function<std::optional<std::string>(const char*)>& env);

// §CONF.9 item 1 Cases [begin, end) of `n` that shard `index` of `count` runs:
// contiguous, disjoint, covering [0, n) in index order, sizes differing by at
// most one.
std::pair<int64_t, int64_t> ShardRange(int64_t n, int64_t index, int64_t count);

// §CONF.9 item 2 The digest of a set of cases: the sum, modulo 2^256, of the
// SHA-256 of each request line as sent. A sum, so that it does not depend on
// the order the cases ran in and the shards' digests add up to the digest of
// the whole run: a merge that equals a single run's digest asked exactly the
// same requests, each once.
class CaseDigest {
 public:
  void Add(std::string_view request_line);
  void Add(const CaseDigest& other);
  std::string Hex() const;                      // 64 hex digits, most significant first
  static bool FromHex(const std::string& hex, CaseDigest& out);
  int64_t cases = 0;                            // requests added

 private:
  std::array<uint64_t, 4> sum_{};  // little-endian limbs
};

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_SHARD_H_
