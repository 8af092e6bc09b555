// spec/vectors.md — the golden-vector generator and verifier.
//
// The generator is the only thing that writes vectors/v1/*.json (§VEC.5):
// every expected value comes from the reference library, every file is
// serialized the same way (1-space indentation, insertion-ordered keys,
// trailing newline), so regenerating reproduces the committed bytes.
#ifndef ENGRAM_VECTORS_GENERATOR_H_
#define ENGRAM_VECTORS_GENERATOR_H_

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/version.h"

namespace engram::vectors {

using ojson = nlohmann::ordered_json;

// §VEC.2 The spec version every vector file carries: the one constant of
// base/version.h (the contracts carry it too).
using ::engram::kSpecVersion;
// §VEC.1 The vector directory version (vectors/v1).
inline constexpr const char* kVectorsDir = "v1";

// The suites in generation order.
std::vector<std::string> SuiteNames();

// Builds one suite's document in memory (throws engram::Error for an unknown name).
ojson GenerateSuite(const std::string& name);

// §VEC.5 The canonical serialization: dump(1) plus a trailing newline.
std::string Serialize(const ojson& doc);

// §VEC.5 Writes OUT/v1/<suite>.json for every suite, copies the schemas from
// `schema_dir` into OUT/schema (unless they are the same directory), and
// writes OUT/MANIFEST.sha256 over all of them. Each file is written
// atomically; when the run fails, the files and directories it created are
// removed again (what existed before is left). Progress goes to `log`.
void GenerateAll(const std::filesystem::path& out, const std::filesystem::path& schema_dir, std::ostream& log);

// The same for the named suites only (each once, in generation order; an
// unknown name throws engram::Error before anything is written): the manifest
// then lists those suites and the schemas, a directory `vectors verify` and
// `engram conform --suite` accept for them.
void GenerateSuites(const std::filesystem::path& out, const std::vector<std::string>& suites,
                    const std::filesystem::path& schema_dir, std::ostream& log);

// §VEC.5 The same for any documents: OUT/v1/<name>.json per name, the
// schema copies and the manifest, atomically (nothing is left behind when it
// fails). Used for the shrunk failures of a random run (§CONF.7).
// `make(name)` builds the document of v1/<name>.json, one name at a time.
void WriteVectorsDir(const std::filesystem::path& out, const std::vector<std::string>& names,
                     const std::function<ojson(const std::string&)>& make, const std::filesystem::path& schema_dir,
                     std::ostream& log);

// §VEC.6 Checks DIR/MANIFEST.sha256, the structure of every suite file, and
// recomputes every test's expected values with the reference. Prints one line
// per suite and the summary to `log`, one "FAIL ..." line per problem to
// `problems_out`; returns true when all is well. A non-empty `only` (suite
// names, `--suite`) limits the parsing and recomputation to those suite files;
// the manifest is still checked whole. A name that is not a suite throws
// engram::Error; a named suite missing from DIR is a problem.
bool VerifyAll(const std::filesystem::path& dir, std::ostream& log, std::ostream& problems_out,
               const std::vector<std::string>& only = {});

// Verifies one parsed suite document; appends problems (each naming the
// file, tcId and field) to `problems`. Returns the number of tests checked.
size_t VerifySuite(const std::string& file_name, const nlohmann::json& doc, std::vector<std::string>& problems);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_GENERATOR_H_
