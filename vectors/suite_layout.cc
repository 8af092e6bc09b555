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

void AddConfigGapNote(SuiteBuilder& b, ConfigGap gap) {
  if (gap == ConfigGap::kDuplicateLayerIds) {
    b.Divergence(ConfigGapFlag(gap),
                 "A validation gap of the upstream demo (engram_demo_v1.py), not a behaviour to copy: it accepts "
                 "duplicate layer_ids and silently overwrites the layer, where §CFG.4 refuses them.",
                 "§CFG.4", ConfigGapBug(gap));
  } else {
    b.Divergence(ConfigGapFlag(gap),
                 "A validation gap of the upstream demo (engram_demo_v1.py), not a behaviour to copy: it accepts "
                 "n_head_per_ngram 0 and gives every order an empty list of primes, where §CFG.4 refuses it.",
                 "§CFG.4", ConfigGapBug(gap));
  }
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
