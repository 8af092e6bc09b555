#include "conformance/cli/common.h"

#include <iostream>
#include <sstream>

#include "conformance/cli/fileio.h"
#include "reference/error.h"

namespace engram::cli {

void AddInputOptions(CLI::App* cmd, Inputs& in, bool config_required) {
  auto* c = cmd->add_option("--config", in.config_path,
                            "config.json (v4.1 HF or inference shape) or a demo-v1 EngramConfig JSON");
  if (config_required) c->required();
  cmd->add_option("--profile", in.profile, "Override the detected profile")->check(CLI::IsMember({"v4.1", "demo-v1"}));
  auto* tm = cmd->add_option("--token-map", in.token_map_path,
                             "Token-map JSON (array, or object with \"map\"); ids given are raw tokenizer ids");
  auto* v = cmd->add_option("--compressed-vocab-size", in.compressed_vocab_size,
                            "No token map: ids given are already compressed, V = this value");
  v->check(CLI::PositiveNumber);  // §LAY.4 V >= 1
  tm->excludes(v);
  auto* tk = cmd->add_option("--tokenizer", in.tokenizer_path,
                             "Hugging Face tokenizer.json: build the token map from it (§TOK); ids given are raw ids");
  tk->excludes(tm);
  tk->excludes(v);
}

Loaded Load(const Inputs& in) {
  std::optional<Profile> override_profile;
  if (!in.profile.empty()) override_profile = ParseProfile(in.profile);
  Loaded out;
  out.config = in.config_path.empty() ? V41FlashConfig() : LoadConfig(in.config_path, override_profile);
  int64_t v = 0;
  int64_t pad = out.config.pad_id;
  if (!in.token_map_path.empty() || !in.tokenizer_path.empty()) {
    out.token_map = in.tokenizer_path.empty() ? LoadTokenMapFile(in.token_map_path)
                                              : BuildTokenMapFromFile(in.tokenizer_path);
    v = out.token_map->compressed_size;
    pad = out.token_map->Lookup(out.config.pad_id, out.config.source + ": pad id");
  } else if (in.compressed_vocab_size != 0) {
    v = in.compressed_vocab_size;
  } else if (out.config.compressed_vocab_size) {
    v = *out.config.compressed_vocab_size;
  } else {
    throw Error("no compressed vocab size: pass --token-map PATH or --compressed-vocab-size N");
  }
  if (!out.token_map && (pad < 0 || pad >= v)) {
    throw Error(out.config.source + ": pad id " + std::to_string(pad) + " is not a compressed id below " +
                std::to_string(v) + " (without a token map the pad id is used as a compressed id)");
  }
  out.layout = BuildLayout(out.config, v, pad);
  return out;
}

std::vector<int64_t> ParseIntList(const std::string& text, const std::string& option) {
  std::vector<int64_t> out;
  if (text.empty()) return out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw Error(option + ": '" + item + "' is not a 64-bit integer");
    }
  }
  return out;
}

void Emit(const ojson& doc, const std::string& out_path) {
  std::string text = doc.dump(1) + "\n";
  if (out_path.empty()) {
    std::cout << text;
  } else {
    WriteFileAtomic(out_path, text);
  }
}

}  // namespace engram::cli
