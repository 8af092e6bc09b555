// `engram vectors generate|verify|random` (spec §VEC, §CONF.7).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>

#include "base/error.h"
#include "base/program_paths.h"
#include "conformance/cli/common.h"
#include "vectors/generator.h"
#include "vectors/random_cases.h"
#include "vectors/random_stream.h"

namespace engram::cli {
namespace {

// The JSON Schemas shipped with the vectors: those of an embedding program
// (the Python module's), of an installed engram
// (<prefix>/share/engram/vectors/schema, beside <prefix>/bin/engram), else
// those of the source tree this binary was built from.
std::string DefaultSchemas() {
  namespace fs = std::filesystem;
  if (const Host* host = EmbeddingHost()) return host->schemas;
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
    std::vector<std::string> suites;      // verify --suite
    std::vector<std::string> gen_suites;  // generate --suite
  };
  auto s = std::make_shared<State>();
  auto* vec = app.add_subcommand("vectors", "Generate or verify the golden vectors");
  vec->require_subcommand(1);
  auto* gen = vec->add_subcommand("generate", "Write every suite, the schemas and the manifest to DIR");
  gen->add_option("--out", s->out, "Output directory")->required();
  gen->add_option("--schemas", s->schemas, "Directory of the JSON Schemas to ship with the vectors");
  gen->add_option("--suite", s->gen_suites,
                  "Only this suite (repeatable; default: every suite); the manifest lists what was written");
  gen->callback([s] {
    if (s->gen_suites.empty()) {
      vectors::GenerateAll(s->out, s->schemas, std::cerr);
    } else {
      vectors::GenerateSuites(s->out, s->gen_suites, s->schemas, std::cerr);
    }
  });
  auto* verify = vec->add_subcommand("verify", "Check the manifest and recompute every expected value");
  verify->add_option("dir", s->dir, "Vectors directory (holds MANIFEST.sha256)")->required();
  verify->add_option("--suite", s->suites,
                     "Recompute only this suite (repeatable); the manifest is still checked whole");
  verify->callback([s] {
    if (!vectors::VerifyAll(s->dir, std::cout, std::cerr, s->suites)) throw CLI::RuntimeError(1);
  });

  // §CONF.7 The random cases a run of `engram conform --random N --seed S`
  // asks, written as a vectors directory (one group per case, tcId = case
  // index + 1, as the runner numbers them) instead of being asked: so that
  // what is checked on the fixed vectors (scripts/porting_doc.py --vectors,
  // `vectors verify`, a replay with `conform --vectors`) can be checked on
  // generated cases too. The cases are DrawCase's, through the stream the
  // runner uses: no second generator.
  struct RandomState {
    std::string out;
    std::string schemas = DefaultSchemas();
    std::vector<std::string> suites;
    int64_t count = 1000;
    int64_t seed = 1;
    int64_t threads = 1;
  };
  auto r = std::make_shared<RandomState>();
  auto* rnd = vec->add_subcommand("random",
                                  "Write the random cases `conform --random N --seed S` would ask as a vectors directory (§CONF.7)");
  rnd->add_option("--out", r->out, "Output directory (new or empty)")->required();
  rnd->add_option("--suite", r->suites, "Only this suite (repeatable; default: every suite with a generator)");
  rnd->add_option("--count", r->count, "Cases per suite, 1 ... 10^6 (default 1000)")
      ->check(IntIn(1, 1000000, "a number of cases"));
  rnd->add_option("--seed", r->seed, "The seed, as conform --seed (default 1)")->check(IntIn(0, INT64_MAX, "a seed"));
  rnd->add_option("--threads", r->threads, "Threads that draw the cases (default 1; the cases do not depend on it)")
      ->check(IntIn(1, 64, "a number of threads"));
  rnd->add_option("--schemas", r->schemas, "Directory of the JSON Schemas to copy beside the cases");
  rnd->callback([r] {
    namespace fs = std::filesystem;
    std::vector<std::string> names;
    for (const vectors::RandomSuite& g : vectors::RandomSuites()) {
      if (r->suites.empty() || std::find(r->suites.begin(), r->suites.end(), g.suite) != r->suites.end()) {
        names.push_back(g.suite);
      }
    }
    for (const std::string& s : r->suites) {
      if (vectors::FindRandomSuite(s) == nullptr) {
        std::string have;
        for (const vectors::RandomSuite& g : vectors::RandomSuites()) have += (have.empty() ? "" : ", ") + g.suite;
        throw Error("--suite " + s + ": no random generator (those with one: " + have + ")");
      }
    }
    std::error_code ec;
    const fs::path out(r->out);
    if (fs::exists(out, ec) && (!fs::is_directory(out, ec) || !fs::is_empty(out, ec))) {
      throw Error("--out " + r->out + ": exists and is not an empty directory (the cases are written into a new or empty one)");
    }
    const std::string origin = " of seed " + std::to_string(r->seed) + " (" + vectors::kRandomVersion + ", spec " +
                               vectors::kSpecVersion + ")";
    auto doc = [&](const std::string& suite) {
      const vectors::RandomSuite& gen = *vectors::FindRandomSuite(suite);
      std::vector<vectors::RandomCase> cases;
      std::vector<std::string> comments;
      vectors::CaseStream stream(gen, static_cast<uint64_t>(r->seed), r->count, static_cast<int>(r->threads));
      vectors::RandomCase c;
      while (stream.Next(c)) {
        comments.push_back("random case " + std::to_string(cases.size() + 1) + origin);
        cases.push_back(c);
      }
      return vectors::RandomCasesDoc(
          gen, cases, comments,
          {"Random cases 1 ... " + std::to_string(r->count) + origin + " (spec/conformance.md §CONF.7), as engram conform "
           "--random " + std::to_string(r->count) + " --seed " + std::to_string(r->seed) + " asks them; tcId = case number.",
           "Generated by: engram vectors random --count " + std::to_string(r->count) + " --seed " + std::to_string(r->seed)});
    };
    vectors::WriteVectorsDir(out, names, doc, r->schemas, std::cerr);
  });
}

}  // namespace engram::cli
