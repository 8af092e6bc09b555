// spec/conformance.md §CONF.7 — random cases of the suites hash_v41 and
// hash_demo (§HASH): HashTest and HashStateTest over random layouts; and of
// the suite layout (§CFG, §LAY), valid and broken configurations.
//
// The recipe: {"type", "layerIds", "maxNgram", "heads", "bases", "seed", "v",
// "pad"} and either "ids" (HashTest) or "capacity" and "steps"
// (HashStateTest). Distributions: 1 to 3 layers (ids mostly below 64, now and
// then up to 10^6), max n-gram 2..5, 1..16 heads, bases and V log-uniform
// (bases in [2, 10^6], one case in 16 in [2^32, 2^40); V in [2, 2^31)), the pad at 0, 2, V - 1 or anywhere;
// ids uniform below V with V - 1, 0 and the pad favoured, DEAD spans of
// 1..max n-gram + 1 in v4.1, negative ids down to INT64_MIN in demo-v1, and
// one case in 20 holding an id that must be refused.
#include <algorithm>
#include <limits>
#include <map>

#include "reference/config.h"
#include "base/error.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "vectors/random_cases.h"
#include "vectors/random_hash.h"
#include "vectors/suite.h"

namespace engram::vectors {
namespace {

uint64_t Magnitude(int64_t x) { return x < 0 ? ~static_cast<uint64_t>(x) + 1 : static_cast<uint64_t>(x); }

// ------------------------------------------------------------------ draw

}  // namespace

std::vector<int64_t> DrawIds(CaseRng& rng, bool v41, int64_t v, int64_t pad, int max_ngram, int64_t n) {
  std::vector<int64_t> ids;
  while (static_cast<int64_t>(ids.size()) < n) {
    if (v41 && rng.Chance(1, 10)) {  // §HASH.2 a DEAD span, of a length around the window
      const int64_t len = rng.In(1, max_ngram + 1);
      for (int64_t k = 0; k < len && static_cast<int64_t>(ids.size()) < n; ++k) ids.push_back(kDead);
      continue;
    }
    const int64_t pick = rng.Below(16);
    if (pick == 0) {
      ids.push_back(v - 1);
    } else if (pick == 1) {
      ids.push_back(0);
    } else if (pick == 2) {
      ids.push_back(pad);
    } else if (!v41 && pick == 3) {  // §HASH.1 demo-v1 passes negative ids through
      ids.push_back(rng.Chance(1, 8) ? std::numeric_limits<int64_t>::min() : -rng.Scaled(1, std::numeric_limits<int64_t>::max()));
    } else {
      ids.push_back(rng.Below(v));
    }
  }
  return ids;
}

ojson DrawLayoutPart(CaseRng& rng, bool v41) {
  ojson r;
  const int layers = static_cast<int>(rng.Chance(1, 2) ? 1 : rng.In(2, 3));
  std::vector<int64_t> layer_ids;
  while (static_cast<int>(layer_ids.size()) < layers) {
    const int64_t id = rng.Chance(1, 8) ? rng.Scaled(0, 1000000) : rng.Below(64);
    if (std::find(layer_ids.begin(), layer_ids.end(), id) == layer_ids.end()) layer_ids.push_back(id);
  }
  r["layerIds"] = layer_ids;
  const int max_ngram = static_cast<int>(rng.In(2, 5));
  r["maxNgram"] = max_ngram;
  r["heads"] = rng.Chance(1, 4) ? rng.In(9, 16) : rng.In(1, 8);
  // Bases above 2^32 (primes whose Miller-Rabin needs 128-bit products, §LAY.1)
  // in one case in 16: they cost the reference most of a case's time.
  auto base = [&] {
    return rng.Chance(1, 16) ? rng.Scaled(int64_t{1} << 32, (int64_t{1} << 40) - 1) : rng.Scaled(2, 1000000);
  };
  std::vector<int64_t> bases;
  for (int k = 0; k < (v41 ? 1 : max_ngram - 1); ++k) bases.push_back(base());
  r["bases"] = bases;
  // demo-v1 seeds range over int64 (those below 2^32 are numpy's common case);
  // seed + 10007 * layer id must stay an int64 (§CFG.4).
  int64_t top = 0;
  for (int64_t id : layer_ids) top = std::max(top, id);
  r["seed"] = v41 ? 0 : (rng.Chance(1, 2) ? rng.Below(1000) : rng.Scaled(0, std::numeric_limits<int64_t>::max() - 10007 * top));
  const int64_t v = rng.Chance(1, 8) ? rng.In(2, 16) : rng.Scaled(2, (int64_t{1} << 31) - 1);
  r["v"] = v;
  const int64_t p = rng.Below(4);
  r["pad"] = p == 0 ? 0 : p == 1 ? std::min<int64_t>(2, v - 1) : p == 2 ? v - 1 : rng.Below(v);
  return r;
}

namespace {

// §CONF.7 one case in 20 holds an id that must be refused (§HASH.1).
void MaybeInvalid(CaseRng& rng, bool v41, int64_t v, std::vector<int64_t>& ids) {
  if (ids.empty() || !rng.Chance(1, 20)) return;
  const size_t at = static_cast<size_t>(rng.Below(static_cast<int64_t>(ids.size())));
  if (v41 && rng.Chance(1, 2)) {
    ids[at] = rng.Chance(1, 2) ? -2 : -rng.Scaled(2, std::numeric_limits<int64_t>::max());
  } else {
    ids[at] = rng.Chance(1, 2) ? v : rng.Scaled(v, std::numeric_limits<int64_t>::max());
  }
}

// §HASH.6 What a state with rollback capacity `capacity` must, and what the
// reference does, forget. `depth` is the mandatory rollback depth of §HASH.6:
// 0 for a fresh sequence, min(depth + n, capacity) after an append of n ids,
// depth - k after a rollback by k; every conforming state accepts a rollback
// by k <= depth. `retained` is what the reference holds (the last max - 1 +
// capacity ids, less what rollbacks removed): of them min(position - k,
// max - 1) must remain after forgetting k, so near the start of a sequence
// it can forget more than the capacity, and rollbacks in a row eat into it
// until appends refill it. Rollbacks between the two are a policy (feature
// rollback-retained, §CONF.7).
struct Retention {
  int64_t position = 0, retained = 0, depth = 0;
  void Append(int64_t n, int64_t w, int64_t capacity) {
    position += n;
    retained = std::min(retained + n, w + capacity);
    depth = std::min(depth + n, capacity);
  }
  int64_t MostForgettable(int64_t w) const {
    int64_t k = std::min(position, retained);
    while (k > 0 && retained - k < std::min(position - k, w)) --k;
    return k;
  }
  // The most a case may roll back: the mandatory depth, or with the feature
  // rollback-retained declared, all that the reference still holds.
  int64_t Most(int64_t w, bool retained_policy) const { return retained_policy ? MostForgettable(w) : depth; }
  void Rollback(int64_t k) {
    position -= k;
    retained -= k;
    depth = std::max<int64_t>(depth - k, 0);
  }
};

constexpr const char* kRollbackRetained = "rollback-retained";

// Whether a recipe was drawn for an implementation that declared the feature.
bool RetainedPolicy(const ojson& r) {
  if (!r.contains("features")) return false;
  for (const ojson& f : r["features"]) {
    if (f == kRollbackRetained) return true;
  }
  return false;
}

ojson DrawHash(uint64_t seed, int64_t index, bool v41, bool retained_policy) {
  const std::string suite = v41 ? "hash_v41" : "hash_demo";
  CaseRng layout_rng(seed, suite + "/layout", index / kCasesPerLayout);
  ojson r = DrawLayoutPart(layout_rng, v41);
  CaseRng rng(seed, suite, index);
  const int64_t v = r["v"], pad = r["pad"];
  const int max_ngram = r["maxNgram"];
  if (rng.Chance(2, 3)) {
    r["type"] = "HashTest";
    std::vector<int64_t> ids = DrawIds(rng, v41, v, pad, max_ngram, rng.Length(48, 64));
    MaybeInvalid(rng, v41, v, ids);
    r["ids"] = ids;
    return r;
  }
  // §HASH.5-§HASH.6 a script over up to three named sequences; rollbacks stay
  // within the mandatory depth (beyond it a port may refuse or not, §HASH.6)
  // or, with rollback-retained declared, within what the reference holds; one
  // in three goes exactly to that limit. The draws are the same either way:
  // only the limit differs.
  r["type"] = "HashStateTest";
  if (retained_policy) r["features"] = ojson::array({kRollbackRetained});
  const int64_t capacity = rng.In(1, 12);
  r["capacity"] = capacity;
  std::map<std::string, Retention> seqs;
  ojson steps = ojson::array();
  const int64_t n_steps = rng.In(1, 10);
  const int64_t w = max_ngram - 1;
  const char* names[] = {"a", "b", "c"};
  for (int64_t s = 0; s < n_steps; ++s) {
    const int64_t op = seqs.empty() ? 0 : rng.Below(20);
    if (op < 11) {
      const std::string seq = names[rng.Below(seqs.empty() ? 1 : 3)];
      const std::vector<int64_t> ids = DrawIds(rng, v41, v, pad, max_ngram, rng.Length(12, 8));
      seqs[seq].Append(static_cast<int64_t>(ids.size()), w, capacity);
      steps.push_back({{"op", "append"}, {"seq", seq}, {"ids", ids}});
    } else if (op < 17) {
      auto it = seqs.begin();
      std::advance(it, rng.Below(static_cast<int64_t>(seqs.size())));
      const int64_t most = it->second.Most(w, retained_policy);
      const int64_t k = rng.Chance(1, 3) ? most : rng.In(0, most);
      it->second.Rollback(k);
      steps.push_back({{"op", "rollback"}, {"seq", it->first}, {"k", k}});
    } else {
      auto it = seqs.begin();
      std::advance(it, rng.Below(static_cast<int64_t>(seqs.size())));
      const std::string to = names[rng.Below(3)];
      if (to == it->first) continue;
      seqs[to] = it->second;
      steps.push_back({{"op", "fork"}, {"from", it->first}, {"to", to}});
    }
  }
  r["steps"] = steps;
  return r;
}

// ------------------------------------------------------------------ build

}  // namespace

ojson ConfigOf(const ojson& r, bool v41) {
  const std::vector<int64_t> layer_ids = r["layerIds"].get<std::vector<int64_t>>();
  if (v41) {
    return {{"engram_layer_ids", layer_ids},
            {"engram_vocab_size", r["bases"][0]},
            {"engram_max_ngram_size", r["maxNgram"]},
            {"engram_n_heads", r["heads"]},
            {"engram_head_dim", 8},
            {"engram_pad_id", 2},
            {"engram_compressed_vocab_size", r["v"]}};
  }
  ojson c = DemoConfigJson();
  c["engram_vocab_size"] = r["bases"];
  c["max_ngram_size"] = r["maxNgram"];
  c["n_head_per_ngram"] = r["heads"];
  c["n_embed_per_ngram"] = r["heads"].get<int64_t>() * 4;
  c["layer_ids"] = layer_ids;
  c["seed"] = r["seed"];
  return c;
}

namespace {

std::string SizeOf(const ojson& r, int64_t positions) {
  return std::string(r["type"] == "HashTest" ? "T " : "steps " + std::to_string(r["steps"].size()) + ", T ") +
         std::to_string(positions) + ", layers " + std::to_string(r["layerIds"].size()) + ", max n-gram " +
         r["maxNgram"].dump() + ", heads " + r["heads"].dump() + ", V " + r["v"].dump();
}

}  // namespace

int64_t LayoutMeasure(const ojson& r) {
  int64_t m = 100000 * static_cast<int64_t>(r["layerIds"].size()) + 10000 * r["maxNgram"].get<int64_t>() +
              1000 * r["heads"].get<int64_t>() + 10 * BitLength(r["v"].get<uint64_t>()) + BitLength(r["pad"].get<uint64_t>()) +
              BitLength(static_cast<uint64_t>(r["seed"].get<int64_t>()));
  for (const auto& b : r["bases"]) m += BitLength(b.get<uint64_t>());
  for (const auto& id : r["layerIds"]) m += BitLength(id.get<uint64_t>());
  return m;
}

int64_t IdsMeasure(const std::vector<int64_t>& ids) {
  int64_t m = 1000000 * static_cast<int64_t>(ids.size());
  for (int64_t id : ids) m += id == kDead ? 0 : BitLength(Magnitude(id)) + (id < 0 ? 1 : 0);
  return m;
}

namespace {

// The script of a HashStateTest made consistent with itself (a shrink step
// may have removed the append a rollback or fork relied on): a rollback is
// cut to what its sequence still retains (Retention), a fork of an unknown
// sequence is dropped. Then every append's rows and every positionAfter /
// historyAfter are filled in by the reference (§HASH.5-§HASH.6).
ojson RunScript(const Layout& layout, size_t capacity, const ojson& script, bool retained_policy, int64_t& positions) {
  std::map<std::string, HashState> seqs;
  std::map<std::string, Retention> kept;
  const int64_t w = layout.max_ngram - 1;
  ojson out = ojson::array();
  positions = 0;
  for (const ojson& step : script) {
    const std::string op = step["op"];
    if (op == "append") {
      const std::string name = step["seq"];
      auto it = seqs.find(name);
      if (it == seqs.end()) it = seqs.emplace(name, HashState(layout, capacity)).first;
      const std::vector<int64_t> ids = step["ids"].get<std::vector<int64_t>>();
      std::vector<int64_t> rows;
      it->second.Append(ids, rows);
      kept[name].Append(static_cast<int64_t>(ids.size()), w, static_cast<int64_t>(capacity));
      positions += static_cast<int64_t>(ids.size());
      ojson& o = out.emplace_back(ojson::object());
      o["op"] = "append";
      o["seq"] = name;
      o["ids"] = ids;
      o["rows"] = NestRows(layout, rows);
      o["positionAfter"] = it->second.position();
      o["historyAfter"] = it->second.History();
    } else if (op == "rollback") {
      auto it = seqs.find(step["seq"].get<std::string>());
      if (it == seqs.end()) continue;
      const int64_t k = std::min(step["k"].get<int64_t>(), kept[it->first].Most(w, retained_policy));
      it->second.Rollback(static_cast<size_t>(k));
      kept[it->first].Rollback(k);
      out.push_back({{"op", "rollback"}, {"seq", it->first}, {"k", k}, {"positionAfter", it->second.position()},
                     {"historyAfter", it->second.History()}});
    } else {
      auto it = seqs.find(step["from"].get<std::string>());
      if (it == seqs.end()) continue;
      const HashState copy = it->second;
      seqs.insert_or_assign(step["to"].get<std::string>(), copy);
      kept[step["to"].get<std::string>()] = kept[it->first];
      out.push_back({{"op", "fork"}, {"from", step["from"]}, {"to", step["to"]}});
    }
  }
  return out;
}

}  // namespace

// The layout of recipe `r`, built once for the cases that share it
// (kCasesPerLayout consecutive cases, and the candidates of a shrink that
// leave the layout alone): the last few are kept.
const BuiltLayout& LayoutFor(const ojson& r, bool v41) {
  thread_local std::vector<BuiltLayout> cache;
  const std::string profile = v41 ? "v4.1" : "demo-v1";
  const int64_t v = r["v"], pad = r["pad"];
  std::string key = profile;  // the recipe's layout part
  for (const char* k : {"layerIds", "maxNgram", "heads", "bases", "seed", "v", "pad"}) {
    key += '/';  // appended, not "/" + string&& (GCC 12 -Wrestrict false positive, bug 105329)
    key += r[k].dump();
  }
  for (const BuiltLayout& b : cache) {
    if (b.key == key) return b;
  }
  ojson config = ConfigOf(r, v41);
  Layout layout = BuildLayout(ParseConfig(nlohmann::json::parse(config.dump()), "config", ParseProfile(profile)), v, pad);
  if (v41) {  // §CFG.2 the table sizes, as a released config carries them
    std::vector<int64_t> sums;
    for (const LayerLayout& l : layout.layers) sums.push_back(l.num_embeddings);
    config["engram_num_embeddings"] = sums;
  }
  if (cache.size() >= 4) cache.erase(cache.begin());
  ojson layers = LayersJson(layout);
  std::string fingerprint = LayoutFingerprint(layout);
  cache.push_back({key, std::move(layout), std::move(config), std::move(layers), std::move(fingerprint)});
  return cache.back();
}

namespace {

RandomCase BuildHash(const ojson& r, bool v41) {
  const std::string profile = v41 ? "v4.1" : "demo-v1";
  const BuiltLayout& built = LayoutFor(r, v41);
  const Layout& layout = built.layout;
  const int64_t v = r["v"], pad = r["pad"];
  RandomCase c;
  c.recipe = r;
  c.type = r["type"];
  c.profile = profile;
  c.group = ojson::object();  // key by key: an initializer list would copy the layers twice
  c.group["type"] = c.type;
  c.group["comment"] = "";
  c.group["profile"] = profile;
  c.group["config"] = built.config;
  c.group["compressedVocabSize"] = v;
  c.group["compressedPad"] = pad;
  c.group["layers"] = built.layers;
  if (c.type == "HashTest") {
    const std::vector<int64_t> ids = r["ids"].get<std::vector<int64_t>>();
    c.spec_refs = {"§HASH.1", "§HASH.2", "§HASH.3", "§HASH.4"};
    c.test = ojson::object();
    c.test["ids"] = ids;
    try {
      // §HASH.8 one pass gives the rows and the trace (TraceSequence and
      // HashSequence would hash the ids twice).
      HashState state(layout);
      std::vector<int64_t> rows;
      std::vector<PositionTrace> traces;
      state.AppendTraced(ids, rows, traces);
      c.test["result"] = "valid";
      c.test["rows"] = NestRows(layout, rows);
      c.test["intermediate"] = TraceJson(traces);
    } catch (const Error& e) {
      c.test["result"] = "invalid";
      c.test["error"] = e.what();
    }
    c.size = SizeOf(r, static_cast<int64_t>(ids.size()));
    c.measure = IdsMeasure(ids) + LayoutMeasure(r);
  } else {
    const size_t capacity = r["capacity"].get<size_t>();
    c.group["rollbackCapacity"] = capacity;
    c.spec_refs = {"§HASH.5", "§HASH.6"};
    int64_t positions = 0;
    c.test = {{"result", "valid"}, {"steps", RunScript(layout, capacity, r["steps"], RetainedPolicy(r), positions)}};
    // The recipe becomes the script as run (rollbacks cut, dead forks
    // dropped), so that a shrink step on it changes what is run.
    ojson script = ojson::array();
    for (const ojson& step : c.test["steps"]) {
      ojson s = ojson::object();
      for (const char* k : {"op", "seq", "ids", "k", "from", "to"}) {
        if (step.contains(k)) s[k] = step[k];
      }
      script.push_back(std::move(s));
    }
    c.recipe["steps"] = std::move(script);
    c.size = SizeOf(r, positions);
    c.measure = LayoutMeasure(r) + 100 * static_cast<int64_t>(capacity);
    for (const ojson& step : c.test["steps"]) {
      c.measure += 10000000;
      if (step.contains("ids")) c.measure += IdsMeasure(step["ids"].get<std::vector<int64_t>>());
      if (step.contains("k")) c.measure += step["k"].get<int64_t>();
    }
  }
  // The comment is the same with the feature: the cases drawn with
  // rollback-retained are then exactly those random-v2 drew before the
  // default cases kept to the mandatory depth (their pinned digests show it).
  c.group["comment"] = "random case: " + c.size;
  return c;
}

// ------------------------------------------------------------------ shrink

}  // namespace

// Smaller ids lists: halves, then one position fewer, then smaller values.
std::vector<std::vector<int64_t>> SmallerIds(const std::vector<int64_t>& ids, int64_t pad) {
  std::vector<std::vector<int64_t>> out;
  const size_t n = ids.size();
  if (n == 0) return out;
  out.emplace_back(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n / 2));
  out.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(n / 2), ids.end());
  for (size_t i = 0; i < n && i < 48; ++i) {
    std::vector<int64_t> less = ids;
    less.erase(less.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(less);
  }
  for (size_t i = 0; i < n && i < 48; ++i) {
    if (ids[i] == kDead || ids[i] == 0) continue;
    std::vector<int64_t> a = ids;
    a[i] = ids[i] == pad || ids[i] < 0 ? 0 : pad;
    out.push_back(a);
    std::vector<int64_t> b = ids;
    b[i] = ids[i] / 2;
    out.push_back(b);
  }
  return out;
}

// An id list under a smaller V: ids >= V wrap into it (DEAD and negative ids stay).
std::vector<int64_t> UnderV(std::vector<int64_t> ids, int64_t v, int64_t old_v) {
  for (int64_t& id : ids) {
    if (id >= 0 && id < old_v) id %= v;
  }
  return ids;
}

std::vector<ojson> ShrinkLayout(const ojson& r) {
  std::vector<ojson> out;
  const auto layer_ids = r["layerIds"];
  for (size_t i = 0; layer_ids.size() > 1 && i < layer_ids.size(); ++i) {
    ojson c = r;
    c["layerIds"].erase(i);
    out.push_back(c);
  }
  for (size_t i = 0; i < layer_ids.size(); ++i) {
    if (layer_ids[i] == 0) continue;
    ojson c = r;
    c["layerIds"][i] = layer_ids[i].get<int64_t>() / 2;
    out.push_back(c);
  }
  if (r["maxNgram"] > 2) {
    ojson c = r;
    c["maxNgram"] = r["maxNgram"].get<int>() - 1;
    if (c["bases"].size() > 1) c["bases"].erase(c["bases"].size() - 1);
    out.push_back(c);
  }
  if (r["heads"] > 1) {
    ojson one = r;
    one["heads"] = 1;
    out.push_back(one);
    ojson c = r;
    c["heads"] = r["heads"].get<int>() - 1;
    out.push_back(c);
  }
  for (size_t i = 0; i < r["bases"].size(); ++i) {
    if (r["bases"][i] <= 2) continue;
    ojson c = r;
    c["bases"][i] = std::max<int64_t>(2, r["bases"][i].get<int64_t>() / 2);
    out.push_back(c);
  }
  if (r["seed"] != 0) {
    ojson zero = r;
    zero["seed"] = 0;
    out.push_back(zero);
    ojson c = r;
    c["seed"] = r["seed"].get<int64_t>() / 2;
    out.push_back(c);
  }
  if (r["pad"] != 0) {
    ojson c = r;
    c["pad"] = 0;
    out.push_back(c);
  }
  return out;
}

namespace {

// The candidates with a smaller V: V / 2 and V = 2, the pad and every id in
// [0, V) moved into the smaller range.
std::vector<ojson> ShrinkV(const ojson& r) {
  std::vector<ojson> out;
  const int64_t v = r["v"];
  const int64_t half = std::max<int64_t>(2, v / 2);
  for (int64_t nv : {half, int64_t{2}}) {
    if (nv >= v || (nv == 2 && half == 2)) continue;  // V / 2 is 2 already: one candidate
    ojson c = r;
    c["v"] = nv;
    c["pad"] = r["pad"].get<int64_t>() % nv;
    if (c.contains("ids")) c["ids"] = UnderV(r["ids"].get<std::vector<int64_t>>(), nv, v);
    if (c.contains("steps")) {
      for (ojson& step : c["steps"]) {
        if (step.contains("ids")) step["ids"] = UnderV(step["ids"].get<std::vector<int64_t>>(), nv, v);
      }
    }
    out.push_back(c);
  }
  return out;
}

std::vector<ojson> ShrinkHash(const ojson& r) {
  std::vector<ojson> out;
  if (r["type"] == "HashTest") {
    for (auto& ids : SmallerIds(r["ids"].get<std::vector<int64_t>>(), r["pad"].get<int64_t>())) {
      ojson c = r;
      c["ids"] = ids;
      out.push_back(c);
    }
  } else {
    const ojson& steps = r["steps"];
    for (size_t i = 0; i < steps.size(); ++i) {
      ojson c = r;
      c["steps"].erase(i);
      out.push_back(c);
    }
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i]["op"] == "append") {
        for (auto& ids : SmallerIds(steps[i]["ids"].get<std::vector<int64_t>>(), r["pad"].get<int64_t>())) {
          ojson c = r;
          c["steps"][i]["ids"] = ids;
          out.push_back(c);
        }
      } else if (steps[i]["op"] == "rollback" && steps[i]["k"] > 0) {
        ojson c = r;
        c["steps"][i]["k"] = steps[i]["k"].get<int64_t>() - 1;
        out.push_back(c);
      }
    }
    if (r["capacity"] > 1) {
      ojson c = r;
      c["capacity"] = r["capacity"].get<int64_t>() - 1;
      out.push_back(c);
    }
  }
  for (ojson& c : ShrinkV(r)) out.push_back(std::move(c));
  for (ojson& c : ShrinkLayout(r)) out.push_back(std::move(c));
  return out;
}


// ------------------------------------------------------------------ layout (§CFG, §LAY)

// One case in four breaks a rule of §CFG.4 / §LAY.4 and must be refused.
ojson DrawLayout(uint64_t seed, int64_t index) {
  CaseRng rng(seed, "layout", index);
  const bool v41 = rng.Chance(1, 2);
  ojson r = DrawLayoutPart(rng, v41);
  r["type"] = "LayoutTest";
  r["profile"] = v41 ? "v4.1" : "demo-v1";
  const char* breaks_v41[] = {"duplicateLayer", "zeroHeads", "maxNgramOne", "numEmbeddings", "compressedSize", "padOutside"};
  const char* breaks_demo[] = {"duplicateLayer", "zeroHeads", "maxNgramOne", "basesCount", "padOutside"};
  r["break"] = !rng.Chance(1, 4) ? "" : v41 ? breaks_v41[rng.Below(6)] : breaks_demo[rng.Below(5)];
  return r;
}

RandomCase BuildLayoutCase(const ojson& r) {
  const bool v41 = r["profile"] == "v4.1";
  ojson config = ConfigOf(r, v41);
  int64_t v = r["v"], pad = r["pad"];
  const std::string brk = r["break"];
  RandomCase c;
  c.recipe = r;
  c.type = "LayoutTest";
  c.profile = r["profile"];
  c.spec_refs = {"§CFG.4", "§LAY.2", "§LAY.3", "§LAY.4"};
  if (v41 && brk != "numEmbeddings") {
    try {  // §CFG.2 the table sizes, as a released config carries them
      const Layout layout = BuildLayout(ParseConfig(nlohmann::json::parse(config.dump()), "config", Profile::kV41), v, pad);
      std::vector<int64_t> sums;
      for (const LayerLayout& l : layout.layers) sums.push_back(l.num_embeddings);
      config["engram_num_embeddings"] = sums;
    } catch (const Error&) {
    }
  }
  const std::string layers_key = v41 ? "engram_layer_ids" : "layer_ids";
  if (brk == "duplicateLayer") config[layers_key].push_back(config[layers_key][0]);
  if (brk == "zeroHeads") config[v41 ? "engram_n_heads" : "n_head_per_ngram"] = 0;
  if (brk == "maxNgramOne") {
    config[v41 ? "engram_max_ngram_size" : "max_ngram_size"] = 1;
    if (!v41) config["engram_vocab_size"] = ojson::array();
  }
  if (brk == "numEmbeddings") {
    std::vector<int64_t> sums(r["layerIds"].size(), 1);
    config["engram_num_embeddings"] = sums;
  }
  if (brk == "compressedSize") config["engram_compressed_vocab_size"] = v + 1;
  if (brk == "basesCount") config["engram_vocab_size"].push_back(config["engram_vocab_size"][0]);
  if (brk == "padOutside") pad = v;
  c.group = {{"type", "LayoutTest"}};
  c.test = {{"config", config}, {"profile", c.profile}, {"compressedVocabSize", v}, {"compressedPad", pad}};
  try {
    const Layout layout = BuildLayout(ParseConfig(nlohmann::json::parse(config.dump()), "config", ParseProfile(c.profile)), v, pad);
    c.test["result"] = "valid";
    c.test["layers"] = LayersJson(layout);
  } catch (const Error& e) {
    c.test["result"] = "invalid";
    c.test["error"] = e.what();
  }
  c.size = c.profile + ", layers " + std::to_string(r["layerIds"].size()) + ", max n-gram " + r["maxNgram"].dump() +
           ", heads " + r["heads"].dump() + ", V " + r["v"].dump() + (brk.empty() ? "" : ", broken: " + brk);
  c.measure = LayoutMeasure(r) + (brk.empty() ? 0 : 1);
  return c;
}

std::vector<ojson> ShrinkLayoutCase(const ojson& r) {
  std::vector<ojson> out;
  if (r["break"] != "") {  // the same case unbroken: is the rule the problem, or the layout?
    ojson c = r;
    c["break"] = "";
    out.push_back(c);
  }
  for (ojson& c : ShrinkV(r)) out.push_back(std::move(c));
  for (ojson& c : ShrinkLayout(r)) out.push_back(std::move(c));
  return out;
}
}  // namespace

RandomSuite RandomHash(bool v41) {
  return {v41 ? "hash_v41" : "hash_demo",
          "hash.schema.json",
          "ENGRAM-HASH",
          [v41](uint64_t seed, int64_t index) { return DrawHash(seed, index, v41, false); },
          [v41](const ojson& r) { return BuildHash(r, v41); },
          ShrinkHash,
          {kRollbackRetained},
          [v41](uint64_t seed, int64_t index, const std::set<std::string>& declared) {
            return DrawHash(seed, index, v41, declared.count(kRollbackRetained) != 0);
          }};
}

RandomSuite RandomLayout() { return {"layout", "layout.schema.json", "ENGRAM-LAYOUT", DrawLayout, BuildLayoutCase, ShrinkLayoutCase}; }

}  // namespace engram::vectors
