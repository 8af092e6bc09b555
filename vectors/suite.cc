// Shared pieces of the suites: the builder, the checker, common configurations.
#include "vectors/suite.h"

#include <algorithm>

#include "reference/config.h"
#include "base/error.h"
#include "vectors/compare.h"
#include "vectors/trivial.h"

namespace engram::vectors {

SuiteBuilder::SuiteBuilder(std::string suite, std::string schema, std::string algorithm) : suite_(std::move(suite)) {
  doc_["schema"] = std::move(schema);
  doc_["algorithm"] = std::move(algorithm);
  doc_["specVersion"] = kSpecVersion;
  doc_["generator"] = {{"name", "engram-reference"}, {"version", ENGRAM_VERSION}};
  doc_["numberOfTests"] = 0;
  doc_["header"] = ojson::array();
  doc_["notes"] = ojson::object();
  doc_["testGroups"] = ojson::array();
}

void SuiteBuilder::Header(const std::string& line) { doc_["header"].push_back(line); }

void SuiteBuilder::Note(const std::string& flag, const std::string& bug_type, const std::string& description,
                        const std::string& spec_ref) {
  // §VEC.12 a KNOWN_DIVERGENCE note makes a claim that a planted bug must show.
  if (bug_type == "KNOWN_DIVERGENCE") {
    throw Error("generator bug: note " + flag + " in suite " + suite_ + ": KNOWN_DIVERGENCE notes go through Divergence()");
  }
  doc_["notes"][flag] = {{"bugType", bug_type}, {"description", description}, {"specRef", ojson::array({spec_ref})}};
}

void SuiteBuilder::Divergence(const std::string& flag, const std::string& description, const std::string& spec_ref,
                              const std::string& planted_bug) {
  if (planted_bug.empty()) throw Error("generator bug: divergence " + flag + " in suite " + suite_ + " names no planted bug");
  doc_["notes"][flag] = {{"bugType", "KNOWN_DIVERGENCE"},
                         {"description", description + " A port with that bug fails exactly the tests with this flag "
                                                       "(planted: engram_numpy_port --bug " + planted_bug + ")."},
                         {"specRef", ojson::array({spec_ref})}};
}

size_t SuiteBuilder::Group(ojson group) {
  group["tests"] = ojson::array();
  doc_["testGroups"].push_back(std::move(group));
  return doc_["testGroups"].size() - 1;
}

void SuiteBuilder::Test(size_t group, const std::string& comment, const std::vector<std::string>& flags,
                        const std::vector<std::string>& spec_refs, const ojson& fields) {
  for (const std::string& f : flags) {
    if (!doc_["notes"].contains(f)) throw Error("generator bug: flag " + f + " has no note in suite " + suite_);
  }
  ojson t;
  t["tcId"] = ++count_;
  t["comment"] = comment;
  t["flags"] = flags;
  // §CONF.4 a test that a port passes without computing anything carries the
  // computed flag Trivial, on every suite's tests and on saved random cases
  // alike (all go through here), so that a reader sees which tests prove
  // nothing on their own; the runner decides the same way (vectors/trivial.h).
  if (IsTrivial(doc_["testGroups"][group], fields)) {
    if (!HasNote(kTrivialFlag)) {
      doc_["notes"][kTrivialFlag] = {
          {"bugType", "EDGE_CASE"},
          {"description",
           "The expected outputs need no computation (an empty sequence, a segment that appends nothing, a masked "
           "stream passed through): an implementation that computes nothing passes this test, so it does not count "
           "as tested (a suite is OK only when a valid test without this flag passed)."},
          {"specRef", ojson::array({"§CONF.4"})}};
    }
    t["flags"].push_back(kTrivialFlag);
  }
  t["specRef"] = spec_refs;
  for (const auto& [k, v] : fields.items()) t[k] = v;
  doc_["testGroups"][group]["tests"].push_back(std::move(t));
}

ojson SuiteBuilder::Finish() {
  doc_["numberOfTests"] = count_;
  return std::move(doc_);
}

void Checker::Problem(const json& test, const std::string& what) {
  std::string id = test.contains("tcId") ? "tcId " + test["tcId"].dump() : "(no tcId)";
  problems.push_back(file + ": " + id + ": " + what);
}

void Checker::Expect(const json& test, const std::string& field, const json& actual) {
  if (!test.contains(field)) {
    Problem(test, "missing field '" + field + "'");
    return;
  }
  const std::string d = FirstDifference(test[field], actual, field);
  if (!d.empty()) Problem(test, "field '" + field + "': " + d);
}

void Checker::Same(const json& test, const std::string& path, const json& in_vector, const json& actual) {
  const std::string d = FirstDifference(in_vector, actual, path);
  if (!d.empty()) Problem(test, d);
}

namespace {

// A value as shown in a difference: its JSON text, cut at 120 characters.
std::string Shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

std::string TypeName(const json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  return std::string(v.is_array() || v.is_object() ? "an " : "a ") + v.type_name();
}

}  // namespace

std::string FirstDifference(const json& in_vector, const json& actual, const std::string& path) {
  const std::string diff = path + ": the vector has ";
  if (in_vector.is_array() && actual.is_array()) {
    for (size_t i = 0; i < std::min(in_vector.size(), actual.size()); ++i) {
      std::string d = FirstDifference(in_vector[i], actual[i], path + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
    if (in_vector.size() != actual.size()) {
      return diff + std::to_string(in_vector.size()) + " elements, the reference gives " + std::to_string(actual.size());
    }
    return "";
  }
  if (in_vector.is_object() && actual.is_object()) {
    for (const auto& [k, v] : actual.items()) {
      if (!in_vector.contains(k)) return path + "." + k + ": missing in the vector (the reference gives " + Shown(v) + ")";
      std::string d = FirstDifference(in_vector[k], v, path + "." + k);
      if (!d.empty()) return d;
    }
    for (const auto& [k, v] : in_vector.items()) {
      if (!actual.contains(k)) return path + "." + k + ": the vector has " + Shown(v) + ", the reference has no such key";
    }
    return "";
  }
  // §VEC.4 integers are integers: 7.0 in a vector file is not the reference's 7.
  if (in_vector.is_number_integer() != actual.is_number_integer() && in_vector.is_number() && actual.is_number()) {
    return diff + TypeName(in_vector) + " " + Shown(in_vector) + ", the reference gives " + TypeName(actual) + " " + Shown(actual);
  }
  // §VEC.4 integers by value: -1 is not 18446744073709551615 (vectors/compare.h SameInteger).
  if (in_vector.is_number_integer() && actual.is_number_integer() ? SameInteger(in_vector, actual) : in_vector == actual) {
    return "";
  }
  // Both numbers compare by value (1 and 1u are equal above); other kinds by type first.
  const bool numbers = in_vector.is_number() && actual.is_number();
  if (!numbers && in_vector.type() != actual.type()) {
    return diff + TypeName(in_vector) + " " + Shown(in_vector) + ", the reference gives " + TypeName(actual) + " " +
           Shown(actual);
  }
  if (in_vector.is_string() && actual.is_string()) {
    const std::string& a = in_vector.get_ref<const std::string&>();
    const std::string& b = actual.get_ref<const std::string&>();
    if (a.size() > 64 || b.size() > 64) {
      // Long strings (hex bytes of table rows): the first differing character and 16 around it.
      size_t i = 0;
      while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
      const size_t from = i < 8 ? 0 : i - 8;
      auto window = [&](const std::string& s) {
        return std::string(from > 0 ? "..." : "") + s.substr(from, 16) + (from + 16 < s.size() ? "..." : "");
      };
      return path + ": first difference at character " + std::to_string(i) + " (of " + std::to_string(a.size()) +
             " in the vector, " + std::to_string(b.size()) + " from the reference): the vector has \"" + window(a) +
             "\", the reference gives \"" + window(b) + "\"";
    }
  }
  return diff + Shown(in_vector) + ", the reference gives " + Shown(actual);
}

bool IsValid(const json& test) { return test.value("result", "") == "valid"; }

void AddMutantNotes(SuiteBuilder& b, const std::vector<Mutant>& mutants) {
  for (Mutant m : mutants) {
    switch (m) {
      case Mutant::kNoDeadBlocking:
        b.Divergence("NoDeadBlocking",
                     "Changes under the known bug of padding a DEAD slot without blocking the older slots (the "
                     "look-back goes on across a DEAD span).",
                     "§HASH.2", "no-dead-blocking");
        break;
      case Mutant::kDeadAsId:
        b.Divergence("DeadAsOrdinaryId",
                     "Changes under the known bug of hashing DEAD (-1) as an ordinary id: no pad, no blocking, the "
                     "product -1 * m enters the mix.",
                     "§HASH.2", "dead-as-id");
        break;
      case Mutant::kTruncatedMod:
        b.Divergence("FloorMod",
                     "Changes under C-style truncated % on negative mixes (a negative residue) instead of floor-mod.",
                     "§HASH.4", "truncated-mod");
        break;
      case Mutant::kInt32Multipliers:
        b.Divergence("Int32Multipliers",
                     "Changes when multipliers are drawn with int32 bounds (MaxText): such tables are "
                     "self-consistent but not compatible.",
                     "§RNG.4", "int32-multipliers");
        break;
      case Mutant::kSignGate:
        b.Divergence("SignedZeroCopysign",
                     "dot = +0 / -0: copysign gives sigmoid(+0.001) / sigmoid(-0.001). Changes (beyond the §FUS.9 "
                     "tolerance) under the known bug of a v4.1 gate written with torch.sign(), which is 0 at +-0 and "
                     "so gives 0.5 (the demo's gate function; a llama.cpp port).",
                     "§FUS.4", "sign");
        break;
      case Mutant::kE8M0BitShift:
        b.Divergence("E8M0BitShift",
                     "Changes under the known bug of decoding an E8M0 scale by a bit trick (the float32 with bits "
                     "byte << 23): 0x00 gives 0.0 instead of 2^-127 and 0xFF gives inf instead of NaN (scales 1 ... "
                     "254 agree).",
                     "§STO.2", "e8m0-shift");
        break;
      case Mutant::kPythonWrapperDecode:
        b.Divergence("PythonWrapperDecode",
                     "Changes when each single-id text is decoded through the transformers Python wrapper with "
                     "clean_up_tokenization_spaces=True (\" .\" -> \".\", \" n't\" -> \"n't\", \" 's\" -> \"'s\", "
                     "...) instead of the Rust backend's plain decode.",
                     "§TOK.2", "python-wrapper-decode");
        break;
      case Mutant::kRowIdUint32:
        b.Divergence("RowIdUint32",
                     "Changes under the known bug of storing row ids as uint32_t (Luce-Org/lucebox, "
                     "DeepSeek4EngramHasher::hash: (uint32_t) (h % prime + offset), spec/sources.md "
                     "[SRC-PORT-LUCEBOX]): a row id of 2^32 or more, which a layout whose primes or offsets pass 2^32 "
                     "gives, comes out reduced mod 2^32, another row of the table. The real V4.1 geometry is not "
                     "affected (384,006,168 rows per layer, every row id below 2^32).",
                     "§HASH.4", "row-id-uint32");
        break;
      case Mutant::kRowIdInt32:
        b.Divergence("RowIdInt32",
                     "Changes under the known limit of keeping row ids as int32 (vLLM, whose hash output is int32 "
                     "and whose tests' oracle returns torch.tensor(rows, dtype=torch.int32), spec/sources.md "
                     "[SRC-PORT-VLLM]): a row id of 2^31 or more, which a layout whose primes or offsets pass 2^31 "
                     "gives, does not fit: the oracle refuses the input, a kernel writing int32 wraps the id. The "
                     "real V4.1 geometry is not affected (384,006,168 rows per layer, every row id below 2^31).",
                     "§HASH.4", "row-id-int32");
        break;
      case Mutant::kNegativeIdToPad:
        b.Divergence("NegativeIdToPad",
                     "demo-v1 hashes a negative id as it is (§HASH.1). Changes under the known bug of a port that "
                     "hashes every negative id as the pad (a llama.cpp port, compute_hash: tid < 0 becomes pad_id, "
                     "spec/sources.md [SRC-PORT-LLAMACPP-ENGRAM]).",
                     "§HASH.1", "negative-to-pad");
        break;
    }
  }
}

void AddRollbackDeadNote(SuiteBuilder& b) {
  b.Divergence(kRollbackDeadFlag,
               "Changes under the rollback of a port that keeps only the last max_ngram - 1 ids (no measured port "
               "does): after a rollback of k, the positions whose slots the removed ids overwrote read back as "
               "DEAD in its history and in the next windows, whatever rollbackCapacity says; the spec restores "
               "them (§HASH.6).",
               "§HASH.6", "rollback-dead");
}

std::vector<std::string> WithMutantFlags(std::vector<std::string> flags, const std::vector<Mutant>& mutants,
                                         const std::function<bool(Mutant)>& changed) {
  for (Mutant m : mutants) {
    if (changed(m)) flags.push_back(MutantFlag(m));
  }
  return flags;
}

ojson V41ConfigJson() {
  // The vectors carry the reference's figures without the backbone's vocab_size
  // (informative, §CFG.2); erasing it keeps the other keys' order.
  ojson c = V41FlashConfigJson();
  c.erase("vocab_size");
  return c;
}

ojson DemoConfigJson() { return DemoV1ConfigJson(); }

// A v4.1 config of any shape with engram_num_embeddings filled in from the
// layout (so that it is consistent by construction).
ojson SmallV41Config(std::vector<int64_t> layer_ids, int64_t base, int max_ngram, int heads, int64_t v) {
  ojson c = {{"engram_layer_ids", layer_ids}, {"engram_vocab_size", base},
             {"engram_max_ngram_size", max_ngram}, {"engram_n_heads", heads},
             {"engram_head_dim", 8}, {"engram_pad_id", 2}, {"engram_compressed_vocab_size", v}};
  // Compute the prime sums first (engram_num_embeddings is optional, §CFG.2).
  Layout layout = BuildLayout(ParseConfig(nlohmann::json::parse(c.dump()), "<generator>"), v, 2);
  std::vector<int64_t> sums;
  for (const LayerLayout& l : layout.layers) sums.push_back(l.num_embeddings);
  c["engram_num_embeddings"] = sums;
  return c;
}

Layout GroupLayout(const json& group) {
  EngramConfig cfg = ParseConfig(group.at("config"), "config", ParseProfile(group.at("profile").get<std::string>()));
  return BuildLayout(cfg, group.at("compressedVocabSize").get<int64_t>(), group.at("compressedPad").get<int64_t>());
}

ojson LayersJson(const Layout& layout) {
  ojson layers = ojson::array();
  for (const LayerLayout& l : layout.layers) {
    layers.push_back({{"layerId", l.layer_id},
                      {"multipliers", l.multipliers},
                      {"primes", l.primes},
                      {"offsets", l.offsets},
                      {"numEmbeddings", l.num_embeddings}});
  }
  return layers;
}

ojson TraceJson(const std::vector<PositionTrace>& traces) {
  ojson out = ojson::array();
  for (const PositionTrace& p : traces) {
    // Key by key rather than from an initializer list, which would copy every
    // array once more (the random cases of §CONF.7 build many traces).
    ojson& o = out.emplace_back(ojson::object());
    o["window"] = p.window;
    o["blocked"] = p.blocked;
    o["tokens"] = p.tokens;
    o["mixes"] = p.mixes;
    o["residues"] = p.residues;
  }
  return out;
}

}  // namespace engram::vectors
