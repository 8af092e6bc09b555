// `engram bench ...`: throughput of the reference, for ratios measured in one run.
#include <algorithm>
#include <chrono>
#include <memory>
#include <span>

#include "conformance/cli/common.h"
#include "reference/error.h"
#include "reference/hash.h"

namespace engram::cli {
namespace {

// A counter-based generator for benchmark inputs (SplitMix64).
uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
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
        ids[k] = static_cast<int64_t>(SplitMix64(seed) % static_cast<uint64_t>(l.layout.compressed_vocab_size));
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
}

}  // namespace engram::cli
