// spec/conformance.md §CONF.7 — random cases of the suite hash_state (§HASH.9):
// HashHandoffTest, a sequence hashed by several instances or micro-batches,
// each importing the history the one before it exported, and histories that
// must be refused on import.
//
// The recipe: the profile and the layout part of random_hash.cc (drawn as for
// hash_v41 / hash_demo and shared by kCasesPerLayout consecutive cases), then
// "kind" and:
//   "segments":     "ids", "cuts", "start" — one sequence cut into segments;
//   "microBatches": "sequences", each {"ids", "cuts", "start"};
//   "badHistory":   "start", "break", "ids" (and "at", "excess", "fingerprint"
//                   as the break needs them) — an import that must be refused.
// "start" is the history the first segment imports: {"position": 0,
// "history": []} for a sequence start, or a sequence that began elsewhere (a
// micro-batch that starts a request mid-sequence, §HASH.9) at a position up
// to 2^62 with min(position, max n-gram - 1) ids of its own.
//
// Distributions. Kinds: one case in ten "badHistory", one in four
// "microBatches", the others "segments". A segments case has 0..48 ids
// (log-uniform, DrawIds: DEAD spans in v4.1, negative ids in demo-v1), starts
// mid-sequence one time in three, and is cut either as prefill + decode (one
// cut, then every later position its own segment: one case in four) or at
// 0..5 points uniform in [0, T], half of them inside the first max n-gram - 1
// positions; equal cuts give empty segments (§HASH.5 item 1). A micro-batch
// case has 1..3 sequences of 0..24 ids, each cut at 0..4 points, mid-sequence
// one time in four. A bad history is a valid one (of a sequence start or
// mid-sequence) with one rule of §HASH.9 broken: one id too few or too many,
// an id >= V, a negative id other than DEAD (v4.1), another layout's
// fingerprint, or a negative position. A corrupt binary form alone is not
// generated: the vector format holds an invalid history in both forms, and
// both must be refused (suite_hash_state.cc's verifier).
#include <algorithm>
#include <limits>

#include "base/error.h"
#include "base/hex.h"
#include "reference/config.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/random_cases.h"
#include "vectors/random_hash.h"
#include "vectors/suite.h"
#include "vectors/suite_hash_state.h"

namespace engram::vectors {
namespace {

const char* const kBreaksV41[] = {"shortHistory", "longHistory", "idBeyondV", "negativeId", "otherLayout", "negativePosition"};
const char* const kBreaksDemo[] = {"shortHistory", "longHistory", "idBeyondV", "otherLayout", "negativePosition"};

// ------------------------------------------------------------------ draw

// A sequence start, or (with probability num / den) a history of a sequence
// that began elsewhere: position log-uniform in [1, 2^62] (so that positions
// beyond 32 bits come up), min(position, max - 1) ids of its own. One draw
// per statement: the order of two draws in one expression is unspecified.
ojson DrawStart(CaseRng& rng, const ojson& r, bool v41, int num, int den) {
  ojson start = ojson::object();
  start["position"] = 0;
  start["history"] = ojson::array();
  if (!rng.Chance(num, den)) return start;
  const int64_t position = rng.Scaled(1, int64_t{1} << 62);
  const int max_ngram = r["maxNgram"];
  const int64_t need = std::min<int64_t>(position, max_ngram - 1);
  start["position"] = position;
  start["history"] = DrawIds(rng, v41, r["v"], r["pad"], max_ngram, need);
  return start;
}

// Cut points of a sequence of n ids: ascending, each in [0, n].
std::vector<int64_t> DrawCuts(CaseRng& rng, int64_t n, int max_ngram, int64_t most) {
  std::vector<int64_t> cuts;
  const int64_t k = rng.In(0, most);
  for (int64_t i = 0; i < k; ++i) {
    const bool early = rng.Chance(1, 2);  // §HASH.9 a split inside the window: a short history
    cuts.push_back(early ? rng.In(0, std::min<int64_t>(n, max_ngram - 1)) : rng.In(0, n));
  }
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

ojson DrawHandoff(uint64_t seed, int64_t index) {
  CaseRng layout_rng(seed, "hash_state/layout", index / kCasesPerLayout);
  const bool v41 = layout_rng.Chance(1, 2);
  ojson r = DrawLayoutPart(layout_rng, v41);
  r["profile"] = v41 ? "v4.1" : "demo-v1";
  CaseRng rng(seed, "hash_state", index);
  const int64_t v = r["v"], pad = r["pad"];
  const int max_ngram = r["maxNgram"];
  const int64_t kind = rng.Below(20);
  if (kind < 2) {
    r["kind"] = "badHistory";
    const int64_t b = v41 ? rng.Below(6) : rng.Below(5);
    const std::string brk = v41 ? kBreaksV41[b] : kBreaksDemo[b];
    r["break"] = brk;
    ojson start = DrawStart(rng, r, v41, 1, 2);
    if (start["position"] == 0 && (brk == "shortHistory" || brk == "idBeyondV" || brk == "negativeId")) {
      // These breaks change an id: the history needs one (position >= 1).
      const int64_t position = rng.In(1, 2 * max_ngram);
      start["position"] = position;
      start["history"] = DrawIds(rng, v41, v, pad, max_ngram, std::min<int64_t>(position, max_ngram - 1));
    }
    r["start"] = start;
    r["at"] = rng.Below(max_ngram);
    r["excess"] = rng.Chance(1, 2) ? 0 : rng.Scaled(0, kInt64Max);
    std::string fingerprint;
    for (int i = 0; i < 4; ++i) fingerprint += HexOfU64(rng.Next());
    r["fingerprint"] = fingerprint;
    r["ids"] = DrawIds(rng, v41, v, pad, max_ngram, rng.Scaled(0, 12));
    return r;
  }
  if (kind < 7) {
    r["kind"] = "microBatches";
    ojson seqs = ojson::array();
    const int64_t n_seqs = rng.In(1, 3);
    for (int64_t s = 0; s < n_seqs; ++s) {
      ojson q = ojson::object();
      q["start"] = DrawStart(rng, r, v41, 1, 4);
      const std::vector<int64_t> ids = DrawIds(rng, v41, v, pad, max_ngram, rng.Length(24, 16));
      q["cuts"] = DrawCuts(rng, static_cast<int64_t>(ids.size()), max_ngram, 4);
      q["ids"] = ids;
      seqs.push_back(std::move(q));
    }
    r["sequences"] = seqs;
    return r;
  }
  r["kind"] = "segments";
  r["start"] = DrawStart(rng, r, v41, 1, 3);
  const std::vector<int64_t> ids = DrawIds(rng, v41, v, pad, max_ngram, rng.Length(48, 64));
  const int64_t n = static_cast<int64_t>(ids.size());
  if (rng.Chance(1, 4)) {  // §HASH.9 prefill on one instance, then every decode step on a fresh one
    std::vector<int64_t> cuts;
    for (int64_t t = rng.In(0, n); t < n; ++t) cuts.push_back(t);
    r["cuts"] = cuts;
  } else {
    r["cuts"] = DrawCuts(rng, n, max_ngram, 5);
  }
  r["ids"] = ids;
  return r;
}

// ------------------------------------------------------------------ build

// The history a recipe's "start" denotes: its position, the last
// min(position, max - 1) of its ids (a shrink step may have lowered max
// n-gram or the position), the layout's fingerprint.
HashHistory StartOf(const ojson& start, const Layout& layout) {
  HashHistory h;
  h.position = start["position"];
  std::vector<int64_t> ids = start["history"].get<std::vector<int64_t>>();
  const size_t need = static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(h.position, 0), layout.max_ngram - 1));
  if (ids.size() < need) throw Error("hash_state recipe: the start history holds fewer ids than its position needs");
  h.ids.assign(ids.end() - static_cast<std::ptrdiff_t>(need), ids.end());
  h.layout_fingerprint = LayoutFingerprint(layout);
  return h;
}

// The recipe's start as used (trimmed to what it needs).
ojson StartJson(const HashHistory& h) { return HistoryJson(h); }

// Cuts made consistent with n ids (a shrink step may have removed ids).
std::vector<size_t> CutsOf(const ojson& cuts, size_t n) {
  std::vector<size_t> out;
  for (const ojson& c : cuts) out.push_back(std::min<size_t>(c.get<size_t>(), n));
  std::sort(out.begin(), out.end());
  return out;
}

int64_t StartMeasure(const HashHistory& h) {
  return 100 * BitLength(static_cast<uint64_t>(std::max<int64_t>(h.position, 0))) + IdsMeasure(h.ids);
}

// A history valid for `layout` with one rule of §HASH.9 broken.
HashHistory Broken(const ojson& r, const Layout& layout) {
  HashHistory h = StartOf(r["start"], layout);
  const std::string brk = r["break"];
  const int64_t v = layout.compressed_vocab_size, excess = r["excess"];
  const size_t at = h.ids.empty() ? 0 : r["at"].get<size_t>() % h.ids.size();
  if (brk == "shortHistory") {
    if (h.ids.empty()) throw Error("hash_state recipe: no id to leave out");
    h.ids.erase(h.ids.begin());
  } else if (brk == "longHistory") {
    h.ids.insert(h.ids.begin(), layout.pad);
  } else if (brk == "idBeyondV" || brk == "negativeId") {
    if (h.ids.empty()) throw Error("hash_state recipe: no id to break");
    h.ids[at] = brk == "idBeyondV" ? v + std::min(excess, kInt64Max - v) : -2 - std::min(excess, kInt64Max - 1);
  } else if (brk == "otherLayout") {
    h.layout_fingerprint = r["fingerprint"];
  } else if (brk == "negativePosition") {
    h.position = -1 - excess;
    h.ids.clear();
  }
  return h;
}

std::string SizeOf(const ojson& r, const std::string& what, int64_t positions, const HashHistory& start) {
  std::string s = what + ", T " + std::to_string(positions);
  if (start.position != 0) s += ", from position " + std::to_string(start.position);
  return s + ", layers " + std::to_string(r["layerIds"].size()) + ", max n-gram " + r["maxNgram"].dump() + ", heads " +
         r["heads"].dump() + ", V " + r["v"].dump();
}

RandomCase BuildHandoff(const ojson& r) {
  const bool v41 = r["profile"] == "v4.1";
  const BuiltLayout& built = LayoutFor(r, v41);
  const Layout& layout = built.layout;
  const std::string fingerprint = LayoutFingerprint(layout);
  RandomCase c;
  c.recipe = r;
  c.type = "HashHandoffTest";
  c.profile = r["profile"];
  c.group = ojson::object();  // key by key, in suite_hash_state.cc's order
  c.group["type"] = c.type;
  c.group["comment"] = "";
  c.group["profile"] = c.profile;
  c.group["config"] = built.config;
  c.group["compressedVocabSize"] = r["v"];
  c.group["compressedPad"] = r["pad"];
  c.group["layers"] = built.layers;
  c.group["layoutFingerprint"] = fingerprint;
  c.test = ojson::object();
  c.measure = LayoutMeasure(r);
  const std::string kind = r["kind"];
  if (kind == "segments") {
    const std::vector<int64_t> ids = r["ids"].get<std::vector<int64_t>>();
    const HashHistory start = StartOf(r["start"], layout);
    const std::vector<size_t> cuts = CutsOf(r["cuts"], ids.size());
    c.spec_refs = {"§HASH.5", "§HASH.9"};
    c.test["ids"] = ids;
    c.test["result"] = "valid";
    c.test["segments"] = HandoffSegments(layout, start, ids, cuts);  // throws for an id §HASH.1 refuses
    c.recipe["start"] = StartJson(start);
    c.recipe["cuts"] = cuts;
    c.size = SizeOf(r, "segments " + std::to_string(cuts.size() + 1), static_cast<int64_t>(ids.size()), start);
    c.measure += IdsMeasure(ids) + StartMeasure(start) + 100000 * static_cast<int64_t>(cuts.size());
  } else if (kind == "microBatches") {
    std::vector<HashHistory> starts;
    std::vector<std::vector<int64_t>> seqs;
    std::vector<std::vector<size_t>> cuts;
    int64_t positions = 0, n_cuts = 0;
    for (size_t i = 0; i < r["sequences"].size(); ++i) {
      const ojson& q = r["sequences"][i];
      starts.push_back(StartOf(q["start"], layout));
      seqs.push_back(q["ids"].get<std::vector<int64_t>>());
      cuts.push_back(CutsOf(q["cuts"], seqs.back().size()));
      c.recipe["sequences"][i]["start"] = StartJson(starts.back());
      c.recipe["sequences"][i]["cuts"] = cuts.back();
      positions += static_cast<int64_t>(seqs.back().size());
      n_cuts += static_cast<int64_t>(cuts.back().size());
      c.measure += 10000000 + IdsMeasure(seqs.back()) + StartMeasure(starts.back());
    }
    c.measure += 100000 * n_cuts;
    c.spec_refs = {"§HASH.5", "§HASH.9"};
    c.test["sequences"] = seqs;
    c.test["result"] = "valid";
    c.test["microBatches"] = HandoffMicroBatches(layout, starts, seqs, cuts);
    HashHistory latest;  // the size names the latest start
    for (const HashHistory& h : starts) latest.position = std::max(latest.position, h.position);
    c.size = SizeOf(r, "sequences " + std::to_string(seqs.size()) + ", micro-batches " +
                           std::to_string(c.test["microBatches"].size()), positions, latest);
  } else {
    const std::vector<int64_t> ids = r["ids"].get<std::vector<int64_t>>();
    const HashHistory bad = Broken(r, layout);
    c.spec_refs = {"§HASH.9"};
    c.test["ids"] = ids;
    c.test["historyIn"] = HistoryToJson(bad);
    c.test["historyInBinary"] = HistoryBinaryHex(bad);
    c.test["result"] = "invalid";
    try {
      HashState::Import(layout, bad);
    } catch (const Error& e) {
      c.test["error"] = e.what();
    }
    if (!c.test.contains("error")) throw Error("hash_state recipe: the broken history imports");
    const HashHistory start = StartOf(r["start"], layout);
    c.recipe["start"] = StartJson(start);
    c.size = SizeOf(r, "bad history (" + r["break"].get<std::string>() + ")", static_cast<int64_t>(ids.size()), start);
    c.measure += IdsMeasure(ids) + StartMeasure(start);
  }
  c.group["comment"] = "random case: " + c.size;
  return c;
}

// ------------------------------------------------------------------ shrink

// Candidates for a "start": none (a sequence start), half the position (its
// history keeps the newest ids), smaller history values (same count).
std::vector<ojson> SmallerStarts(const ojson& start, int64_t pad) {
  std::vector<ojson> out;
  const int64_t position = start["position"];
  if (position == 0) return out;
  ojson none = ojson::object();
  none["position"] = 0;
  none["history"] = ojson::array();
  out.push_back(none);
  ojson half = start;
  half["position"] = position / 2;
  out.push_back(half);
  const std::vector<int64_t> h = start["history"].get<std::vector<int64_t>>();
  for (auto& ids : SmallerIds(h, pad)) {
    if (ids.size() != h.size()) continue;
    ojson c = start;
    c["history"] = ids;
    out.push_back(c);
  }
  return out;
}

// Fewer cuts: each one left out.
std::vector<ojson> FewerCuts(const ojson& cuts) {
  std::vector<ojson> out;
  for (size_t i = 0; i < cuts.size(); ++i) {
    ojson c = cuts;
    c.erase(i);
    out.push_back(c);
  }
  return out;
}

// A smaller V: V / 2 and 2, the pad and every id in [0, V) moved into it
// (the broken id of a bad history is rebuilt from the new V).
std::vector<ojson> ShrinkV(const ojson& r) {
  std::vector<ojson> out;
  const int64_t v = r["v"];
  const int64_t half = std::max<int64_t>(2, v / 2);
  auto under = [&](ojson& list, int64_t nv) { list = UnderV(list.get<std::vector<int64_t>>(), nv, v); };
  for (int64_t nv : {half, int64_t{2}}) {
    if (nv >= v || (nv == 2 && half == 2)) continue;
    ojson c = r;
    c["v"] = nv;
    c["pad"] = r["pad"].get<int64_t>() % nv;
    if (c.contains("ids")) under(c["ids"], nv);
    if (c.contains("start")) under(c["start"]["history"], nv);
    if (c.contains("sequences")) {
      for (ojson& q : c["sequences"]) {
        under(q["ids"], nv);
        under(q["start"]["history"], nv);
      }
    }
    out.push_back(c);
  }
  return out;
}

std::vector<ojson> ShrinkHandoff(const ojson& r) {
  std::vector<ojson> out;
  const int64_t pad = r["pad"];
  const std::string kind = r["kind"];
  if (kind == "microBatches") {
    const ojson& seqs = r["sequences"];
    for (size_t i = 0; seqs.size() > 1 && i < seqs.size(); ++i) {
      ojson c = r;
      c["sequences"].erase(i);
      out.push_back(c);
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
      for (ojson& cuts : FewerCuts(seqs[i]["cuts"])) {
        ojson c = r;
        c["sequences"][i]["cuts"] = cuts;
        out.push_back(c);
      }
      for (auto& ids : SmallerIds(seqs[i]["ids"].get<std::vector<int64_t>>(), pad)) {
        ojson c = r;
        c["sequences"][i]["ids"] = ids;
        out.push_back(c);
      }
      for (ojson& s : SmallerStarts(seqs[i]["start"], pad)) {
        ojson c = r;
        c["sequences"][i]["start"] = s;
        out.push_back(c);
      }
    }
  } else {
    if (kind == "segments") {
      for (ojson& cuts : FewerCuts(r["cuts"])) {
        ojson c = r;
        c["cuts"] = cuts;
        out.push_back(c);
      }
    }
    for (auto& ids : SmallerIds(r["ids"].get<std::vector<int64_t>>(), pad)) {
      ojson c = r;
      c["ids"] = ids;
      out.push_back(c);
    }
    for (ojson& s : SmallerStarts(r["start"], pad)) {
      ojson c = r;
      c["start"] = s;
      out.push_back(c);
    }
  }
  for (ojson& c : ShrinkV(r)) out.push_back(std::move(c));
  for (ojson& c : ShrinkLayout(r)) out.push_back(std::move(c));
  return out;
}

}  // namespace

RandomSuite RandomHashState() {
  return {"hash_state", "hash_state.schema.json", "ENGRAM-HASH-STATE", DrawHandoff, BuildHandoff, ShrinkHandoff};
}

}  // namespace engram::vectors
