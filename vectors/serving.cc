// spec/hash.md §HASH.10-§HASH.12, spec/contract.md §CON.7 — suite serving_v41's
// test format, the reference's outcome and the call-shape bugs' outcomes.
#include "vectors/serving.h"

#include <algorithm>
#include <map>

#include "base/error.h"
#include "base/splitmix64.h"

namespace engram::vectors {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int64_t>;

size_t Requests(const PackedCall& call) { return call.cu_seqlens.empty() ? 0 : call.cu_seqlens.size() - 1; }
size_t Begin(const PackedCall& call, size_t r) { return static_cast<size_t>(call.cu_seqlens[r]); }
size_t End(const PackedCall& call, size_t r) { return static_cast<size_t>(call.cu_seqlens[r + 1]); }
size_t Window(const Layout& layout) { return static_cast<size_t>(layout.max_ngram - 1); }
bool Drafts(const ServingCase& c) { return c.type == "DraftTreeTest"; }
bool MaskCarried(const std::string& encoding) { return encoding == "vllm" || encoding == "slotCache"; }

Ids Tail(const Ids& v, size_t n) { return Ids(v.end() - static_cast<std::ptrdiff_t>(std::min(n, v.size())), v.end()); }

// §HASH.12 The slot where request r's last segment starts (its first slot without a restart).
size_t LastSegment(const ServingCase& c, size_t r) {
  size_t from = Begin(c.call, r);
  for (size_t t = from + 1; c.call.segment_reset && t < End(c.call, r); ++t) {
    if (c.call.positions[t] == 0) from = t;
  }
  return from;
}

// §HASH.11 Draft j's path, root first (indices within the request).
std::vector<size_t> PathTo(const ServingCase& c, size_t r, size_t j) {
  std::vector<size_t> path;
  for (int64_t at = static_cast<int64_t>(j); at >= 0; at = c.call.parents[Begin(c.call, r) + static_cast<size_t>(at)]) {
    path.insert(path.begin(), static_cast<size_t>(at));
  }
  return path;
}

// The slots request r consumes, in order: its slots (its last segment's, §HASH.12) or its accepted path.
std::vector<size_t> Consumed(const ServingCase& c, size_t r) {
  std::vector<size_t> out;
  if (Drafts(c)) {
    for (int64_t a : c.call.accepted[r]) out.push_back(Begin(c.call, r) + static_cast<size_t>(a));
  } else {
    for (size_t t = LastSegment(c, r); t < End(c.call, r); ++t) out.push_back(t);
  }
  return out;
}

// Whether request r's consumed slots continue its history (no restart).
bool ContinuesHistory(const ServingCase& c, size_t r) { return Drafts(c) || LastSegment(c, r) == Begin(c.call, r); }

// The id beneath slot t / history entry i: its own id unless DEAD, then what the case knows (-1: nothing).
int64_t UnderSlot(const ServingCase& c, size_t t) {
  return c.call.ids[t] != kDead || t >= c.under.size() ? c.call.ids[t] : c.under[t];
}
int64_t UnderHistory(const ServingCase& c, size_t r, size_t i) {
  const Ids& h = c.call.histories[r].ids;
  return h[i] != kDead || r >= c.history_under.size() || i >= c.history_under[r].size() ? h[i] : c.history_under[r][i];
}

// A request's state after the call from the ids it holds then consumed: (ids, beneath) lists of one length,
// the position after, the writes.
ServingRequestOut StateOut(const Layout& layout, int64_t position, const Ids& ids, const Ids& under) {
  ServingRequestOut o;
  o.position = position;
  const size_t n = static_cast<size_t>(std::min<int64_t>(position, layout.max_ngram - 1));
  o.ids = Tail(ids, n);
  o.under = Tail(under, n);
  if (o.ids.size() != n) throw Error("serving: a state at position " + std::to_string(position) + " holds too few ids");
  return o;
}

// The history's ids and their beneath, then the consumed slots' (`mask_off`: every masked slot read as its id).
void SeenIds(const ServingCase& c, size_t r, bool with_history, const std::vector<size_t>& slots, bool mask_off,
             Ids& ids, Ids& under) {
  ids.clear();
  under.clear();
  if (with_history) {
    for (size_t i = 0; i < c.call.histories[r].ids.size(); ++i) {
      const int64_t u = UnderHistory(c, r, i);
      ids.push_back(mask_off ? u : c.call.histories[r].ids[i]);
      under.push_back(u);
    }
  }
  for (size_t t : slots) {
    const int64_t u = UnderSlot(c, t);
    ids.push_back(mask_off ? u : c.call.ids[t]);
    under.push_back(u);
  }
}

// §HASH.2-§HASH.4 written out once more, for the bugs: the rows of seen[from ...], each window reading `seen`
// (its own slot from `own` when given), seen[0] at position `first`.
void HashWindows(const Layout& layout, const Ids& seen, int64_t first, size_t from, const Ids* own, Ids& rows) {
  const int w = layout.max_ngram;
  Ids tok(static_cast<size_t>(w));
  for (size_t i = from; i < seen.size(); ++i) {
    bool blocked = false;
    for (int s = 0; s < w; ++s) {
      const bool before = static_cast<uint64_t>(first) + i < static_cast<uint64_t>(s);
      const int64_t x = before ? layout.pad : (s == 0 && own != nullptr ? (*own)[i] : seen[i - static_cast<size_t>(s)]);
      blocked = blocked || before || x == kDead;
      tok[static_cast<size_t>(s)] = blocked ? layout.pad : x;
    }
    for (const LayerLayout& l : layout.layers) {
      uint64_t rolling = static_cast<uint64_t>(tok[0]) * static_cast<uint64_t>(l.multipliers[0]);
      for (int k = 1; k < w; ++k) {
        rolling ^= static_cast<uint64_t>(tok[static_cast<size_t>(k)]) * static_cast<uint64_t>(l.multipliers[static_cast<size_t>(k)]);
        for (int h = 0; h < layout.heads; ++h) {
          const int col = (k - 1) * layout.heads + h;
          const int64_t p = l.prime(col);
          int64_t res = static_cast<int64_t>(rolling) % p;
          if (res < 0) res += p;
          rows.push_back(res + l.offsets[static_cast<size_t>(col)]);
        }
      }
    }
  }
}

// Rows of request r's slots, each window over (history as `with_history` says, then the slots before it on its
// way: the request's order, its segment, or its draft path), for the bugs that keep the request apart.
void RequestRows(const Layout& layout, const ServingCase& c, size_t r, bool with_history, bool mask_off, Ids& rows) {
  const HashHistory& h = c.call.histories[r];
  const int64_t first = with_history ? h.position - static_cast<int64_t>(h.ids.size()) : 0;
  const size_t skip = with_history ? h.ids.size() : 0;
  auto one = [&](const std::vector<size_t>& slots, size_t from_slot, const Ids* own_slots) {
    Ids seen, under;
    SeenIds(c, r, with_history, slots, mask_off, seen, under);
    Ids own;
    if (own_slots != nullptr) {
      own = seen;
      for (size_t i = 0; i < slots.size(); ++i) own[skip + i] = (*own_slots)[slots[i]];
    }
    HashWindows(layout, seen, first, skip + from_slot, own_slots ? &own : nullptr, rows);
  };
  if (Drafts(c)) {
    for (size_t j = 0; Begin(c.call, r) + j < End(c.call, r); ++j) {
      std::vector<size_t> path;
      for (size_t a : PathTo(c, r, j)) path.push_back(Begin(c.call, r) + a);
      one(path, path.size() - 1, mask_off ? &c.call.ids : nullptr);
    }
    return;
  }
  // Segments (§HASH.12): the first continues the history, each later one starts fresh.
  size_t from = Begin(c.call, r);
  for (size_t t = from; t <= End(c.call, r); ++t) {
    if (t == End(c.call, r) || (t > from && c.call.segment_reset && c.call.positions[t] == 0)) {
      std::vector<size_t> slots;
      for (size_t u = from; u < t; ++u) slots.push_back(u);
      if (from == Begin(c.call, r)) {
        one(slots, 0, mask_off ? &c.call.ids : nullptr);
      } else {
        Ids seen, under;
        SeenIds(c, r, false, slots, mask_off, seen, under);
        Ids own = seen;
        for (size_t i = 0; i < slots.size(); ++i) own[i] = c.call.ids[slots[i]];
        HashWindows(layout, seen, 0, 0, mask_off ? &own : nullptr, rows);
      }
      from = t;
    }
  }
}

// The (position, id) writes of request r's consumed slots (the slot cache's state), ids as written.
std::vector<std::pair<int64_t, int64_t>> Writes(const ServingCase& c, size_t r, bool mask_off) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (Drafts(c)) return out;
  for (size_t t = Begin(c.call, r); t < End(c.call, r); ++t) {
    out.emplace_back(c.call.positions[t], mask_off ? UnderSlot(c, t) : c.call.ids[t]);
  }
  return out;
}

int64_t SlotOf(const ServingCase& c, size_t r, int64_t position) {
  if (position < 0 || c.block_size <= 0) throw Error("slotCache: position " + std::to_string(position) + " has no slot");
  const size_t block = static_cast<size_t>(position / c.block_size);
  if (r >= c.block_table.size() || block >= c.block_table[r].size()) {
    throw Error("blockTable[" + std::to_string(r) + "]: holds no block for position " + std::to_string(position));
  }
  const int64_t physical = c.block_table[r][block];
  const int64_t slot = physical * c.block_size + position % c.block_size;
  if (physical < 0 || slot < 0 || static_cast<size_t>(slot) >= c.cache.size()) {
    throw Error("blockTable[" + std::to_string(r) + "][" + std::to_string(block) + "] = " + std::to_string(physical) +
                ": outside the slot cache of " + std::to_string(c.cache.size()) + " slots");
  }
  return slot;
}

Ids IntList(const json& test, const char* key) {
  if (!test.contains(key) || !test[key].is_array()) throw Error(std::string(key) + ": missing or not a list");
  return test[key].get<Ids>();
}

std::vector<Ids> IntLists(const json& test, const char* key) {
  if (!test.contains(key) || !test[key].is_array()) throw Error(std::string(key) + ": missing or not a list");
  return test[key].get<std::vector<Ids>>();
}

// A request's position before the call, in the encodings that carry none: its first slot's (§CON.7).
std::optional<int64_t> FirstPosition(const PackedCall& call, size_t r) {
  const int64_t b = call.cu_seqlens[r], e = call.cu_seqlens[r + 1];
  if (b >= e) return std::nullopt;
  if (b < 0 || static_cast<size_t>(b) >= call.positions.size()) {
    throw Error("cuSeqlens[" + std::to_string(r) + "] = " + std::to_string(b) + ": no slot of the buffer");
  }
  return call.positions[static_cast<size_t>(b)];
}

}  // namespace

std::string ServingMutantFlag(ServingMutant m) {
  switch (m) {
    case ServingMutant::kCrossRequestLeak: return "CrossRequestLeak";
    case ServingMutant::kRestartEachCall: return "RestartEachCall";
    case ServingMutant::kPaddingWritesState: return "PaddingWritesState";
    case ServingMutant::kRejectedDraftsKept: return "RejectedDraftsKept";
    case ServingMutant::kMaskNotAppliedToHistory: return "MaskNotAppliedToHistory";
    case ServingMutant::kNaiveFlatten: return "";
  }
  return "";
}

std::string ServingMutantBug(ServingMutant m) {
  switch (m) {
    case ServingMutant::kCrossRequestLeak: return "cross-request-leak";
    case ServingMutant::kRestartEachCall: return "restart-each-call";
    case ServingMutant::kPaddingWritesState: return "padding-writes-state";
    case ServingMutant::kRejectedDraftsKept: return "rejected-drafts-kept";
    case ServingMutant::kMaskNotAppliedToHistory: return "mask-not-applied-to-history";
    case ServingMutant::kNaiveFlatten: return "naive-flatten";
  }
  return "";
}

bool EncodingCarries(const std::string& encoding, const ServingCase& c) {
  if (encoding != "sglang" && encoding != "slotCache") return true;
  if (Drafts(c)) return false;  // §CON.7 item 2: siblings share a position
  const PackedCall& call = c.call;
  const size_t padding = call.ids.size() - static_cast<size_t>(call.cu_seqlens.back());
  for (size_t r = 0; r < Requests(call); ++r) {
    if (!ContinuesHistory(c, r) || LastSegment(c, r) != Begin(call, r)) return false;  // a restart reuses positions
    int64_t need = call.histories[r].position + static_cast<int64_t>(End(call, r) - Begin(call, r));
    if (encoding == "slotCache" && r + 1 == Requests(call)) need += static_cast<int64_t>(padding);
    if (need > kServingTableWidth) return false;
  }
  return true;
}

void LaySlotCache(const Layout& layout, ServingCase& c, uint64_t seed) {
  SplitMix64 rng{seed};
  const PackedCall& call = c.call;
  c.block_size = 2 + static_cast<int64_t>(rng.Next() % 3);
  const size_t padding = call.ids.size() - static_cast<size_t>(call.cu_seqlens.back());
  std::vector<size_t> blocks_of;
  size_t total = 0;
  for (size_t r = 0; r < Requests(call); ++r) {
    int64_t need = call.histories[r].position + static_cast<int64_t>(End(call, r) - Begin(call, r));
    if (r + 1 == Requests(call)) need += static_cast<int64_t>(padding);  // room for a port that writes the padding
    blocks_of.push_back(static_cast<size_t>((std::max<int64_t>(need, 1) + c.block_size - 1) / c.block_size));
    total += blocks_of.back();
  }
  const size_t physical_blocks = total + 1 + static_cast<size_t>(rng.Next() % 2);  // a free block or two
  std::vector<int64_t> order(physical_blocks);
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Next() % i]);
  c.block_table.assign(Requests(call), Ids());
  size_t next = 0;
  for (size_t r = 0; r < Requests(call); ++r) {
    for (size_t b = 0; b < blocks_of[r]; ++b) c.block_table[r].push_back(order[next++]);
  }
  // Other requests' ids and old positions: ids of the layout, now and then DEAD.
  c.cache.resize(physical_blocks * static_cast<size_t>(c.block_size));
  for (int64_t& slot : c.cache) {
    const uint64_t x = rng.Next();
    slot = x % 8 == 0 ? kDead : static_cast<int64_t>((x >> 3) % static_cast<uint64_t>(layout.compressed_vocab_size));
  }
  for (size_t r = 0; r < Requests(call); ++r) {
    const HashHistory& h = call.histories[r];
    for (size_t i = 0; i < h.ids.size(); ++i) {
      c.cache[static_cast<size_t>(SlotOf(c, r, h.position - static_cast<int64_t>(h.ids.size() - i)))] = h.ids[i];
    }
  }
  c.slot_mapping.assign(call.ids.size(), -1);
  for (size_t r = 0; r < Requests(call); ++r) {
    for (size_t t = Begin(call, r); t < End(call, r); ++t) c.slot_mapping[t] = SlotOf(c, r, call.positions[t]);
  }
}

// An object whose keys are added one by one without copying the large values already in it: ordered_json keeps
// its members in a vector whose growth copies them (the key is const).
ojson Members(size_t n) {
  ojson o = ojson::object();
  o.get_ref<ojson::object_t&>().reserve(n);
  return o;
}

// §HASH.9 {"position", "history"}, built member by member (an initializer list copies each value once more).
ojson HistoryObject(int64_t position, const Ids& ids) {
  ojson h = Members(2);
  h["position"] = position;
  h["history"] = ids;
  return h;
}

ojson ServingInputs(const Layout& layout, const ServingCase& c) {
  const PackedCall& call = c.call;
  const size_t w = Window(layout);
  ojson o = Members(16);
  o["encoding"] = c.encoding;
  if (MaskCarried(c.encoding)) {
    Ids ids;
    std::vector<bool> dead;
    for (size_t t = 0; t < call.ids.size(); ++t) {
      dead.push_back(call.ids[t] == kDead);
      ids.push_back(UnderSlot(c, t));
    }
    o["ids"] = ids;
    o["deadMask"] = dead;
  } else {
    o["ids"] = call.ids;
  }
  o["cuSeqlens"] = call.cu_seqlens;
  o["positions"] = call.positions;
  if (Drafts(c)) {
    o["parents"] = call.parents;
    o["accepted"] = call.accepted;
  }
  const size_t requests = Requests(call);
  if (c.encoding == "engram") {
    ojson& in = o["historyIn"] = ojson::array();
    for (const HashHistory& h : call.histories) in.push_back(HistoryObject(h.position, h.ids));
  } else if (c.encoding == "vllm") {
    std::vector<Ids> ids(requests, Ids(w, -1));
    std::vector<std::vector<bool>> dead(requests, std::vector<bool>(w, false));
    for (size_t r = 0; r < requests; ++r) {
      const Ids& h = call.histories[r].ids;
      for (size_t col = 0; col < h.size(); ++col) {  // column c: position P - 1 - c, newest first
        const size_t i = h.size() - 1 - col;
        ids[r][col] = UnderHistory(c, r, i);
        dead[r][col] = h[i] == kDead;
      }
    }
    o["lookbackTokenIds"] = ids;
    o["lookbackDeadMask"] = dead;
  } else if (c.encoding == "onnxruntime") {
    std::vector<Ids> past(requests, Ids(w, layout.pad));
    for (size_t r = 0; r < requests; ++r) {
      const Ids& h = call.histories[r].ids;
      std::copy(h.begin(), h.end(), past[r].end() - static_cast<std::ptrdiff_t>(h.size()));
    }
    o["pastIds"] = past;
  } else if (c.encoding == "sglang") {
    // The slots each request owns, as far as the boundaries say (a case that must be refused may break them).
    auto owned = [&](size_t r) {
      const int64_t b = std::max<int64_t>(call.cu_seqlens[r], 0);
      const int64_t e = std::min<int64_t>(call.cu_seqlens[r + 1], static_cast<int64_t>(call.ids.size()));
      return std::make_pair(static_cast<size_t>(b), static_cast<size_t>(std::max(b, e)));
    };
    int64_t width = 1;
    for (size_t r = 0; r < requests; ++r) {
      width = std::max(width, call.histories[r].position);
      const auto [b, e] = owned(r);
      for (size_t t = b; t < e; ++t) width = std::max(width, call.positions[t] + 1);
    }
    if (width > 4 * kServingTableWidth) throw Error("serving: the sglang table would hold " + std::to_string(width) + " positions");
    std::vector<Ids> table(requests, Ids(static_cast<size_t>(width), kDead));
    for (size_t r = 0; r < requests; ++r) {
      const HashHistory& h = call.histories[r];
      for (size_t i = 0; i < h.ids.size(); ++i) table[r][static_cast<size_t>(h.position) - h.ids.size() + i] = h.ids[i];
      const auto [b, e] = owned(r);
      for (size_t t = b; t < e; ++t) {
        if (call.positions[t] >= 0) table[r][static_cast<size_t>(call.positions[t])] = call.ids[t];
      }
    }
    o["tokenTable"] = table;
  } else if (c.encoding == "slotCache") {
    o["blockSize"] = c.block_size;
    o["blockTable"] = c.block_table;
    o["slotMapping"] = c.slot_mapping;
    o["slotCache"] = c.cache;
  } else {
    throw Error("serving: unknown encoding " + c.encoding);
  }
  return o;
}

// §HASH.4 rows[slot][layer][col] as JSON, built in place (no nested vectors on the way: a packed call has many).
ojson RowsJson(const Layout& layout, const Ids& rows) {
  const size_t cols = static_cast<size_t>(layout.columns()), layers = layout.layers.size();
  ojson out = ojson::array();
  if (cols == 0 || layers == 0) return out;
  out.get_ref<ojson::array_t&>().reserve(rows.size() / (layers * cols));
  for (size_t at = 0; at + layers * cols <= rows.size(); at += layers * cols) {
    ojson& slot = out.emplace_back(ojson::array());
    slot.get_ref<ojson::array_t&>().reserve(layers);
    for (size_t l = 0; l < layers; ++l) {
      ojson& layer = slot.emplace_back(ojson::array());
      ojson::array_t& values = layer.get_ref<ojson::array_t&>();
      values.reserve(cols);
      for (size_t k = 0; k < cols; ++k) values.emplace_back(rows[at + l * cols + k]);
    }
  }
  return out;
}

ojson ServingOutputs(const Layout& layout, const ServingCase& c, const ServingOutcome& outcome) {
  const size_t w = Window(layout);
  ojson o = Members(4);
  o["rows"] = RowsJson(layout, outcome.rows);
  const size_t requests = outcome.requests.size();
  if (c.encoding == "engram") {
    ojson& out = o["historyOut"] = ojson::array();
    for (const ServingRequestOut& q : outcome.requests) out.push_back(HistoryObject(q.position, q.ids));
  } else if (c.encoding == "vllm") {
    std::vector<Ids> ids(requests, Ids(w, -1));
    std::vector<std::vector<bool>> dead(requests, std::vector<bool>(w, false));
    for (size_t r = 0; r < requests; ++r) {
      const ServingRequestOut& q = outcome.requests[r];
      for (size_t col = 0; col < q.ids.size(); ++col) {
        const size_t i = q.ids.size() - 1 - col;
        ids[r][col] = q.ids[i] == kDead ? q.under[i] : q.ids[i];
        dead[r][col] = q.ids[i] == kDead;
      }
    }
    o["lookbackTokenIdsOut"] = ids;
    o["lookbackDeadMaskOut"] = dead;
  } else if (c.encoding == "onnxruntime") {
    std::vector<Ids> present(requests, Ids(w, layout.pad));
    for (size_t r = 0; r < requests; ++r) {
      const Ids& h = outcome.requests[r].ids;
      std::copy(h.begin(), h.end(), present[r].end() - static_cast<std::ptrdiff_t>(h.size()));
    }
    o["presentIds"] = present;
  } else if (c.encoding == "slotCache") {
    Ids cache = c.cache;
    for (size_t r = 0; r < requests; ++r) {
      for (const auto& [position, id] : outcome.requests[r].writes) cache[static_cast<size_t>(SlotOf(c, r, position))] = id;
    }
    o["slotCacheOut"] = cache;
  }
  return o;
}

ServingCase ReadServingCase(const Layout& layout, const std::string& type, const json& test) {
  ServingCase c;
  c.type = type;
  if (!test.contains("encoding") || !test["encoding"].is_string()) throw Error("encoding: missing or not a string");
  c.encoding = test["encoding"].get<std::string>();
  if (std::find(std::begin(kServingEncodings), std::end(kServingEncodings), c.encoding) == std::end(kServingEncodings)) {
    throw Error("encoding: " + json(c.encoding).dump() + " is none of §CON.7's");
  }
  PackedCall& call = c.call;
  call.ids = IntList(test, "ids");
  c.under = call.ids;
  if (MaskCarried(c.encoding)) {
    if (!test.contains("deadMask") || !test["deadMask"].is_array() || test["deadMask"].size() != call.ids.size()) {
      throw Error("deadMask: missing, or not one entry per slot");
    }
    for (size_t t = 0; t < call.ids.size(); ++t) {
      if (test["deadMask"][t].get<bool>()) call.ids[t] = kDead;
    }
  } else {
    for (int64_t& u : c.under) u = u == kDead ? -1 : u;  // the id beneath is not carried
  }
  call.cu_seqlens = IntList(test, "cuSeqlens");
  call.positions = IntList(test, "positions");
  if (call.cu_seqlens.empty()) throw Error("cuSeqlens: empty");
  // §HASH.12 A restart at 0 is a reset: no case restarts a position unless the policy was declared, so
  // reading every case under it changes nothing else.
  call.segment_reset = type == "PackedBatchTest";
  if (type == "DraftTreeTest") {
    call.parents = IntList(test, "parents");
    call.accepted = IntLists(test, "accepted");
  }
  const size_t requests = call.cu_seqlens.size() - 1;
  const size_t w = Window(layout);
  call.histories.assign(requests, HashHistory{0, {}, LayoutFingerprint(layout)});
  c.history_under.assign(requests, Ids());
  auto at = [&](size_t r, int64_t position, const Ids& ids) {  // a history from its position and ids
    call.histories[r].position = position;
    call.histories[r].ids = ids;
  };
  if (c.encoding == "engram") {
    if (!test.contains("historyIn") || !test["historyIn"].is_array() || test["historyIn"].size() != requests) {
      throw Error("historyIn: missing, or not one history per request");
    }
    for (size_t r = 0; r < requests; ++r) {
      const json& h = test["historyIn"][r];
      if (!h.is_object() || !h.contains("position") || !h.contains("history")) {
        throw Error("historyIn[" + std::to_string(r) + "]: not {position, history}");
      }
      at(r, h["position"].get<int64_t>(), h["history"].get<Ids>());
      c.history_under[r] = call.histories[r].ids;
    }
  } else if (c.encoding == "vllm" || c.encoding == "onnxruntime") {
    const bool vllm = c.encoding == "vllm";
    const std::vector<Ids> window = IntLists(test, vllm ? "lookbackTokenIds" : "pastIds");
    if (window.size() != requests) throw Error(std::string(vllm ? "lookbackTokenIds" : "pastIds") + ": not one row per request");
    std::vector<std::vector<bool>> dead(requests, std::vector<bool>(w, false));
    if (vllm) dead = test.at("lookbackDeadMask").get<std::vector<std::vector<bool>>>();
    for (size_t r = 0; r < requests; ++r) {
      if (window[r].size() != w || dead.size() != requests || dead[r].size() != w) {
        throw Error(std::string(vllm ? "lookbackTokenIds" : "pastIds") + "[" + std::to_string(r) + "]: not max_ngram - 1 = " +
                    std::to_string(w) + " entries (or its mask is not)");
      }
      // The position: the request's first slot's; an empty request hands its window on as it came, so any
      // position that keeps the window whole does (§CON.7).
      size_t known = w;
      if (vllm) {
        known = 0;
        while (known < w && window[r][known] != -1) ++known;  // -1: before the start
      }
      const int64_t position = FirstPosition(call, r).value_or(static_cast<int64_t>(known));
      const size_t h = static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(position, 0), static_cast<int64_t>(w)));
      Ids ids(h), under(h);
      for (size_t i = 0; i < h; ++i) {
        if (vllm) {
          const size_t col = h - 1 - i;
          if (window[r][col] == -1) {
            throw Error("lookbackTokenIds[" + std::to_string(r) + "][" + std::to_string(col) + "] = -1 (not known) at position " +
                        std::to_string(position - 1 - static_cast<int64_t>(col)) + ", which the request's windows read");
          }
          under[i] = window[r][col];
          ids[i] = dead[r][col] ? kDead : window[r][col];
        } else {
          ids[i] = under[i] = window[r][w - h + i];
          if (ids[i] == kDead) under[i] = -1;
        }
      }
      at(r, position, ids);
      c.history_under[r] = under;
    }
  } else if (c.encoding == "sglang") {
    const std::vector<Ids> table = IntLists(test, "tokenTable");
    if (table.size() != requests) throw Error("tokenTable: not one row per request");
    for (size_t r = 0; r < requests; ++r) {
      const int64_t position = FirstPosition(call, r).value_or(0);
      const size_t h = static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(position, 0), static_cast<int64_t>(w)));
      if (position > 0 && static_cast<size_t>(position) > table[r].size()) {
        throw Error("tokenTable[" + std::to_string(r) + "]: " + std::to_string(table[r].size()) +
                    " positions, the request continues at " + std::to_string(position));
      }
      Ids ids(h);
      for (size_t i = 0; i < h; ++i) ids[i] = table[r][static_cast<size_t>(position) - h + i];
      at(r, position, ids);
      c.history_under[r] = ids;
      for (int64_t& u : c.history_under[r]) u = u == kDead ? -1 : u;
    }
  } else {  // slotCache
    c.block_size = test.at("blockSize").get<int64_t>();
    c.block_table = IntLists(test, "blockTable");
    c.slot_mapping = IntList(test, "slotMapping");
    c.cache = IntList(test, "slotCache");
    if (c.block_table.size() != requests) throw Error("blockTable: not one row per request");
    if (c.slot_mapping.size() != call.ids.size()) throw Error("slotMapping: not one entry per slot");
    for (size_t r = 0; r < requests; ++r) {
      const int64_t position = FirstPosition(call, r).value_or(0);
      const size_t h = static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(position, 0), static_cast<int64_t>(w)));
      Ids ids(h);
      for (size_t i = 0; i < h; ++i) {
        ids[i] = c.cache[static_cast<size_t>(SlotOf(c, r, position - static_cast<int64_t>(h - i)))];
      }
      at(r, position, ids);
      c.history_under[r] = ids;
      for (int64_t& u : c.history_under[r]) u = u == kDead ? -1 : u;
    }
  }
  return c;
}

ServingOutcome ServingReference(const Layout& layout, const ServingCase& c) {
  PackedResult result = HashPacked(layout, c.call);
  ServingOutcome o;
  o.rows = std::move(result.rows);
  o.requests.reserve(Requests(c.call));
  for (size_t r = 0; r < Requests(c.call); ++r) {
    ServingRequestOut q;
    q.position = result.histories[r].position;
    q.ids = std::move(result.histories[r].ids);
    q.under = q.ids;
    if (std::find(q.ids.begin(), q.ids.end(), kDead) != q.ids.end()) {
      // The ids beneath the DEAD ones (the vllm encoding writes them): from what the request consumed.
      Ids ids, under;
      SeenIds(c, r, ContinuesHistory(c, r), Consumed(c, r), false, ids, under);
      const ServingRequestOut seen = StateOut(layout, q.position, ids, under);
      if (seen.ids != q.ids) throw Error("serving: the consumed ids disagree with HashPacked's history");
      q.under = seen.under;
    }
    if (c.encoding == "slotCache") q.writes = Writes(c, r, false);
    o.requests.push_back(std::move(q));
  }
  return o;
}

ServingOutcome ServingOutcomeOf(const Layout& /*layout*/, const ServingCase& c, std::vector<int64_t> rows,
                                const std::vector<HashHistory>& histories) {
  ServingOutcome o;
  o.rows = std::move(rows);
  for (size_t r = 0; r < Requests(c.call) && r < histories.size(); ++r) {
    Ids ids, under;
    SeenIds(c, r, ContinuesHistory(c, r), Consumed(c, r), false, ids, under);
    ServingRequestOut q;
    q.position = histories[r].position;
    q.ids = histories[r].ids;
    for (size_t i = 0; i < q.ids.size(); ++i) {
      // Aligned from the end: the reported id i is the consumed sequence's (size - count + i).
      const size_t from_end = q.ids.size() - i;
      const bool same = from_end <= ids.size() && ids[ids.size() - from_end] == q.ids[i];
      q.under.push_back(same ? under[under.size() - from_end] : q.ids[i]);
    }
    q.writes = Writes(c, r, false);
    for (size_t i = 0; i < q.ids.size(); ++i) {
      q.writes.emplace_back(q.position - static_cast<int64_t>(q.ids.size() - i), q.ids[i]);
    }
    o.requests.push_back(std::move(q));
  }
  return o;
}

ServingOutcome ServingMutantOutcome(const Layout& layout, const ServingCase& c, ServingMutant m) {
  ServingOutcome o = ServingReference(layout, c);  // validates as the reference does
  const PackedCall& call = c.call;
  const size_t requests = Requests(call);
  switch (m) {
    case ServingMutant::kCrossRequestLeak: {
      // Each slot's window: its path within the request, then the buffer's slots before the request's first one
      // (whichever request they belong to), then, past the buffer's start, the request's history; a position
      // below 0 still blocks.
      o.rows.clear();
      for (size_t r = 0; r < requests; ++r) {
        const HashHistory& h = call.histories[r];
        for (size_t t = Begin(call, r); t < End(call, r); ++t) {
          Ids preds;  // nearest first
          if (Drafts(c)) {
            const std::vector<size_t> path = PathTo(c, r, t - Begin(call, r));
            for (size_t i = path.size() - 1; i-- > 0;) preds.push_back(call.ids[Begin(call, r) + path[i]]);
          } else {
            for (size_t u = t; u-- > Begin(call, r);) preds.push_back(call.ids[u]);
          }
          for (size_t u = Begin(call, r); u-- > 0;) preds.push_back(call.ids[u]);
          for (size_t i = h.ids.size(); i-- > 0;) preds.push_back(h.ids[i]);
          const int64_t p = call.positions[t];
          const size_t k = static_cast<size_t>(std::min<int64_t>(std::min<int64_t>(p, layout.max_ngram - 1),
                                                                 static_cast<int64_t>(preds.size())));
          Ids seen(preds.rend() - static_cast<std::ptrdiff_t>(k), preds.rend());
          seen.push_back(call.ids[t]);
          HashWindows(layout, seen, p - static_cast<int64_t>(k), k, nullptr, o.rows);
        }
      }
      break;
    }
    case ServingMutant::kNaiveFlatten: {
      // The request slots as one sequence after request 0's history: every window reads across boundaries.
      Ids seen = call.histories[0].ids;
      seen.insert(seen.end(), call.ids.begin(), call.ids.begin() + call.cu_seqlens.back());
      o.rows.clear();
      HashWindows(layout, seen, call.histories[0].position - static_cast<int64_t>(call.histories[0].ids.size()),
                  call.histories[0].ids.size(), nullptr, o.rows);
      break;
    }
    case ServingMutant::kRestartEachCall: {
      o.rows.clear();
      for (size_t r = 0; r < requests; ++r) {
        RequestRows(layout, c, r, false, false, o.rows);
        Ids ids, under;
        const std::vector<size_t> consumed = Consumed(c, r);
        SeenIds(c, r, false, consumed, false, ids, under);
        ServingRequestOut q = StateOut(layout, static_cast<int64_t>(consumed.size()), ids, under);
        q.writes = o.requests[r].writes;  // the slots are written all the same
        o.requests[r] = std::move(q);
      }
      break;
    }
    case ServingMutant::kPaddingWritesState: {
      const size_t r = requests - 1;
      const size_t padding = call.ids.size() - static_cast<size_t>(call.cu_seqlens.back());
      if (padding == 0 || Drafts(c)) break;
      Ids ids, under;
      std::vector<size_t> consumed = Consumed(c, r);
      for (size_t t = static_cast<size_t>(call.cu_seqlens.back()); t < call.ids.size(); ++t) consumed.push_back(t);
      SeenIds(c, r, ContinuesHistory(c, r), consumed, false, ids, under);
      ServingRequestOut q = StateOut(layout, o.requests[r].position + static_cast<int64_t>(padding), ids, under);
      q.writes = o.requests[r].writes;
      for (size_t i = 0; i < padding; ++i) {
        q.writes.emplace_back(o.requests[r].position + static_cast<int64_t>(i), call.ids[static_cast<size_t>(call.cu_seqlens.back()) + i]);
      }
      o.requests[r] = std::move(q);
      break;
    }
    case ServingMutant::kRejectedDraftsKept: {
      if (!Drafts(c)) break;
      for (size_t r = 0; r < requests; ++r) {
        std::vector<size_t> all;
        for (size_t t = Begin(call, r); t < End(call, r); ++t) all.push_back(t);
        Ids ids, under;
        SeenIds(c, r, true, all, false, ids, under);
        o.requests[r] = StateOut(layout, call.histories[r].position + static_cast<int64_t>(all.size()), ids, under);
      }
      break;
    }
    case ServingMutant::kMaskNotAppliedToHistory: {
      o.rows.clear();
      for (size_t r = 0; r < requests; ++r) {
        RequestRows(layout, c, r, true, true, o.rows);
        Ids ids, under;
        SeenIds(c, r, ContinuesHistory(c, r), Consumed(c, r), true, ids, under);
        ServingRequestOut q = StateOut(layout, o.requests[r].position, ids, under);
        q.writes = Writes(c, r, true);
        o.requests[r] = std::move(q);
      }
      break;
    }
  }
  return o;
}

ServingOutcome HashMutantOutcome(const Layout& layout, const Layout& mutant_layout, const ServingCase& c, Mutant m) {
  ServingOutcome o = ServingReference(layout, c);
  o.rows.clear();
  const PackedCall& call = c.call;
  for (size_t r = 0; r < Requests(call); ++r) {
    const HashHistory& h = call.histories[r];
    const int64_t first = h.position - static_cast<int64_t>(h.ids.size());
    auto rows_of = [&](const Ids& seq, int64_t at, size_t emit_from) {
      const Ids rows = MutantRows(m, mutant_layout, seq, at, emit_from);
      o.rows.insert(o.rows.end(), rows.begin(), rows.end());
    };
    if (Drafts(c)) {
      for (size_t j = 0; Begin(call, r) + j < End(call, r); ++j) {
        Ids seq = h.ids;
        for (size_t a : PathTo(c, r, j)) seq.push_back(call.ids[Begin(call, r) + a]);
        rows_of(seq, first, seq.size() - 1);
      }
      continue;
    }
    size_t from = Begin(call, r);
    for (size_t t = from; t <= End(call, r); ++t) {
      if (t == End(call, r) || (t > from && call.segment_reset && call.positions[t] == 0)) {
        Ids seq = from == Begin(call, r) ? h.ids : Ids();
        const size_t skip = seq.size();
        seq.insert(seq.end(), call.ids.begin() + static_cast<std::ptrdiff_t>(from), call.ids.begin() + static_cast<std::ptrdiff_t>(t));
        rows_of(seq, from == Begin(call, r) ? first : 0, skip);
        from = t;
      }
    }
  }
  return o;
}

bool DiffersFromNaiveFlatten(const Layout& layout, const ServingCase& c, const std::vector<int64_t>& rows) {
  const HashHistory& h = c.call.histories.at(0);
  HashState state = HashState::Import(layout, HashHistory{h.position, h.ids, ""});
  std::vector<int64_t> naive;
  state.Append(std::span<const int64_t>(c.call.ids.data(), static_cast<size_t>(c.call.cu_seqlens.back())), naive);
  return naive != rows;
}

ServingCase AsSeen(const Layout& layout, const ServingCase& c) {
  ojson test = ServingInputs(layout, c);
  return ReadServingCase(layout, c.type, json::parse(test.dump()));
}

std::string ServingLocation(const std::string& type, const ojson& group, const ojson& test,
                            const std::string& difference) {
  const size_t open = difference.find('[');
  const size_t colon = difference.find(": ");
  if (open == std::string::npos || (colon != std::string::npos && open > colon)) return "";
  const std::string key = difference.substr(0, open);
  int64_t index = 0;
  size_t i = open + 1;
  for (; i < difference.size() && difference[i] >= '0' && difference[i] <= '9'; ++i) index = index * 10 + (difference[i] - '0');
  if (i == open + 1) return "";
  try {
    const Ids cu = test.at("cuSeqlens").get<Ids>();
    const Ids positions = test.at("positions").get<Ids>();
    const int64_t window = static_cast<int64_t>(group.at("layers").at(0).at("multipliers").size()) - 1;
    const int64_t slots = static_cast<int64_t>(test.at("ids").size());
    auto request_of_slot = [&](int64_t t) {
      for (size_t r = 0; r + 1 < cu.size(); ++r) {
        if (cu[r] <= t && t < cu[r + 1]) return static_cast<int64_t>(r);
      }
      return int64_t{-1};
    };
    auto request = [&](int64_t r) {
      const int64_t a = cu[static_cast<size_t>(r)], b = cu[static_cast<size_t>(r) + 1];
      std::string out = "request " + std::to_string(r) + " (its boundaries cuSeqlens[" + std::to_string(r) + "] = " +
                        std::to_string(a) + " and cuSeqlens[" + std::to_string(r + 1) + "] = " + std::to_string(b) + ": ";
      out += a == b ? "no slot in this call)" : "slots " + std::to_string(a) + " ... " + std::to_string(b - 1) + ")";
      return out;
    };
    if (key == "rows") {
      const int64_t r = request_of_slot(index);
      if (r < 0) return "";
      const int64_t a = cu[static_cast<size_t>(r)], j = index - a, p = positions[static_cast<size_t>(index)];
      std::string out = "where: slot " + std::to_string(index) + " is " + request(r) + "'s ";
      int64_t depth = j;
      if (type == "DraftTreeTest") {
        const Ids parents = test.at("parents").get<Ids>();
        depth = 0;
        for (int64_t at = parents[static_cast<size_t>(index)]; at >= 0; at = parents[static_cast<size_t>(a + at)]) ++depth;
        out += "draft " + std::to_string(j) + " (parent " + std::to_string(parents[static_cast<size_t>(index)]) +
               ", depth " + std::to_string(depth) + ")";
      } else {
        out += "slot " + std::to_string(j);
      }
      out += " at position " + std::to_string(p);
      if (depth < window && p > depth) {
        out += "; its window (back to position " + std::to_string(std::max<int64_t>(p - window, 0)) +
               ") reaches across the request's first boundary into its state before the call (position " +
               std::to_string(p - depth) + ")";
      } else if (depth < window) {
        out += "; its window reaches back to the sequence's start";
      } else {
        out += "; its window lies inside the request's slots";
      }
      return out;
    }
    if (key == "historyOut" || key == "lookbackTokenIdsOut" || key == "lookbackDeadMaskOut" || key == "presentIds") {
      if (index < 0 || static_cast<size_t>(index) + 1 >= cu.size()) return "";
      std::string out = "where: the state after the call of " + request(index);
      const int64_t padding = slots - cu.back();
      if (static_cast<size_t>(index) + 2 == cu.size() && padding > 0) {
        out += "; it is the last request, and the " + std::to_string(padding) +
               " padding slot(s) after cuSeqlens[" + std::to_string(cu.size() - 1) + "] must not enter it";
      }
      if (type == "DraftTreeTest") out += "; only its accepted path may enter it";
      return out;
    }
    if (key == "slotCacheOut") {
      const Ids mapping = test.at("slotMapping").get<Ids>();
      for (size_t t = 0; t < mapping.size(); ++t) {
        if (mapping[t] != index) continue;
        const int64_t r = request_of_slot(static_cast<int64_t>(t));
        return "where: cache slot " + std::to_string(index) + " is written by slot " + std::to_string(t) + " of " +
               request(r) + " (position " + std::to_string(positions[t]) + ")";
      }
      return "where: no request slot writes cache slot " + std::to_string(index) +
             ": it must stay as it was (the padding writes nothing; its slotMapping is -1)";
    }
  } catch (const std::exception&) {
    return "";  // a test the runner cannot read this way: no location
  }
  return "";
}

}  // namespace engram::vectors
