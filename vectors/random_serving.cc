// spec/conformance.md §CONF.7 — random cases of the suite serving_v41
// (§HASH.10-§HASH.12): packed calls and speculative drafts, each written in an
// encoding of §CON.7 that carries it.
//
// The recipe: the layout part of random_hash.cc (v4.1, shared by
// kCasesPerLayout consecutive cases), then "kind" ("packed" or "drafts"),
// "requests" (each {"position", "history", "historyUnder", "ids", "under"},
// drafts also "parents" and "accepted", a reset "restarts"), "padding" and
// "paddingUnder", "encoding", "cacheSeed", and for a case that must be
// refused "break" and "at". "history" holds min(position, max n-gram - 1)
// ids; the "...Under" lists the id beneath each DEAD one (§CON.7 item 1).
//
// Distributions. One case in four is drafts. A packed call has 64 requests
// one time in eight (a full captured decode batch: one slot each, none one
// time in 16), else 1..64 log-uniform;
// with 16 or more requests a request decodes one slot three times in four,
// otherwise one time in two, else 0..24 slots (log-uniform, none one time
// in eight); padding 1..8 slots two times in three. Drafts: 1..8 requests of
// 1..8 drafts, a chain one time in two, else every parent drawn among -1 and
// the earlier drafts; the accepted path walks down from -1, each step
// taken one time in two (so 0..k accepted). A request's position: 0 one
// time in four, 1..3 · max n-gram one time in two, else log-uniform up to
// 2^62; ids and histories as DrawIds draws them (DEAD spans), the ids beneath
// DEAD ones uniform below V. The encoding: uniform among those that carry the
// case. One case in 20 breaks a rule: a boundary below the one before it,
// past the buffer, a first boundary above 0, a request slot or a history id
// of V; drafts: a parent after its draft, an accepted step that is not a child.
// Every valid case differs from the naive flatten (§HASH.10): a drawn case
// that does not is drawn again from the same stream.
//
// Policy feature `segment-reset` (§HASH.12): a packed valid case then restarts
// one request in three (of two or more slots) at 0 at a drawn slot, the
// encoding drawn again among engram, vllm and onnxruntime when the drawn one
// cannot carry it; from a stream of its own, so the other draws are the
// default case's.
#include <algorithm>
#include <optional>

#include "base/error.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/random_cases.h"
#include "vectors/random_hash.h"
#include "vectors/serving.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

using Ids = std::vector<int64_t>;

const char* const kPackedBreaks[] = {"decreasingBoundary", "boundaryPastBuffer", "firstBoundary", "slotBeyondV",
                                     "historyBeyondV"};
const char* const kDraftBreaks[] = {"parentAfter", "acceptedNotChild", "slotBeyondV"};

// ids of n slots (DrawIds) and the id beneath each DEAD one.
void DrawSlots(CaseRng& rng, const ojson& r, int64_t n, ojson& ids, ojson& under) {
  const int64_t v = r["v"];
  const Ids drawn = DrawIds(rng, true, v, r["pad"], r["maxNgram"], n);
  Ids beneath = drawn;
  for (int64_t& u : beneath) {
    if (u == kDead) u = rng.Below(v);
  }
  ids = drawn;
  under = beneath;
}

// An object with room for n members: ordered_json's member vector copies its values when it grows.
ojson Room(size_t n) {
  ojson o = ojson::object();
  o.get_ref<ojson::object_t&>().reserve(n);
  return o;
}

ojson DrawRequest(CaseRng& rng, const ojson& r, int64_t slots) {
  const int max_ngram = r["maxNgram"];
  ojson q = Room(8);
  const int64_t pick = rng.Below(4);
  const int64_t position = pick == 0 ? 0 : pick < 3 ? rng.In(1, 3 * max_ngram) : rng.Scaled(1, int64_t{1} << 62);
  q["position"] = position;
  ojson h, hu;
  DrawSlots(rng, r, std::min<int64_t>(position, max_ngram - 1), h, hu);
  q["history"] = std::move(h);
  q["historyUnder"] = std::move(hu);
  ojson ids, under;
  DrawSlots(rng, r, slots, ids, under);
  q["ids"] = std::move(ids);
  q["under"] = std::move(under);
  return q;
}

// The case a recipe describes (its history trimmed to what its position needs, a shrink may have lowered
// either), before any break. Its histories carry no fingerprint: they are of this layout by construction.
ServingCase CaseOf(const ojson& r, const Layout& layout) {
  ServingCase c;
  c.type = r["kind"] == "drafts" ? "DraftTreeTest" : "PackedBatchTest";
  c.encoding = r["encoding"];
  PackedCall& call = c.call;
  call.cu_seqlens = {0};
  const std::string fingerprint;
  for (const ojson& q : r["requests"]) {
    const int64_t position = q["position"];
    const size_t need = static_cast<size_t>(std::min<int64_t>(position, layout.max_ngram - 1));
    const Ids h = q["history"].get<Ids>(), hu = q["historyUnder"].get<Ids>();
    if (h.size() < need || hu.size() != h.size()) throw Error("serving recipe: a history shorter than its position needs");
    call.histories.push_back(HashHistory{position, Ids(h.end() - static_cast<std::ptrdiff_t>(need), h.end()), fingerprint});
    c.history_under.push_back(Ids(hu.end() - static_cast<std::ptrdiff_t>(need), hu.end()));
    const Ids ids = q["ids"].get<Ids>(), under = q["under"].get<Ids>();
    if (under.size() != ids.size()) throw Error("serving recipe: ids and the ids beneath them differ in length");
    std::vector<int64_t> restarts = q.contains("restarts") ? q["restarts"].get<Ids>() : Ids();
    std::vector<int64_t> depth;
    int64_t at = position;
    for (size_t j = 0; j < ids.size(); ++j) {
      call.ids.push_back(ids[j]);
      c.under.push_back(under[j]);
      if (c.type == "DraftTreeTest") {
        const int64_t parent = q["parents"][j];
        call.parents.push_back(parent);
        depth.push_back(parent < 0 || parent >= static_cast<int64_t>(j) ? 0 : depth[static_cast<size_t>(parent)] + 1);
        call.positions.push_back(position + depth.back());
      } else {
        if (std::find(restarts.begin(), restarts.end(), static_cast<int64_t>(j)) != restarts.end() && j > 0) at = 0;
        call.positions.push_back(at++);
      }
    }
    call.cu_seqlens.push_back(static_cast<int64_t>(call.ids.size()));
    if (c.type == "DraftTreeTest") call.accepted.push_back(q["accepted"].get<Ids>());
    if (!restarts.empty()) call.segment_reset = true;
  }
  const Ids padding = r["padding"].get<Ids>(), padding_under = r["paddingUnder"].get<Ids>();
  for (size_t i = 0; i < padding.size(); ++i) {
    call.ids.push_back(padding[i]);
    c.under.push_back(padding_under[i]);
    call.positions.push_back(0);
    if (c.type == "DraftTreeTest") call.parents.push_back(-1);
  }
  return c;
}

// §HASH.10 / §HASH.11 one rule broken, as the recipe says.
void Break(const ojson& r, ServingCase& c) {
  const std::string brk = r["break"];
  PackedCall& call = c.call;
  const size_t at = r["at"].get<size_t>();
  const size_t requests = call.cu_seqlens.size() - 1;
  const int64_t v = r["v"];
  if (brk == "decreasingBoundary") {
    const size_t b = 1 + at % std::max<size_t>(requests, 1);
    if (b >= call.cu_seqlens.size() || call.cu_seqlens[b] == 0) throw Error("serving recipe: no boundary to lower");
    call.cu_seqlens[b] = call.cu_seqlens[b - 1] - 1;
    if (call.cu_seqlens[b] < 0) throw Error("serving recipe: no boundary to lower");
  } else if (brk == "boundaryPastBuffer") {
    call.cu_seqlens.back() = static_cast<int64_t>(call.ids.size()) + 1 + static_cast<int64_t>(at % 4);
  } else if (brk == "firstBoundary") {
    call.cu_seqlens[0] = 1 + static_cast<int64_t>(at % 4);
  } else if (brk == "slotBeyondV") {
    const int64_t n = call.cu_seqlens.back();
    if (n == 0) throw Error("serving recipe: no request slot to break");
    const size_t t = at % static_cast<size_t>(n);
    call.ids[t] = c.under[t] = v;
  } else if (brk == "historyBeyondV") {
    for (size_t k = 0; k < requests; ++k) {
      const size_t r_at = (at + k) % requests;
      if (!call.histories[r_at].ids.empty()) {
        call.histories[r_at].ids.back() = c.history_under[r_at].back() = v;
        return;
      }
    }
    throw Error("serving recipe: no history id to break");
  } else if (brk == "parentAfter") {
    for (size_t k = 0; k < requests; ++k) {
      const size_t q = (at + k) % requests;
      if (call.cu_seqlens[q + 1] > call.cu_seqlens[q]) {
        const size_t t = static_cast<size_t>(call.cu_seqlens[q]);
        call.parents[t] = call.cu_seqlens[q + 1] - call.cu_seqlens[q];  // at or after its own index
        return;
      }
    }
    throw Error("serving recipe: no draft to break");
  } else if (brk == "acceptedNotChild") {
    for (size_t k = 0; k < requests; ++k) {
      const size_t q = (at + k) % requests;
      const int64_t n = call.cu_seqlens[q + 1] - call.cu_seqlens[q];
      const int64_t previous = call.accepted[q].empty() ? -1 : call.accepted[q].back();
      for (int64_t j = 0; j < n; ++j) {
        if (call.parents[static_cast<size_t>(call.cu_seqlens[q] + j)] != previous) {
          call.accepted[q].push_back(j);
          return;
        }
      }
    }
    throw Error("serving recipe: no draft that is not a child");
  } else {
    throw Error("serving recipe: unknown break " + brk);
  }
}

std::string SizeOf(const ojson& r, const ServingCase& c) {
  const PackedCall& call = c.call;
  std::string s = std::string(r["kind"] == "drafts" ? "drafts" : "packed") + ", " + c.encoding + ", requests " +
                  std::to_string(call.cu_seqlens.size() - 1) + ", slots " + std::to_string(call.ids.size());
  const size_t padding = r["padding"].size();
  if (padding > 0) s += " (padding " + std::to_string(padding) + ")";
  return s + ", layers " + std::to_string(r["layerIds"].size()) + ", max n-gram " + r["maxNgram"].dump() + ", heads " +
         r["heads"].dump() + ", V " + r["v"].dump();
}

int64_t EncodingMeasure(const std::string& e) { return e == "engram" ? 0 : int64_t{1} << 50; }

// The case of recipe `r` (moved into the case, which keeps it for shrinking and replays).
RandomCase BuildFrom(ojson r) {
  const BuiltLayout& built = LayoutFor(r, true);
  const Layout& layout = built.layout;
  ServingCase c = CaseOf(r, layout);
  if (!EncodingCarries(c.encoding, c)) throw Error("serving recipe: encoding " + c.encoding + " cannot carry the case");
  const bool invalid = r.contains("break");
  // The slot cache holds the ids as the call has them: laid after a break of an id, before a break of the
  // boundaries (which its addressing cannot follow).
  const bool id_break = invalid && (r["break"] == "slotBeyondV" || r["break"] == "historyBeyondV");
  const uint64_t cache_seed = r["cacheSeed"].get<uint64_t>();
  if (id_break) Break(r, c);
  if (c.encoding == "slotCache") LaySlotCache(layout, c, cache_seed);
  if (invalid && !id_break) Break(r, c);
  RandomCase out;
  out.type = c.type;
  out.profile = "v4.1";
  out.group = ojson::object();
  out.group.get_ref<ojson::object_t&>().reserve(8);  // no copy of the layers as keys are added
  out.group["type"] = out.type;
  out.group["comment"] = "";
  out.group["profile"] = "v4.1";
  out.group["config"] = built.config;
  out.group["compressedVocabSize"] = r["v"];
  out.group["compressedPad"] = r["pad"];
  out.group["layers"] = built.layers;
  out.group["layoutFingerprint"] = built.fingerprint;
  out.spec_refs = {c.type == "DraftTreeTest" ? "§HASH.11" : "§HASH.10", "§CON.7"};
  out.test = ServingInputs(layout, c);
  if (invalid) {
    out.test["result"] = "invalid";
    try {
      ServingReference(layout, ReadServingCase(layout, c.type, nlohmann::json::parse(out.test.dump())));
    } catch (const Error& e) {
      out.test["error"] = e.what();
    }
    if (!out.test.contains("error")) throw Error("serving recipe: the broken case is accepted");
  } else {
    const ServingOutcome outcome = ServingReference(layout, c);
    ojson outputs = ServingOutputs(layout, c, outcome);
    // §HASH.10 the no-leak control: a case the naive flatten passes is no case. Judged on the rows, and as the
    // verifier judges a test: the flatten's outputs on the case as its encoding writes it (a shrink step can
    // leave rows that differ only where the encoding does not carry them).
    const ServingCase seen = AsSeen(layout, c);
    if (!DiffersFromNaiveFlatten(layout, c, outcome.rows) ||
        ServingOutputs(layout, seen, ServingMutantOutcome(layout, seen, ServingMutant::kNaiveFlatten)) == outputs) {
      throw Error("serving recipe: the naive flatten passes the case (§HASH.10 no-leak control)");
    }
    out.test["result"] = "valid";
    for (auto& [k, v] : outputs.items()) out.test[k] = std::move(v);
    if (c.call.segment_reset) out.spec_refs.push_back("§HASH.12");
  }
  out.size = SizeOf(r, c);
  out.group["comment"] = "random case: " + out.size;
  out.measure = LayoutMeasure(r) + EncodingMeasure(c.encoding);
  for (const ojson& q : r["requests"]) {
    out.measure += 10000000 + IdsMeasure(q["ids"].get<Ids>()) + IdsMeasure(q["history"].get<Ids>()) +
                   100 * BitLength(q["position"].get<uint64_t>());
    if (q.contains("restarts")) out.measure += 1000000 * static_cast<int64_t>(q["restarts"].size());
    if (q.contains("parents")) {
      for (const ojson& p : q["parents"]) out.measure += p.get<int64_t>() + 1;
      out.measure += static_cast<int64_t>(q["accepted"].size());
    }
  }
  out.measure += 1000000 * static_cast<int64_t>(r["padding"].size());
  out.recipe = std::move(r);
  return out;
}

RandomCase BuildServing(const ojson& r) { return BuildFrom(r); }

// ------------------------------------------------------------------ draw

// The encodings that carry the case of `r` (r["encoding"] ignored), by §CON.7 item 2 as EncodingCarries
// decides it, read off the recipe: the position-indexed encodings take no drafts and no restart, and at most
// kServingTableWidth positions per request (for the slot cache, the padding's too after the last request).
std::vector<std::string> Carriers(const ojson& r) {
  std::vector<std::string> out = {"engram", "vllm", "onnxruntime"};
  if (r["kind"] == "drafts") return out;
  const ojson& requests = r["requests"];
  int64_t table = 0, cache = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const ojson& q = requests[i];
    if (q.contains("restarts") && !q["restarts"].empty()) return out;
    const int64_t need = q["position"].get<int64_t>() + static_cast<int64_t>(q["ids"].size());
    table = std::max(table, need);
    cache = std::max(cache, need + (i + 1 == requests.size() ? static_cast<int64_t>(r["padding"].size()) : 0));
  }
  if (table <= kServingTableWidth) out.push_back("sglang");
  if (cache <= kServingTableWidth) out.push_back("slotCache");
  return out;
}

ojson DrawOnce(CaseRng& rng, const ojson& layout) {
  ojson r = Room(24);
  for (const auto& [k, v] : layout.items()) r[k] = v;  // the layout part first, as random_hash.cc writes it
  const int max_ngram = r["maxNgram"];
  const bool drafts = rng.Chance(1, 4);
  r["kind"] = drafts ? "drafts" : "packed";
  ojson requests = ojson::array();
  const int64_t n_requests = drafts ? rng.Scaled(1, 8) : rng.Chance(1, 8) ? 64 : rng.Scaled(1, 64);
  for (int64_t i = 0; i < n_requests; ++i) {
    int64_t slots = 0;
    if (drafts) {
      slots = rng.Scaled(1, 8);
    } else if (n_requests == 64) {
      slots = rng.Chance(1, 16) ? 0 : 1;  // a captured decode batch: one slot each, now and then a padded request
    } else {
      const bool decode = n_requests >= 16 ? rng.Below(4) != 0 : rng.Chance(1, 2);
      slots = decode ? 1 : rng.Length(24, 8);
    }
    ojson q = DrawRequest(rng, r, slots);
    if (drafts) {
      const bool chain = rng.Chance(1, 2);
      ojson parents = ojson::array();
      for (int64_t j = 0; j < slots; ++j) parents.push_back(chain ? j - 1 : rng.In(-1, j - 1));
      ojson accepted = ojson::array();
      for (int64_t at = -1;;) {
        std::vector<int64_t> children;
        for (int64_t j = 0; j < slots; ++j) {
          if (parents[static_cast<size_t>(j)] == at) children.push_back(j);
        }
        if (children.empty() || !rng.Chance(1, 2)) break;
        at = children[static_cast<size_t>(rng.Below(static_cast<int64_t>(children.size())))];
        accepted.push_back(at);
      }
      q["parents"] = std::move(parents);
      q["accepted"] = std::move(accepted);
    }
    requests.push_back(std::move(q));
  }
  r["requests"] = std::move(requests);
  ojson padding = ojson::array(), padding_under = ojson::array();
  if (!drafts && rng.Below(3) != 0) DrawSlots(rng, r, rng.Scaled(1, 8), padding, padding_under);
  r["padding"] = std::move(padding);
  r["paddingUnder"] = std::move(padding_under);
  r["cacheSeed"] = rng.Next();
  if (rng.Chance(1, 20)) {
    r["break"] = drafts ? kDraftBreaks[rng.Below(3)] : kPackedBreaks[rng.Below(5)];
    r["at"] = rng.Below(1 << 20);
  }
  const std::vector<std::string> carriers = Carriers(r);
  r["encoding"] = carriers[static_cast<size_t>(rng.Below(static_cast<int64_t>(carriers.size())))];
  (void)max_ngram;
  return r;
}

ojson LayoutPart(uint64_t seed, int64_t index) {
  CaseRng layout_rng(seed, "serving_v41/layout", index / kCasesPerLayout);
  ojson r = DrawLayoutPart(layout_rng, true);
  r["profile"] = "v4.1";
  return r;
}

// Case `index`: drawn, and drawn again from the same stream while the draw builds no case (the control of
// §HASH.10 rules it out, or its break has nothing to break).
RandomCase DrawServingCase(uint64_t seed, int64_t index, const std::set<std::string>& declared) {
  const ojson layout = LayoutPart(seed, index);
  CaseRng rng(seed, "serving_v41", index);
  for (int attempt = 0; attempt < 64; ++attempt) {
    ojson r = DrawOnce(rng, layout);
    if (declared.count("segment-reset") && r["kind"] == "packed" && !r.contains("break")) {
      // §HASH.12 the policy: restarts from a stream of their own, so the other draws are the default case's
      CaseRng resets(seed, "serving_v41/segment-reset", index);
      ojson with = r;
      bool any = false;
      for (ojson& q : with["requests"]) {
        const int64_t n = static_cast<int64_t>(q["ids"].size());
        if (n < 2 || !resets.Chance(1, 3)) continue;
        q["restarts"] = ojson::array({resets.In(1, n - 1)});
        any = true;
      }
      if (any) {
        const std::vector<std::string> carriers = Carriers(with);
        if (std::find(carriers.begin(), carriers.end(), with["encoding"].get<std::string>()) == carriers.end()) {
          with["encoding"] = carriers[static_cast<size_t>(resets.Below(static_cast<int64_t>(carriers.size())))];
        }
        try {
          return BuildFrom(std::move(with));
        } catch (const Error&) {
          // the restarts make a case the control rules out: the default case stands
        }
      }
    }
    try {
      return BuildFrom(std::move(r));
    } catch (const Error&) {
      // drawn again
    }
  }
  throw Error("generator bug: serving_v41 case " + std::to_string(index) + " of seed " + std::to_string(seed) +
              ": no buildable case in 64 draws");
}

ojson DrawServing(uint64_t seed, int64_t index) { return DrawServingCase(seed, index, {}).recipe; }

// ------------------------------------------------------------------ shrink

// Smaller (ids, beneath) pairs: halves, one slot fewer, smaller values (the beneath follows the id).
std::vector<std::pair<ojson, ojson>> SmallerSlots(const ojson& ids, const ojson& under, int64_t pad) {
  std::vector<std::pair<ojson, ojson>> out;
  const size_t n = ids.size();
  auto cut = [&](size_t from, size_t to) {
    ojson a = ojson::array(), b = ojson::array();
    for (size_t i = from; i < to; ++i) a.push_back(ids[i]), b.push_back(under[i]);
    return std::make_pair(a, b);
  };
  if (n == 0) return out;
  out.push_back(cut(0, n / 2));
  out.push_back(cut(n / 2, n));
  for (size_t i = 0; i < n && i < 24; ++i) {
    ojson a = ids, b = under;
    a.erase(i);
    b.erase(i);
    out.emplace_back(a, b);
  }
  for (size_t i = 0; i < n && i < 24; ++i) {
    const int64_t id = ids[i];
    if (id == kDead || id == 0) continue;
    ojson a = ids, b = under;
    a[i] = b[i] = id == pad ? 0 : pad;
    out.emplace_back(a, b);
  }
  return out;
}

std::vector<ojson> ShrinkServing(const ojson& r) {
  std::vector<ojson> out;
  const int64_t pad = r["pad"];
  const ojson& requests = r["requests"];
  if (r["encoding"] != "engram") {
    ojson c = r;
    c["encoding"] = "engram";
    out.push_back(c);
  }
  for (size_t i = 0; requests.size() > 1 && i < requests.size(); ++i) {
    ojson c = r;
    c["requests"].erase(i);
    out.push_back(c);
  }
  if (!r["padding"].empty()) {
    ojson c = r;
    c["padding"] = ojson::array();
    c["paddingUnder"] = ojson::array();
    out.push_back(c);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    const ojson& q = requests[i];
    if (q.contains("restarts")) {
      ojson c = r;
      c["requests"][i].erase("restarts");
      out.push_back(c);
    }
    if (q.contains("parents")) {
      const size_t k = q["ids"].size();
      if (k > 0) {  // the last draft fewer (no later draft names it); the accepted path cut before it
        ojson c = r;
        ojson& cq = c["requests"][i];
        cq["ids"].erase(k - 1);
        cq["under"].erase(k - 1);
        cq["parents"].erase(k - 1);
        ojson accepted = ojson::array();
        for (const ojson& a : q["accepted"]) {
          if (a.get<size_t>() == k - 1) break;
          accepted.push_back(a);
        }
        cq["accepted"] = accepted;
        out.push_back(c);
      }
      bool chain = true;
      for (size_t j = 0; j < k; ++j) chain = chain && q["parents"][j].get<int64_t>() == static_cast<int64_t>(j) - 1;
      if (!chain) {  // a chain, its accepted path the prefix of the same length
        ojson c = r;
        ojson& cq = c["requests"][i];
        ojson parents = ojson::array(), accepted = ojson::array();
        for (size_t j = 0; j < k; ++j) parents.push_back(static_cast<int64_t>(j) - 1);
        for (size_t j = 0; j < q["accepted"].size(); ++j) accepted.push_back(j);
        cq["parents"] = parents;
        cq["accepted"] = accepted;
        out.push_back(c);
      }
      if (!q["accepted"].empty()) {
        ojson c = r;
        c["requests"][i]["accepted"].erase(q["accepted"].size() - 1);
        out.push_back(c);
      }
    } else if (q.contains("restarts")) {
      // §HASH.12 one slot fewer, each restart kept on the slot it was on; values made smaller, same length
      const size_t n = q["ids"].size();
      for (size_t j = 0; j < n; ++j) {
        ojson c = r;
        ojson& cq = c["requests"][i];
        cq["ids"].erase(j);
        cq["under"].erase(j);
        ojson restarts = ojson::array();
        for (const ojson& at : q["restarts"]) {
          const size_t moved = at.get<size_t>() - (j < at.get<size_t>() ? 1 : 0);
          if (moved > 0 && moved < n - 1 && j != at.get<size_t>()) restarts.push_back(moved);
        }
        if (restarts.empty()) cq.erase("restarts");
        else cq["restarts"] = restarts;
        out.push_back(c);
      }
      for (auto& [ids, under] : SmallerSlots(q["ids"], q["under"], pad)) {
        if (ids.size() != n) continue;
        ojson c = r;
        c["requests"][i]["ids"] = ids;
        c["requests"][i]["under"] = under;
        out.push_back(c);
      }
    } else {
      for (auto& [ids, under] : SmallerSlots(q["ids"], q["under"], pad)) {
        ojson c = r;
        c["requests"][i]["ids"] = ids;
        c["requests"][i]["under"] = under;
        out.push_back(c);
      }
    }
    const int64_t position = q["position"];
    if (position > 0) {
      for (int64_t p : {int64_t{0}, position / 2}) {
        ojson c = r;
        c["requests"][i]["position"] = p;
        if (p == 0) c["requests"][i]["history"] = c["requests"][i]["historyUnder"] = ojson::array();
        out.push_back(c);
      }
    }
  }
  // A smaller V: every id in [0, V) moved into it.
  const int64_t v = r["v"];
  const int64_t half = std::max<int64_t>(2, v / 2);
  if (half < v) {
    ojson c = r;
    c["v"] = half;
    c["pad"] = r["pad"].get<int64_t>() % half;
    auto under = [&](ojson& list) { list = UnderV(list.get<Ids>(), half, v); };
    for (ojson& q : c["requests"]) {
      for (const char* k : {"ids", "under", "history", "historyUnder"}) under(q[k]);
    }
    under(c["padding"]);
    under(c["paddingUnder"]);
    out.push_back(c);
  }
  for (ojson& c : ShrinkLayout(r)) out.push_back(std::move(c));
  return out;
}

}  // namespace

RandomSuite RandomServing() {
  RandomSuite s{"serving_v41", "serving.schema.json", "ENGRAM-SERVING", DrawServing, BuildServing, ShrinkServing};
  s.features = {"segment-reset"};
  s.draw_declared = [](uint64_t seed, int64_t index, const std::set<std::string>& declared) {
    return DrawServingCase(seed, index, declared).recipe;
  };
  s.draw_case = DrawServingCase;
  return s;
}

}  // namespace engram::vectors
