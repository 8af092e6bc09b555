// Shared pieces of the `engram` subcommands: input options, loading a
// configuration + token map into a layout, integer lists, JSON output.
#ifndef ENGRAM_CONFORMANCE_CLI_COMMON_H_
#define ENGRAM_CONFORMANCE_CLI_COMMON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "reference/config.h"
#include "reference/layout.h"
#include "reference/token_map.h"

namespace engram::cli {

using ojson = nlohmann::ordered_json;

// Options shared by the subcommands that need a configuration and a token map.
struct Inputs {
  std::string config_path;
  std::string profile;
  std::string token_map_path;
  int64_t compressed_vocab_size = 0;
};

// Adds --config, --profile, --token-map, --compressed-vocab-size to `cmd`.
void AddInputOptions(CLI::App* cmd, Inputs& in, bool config_required);

struct Loaded {
  EngramConfig config;
  std::optional<TokenMap> token_map;  // absent: ids are compressed ids
  Layout layout;
};

// Reads the configuration (the shipped V4.1 one when no path is given),
// resolves V and the compressed pad (§LAY.4, §TOK.5), builds the layout.
Loaded Load(const Inputs& in);

// Parses "1,2,-3"; errors name `option` and the bad item.
std::vector<int64_t> ParseIntList(const std::string& text, const std::string& option);

// Prints `doc` (1-space indentation) to stdout, or writes it atomically to `out_path`.
void Emit(const ojson& doc, const std::string& out_path);

// The subcommands; each registers itself on `app` with its own callback.
void AddLayoutCommand(CLI::App& app);
void AddHashCommand(CLI::App& app);
void AddBenchCommand(CLI::App& app);
void AddVectorsCommand(CLI::App& app);
void AddContractCommand(CLI::App& app);

}  // namespace engram::cli

#endif  // ENGRAM_CONFORMANCE_CLI_COMMON_H_
