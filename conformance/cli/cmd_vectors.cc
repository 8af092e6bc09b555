// `engram vectors generate|verify` (spec §VEC).
#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>

#include "base/program_paths.h"
#include "conformance/cli/common.h"
#include "vectors/generator.h"

namespace engram::cli {
namespace {

// The JSON Schemas shipped with the vectors: those of an installed engram
// (<prefix>/share/engram/vectors/schema, beside <prefix>/bin/engram), else
// those of the source tree this binary was built from.
std::string DefaultSchemas() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / ENGRAM_INSTALL_VECTORSDIR / "schema";
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return std::string(ENGRAM_SOURCE_DIR) + "/vectors/schema";
}

}  // namespace

void AddVectorsCommand(CLI::App& app) {
  struct State {
    std::string out;
    std::string schemas = DefaultSchemas();
    std::string dir;
    std::vector<std::string> suites;
  };
  auto s = std::make_shared<State>();
  auto* vec = app.add_subcommand("vectors", "Generate or verify the golden vectors");
  vec->require_subcommand(1);
  auto* gen = vec->add_subcommand("generate", "Write every suite, the schemas and the manifest to DIR");
  gen->add_option("--out", s->out, "Output directory")->required();
  gen->add_option("--schemas", s->schemas, "Directory of the JSON Schemas to ship with the vectors");
  gen->callback([s] { vectors::GenerateAll(s->out, s->schemas, std::cerr); });
  auto* verify = vec->add_subcommand("verify", "Check the manifest and recompute every expected value");
  verify->add_option("dir", s->dir, "Vectors directory (holds MANIFEST.sha256)")->required();
  verify->add_option("--suite", s->suites,
                     "Recompute only this suite (repeatable); the manifest is still checked whole");
  verify->callback([s] {
    if (!vectors::VerifyAll(s->dir, std::cout, std::cerr, s->suites)) throw CLI::RuntimeError(1);
  });
}

}  // namespace engram::cli
