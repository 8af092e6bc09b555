// The `engram` command line: JSON on stdout, errors on stderr, non-zero exit
// on failure. Every subcommand (cmd_*.cc) is a thin shell over the reference.
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "conformance/cli/common.h"
#include "base/error.h"

int main(int argc, char** argv) {
  CLI::App app{"engram: reference implementation and conformance tools for DeepSeek Engram"};
  app.set_version_flag("--version", std::string(ENGRAM_VERSION));
  app.require_subcommand(1);
  engram::cli::AddLayoutCommand(app);
  engram::cli::AddHashCommand(app);
  engram::cli::AddBenchCommand(app);
  engram::cli::AddVectorsCommand(app);
  engram::cli::AddLookupCommand(app);
  engram::cli::AddTokenMapCommand(app);
  engram::cli::AddContractCommand(app);
  engram::cli::AddConformCommand(app);
  engram::cli::AddReportCommand(app);
  engram::cli::AddPluginHostCommand(app);
  engram::cli::AddGateCommand(app);
  engram::cli::AddForwardCommand(app);
  engram::cli::AddExplainCommand(app);
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
  const std::vector<std::string> words = engram::cli::ExpandEmptyValues(argc, argv);
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
