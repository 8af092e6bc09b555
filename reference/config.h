/// \file
/// spec/config.md — the configuration of both profiles.
///
/// Two shapes of configuration exist in the wild (§CFG.1):
///  * v4.1: DeepSeek-V4.1-Flash. Either the Hugging Face config.json (engram_*
///    keys under "text_config" or at top level, hidden_size, rms_norm_eps) or
///    the inference config.json whose keys are the ModelArgs fields at top level
///    (engram_pad_id, dim, hc_mult, norm_eps).
///  * demo-v1: deepseek-ai/Engram engram_demo_v1.py, EngramConfig +
///    BackBoneConfig field names.
/// Both are parsed into one EngramConfig; everything downstream (layout, hash)
/// reads only this struct.
#ifndef ENGRAM_REFERENCE_CONFIG_H_
#define ENGRAM_REFERENCE_CONFIG_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/input_files.h"

namespace engram {

/// The two profiles of the spec (spec/README.md, "Profiles").
enum class Profile {
  kV41,    ///< DeepSeek-V4.1-Flash inference (`engram_*` keys, §CFG.2)
  kDemoV1  ///< deepseek-ai/Engram engram_demo_v1.py (§CFG.3)
};

/// §CFG.1 "v4.1" / "demo-v1".
std::string_view ProfileName(Profile profile);
/// §CFG.1 Inverse of ProfileName; nullopt for anything else.
std::optional<Profile> ParseProfile(std::string_view name);

/// §CFG The profile-independent record every later section reads: what
/// ParseConfig() made of a configuration document, already validated (§CFG.4).
struct EngramConfig {
  /// §CFG.1 the detected (or overridden) profile.
  Profile profile = Profile::kV41;
  std::string source;  ///< where it came from, for error messages

  std::vector<int64_t> layer_ids;    ///< §CFG.4 distinct, >= 0
  int max_ngram = 0;                 ///< §CFG.4 >= 2: orders 2 .. max_ngram
  int heads = 0;                     ///< heads per n-gram order, >= 1
  std::vector<int64_t> bases;        ///< bucket base per order (size max_ngram - 1), each >= 2
  int64_t pad_id = 0;                ///< the *raw* tokenizer pad id (mapped through the token map later)
  int64_t seed = 0;                  ///< v4.1 has none (= 0)
  std::optional<int64_t> compressed_vocab_size;  ///< v4.1 engram_compressed_vocab_size
  std::vector<int64_t> num_embeddings;           ///< v4.1 engram_num_embeddings (per layer); empty for demo
  int64_t head_dim = 0;              ///< row width: v4.1 engram_head_dim, demo n_embed_per_ngram / heads
  int64_t n_embed_per_ngram = 0;     ///< demo only
  int64_t kernel_size = 0;           ///< demo only (ShortConv)
  int64_t hidden_size = 0;           ///< v4.1 dim / hidden_size, demo hidden_size
  int64_t hc_mult = 0;               ///< hyper-connection streams
  int64_t vocab_size = 0;            ///< backbone vocab size (informative; the tokenizer length rules)
  double norm_eps = 0.0;             ///< v4.1 rms_norm_eps / norm_eps
  /// §LAY.6 An explicit layout (non-standard, v4.1 key engram_hash_multipliers):
  /// [layer][slot] multipliers. Empty: derived as §RNG.4 says.
  std::vector<std::vector<int64_t>> explicit_multipliers;
  /// §LAY.6 An explicit layout (non-standard, v4.1 key engram_primes):
  /// [layer][order n-2][head] primes. Empty: derived as §LAY.2 says.
  std::vector<std::vector<std::vector<int64_t>>> explicit_primes;

  /// §LAY.3 Number of n-gram orders, max_ngram - 1 (orders 2 .. max_ngram).
  int orders() const { return max_ngram - 1; }
  /// Columns per layer, (max_ngram - 1) * heads (§LAY.3).
  int columns() const { return orders() * heads; }
  /// §LAY.6 Whether the configuration states multipliers or primes itself.
  bool explicit_layout() const { return !explicit_multipliers.empty() || !explicit_primes.empty(); }
};

/// §CFG.1 Detects the profile from the keys, unless `override_profile` is set.
/// Throws engram::Error naming `source`, the key and the value on any problem.
EngramConfig ParseConfig(const nlohmann::json& doc, std::string_view source,
                         std::optional<Profile> override_profile = std::nullopt);
/// §CFG.1-§CFG.5 Reads and parses a JSON file (errors name the path).
EngramConfig LoadConfig(const std::filesystem::path& path,
                        std::optional<Profile> override_profile = std::nullopt);

/// §CFG.2/§CFG.3 The shipped configurations, used when no file is given.
EngramConfig V41FlashConfig();  ///< DeepSeek-V4.1-Flash inference config.json values
/// §CFG.2 The DeepSeek-V4.1-Flash inference config.json as a document (keys in
/// a fixed order, vocab_size last): the one home of V41FlashConfig()'s figures.
nlohmann::ordered_json V41FlashConfigJson();
EngramConfig DemoV1Config();    ///< engram_demo_v1.py defaults
/// §CFG.3 engram_demo_v1.py's defaults as a document (keys in a fixed order):
/// the one home of DemoV1Config()'s figures and of ParseConfig()'s demo defaults.
nlohmann::ordered_json DemoV1ConfigJson();

/// §CFG.4 Reads a JSON document from a file of `kind` (its §ERR.4 size limit);
/// errors name the path and the parse position; a repeated key is refused (§ERR.5).
nlohmann::json ReadJsonFile(const std::filesystem::path& path, InputKind kind);

}  // namespace engram

#endif  // ENGRAM_REFERENCE_CONFIG_H_
