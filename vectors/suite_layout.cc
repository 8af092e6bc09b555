// spec/layout.md — suite `layout` (§VEC.6): generator and verifier.
#include <algorithm>
#include <limits>
#include <map>

#include "reference/config.h"
#include "base/error.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/random.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

// §VEC.12 the validation gaps of upstream code (spec/sources.md [SRC-DEMO],
// [SRC-V41]): each note names the code that has the gap.
void AddConfigGapNote(SuiteBuilder& b, ConfigGap gap) {
  std::string text;
  std::string spec = "§CFG.4";
  switch (gap) {
    case ConfigGap::kDuplicateLayerIds:
      text = "A validation gap of upstream code, not a behaviour to copy: duplicate layer ids are accepted by the "
             "upstream demo (engram_demo_v1.py, which silently overwrites the layer) and by the official V4.1 "
             "layout code (EngramLayout.from_args, which builds the layer twice with other primes), where §CFG.4 "
             "refuses them.";
      break;
    case ConfigGap::kZeroHeads:
      text = "A validation gap of upstream code, not a behaviour to copy: zero heads per n-gram order "
             "(n_head_per_ngram 0 in the upstream demo, engram_n_heads 0 in the official V4.1 layout code) give "
             "every order an empty list of primes, where §CFG.4 refuses them.";
      break;
    case ConfigGap::kMaxNgramOne:
      text = "A validation gap of the official V4.1 layout code (EngramLayout.from_args) and of the upstream demo "
             "(engram_demo_v1.py, whose prime search loops over the orders 2 .. max_ngram_size), not a behaviour "
             "to copy: a max n-gram size of 1 is accepted and gives layers without any n-gram order, where §CFG.4 "
             "refuses it.";
      break;
    case ConfigGap::kNumEmbeddingsUnchecked:
      text = "A validation gap of the official V4.1 layout code (EngramLayout.from_args), not a behaviour to copy: "
             "engram_num_embeddings is never compared with the prime sums, so a table of too few rows is read "
             "silently (rows past its end), where §LAY.4 refuses the configuration.";
      spec = "§LAY.4";
      break;
    case ConfigGap::kExtraBases:
      text = "A validation gap of the upstream demo (engram_demo_v1.py), not a behaviour to copy: an "
             "engram_vocab_size list with more entries than n-gram orders is accepted, and the entries past "
             "max_ngram_size - 1 are never read (its prime search reads vocab_size_per_ngram[ngram - 2] for ngram "
             "2 .. max only), where §CFG.4 refuses a list of another length: the extra entry is a sign of a "
             "configuration written for another max_ngram_size.";
      break;
    case ConfigGap::kNumEmbeddingsAtLeast:
      text = "A validation gap of NeMo Automodel's hasher (DeepseekV41EngramHasher, spec/sources.md "
             "[SRC-PORT-NEMO]), not a behaviour to copy: a layer is refused only when its bucket span (the sum of "
             "its primes) exceeds engram_num_embeddings, so a stated row count above the sum is accepted, where "
             "§LAY.4 refuses any disagreement: a table with more rows than the layout addresses was built for "
             "another layout (other bases, heads or orders), and its rows would be read at the wrong places.";
      spec = "§LAY.4";
      break;
  }
  b.Divergence(ConfigGapFlag(gap), text, spec, ConfigGapBug(gap));
}

ojson GenerateLayout() {
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
  AddMutantNotes(b, {Mutant::kInt32Multipliers});

  auto add = [&](size_t g, const ojson& config, const std::string& profile, int64_t v, int64_t pad,
                 std::vector<std::string> flags, const std::string& comment) {
    ojson fields = {{"config", config}, {"profile", profile}, {"compressedVocabSize", v}, {"compressedPad", pad}};
    try {
      EngramConfig cfg = ParseConfig(nlohmann::json::parse(config.dump()), "config", ParseProfile(profile));
      Layout layout = BuildLayout(cfg, v, pad);
      fields["result"] = "valid";
      fields["layers"] = LayersJson(layout);
      flags = WithMutantFlags(flags, {Mutant::kInt32Multipliers}, [&](Mutant m) {
        return LayersJson(MutantLayout(m, layout, cfg.seed)) != LayersJson(layout);
      });
      // §VEC.12 a port with vLLM's prime test (it skips 61) draws other primes for this configuration.
      std::vector<std::vector<std::vector<int64_t>>> primes;
      for (const LayerLayout& l : layout.layers) primes.push_back(l.primes);
      if (PrimesSkipping(cfg, 61) != primes) {
        if (!b.HasNote(kMillerRabin61Flag)) {
          b.Divergence(kMillerRabin61Flag,
                       "vLLM's layout code (vllm/models/deepseek_v41/common/engram.py, _is_prime: Miller-Rabin with "
                       "the witnesses 2, 7 and 61 after trial division by the primes up to 37) declares the witness "
                       "61 itself composite (pow(61, d, 61) = 0), so its prime search skips 61 and every later "
                       "modulus of the layout moves; §LAY.2 takes 61 where the search reaches it. Real "
                       "configurations (bases near 16 000 000) never reach 61; small bases (and the random "
                       "layouts' bases) do.",
                       "§LAY.2", "miller-rabin-61");
        }
        flags.push_back(kMillerRabin61Flag);
      }
    } catch (const Error& e) {
      fields["result"] = "invalid";
      fields["error"] = e.what();
      // §VEC.12 the upstream demo's validation gaps: a port that copies one accepts this input.
      for (ConfigGap gap : kConfigGaps) {
        if (!GapAccepts(gap, nlohmann::json::parse(config.dump()), profile, v, pad)) continue;
        if (!b.HasNote(ConfigGapFlag(gap))) AddConfigGapNote(b, gap);
        flags.push_back(ConfigGapFlag(gap));
      }
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
  // The official V4.1 layout code's gaps (§VEC.12): configurations of the
  // v4.1 shape without engram_num_embeddings (optional, §CFG.2), so that
  // each breaks one rule only.
  ojson v41_dup = SmallV41Config({3}, 10, 3, 2, 40);
  v41_dup.erase("engram_num_embeddings");
  v41_dup["engram_layer_ids"] = {3, 3};
  add(g, v41_dup, "v4.1", 40, 2, {"InvalidConfig"}, "v4.1: duplicate layer ids");
  ojson v41_heads = v41_dup;
  v41_heads["engram_layer_ids"] = {3};
  v41_heads["engram_n_heads"] = 0;
  add(g, v41_heads, "v4.1", 40, 2, {"InvalidConfig"}, "v4.1: zero heads");
  ojson v41_max1 = v41_dup;
  v41_max1["engram_layer_ids"] = {3};
  v41_max1["engram_max_ngram_size"] = 1;
  add(g, v41_max1, "v4.1", 40, 2, {"InvalidConfig"}, "v4.1: max n-gram 1 without engram_num_embeddings");
  // Gaps found measuring the public ports (docs/ports.md, §VEC.12), each
  // breaking one rule only (tests appended: earlier tcIds keep their inputs).
  ojson demo_extra = DemoConfigJson();
  demo_extra["engram_vocab_size"] = {646400, 646400, 646400};
  add(g, demo_extra, "demo-v1", 129280, 2, {"InvalidConfig"}, "three bases for two orders (max n-gram 3)");
  ojson v41_rows_above = SmallV41Config({3}, 10, 3, 2, 40);
  v41_rows_above["engram_num_embeddings"][0] = v41_rows_above["engram_num_embeddings"][0].get<int64_t>() + 1;
  add(g, v41_rows_above, "v4.1", 40, 2, {"NumEmbeddingsMismatch"}, "engram_num_embeddings one above the primes' sum");
  ojson demo_max1 = DemoConfigJson();
  demo_max1["max_ngram_size"] = 1;
  demo_max1["engram_vocab_size"] = ojson::array();  // one base per order: none
  add(g, demo_max1, "demo-v1", 129280, 2, {"InvalidConfig"}, "demo-v1: max n-gram 1 (no orders, no bases)");
  return b.Finish();
}

void CheckLayout(Checker& c, const json& t) {
  try {
    Layout layout = GroupLayout(t);
    if (!IsValid(t)) {
      c.Problem(t, "the reference accepts a configuration the vector marks invalid");
      return;
    }
    c.Expect(t, "layers", json::parse(LayersJson(layout).dump()));
  } catch (const Error& e) {
    if (IsValid(t)) c.Problem(t, std::string("the reference refuses a valid test: ") + e.what());
  }
}

}  // namespace

SuiteDef LayoutSuite() {
  return {"layout", "layout.schema.json", GenerateLayout,
          {{"LayoutTest", [](Checker& c, const json&, const json& t) { CheckLayout(c, t); }}}};
}

}  // namespace engram::vectors
