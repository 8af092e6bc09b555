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
#include <map>

namespace engram::vectors {
namespace {

std::string Digest(const Layout& layout, uint64_t seed, int64_t n) {
  HashState state(layout);
  return AccumulateHash(layout.profile == Profile::kV41, layout.compressed_vocab_size, seed, n,
                                 [&](const std::vector<int64_t>& ids, std::vector<int64_t>& rows) { state.Append(ids, rows); });
}

// The first stream position at which a port with mutant `m` emits a row the
// reference does not (or `n` if none does before n), chunk by chunk with
// max_ngram - 1 ids of context so that memory stays bounded.
//
// Why not hash the mutant's whole stream and compare digests (§CONF.4)? The
// digest for N covers exactly the rows of positions 0 ... N-1 of one stream
// that does not depend on N, so the mutant's digest for N differs from the
// reference's if and only if its rows differ at some position below N (the
// "only if" is SHA-256's collision resistance). One walk that stops at the
// first difference therefore decides the flag of every N at once, and for a
// mutant that differs early it reads a few thousand positions instead of
// 10^7 for each N.
//
// A mutant that equals the reference on this layout by construction (RowIdUint32 on tables below 2^32
// rows: MutantRowsEqualReference) never differs: its walk of 10^7 positions took half of this suite's
// generation time, for the answer n.
int64_t FirstMutantDifference(Mutant m, const Layout& layout, const Layout& mutant_layout, uint64_t seed, int64_t n) {
  if (MutantRowsEqualReference(m, mutant_layout)) return n;
  HashState state(layout);
  std::vector<int64_t> context;
  const size_t keep = static_cast<size_t>(mutant_layout.max_ngram - 1);
  const bool v41 = layout.profile == Profile::kV41;
  const bool mutant_v41 = mutant_layout.profile == Profile::kV41;
  constexpr int64_t kChunk = 65536;
  std::vector<int64_t> ids, mutant_ids, rows;
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t len = std::min(kChunk, n - at);
    ids.resize(static_cast<size_t>(len));
    mutant_ids.resize(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) {
      const uint64_t position = static_cast<uint64_t>(at + i);
      ids[static_cast<size_t>(i)] = StreamId(v41, layout.compressed_vocab_size, seed, position);
      // The mutant's stream is drawn with its own V, as its port would draw it.
      mutant_ids[static_cast<size_t>(i)] =
          StreamId(mutant_v41, mutant_layout.compressed_vocab_size, seed, position);
    }
    rows.clear();
    state.Append(ids, rows);
    std::vector<int64_t> window = context;
    window.insert(window.end(), mutant_ids.begin(), mutant_ids.end());
    const std::vector<int64_t> mutant_rows =
        MutantRows(m, mutant_layout, window, at - static_cast<int64_t>(context.size()), context.size());
    const size_t k = std::min(keep, window.size());
    context.assign(window.end() - static_cast<std::ptrdiff_t>(k), window.end());
    // A different number of rows per position is a different digest from the
    // chunk's first position on.
    if (mutant_rows.size() != rows.size()) return at;
    const size_t per_position = rows.size() / static_cast<size_t>(len);
    for (size_t r = 0; r < rows.size(); ++r) {
      if (rows[r] != mutant_rows[r]) return at + static_cast<int64_t>(r / per_position);
    }
  }
  return n;
}

ojson GenerateAccumulated() {
  SuiteBuilder b("accumulated", "accumulated.schema.json", "ENGRAM-ACCUMULATED");
  b.Header("Accumulated vectors (§CONF.5): the stream of §CONF.5 hashed as one sequence from its start; sha256 is the");
  b.Header("SHA-256 over every row id in output order, each as int64 little-endian. Protocol op: accumulate.");
  b.Note("Accumulated", "BASIC", "Millions of positions, DEAD/negative ids included, folded into one digest.", "§CONF.5");
  AddMutantNotes(b, {Mutant::kNoDeadBlocking, Mutant::kDeadAsId, Mutant::kTruncatedMod, Mutant::kInt32Multipliers,
                     Mutant::kNegativeIdToPad});
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
    const uint64_t seed = 0x454E4752414D;  // "ENGRAM"
    const std::vector<int64_t> sizes = {1000, 100000, 10000000};
    std::map<Mutant, int64_t> first_difference;
    for (Mutant m : MutantsFor(layout.profile)) {
      first_difference[m] = FirstMutantDifference(m, layout, MutantLayout(m, layout, cfg.seed), seed, sizes.back());
    }
    for (int64_t n : sizes) {
      const std::string digest = Digest(layout, seed, n);
      const std::vector<std::string> flags = WithMutantFlags({"Accumulated"}, MutantsFor(layout.profile),
                                                             [&](Mutant m) { return first_difference.at(m) < n; });
      b.Test(g, "hash of the first " + std::to_string(n) + " stream positions", flags, {"§CONF.5", "§HASH.4"},
             {{"kind", "hash"}, {"seed", seed}, {"n", n}, {"result", "valid"}, {"sha256", digest}});
    }
  }
  return b.Finish();
}

void CheckAccumulated(Checker& c, const json& group, const json& t) {
  const Layout layout = GroupLayout(group);
  c.Expect(t, "sha256", Digest(layout, t.at("seed").get<uint64_t>(), t.at("n").get<int64_t>()));
}

}  // namespace

SuiteDef AccumulatedSuite() { return {"accumulated", "accumulated.schema.json", GenerateAccumulated, {{"AccumulatedHashTest", CheckAccumulated}}}; }

}  // namespace engram::vectors
