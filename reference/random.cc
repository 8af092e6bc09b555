// spec/random.md — numpy-exact random numbers and the per-layer hash multipliers.
//
// Every rule below reproduces what numpy (the oracle) does, step for step, so
// that the multipliers Engram draws with
//   np.random.default_rng(seed + 10007 * layer_id).integers(0, bound, size=max_ngram, dtype=np.int64)
// come out bit-identical here. Written from the algorithm description and
// checked empirically against numpy 2.4; no numpy source text is reused.
#include "reference/random.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace engram {
namespace {

// ---------------------------------------------------------------------------
// §RNG.1 SeedSequence constants. All arithmetic is on uint32 and wraps mod 2^32,
// exactly as numpy's uint32 arrays do.
// ---------------------------------------------------------------------------
constexpr uint32_t kInitA = 0x43b0d7e5;      // first hash constant while mixing entropy
constexpr uint32_t kMultA = 0x931e8875;      // multiplier that advances that hash constant
constexpr uint32_t kInitB = 0x8b51f9dd;      // first hash constant while generating state
constexpr uint32_t kMultB = 0x58f38ded;      // multiplier that advances that hash constant
constexpr uint32_t kMixMultL = 0xca01f9dd;   // left multiplier of mix()
constexpr uint32_t kMixMultR = 0x4973f715;   // right multiplier of mix()
constexpr int kXShift = 16;                  // xorshift applied after each multiply
constexpr size_t kPoolSize = 4;              // numpy's default pool_size

// §RNG.1 hashmix: scrambles one word with a hash constant that advances on every
// call. The constant is shared across calls, hence passed by reference.
uint32_t HashMix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

// §RNG.1 mix: combines two words into one.
uint32_t Mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

// §RNG.1 The integer seed becomes little-endian uint32 words: the least
// significant 32 bits first, as many words as needed, and 0 becomes [0].
std::vector<uint32_t> EntropyWords(uint64_t entropy) {
  std::vector<uint32_t> words;
  if (entropy == 0) {
    words.push_back(0);
    return words;
  }
  while (entropy != 0) {
    words.push_back(static_cast<uint32_t>(entropy & 0xFFFFFFFFu));
    entropy >>= 32;
  }
  return words;
}

// ---------------------------------------------------------------------------
// §RNG.2 PCG64 constants.
// ---------------------------------------------------------------------------
// The 128-bit LCG multiplier 0x2360ED051FC65DA4_4385DF649FCCF645.
constexpr uint128_t kPcgMultiplier =
    (static_cast<uint128_t>(0x2360ED051FC65DA4ULL) << 64) | 0x4385DF649FCCF645ULL;

// Signed 128-bit, for range arithmetic that must see past int64.
__extension__ typedef __int128 int128_t;

uint128_t Make128(uint64_t hi, uint64_t lo) { return (static_cast<uint128_t>(hi) << 64) | lo; }

// §RNG.2 One LCG step: state = state * multiplier + inc (mod 2^128; unsigned
// arithmetic wraps by definition).
uint128_t LcgStep(uint128_t state, uint128_t inc) { return state * kPcgMultiplier + inc; }

// §RNG.2 XSL-RR output: xor the two halves, then rotate right by the top 6 bits.
uint64_t XslRr(uint128_t state) {
  uint64_t hi = static_cast<uint64_t>(state >> 64);
  uint64_t lo = static_cast<uint64_t>(state);
  uint64_t value = hi ^ lo;
  unsigned rot = static_cast<unsigned>(state >> 122);  // 0..63
  if (rot == 0) return value;  // avoid the undefined shift by 64
  return (value >> rot) | (value << (64 - rot));
}

// ---------------------------------------------------------------------------
// §RNG.3 Bounded integers. `rng` is the inclusive width minus one; the result
// is an offset in [0, rng].
// ---------------------------------------------------------------------------

// §RNG.3 Lemire's multiply-shift on 32-bit draws. The product's high half is
// the result; a low half below `threshold` would bias it, so redraw.
uint32_t BoundedLemire32(Pcg64& gen, uint32_t rng) {
  const uint32_t rng_excl = rng + 1;  // rng < 2^32 - 1, so no wrap
  uint64_t m = static_cast<uint64_t>(gen.Next32()) * rng_excl;
  uint32_t leftover = static_cast<uint32_t>(m);
  if (leftover < rng_excl) {
    // (2^32 - rng_excl) mod rng_excl: the count of low halves to reject.
    const uint32_t threshold = (std::numeric_limits<uint32_t>::max() - rng) % rng_excl;
    while (leftover < threshold) {
      m = static_cast<uint64_t>(gen.Next32()) * rng_excl;
      leftover = static_cast<uint32_t>(m);
    }
  }
  return static_cast<uint32_t>(m >> 32);
}

// §RNG.3 Lemire's method on 64-bit draws with a 128-bit product.
uint64_t BoundedLemire64(Pcg64& gen, uint64_t rng) {
  const uint64_t rng_excl = rng + 1;  // rng < 2^64 - 1, so no wrap
  uint128_t m = static_cast<uint128_t>(gen.Next64()) * rng_excl;
  uint64_t leftover = static_cast<uint64_t>(m);
  if (leftover < rng_excl) {
    // (2^64 - rng_excl) mod rng_excl: the count of low halves to reject.
    const uint64_t threshold = (std::numeric_limits<uint64_t>::max() - rng) % rng_excl;
    while (leftover < threshold) {
      m = static_cast<uint128_t>(gen.Next64()) * rng_excl;
      leftover = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

// §RNG.3 Draw n values low + offset, offset in [0, rng], choosing numpy's path.
// The sum is done in uint64 and then reinterpreted as int64, as numpy does:
// low + offset always lands in int64 range, but the uint64 sum may wrap.
std::vector<int64_t> BoundedFill(Pcg64& gen, int64_t low, uint64_t rng, size_t n) {
  const uint64_t off = static_cast<uint64_t>(low);
  const BoundedPath path = BoundedPathFor(rng);
  std::vector<int64_t> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t offset = 0;
    switch (path) {
      case BoundedPath::kConstant:
        offset = 0;  // no generator call at all
        break;
      case BoundedPath::kLemire32:
        offset = BoundedLemire32(gen, static_cast<uint32_t>(rng));
        break;
      case BoundedPath::kMasked32:
        offset = gen.Next32();
        break;
      case BoundedPath::kRaw64:
        offset = gen.Next64();
        break;
      case BoundedPath::kLemire64:
        offset = BoundedLemire64(gen, rng);
        break;
    }
    out.push_back(static_cast<int64_t>(off + offset));
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// §RNG.1 SeedSequence
// ---------------------------------------------------------------------------

// §RNG.1 mix_entropy: fill the pool by hashing the entropy words (0 past the
// end), let every pool word absorb every other, then fold in any entropy words
// beyond the pool size.
SeedSequence::SeedSequence(uint64_t entropy) {
  const std::vector<uint32_t> words = EntropyWords(entropy);
  uint32_t hash_const = kInitA;
  pool_.assign(kPoolSize, 0);
  for (size_t i = 0; i < kPoolSize; ++i) {
    const uint32_t word = i < words.size() ? words[i] : 0;
    pool_[i] = HashMix(word, hash_const);
  }
  for (size_t i_src = 0; i_src < kPoolSize; ++i_src) {
    for (size_t i_dst = 0; i_dst < kPoolSize; ++i_dst) {
      if (i_src != i_dst) {
        pool_[i_dst] = Mix(pool_[i_dst], HashMix(pool_[i_src], hash_const));
      }
    }
  }
  // A uint64 has at most 2 words, so this loop never runs at the default pool
  // size; it is kept so the rule reads as a whole.
  for (size_t i_src = kPoolSize; i_src < words.size(); ++i_src) {
    for (size_t i_dst = 0; i_dst < kPoolSize; ++i_dst) {
      pool_[i_dst] = Mix(pool_[i_dst], HashMix(words[i_src], hash_const));
    }
  }
}

// §RNG.1 generate_state(n, uint32): cycle through the pool, hashing each word
// with a fresh running constant.
std::vector<uint32_t> SeedSequence::GenerateState32(size_t n_words) const {
  std::vector<uint32_t> state(n_words);
  uint32_t hash_const = kInitB;
  for (size_t i = 0; i < n_words; ++i) {
    uint32_t value = pool_[i % pool_.size()];
    value ^= hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    value ^= value >> kXShift;
    state[i] = value;
  }
  return state;
}

// §RNG.1 generate_state(n, uint64): twice as many 32-bit words, viewed as
// little-endian uint64, so the low word comes first.
std::vector<uint64_t> SeedSequence::GenerateState64(size_t n_words) const {
  const std::vector<uint32_t> words = GenerateState32(2 * n_words);
  std::vector<uint64_t> state(n_words);
  for (size_t i = 0; i < n_words; ++i) {
    state[i] = static_cast<uint64_t>(words[2 * i]) | (static_cast<uint64_t>(words[2 * i + 1]) << 32);
  }
  return state;
}

// ---------------------------------------------------------------------------
// §RNG.2 PCG64
// ---------------------------------------------------------------------------

// §RNG.2 Seeding: four uint64 words from the SeedSequence give the initial
// state (words 0,1 = high,low) and the stream selector (words 2,3). Then the
// PCG "srandom" dance: state 0, odd increment, step, add initstate, step.
Pcg64::Pcg64(const SeedSequence& seq) {
  const std::vector<uint64_t> val = seq.GenerateState64(4);
  const uint128_t initstate = Make128(val[0], val[1]);
  const uint128_t initseq = Make128(val[2], val[3]);
  state_ = 0;
  inc_ = (initseq << 1) | 1;  // the increment must be odd; the top bit of initseq is lost
  state_ = LcgStep(state_, inc_);
  state_ += initstate;
  state_ = LcgStep(state_, inc_);
}

// §RNG.2 Direct state, as numpy's bit_generator.state = {...} sets it (no
// srandom steps, buffer cleared).
Pcg64::Pcg64(uint64_t state_hi, uint64_t state_lo, uint64_t inc_hi, uint64_t inc_lo)
    : state_(Make128(state_hi, state_lo)), inc_(Make128(inc_hi, inc_lo)) {}

// §RNG.2 Step first, then output from the new state.
uint64_t Pcg64::Next64() {
  state_ = LcgStep(state_, inc_);
  return XslRr(state_);
}

// §RNG.2 numpy's PCG64 next_uint32: a 64-bit draw serves two calls; the low
// half is returned now and the high half is kept for the next call.
uint32_t Pcg64::Next32() {
  if (has_uint32_) {
    has_uint32_ = false;
    return uinteger_;
  }
  const uint64_t next = Next64();
  has_uint32_ = true;
  uinteger_ = static_cast<uint32_t>(next >> 32);
  return static_cast<uint32_t>(next);
}

uint64_t Pcg64::state_hi() const { return static_cast<uint64_t>(state_ >> 64); }
uint64_t Pcg64::state_lo() const { return static_cast<uint64_t>(state_); }
uint64_t Pcg64::inc_hi() const { return static_cast<uint64_t>(inc_ >> 64); }
uint64_t Pcg64::inc_lo() const { return static_cast<uint64_t>(inc_); }

// ---------------------------------------------------------------------------
// §RNG.3 Bounded integers
// ---------------------------------------------------------------------------

// §RNG.3 numpy picks the path from rng alone (Generator never uses masking).
BoundedPath BoundedPathFor(uint64_t rng) {
  if (rng == 0) return BoundedPath::kConstant;
  if (rng < 0xFFFFFFFFULL) return BoundedPath::kLemire32;
  if (rng == 0xFFFFFFFFULL) return BoundedPath::kMasked32;
  if (rng == 0xFFFFFFFFFFFFFFFFULL) return BoundedPath::kRaw64;
  return BoundedPath::kLemire64;
}

std::string_view BoundedPathName(BoundedPath path) {
  switch (path) {
    case BoundedPath::kConstant: return "constant";
    case BoundedPath::kLemire32: return "lemire32";
    case BoundedPath::kMasked32: return "masked32";
    case BoundedPath::kRaw64: return "raw64";
    case BoundedPath::kLemire64: return "lemire64";
  }
  return "unknown";
}

// §RNG.3 integers(low, high, n, dtype=int64), endpoint=False: rng = high - 1 - low.
// high - 1 - low never exceeds 2^64 - 2 here; computing it in uint64 is exact.
std::vector<int64_t> Integers(Pcg64& gen, int64_t low, int64_t high, size_t n) {
  if (low >= high) {
    throw Error("Integers: low >= high (low=" + std::to_string(low) + ", high=" + std::to_string(high) +
                ")");
  }
  const uint64_t rng = static_cast<uint64_t>(high) - 1 - static_cast<uint64_t>(low);
  return BoundedFill(gen, low, rng, n);
}

// §RNG.3 Same, but high may be 2^63 (numpy accepts it for int64), which makes
// the full range [-2^63, 2^63) reachable: rng = 2^64 - 1, the raw-64 path.
// high_exclusive is read as a two's-complement 128-bit number, so a negative
// int64 converted to uint128_t keeps its value.
std::vector<int64_t> IntegersWide(Pcg64& gen, int64_t low, uint128_t high_exclusive, size_t n) {
  const int128_t high = static_cast<int128_t>(high_exclusive);
  const int128_t kTwoTo63 = static_cast<int128_t>(1) << 63;
  if (high > kTwoTo63 || high < std::numeric_limits<int64_t>::min()) {
    throw Error("IntegersWide: high outside [-2^63, 2^63] (high as uint128 = " +
                std::to_string(static_cast<uint64_t>(high_exclusive >> 64)) + "*2^64+" +
                std::to_string(static_cast<uint64_t>(high_exclusive)) + ")");
  }
  if (low >= high) {
    throw Error("IntegersWide: low >= high (low=" + std::to_string(low) +
                ", high=" + (high == kTwoTo63 ? std::string("2^63") : std::to_string(static_cast<int64_t>(high))) +
                ")");
  }
  // high - 1 - low lies in [0, 2^64 - 1]; the 128-bit difference is exact.
  const uint64_t rng = static_cast<uint64_t>(high - 1 - low);
  return BoundedFill(gen, low, rng, n);
}

// ---------------------------------------------------------------------------
// §RNG.4 Multipliers
// ---------------------------------------------------------------------------

// §RNG.4 bound = max(1, (INT64_MAX // V) // 2): keeps every id * m below 2^63
// (m = 2r + 1 < 2 * bound <= INT64_MAX / V).
int64_t MultiplierBound(int64_t compressed_vocab_size) {
  if (compressed_vocab_size < 1) {
    throw Error("MultiplierBound: compressed vocab size must be >= 1 (V=" +
                std::to_string(compressed_vocab_size) + ")");
  }
  const int64_t bound = (std::numeric_limits<int64_t>::max() / compressed_vocab_size) / 2;
  return bound < 1 ? 1 : bound;
}

// §RNG.4 seed + 10007 * layer_id. Python computes it in unbounded integers and
// SeedSequence accepts any non-negative integer; we accept whatever fits in
// uint64 and refuse negatives (numpy refuses negative seeds too).
uint64_t LayerSeed(int64_t seed, int64_t layer_id) {
  if (seed < 0) throw Error("LayerSeed: seed must be >= 0 (seed=" + std::to_string(seed) + ")");
  if (layer_id < 0) {
    throw Error("LayerSeed: layer_id must be >= 0 (layer_id=" + std::to_string(layer_id) + ")");
  }
  const uint128_t sum = static_cast<uint128_t>(seed) + static_cast<uint128_t>(10007) * layer_id;
  if (sum > std::numeric_limits<uint64_t>::max()) {
    throw Error("LayerSeed: seed + 10007 * layer_id overflows uint64 (seed=" + std::to_string(seed) +
                ", layer_id=" + std::to_string(layer_id) + ")");
  }
  return static_cast<uint64_t>(sum);
}

// §RNG.4 m_i = 2 r_i + 1 (odd, so multiplication is invertible mod powers of 2),
// r = default_rng(LayerSeed).integers(0, bound, size=max_ngram, dtype=int64).
std::vector<int64_t> LayerMultipliers(int64_t seed, int64_t layer_id, int64_t compressed_vocab_size,
                                      int max_ngram) {
  if (max_ngram < 0) {
    throw Error("LayerMultipliers: max_ngram must be >= 0 (max_ngram=" + std::to_string(max_ngram) + ")");
  }
  const int64_t bound = MultiplierBound(compressed_vocab_size);
  Pcg64 gen{SeedSequence(LayerSeed(seed, layer_id))};
  const std::vector<int64_t> r = Integers(gen, 0, bound, static_cast<size_t>(max_ngram));
  std::vector<int64_t> multipliers;
  multipliers.reserve(r.size());
  for (int64_t value : r) {
    multipliers.push_back(2 * value + 1);  // value < bound <= INT64_MAX / 2: no overflow
  }
  return multipliers;
}

}  // namespace engram
