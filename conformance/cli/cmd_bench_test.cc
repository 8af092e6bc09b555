// `engram bench` (cmd_bench.cc): throughput, and the advertised maximum in
// bounded memory.
// End-to-end through the command line: outputs, error messages and exit codes.
// Expected values are published figures or laws, never values copied from the code.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/program_paths.h"
#include "testutil/run_cli.h"
#include "testutil/sanitized.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::HasSubstr;
using Result = engram::testutil::CliResult;
using engram::testutil::kDemo;
using engram::testutil::kV41;
using engram::testutil::RunCli;
using engram::testutil::Slurp;
using engram::testutil::TempDir;
using engram::testutil::Write;

TEST(CliBench, PrintsThroughput) {
  Result r = RunCli("bench hash --tokens 20000");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json d = json::parse(r.out);
  EXPECT_EQ(d["tokens"], 20000);
  EXPECT_GT(d["tokens_per_second"].get<double>(), 0.0);
  // The ids are drawn a chunk at a time from one stream: the chunk size changes nothing hashed (§HASH.5).
  Result small = RunCli("bench hash --tokens 20000 --chunk 7");
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_EQ(json::parse(small.out)["checksum"], d["checksum"]);
}

// §CONF.7 `bench random --lib`: the cases of a random run answered with no
// channel. It asks exactly the requests `engram conform --random` sends (the
// same request digest, §CONF.9 item 2), and every one passes through the
// reference plug-in; a library that does not pass is an error, not a figure.
TEST(CliBench, RandomWithNoChannelAsksTheRunsRequests) {
  const std::string lib = std::string(ENGRAM_TEST_PLUGIN_DIR) + "/libengram_reference_plugin.so";
  Result b = RunCli("bench random --suite hash_v41 --cases 60 --threads 2 --lib " + lib);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const json nc = json::parse(b.out).at("no_channel");
  EXPECT_EQ(nc["passed"], 60);
  EXPECT_GT(nc["cases_per_cpu_second"].get<double>(), 0.0);
  const fs::path report = TempDir() / "bench-no-channel-report.json";
  Result c = RunCli("conform --vectors " + std::string(ENGRAM_SOURCE_DIR) + "/vectors --lib " + lib +
                    " --suite hash_v41 --random-only --random 60 --seed 1 --report-json " + report.string());
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  EXPECT_EQ(nc["request_digest"], json::parse(Slurp(report))["shard"]["cases"]["random:hash_v41"]["sha256Sum"]);

  const std::string minimal = std::string(ENGRAM_TEST_PLUGIN_DIR) + "/libengram_minimal_plugin.so";
  Result m = RunCli("bench random --suite hash_v41 --cases 5 --lib " + minimal);
  EXPECT_NE(m.exit_code, 0);
  EXPECT_THAT(m.err, HasSubstr("case 1 of seed 1 skipped"));
  EXPECT_THAT(m.err, HasSubstr("the benchmark needs a library that passes"));
}

// §CONF.7 the cost of each kind of case to the runner (scripts/bench_random.sh): a packed call of 64 requests is
// a kind of its own, so that it can be set beside a single sequence; every case is counted once.
TEST(CliBench, RandomCostsEachKindOfCase) {
  const std::string lib = std::string(ENGRAM_TEST_PLUGIN_DIR) + "/libengram_reference_plugin.so";
  Result b = RunCli("bench random --suite serving_v41 --cases 80 --threads 1 --lib " + lib);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const json kinds = json::parse(b.out).at("by_kind");
  int64_t cases = 0;
  for (const auto& [kind, k] : kinds.items()) {
    cases += k["cases"].get<int64_t>();
    EXPECT_GT(k["draw_cpu_seconds_per_case"].get<double>(), 0.0) << kind;
    EXPECT_GE(k["runner_cpu_seconds_per_case"].get<double>(), k["draw_cpu_seconds_per_case"].get<double>()) << kind;
    EXPECT_GT(k["plugin_cpu_seconds_per_case"].get<double>(), 0.0) << kind;
  }
  EXPECT_EQ(cases, 80);
  EXPECT_TRUE(kinds.contains("PackedBatchTest, 64 requests")) << kinds.dump();
  EXPECT_TRUE(kinds.contains("DraftTreeTest")) << kinds.dump();
}

// The advertised maximum (2^32 positions, 32 GiB of ids if drawn at once) runs
// in bounded memory: after a few seconds the benchmark is still hashing and its
// peak resident memory is a few chunk buffers.
TEST(CliBench, AdvertisedMaximumRunsInBoundedMemory) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(ENGRAM_CLI, ENGRAM_CLI, "bench", "hash", "--tokens", "4294967296", static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  int status = 0;
  const pid_t done = waitpid(pid, &status, WNOHANG);
  long hwm_kib = -1;
  std::istringstream st(Slurp("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(st, line);) {
    if (line.rfind("VmHWM:", 0) == 0) hwm_kib = std::stol(line.substr(6));
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  ASSERT_EQ(done, 0) << "the benchmark ended within 3 s (status " << status << "): it should still be hashing";
  ASSERT_GT(hwm_kib, 0);
  // Under AddressSanitizer the resident set includes shadow memory: the bound holds for plain builds.
  constexpr bool kSanitized = engram::testutil::kSanitized;
  if (kSanitized) {
    std::cout << "peak RSS " << hwm_kib / 1024 << " MiB (not checked: sanitizer shadow memory)\n";
  } else {
    EXPECT_LT(hwm_kib, 128 * 1024) << "peak RSS " << hwm_kib / 1024 << " MiB";
  }
}

}  // namespace
