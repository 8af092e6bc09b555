// spec/hash.md — suites `hash_v41` and `hash_demo` (§VEC.7): generator and verifier.
#include <algorithm>
#include <limits>
#include <functional>
#include <map>
#include <memory>

#include "reference/config.h"
#include "base/error.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/random.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

// ---------------------------------------------------------------------------
// hash_v41 / hash_demo (§HASH)

struct HashGroup {
  ojson config;
  std::string profile;
  int64_t v;
  int64_t pad;
  std::string comment;
};

// Whether any append of a HashStateTest produces other rows under mutant `m`:
// each named sequence is tracked as the ids it effectively holds.
bool StepsChange(const Layout& layout, const Layout& mutant_layout, Mutant m, const ojson& steps) {
  std::map<std::string, std::vector<int64_t>> seqs;
  const size_t per_id = layout.layers.size() * static_cast<size_t>(layout.columns());
  for (const ojson& step : steps) {
    const std::string op = step["op"];
    if (op == "append") {
      std::vector<int64_t>& seq = seqs[step["seq"].get<std::string>()];
      const std::vector<int64_t> ids = step["ids"].get<std::vector<int64_t>>();
      seq.insert(seq.end(), ids.begin(), ids.end());
      const std::vector<int64_t> a = HashSequence(layout, seq), b = MutantRows(m, mutant_layout, seq);
      if (!std::equal(a.end() - static_cast<std::ptrdiff_t>(ids.size() * per_id), a.end(),
                      b.end() - static_cast<std::ptrdiff_t>(ids.size() * per_id))) {
        return true;
      }
    } else if (op == "rollback") {
      std::vector<int64_t>& seq = seqs[step["seq"].get<std::string>()];
      seq.resize(seq.size() - step["k"].get<size_t>());
    } else if (op == "fork") {
      seqs[step["to"].get<std::string>()] = seqs[step["from"].get<std::string>()];
    }
  }
  return false;
}

// §VEC.12 Whether a port whose rollback forgets the slots the removed ids
// overwrote (mutants.h RollbackDeadSteps) fails a HashStateTest whose
// expected `steps` are given: any append's rows or any positionAfter /
// historyAfter differ (the runner compares all three).
bool RollbackDeadFails(const Layout& layout, const ojson& steps) {
  const std::vector<StepOutcome> got = RollbackDeadSteps(layout, steps);
  for (size_t i = 0; i < got.size(); ++i) {
    const ojson& step = steps[i];
    if (step.contains("rows")) {
      std::vector<int64_t> want;
      for (const auto& pos : step["rows"]) {
        for (const auto& layer : pos) {
          for (const auto& r : layer) want.push_back(r.get<int64_t>());
        }
      }
      if (want != got[i].rows) return true;
    }
    if (step.contains("positionAfter") && step["positionAfter"] != got[i].position_after) return true;
    if (step.contains("historyAfter") && step["historyAfter"].get<std::vector<int64_t>>() != got[i].history) return true;
  }
  return false;
}

Layout LayoutOf(const HashGroup& hg) {
  EngramConfig cfg = ParseConfig(nlohmann::json::parse(hg.config.dump()), "config", ParseProfile(hg.profile));
  return BuildLayout(cfg, hg.v, hg.pad);
}

// The state tests need to roll back at most this many ids (§HASH.6).
constexpr size_t kStateRollbackCapacity = 16;

// §VEC.7 The sequence a step names: a rollback, or a fork from, of a name
// no append has started is refused (the names are the runner's; a port has no
// such sequence to act on).
HashState& Named(std::map<std::string, HashState>& seqs, const std::string& name, const std::string& where) {
  auto it = seqs.find(name);
  if (it == seqs.end()) throw Error(where + ": sequence '" + name + "' was never appended to");
  return it->second;
}

// Runs a HashStateTest's steps, filling in each append's expected rows
// (§VEC.7: a fork onto a name that exists replaces that sequence). Throws
// engram::Error, naming the step, for a step the reference refuses.
ojson RunSteps(const Layout& layout, ojson steps) {
  std::map<std::string, HashState> seqs;
  size_t index = 0;
  for (ojson& step : steps) {
    const std::string op = step["op"];
    const std::string where = "step " + std::to_string(index++) + " (" + op + ")";
    if (op == "append") {
      const std::string name = step["seq"];
      auto it = seqs.find(name);
      if (it == seqs.end()) it = seqs.emplace(name, HashState(layout, kStateRollbackCapacity)).first;
      std::vector<int64_t> ids = step["ids"].get<std::vector<int64_t>>();
      std::vector<int64_t> rows;
      it->second.Append(ids, rows);
      step["rows"] = NestRows(layout, rows);
      step["positionAfter"] = it->second.position();
      step["historyAfter"] = it->second.History();
    } else if (op == "rollback") {
      HashState& s = Named(seqs, step["seq"].get<std::string>(), where);
      try {
        s.Rollback(step["k"].get<size_t>());
      } catch (const Error& e) {
        throw Error(where + ": " + e.what());
      }
      step["positionAfter"] = s.position();
      step["historyAfter"] = s.History();
    } else if (op == "fork") {
      const HashState copy = Named(seqs, step["from"].get<std::string>(), where);
      seqs.insert_or_assign(step["to"].get<std::string>(), copy);
    }
  }
  return steps;
}

void AddHashNotes(SuiteBuilder& b, bool v41, const std::vector<Mutant>& mutants) {
  b.Header("N-gram hashing: compressed ids -> row ids rows[position][layer][column], column = (n-2)*heads + head,");
  b.Header("offsets added. Intermediate values per position: the look-back window as read, the blocked flags,");
  b.Header("the tokens after blocking/padding, the rolling mixes per layer and order, the residues per column.");
  b.Note("SequenceStart", "BASIC", "Positions before the start read the compressed pad id.", "§HASH.2");
  b.Note("BucketCollision", "BASIC",
         "Two different n-grams land in the same row of some column: collisions are part of the design.", "§HASH.4");
  b.Note("MaxId", "EDGE_CASE", "Ids at V - 1: the largest products, still below 2^63.", "§HASH.7");
  b.Note("ChunkedPrefill", "BASIC",
         "The sequence arrives in chunks; a port that loses history at a chunk boundary fails.", "§HASH.5");
  b.Note("Decode", "BASIC", "Token-by-token decode after a prefill.", "§HASH.5");
  b.Note("Rollback", "BASIC",
         "Speculative decoding: drafted ids are rolled back; a port that keeps the previous step's ids fails.",
         "§HASH.6");
  b.Note("Fork", "BASIC", "Two sequences share a prefix and continue independently.", "§HASH.6");
  b.Note("ForkReplaces", "BASIC",
         "A fork onto a name that exists replaces that sequence, like an assignment (§VEC.7: the runner owns the "
         "names); a port that refuses it, or keeps the old sequence, fails.",
         "§HASH.6");
  b.Note("BadStep", "INVALID_INPUT",
         "The last step must be refused (§HASH.6, §VEC.7): a rollback by more than the position, or a rollback or "
         "fork of a name no append has started; every step before it succeeds.",
         "§HASH.6");
  b.Note("OutOfRangeId", "INVALID_INPUT", "A compressed id >= V must be refused.", "§HASH.1");
  AddMutantNotes(b, mutants);
  if (v41) {
    b.Note("DeadSpan", "BASIC",
           "A DEAD (-1, masked) span stops the look-back; its effect ends max_ngram - 1 positions later.", "§HASH.2");
    b.Note("DeadCurrent", "EDGE_CASE", "The current token is DEAD: every slot is blocked, the window is all pad.",
           "§HASH.2");
    b.Note("NegativeIdRefused", "INVALID_INPUT", "v4.1 has no negative ids other than DEAD (-1): refuse -2.", "§HASH.1");
  } else {
    b.Note("NegativeIdPassThrough", "BASIC",
           "demo-v1 hashes negative ids as they are (the demo copies them through compression).", "§HASH.1");
    b.Note("ProductWrap", "EDGE_CASE",
           "A large negative id whose product with a multiplier wraps around int64, as numpy does.", "§HASH.3");
  }
}

std::vector<HashGroup> HashGroups(bool v41) {
  std::vector<HashGroup> groups;
  if (v41) {
    groups.push_back({V41ConfigJson(), "v4.1", 99092, 2, "DeepSeek-V4.1-Flash layout, V = 99092, pad 2"});
    groups.push_back({SmallV41Config({0, 3}, 5, 4, 2, 12), "v4.1", 12, 1,
                      "tiny layout (base 5, two heads, V = 12, pad 1) so that buckets collide"});
  } else {
    ojson demo = DemoConfigJson();
    groups.push_back({demo, "demo-v1", 129280, 2, "engram_demo_v1.py defaults, V = 129280, pad 2"});
    ojson tiny = DemoConfigJson();
    tiny["engram_vocab_size"] = {7, 11};
    tiny["n_head_per_ngram"] = 2;
    tiny["n_embed_per_ngram"] = 4;
    tiny["layer_ids"] = {0, 3};
    tiny["seed"] = 5;
    groups.push_back({tiny, "demo-v1", 12, 1, "tiny layout (bases 7, 11, two heads, V = 12, seed 5, pad 1)"});
  }
  return groups;
}

ojson Append(const std::string& seq, const std::vector<int64_t>& ids) {
  return ojson{{"op", "append"}, {"seq", seq}, {"ids", ids}};
}

// One configuration's tests: its layout, the mutants' layouts, and the input
// stream every test of the configuration draws from, in order.
struct HashGroupRun {
  SuiteBuilder& b;
  const HashGroup& hg;
  bool v41;
  const std::vector<Mutant>& mutants;
  Layout layout;
  std::map<Mutant, Layout> mutant_layouts;
  InputRng rng;

  HashGroupRun(SuiteBuilder& builder, const HashGroup& group, bool is_v41, const std::vector<Mutant>& ms, uint64_t seed)
      : b(builder), hg(group), v41(is_v41), mutants(ms), layout(LayoutOf(group)), rng(seed) {
    const int64_t config_seed =
        ParseConfig(nlohmann::json::parse(hg.config.dump()), "config", ParseProfile(hg.profile)).seed;
    for (Mutant m : mutants) mutant_layouts.emplace(m, MutantLayout(m, layout, config_seed));
  }

  std::vector<int64_t> RandomIds(size_t n) {
    std::vector<int64_t> ids(n);
    for (int64_t& id : ids) id = rng.Below(hg.v);
    return ids;
  }

  // A HashTest: valid with its rows and trace when the reference hashes the
  // ids, else invalid with the reference's error.
  void Add(size_t g, const std::vector<int64_t>& ids, const std::string& comment, std::vector<std::string> flags,
           std::vector<std::string> refs) {
    ojson fields = {{"ids", ids}};
    try {
      std::vector<PositionTrace> traces = TraceSequence(layout, ids);
      fields["result"] = "valid";
      fields["rows"] = ojson(NestRows(layout, HashSequence(layout, ids)));
      fields["intermediate"] = TraceJson(traces);
      flags = WithMutantFlags(flags, mutants, [&](Mutant m) {
        return MutantRows(m, mutant_layouts.at(m), ids) != HashSequence(layout, ids);
      });
    } catch (const Error& e) {
      fields["result"] = "invalid";
      fields["error"] = e.what();
    }
    b.Test(g, comment, flags, refs, fields);
  }

  // A valid HashStateTest, its steps run by the reference.
  void AddSteps(size_t sg, const ojson& steps, const std::string& comment, std::vector<std::string> flags) {
    ojson fields;
    fields["result"] = "valid";
    fields["steps"] = RunSteps(layout, steps);
    flags = WithMutantFlags(flags, mutants, [&](Mutant m) { return StepsChange(layout, mutant_layouts.at(m), m, steps); });
    // §VEC.12 a fork's rollback (v4.1): slots the removed ids overwrote read back as DEAD.
    if (v41 && RollbackDeadFails(layout, fields["steps"])) {
      if (!b.HasNote(kRollbackDeadFlag)) AddRollbackDeadNote(b);
      flags.push_back(kRollbackDeadFlag);
    }
    b.Test(sg, comment, flags, {"§HASH.5", "§HASH.6"}, fields);
  }
};

// Bucket collisions: search deterministic random pairs of windows until two
// different full windows share a row in the same column of layer 0.
void AddCollisionTest(HashGroupRun& r, size_t g) {
  const int w = r.layout.max_ngram;
  std::map<std::pair<int, int64_t>, std::vector<int64_t>> seen_rows;
  for (int attempt = 0; attempt < 200000; ++attempt) {
    std::vector<int64_t> ids = r.RandomIds(static_cast<size_t>(w));
    std::vector<int64_t> rows = HashSequence(r.layout, ids);
    const size_t last = static_cast<size_t>(w - 1) * r.layout.layers.size() * static_cast<size_t>(r.layout.columns());
    const int col = r.layout.columns() - 1;  // the highest order, last head
    auto key = std::make_pair(col, rows[last + static_cast<size_t>(col)]);
    auto it = seen_rows.find(key);
    if (it != seen_rows.end() && it->second != ids) {
      std::vector<int64_t> both = it->second;
      both.insert(both.end(), ids.begin(), ids.end());
      r.Add(g, both, "two different " + std::to_string(w) + "-grams (positions " + std::to_string(w - 1) + " and " +
                         std::to_string(2 * w - 1) + ") share row " + std::to_string(key.second) + " of column " +
                         std::to_string(col) + " in the first layer",
            {"BucketCollision"}, {"§HASH.4"});
      return;
    }
    seen_rows.emplace(key, ids);
  }
  throw Error("generator: no bucket collision found for " + r.hg.comment);
}

// The HashTest group of one configuration.
void AddHashTests(HashGroupRun& r, const ojson& params) {
  const size_t g = r.b.Group(params);
  const int w = r.layout.max_ngram;
  const int64_t v = r.hg.v;
  r.Add(g, {}, "empty sequence: no rows", {}, {"§HASH.4"});
  r.Add(g, r.RandomIds(1), "one token: every look-back slot reads pad", {"SequenceStart"}, {"§HASH.2", "§HASH.4"});
  r.Add(g, r.RandomIds(static_cast<size_t>(w) + 3), "sequence start, then full windows", {"SequenceStart"},
        {"§HASH.2", "§HASH.3", "§HASH.4"});
  r.Add(g, std::vector<int64_t>(static_cast<size_t>(w) + 1, v - 1), "every id is V - 1", {"MaxId"},
        {"§HASH.3", "§HASH.7"});
  r.Add(g, std::vector<int64_t>(3, r.hg.pad), "ids equal to pad: indistinguishable from the start padding",
        {"SequenceStart"}, {"§HASH.2"});
  if (r.v41) {
    // DEAD spans of every length 1 .. w+1 in the middle of a sequence.
    for (int len = 1; len <= w + 1; ++len) {
      std::vector<int64_t> ids = r.RandomIds(static_cast<size_t>(len + 2 * w));
      for (int k = 0; k < len; ++k) ids[static_cast<size_t>(w + k)] = kDead;
      r.Add(g, ids, "DEAD span of length " + std::to_string(len) + " at position " + std::to_string(w),
            {"DeadSpan", "DeadCurrent"}, {"§HASH.1", "§HASH.2"});
    }
    std::vector<int64_t> first_dead = r.RandomIds(static_cast<size_t>(w) + 2);
    first_dead[0] = kDead;
    r.Add(g, first_dead, "the first token is DEAD", {"DeadCurrent", "DeadSpan", "SequenceStart"}, {"§HASH.2"});
    r.Add(g, std::vector<int64_t>(4, kDead), "every token DEAD: all-pad windows", {"DeadCurrent", "DeadSpan"},
          {"§HASH.2"});
    std::vector<int64_t> alternating = r.RandomIds(static_cast<size_t>(3 * w));
    for (size_t t = 1; t < alternating.size(); t += 2) alternating[t] = kDead;
    r.Add(g, alternating, "DEAD every other position: no n-gram ever spans two live ids", {"DeadSpan", "DeadCurrent"},
          {"§HASH.2"});
    r.Add(g, {1, 2, -2, 3}, "-2 is not a valid v4.1 compressed id", {"NegativeIdRefused"}, {"§HASH.1"});
  } else {
    r.Add(g, {-1, -2, 5, -3, 7}, "negative ids are hashed as they are", {"NegativeIdPassThrough"},
          {"§HASH.1", "§HASH.4"});
    r.Add(g, {-(int64_t{1} << 62), 3, -(int64_t{1} << 62) - 12345, 4}, "large negative ids: products wrap around int64",
          {"NegativeIdPassThrough", "ProductWrap"}, {"§HASH.1", "§HASH.3", "§HASH.4"});
    r.Add(g, {std::numeric_limits<int64_t>::min(), -1, 0}, "INT64_MIN", {"NegativeIdPassThrough", "ProductWrap"},
          {"§HASH.1", "§HASH.3", "§HASH.4"});
  }
  r.Add(g, {0, v, 1}, "V is not a compressed id", {"OutOfRangeId"}, {"§HASH.1"});
  for (int i = 0; i < 4; ++i) r.Add(g, r.RandomIds(24), "random sequence", {}, {"§HASH.2", "§HASH.3", "§HASH.4"});
  AddCollisionTest(r, g);
}

// Tests added after the first released set, in groups of their own after the
// existing ones so that no existing tcId moves (§VEC.11): a fork onto an
// existing name, and steps that must be refused.
void AddLaterStateTests(HashGroupRun& r, const ojson& sparams, const std::vector<int64_t>& seq,
                        const std::vector<int64_t>& other) {
  const size_t lg = r.b.Group(sparams);
  auto part = [&](size_t from, size_t to) {
    return std::vector<int64_t>(seq.begin() + static_cast<std::ptrdiff_t>(from), seq.begin() + static_cast<std::ptrdiff_t>(to));
  };
  {
    const ojson steps = {Append("a", part(0, 9)), Append("b", other), {{"op", "fork"}, {"from", "a"}, {"to", "b"}},
                         Append("b", part(9, 12)), Append("a", other)};
    r.AddSteps(lg, steps, "fork onto the existing b: b is replaced by a copy of a, then both continue",
               {"Fork", "ForkReplaces"});
  }
  // §HASH.6, §VEC.7 Steps that must be refused, after steps that
  // succeed. The refusals are mandatory ones (not a rollback beyond the
  // mandatory depth, which a port may refuse or accept).
  auto add_invalid = [&](ojson steps, const std::string& comment) {
    std::string error;
    try {
      RunSteps(r.layout, steps);
    } catch (const Error& e) {
      error = e.what();
    }
    if (error.empty()) throw Error("generator: the reference accepts the invalid HashStateTest '" + comment + "'");
    ojson fields;
    fields["steps"] = steps;
    fields["result"] = "invalid";
    fields["error"] = error;
    r.b.Test(lg, comment, {"BadStep"}, {"§HASH.6"}, fields);
  };
  add_invalid({Append("a", part(0, 3)), {{"op", "rollback"}, {"seq", "a"}, {"k", 4}}},
              "rollback by 4 after 3 ids: more than the position");
  add_invalid({Append("a", part(0, 3)), {{"op", "rollback"}, {"seq", "b"}, {"k", 0}}},
              "rollback of b, which no append has started (even by 0)");
  add_invalid({Append("a", part(0, 3)), {{"op", "fork"}, {"from", "b"}, {"to", "c"}}},
              "fork from b, which no append has started");
}

// The HashStateTest group of one configuration: chunked prefill, decode,
// rollback, fork. Returns the inputs the later tests reuse.
std::pair<std::vector<int64_t>, std::vector<int64_t>> AddStateTests(HashGroupRun& r, const ojson& sparams) {
  const size_t sg = r.b.Group(sparams);
  std::vector<int64_t> seq = r.RandomIds(20);
  if (r.v41) {
    seq[6] = kDead;
    seq[7] = kDead;
  } else {
    seq[6] = -3;
  }
  auto part = [&](size_t from, size_t to) { return std::vector<int64_t>(seq.begin() + static_cast<std::ptrdiff_t>(from), seq.begin() + static_cast<std::ptrdiff_t>(to)); };
  // ojson::array, not braces: a braced list of one json is that json under
  // clang and an array of it under GCC (the clang ASan build found this).
  r.AddSteps(sg, ojson::array({Append("a", part(0, 20))}), "one-shot prefill (the reference for the chunked tests below)", {});
  r.AddSteps(sg, {Append("a", part(0, 1)), Append("a", part(1, 3)), Append("a", part(3, 7)), Append("a", part(7, 8)),
                  Append("a", part(8, 20))},
             "chunks of 1, 2, 4, 1, 12: each chunk boundary falls inside some window", {"ChunkedPrefill"});
  {
    ojson steps = ojson::array({Append("a", part(0, 5))});
    for (size_t t = 5; t < 20; ++t) steps.push_back(Append("a", part(t, t + 1)));
    r.AddSteps(sg, steps, "prefill 5, then decode one token at a time", {"ChunkedPrefill", "Decode"});
  }
  r.AddSteps(sg, {Append("a", part(0, 3)), Append("a", {}), Append("a", part(3, 20))}, "an empty chunk changes nothing",
             {"ChunkedPrefill"});
  {
    std::vector<int64_t> draft = r.RandomIds(4);
    r.AddSteps(sg, {Append("a", part(0, 10)), Append("a", draft), {{"op", "rollback"}, {"seq", "a"}, {"k", 4}},
                    Append("a", part(10, 20))},
               "speculative draft of 4 rolled back, then the accepted continuation", {"Rollback"});
    r.AddSteps(sg, {Append("a", part(0, 10)), Append("a", draft), {{"op", "rollback"}, {"seq", "a"}, {"k", 2}},
                    Append("a", part(12, 20))},
               "draft of 4, 2 accepted (rollback 2); the accepted ids differ from the real continuation", {"Rollback"});
    r.AddSteps(sg, {Append("a", part(0, 2)), {{"op", "rollback"}, {"seq", "a"}, {"k", 2}}, Append("a", part(0, 5))},
               "rollback to the very start", {"Rollback", "SequenceStart"});
  }
  std::vector<int64_t> other = r.RandomIds(6);
  r.AddSteps(sg, {Append("a", part(0, 9)), {{"op", "fork"}, {"from", "a"}, {"to", "b"}}, Append("b", other),
                  Append("a", part(9, 20))},
             "fork after 9 ids: b continues differently, a is unaffected", {"Fork"});
  r.AddSteps(sg, {Append("a", part(0, 9)), {{"op", "fork"}, {"from", "a"}, {"to", "b"}},
                  {{"op", "rollback"}, {"seq", "b"}, {"k", 3}}, Append("b", other), Append("a", part(9, 12))},
             "fork, roll the fork back by 3, continue both", {"Fork", "Rollback"});
  return {seq, other};
}

// A HashTest group's keys: its configuration, V, pad and the layout it gives.
ojson HashGroupParams(const HashGroup& hg, const Layout& layout) {
  return {{"type", "HashTest"},          {"comment", hg.comment},
          {"profile", hg.profile},       {"config", hg.config},
          {"compressedVocabSize", hg.v}, {"compressedPad", hg.pad},
          {"layers", LayersJson(layout)}};
}

// §HASH.4 Row ids of 2^32 and more (appended after every earlier group, so that their tcIds stay): a layout
// with base 2^32 puts its second column's offset above 2^32, so every row id of that column is one. The real
// V4.1 geometry never reaches 2^32 rows; layouts of other bases do, and a port that keeps row ids in 32 bits
// (§VEC.12 RowIdUint32, found measuring the public ports) reads other rows there.
void AddWideRowGroup(SuiteBuilder& b, const std::vector<Mutant>& mutants) {
  const HashGroup hg{SmallV41Config({3}, int64_t{1} << 32, 2, 2, 1000), "v4.1", 1000, 2,
                     "base 2^32 (one layer, two heads, max n-gram 2, V = 1000, pad 2): row ids of 2^32 and more"};
  HashGroupRun r(b, hg, true, mutants, 0x48415348 + 200);
  if (r.layout.layers[0].offsets[1] < (int64_t{1} << 32)) throw Error("generator: the wide layout stays below 2^32");
  const size_t g = b.Group(HashGroupParams(hg, r.layout));
  r.Add(g, r.RandomIds(4), "second column's rows at 2^32 and above", {"SequenceStart"}, {"§HASH.4"});
  r.Add(g, std::vector<int64_t>(3, hg.v - 1), "every id is V - 1, rows at 2^32 and above", {"MaxId"},
        {"§HASH.4", "§HASH.7"});
}

// §HASH.4 Row ids between 2^31 and 2^32 (appended after the base-2^32 group): base 1.5 * 2^30 with two heads
// puts the second column's rows in [1.5 * 2^30, 3 * 2^30), mostly at or above 2^31 and all below 2^32, so that
// a port keeping row ids as int32 (§VEC.12 RowIdInt32, vLLM) fails here while one keeping them as uint32
// (RowIdUint32) does not.
void AddInt32RowGroup(SuiteBuilder& b, const std::vector<Mutant>& mutants) {
  const HashGroup hg{SmallV41Config({3}, int64_t{3} << 29, 2, 2, 1000), "v4.1", 1000, 2,
                     "base 3 * 2^29 (one layer, two heads, max n-gram 2, V = 1000, pad 2): row ids between 2^31 "
                     "and 2^32"};
  HashGroupRun r(b, hg, true, mutants, 0x48415348 + 201);
  const LayerLayout& l = r.layout.layers[0];
  if (l.num_embeddings > (int64_t{1} << 32) || l.offsets[1] + l.primes[0][1] <= (int64_t{1} << 31)) {
    throw Error("generator: the int32 layout's second column does not lie across 2^31 below 2^32");
  }
  const size_t g = b.Group(HashGroupParams(hg, r.layout));
  r.Add(g, r.RandomIds(6), "second column's rows across 2^31", {"SequenceStart"}, {"§HASH.4"});
  r.Add(g, std::vector<int64_t>(3, hg.v - 1), "every id is V - 1, rows between 2^31 and 2^32", {"MaxId"},
        {"§HASH.4", "§HASH.7"});
}

ojson GenerateHash(bool v41) {
  const std::string suite = v41 ? "hash_v41" : "hash_demo";
  SuiteBuilder b(suite, "hash.schema.json", "ENGRAM-HASH");
  const std::vector<Mutant> mutants = MutantsFor(v41 ? Profile::kV41 : Profile::kDemoV1);
  AddHashNotes(b, v41, mutants);
  const std::vector<HashGroup> groups = HashGroups(v41);
  std::vector<std::unique_ptr<HashGroupRun>> runs;
  std::vector<std::function<void()>> later;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const HashGroup& hg = groups[gi];
    runs.push_back(std::make_unique<HashGroupRun>(b, hg, v41, mutants, 0x48415348 + gi + (v41 ? 100 : 0)));
    HashGroupRun& r = *runs.back();
    const ojson params = HashGroupParams(hg, r.layout);
    AddHashTests(r, params);
    ojson sparams = params;
    sparams["type"] = "HashStateTest";
    sparams["rollbackCapacity"] = kStateRollbackCapacity;
    // (a pair, not a structured binding: a lambda may not capture one before C++20's P1091 in clang 15)
    const std::pair<std::vector<int64_t>, std::vector<int64_t>> ids = AddStateTests(r, sparams);
    later.push_back([&r, sparams, ids] { AddLaterStateTests(r, sparams, ids.first, ids.second); });
  }
  for (const auto& add : later) add();
  if (v41) AddWideRowGroup(b, mutants);
  if (v41) AddInt32RowGroup(b, mutants);
  return b.Finish();
}

void CheckHash(Checker& c, const Layout& layout, const json& t) {
  std::vector<int64_t> ids = t.at("ids").get<std::vector<int64_t>>();
  try {
    std::vector<int64_t> rows = HashSequence(layout, ids);
    if (!IsValid(t)) {
      c.Problem(t, "the reference accepts ids the vector marks invalid");
      return;
    }
    c.Expect(t, "rows", json(NestRows(layout, rows)));
    c.Expect(t, "intermediate", json::parse(TraceJson(TraceSequence(layout, ids)).dump()));
  } catch (const Error& e) {
    if (IsValid(t)) c.Problem(t, std::string("the reference refuses a valid test: ") + e.what());
  }
}

// §HASH.6 A valid test may roll back only by what every conforming state
// accepts (k <= its mandatory rollback depth); an invalid one ends in a step
// every conforming state refuses (k > position, a name never appended).
void CheckHashState(Checker& c, const Layout& layout, size_t capacity, const json& t) {
  std::map<std::string, HashState> seqs;
  std::map<std::string, size_t> depth;  // §HASH.6 the mandatory rollback depth of each sequence
  const json& steps = t.at("steps");
  const bool valid = IsValid(t);
  if (!valid && steps.empty()) {
    c.Problem(t, "an invalid HashStateTest needs a last step to refuse");
    return;
  }
  size_t index = 0;
  for (const json& step : steps) {
    const std::string op = step.at("op");
    const std::string where = "step " + std::to_string(index) + " (" + op + ")";
    const bool last = ++index == steps.size();
    try {
      if (op == "append") {
        const std::string name = step.at("seq");
        auto it = seqs.find(name);
        if (it == seqs.end()) it = seqs.emplace(name, HashState(layout, capacity)).first;
        const std::vector<int64_t> ids = step.at("ids").get<std::vector<int64_t>>();
        std::vector<int64_t> rows;
        it->second.Append(ids, rows);
        depth[name] = std::min(depth[name] + ids.size(), capacity);
        if (valid) {
          c.Same(t, where + ": rows", step.at("rows"), json(NestRows(layout, rows)));
          c.Same(t, where + ": positionAfter", step.at("positionAfter"), it->second.position());
          c.Same(t, where + ": historyAfter", step.at("historyAfter"), json(it->second.History()));
        }
      } else if (op == "rollback") {
        const std::string name = step.at("seq");
        HashState& s = Named(seqs, name, where);
        const json& kj = step.at("k");
        if (!kj.is_number_integer() || (kj.is_number_integer() && !kj.is_number_unsigned() && kj.get<int64_t>() < 0)) {
          throw Error(where + ": k must be a non-negative integer, got " + kj.dump());
        }
        const uint64_t k = kj.get<uint64_t>();
        if (valid && k > depth[name]) {
          c.Problem(t, where + ": rollback by " + std::to_string(k) + " exceeds the mandatory rollback depth " +
                           std::to_string(depth[name]) + " (§HASH.6): a conforming port may refuse it");
        }
        s.Rollback(static_cast<size_t>(k));
        depth[name] -= std::min<size_t>(depth[name], static_cast<size_t>(k));
        if (valid) {
          c.Same(t, where + ": positionAfter", step.at("positionAfter"), s.position());
          c.Same(t, where + ": historyAfter", step.at("historyAfter"), json(s.History()));
        }
      } else if (op == "fork") {
        const std::string from = step.at("from"), to = step.at("to");
        const HashState copy = Named(seqs, from, where);
        seqs.insert_or_assign(to, copy);  // §VEC.7 onto an existing name: replaces it
        depth[to] = depth[from];
      } else {
        throw Error(where + ": unknown op " + json(op).dump());
      }
    } catch (const Error& e) {
      if (valid) {
        c.Problem(t, std::string("the reference refuses a step of a valid test: ") + e.what());
      } else if (!last) {
        c.Problem(t, std::string("the reference refuses a step before the last: ") + e.what());
      } else if (op == "rollback" && std::string(e.what()).find("exceeds the retained history") != std::string::npos) {
        c.Problem(t, std::string("the last step's refusal is a policy of §HASH.6, not mandatory: ") + e.what());
      }
      return;
    }
  }
  if (!valid) c.Problem(t, "the reference accepts every step of a test the vector marks invalid");
}

}  // namespace

namespace {

std::map<std::string, TestVerifier> HashVerifiers() {
  return {{"HashTest", [](Checker& c, const json& g, const json& t) { CheckHash(c, GroupLayout(g), t); }},
          {"HashStateTest", [](Checker& c, const json& g, const json& t) {
             CheckHashState(c, GroupLayout(g), g.value("rollbackCapacity", size_t{0}), t);
           }}};
}

}  // namespace

SuiteDef HashV41Suite() { return {"hash_v41", "hash.schema.json", [] { return GenerateHash(true); }, HashVerifiers()}; }
SuiteDef HashDemoSuite() { return {"hash_demo", "hash.schema.json", [] { return GenerateHash(false); }, HashVerifiers()}; }

}  // namespace engram::vectors
