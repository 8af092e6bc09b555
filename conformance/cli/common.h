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
  std::string tokenizer_path;  // §TOK: build the token map from a tokenizer.json
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

// Parses a comma-separated list of decimal int64 such as "1,2,-3". Strict:
// each item is an optional '-' and the digits 0-9, nothing else (no '+', no
// spaces, no hex, no empty item: "5,7," and "5,,7" are refused). The empty
// text is the empty list (`--ids=` or `--ids ''`). Errors name `option`, the
// item's position (1-based, "item 2 of 3") and the item.
std::vector<int64_t> ParseIntList(const std::string& text, const std::string& option);

// §TOK.5 Loads a token-map file for hash/explain/lookup/contract: any function
// into [0, V); a map no tokenizer would build gets a note on stderr naming V.
// A map that declares no size takes V from `config` where it states one.
TokenMap LoadMapFile(const std::string& path, const EngramConfig* config = nullptr);

// The strict decimal form of one integer (as in ParseIntList); nullopt for
// any other text or a value outside int64 / uint64.
std::optional<int64_t> ParseDecimal(const std::string& text);
std::optional<uint64_t> ParseDecimalUnsigned(const std::string& text);

// CLI11 checks for numeric options. They run before CLI11 converts the text,
// so every refusal is a validation error (exit 105) whose message CLI11
// prefixes with the option's name: "--world: must be an integer in [1, 4096]
// (why), got 0". `why` says where the bounds come from (may be empty).
CLI::Validator IntIn(int64_t lo, int64_t hi, const std::string& why = "");
CLI::Validator UnsignedIn(uint64_t lo, uint64_t hi, const std::string& why = "");
// A finite decimal number of seconds in [lo, hi] (no NaN, no infinity).
CLI::Validator SecondsIn(double lo, double hi);

// §TOK.5 The largest compressed vocabulary: a token map's entries are in
// [0, 2^31), so V <= 2^31 (and V >= 1, §RNG.4).
inline constexpr int64_t kMaxCompressedVocabSize = int64_t{1} << 31;

// §STO.7 The largest tensor-parallel world the tools compute (each rank is computed in turn), and why.
inline constexpr int kMaxWorld = 4096;
inline constexpr const char* kWorldWhy = "a world of at least one rank; at most 4096 ranks, each computed here";

// Rewrites the command line so that `--name=` (an empty value after '=')
// reaches CLI11 as `--name ''`: CLI11 2.1 would otherwise take the next word as
// the value. Only words before a lone "--" are rewritten.
std::vector<std::string> ExpandEmptyValues(int argc, const char* const* argv);

// Prints `doc` (1-space indentation) to stdout, or writes it atomically to `out_path`.
// After Load() of an explicit layout (§LAY.6) the document starts with
// "non_standard": what the configuration stated.
void Emit(const ojson& doc, const std::string& out_path);

// A double as JSON: a finite value as a number, a non-finite one (JSON has no NaN or inf) as its hex-float
// string, "nan", "inf" or "-inf" (reference/fusion.h FloatHex).
ojson JsonNumber(double x);

// The whole command line (argv[0] is the program's name): parses it, runs one
// subcommand, and returns the exit status. app.cc; engram_main.cc's main() and
// the Python module's `python -m engram_conformance` call it.
int Main(int argc, const char* const* argv);

// What a program that embeds the commands (the Python module) says about
// itself, where the executable would look at /proc/self/exe: how to start the
// commands again (`conform --lib` runs `<self> plugin-host --lib PATH`), where
// the vectors' JSON Schemas are, and the vectors `conform` uses by default.
struct Host {
  std::vector<std::string> self;
  std::string schemas;
  std::string vectors;
};
void SetHost(Host host);
// nullptr in the `engram` executable.
const Host* EmbeddingHost();

// The subcommands; each registers itself on `app` with its own callback.
void AddLayoutCommand(CLI::App& app);
void AddHashCommand(CLI::App& app);
void AddBenchCommand(CLI::App& app);
void AddVectorsCommand(CLI::App& app);
void AddLookupCommand(CLI::App& app);  // cmd_lookup.cc (§STO)
void AddTokenMapCommand(CLI::App& app);

// §TOK.1-§TOK.4 Loads a tokenizer.json and builds its token map (progress on
// stderr when that takes more than a second). Defined in cmd_token_map.cc.
TokenMap BuildTokenMapFromFile(const std::string& path);
void AddContractCommand(CLI::App& app);
void AddConformCommand(CLI::App& app);     // cmd_conform.cc (§CONF)
void AddReportCommand(CLI::App& app);      // cmd_report.cc (§CONF.9: report merge)
std::vector<std::string> LevelNames();     // cmd_conform.cc: the names of the levels (§CONF.8), for --require-level
void AddPluginHostCommand(CLI::App& app);  // cmd_plugin_host.cc (§CONF.3)
void AddGateCommand(CLI::App& app);  // cmd_gate.cc (§FUS)
void AddForwardCommand(CLI::App& app);  // cmd_forward.cc (§FUS.11)
void AddExplainCommand(CLI::App& app);  // cmd_explain.cc (docs/walkthrough.md)

}  // namespace engram::cli

#endif  // ENGRAM_CONFORMANCE_CLI_COMMON_H_
