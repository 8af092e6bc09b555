// Shared pieces of the suites: the builder, the checker, common configurations.
#include "vectors/suite.h"

#include "reference/config.h"
#include "reference/error.h"

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
  doc_["notes"][flag] = {{"bugType", bug_type}, {"description", description}, {"specRef", ojson::array({spec_ref})}};
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
  } else if (test[field] != actual) {
    std::string exp = test[field].dump(), act = actual.dump();
    if (exp.size() > 200) exp = exp.substr(0, 200) + "...";
    if (act.size() > 200) act = act.substr(0, 200) + "...";
    Problem(test, "field '" + field + "' is " + exp + " but the reference gives " + act);
  }
}

bool IsValid(const json& test) { return test.value("result", "") == "valid"; }

void AddMutantNotes(SuiteBuilder& b, const std::vector<Mutant>& mutants) {
  for (Mutant m : mutants) {
    switch (m) {
      case Mutant::kNoDeadBlocking:
        b.Note("NoDeadBlocking", "KNOWN_DIVERGENCE",
               "Changes under the known bug of padding a DEAD slot without blocking the older slots (or hashing "
               "DEAD as an ordinary id): a port with that bug fails exactly the tests with this flag.",
               "§HASH.2");
        break;
      case Mutant::kTruncatedMod:
        b.Note("FloorMod", "KNOWN_DIVERGENCE",
               "Changes under C-style truncated % on negative mixes (a negative residue) instead of floor-mod: a "
               "port with that bug fails exactly the tests with this flag.",
               "§HASH.4");
        break;
      case Mutant::kInt32Multipliers:
        b.Note("Int32Multipliers", "KNOWN_DIVERGENCE",
               "Changes when multipliers are drawn with int32 bounds (MaxText): such tables are self-consistent "
               "but not compatible; a port with that choice fails exactly the tests with this flag.",
               "§RNG.4");
        break;
      case Mutant::kSignGate:
        b.Note("SignedZeroCopysign", "KNOWN_DIVERGENCE",
               "dot = +0 / -0: copysign gives sigmoid(+0.001) / sigmoid(-0.001). Changes (beyond the §FUS.9 "
               "tolerance) under the known bug of a v4.1 gate written with torch.sign(), which is 0 at +-0 and so "
               "gives 0.5 (the demo's gate function; a llama.cpp port): a port with that bug fails exactly the tests "
               "with this flag. Ports using where(dot < 0) differ at -0 only, a subset of these tests.",
               "§FUS.4");
        break;
      case Mutant::kE8M0BitShift:
        b.Note("E8M0BitShift", "KNOWN_DIVERGENCE",
               "Changes under the known bug of decoding an E8M0 scale by a bit trick (the float32 with bits "
               "byte << 23): 0x00 gives 0.0 instead of 2^-127 and 0xFF gives inf instead of NaN (scales 1 ... 254 "
               "agree). A port with that bug fails exactly the tests with this flag.",
               "§STO.2");
        break;
      case Mutant::kPythonWrapperDecode:
        b.Note("PythonWrapperDecode", "KNOWN_DIVERGENCE",
               "Changes when each single-id text is decoded through the transformers Python wrapper with "
               "clean_up_tokenization_spaces=True (\" .\" -> \".\", \" n't\" -> \"n't\", \" 's\" -> \"'s\", ...) "
               "instead of the Rust backend's plain decode: a port that builds the map that way fails exactly the "
               "tests with this flag.",
               "§TOK.2");
        break;
    }
  }
}

std::vector<std::string> WithMutantFlags(std::vector<std::string> flags, const std::vector<Mutant>& mutants,
                                         const std::function<bool(Mutant)>& changed) {
  for (Mutant m : mutants) {
    if (changed(m)) flags.push_back(MutantFlag(m));
  }
  return flags;
}

ojson V41ConfigJson() {
  return {{"engram_layer_ids", {1, 14}},
          {"engram_vocab_size", 16000000},
          {"engram_num_embeddings", {384006168, 384016682}},
          {"engram_max_ngram_size", 4},
          {"engram_n_heads", 8},
          {"engram_head_dim", 256},
          {"engram_pad_id", 2},
          {"engram_compressed_vocab_size", 99092},
          {"dim", 5120},
          {"hc_mult", 4},
          {"norm_eps", 1e-20}};
}

ojson DemoConfigJson() {
  return {{"engram_vocab_size", {646400, 646400}},
          {"max_ngram_size", 3},
          {"n_embed_per_ngram", 512},
          {"n_head_per_ngram", 8},
          {"layer_ids", {1, 15}},
          {"pad_id", 2},
          {"seed", 0},
          {"kernel_size", 4},
          {"hidden_size", 1024},
          {"hc_mult", 4},
          {"vocab_size", 129280}};
}

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
    out.push_back({{"window", p.window}, {"blocked", p.blocked}, {"tokens", p.tokens},
                   {"mixes", p.mixes}, {"residues", p.residues}});
  }
  return out;
}

}  // namespace engram::vectors
