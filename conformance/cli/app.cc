// The `engram` command line as one function, Main(): the executable's main()
// (engram_main.cc) and the Python module's `python -m engram_conformance` (python/src/core.cc)
// both run it, so that a Python user runs the same commands without a C++ build.
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/error.h"
#include "conformance/cli/common.h"

namespace engram::cli {
namespace {

std::optional<Host>& Embedding() {
  static std::optional<Host> host;
  return host;
}

}  // namespace

void SetHost(Host host) { Embedding() = std::move(host); }

const Host* EmbeddingHost() { return Embedding() ? &*Embedding() : nullptr; }

int Main(int argc, const char* const* argv) {
  CLI::App app{"engram: reference implementation and conformance tools for DeepSeek Engram"};
  app.set_version_flag("--version", std::string(ENGRAM_VERSION));
  app.require_subcommand(1);
  AddLayoutCommand(app);
  AddHashCommand(app);
  AddBenchCommand(app);
  AddVectorsCommand(app);
  AddLookupCommand(app);
  AddTokenMapCommand(app);
  AddContractCommand(app);
  AddConformCommand(app);
  AddReportCommand(app);
  AddPluginHostCommand(app);
  AddGateCommand(app);
  AddForwardCommand(app);
  AddExplainCommand(app);
  // §ERR.1 CLI11 reports an unknown first word as "A subcommand is required"; name
  // the word and the choices instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << "engram: unknown subcommand '" << argv[1] << "' (one of: " << names << ")\n";
      return static_cast<int>(CLI::ExitCodes::ExtrasError);
    }
  }
  // `--ids=` is the empty list (CLI11 alone would take the next word as the value).
  const std::vector<std::string> words = ExpandEmptyValues(argc, argv);
  std::vector<const char*> word_ptrs;
  for (const std::string& w : words) word_ptrs.push_back(w.c_str());
  try {
    app.parse(static_cast<int>(word_ptrs.size()), word_ptrs.data());
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // the subcommand already reported what failed
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "engram: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace engram::cli
