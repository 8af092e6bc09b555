// spec/layout.md — primes, bucket offsets and per-layer parameters.
#include "reference/layout.h"

#include <string>

#include "base/error.h"
#include "base/sha256.h"
#include "reference/random.h"
#include "reference/token_map.h"

namespace engram {
namespace {

__extension__ using u128 = unsigned __int128;

uint64_t MulMod(uint64_t a, uint64_t b, uint64_t n) {
  // a, b < n. Below 2^32 the product fits 64 bits, and a 64-bit remainder is
  // a single instruction where the 128-bit one is a library call: layouts of
  // small bases (every test layout, the runner's random cases) search many
  // primes. The result is the same either way.
  if (n <= (uint64_t{1} << 32)) return a * b % n;
  return static_cast<uint64_t>(static_cast<u128>(a) * b % n);
}

uint64_t PowMod(uint64_t base, uint64_t exp, uint64_t n) {
  uint64_t result = 1 % n;
  base %= n;
  while (exp > 0) {
    if (exp & 1) result = MulMod(result, base, n);
    base = MulMod(base, base, n);
    exp >>= 1;
  }
  return result;
}

// One Miller-Rabin round: false means `a` witnesses that n is composite.
bool PassesRound(uint64_t n, uint64_t a, uint64_t d, int r) {
  uint64_t x = PowMod(a, d, n);
  if (x == 1 || x == n - 1) return true;
  for (int i = 1; i < r; ++i) {
    x = MulMod(x, x, n);
    if (x == n - 1) return true;
  }
  return false;
}

}  // namespace

// §LAY.1 Miller-Rabin with the first twelve primes as bases is deterministic
// for every n < 3.3 * 10^24, hence for every 64-bit n. The reference code
// (sympy.isprime) is also exact, so both agree on every candidate.
bool IsPrime(uint64_t n) {
  static constexpr uint64_t kBases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  // Below 4,759,123,141 the bases 2, 7 and 61 alone are deterministic
  // (Jaeschke 1993), so a 32-bit candidate needs three rounds, not twelve:
  // the same answer, sooner (most layouts' primes are below 2^32).
  static constexpr uint64_t kBases32[] = {2, 7, 61};
  if (n < 2) return false;
  for (uint64_t p : kBases) {
    if (n % p == 0) return n == p;
  }
  if (n == 61) return true;
  uint64_t d = n - 1;
  int r = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++r;
  }
  if (n < (uint64_t{1} << 32)) {
    for (uint64_t a : kBases32) {
      if (!PassesRound(n, a, d, r)) return false;
    }
    return true;
  }
  for (uint64_t a : kBases) {
    if (!PassesRound(n, a, d, r)) return false;
  }
  return true;
}

// §LAY.2 The smallest prime strictly above `start` that no earlier head took.
uint64_t FindNextPrime(uint64_t start, const std::set<uint64_t>& seen) {
  if (start == UINT64_MAX) throw Error("FindNextPrime: no prime above " + std::to_string(start) + " fits 64 bits");
  uint64_t candidate = start + 1;
  while (!IsPrime(candidate) || seen.count(candidate) != 0) {
    if (candidate == UINT64_MAX) throw Error("FindNextPrime: no prime above " + std::to_string(start) + " fits 64 bits");
    ++candidate;
  }
  return candidate;
}

int64_t LayerLayout::prime(int col) const {
  const int heads = static_cast<int>(primes.front().size());
  return primes[col / heads][col % heads];
}

std::string LayoutFingerprint(const Layout& layout) {
  // A plain text form, so that anyone can reproduce it from spec/layout.md.
  // Built by appending each piece: the text is the spec's, and GCC 12 warns
  // (-Wrestrict, a false positive, GCC bug 105329) on "literal" + std::string&&.
  std::string text;
  auto put = [&text](std::string_view key, const std::string& value) {
    text += key;
    text += value;
  };
  put("engram-layout-v1;profile=", std::string(ProfileName(layout.profile)));
  put(";V=", std::to_string(layout.compressed_vocab_size));
  put(";pad=", std::to_string(layout.pad));
  put(";max=", std::to_string(layout.max_ngram));
  put(";heads=", std::to_string(layout.heads));
  for (const LayerLayout& layer : layout.layers) {
    put(";layer=", std::to_string(layer.layer_id));
    text += ";m=";
    for (size_t i = 0; i < layer.multipliers.size(); ++i) put(i ? "," : "", std::to_string(layer.multipliers[i]));
    text += ";p=";
    bool first = true;
    for (const auto& order : layer.primes) {
      for (int64_t p : order) {
        put(first ? "" : ",", std::to_string(p));
        first = false;
      }
    }
  }
  return Sha256Hex(text);
}

Layout BuildLayout(const EngramConfig& config, int64_t compressed_vocab_size, int64_t compressed_pad) {
  if (compressed_vocab_size < 1) {
    throw Error("compressed vocab size must be >= 1, got " + std::to_string(compressed_vocab_size));
  }
  // §LAY.4 In v4.1 the multipliers derive from V, so a token map of another
  // size would silently rehash the whole table: refuse it.
  if (config.profile == Profile::kV41 && config.compressed_vocab_size &&
      *config.compressed_vocab_size != compressed_vocab_size) {
    throw Error(config.source + ": key 'engram_compressed_vocab_size': config says " +
                std::to_string(*config.compressed_vocab_size) + " but the token map has " +
                std::to_string(compressed_vocab_size) + " compressed ids");
  }
  if (compressed_pad < 0 || compressed_pad >= compressed_vocab_size) {
    throw Error("compressed pad id " + std::to_string(compressed_pad) + " is outside [0, " +
                std::to_string(compressed_vocab_size) + ")");
  }

  Layout layout;
  layout.profile = config.profile;
  layout.compressed_vocab_size = compressed_vocab_size;
  layout.pad = compressed_pad;
  layout.max_ngram = config.max_ngram;
  layout.heads = config.heads;
  // §LAY.6 every output of an explicit layout says it is not DeepSeek's.
  if (config.explicit_layout()) {
    std::string keys = !config.explicit_multipliers.empty() && !config.explicit_primes.empty()
                           ? "engram_hash_multipliers and engram_primes"
                           : !config.explicit_multipliers.empty() ? "engram_hash_multipliers" : "engram_primes";
    layout.non_standard = "explicit layout (" + keys + " of " + config.source +
                          "): not the layout DeepSeek's code derives (§LAY.6)";
  }

  // §LAY.2 `seen` spans all layers: no two heads anywhere share a modulus.
  std::set<uint64_t> seen;
  for (size_t li = 0; li < config.layer_ids.size(); ++li) {
    LayerLayout layer;
    layer.layer_id = config.layer_ids[li];
    // §RNG.4, or §LAY.6 the configuration's own.
    layer.multipliers = config.explicit_multipliers.empty()
                            ? LayerMultipliers(config.seed, layer.layer_id, compressed_vocab_size, config.max_ngram)
                            : config.explicit_multipliers[li];
    // §LAY.6 explicit primes are taken as stated (no search, no uniqueness
    // across heads: the hash needs only a modulus per column), but each must
    // be a prime (§LAY.1): a composite one is a typo.
    for (int order = 2; !config.explicit_primes.empty() && order <= config.max_ngram; ++order) {
      const std::vector<int64_t>& heads = config.explicit_primes[li][static_cast<size_t>(order - 2)];
      for (size_t h = 0; h < heads.size(); ++h) {
        if (!IsPrime(static_cast<uint64_t>(heads[h]))) {
          throw Error(config.source + ": key 'engram_primes[" + std::to_string(li) + "][" + std::to_string(order - 2) +
                      "][" + std::to_string(h) + "]': must be a prime below 2^40, got " + std::to_string(heads[h]) +
                      " (not prime)");
        }
      }
      layer.primes.push_back(heads);
    }
    for (int order = 2; config.explicit_primes.empty() && order <= config.max_ngram; ++order) {
      std::vector<int64_t> heads;
      // The search restarts at base - 1 for every order, so the first prime
      // of an order is the smallest unused prime >= base.
      uint64_t start = static_cast<uint64_t>(config.bases[order - 2]) - 1;
      for (int h = 0; h < config.heads; ++h) {
        uint64_t p = FindNextPrime(start, seen);
        seen.insert(p);
        heads.push_back(static_cast<int64_t>(p));
        start = p;
      }
      layer.primes.push_back(heads);
    }
    // §LAY.3 offsets are exclusive prefix sums over the order-major columns.
    int64_t running = 0;
    for (const auto& order_primes : layer.primes) {
      for (int64_t p : order_primes) {
        layer.offsets.push_back(running);
        running += p;
      }
    }
    layer.num_embeddings = running;
    // §LAY.4 the checkpoint's table has exactly this many rows.
    if (config.profile == Profile::kV41 && li < config.num_embeddings.size() &&
        config.num_embeddings[li] != running) {
      throw Error(config.source + ": key 'engram_num_embeddings': entry " + std::to_string(li) + " (layer " +
                  std::to_string(layer.layer_id) + ") is " + std::to_string(config.num_embeddings[li]) +
                  " but the layer's primes sum to " + std::to_string(running));
    }
    layout.layers.push_back(std::move(layer));
  }
  return layout;
}

}  // namespace engram
