// `engram plugin-host --lib PATH`: serves the JSON-lines protocol (§CONF.2)
// for a shared library that implements the C ABI (§CONF.3). The runner starts
// it as a child process, so a crash in the library is a reported failure. The
// host itself is conformance/host/plugin_host.h; this file is its command line.
#include <memory>
#include <string>

#include "conformance/cli/common.h"
#include "conformance/host/plugin_host.h"

namespace engram::cli {

void AddPluginHostCommand(CLI::App& app) {
  auto lib = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("plugin-host", "Serve the JSON-lines conformance protocol for a C-ABI library (§CONF.3)");
  cmd->add_option("--lib", *lib, "Shared library implementing engram/conformance.h")->required();
  cmd->callback([lib] { host::Serve(*lib); });
}

}  // namespace engram::cli
