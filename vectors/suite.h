// spec/vectors.md — what every suite's generator and verifier share.
//
// A suite lives in vectors/suite_<name>.cc and provides a SuiteDef: how to
// generate its document, and one verifier per test-group type. The registry
// in generator.cc lists the suites; `engram vectors generate|verify` and the
// conformance tools only go through it.
#ifndef ENGRAM_VECTORS_SUITE_H_
#define ENGRAM_VECTORS_SUITE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/splitmix64.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/generator.h"
#include "vectors/mutants.h"

namespace engram::vectors {

using json = nlohmann::json;

// Deterministic inputs: a counter-based generator (SplitMix64) so that the
// choice of random-looking test inputs never depends on the platform.
class InputRng {
 public:
  explicit InputRng(uint64_t seed) : state_{seed} {}
  uint64_t Next() { return state_.Next(); }
  // Uniform-enough in [0, n) for test-input purposes (n >= 1).
  int64_t Below(int64_t n) { return static_cast<int64_t>(Next() % static_cast<uint64_t>(n)); }

 private:
  SplitMix64 state_;
};

// §VEC.2-§VEC.3 A suite under construction: keeps tcIds consecutive over the
// whole file and refuses flags that have no note.
class SuiteBuilder {
 public:
  SuiteBuilder(std::string suite, std::string schema, std::string algorithm);
  void Header(const std::string& line);
  // A note of bug type BASIC, EDGE_CASE or INVALID_INPUT. KNOWN_DIVERGENCE
  // notes go through Divergence (refused here).
  void Note(const std::string& flag, const std::string& bug_type, const std::string& description,
            const std::string& spec_ref);
  // §VEC.12 A KNOWN_DIVERGENCE note. Its claim, appended to `description`, is
  // that a port with the bug fails exactly the tests with this flag, and it
  // names the planted bug that shows it (conformance/python/engram_numpy_port
  // --bug `planted_bug`; conform_tests' PlantedBug runs it over every suite).
  // The flag must be computed: set on a test iff a mutant with the bug fails it.
  void Divergence(const std::string& flag, const std::string& description, const std::string& spec_ref,
                  const std::string& planted_bug);
  bool HasNote(const std::string& flag) const { return doc_["notes"].contains(flag); }
  // Starts a group; returns its index for Test().
  size_t Group(ojson group);
  // Adds a test: tcId, comment, flags, specRef first, then the test's own fields.
  void Test(size_t group, const std::string& comment, const std::vector<std::string>& flags,
            const std::vector<std::string>& spec_refs, const ojson& fields);
  ojson Finish();

 private:
  std::string suite_;
  ojson doc_;
  int count_ = 0;
};

// §VEC.10 Collects problems, each naming the file, the tcId and the field.
struct Checker {
  std::string file;
  std::vector<std::string>& problems;

  void Problem(const json& test, const std::string& what);
  // Compares one expected field with the recomputed value; a difference names
  // the JSON path of the first differing element and both values there.
  void Expect(const json& test, const std::string& field, const json& actual);
  // Compares a value the vector holds (at `path`, e.g. "step 2 (append): rows"
  // or "intermediate.pool") with the recomputed one, like Expect.
  void Same(const json& test, const std::string& path, const json& in_vector, const json& actual);
};

// The first place where `in_vector` and `actual` differ, as
// "<path>[3][1][17]: the vector has X, the reference gives Y" (object keys as
// ".key"; a size, type or key difference named as such; long strings by the
// first differing character); "" when they are equal.
std::string FirstDifference(const json& in_vector, const json& actual, const std::string& path);

bool IsValid(const json& test);

// Checks one test of a group: (checker, group, test).
using TestVerifier = std::function<void(Checker&, const json&, const json&)>;

struct SuiteDef {
  std::string name;                               // file v1/<name>.json
  std::string schema;                             // its schema file name
  std::function<ojson()> generate;                // builds the document
  std::map<std::string, TestVerifier> verifiers;  // group "type" -> verifier
};

// The suites (each defined in its suite_<name>.cc).
SuiteDef MultipliersSuite();
SuiteDef LayoutSuite();
SuiteDef HashV41Suite();
SuiteDef HashDemoSuite();
SuiteDef TokenMapSuite();
SuiteDef HashStateSuite();
SuiteDef AccumulatedSuite();
SuiteDef Fp8DecodeSuite();    // suite_storage.cc (§STO)
SuiteDef TableLookupSuite();
SuiteDef TpShardSuite();
SuiteDef GateV41Suite();        // suite_gate_v41.cc (§FUS; shared parts: suite_fusion.cc)
SuiteDef GateDemoSuite();       // suite_gate_demo.cc
SuiteDef ShortConvDemoSuite();  // suite_short_conv_demo.cc
SuiteDef EngramForwardSuite();  // suite_engram_forward.cc
SuiteDef ServingSuite();        // suite_serving.cc (§HASH.10-§HASH.12; the encodings: serving.cc)

// The registry, in generation order.
const std::vector<SuiteDef>& AllSuites();

// §VEC.12 The policy of a fork's rollback (mutants.h RollbackDeadSteps).
inline constexpr const char* kRollbackDeadFlag = "RollbackReadsDead";
void AddRollbackDeadNote(SuiteBuilder& b);

// §CONF.4 Adds the KNOWN_DIVERGENCE notes of `mutants` to a suite.
void AddMutantNotes(SuiteBuilder& b, const std::vector<Mutant>& mutants);
// The flags of the mutants under which `changed(mutant)` is true, appended to `flags`.
std::vector<std::string> WithMutantFlags(std::vector<std::string> flags, const std::vector<Mutant>& mutants,
                                         const std::function<bool(Mutant)>& changed);

// Configurations used by several suites.
ojson V41ConfigJson();   // the DeepSeek-V4.1-Flash inference config.json keys
ojson DemoConfigJson();  // the engram_demo_v1.py defaults
// A v4.1 config whose engram_num_embeddings is filled in from its own layout.
ojson SmallV41Config(std::vector<int64_t> layer_ids, int64_t base, int max_ngram, int heads, int64_t v);
// The layout a test group's "config", "profile", "compressedVocabSize", "compressedPad" give.
Layout GroupLayout(const json& group);

// §VEC.6 [{"layerId", "multipliers", "primes", "offsets", "numEmbeddings"}].
ojson LayersJson(const Layout& layout);
// §HASH.8 one {"window", "blocked", "tokens", "mixes", "residues"} per position.
ojson TraceJson(const std::vector<PositionTrace>& traces);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_SUITE_H_
