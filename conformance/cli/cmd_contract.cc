// `engram contract` and `engram contract verify` (spec §CON).
#include <algorithm>
#include <iostream>
#include <memory>

#include "base/error.h"
#include "base/fileio.h"
#include "base/sha256.h"
#include "conformance/cli/common.h"
#include "reference/input_files.h"
#include "reference/contract.h"

namespace engram::cli {
namespace {

// The token map and, when it came from a tokenizer file, that file's digest.
struct MapSource {
  TokenMap map;
  std::optional<std::string> tokenizer_sha256;
};

MapSource LoadMapSource(const Inputs& in, const Loaded& loaded) {
  if (!loaded.token_map) {
    throw Error("a contract pins the whole token map: pass --tokenizer PATH or --token-map PATH "
                "(--compressed-vocab-size is not enough)");
  }
  MapSource out{*loaded.token_map, std::nullopt};
  // §CON.1 the tokenizer file's own digest, when the map was built from one.
  if (!in.tokenizer_path.empty()) out.tokenizer_sha256 = Sha256Hex(ReadInputFile(in.tokenizer_path, InputKind::kTokenizer));
  return out;
}

}  // namespace

void AddContractCommand(CLI::App& app) {
  struct State {
    Inputs in;
    std::string out;
    Inputs verify_in;
    std::string contract_path;
  };
  auto s = std::make_shared<State>();
  auto* cmd = app.add_subcommand("contract", "Write the hash contract of a config + tokenizer (or verify one)");
  AddInputOptions(cmd, s->in, false);
  cmd->add_option("--out", s->out, "Write the contract here instead of stdout");
  cmd->require_subcommand(0, 1);
  auto* verify = cmd->add_subcommand("verify", "Recompute a contract and name every field that differs");
  verify->add_option("contract", s->contract_path, "The contract JSON to check")->required();
  AddInputOptions(verify, s->verify_in, false);

  cmd->callback([s, verify] {
    if (verify->parsed()) return;
    if (s->in.config_path.empty()) throw Error("contract: --config PATH is required");
    const Loaded loaded = Load(s->in);
    const MapSource src = LoadMapSource(s->in, loaded);
    Emit(BuildContract(loaded.config, src.map, src.tokenizer_sha256), s->out);
  });
  verify->callback([s] {
    const std::string path = s->contract_path;
    const ojson expected = ParseOrderedJson(ReadInputFile(path, InputKind::kContract), path);
    CheckContractForm(expected, path);
    // §CON.4 This is the load-time check a port that stores a contract makes:
    // its parameters reproduce the layers, the map has the stored digest, and
    // the stored contractDigest matches the content.
    // §CON.3 Without a config the contract's own parameters are re-derived
    // from the token map: that checks the map and the layout it implies.
    Inputs in = s->verify_in;
    Loaded loaded;
    if (in.config_path.empty()) {
      const EngramConfig config = ConfigFromContract(expected, path);
      if (in.token_map_path.empty() && in.tokenizer_path.empty()) {
        throw Error("contract verify: pass --tokenizer PATH or --token-map PATH");
      }
      loaded.config = config;
      loaded.token_map = in.tokenizer_path.empty() ? LoadMapFile(in.token_map_path, &loaded.config) : BuildTokenMapFromFile(in.tokenizer_path);
    } else {
      loaded = Load(in);
    }
    const MapSource src = LoadMapSource(in, loaded);
    ojson actual = BuildContract(loaded.config, src.map, src.tokenizer_sha256);
    if (!src.tokenizer_sha256) actual["tokenizer"] = expected["tokenizer"];  // not checkable from a map alone
    actual["contractDigest"] = ContractDigest(actual);
    std::vector<std::string> diffs = CompareContracts(expected, actual);
    // The digest differs whenever anything else does; report it only alone.
    if (diffs.size() > 1) {
      diffs.erase(std::remove_if(diffs.begin(), diffs.end(),
                                 [](const std::string& d) { return d.rfind("contractDigest:", 0) == 0; }),
                  diffs.end());
    }
    ojson report;
    report["contract"] = path;
    report["ok"] = diffs.empty();
    report["differences"] = diffs;
    std::cout << report.dump(1) << "\n";
    if (!diffs.empty()) {
      for (const std::string& d : diffs) std::cerr << "engram: contract differs: " << d << "\n";
      throw CLI::RuntimeError(1);
    }
  });
}

}  // namespace engram::cli
