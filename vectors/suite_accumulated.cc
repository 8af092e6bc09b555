// spec/conformance.md §CONF.5 — suite `accumulated`: SHA-256 digests of the
// row ids of a counter-based stream of N positions, for N = 10^3, 10^5, 10^7.
#include <chrono>
#include <iostream>

#include "vectors/accumulate.h"
#include "reference/config.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/suite.h"
#include "vectors/mutants.h"
#include <algorithm>

namespace engram::vectors {
namespace {

std::string Digest(const Layout& layout, uint64_t seed, int64_t n) {
  HashState state(layout);
  return conform::AccumulateHash(layout.profile == Profile::kV41, layout.compressed_vocab_size, seed, n,
                                 [&](const std::vector<int64_t>& ids, std::vector<int64_t>& rows) { state.Append(ids, rows); });
}

// The digest a port with mutant `m` would publish (§CONF.4), chunk by chunk
// with max_ngram - 1 ids of context so that memory stays bounded.
std::string MutantDigest(Mutant m, const Layout& mutant_layout, uint64_t seed, int64_t n) {
  std::vector<int64_t> context;
  int64_t position = 0;
  const size_t keep = static_cast<size_t>(mutant_layout.max_ngram - 1);
  return conform::AccumulateHash(mutant_layout.profile == Profile::kV41, mutant_layout.compressed_vocab_size, seed, n,
                                 [&](const std::vector<int64_t>& ids, std::vector<int64_t>& rows) {
                                   std::vector<int64_t> window = context;
                                   window.insert(window.end(), ids.begin(), ids.end());
                                   rows = MutantRows(m, mutant_layout, window, position - static_cast<int64_t>(context.size()),
                                                     context.size());
                                   position += static_cast<int64_t>(ids.size());
                                   const size_t k = std::min(keep, window.size());
                                   context.assign(window.end() - static_cast<std::ptrdiff_t>(k), window.end());
                                 });
}

ojson Generate() {
  SuiteBuilder b("accumulated", "accumulated.schema.json", "ENGRAM-ACCUMULATED");
  b.Header("Accumulated vectors (§CONF.5): the stream of §CONF.5 hashed as one sequence from its start; sha256 is the");
  b.Header("SHA-256 over every row id in output order, each as int64 little-endian. Protocol op: accumulate.");
  b.Note("Accumulated", "BASIC", "Millions of positions, DEAD/negative ids included, folded into one digest.", "§CONF.5");
  AddMutantNotes(b, {Mutant::kNoDeadBlocking, Mutant::kDeadAsId, Mutant::kTruncatedMod, Mutant::kInt32Multipliers});
  struct G {
    ojson config;
    std::string profile;
    int64_t v, pad;
    std::string comment;
  };
  for (const G& gs : {G{V41ConfigJson(), "v4.1", 99092, 2, "DeepSeek-V4.1-Flash layout, V = 99092"},
                      G{DemoConfigJson(), "demo-v1", 129280, 2, "engram_demo_v1.py defaults, V = 129280"}}) {
    const EngramConfig cfg = ParseConfig(nlohmann::json::parse(gs.config.dump()), "config", ParseProfile(gs.profile));
    const Layout layout = BuildLayout(cfg, gs.v, gs.pad);
    const size_t g = b.Group({{"type", "AccumulatedHashTest"}, {"comment", gs.comment}, {"profile", gs.profile},
                              {"config", gs.config}, {"compressedVocabSize", gs.v}, {"compressedPad", gs.pad},
                              {"layers", LayersJson(layout)}});
    for (int64_t n : {int64_t{1000}, int64_t{100000}, int64_t{10000000}}) {
      const uint64_t seed = 0x454E4752414D;  // "ENGRAM"
      const std::string digest = Digest(layout, seed, n);
      const std::vector<std::string> flags = WithMutantFlags({"Accumulated"}, MutantsFor(layout.profile), [&](Mutant m) {
        return MutantDigest(m, MutantLayout(m, layout, cfg.seed), seed, n) != digest;
      });
      b.Test(g, "hash of the first " + std::to_string(n) + " stream positions", flags, {"§CONF.5", "§HASH.4"},
             {{"kind", "hash"}, {"seed", seed}, {"n", n}, {"result", "valid"}, {"sha256", digest}});
    }
  }
  return b.Finish();
}

void Check(Checker& c, const json& group, const json& t) {
  const Layout layout = GroupLayout(group);
  c.Expect(t, "sha256", Digest(layout, t.at("seed").get<uint64_t>(), t.at("n").get<int64_t>()));
}

}  // namespace

SuiteDef AccumulatedSuite() { return {"accumulated", "accumulated.schema.json", Generate, {{"AccumulatedHashTest", Check}}}; }

}  // namespace engram::vectors
