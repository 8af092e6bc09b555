// Snippet for docs/config.md (spec §CFG): the two shipped configurations,
// read into the one record every later step uses.
#include <cstdio>
#include <string>

#include "base/program_paths.h"
#include "reference/config.h"
#include "base/error.h"

using namespace engram;

static void Print(const EngramConfig& c) {
  std::printf("profile %s (from %s)\n", std::string(ProfileName(c.profile)).c_str(), c.source.c_str());
  std::printf("  layer_ids      ");
  for (int64_t id : c.layer_ids) std::printf(" %lld", static_cast<long long>(id));
  std::printf("\n  max_ngram       %d   (orders 2..%d)\n", c.max_ngram, c.max_ngram);
  std::printf("  heads           %d   (columns per layer: %d)\n", c.heads, c.columns());
  std::printf("  bases          ");
  for (int64_t b : c.bases) std::printf(" %lld", static_cast<long long>(b));
  std::printf("\n  pad_id (raw)    %lld\n  seed            %lld\n  head_dim        %lld\n",
              static_cast<long long>(c.pad_id), static_cast<long long>(c.seed), static_cast<long long>(c.head_dim));
  std::printf("  compressed V    %s\n",
              c.compressed_vocab_size ? std::to_string(*c.compressed_vocab_size).c_str() : "(from the token map)");
  std::printf("  num_embeddings ");
  if (c.num_embeddings.empty()) std::printf(" (none: demo-v1 has no check)");
  for (int64_t r : c.num_embeddings) std::printf(" %lld", static_cast<long long>(r));
  std::printf("\n  hidden_size     %lld, hc_mult %lld\n", static_cast<long long>(c.hidden_size),
              static_cast<long long>(c.hc_mult));
}

int main() {
  const std::string root = ENGRAM_SOURCE_DIR;
  //! [load]
  // §CFG.1: the profile is detected from the keys (engram_* vs demo field names).
  EngramConfig v41 = LoadConfig(root + "/conformance/configs/v41-flash.json");
  EngramConfig demo = LoadConfig(root + "/conformance/configs/demo-v1.json");
  //! [load]
  // Print the source relative to the repository, so the output does not depend on the checkout path.
  v41.source = "conformance/configs/v41-flash.json";
  demo.source = "conformance/configs/demo-v1.json";
  Print(v41);
  Print(demo);

  //! [refuse]
  // §CFG.1 / §CFG.4 / §GEN.4: ambiguous or invalid documents are refused, with file, key and value.
  const char* bad[] = {
      R"({"engram_layer_ids": [1, 14], "layer_ids": [1, 15]})",        // both profiles' markers
      R"({"max_ngram_size": 3, "layer_ids": [1, 1]})",                 // duplicated layer
      R"({"max_ngram_size": 4.0})",                                     // a float where an integer goes
  };
  for (const char* text : bad) {
    try {
      ParseConfig(nlohmann::json::parse(text), "example.json");
      std::printf("accepted?! %s\n", text);
    } catch (const Error& e) {
      std::printf("refused: %s\n", e.what());
    }
  }
  //! [refuse]
  return 0;
}
