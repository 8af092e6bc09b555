// `engram bench ...`: throughput of the reference, for ratios measured in one run.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include <sys/resource.h>

#include "conformance/cli/common.h"
#include "conformance/host/plugin_api.h"
#include "conformance/host/plugin_host.h"
#include "conformance/runner/judge.h"
#include "conformance/runner/shard.h"
#include "base/error.h"
#include "base/splitmix64.h"
#include "reference/hash.h"
#include "vectors/random_cases.h"
#include "vectors/random_stream.h"

namespace engram::cli {
namespace {

// A counter-based generator for benchmark inputs: the next SplitMix64 output.
uint64_t NextSplitMix64(uint64_t& state) { return SplitMix64Mix(state += kSplitMix64Golden); }

// CPU seconds of this process (all its threads) so far.
double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// §CONF.7 A random run with no channel at all: the cases drawn as `engram
// conform --random` draws them (the stream, `threads` workers), each request
// written and digested as the runner does, answered by the plug-in host's own
// code for the library at `lib` called in this process (no pipe, no answer
// text, no parse: the JSON objects handed over as they are) and judged by the
// runner's code. What is left is what any channel between runner and host
// cannot remove: the lower bound of a run's CPU time per case. A benchmark
// only: `engram conform` keeps the library out of process (§CONF.3).
ojson NoChannel(const vectors::RandomSuite& gen, const std::string& lib, uint64_t seed, int64_t cases, int threads) {
  const host::Api api = host::LoadApi(lib);
  const std::string label = "random:" + gen.suite;
  conform::CaseDigest digest;
  int64_t passed = 0;
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  {
    vectors::CaseStream stream(gen, seed, cases, threads);
    vectors::RandomCase c;
    for (int64_t i = 0; stream.Next(c); ++i) {
      conform::PreparedTest p = conform::PrepareTest(gen.suite, label, i + 1, c.group, c.test);
      digest.Add(p.line);
      const nlohmann::json request = {{"op", "test"},  {"suite", gen.suite},           {"type", p.type},
                                      {"tcId", i + 1}, {"group", nlohmann::json(c.group)}, {"test", nlohmann::json(p.split.inputs)}};
      conform::Peer::Reply reply;
      reply.body = ojson(host::Answer(api, request));
      const conform::TestResult r = conform::JudgeReply(p, c.group, c.test, reply);
      if (r.status != "pass") {
        throw Error("bench random --lib: case " + std::to_string(i + 1) + " of seed " + std::to_string(seed) + " " +
                    r.status + ": " + r.reason + " " + r.detail + " (the benchmark needs a library that passes)");
      }
      ++passed;
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = CpuSeconds() - cpu0;
  return {{"lib", lib},
          {"passed", passed},
          {"seconds", wall},
          {"cases_per_second", static_cast<double>(cases) / wall},
          {"cpu_seconds", cpu},
          {"cases_per_cpu_second", static_cast<double>(cases) / cpu},
          {"request_digest", digest.Hex()}};
}

// The CPU time of this thread so far: on a shared machine the ratio of two kinds of case is steadier
// measured so than by the wall clock.
double ThreadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// §CONF.7 The cost of each kind of case to the runner, on one thread: its test type, and for a packed call
// (§HASH.10) of 64 requests or of one request that as well, so that a full batch can be set beside a single
// sequence (scripts/bench_random.sh). `draw`: drawing the case and computing its expected values. With a
// library, also `runner`: that, writing the request and judging the library's answer (the runner's whole
// share of a case), and `plugin`: the library's answer, apart.
ojson ByKind(const vectors::RandomSuite& gen, const std::string& lib, uint64_t seed, int64_t cases) {
  struct Cost {
    int64_t cases = 0;
    double draw = 0, runner = 0, plugin = 0;
  };
  std::map<std::string, Cost> kinds;
  std::optional<host::Api> api;
  if (!lib.empty()) api = host::LoadApi(lib);
  const std::string label = "random:" + gen.suite;
  for (int64_t i = 0; i < cases; ++i) {
    const double k0 = ThreadCpuSeconds();
    const vectors::RandomCase c = vectors::DrawCase(gen, seed, i);
    const double k1 = ThreadCpuSeconds();
    std::string kind = c.type;
    if (c.recipe.contains("requests") && c.recipe["requests"].size() == 64) kind += ", 64 requests";
    if (c.recipe.contains("requests") && c.recipe["requests"].size() == 1) kind += ", 1 request";
    Cost& k = kinds[kind];
    k.cases += 1;
    k.draw += k1 - k0;
    if (!api) continue;
    conform::PreparedTest p = conform::PrepareTest(gen.suite, label, i + 1, c.group, c.test);
    const nlohmann::json request = {{"op", "test"},  {"suite", gen.suite},           {"type", p.type},
                                    {"tcId", i + 1}, {"group", nlohmann::json(c.group)}, {"test", nlohmann::json(p.split.inputs)}};
    const double k2 = ThreadCpuSeconds();
    conform::Peer::Reply reply;
    reply.body = ojson(host::Answer(*api, request));
    const double k3 = ThreadCpuSeconds();
    const conform::TestResult r = conform::JudgeReply(p, c.group, c.test, reply);
    const double k4 = ThreadCpuSeconds();
    if (r.status != "pass") {
      throw Error("bench random --lib: case " + std::to_string(i + 1) + " of seed " + std::to_string(seed) + " " +
                  r.status + ": " + r.reason + " " + r.detail + " (the benchmark needs a library that passes)");
    }
    k.runner += (k4 - k0) - (k3 - k2);
    k.plugin += k3 - k2;
  }
  ojson out = ojson::object();
  for (const auto& [kind, k] : kinds) {
    const auto n = static_cast<double>(k.cases);
    out[kind] = {{"cases", k.cases}, {"draw_cpu_seconds_per_case", k.draw / n}};
    if (api) {
      out[kind]["runner_cpu_seconds_per_case"] = k.runner / n;
      out[kind]["plugin_cpu_seconds_per_case"] = k.plugin / n;
    }
  }
  return out;
}

}  // namespace

void AddBenchCommand(CLI::App& app) {
  struct State {
    Inputs in;
    int64_t tokens = 1000000;
    int64_t chunk = 65536;
  };
  auto s = std::make_shared<State>();
  auto* bench = app.add_subcommand("bench", "Micro-benchmarks (ratios, not absolute figures)");
  bench->require_subcommand(1);
  auto* cmd = bench->add_subcommand("hash", "Time hashing N random compressed ids through all layers");
  AddInputOptions(cmd, s->in, false);
  // The ids are drawn one chunk at a time, so memory does not grow with --tokens.
  cmd->add_option("--tokens", s->tokens, "Number of positions, 1 ... 2^32 (drawn and hashed a chunk at a time)")
      ->check(IntIn(1, int64_t{1} << 32, "at most 2^32 positions"));
  cmd->add_option("--chunk", s->chunk,
                  "Positions per call, into a reused output buffer, 1 ... 2^24 (and at most 1 GiB of rows)")
      ->check(IntIn(1, int64_t{1} << 24, "at most 2^24 positions per call"));
  cmd->callback([s] {
    Loaded l = Load(s->in);
    // Serving engines hash a prefill chunk at a time into a reused buffer;
    // so does the benchmark (and the numpy side in scripts/bench_hash.sh).
    // The ids are drawn a chunk at a time too (the same SplitMix64 stream,
    // outside the timed region): memory is two chunk buffers whatever --tokens.
    const size_t chunk = static_cast<size_t>(std::min(s->chunk, s->tokens));
    const size_t per_id = l.layout.layers.size() * static_cast<size_t>(l.layout.columns());
    constexpr size_t kMaxRowBytes = size_t{1} << 30;
    if (chunk * per_id > kMaxRowBytes / sizeof(int64_t)) {
      throw Error("--chunk: " + std::to_string(chunk) + " positions x " + std::to_string(per_id) +
                  " rows x 8 bytes is more than the 1 GiB row buffer allowed; at most " +
                  std::to_string(kMaxRowBytes / sizeof(int64_t) / per_id) + " positions per call for this layout");
    }
    std::vector<int64_t> ids(chunk);
    std::vector<int64_t> rows(chunk * per_id);
    HashState state(l.layout);
    uint64_t seed = 0x5EED;
    uint64_t checksum = 0;  // keeps the work observable
    double seconds = 0;
    const size_t total = static_cast<size_t>(s->tokens);
    for (size_t at = 0; at < total; at += chunk) {
      const size_t n = std::min(chunk, total - at);
      for (size_t k = 0; k < n; ++k) {
        ids[k] = static_cast<int64_t>(NextSplitMix64(seed) % static_cast<uint64_t>(l.layout.compressed_vocab_size));
      }
      const std::span<int64_t> out(rows.data(), n * per_id);
      const auto t0 = std::chrono::steady_clock::now();
      state.AppendInto(std::span<const int64_t>(ids.data(), n), out);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (int64_t r : out) checksum = checksum * 31 + static_cast<uint64_t>(r);
    }
    ojson doc;
    doc["profile"] = std::string(ProfileName(l.layout.profile));
    doc["tokens"] = s->tokens;
    doc["chunk"] = s->chunk;
    doc["layers"] = l.layout.layers.size();
    doc["columns"] = l.layout.columns();
    doc["seconds"] = seconds;
    doc["tokens_per_second"] = static_cast<double>(s->tokens) / seconds;
    doc["checksum"] = checksum;
    Emit(doc, "");
  });

  // §CONF.7 The reference side of a random run: drawing a case and computing
  // its expected values (and, separately, also writing the request's JSON),
  // so that a random run's time can be seen to be the port's.
  struct RandomState {
    std::string suite = "hash_v41";
    int64_t cases = 20000;
    int64_t seed = 1;
    int64_t threads = vectors::DefaultCaseThreads();
    std::string lib;
  };
  auto r = std::make_shared<RandomState>();
  auto* rnd = bench->add_subcommand("random", "Time drawing and computing N random cases of a suite (§CONF.7)");
  rnd->add_option("--suite", r->suite, "A suite with a random generator (default hash_v41)");
  rnd->add_option("--cases", r->cases, "Number of cases, 1 ... 10^8 (default 20000)")
      ->check(IntIn(1, 100000000, "a number of cases"));
  rnd->add_option("--seed", r->seed, "The seed (default 1)")->check(IntIn(0, INT64_MAX, "a seed"));
  rnd->add_option("--threads", r->threads,
                  "Threads for the second measurement, as engram conform --random-threads (default: the cores, at most 8)")
      ->check(IntIn(1, 64, "a number of threads"));
  rnd->add_option("--lib", r->lib,
                  "Also run the cases with no channel: answered by this C-ABI library in this process and judged "
                  "(the lower bound of engram conform --random's CPU time per case; a benchmark only)")
      ->check(CLI::ExistingFile);
  rnd->callback([r] {
    const vectors::RandomSuite* gen = vectors::FindRandomSuite(r->suite);
    if (gen == nullptr) {
      std::string have;
      for (const vectors::RandomSuite& g : vectors::RandomSuites()) have += (have.empty() ? "" : ", ") + g.suite;
      throw Error("--suite " + r->suite + ": no random generator (those with one: " + have + ")");
    }
    uint64_t checksum = 0;
    size_t bytes = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < r->cases; ++i) {
      const vectors::RandomCase c = vectors::DrawCase(*gen, static_cast<uint64_t>(r->seed), i);
      checksum = checksum * 31 + static_cast<uint64_t>(c.measure);
    }
    const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The same cases through the stream a random run uses, on --threads
    // threads; the checksum shows they are the same cases in the same order.
    uint64_t threaded_checksum = 0;
    const auto tt = std::chrono::steady_clock::now();
    {
      vectors::CaseStream stream(*gen, static_cast<uint64_t>(r->seed), r->cases, static_cast<int>(r->threads));
      vectors::RandomCase c;
      while (stream.Next(c)) threaded_checksum = threaded_checksum * 31 + static_cast<uint64_t>(c.measure);
    }
    const double threaded = std::chrono::duration<double>(std::chrono::steady_clock::now() - tt).count();
    if (threaded_checksum != checksum) {
      throw Error("bench random: the cases drawn on " + std::to_string(r->threads) +
                  " threads differ from those drawn on one (a generator keeps state shared between threads)");
    }
    const auto t1 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < r->cases; ++i) {
      const vectors::RandomCase c = vectors::DrawCase(*gen, static_cast<uint64_t>(r->seed), i);
      bytes += c.group.dump().size() + c.test.dump().size();
    }
    const double with_json = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    ojson doc;
    doc["suite"] = r->suite;
    doc["cases"] = r->cases;
    doc["seconds"] = build;
    doc["cases_per_second"] = static_cast<double>(r->cases) / build;
    doc["threads"] = r->threads;
    doc["seconds_threads"] = threaded;
    doc["cases_per_second_threads"] = static_cast<double>(r->cases) / threaded;
    doc["seconds_with_json"] = with_json;
    doc["cases_per_second_with_json"] = static_cast<double>(r->cases) / with_json;
    doc["json_bytes"] = bytes;
    doc["checksum"] = checksum;
    doc["by_kind"] = ByKind(*gen, r->lib, static_cast<uint64_t>(r->seed), r->cases);
    if (!r->lib.empty()) {
      doc["no_channel"] = NoChannel(*gen, r->lib, static_cast<uint64_t>(r->seed), r->cases, static_cast<int>(r->threads));
    }
    Emit(doc, "");
  });
}

}  // namespace engram::cli
