// spec/hash.md §HASH.9 — suite `hash_state`: histories handed between
// instances and micro-batches (generator and verifier).
#include "vectors/suite_hash_state.h"
#include "base/hex.h"

#include <algorithm>
#include <functional>
#include <map>

#include "reference/config.h"
#include "base/error.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/suite.h"
#include "vectors/mutants.h"

namespace engram::vectors {
namespace {

// §HASH.9 A vector's historyInBinary (hex of the binary form).
std::string Unhex(const std::string& hex) {
  const std::optional<std::string> bytes = BytesOfHex(hex);
  if (!bytes) throw Error("historyInBinary: not lower-case hex bytes");
  return *bytes;
}

std::vector<int64_t> Slice(const std::vector<int64_t>& v, size_t from, size_t to) {
  return std::vector<int64_t>(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to));
}

}  // namespace

std::string HistoryBinaryHex(const HashHistory& h) { return HexOfBytes(EncodeHistoryBinary(h)); }

ojson HistoryJson(const HashHistory& h) { return {{"position", h.position}, {"history", h.ids}}; }

ojson HandoffSegment(const Layout& layout, const HashHistory& in, const std::vector<int64_t>& ids, size_t from,
                     size_t to, HashHistory& out) {
  HashState state = HashState::Import(layout, in);
  std::vector<int64_t> rows;
  state.Append(Slice(ids, from, to), rows);
  out = state.Export();
  return {{"from", from}, {"to", to}, {"historyIn", HistoryJson(in)},
          {"historyInBinary", HistoryBinaryHex(in)}, {"rows", NestRows(layout, rows)},
          {"historyOut", HistoryJson(out)}};
}

ojson HandoffSegments(const Layout& layout, const HashHistory& start, const std::vector<int64_t>& ids,
                      const std::vector<size_t>& cuts) {
  ojson segments = ojson::array();
  HashHistory h = start;
  size_t from = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(ids.size());
  for (size_t to : ends) {
    HashHistory next;
    segments.push_back(HandoffSegment(layout, h, ids, from, to, next));
    h = next;
    from = to;
  }
  return segments;
}

ojson HandoffMicroBatches(const Layout& layout, const std::vector<HashHistory>& starts,
                          const std::vector<std::vector<int64_t>>& seqs, const std::vector<std::vector<size_t>>& cuts) {
  ojson batches = ojson::array();
  std::vector<HashHistory> hist = starts;
  std::vector<size_t> at(seqs.size(), 0);
  size_t steps = 0;
  for (const auto& c : cuts) steps = std::max(steps, c.size() + 1);
  for (size_t step = 0; step < steps; ++step) {
    ojson micro = ojson::array();
    for (size_t si = 0; si < seqs.size(); ++si) {
      if (at[si] >= seqs[si].size()) continue;
      const size_t to = step < cuts[si].size() ? cuts[si][step] : seqs[si].size();
      if (to <= at[si]) continue;
      HashHistory next;
      ojson seg = HandoffSegment(layout, hist[si], seqs[si], at[si], to, next);
      seg["sequence"] = si;
      micro.push_back(seg);
      hist[si] = next;
      at[si] = to;
    }
    if (!micro.empty()) batches.push_back(micro);
  }
  return batches;
}

namespace {

void AddHashStateNotes(SuiteBuilder& b) {
  b.Header("History hand-off (§HASH.9): a sequence hashed by several instances or micro-batches, each importing");
  b.Header("the history the previous one exported. Every segment's rows must equal the one-shot rows of its");
  b.Header("positions, and its exported history must equal historyOut. historyInBinary is the binary form.");
  b.Note("PrefillDecodeSplit", "BASIC",
         "Disaggregated serving: one instance prefills, another decodes from the handed-off history; a decode "
         "instance that never received the history hashes its first max-1 positions as a sequence start.",
         "§HASH.9");
  b.Note("SplitInsideWindow", "BASIC",
         "The split falls less than max-1 positions after the start or a DEAD span: the history is short or "
         "holds DEAD ids, which must be kept.",
         "§HASH.9");
  b.Note("MicroBatch", "BASIC",
         "A batch of sequences split into micro-batches at arbitrary positions; each micro-batch continues each "
         "sequence from its history.",
         "§HASH.9");
  b.Note("DeadInHistory", "EDGE_CASE", "The handed-off history holds DEAD (-1) ids (v4.1).", "§HASH.9");
  b.Note("MidSequenceStart", "BASIC",
         "The sequence began elsewhere: the first segment imports a history at position P > 0 (here up to beyond "
         "2^32). `from` and `to` index `ids`; the sequence positions are P + from and P + to, which historyIn and "
         "historyOut carry. A port that takes `from` for the position fails.",
         "§HASH.9");
  b.Note("BadHistory", "INVALID_INPUT",
         "A history that does not fit the layout (wrong id count for its position, an id >= V, another layout's "
         "fingerprint): implementations must refuse to import it.",
         "§HASH.9");
  AddMutantNotes(b, {Mutant::kNoDeadBlocking, Mutant::kDeadAsId, Mutant::kTruncatedMod, Mutant::kInt32Multipliers,
                     Mutant::kNegativeIdToPad});
}

struct GroupSpec {
  ojson config;
  std::string profile;
  int64_t v, pad;
  std::string comment;
};

// One configuration's hand-off tests: what they share. Copied into the tests
// added later (AddMidSequenceGroup).
struct HandoffGroup {
  GroupSpec gs;
  size_t index = 0;       // of the configuration: seeds the inputs
  Layout layout;
  int64_t seed = 0;       // the configuration's seed (the mutants' layouts)
  bool v41 = false;
  std::vector<Mutant> mutants;
  ojson group_params;
  std::vector<int64_t> seq;  // the sequence most tests cut
};

// Segments cover whole sequences from their start: a mutant changes a test
// exactly when it changes some sequence's one-shot rows.
std::function<bool(Mutant)> ChangedBy(const HandoffGroup& h, const std::vector<std::vector<int64_t>>& seqs) {
  return [&h, seqs](Mutant m) {
    const Layout ml = MutantLayout(m, h.layout, h.seed);
    for (const auto& s : seqs) {
      if (MutantRows(m, ml, s) != HashSequence(h.layout, s)) return true;
    }
    return false;
  };
}

// One sequence cut into segments at several points, each segment on a fresh
// instance that imports the previous one's history.
void AddSplitTests(SuiteBuilder& b, size_t g, const HandoffGroup& h) {
  const std::vector<int64_t>& seq = h.seq;
  auto add = [&](const std::vector<size_t>& cuts, const std::string& comment, std::vector<std::string> flags) {
    const ojson segments = HandoffSegments(h.layout, HashHistory{0, {}, LayoutFingerprint(h.layout)}, seq, cuts);
    flags = WithMutantFlags(flags, h.mutants, ChangedBy(h, {seq}));
    b.Test(g, comment, flags, {"§HASH.5", "§HASH.9"}, {{"ids", seq}, {"result", "valid"}, {"segments", segments}});
  };
  add({9}, "prefill 9 ids on one instance, decode the rest on another", {"PrefillDecodeSplit"});
  {
    std::vector<size_t> cuts;
    for (size_t t = 8; t < seq.size(); ++t) cuts.push_back(t);
    add(cuts, "prefill 8, then every decode step on a fresh instance", {"PrefillDecodeSplit"});
  }
  add({1, 2}, "splits after 1 and 2 ids: histories shorter than max - 1", {"SplitInsideWindow"});
  if (h.v41) {
    add({6, 7}, "splits inside and right after a DEAD span", {"SplitInsideWindow", "DeadInHistory"});
  } else {
    add({6}, "split right after a negative id", {"SplitInsideWindow"});
  }
  add({3, 5, 8, 13}, "four instances", {"SplitInsideWindow"});
}

// Micro-batches: three sequences, cut at arbitrary points, processed in
// micro-batches that each hold one segment of every unfinished sequence.
void AddMicroBatchTest(SuiteBuilder& b, size_t g, const HandoffGroup& h, InputRng& rng) {
  std::vector<std::vector<int64_t>> seqs;
  for (size_t n : {size_t{7}, size_t{12}, size_t{3}}) {
    std::vector<int64_t> s(n);
    for (int64_t& id : s) id = rng.Below(h.gs.v);
    seqs.push_back(s);
  }
  if (h.v41) seqs[1][4] = kDead;
  const std::vector<std::vector<size_t>> cuts = {{2, 5}, {1, 6, 9}, {}};
  const ojson batches = HandoffMicroBatches(
      h.layout, std::vector<HashHistory>(seqs.size(), HashHistory{0, {}, LayoutFingerprint(h.layout)}), seqs, cuts);
  b.Test(g, "three sequences (7, 12, 3 ids) in micro-batches cut at arbitrary positions",
         WithMutantFlags({"MicroBatch"}, h.mutants, ChangedBy(h, seqs)), {"§HASH.5", "§HASH.9"},
         {{"sequences", seqs}, {"result", "valid"}, {"microBatches", batches}});
}

// Histories that must be refused on import.
void AddBadHistories(SuiteBuilder& b, size_t g, const HandoffGroup& h) {
  const std::vector<int64_t>& seq = h.seq;
  const HashHistory good = [&] {
    HashState st(h.layout);
    std::vector<int64_t> rows;
    st.Append(Slice(seq, 0, 9), rows);
    return st.Export();
  }();
  auto bad = [&](HashHistory hist, const std::string& comment) {
    b.Test(g, comment, {"BadHistory"}, {"§HASH.9"},
           {{"ids", Slice(seq, 9, seq.size())}, {"historyIn", HistoryToJson(hist)},
            {"historyInBinary", HistoryBinaryHex(hist)}, {"result", "invalid"}});
  };
  HashHistory short_history = good;
  short_history.ids.pop_back();
  bad(short_history, "position 9 with only max - 2 ids");
  HashHistory out_of_range = good;
  out_of_range.ids.back() = h.gs.v;
  bad(out_of_range, "a history id equal to V");
  HashHistory other_layout = good;
  other_layout.layout_fingerprint = std::string(64, '0');
  bad(other_layout, "a history exported by another layout (fingerprint of zeros)");
}

// §HASH.9 Sequences that began elsewhere: the first segment imports a
// history at position P > 0, so a segment's positions are P + from ...
// P + to while from and to index `ids` (and `sequences[s]`).
// Added in groups of their own after the existing ones, so that no
// existing tcId moves (§VEC.11).
void AddMidSequenceGroup(SuiteBuilder& b, const HandoffGroup& h) {
  const Layout& layout = h.layout;
  const size_t g = b.Group(h.group_params);
  InputRng rng(0x50535452 + h.index);
  auto start_at = [&](int64_t position) {
    HashHistory hist{position, {}, LayoutFingerprint(layout)};
    const int64_t need = std::min<int64_t>(position, layout.max_ngram - 1);
    for (int64_t i = 0; i < need; ++i) hist.ids.push_back(rng.Below(h.gs.v));
    if (h.v41 && need >= 2) hist.ids[static_cast<size_t>(need - 2)] = kDead;
    return hist;
  };
  // A mutant changes a test when it changes the rows of some sequence
  // continued from its start history (its ids precede the sequence).
  auto changed_from = [&](const std::vector<HashHistory>& starts, const std::vector<std::vector<int64_t>>& seqs) {
    return [&, starts, seqs](Mutant m) {
      const Layout ml = MutantLayout(m, layout, h.seed);
      for (size_t i = 0; i < seqs.size(); ++i) {
        std::vector<int64_t> all = starts[i].ids;
        all.insert(all.end(), seqs[i].begin(), seqs[i].end());
        HashState state = HashState::Import(layout, starts[i]);
        std::vector<int64_t> rows;
        state.Append(seqs[i], rows);
        const int64_t first = starts[i].position - static_cast<int64_t>(starts[i].ids.size());
        if (MutantRows(m, ml, all, first, starts[i].ids.size()) != rows) return true;
      }
      return false;
    };
  };
  auto add_from = [&](int64_t position, const std::vector<size_t>& cuts, const std::string& comment) {
    const HashHistory start = start_at(position);
    const ojson segments = HandoffSegments(layout, start, h.seq, cuts);
    b.Test(g, comment, WithMutantFlags({"MidSequenceStart"}, h.mutants, changed_from({start}, {h.seq})),
           {"§HASH.5", "§HASH.9"}, {{"ids", h.seq}, {"result", "valid"}, {"segments", segments}});
  };
  add_from(1000, {1, 2, 9}, "a sequence that began elsewhere at position 1000, cut after 1, 2 and 9 of its ids");
  add_from((int64_t{1} << 32) + 5, {0, 4},
           "began elsewhere at position 2^32 + 5 (beyond 32 bits): an empty first segment, then a cut after 4");
  add_from(1, {1, 3}, "began elsewhere at position 1: a history of one id, shorter than max - 1");
  std::vector<std::vector<int64_t>> seqs;
  for (size_t n : {size_t{6}, size_t{9}, size_t{4}}) {
    std::vector<int64_t> s(n);
    for (int64_t& id : s) id = rng.Below(h.gs.v);
    seqs.push_back(s);
  }
  const std::vector<HashHistory> starts = {start_at(2), start_at((int64_t{1} << 33) + 3), start_at(0)};
  const std::vector<std::vector<size_t>> cuts = {{1, 4}, {2, 3, 7}, {2}};
  const ojson batches = HandoffMicroBatches(layout, starts, seqs, cuts);
  b.Test(g, "micro-batches of three sequences that began at positions 2, 2^33 + 3 and 0",
         WithMutantFlags({"MicroBatch", "MidSequenceStart"}, h.mutants, changed_from(starts, seqs)),
         {"§HASH.5", "§HASH.9"}, {{"sequences", seqs}, {"result", "valid"}, {"microBatches", batches}});
}

ojson GenerateHashState() {
  SuiteBuilder b("hash_state", "hash_state.schema.json", "ENGRAM-HASH-STATE");
  AddHashStateNotes(b);
  const std::vector<GroupSpec> groups = {
      {V41ConfigJson(), "v4.1", 99092, 2, "DeepSeek-V4.1-Flash layout, V = 99092"},
      {SmallV41Config({0, 3}, 5, 4, 2, 12), "v4.1", 12, 1, "tiny v4.1 layout (V = 12, pad 1)"},
      {DemoConfigJson(), "demo-v1", 129280, 2, "engram_demo_v1.py defaults, V = 129280"},
  };
  std::vector<HandoffGroup> runs;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    HandoffGroup h;
    h.gs = groups[gi];
    h.index = gi;
    const EngramConfig cfg =
        ParseConfig(nlohmann::json::parse(h.gs.config.dump()), "config", ParseProfile(h.gs.profile));
    h.layout = BuildLayout(cfg, h.gs.v, h.gs.pad);
    h.seed = cfg.seed;
    h.v41 = h.gs.profile == "v4.1";
    h.mutants = MutantsFor(h.layout.profile);
    h.group_params = {{"type", "HashHandoffTest"},
                      {"comment", h.gs.comment},
                      {"profile", h.gs.profile},
                      {"config", h.gs.config},
                      {"compressedVocabSize", h.gs.v},
                      {"compressedPad", h.gs.pad},
                      {"layers", LayersJson(h.layout)},
                      {"layoutFingerprint", LayoutFingerprint(h.layout)}};
    const size_t g = b.Group(h.group_params);
    InputRng rng(0x53544154 + gi);
    h.seq.resize(14);
    for (int64_t& id : h.seq) id = rng.Below(h.gs.v);
    if (h.v41) h.seq[5] = h.seq[6] = kDead;
    else h.seq[5] = -7;
    AddSplitTests(b, g, h);
    AddMicroBatchTest(b, g, h, rng);
    AddBadHistories(b, g, h);
    runs.push_back(std::move(h));
  }
  for (const HandoffGroup& h : runs) AddMidSequenceGroup(b, h);
  return b.Finish();
}

HashHistory HistoryOf(const json& j, const std::string& fingerprint) {
  HashHistory h;
  h.position = j.at("position").get<int64_t>();
  h.ids = j.at("history").get<std::vector<int64_t>>();
  h.layout_fingerprint = fingerprint;
  return h;
}

void CheckSegment(Checker& c, const Layout& layout, const std::string& fingerprint, const json& t, const json& seg,
                  const std::vector<int64_t>& ids, const std::string& where) {
  const HashHistory in = HistoryOf(seg.at("historyIn"), fingerprint);
  // The binary form must decode to the same history.
  const HashHistory decoded = DecodeHistoryBinary(Unhex(seg.at("historyInBinary").get<std::string>()), where);
  c.Same(t, where + ": historyIn (the reference's decode of historyInBinary)",
         json{{"position", in.position}, {"history", in.ids}, {"layoutFingerprint", fingerprint}},
         json{{"position", decoded.position}, {"history", decoded.ids}, {"layoutFingerprint", decoded.layout_fingerprint}});
  HashState state = HashState::Import(layout, in);
  std::vector<int64_t> rows;
  state.Append(Slice(ids, seg.at("from").get<size_t>(), seg.at("to").get<size_t>()), rows);
  c.Same(t, where + ": rows", seg.at("rows"), json(NestRows(layout, rows)));
  const HashHistory out = state.Export();
  c.Same(t, where + ": historyOut", seg.at("historyOut"), json::parse(HistoryJson(out).dump()));
}

void CheckHandoffTest(Checker& c, const json& group, const json& t) {
  const Layout layout = GroupLayout(group);
  const std::string fingerprint = LayoutFingerprint(layout);
  c.Same(t, "group layoutFingerprint", group.at("layoutFingerprint"), fingerprint);
  if (!IsValid(t)) {
    // Both forms of the history must be refused.
    bool json_refused = false, binary_refused = false;
    try {
      HashState::Import(layout, HistoryFromJson(t.at("historyIn"), "historyIn"));
    } catch (const Error&) {
      json_refused = true;
    }
    try {
      HashState::Import(layout, DecodeHistoryBinary(Unhex(t.at("historyInBinary").get<std::string>()), "historyInBinary"));
    } catch (const Error&) {
      binary_refused = true;
    }
    if (!json_refused || !binary_refused) c.Problem(t, "the reference imports a history the vector marks invalid");
    return;
  }
  if (t.contains("segments")) {
    const std::vector<int64_t> ids = t.at("ids").get<std::vector<int64_t>>();
    size_t i = 0;
    for (const json& seg : t.at("segments")) CheckSegment(c, layout, fingerprint, t, seg, ids, "segment " + std::to_string(i++));
  } else {
    const auto seqs = t.at("sequences").get<std::vector<std::vector<int64_t>>>();
    size_t mb = 0;
    for (const json& micro : t.at("microBatches")) {
      for (const json& seg : micro) {
        CheckSegment(c, layout, fingerprint, t, seg, seqs.at(seg.at("sequence").get<size_t>()),
                     "micro-batch " + std::to_string(mb) + " sequence " + seg.at("sequence").dump());
      }
      ++mb;
    }
  }
}

}  // namespace

SuiteDef HashStateSuite() {
  return {"hash_state", "hash_state.schema.json", GenerateHashState, {{"HashHandoffTest", CheckHandoffTest}}};
}

}  // namespace engram::vectors
