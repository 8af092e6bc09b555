#include "vectors/accumulate.h"

#include <algorithm>
#include <bit>
#include <memory>

#include "base/error.h"
#include "base/sha256.h"
#include "base/splitmix64.h"
#include "reference/hash.h"

namespace engram::vectors {
namespace {

}  // namespace

int64_t StreamId(bool v41, int64_t compressed_vocab_size, uint64_t seed, uint64_t i) {
  const uint64_t w = SplitMix64Of(seed + i * kSplitMix64Golden);  // §CONF.5
  // One position in 64 is special: DEAD in v4.1, a negative id in demo-v1.
  if (v41 && (w >> 58) == 0) return kDead;
  if (!v41 && (w >> 58) == 1) return -1 - static_cast<int64_t>((w >> 8) % 1000);
  return static_cast<int64_t>(w % static_cast<uint64_t>(compressed_vocab_size));
}

std::string AccumulateHash(bool v41, int64_t compressed_vocab_size, uint64_t seed, int64_t n,
                           const std::function<void(const std::vector<int64_t>&, std::vector<int64_t>&)>& hash_chunk) {
  if (n < 0) throw Error("accumulate: n must be >= 0, got " + std::to_string(n));
  if (compressed_vocab_size < 1) throw Error("accumulate: V must be >= 1");
  Sha256 digest;
  // §ERR.3 Chunks bound the memory whatever n: ids, rows and their bytes for one chunk at a time.
  constexpr int64_t kChunk = 65536;
  std::vector<int64_t> ids;
  std::vector<int64_t> rows;
  std::vector<unsigned char> bytes;
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t len = std::min(kChunk, n - at);
    ids.resize(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) ids[static_cast<size_t>(i)] = StreamId(v41, compressed_vocab_size, seed, static_cast<uint64_t>(at + i));
    rows.clear();
    hash_chunk(ids, rows);
    if constexpr (std::endian::native == std::endian::little) {
      // The rows already are int64 little-endian in memory: digest them in
      // place (the byte-by-byte copy below took a third of a sanitizer
      // build's `vectors verify`).
      digest.Update(rows.data(), rows.size() * sizeof(int64_t));
    } else {
      bytes.resize(rows.size() * 8);
      for (size_t r = 0; r < rows.size(); ++r) {
        const uint64_t u = static_cast<uint64_t>(rows[r]);
        for (int b = 0; b < 8; ++b) bytes[r * 8 + static_cast<size_t>(b)] = static_cast<unsigned char>(u >> (8 * b));
      }
      digest.Update(bytes.data(), bytes.size());
    }
  }
  return digest.HexDigest();
}

}  // namespace engram::vectors
