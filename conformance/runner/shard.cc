// spec/conformance.md §CONF.9 — shards of a conformance run.
#include "conformance/runner/shard.h"
#include "base/hex.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "base/fileio.h"
#include "base/sha256.h"

namespace engram::conform {
namespace {

// §CONF.9 item 1 bounds: at most 2^20 shards (a million tasks is beyond any
// array a scheduler accepts; the bound keeps every product below 2^63).
constexpr int64_t kMaxShards = int64_t{1} << 20;

}  // namespace

// A variable's or option's value as a decimal integer 0 ... 9999999999 (the
// ASCII digits only: no sign, no '_', no other script's digits, no blank), or
// an error naming it.
int64_t ShardNumber(const std::string& name, const std::string& value) {
  if (value.empty() || value.size() > 10 || value.find_first_not_of("0123456789") != std::string::npos) {
    throw Error(name + "=" + value + ": not a decimal number (a shard index or count: the digits 0-9, §CONF.9)");
  }
  return std::stoll(value);
}

int64_t DecimalIn(const std::string& name, const std::string& value, int64_t lo, int64_t hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string::npos) {
    throw Error(name + " " + value + ": must be a decimal integer in " + range + " (the digits 0-9 only)");
  }
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size() || v < lo || v > hi) {
    throw Error(name + " " + value + ": must be a decimal integer in " + range);
  }
  return v;
}

namespace {

Shard Checked(int64_t index, int64_t count, const std::string& source, const std::string& index_name,
              const std::string& count_name) {
  if (count < 1 || count > kMaxShards) {
    throw Error(count_name + " " + std::to_string(count) + " (" + source + "): the shard count must be 1 ... " +
                std::to_string(kMaxShards));
  }
  if (index < 0 || index >= count) {
    throw Error(index_name + " " + std::to_string(index) + " (" + source + "): the shard index must be 0 ... " +
                std::to_string(count - 1) + " for " + std::to_string(count) + " shard(s)");
  }
  return {index, count, source};
}

}  // namespace

Shard ChooseShard(std::optional<int64_t> flag_index, std::optional<int64_t> flag_count,
                  const std::function<std::optional<std::string>(const char*)>& env) {
  // The flags win: a job that says which shard it runs is not second-guessed
  // by a variable its scheduler happens to set.
  if (flag_index && !flag_count) throw Error("--shard-index " + std::to_string(*flag_index) + " needs --shard-count");
  if (flag_index && flag_count) return Checked(*flag_index, *flag_count, "--shard-index/--shard-count", "--shard-index", "--shard-count");
  // Pairs of variables, in the order of §CONF.9: the first whose index is set
  // is the source, and then its count must be set too (half a pair is a
  // misconfigured job, not "no sharding").
  const std::pair<const char*, const char*> pairs[] = {{"GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS"},
                                                       {"TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS"}};
  for (const auto& [iname, cname] : pairs) {
    const auto i = env(iname);
    const auto c = env(cname);
    if (!i && !c) continue;
    if (!i || !c) throw Error(std::string(i ? cname : iname) + " is not set, but " + (i ? iname : cname) + " is (§CONF.9: both or neither)");
    if (flag_count) throw Error(std::string("--shard-count without --shard-index, but ") + iname + " is set: give both flags or neither");
    const int64_t index = ShardNumber(iname, *i);  // the index first: the message names it first
    return Checked(index, ShardNumber(cname, *c), std::string(iname) + "/" + cname, iname, cname);
  }
  // Slurm numbers an array's tasks from its first id (--array=0-3, or 5-8),
  // in steps of SLURM_ARRAY_TASK_STEP (--array=0-6:2 runs tasks 0, 2, 4, 6):
  // the index is (task id - SLURM_ARRAY_TASK_MIN) / step. An array that is not
  // evenly stepped (a list, --array=1,4,9) has no such index: refused.
  if (const auto id = env("SLURM_ARRAY_TASK_ID")) {
    const auto c = env("SLURM_ARRAY_TASK_COUNT");
    if (!c) throw Error("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not (§CONF.9)");
    if (flag_count) throw Error("--shard-count without --shard-index, but SLURM_ARRAY_TASK_ID is set: give both flags or neither");
    const auto m = env("SLURM_ARRAY_TASK_MIN");
    const auto st = env("SLURM_ARRAY_TASK_STEP");
    const auto mx = env("SLURM_ARRAY_TASK_MAX");
    const int64_t task = ShardNumber("SLURM_ARRAY_TASK_ID", *id);
    const int64_t min = m ? ShardNumber("SLURM_ARRAY_TASK_MIN", *m) : 0;
    const int64_t step = st ? ShardNumber("SLURM_ARRAY_TASK_STEP", *st) : 1;
    const int64_t count = ShardNumber("SLURM_ARRAY_TASK_COUNT", *c);
    const std::string vars = "SLURM_ARRAY_TASK_ID=" + *id + ", SLURM_ARRAY_TASK_MIN=" + (m ? *m : std::string("(unset)")) +
                             ", SLURM_ARRAY_TASK_MAX=" + (mx ? *mx : std::string("(unset)")) + ", SLURM_ARRAY_TASK_STEP=" +
                             (st ? *st : std::string("(unset)")) + ", SLURM_ARRAY_TASK_COUNT=" + *c;
    if (step < 1) throw Error(vars + ": the step must be at least 1 (§CONF.9)");
    if (mx) {
      // ShardNumber bounds every value below 10^10: no product here leaves int64.
      const int64_t max = ShardNumber("SLURM_ARRAY_TASK_MAX", *mx);
      if (count < 1 || min + (count - 1) * step != max) {
        throw Error(vars + ": not an evenly stepped array (--array=A-B or A-B:S; a list such as --array=1,4,9 has no "
                    "shard index): give --shard-index/--shard-count");
      }
    }
    if (task < min || (task - min) % step != 0 || (task - min) / step >= count) {
      throw Error(vars + ": the task id is not one of the array's (--array=A-B or A-B:S); give --shard-index/--shard-count");
    }
    return Checked((task - min) / step, count, "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_ID",
                   "SLURM_ARRAY_TASK_COUNT");
  }
  // A Kubernetes Indexed Job gives the index only; its completions are the count.
  if (const auto i = env("JOB_COMPLETION_INDEX")) {
    if (!flag_count) throw Error("JOB_COMPLETION_INDEX=" + *i + " is set but --shard-count is not (an Indexed Job: pass its completions)");
    return Checked(ShardNumber("JOB_COMPLETION_INDEX", *i), *flag_count, "JOB_COMPLETION_INDEX/--shard-count",
                   "JOB_COMPLETION_INDEX", "--shard-count");
  }
  {
    const auto i = env("CIRCLE_NODE_INDEX");
    const auto c = env("CIRCLE_NODE_TOTAL");
    if (i || c) {
      if (!i || !c) throw Error(std::string(i ? "CIRCLE_NODE_TOTAL" : "CIRCLE_NODE_INDEX") + " is not set, but " +
                                (i ? "CIRCLE_NODE_INDEX" : "CIRCLE_NODE_TOTAL") + " is (§CONF.9: both or neither)");
      if (flag_count) throw Error("--shard-count without --shard-index, but CIRCLE_NODE_INDEX is set: give both flags or neither");
      const int64_t index = ShardNumber("CIRCLE_NODE_INDEX", *i);
      return Checked(index, ShardNumber("CIRCLE_NODE_TOTAL", *c), "CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL", "CIRCLE_NODE_INDEX",
                     "CIRCLE_NODE_TOTAL");
    }
  }
  if (flag_count) throw Error("--shard-count " + std::to_string(*flag_count) + " without --shard-index, and no JOB_COMPLETION_INDEX to give it");
  return {};
}

void TouchShardStatusFile(const std::function<std::optional<std::string>(const char*)>& env) {
  const auto status = env("TEST_SHARD_STATUS_FILE");
  if (!status || status->empty()) return;
  // Never blocks: O_NONBLOCK makes the open of a FIFO fail (no reader: ENXIO)
  // or return at once, and anything but a regular file is then refused.
  const int fd = ::open(status->c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0) {
    const int err = errno;
    struct stat st{};
    if (::stat(status->c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      throw Error("TEST_SHARD_STATUS_FILE=" + *status + ": not a regular file (" + FileTypeName(st.st_mode) +
                  "); Bazel's status file is a regular file the test creates (§CONF.9)");
    }
    throw Error("TEST_SHARD_STATUS_FILE=" + *status + ": cannot be created: " + std::strerror(err));
  }
  struct stat st{};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) {
    throw Error("TEST_SHARD_STATUS_FILE=" + *status + ": not a regular file (" + FileTypeName(st.st_mode) +
                "); Bazel's status file is a regular file the test creates (§CONF.9)");
  }
}

std::pair<int64_t, int64_t> ShardRange(int64_t n, int64_t index, int64_t count) {
  // n < 2^43 (10^8 cases, or a suite's tests) times index < 2^20 stays below 2^63.
  const auto at = [&](int64_t k) { return static_cast<int64_t>((static_cast<__int128>(n) * k) / count); };
  return {at(index), at(index + 1)};
}

void CaseDigest::Add(std::string_view request_line) {
  const std::string hex = Sha256Hex(request_line);
  CaseDigest one;
  FromHex(hex, one);
  one.cases = 1;
  Add(one);
}

void CaseDigest::Add(const CaseDigest& other) {
  unsigned __int128 carry = 0;
  for (size_t i = 0; i < 4; ++i) {
    const unsigned __int128 s = static_cast<unsigned __int128>(sum_[i]) + other.sum_[i] + carry;
    sum_[i] = static_cast<uint64_t>(s);
    carry = s >> 64;
  }
  cases += other.cases;
}

// The sum as 64 hex digits, most significant limb first.
std::string CaseDigest::Hex() const { return HexOfU64(sum_[3]) + HexOfU64(sum_[2]) + HexOfU64(sum_[1]) + HexOfU64(sum_[0]); }

bool CaseDigest::FromHex(const std::string& hex, CaseDigest& out) {
  const std::optional<std::string> bytes = BytesOfHex(hex);
  if (!bytes || bytes->size() != 32) return false;
  for (size_t limb = 0; limb < 4; ++limb) {
    uint64_t word = 0;
    for (size_t k = 0; k < 8; ++k) word = word << 8 | static_cast<unsigned char>((*bytes)[limb * 8 + k]);
    out.sum_[3 - limb] = word;
  }
  return true;
}

}  // namespace engram::conform
