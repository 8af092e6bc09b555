// `engram token-map` (spec §TOK): builds the compressed token map from a
// Hugging Face tokenizer.json and prints it with its size and digest.
#include <chrono>
#include <iostream>
#include <memory>

#include "conformance/cli/common.h"
#include "reference/error.h"
#include "reference/token_map.h"

namespace engram::cli {

TokenMap BuildTokenMapFromFile(const std::string& path) {
  // Progress on stderr, only when the build takes more than a second.
  const auto start = std::chrono::steady_clock::now();
  bool reported = false;
  auto progress = [&](int64_t done, int64_t total) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed < 1.0 && !(reported && done == total)) return;
    std::cerr << "token-map: " << done << " / " << total << " ids (" << static_cast<int>(elapsed) << " s)\n";
    reported = true;
  };
  const Tokenizer tokenizer = LoadTokenizerJson(path);
  return BuildTokenMap(tokenizer, nullptr, progress);
}

void AddTokenMapCommand(CLI::App& app) {
  struct State {
    std::string tokenizer, config, profile, out;
  };
  auto s = std::make_shared<State>();
  auto* cmd = app.add_subcommand("token-map", "Build the compressed token map from a Hugging Face tokenizer.json");
  cmd->add_option("--tokenizer", s->tokenizer, "tokenizer.json (byte-level BPE, ByteLevel decoder)")->required();
  cmd->add_option("--config", s->config,
                  "config.json: v4.1 refuses a map whose size is not engram_compressed_vocab_size; adds the pad");
  cmd->add_option("--profile", s->profile, "Override the detected profile")->check(CLI::IsMember({"v4.1", "demo-v1"}));
  cmd->add_option("--out", s->out, "Write the JSON here instead of stdout");
  cmd->callback([s] {
    const TokenMap tm = BuildTokenMapFromFile(s->tokenizer);
    ojson doc;
    doc["tokens"] = tm.tokens();
    doc["compressed_size"] = tm.compressed_size;
    doc["sha256"] = TokenMapDigest(tm);
    if (!s->config.empty()) {
      std::optional<Profile> override_profile;
      if (!s->profile.empty()) override_profile = ParseProfile(s->profile);
      const EngramConfig config = LoadConfig(s->config, override_profile);
      const int64_t pad = CheckTokenMapForConfig(tm, config);  // §TOK.4
      doc["profile"] = std::string(ProfileName(config.profile));
      doc["pad"] = {{"raw", config.pad_id}, {"compressed", pad}};
    }
    doc["map"] = tm.map;
    Emit(doc, s->out);
  });
}

}  // namespace engram::cli
