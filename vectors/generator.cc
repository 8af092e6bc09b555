// spec/vectors.md — the golden-vector generator (§VEC.1-§VEC.5).
//
// Each suite is a function that lays out test groups and tests; every
// expected value is computed here by the reference library, never typed in.
// Test inputs are chosen to hit each rule of the spec at least once, and the
// flags say which rule (or which known porting bug) a test is about.
#include "vectors/generator.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "conformance/cli/fileio.h"
#include "reference/config.h"
#include "reference/error.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/random.h"
#include "reference/token_map.h"
#include "vectors/suite_util.h"

namespace engram::vectors {
namespace {

// ---------------------------------------------------------------------------
// Deterministic inputs: a counter-based generator (SplitMix64) so that the
// choice of random-looking test inputs never depends on the platform.
class InputRng {
 public:
  explicit InputRng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform-enough in [0, n) for test-input purposes (n >= 1).
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

// ---------------------------------------------------------------------------
// A suite under construction: keeps tcIds consecutive over the whole file.
class SuiteBuilder {
 public:
  SuiteBuilder(std::string suite, std::string schema, std::string algorithm) : suite_(std::move(suite)) {
    doc_["schema"] = std::move(schema);
    doc_["algorithm"] = std::move(algorithm);
    doc_["specVersion"] = kSpecVersion;
    doc_["generator"] = {{"name", "engram-reference"}, {"version", ENGRAM_VERSION}};
    doc_["numberOfTests"] = 0;
    doc_["header"] = ojson::array();
    doc_["notes"] = ojson::object();
    doc_["testGroups"] = ojson::array();
  }
  void Header(const std::string& line) { doc_["header"].push_back(line); }
  void Note(const std::string& flag, const std::string& bug_type, const std::string& description,
            const std::string& spec_ref) {
    doc_["notes"][flag] = {{"bugType", bug_type}, {"description", description}, {"specRef", ojson::array({spec_ref})}};
  }
  // Starts a group; returns its index for AddTest.
  size_t Group(ojson group) {
    group["tests"] = ojson::array();
    doc_["testGroups"].push_back(std::move(group));
    return doc_["testGroups"].size() - 1;
  }
  // Adds a test: tcId, comment, flags, specRef first, then the test's own fields.
  void Test(size_t group, const std::string& comment, const std::vector<std::string>& flags,
            const std::vector<std::string>& spec_refs, const ojson& fields) {
    for (const std::string& f : flags) {
      if (!doc_["notes"].contains(f)) throw Error("generator bug: flag " + f + " has no note in suite " + suite_);
    }
    ojson t;
    t["tcId"] = ++count_;
    t["comment"] = comment;
    t["flags"] = flags;
    t["specRef"] = spec_refs;
    for (const auto& [k, v] : fields.items()) t[k] = v;
    doc_["testGroups"][group]["tests"].push_back(std::move(t));
  }
  ojson Finish() {
    doc_["numberOfTests"] = count_;
    return std::move(doc_);
  }

 private:
  std::string suite_;
  ojson doc_;
  int count_ = 0;
};

// ---------------------------------------------------------------------------
// multipliers (§RNG)

ojson PoolJson(uint64_t seed) {
  SeedSequence seq(seed);
  return {{"pool", seq.pool()}, {"generateState", seq.GenerateState64(4)}};
}

ojson MultipliersSuite() {
  SuiteBuilder b("multipliers", "multipliers.schema.json", "ENGRAM-MULTIPLIERS");
  b.Header("Hash multipliers as numpy draws them: SeedSequence -> PCG64 -> Generator.integers(dtype=int64).");
  b.Header("BoundedIntegersTest exercises every path of numpy's bounded-integer sampler directly;");
  b.Header("MultipliersTest derives the per-layer multipliers m = 2 * integers(0, bound, max_ngram) + 1.");
  b.Note("ConstantPath", "EDGE_CASE", "rng = high - low - 1 = 0: numpy returns low without drawing.", "§RNG.3");
  b.Note("Lemire32Path", "BASIC",
         "rng < 2^32 - 1: Lemire's method on 32-bit halves of 64-bit draws, low half first.", "§RNG.3");
  b.Note("Masked32Path", "EDGE_CASE", "rng = 2^32 - 1: a buffered 32-bit draw is used as is.", "§RNG.3");
  b.Note("Raw64Path", "EDGE_CASE", "rng = 2^64 - 1: a raw 64-bit draw is used as is.", "§RNG.3");
  b.Note("Lemire64Path", "BASIC", "Otherwise: Lemire's method with a 128-bit product.", "§RNG.3");
  b.Note("HighRejection", "EDGE_CASE",
         "A range just above a power of two, where Lemire's method rejects often; ports that skip the "
         "rejection loop (or use modulo) drift here.",
         "§RNG.3");
  b.Note("PublishedV41", "BASIC",
         "The widely published DeepSeek-V4.1-Flash multipliers (V = 99092, seed 0, layers 1 and 14).", "§RNG.4");
  b.Note("Int32Multipliers", "KNOWN_DIVERGENCE",
         "Ports that draw or store multipliers as int32 (MaxText) cannot produce these values; "
         "their tables are self-consistent but not compatible.",
         "§RNG.4");
  b.Note("BoundOne", "EDGE_CASE", "V so large that bound = max(1, ...) = 1: every multiplier is 1.", "§RNG.4");
  b.Note("InvalidVocab", "INVALID_INPUT", "V < 1 has no multiplier bound: implementations must refuse it.", "§RNG.4");

  // BoundedIntegersTest: (low, high) pairs chosen per path.
  struct Range {
    int64_t low;
    uint128_t high;  // exclusive, may be 2^63
    std::vector<std::string> flags;
    std::string comment;
  };
  const uint128_t two63 = static_cast<uint128_t>(1) << 63;
  const std::vector<Range> ranges = {
      {5, 6, {"ConstantPath"}, "one value: no draw"},
      {-7, static_cast<uint128_t>(int64_t{-6}), {"ConstantPath"}, "one negative value"},
      {0, 10, {"Lemire32Path"}, "small range"},
      {-50, 50, {"Lemire32Path"}, "range across zero"},
      {0, (int64_t{1} << 31) + 1, {"Lemire32Path", "HighRejection"}, "2^31 + 1 values: many rejections"},
      {0, (int64_t{1} << 32) - 1, {"Lemire32Path"}, "2^32 - 1 values: the largest 32-bit Lemire range"},
      {0, int64_t{1} << 32, {"Masked32Path"}, "exactly 2^32 values"},
      {-(int64_t{1} << 31), int64_t{1} << 31, {"Masked32Path"}, "2^32 values centred on zero"},
      {0, (int64_t{1} << 32) + 1, {"Lemire64Path"}, "2^32 + 1 values: the smallest 64-bit Lemire range"},
      {0, 46539438283891, {"Lemire64Path"}, "the V4.1 multiplier bound"},
      {0, (int64_t{1} << 62) + 1, {"Lemire64Path", "HighRejection"}, "2^62 + 1 values: many rejections"},
      {-(int64_t{1} << 62), int64_t{1} << 62, {"Lemire64Path"}, "2^63 values centred on zero"},
      {0, two63, {"Lemire64Path"}, "high = 2^63, the int64 limit"},
      {std::numeric_limits<int64_t>::min(), two63, {"Raw64Path"}, "the whole int64 range"},
  };
  const std::vector<uint64_t> seeds = {0, 1, 42, 10007, 140098, 4294967301ULL, 9223372036854775807ULL};
  size_t g = b.Group({{"type", "BoundedIntegersTest"}, {"dtype", "int64"}, {"endpoint", false}});
  for (const Range& r : ranges) {
    for (size_t si = 0; si < seeds.size(); si += (r.flags[0] == "ConstantPath" ? 3 : 2)) {
      uint64_t seed = seeds[si];
      Pcg64 gen{SeedSequence(seed)};
      const size_t count = 6;
      std::vector<int64_t> values = IntegersWide(gen, r.low, r.high, count);
      uint64_t rng = static_cast<uint64_t>(r.high - 1 - static_cast<uint128_t>(r.low));
      ojson high = r.high == two63 ? ojson(static_cast<uint64_t>(two63)) : ojson(static_cast<int64_t>(r.high));
      ojson intermediate = PoolJson(seed);
      intermediate["rng"] = rng;
      intermediate["path"] = std::string(BoundedPathName(BoundedPathFor(rng)));
      b.Test(g, r.comment + ", seed " + std::to_string(seed), r.flags, {"§RNG.1", "§RNG.2", "§RNG.3"},
             {{"seed", seed}, {"low", r.low}, {"high", high}, {"count", count}, {"result", "valid"},
              {"intermediate", intermediate}, {"values", values}});
    }
  }

  // MultipliersTest
  g = b.Group({{"type", "MultipliersTest"}});
  auto add_multipliers = [&](int64_t seed, int64_t layer_id, int64_t v, int max_ngram, std::vector<std::string> flags,
                             const std::string& comment) {
    const int64_t bound = MultiplierBound(v);
    const uint64_t rng = static_cast<uint64_t>(bound - 1);
    flags.insert(flags.begin(), BoundedPathFor(rng) == BoundedPath::kConstant   ? "ConstantPath"
                                : BoundedPathFor(rng) == BoundedPath::kLemire32 ? "Lemire32Path"
                                                                                 : "Lemire64Path");
    ojson intermediate = {{"layerSeed", LayerSeed(seed, layer_id)},
                          {"bound", bound},
                          {"path", std::string(BoundedPathName(BoundedPathFor(rng)))}};
    b.Test(g, comment, flags, {"§RNG.4"},
           {{"seed", seed}, {"layerId", layer_id}, {"compressedVocabSize", v}, {"maxNgram", max_ngram},
            {"result", "valid"}, {"intermediate", intermediate},
            {"multipliers", LayerMultipliers(seed, layer_id, v, max_ngram)}});
  };
  add_multipliers(0, 1, 99092, 4, {"PublishedV41", "Int32Multipliers"}, "DeepSeek-V4.1-Flash layer 1");
  add_multipliers(0, 14, 99092, 4, {"PublishedV41", "Int32Multipliers"}, "DeepSeek-V4.1-Flash layer 14");
  add_multipliers(0, 1, 129280, 3, {"Int32Multipliers"}, "demo-v1 layer 1, V = 129280");
  add_multipliers(0, 15, 129280, 3, {"Int32Multipliers"}, "demo-v1 layer 15, V = 129280");
  add_multipliers(0, 0, 1, 4, {}, "V = 1, layer 0: the largest bound");
  add_multipliers(0, 3, 2, 2, {}, "V = 2");
  add_multipliers(7, 2, 1000, 5, {}, "seed 7");
  add_multipliers(123456789, 40, 50000, 6, {}, "large seed, six slots");
  add_multipliers(0, 1, int64_t{1} << 30, 4, {}, "V = 2^30: bound 2^32 - 1 (largest 32-bit Lemire bound)");
  add_multipliers(0, 1, (int64_t{1} << 30) - 1, 4, {}, "V = 2^30 - 1: bound just above 2^32");
  add_multipliers(0, 2, int64_t{1} << 40, 3, {}, "V = 2^40: small 32-bit bound");
  add_multipliers(0, 1, std::numeric_limits<int64_t>::max() / 2, 4, {"BoundOne"}, "V = (2^63-1)/2: bound 1");
  add_multipliers(5, 9, std::numeric_limits<int64_t>::max(), 3, {"BoundOne"}, "V = 2^63 - 1: bound 1");
  InputRng rng(0x4D554C54);
  for (int i = 0; i < 24; ++i) {
    int64_t v = 1 + rng.Below(int64_t{1} << (1 + rng.Below(40)));
    add_multipliers(rng.Below(1000), rng.Below(64), v, 2 + static_cast<int>(rng.Below(5)), {}, "random case");
  }
  b.Test(g, "V = 0 must be refused", {"InvalidVocab"}, {"§RNG.4"},
         {{"seed", 0}, {"layerId", 1}, {"compressedVocabSize", 0}, {"maxNgram", 4}, {"result", "invalid"}});
  return b.Finish();
}

// ---------------------------------------------------------------------------
// layout (§CFG, §LAY)

ojson V41ConfigJson() {
  return {{"engram_layer_ids", {1, 14}},
          {"engram_vocab_size", 16000000},
          {"engram_num_embeddings", {384006168, 384016682}},
          {"engram_max_ngram_size", 4},
          {"engram_n_heads", 8},
          {"engram_head_dim", 256},
          {"engram_pad_id", 2},
          {"engram_compressed_vocab_size", 99092},
          {"dim", 5120},
          {"hc_mult", 4},
          {"norm_eps", 1e-20}};
}

ojson DemoConfigJson() {
  return {{"engram_vocab_size", {646400, 646400}},
          {"max_ngram_size", 3},
          {"n_embed_per_ngram", 512},
          {"n_head_per_ngram", 8},
          {"layer_ids", {1, 15}},
          {"pad_id", 2},
          {"seed", 0},
          {"kernel_size", 4},
          {"hidden_size", 1024},
          {"hc_mult", 4},
          {"vocab_size", 129280}};
}

// A v4.1 config of any shape with engram_num_embeddings filled in from the
// layout (so that it is consistent by construction).
ojson SmallV41Config(std::vector<int64_t> layer_ids, int64_t base, int max_ngram, int heads, int64_t v) {
  ojson c = {{"engram_layer_ids", layer_ids}, {"engram_vocab_size", base},
             {"engram_max_ngram_size", max_ngram}, {"engram_n_heads", heads},
             {"engram_head_dim", 8}, {"engram_pad_id", 2}, {"engram_compressed_vocab_size", v}};
  // Compute the prime sums first (engram_num_embeddings is optional, §CFG.2).
  Layout layout = BuildLayout(ParseConfig(nlohmann::json::parse(c.dump()), "<generator>"), v, 2);
  std::vector<int64_t> sums;
  for (const LayerLayout& l : layout.layers) sums.push_back(l.num_embeddings);
  c["engram_num_embeddings"] = sums;
  return c;
}

ojson LayoutSuite() {
  SuiteBuilder b("layout", "layout.schema.json", "ENGRAM-LAYOUT");
  b.Header("Per-layer hash parameters from a configuration: multipliers, primes per (order, head), ");
  b.Header("offsets (exclusive prefix sums, order-major columns) and table rows.");
  b.Note("RealConfig", "BASIC", "A configuration that ships with a released model or demo.", "§CFG.1");
  b.Note("HfShape", "BASIC", "Hugging Face config.json shape: engram_* keys under text_config.", "§CFG.2");
  b.Note("GlobalSeen", "BASIC",
         "Bases are close enough that later layers/orders must skip primes taken earlier: a port that "
         "resets `seen` per layer or per order reuses a prime here.",
         "§LAY.2");
  b.Note("PerOrderBases", "BASIC", "demo-v1 bases differ per n-gram order.", "§CFG.3");
  b.Note("NumEmbeddingsMismatch", "INVALID_INPUT",
         "engram_num_embeddings disagrees with the prime sums: the table would not match; refuse.", "§LAY.4");
  b.Note("CompressedSizeMismatch", "INVALID_INPUT",
         "engram_compressed_vocab_size disagrees with the token map: every multiplier would change; refuse.",
         "§LAY.4");
  b.Note("InvalidConfig", "INVALID_INPUT", "A configuration that violates a validation rule; refuse.", "§CFG.4");

  auto add = [&](size_t g, const ojson& config, const std::string& profile, int64_t v, int64_t pad,
                 const std::vector<std::string>& flags, const std::string& comment) {
    ojson fields = {{"config", config}, {"profile", profile}, {"compressedVocabSize", v}, {"compressedPad", pad}};
    try {
      EngramConfig cfg = ParseConfig(nlohmann::json::parse(config.dump()), "config", ParseProfile(profile));
      Layout layout = BuildLayout(cfg, v, pad);
      fields["result"] = "valid";
      fields["layers"] = LayersJson(layout);
    } catch (const Error& e) {
      fields["result"] = "invalid";
      fields["error"] = e.what();
    }
    b.Test(g, comment, flags, {"§CFG.4", "§LAY.2", "§LAY.3", "§LAY.4"}, fields);
  };
  size_t g = b.Group({{"type", "LayoutTest"}});
  add(g, V41ConfigJson(), "v4.1", 99092, 2, {"RealConfig"}, "DeepSeek-V4.1-Flash inference config.json");
  ojson hf = {{"architectures", {"DeepseekV41ForCausalLM"}}, {"text_config", V41ConfigJson()}};
  hf["text_config"].erase("engram_pad_id");
  hf["text_config"]["engram_pad_token_id"] = 2;
  hf["text_config"].erase("dim");
  hf["text_config"]["hidden_size"] = 5120;
  hf["text_config"].erase("norm_eps");
  hf["text_config"]["rms_norm_eps"] = 1e-20;
  add(g, hf, "v4.1", 99092, 2, {"RealConfig", "HfShape"}, "DeepSeek-V4.1-Flash, Hugging Face shape");
  add(g, DemoConfigJson(), "demo-v1", 129280, 2, {"RealConfig"}, "engram_demo_v1.py defaults (V = 129280)");
  ojson demo_bases = DemoConfigJson();
  demo_bases["engram_vocab_size"] = {100, 50, 101};
  demo_bases["max_ngram_size"] = 4;
  demo_bases["n_head_per_ngram"] = 3;
  demo_bases["n_embed_per_ngram"] = 6;
  demo_bases["layer_ids"] = {0, 7};
  add(g, demo_bases, "demo-v1", 500, 2, {"PerOrderBases", "GlobalSeen"},
      "demo-v1 with bases 100, 50, 101: order 4 starts among primes order 2 took");
  add(g, SmallV41Config({0, 2, 5}, 10, 3, 3, 40), "v4.1", 40, 2, {"GlobalSeen"},
      "three layers sharing base 10: every layer continues above the previous layer's primes");
  add(g, SmallV41Config({3}, 2, 2, 1, 3), "v4.1", 3, 2, {}, "smallest layout: base 2, one head, bigrams only");
  add(g, SmallV41Config({1}, 1000003, 6, 5, 12345), "v4.1", 12345, 2, {}, "max n-gram 6, base itself prime");

  ojson bad = V41ConfigJson();
  bad["engram_num_embeddings"] = {384006168, 384016681};
  add(g, bad, "v4.1", 99092, 2, {"NumEmbeddingsMismatch"}, "layer 14's row count is one short");
  add(g, V41ConfigJson(), "v4.1", 99091, 2, {"CompressedSizeMismatch"}, "token map one id smaller than the config");
  ojson bad2 = V41ConfigJson();
  bad2["engram_max_ngram_size"] = 1;
  add(g, bad2, "v4.1", 99092, 2, {"InvalidConfig"}, "max n-gram 1 has no n-gram orders");
  ojson bad3 = DemoConfigJson();
  bad3["layer_ids"] = {1, 1};
  add(g, bad3, "demo-v1", 129280, 2, {"InvalidConfig"}, "duplicate layer ids");
  ojson bad4 = DemoConfigJson();
  bad4["n_head_per_ngram"] = 0;
  add(g, bad4, "demo-v1", 129280, 2, {"InvalidConfig"}, "zero heads");
  ojson bad5 = DemoConfigJson();
  bad5["engram_vocab_size"] = {646400};
  add(g, bad5, "demo-v1", 129280, 2, {"InvalidConfig"}, "one base for two orders");
  return b.Finish();
}

// ---------------------------------------------------------------------------
// hash_v41 / hash_demo (§HASH)

struct HashGroup {
  ojson config;
  std::string profile;
  int64_t v;
  int64_t pad;
  std::string comment;
};

Layout LayoutOf(const HashGroup& hg) {
  EngramConfig cfg = ParseConfig(nlohmann::json::parse(hg.config.dump()), "config", ParseProfile(hg.profile));
  return BuildLayout(cfg, hg.v, hg.pad);
}

// The state tests need to roll back at most this many ids (§HASH.6).
constexpr size_t kStateRollbackCapacity = 16;

// Runs a HashStateTest's steps, filling in each append's expected rows.
ojson RunSteps(const Layout& layout, ojson steps) {
  std::map<std::string, HashState> seqs;
  for (ojson& step : steps) {
    const std::string op = step["op"];
    if (op == "append") {
      const std::string name = step["seq"];
      auto it = seqs.find(name);
      if (it == seqs.end()) it = seqs.emplace(name, HashState(layout, kStateRollbackCapacity)).first;
      std::vector<int64_t> ids = step["ids"].get<std::vector<int64_t>>();
      std::vector<int64_t> rows;
      it->second.Append(ids, rows);
      step["rows"] = NestRows(layout, rows);
      step["positionAfter"] = it->second.position();
      step["historyAfter"] = it->second.History();
    } else if (op == "rollback") {
      HashState& s = seqs.at(step["seq"].get<std::string>());
      s.Rollback(step["k"].get<size_t>());
      step["positionAfter"] = s.position();
      step["historyAfter"] = s.History();
    } else if (op == "fork") {
      seqs.insert_or_assign(step["to"].get<std::string>(), seqs.at(step["from"].get<std::string>()));
    }
  }
  return steps;
}

ojson HashSuite(bool v41) {
  const std::string suite = v41 ? "hash_v41" : "hash_demo";
  SuiteBuilder b(suite, "hash.schema.json", "ENGRAM-HASH");
  b.Header("N-gram hashing: compressed ids -> row ids rows[position][layer][column], column = (n-2)*heads + head,");
  b.Header("offsets added. Intermediate values per position: the look-back window as read, the blocked flags,");
  b.Header("the tokens after blocking/padding, the rolling mixes per layer and order, the residues per column.");
  b.Note("SequenceStart", "BASIC", "Positions before the start read the compressed pad id.", "§HASH.2");
  b.Note("BucketCollision", "BASIC",
         "Two different n-grams land in the same row of some column: collisions are part of the design.", "§HASH.4");
  b.Note("MaxId", "EDGE_CASE", "Ids at V - 1: the largest products, still below 2^63.", "§HASH.7");
  b.Note("ChunkedPrefill", "BASIC",
         "The sequence arrives in chunks; a port that loses history at a chunk boundary fails.", "§HASH.5");
  b.Note("Decode", "BASIC", "Token-by-token decode after a prefill.", "§HASH.5");
  b.Note("Rollback", "BASIC",
         "Speculative decoding: drafted ids are rolled back; a port that keeps the previous step's ids fails.",
         "§HASH.6");
  b.Note("Fork", "BASIC", "Two sequences share a prefix and continue independently.", "§HASH.6");
  b.Note("OutOfRangeId", "INVALID_INPUT", "A compressed id >= V must be refused.", "§HASH.1");
  if (v41) {
    b.Note("DeadSpan", "BASIC",
           "A DEAD (-1, masked) span stops the look-back; its effect ends max_ngram - 1 positions later.", "§HASH.2");
    b.Note("DeadCurrent", "EDGE_CASE", "The current token is DEAD: every slot is blocked, the window is all pad.",
           "§HASH.2");
    b.Note("NoDeadBlocking", "KNOWN_DIVERGENCE",
           "Ports that hash DEAD as an ordinary id, or pad only the DEAD slot without blocking older slots, "
           "differ on this test.",
           "§HASH.2");
    b.Note("NegativeIdRefused", "INVALID_INPUT", "v4.1 has no negative ids other than DEAD (-1): refuse -2.", "§HASH.1");
  } else {
    b.Note("NegativeIdPassThrough", "BASIC",
           "demo-v1 hashes negative ids as they are (the demo copies them through compression).", "§HASH.1");
    b.Note("FloorMod", "KNOWN_DIVERGENCE",
           "Negative mixes reduce with floor-mod into [0, p); a C-style truncated % gives a negative residue.",
           "§HASH.4");
    b.Note("ProductWrap", "EDGE_CASE",
           "A large negative id whose product with a multiplier wraps around int64, as numpy does.", "§HASH.3");
  }

  std::vector<HashGroup> groups;
  if (v41) {
    groups.push_back({V41ConfigJson(), "v4.1", 99092, 2, "DeepSeek-V4.1-Flash layout, V = 99092, pad 2"});
    groups.push_back({SmallV41Config({0, 3}, 5, 4, 2, 12), "v4.1", 12, 1,
                      "tiny layout (base 5, two heads, V = 12, pad 1) so that buckets collide"});
  } else {
    ojson demo = DemoConfigJson();
    groups.push_back({demo, "demo-v1", 129280, 2, "engram_demo_v1.py defaults, V = 129280, pad 2"});
    ojson tiny = DemoConfigJson();
    tiny["engram_vocab_size"] = {7, 11};
    tiny["n_head_per_ngram"] = 2;
    tiny["n_embed_per_ngram"] = 4;
    tiny["layer_ids"] = {0, 3};
    tiny["seed"] = 5;
    groups.push_back({tiny, "demo-v1", 12, 1, "tiny layout (bases 7, 11, two heads, V = 12, seed 5, pad 1)"});
  }

  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const HashGroup& hg = groups[gi];
    const Layout layout = LayoutOf(hg);
    const int64_t v = hg.v;
    const int w = layout.max_ngram;
    ojson params = {{"type", "HashTest"},           {"comment", hg.comment},
                    {"profile", hg.profile},        {"config", hg.config},
                    {"compressedVocabSize", hg.v},  {"compressedPad", hg.pad},
                    {"layers", LayersJson(layout)}};
    size_t g = b.Group(params);
    InputRng rng(0x48415348 + gi + (v41 ? 100 : 0));
    auto random_ids = [&](size_t n) {
      std::vector<int64_t> ids(n);
      for (int64_t& id : ids) id = rng.Below(v);
      return ids;
    };
    auto add = [&](const std::vector<int64_t>& ids, const std::string& comment, std::vector<std::string> flags,
                   std::vector<std::string> refs) {
      ojson fields = {{"ids", ids}};
      try {
        std::vector<PositionTrace> traces = TraceSequence(layout, ids);
        fields["result"] = "valid";
        fields["rows"] = ojson(NestRows(layout, HashSequence(layout, ids)));
        fields["intermediate"] = TraceJson(traces);
      } catch (const Error& e) {
        fields["result"] = "invalid";
        fields["error"] = e.what();
      }
      b.Test(g, comment, flags, refs, fields);
    };
    add({}, "empty sequence: no rows", {}, {"§HASH.4"});
    add(random_ids(1), "one token: every look-back slot reads pad", {"SequenceStart"}, {"§HASH.2", "§HASH.4"});
    add(random_ids(static_cast<size_t>(w) + 3), "sequence start, then full windows", {"SequenceStart"},
        {"§HASH.2", "§HASH.3", "§HASH.4"});
    add(std::vector<int64_t>(static_cast<size_t>(w) + 1, v - 1), "every id is V - 1", {"MaxId"},
        {"§HASH.3", "§HASH.7"});
    add(std::vector<int64_t>(3, hg.pad), "ids equal to pad: indistinguishable from the start padding",
        {"SequenceStart"}, {"§HASH.2"});
    if (v41) {
      // DEAD spans of every length 1 .. w+1 in the middle of a sequence.
      for (int len = 1; len <= w + 1; ++len) {
        std::vector<int64_t> ids = random_ids(static_cast<size_t>(len + 2 * w));
        for (int k = 0; k < len; ++k) ids[static_cast<size_t>(w + k)] = kDead;
        add(ids, "DEAD span of length " + std::to_string(len) + " at position " + std::to_string(w),
            {"DeadSpan", "DeadCurrent", "NoDeadBlocking"}, {"§HASH.1", "§HASH.2"});
      }
      std::vector<int64_t> first_dead = random_ids(static_cast<size_t>(w) + 2);
      first_dead[0] = kDead;
      add(first_dead, "the first token is DEAD", {"DeadCurrent", "DeadSpan", "NoDeadBlocking", "SequenceStart"},
          {"§HASH.2"});
      add(std::vector<int64_t>(4, kDead), "every token DEAD: all-pad windows", {"DeadCurrent", "DeadSpan"},
          {"§HASH.2"});
      std::vector<int64_t> alternating = random_ids(static_cast<size_t>(3 * w));
      for (size_t t = 1; t < alternating.size(); t += 2) alternating[t] = kDead;
      add(alternating, "DEAD every other position: no n-gram ever spans two live ids",
          {"DeadSpan", "DeadCurrent", "NoDeadBlocking"}, {"§HASH.2"});
      add({1, 2, -2, 3}, "-2 is not a valid v4.1 compressed id", {"NegativeIdRefused"}, {"§HASH.1"});
    } else {
      add({-1, -2, 5, -3, 7}, "negative ids are hashed as they are", {"NegativeIdPassThrough", "FloorMod"},
          {"§HASH.1", "§HASH.4"});
      add({-(int64_t{1} << 62), 3, -(int64_t{1} << 62) - 12345, 4}, "large negative ids: products wrap around int64",
          {"NegativeIdPassThrough", "FloorMod", "ProductWrap"}, {"§HASH.1", "§HASH.3", "§HASH.4"});
      add({std::numeric_limits<int64_t>::min(), -1, 0}, "INT64_MIN", {"NegativeIdPassThrough", "FloorMod", "ProductWrap"},
          {"§HASH.1", "§HASH.3", "§HASH.4"});
    }
    add({0, v, 1}, "V is not a compressed id", {"OutOfRangeId"}, {"§HASH.1"});
    for (int i = 0; i < 4; ++i) add(random_ids(24), "random sequence", {}, {"§HASH.2", "§HASH.3", "§HASH.4"});

    // Bucket collisions: search deterministic random pairs of windows until two
    // different full windows share a row in the same column of layer 0.
    {
      std::map<std::pair<int, int64_t>, std::vector<int64_t>> seen_rows;
      bool found = false;
      for (int attempt = 0; attempt < 200000 && !found; ++attempt) {
        std::vector<int64_t> ids = random_ids(static_cast<size_t>(w));
        std::vector<int64_t> rows = HashSequence(layout, ids);
        const size_t last = static_cast<size_t>(w - 1) * layout.layers.size() * static_cast<size_t>(layout.columns());
        const int col = layout.columns() - 1;  // the highest order, last head
        auto key = std::make_pair(col, rows[last + static_cast<size_t>(col)]);
        auto it = seen_rows.find(key);
        if (it != seen_rows.end() && it->second != ids) {
          std::vector<int64_t> both = it->second;
          both.insert(both.end(), ids.begin(), ids.end());
          add(both, "two different " + std::to_string(w) + "-grams (positions " + std::to_string(w - 1) + " and " +
                        std::to_string(2 * w - 1) + ") share row " + std::to_string(key.second) + " of column " +
                        std::to_string(col) + " in the first layer",
              {"BucketCollision"}, {"§HASH.4"});
          found = true;
        }
        seen_rows.emplace(key, ids);
      }
      if (!found) throw Error("generator: no bucket collision found for " + hg.comment);
    }

    // HashStateTest: chunked prefill, decode, rollback, fork.
    ojson sparams = params;
    sparams["type"] = "HashStateTest";
    sparams["rollbackCapacity"] = kStateRollbackCapacity;
    size_t sg = b.Group(sparams);
    auto add_steps = [&](ojson steps, const std::string& comment, std::vector<std::string> flags) {
      ojson fields;
      fields["result"] = "valid";
      fields["steps"] = RunSteps(layout, std::move(steps));
      b.Test(sg, comment, flags, {"§HASH.5", "§HASH.6"}, fields);
    };
    auto append = [](const std::string& seq, const std::vector<int64_t>& ids) {
      return ojson{{"op", "append"}, {"seq", seq}, {"ids", ids}};
    };
    std::vector<int64_t> seq = random_ids(20);
    if (v41) {
      seq[6] = kDead;
      seq[7] = kDead;
    } else {
      seq[6] = -3;
    }
    auto part = [&](size_t from, size_t to) { return std::vector<int64_t>(seq.begin() + static_cast<std::ptrdiff_t>(from), seq.begin() + static_cast<std::ptrdiff_t>(to)); };
    add_steps({append("a", part(0, 20))}, "one-shot prefill (the reference for the chunked tests below)", {});
    add_steps({append("a", part(0, 1)), append("a", part(1, 3)), append("a", part(3, 7)), append("a", part(7, 8)),
               append("a", part(8, 20))},
              "chunks of 1, 2, 4, 1, 12: each chunk boundary falls inside some window", {"ChunkedPrefill"});
    {
      ojson steps = {append("a", part(0, 5))};
      for (size_t t = 5; t < 20; ++t) steps.push_back(append("a", part(t, t + 1)));
      add_steps(steps, "prefill 5, then decode one token at a time", {"ChunkedPrefill", "Decode"});
    }
    add_steps({append("a", part(0, 3)), append("a", {}), append("a", part(3, 20))}, "an empty chunk changes nothing",
              {"ChunkedPrefill"});
    {
      std::vector<int64_t> draft = random_ids(4);
      add_steps({append("a", part(0, 10)), append("a", draft), {{"op", "rollback"}, {"seq", "a"}, {"k", 4}},
                 append("a", part(10, 20))},
                "speculative draft of 4 rolled back, then the accepted continuation", {"Rollback"});
      add_steps({append("a", part(0, 10)), append("a", draft), {{"op", "rollback"}, {"seq", "a"}, {"k", 2}},
                 append("a", part(12, 20))},
                "draft of 4, 2 accepted (rollback 2); the accepted ids differ from the real continuation", {"Rollback"});
      add_steps({append("a", part(0, 2)), {{"op", "rollback"}, {"seq", "a"}, {"k", 2}}, append("a", part(0, 5))},
                "rollback to the very start", {"Rollback", "SequenceStart"});
    }
    {
      std::vector<int64_t> other = random_ids(6);
      add_steps({append("a", part(0, 9)), {{"op", "fork"}, {"from", "a"}, {"to", "b"}}, append("b", other),
                 append("a", part(9, 20))},
                "fork after 9 ids: b continues differently, a is unaffected", {"Fork"});
      add_steps({append("a", part(0, 9)), {{"op", "fork"}, {"from", "a"}, {"to", "b"}},
                 {{"op", "rollback"}, {"seq", "b"}, {"k", 3}}, append("b", other), append("a", part(9, 12))},
                "fork, roll the fork back by 3, continue both", {"Fork", "Rollback"});
    }
  }
  return b.Finish();
}

void WriteSchemaCopies(const std::filesystem::path& schema_dir, const std::filesystem::path& out_schema,
                       std::vector<std::string>& manifest_paths, std::ostream& log) {
  std::error_code ec;
  const bool same = std::filesystem::exists(out_schema) && std::filesystem::equivalent(schema_dir, out_schema, ec);
  if (!std::filesystem::is_directory(schema_dir)) throw Error(schema_dir.string() + ": schema directory not found");
  std::filesystem::create_directories(out_schema);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(schema_dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    if (!same) WriteFileAtomic(out_schema / f.filename(), ReadFile(f));
    manifest_paths.push_back("schema/" + f.filename().string());
  }
  log << "schemas: " << files.size() << " file(s)" << (same ? " (in place)" : " copied") << "\n";
}

}  // namespace

std::vector<std::string> SuiteNames() { return {"multipliers", "layout", "hash_v41", "hash_demo"}; }

ojson GenerateSuite(const std::string& name) {
  if (name == "multipliers") return MultipliersSuite();
  if (name == "layout") return LayoutSuite();
  if (name == "hash_v41") return HashSuite(true);
  if (name == "hash_demo") return HashSuite(false);
  throw Error("unknown vector suite '" + name + "'");
}

std::string Serialize(const ojson& doc) { return doc.dump(1) + "\n"; }

void GenerateAll(const std::filesystem::path& out, const std::filesystem::path& schema_dir, std::ostream& log) {
  std::filesystem::create_directories(out / kVectorsDir);
  std::vector<std::string> manifest_paths;
  for (const std::string& name : SuiteNames()) {
    ojson doc = GenerateSuite(name);
    const std::string rel = std::string(kVectorsDir) + "/" + name + ".json";
    WriteFileAtomic(out / rel, Serialize(doc));
    manifest_paths.push_back(rel);
    log << rel << ": " << doc["numberOfTests"].get<int>() << " tests\n";
  }
  WriteSchemaCopies(schema_dir, out / "schema", manifest_paths, log);
  std::sort(manifest_paths.begin(), manifest_paths.end());
  std::string manifest;
  for (const std::string& rel : manifest_paths) manifest += Sha256Hex(ReadFile(out / rel)) + "  " + rel + "\n";
  WriteFileAtomic(out / "MANIFEST.sha256", manifest);
  log << "MANIFEST.sha256: " << manifest_paths.size() << " entries\n";
}

}  // namespace engram::vectors
