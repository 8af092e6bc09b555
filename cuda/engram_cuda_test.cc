// Tests of engram::cuda against the reference (reference/hash.h,
// reference/storage.h). Expected values always come from the reference (an
// independent scalar implementation) or from laws (x mod p by `%`).
//
//  * HostLauncher.* run everywhere: the kernels' per-element functions
//    (hash_kernels.h, storage_kernels.h, fusion_kernels.h), compiled by the
//    host compiler, run by the host launcher over the same grid logic as the
//    GPU launches. CI runs these.
//  * Device.* run the same properties on a CUDA device, and GTEST_SKIP when
//    cudaGetDeviceCount fails or finds none. Multi-rank tensor parallel needs
//    >= 2 GPUs and is skipped otherwise.
//
// RapidCheck prints the seed and the shrunk case on failure. With
// ENGRAM_CUDA_FAILCASE_DIR set, a failing case is also written there as a
// vector-style JSON file <property>.json (layout, inputs, expected, got).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/engram_cuda.h"
#include "base/hex.h"
#include "cuda/kernel_common.h"
#include "cuda/storage_kernels.h"
#include "cuda/test_failcase.h"
#include "cuda/test_random.h"
#include "reference/config.h"
#include "base/error.h"
#include "reference/fusion.h"
#include "reference/hash.h"
#include "reference/layout.h"
#include "reference/storage.h"
#include "reference/token_map.h"
#include "testutil/hash_gen.h"

namespace engram::cuda {
namespace {

using Ids = std::vector<int64_t>;
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

bool HaveDevice() { return DeviceCount() > 0; }

#define SKIP_WITHOUT_DEVICE()                                                        \
  do {                                                                               \
    if (!HaveDevice()) GTEST_SKIP() << DeviceDescription(0);                         \
  } while (0)

// ---------------------------------------------------------------------------
// Failing cases as vector-style JSON
// ---------------------------------------------------------------------------

nlohmann::ordered_json LayoutJson(const Layout& layout) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerLayout& l : layout.layers) {
    layers.push_back({{"layerId", l.layer_id}, {"multipliers", l.multipliers}, {"primes", l.primes},
                      {"offsets", l.offsets}, {"numEmbeddings", l.num_embeddings}});
  }
  return {{"profile", std::string(ProfileName(layout.profile))}, {"compressedVocabSize", layout.compressed_vocab_size},
          {"compressedPad", layout.pad}, {"maxNgram", layout.max_ngram}, {"heads", layout.heads}, {"layers", layers}};
}

// $ENGRAM_CUDA_FAILCASE_DIR/<property>.json (cuda/test_failcase.h).
void WriteFailCase(const std::string& property, nlohmann::ordered_json group, nlohmann::ordered_json test) {
  WriteFailCaseFile(property, "cuda/engram_cuda_test.cc", std::move(group), std::move(test));
}

// ---------------------------------------------------------------------------
// Generators: those of the reference's hash properties
// (testutil/hash_gen.h), and permutations
// ---------------------------------------------------------------------------

using testutil::DrawChunks;
using testutil::DrawId;
using testutil::DrawLayout;
using testutil::DrawProfile;
using testutil::DrawVocab;

// A random permutation of 0..n-1 (Fisher-Yates on drawn indices).
std::vector<int32_t> DrawPermutation(int32_t n) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  for (int32_t i = n - 1; i > 0; --i) std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(*rc::gen::inRange(0, i + 1))]);
  return p;
}

// ---------------------------------------------------------------------------
// Hash properties, for either backend
// ---------------------------------------------------------------------------

// Several sequences (own slots, random slot numbers), each cut into chunks;
// batch b carries the b-th chunk of every sequence that has one, in a random
// order. Every batch's rows and the final slot states equal the reference
// HashState fed the same chunks (§HASH.4, §HASH.5).
template <class Backend>
void HashBatchesMatchReference(const std::string& property) {
  const Profile profile = DrawProfile();
  const Layout layout = DrawLayout(profile, DrawVocab());
  const int32_t nseq = *rc::gen::inRange(1, 6);
  const int32_t slots = nseq + *rc::gen::inRange(0, 3);
  const std::vector<int32_t> slot_perm = DrawPermutation(slots);
  std::vector<Ids> seqs;
  std::vector<std::vector<int64_t>> chunks;
  size_t batches = 0;
  for (int32_t q = 0; q < nseq; ++q) {
    const int n = *rc::gen::inRange(0, 30);
    Ids ids;
    for (int i = 0; i < n; ++i) ids.push_back(DrawId(layout));
    seqs.push_back(ids);
    chunks.push_back(DrawChunks<int64_t>(n, /*decode_steps=*/true));
    batches = std::max(batches, chunks.back().size());
  }
  Hasher<Backend> hasher(layout, slots);
  std::vector<HashState> ref(static_cast<size_t>(nseq), HashState(layout));
  std::vector<int64_t> consumed(static_cast<size_t>(nseq), 0);
  nlohmann::ordered_json done = nlohmann::ordered_json::array();
  for (size_t b = 0; b < batches; ++b) {
    std::vector<int32_t> order = DrawPermutation(nseq);
    std::vector<int32_t> batch_slots;
    Ids lengths, flat, expected;
    for (int32_t q : order) {
      const auto& ch = chunks[static_cast<size_t>(q)];
      if (b >= ch.size()) continue;
      const int64_t len = ch[b];
      const auto begin = seqs[static_cast<size_t>(q)].begin() + consumed[static_cast<size_t>(q)];
      const Ids piece(begin, begin + len);
      consumed[static_cast<size_t>(q)] += len;
      batch_slots.push_back(slot_perm[static_cast<size_t>(q)]);
      lengths.push_back(len);
      flat.insert(flat.end(), piece.begin(), piece.end());
      ref[static_cast<size_t>(q)].Append(piece, expected);
    }
    const Ids got = hasher.Append(batch_slots, lengths, flat);
    nlohmann::ordered_json batch = {{"slots", batch_slots}, {"lengths", lengths}, {"ids", flat}};
    if (got != expected) {
      batch["expectedRows"] = expected;
      batch["gotRows"] = got;
      done.push_back(batch);
      WriteFailCase(property, {{"type", "CudaHashBatches"}, {"layout", LayoutJson(layout)}, {"slots", slots}},
                    {{"comment", "rows of the last batch differ from reference HashState"},
                     {"flags", {"CudaMismatch"}}, {"specRef", {"§HASH.4", "§HASH.5"}}, {"batches", done}});
      RC_FAIL("rows of batch " + std::to_string(b) + " differ from the reference");
    }
    done.push_back(batch);
  }
  for (int32_t q = 0; q < nseq; ++q) {
    const SlotState s = hasher.GetSlot(slot_perm[static_cast<size_t>(q)]);
    const HashState& r = ref[static_cast<size_t>(q)];
    if (s.position != r.position() || s.history != r.History()) {
      WriteFailCase(property, {{"type", "CudaHashBatches"}, {"layout", LayoutJson(layout)}, {"slots", slots}},
                    {{"comment", "slot state of sequence " + std::to_string(q) + " differs from reference HashState"},
                     {"flags", {"CudaMismatch"}}, {"specRef", {"§HASH.5"}}, {"batches", done},
                     {"slot", slot_perm[static_cast<size_t>(q)]},
                     {"expectedState", {{"position", r.position()}, {"history", r.History()}}},
                     {"gotState", {{"position", s.position}, {"history", s.history}}}});
      RC_FAIL("slot state differs from the reference");
    }
  }
}

// Raw tokenizer ids through a token map (and a v4.1 mask) on the backend
// equal CompressIds + HashState (§HASH.1).
template <class Backend>
void RawIdsMatchReference(const std::string& property) {
  const Profile profile = DrawProfile();
  const int64_t v = *rc::gen::inRange<int64_t>(1, 40);
  const Layout layout = DrawLayout(profile, v);
  const int64_t tokens = *rc::gen::inRange<int64_t>(1, 60);
  TokenMap map;
  map.source = "<random map>";
  map.compressed_size = v;
  for (int64_t r = 0; r < tokens; ++r) map.map.push_back(*rc::gen::inRange<int64_t>(0, v));
  const int32_t nseq = *rc::gen::inRange(1, 4);
  Hasher<Backend> hasher(layout, nseq, &map);
  std::vector<HashState> ref(static_cast<size_t>(nseq), HashState(layout));
  for (int round = 0; round < 2; ++round) {
    std::vector<int32_t> slots;
    Ids lengths, raw, expected;
    std::vector<uint8_t> mask;
    const bool use_mask = profile == Profile::kV41 && *rc::gen::arbitrary<bool>();
    for (int32_t q = 0; q < nseq; ++q) {
      const int n = *rc::gen::inRange(0, 12);
      Ids piece;
      for (int i = 0; i < n; ++i) {
        const int kind = *rc::gen::inRange(0, 10);
        int64_t id = *rc::gen::inRange<int64_t>(0, tokens);
        if (kind < 2) id = profile == Profile::kV41 ? -1 : *rc::gen::inRange<int64_t>(kInt64Min, 0);
        piece.push_back(id);
        if (use_mask) mask.push_back(*rc::gen::inRange(0, 4) == 0 ? 0 : 1);
      }
      const std::span<const uint8_t> piece_mask =
          use_mask ? std::span<const uint8_t>(mask).subspan(raw.size(), piece.size()) : std::span<const uint8_t>();
      ref[static_cast<size_t>(q)].Append(CompressIds(layout, map, piece, piece_mask), expected);
      slots.push_back(q);
      lengths.push_back(n);
      raw.insert(raw.end(), piece.begin(), piece.end());
    }
    const Ids got = hasher.Append(slots, lengths, raw, mask);
    if (got != expected) {
      WriteFailCase(property, {{"type", "CudaHashRawIds"}, {"layout", LayoutJson(layout)}, {"tokenMap", map.map}},
                    {{"comment", "raw ids through the token map"}, {"flags", {"CudaMismatch"}},
                     {"specRef", {"§HASH.1"}}, {"slots", slots}, {"lengths", lengths}, {"ids", raw},
                     {"mask", mask}, {"expectedRows", expected}, {"gotRows", got}});
      RC_FAIL("raw-id rows differ from CompressIds + HashState");
    }
  }
}

// A refused id throws, names its position, and changes no slot; a state
// copied into another slot (fork) or set from the reference continues exactly
// like the reference (§HASH.5 2, §HASH.6 fork).
template <class Backend>
void RefusalAndForkMatchReference() {
  const Profile profile = DrawProfile();
  const Layout layout = DrawLayout(profile, *rc::gen::inRange<int64_t>(1, 60));
  Hasher<Backend> hasher(layout, 3);
  HashState ref(layout);
  Ids prefix;
  const int n = *rc::gen::inRange(0, 12);
  for (int i = 0; i < n; ++i) prefix.push_back(DrawId(layout));
  const std::vector<int32_t> slot0{0};
  hasher.Append(slot0, Ids{n}, prefix);
  Ids sink;
  ref.Append(prefix, sink);

  // Refused: V (always too large), or for v4.1 a negative id other than DEAD.
  Ids bad = prefix;
  const size_t at = *rc::gen::inRange<size_t>(0, bad.size() + 1);
  const int64_t bad_id = profile == Profile::kV41 && *rc::gen::arbitrary<bool>() ? int64_t{-2} : layout.compressed_vocab_size;
  bad.insert(bad.begin() + static_cast<std::ptrdiff_t>(at), bad_id);
  const SlotState before = hasher.GetSlot(0);
  bool threw = false;
  try {
    hasher.Append(slot0, Ids{static_cast<int64_t>(bad.size())}, bad);
  } catch (const Error& e) {
    threw = std::string(e.what()).find("position " + std::to_string(at) + " (id " + std::to_string(bad_id) + ")") !=
            std::string::npos;
  }
  RC_ASSERT(threw);
  const SlotState after = hasher.GetSlot(0);
  RC_ASSERT(after.position == before.position);
  RC_ASSERT(after.history == before.history);

  // Fork slot 0 into slot 1, import the reference's exported state into slot 2.
  hasher.SetSlot(1, hasher.GetSlot(0));
  hasher.SetSlot(2, SlotState{ref.position(), ref.History()});
  HashState fork = ref;  // copying a HashState forks it
  Ids a, b;
  for (int i = 0; i < 5; ++i) a.push_back(DrawId(layout));
  for (int i = 0; i < 4; ++i) b.push_back(DrawId(layout));
  Ids expected_a, expected_b;
  ref.Append(a, expected_a);
  fork.Append(b, expected_b);
  const Ids got = hasher.Append(std::vector<int32_t>{1, 0, 2}, Ids{4, 5, 5}, [&] {
    Ids flat = b;
    flat.insert(flat.end(), a.begin(), a.end());
    flat.insert(flat.end(), a.begin(), a.end());
    return flat;
  }());
  Ids expected = expected_b;
  expected.insert(expected.end(), expected_a.begin(), expected_a.end());
  expected.insert(expected.end(), expected_a.begin(), expected_a.end());
  RC_ASSERT(got == expected);
}

// §HASH.6 on the backend: random interleavings of append batches, rollback
// batches (counts up to beyond the capacity and the position), forks and
// exports with every retained id, on slots with a rollback capacity, against
// reference HashStates of the same capacity: the same rows, the same states,
// and a refused rollback batch (whenever the reference refuses one of its
// entries) changes no slot.
template <class Backend>
void RollbackMatchesReference(const std::string& property) {
  // Shapes and op kinds drawn uniformly whatever RapidCheck's size (inRange
  // alone yields its lower bound at small sizes); they still shrink.
  auto draw = [](int32_t lo, int32_t hi) { return *rc::gen::resize(100, rc::gen::inRange<int32_t>(lo, hi)); };
  const Profile profile = DrawProfile();
  const Layout layout = DrawLayout(profile, *rc::gen::inRange<int64_t>(1, 60));
  const int32_t capacity = draw(0, 7);
  const int32_t slots = draw(2, 6);
  const size_t row = static_cast<size_t>(layout.max_ngram - 1 + capacity);
  Hasher<Backend> hasher(layout, slots, nullptr, 0, capacity);
  std::vector<HashState> ref(static_cast<size_t>(slots), HashState(layout, static_cast<size_t>(capacity)));
  // §HASH.6 model of the ids on record: the last max-1 + capacity fed, minus
  // what rollbacks forgot (HashState keeps them privately).
  std::vector<Ids> kept(static_cast<size_t>(slots));
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  auto fail = [&](const std::string& why) {
    WriteFailCase(property, {{"type", "CudaHashRollback"}, {"layout", LayoutJson(layout)}, {"slots", slots},
                             {"rollbackCapacity", capacity}},
                  {{"comment", why}, {"flags", {"CudaMismatch"}}, {"specRef", {"§HASH.6"}}, {"ops", ops}});
    RC_FAIL(why);
  };
  auto check_states = [&] {
    for (int32_t q = 0; q < slots; ++q) {
      const SlotState s = hasher.GetSlot(q);
      if (s.position != ref[static_cast<size_t>(q)].position() || s.history != ref[static_cast<size_t>(q)].History()) {
        fail("slot " + std::to_string(q) + " differs from the reference after op " + std::to_string(ops.size()));
      }
      if (hasher.GetSlot(q, true).history != kept[static_cast<size_t>(q)]) {
        fail("retained ids of slot " + std::to_string(q) + " differ from the model after op " + std::to_string(ops.size()));
      }
    }
  };
  const int steps = draw(1, 16);
  for (int step = 0; step < steps; ++step) {
    const int kind = draw(0, 10);
    if (kind < 4) {  // append a chunk to every slot
      Ids lengths, flat, expected;
      std::vector<int32_t> order = DrawPermutation(slots);
      for (int32_t q : order) {
        const int n = draw(0, 8);
        Ids piece;
        for (int i = 0; i < n; ++i) piece.push_back(DrawId(layout));
        ref[static_cast<size_t>(q)].Append(piece, expected);
        Ids& k = kept[static_cast<size_t>(q)];
        k.insert(k.end(), piece.begin(), piece.end());
        if (k.size() > row) k.erase(k.begin(), k.end() - static_cast<std::ptrdiff_t>(row));
        lengths.push_back(n);
        flat.insert(flat.end(), piece.begin(), piece.end());
      }
      ops.push_back({{"append", {{"slots", order}, {"lengths", lengths}, {"ids", flat}}}});
      if (hasher.Append(order, lengths, flat) != expected) fail("rows after op " + std::to_string(ops.size()));
    } else if (kind < 8) {  // roll back some distinct slots
      std::vector<int32_t> order = DrawPermutation(slots);
      order.resize(static_cast<size_t>(draw(1, slots + 1)));
      Ids counts;
      bool refused = false;
      std::vector<HashState> next = ref;
      for (int32_t q : order) {
        const int64_t k = draw(0, capacity + 3);
        counts.push_back(k);
        try {
          next[static_cast<size_t>(q)].Rollback(static_cast<size_t>(k));
        } catch (const Error&) {
          refused = true;
        }
      }
      ops.push_back({{"rollback", {{"slots", order}, {"counts", counts}, {"refusedByReference", refused}}}});
      bool threw = false;
      try {
        hasher.Rollback(order, counts);
      } catch (const Error& e) {
        threw = std::string(e.what()).find("rollback: entry") != std::string::npos;
      }
      if (threw != refused) fail(refused ? "a rollback the reference refuses was accepted" : "a valid rollback was refused");
      if (!refused) {
        ref = std::move(next);
        for (size_t e = 0; e < order.size(); ++e) {
          Ids& k = kept[static_cast<size_t>(order[e])];
          k.resize(k.size() - static_cast<size_t>(counts[e]));
        }
      }
    } else if (kind == 8) {  // fork: some slots (sources) copied into the others (distinct targets)
      std::vector<int32_t> perm = DrawPermutation(slots);
      const size_t sources = static_cast<size_t>(draw(1, slots));  // the rest are possible targets
      const size_t targets = static_cast<size_t>(draw(1, slots - static_cast<int32_t>(sources) + 1));
      std::vector<int32_t> from, to;
      for (size_t e = 0; e < targets; ++e) {
        from.push_back(perm[static_cast<size_t>(draw(0, static_cast<int32_t>(sources)))]);
        to.push_back(perm[sources + e]);
      }
      ops.push_back({{"fork", {{"from", from}, {"to", to}}}});
      hasher.Fork(from, to);
      for (size_t e = 0; e < from.size(); ++e) {
        ref[static_cast<size_t>(to[e])] = ref[static_cast<size_t>(from[e])];
        kept[static_cast<size_t>(to[e])] = kept[static_cast<size_t>(from[e])];
      }
    } else {  // move a slot through the host with every retained id (a disaggregated hand-off)
      const int32_t from = draw(0, slots);
      int32_t to = draw(0, slots - 1);
      if (to >= from) ++to;
      ops.push_back({{"exportImport", {{"from", from}, {"to", to}}}});
      hasher.SetSlot(to, hasher.GetSlot(from, /*with_rollback_ids=*/true));
      ref[static_cast<size_t>(to)] = ref[static_cast<size_t>(from)];
      kept[static_cast<size_t>(to)] = kept[static_cast<size_t>(from)];
    }
    check_states();
  }
}

// ---------------------------------------------------------------------------
// Lookup properties, for either backend
// ---------------------------------------------------------------------------

struct DrawnTable {
  std::unique_ptr<RowSource> table;
  uint64_t seed = 0;
};

DrawnTable DrawTable(int64_t min_rows = 1) {
  DrawnTable t;
  t.seed = *rc::gen::arbitrary<uint64_t>();
  const int64_t head_dim = *rc::gen::elementOf(Ids{32, 64, 256});
  const int64_t rows = min_rows + *rc::gen::inRange<int64_t>(0, 200);
  t.table = SyntheticTable(t.seed, rows, head_dim, /*edge_rows=*/true);
  return t;
}

Ids DrawRowIds(int64_t rows) {
  const int n = *rc::gen::inRange(0, 40);
  Ids ids;
  for (int i = 0; i < n; ++i) ids.push_back(*rc::gen::inRange<int64_t>(0, rows));
  return ids;
}

void LookupFailCase(const std::string& property, const DrawnTable& t, const Ids& ids, const std::vector<uint16_t>& expected,
                    const std::vector<uint16_t>& got, nlohmann::ordered_json extra = nlohmann::ordered_json::object()) {
  nlohmann::ordered_json test = {{"comment", "decoded rows differ from the reference"},
                                 {"flags", {"CudaMismatch"}},
                                 {"specRef", {"§STO.3", "§STO.6", "§STO.7"}},
                                 {"rowIds", ids},
                                 {"expected", HexOfU16(expected)},
                                 {"got", HexOfU16(got)}};
  for (auto& [k, v] : extra.items()) test[k] = v;
  WriteFailCase(property,
                {{"type", "CudaLookup"}, {"table", {{"synthetic", true}, {"seed", t.seed}, {"rows", t.table->rows()},
                                                     {"headDim", t.table->head_dim()}, {"edgeRows", true}}}},
                test);
}

// §STO.6 Lookup + decode from backend memory or mapped host memory equals
// LookupRows bit for bit (NaN included: both give 0x7FC0).
template <class Backend>
void LookupMatchesReference(const std::string& property) {
  const DrawnTable t = DrawTable();
  const TableMemory memory = *rc::gen::element(TableMemory::kBackend, TableMemory::kHostMapped);
  const Ids ids = DrawRowIds(t.table->rows());
  Lookup<Backend> lookup(*t.table, memory);
  const std::vector<uint16_t> got = lookup.Rows(ids);
  const std::vector<uint16_t> expected = LookupRows(*t.table, ids);
  if (got != expected) {
    LookupFailCase(property, t, ids, expected, got, {{"memory", memory == TableMemory::kBackend ? "backend" : "hostMapped"}});
    RC_FAIL("lookup differs from LookupRows");
  }
  // An id outside [0, rows) is refused, naming its index.
  Ids bad = ids;
  const size_t at = *rc::gen::inRange<size_t>(0, bad.size() + 1);
  bad.insert(bad.begin() + static_cast<std::ptrdiff_t>(at), *rc::gen::element(int64_t{-1}, t.table->rows()));
  try {
    lookup.Rows(bad);
    RC_FAIL("an id outside the table was accepted");
  } catch (const Error& e) {
    RC_ASSERT(std::string(e.what()).find("index " + std::to_string(at)) != std::string::npos);
  }
}

// §STO.7 A rank's shard lookup equals ShardLookup bit for bit.
template <class Backend>
void ShardLookupMatchesReference(const std::string& property) {
  const DrawnTable t = DrawTable();
  const int world = *rc::gen::inRange(1, 9);
  const int rank = *rc::gen::inRange(0, world);
  const Shard s = RowShard(t.table->rows(), rank, world);
  const Ids ids = DrawRowIds(t.table->rows());
  Lookup<Backend> lookup(*t.table, TableMemory::kBackend, s.begin, s.end);
  const std::vector<uint16_t> got = lookup.Rows(ids);
  const std::vector<uint16_t> expected = ShardLookup(*t.table, ids, rank, world);
  if (got != expected) {
    LookupFailCase(property, t, ids, expected, got, {{"rank", rank}, {"world", world}});
    RC_FAIL("shard lookup differs from ShardLookup");
  }
}

// The hash output feeds the lookup directly: layer li's columns of
// rows[t][layer][col] are read in place (id_group/id_stride/id_offset), and
// equal LookupRows of those ids in a table of the layer's num_embeddings rows.
template <class Backend>
void HashThenLookupMatchesReference() {
  const Profile profile = DrawProfile();
  const Layout layout = DrawLayout(profile, *rc::gen::inRange<int64_t>(1, 60));
  Ids ids;
  const int n = *rc::gen::inRange(0, 20);
  for (int i = 0; i < n; ++i) ids.push_back(DrawId(layout));
  Hasher<Backend> hasher(layout, 1);
  const Ids rows = hasher.Append(std::vector<int32_t>{0}, Ids{n}, ids);
  const size_t li = *rc::gen::inRange<size_t>(0, layout.layers.size());
  const int64_t cols = layout.columns();
  const int64_t layers = static_cast<int64_t>(layout.layers.size());
  const auto table = SyntheticTable(*rc::gen::arbitrary<uint64_t>(), layout.layers[li].num_embeddings, 32, true);
  Ids layer_ids;
  for (int t = 0; t < n; ++t) {
    for (int64_t c = 0; c < cols; ++c) layer_ids.push_back(rows[static_cast<size_t>((t * layers + static_cast<int64_t>(li)) * cols + c)]);
  }
  Lookup<Backend> lookup(*table, TableMemory::kBackend);
  Backend& b = lookup.backend();
  Buffer<Backend> d_rows(&b, std::max<size_t>(8, rows.size() * 8));
  Buffer<Backend> d_out(&b, std::max<size_t>(16, layer_ids.size() * 32 * 2));
  if (!rows.empty()) b.ToBackend(d_rows.template as<void>(), rows.data(), rows.size() * 8);
  lookup.Launch(d_rows.template as<int64_t>(), static_cast<int64_t>(layer_ids.size()), d_out.template as<uint16_t>(), cols,
                layers * cols, static_cast<int64_t>(li) * cols);
  lookup.Finish();
  std::vector<uint16_t> got(layer_ids.size() * 32);
  if (!got.empty()) b.ToHost(got.data(), d_out.template as<void>(), got.size() * 2);
  RC_ASSERT(got == LookupRows(*table, layer_ids));
}

// ---------------------------------------------------------------------------
// §FUS.3 v4.1 gate + update, for either backend
// ---------------------------------------------------------------------------

// bf16 bits from a counter-based generator (SplitMix64): mostly finite
// values of moderate size, sometimes +-0, NaN, inf, huge or subnormal values.
// The values come from one drawn seed rather than one RapidCheck draw each,
// so that shrinking a failure (thousands of values at dim 5120) only shrinks
// the shape and stays fast.
struct Bf16Source : SplitMix64 {
  uint16_t Draw() {
    const uint64_t r = Next();
    const int kind = static_cast<int>(r % 40);
    const uint16_t sign = (r >> 8) & 1 ? 0x8000 : 0;
    const uint16_t mant = static_cast<uint16_t>((r >> 16) & 0x7F);
    const uint16_t e = static_cast<uint16_t>((r >> 24) % 14);
    if (kind < 34) return static_cast<uint16_t>(sign | ((118 + e) << 7) | mant);  // ~2^-9 .. 2^4
    if (kind < 36) return sign;                                                   // +-0
    if (kind < 37) return static_cast<uint16_t>(0x7FC0 | mant | sign);            // NaN
    if (kind < 38) return static_cast<uint16_t>(0x7F80 | sign);                   // inf
    if (kind < 39) return static_cast<uint16_t>(sign | ((200 + e * 3) << 7) | mant);  // huge
    return static_cast<uint16_t>(sign | mant);                                    // subnormal
  }
  std::vector<uint16_t> Draw(size_t n) {
    std::vector<uint16_t> v(n);
    for (auto& x : v) x = Draw();
    return v;
  }
};

bool SameFloat(float a, double ref) {
  const float r = static_cast<float>(ref);  // the mirror's values are float32 values
  if (std::isnan(a) || std::isnan(r)) return std::isnan(a) && std::isnan(r);
  return std::memcmp(&a, &r, sizeof a) == 0;
}

// Output bits, dot and gate equal FuseV41Stream(..., kFloat32) exactly.
template <class Backend>
void FusionV41MatchesMirror(const std::string& property) {
  const int32_t hc = *rc::gen::inRange(1, 5);
  const int32_t dim = *rc::gen::inRange(0, 10) == 0 ? *rc::gen::element(256, 5120) : *rc::gen::inRange(1, 80);
  const int tokens = *rc::gen::inRange(0, 5);
  const double eps = *rc::gen::element(1e-20, 1e-6, 0.0);
  const size_t sd = static_cast<size_t>(dim), shc = static_cast<size_t>(hc);
  Bf16Source src{*rc::gen::arbitrary<uint64_t>()};
  const std::vector<uint16_t> qw = src.Draw(shc * sd), kw = src.Draw(shc * sd);
  const std::vector<uint16_t> x = src.Draw(static_cast<size_t>(tokens) * shc * sd);
  const std::vector<uint16_t> key = src.Draw(x.size()), value = src.Draw(static_cast<size_t>(tokens) * sd);
  std::vector<uint8_t> live;
  if (*rc::gen::arbitrary<bool>()) {
    for (int t = 0; t < tokens; ++t) live.push_back(*rc::gen::inRange(0, 3) == 0 ? 0 : 1);
  }
  FusionV41<Backend> fusion(hc, dim, eps, qw, kw);
  const std::vector<uint16_t> out = fusion.Apply(x, key, value, live);
  for (size_t t = 0; t < static_cast<size_t>(tokens); ++t) {
    for (size_t c = 0; c < shc; ++c) {
      const size_t at = (t * shc + c) * sd;
      auto span_of = [&](const std::vector<uint16_t>& v, size_t from) { return std::span<const uint16_t>(v).subspan(from, sd); };
      const V41StreamTrace ref = FuseV41Stream(span_of(x, at), span_of(key, at), span_of(value, t * sd), span_of(qw, c * sd),
                                               span_of(kw, c * sd), eps, !live.empty() && live[t] == 0, Precision::kFloat32);
      const std::vector<uint16_t> got(out.begin() + static_cast<std::ptrdiff_t>(at), out.begin() + static_cast<std::ptrdiff_t>(at + sd));
      const bool ok = got == ref.out_bf16 && SameFloat(fusion.dots()[t * shc + c], ref.dot) &&
                      SameFloat(fusion.gates()[t * shc + c], ref.gate);
      if (!ok) {
        WriteFailCase(property, {{"type", "CudaFusionV41"}, {"hc", hc}, {"dim", dim}, {"eps", FloatHex(eps)},
                                 {"qWeight", HexOfU16(qw)}, {"kWeight", HexOfU16(kw)}},
                      {{"comment", "token " + std::to_string(t) + " stream " + std::to_string(c) + " differs from the float32 mirror"},
                       {"flags", {"CudaMismatch"}}, {"specRef", {"§FUS.3", "§FUS.4", "§FUS.8"}},
                       {"x", HexOfU16(x)}, {"key", HexOfU16(key)}, {"value", HexOfU16(value)}, {"live", live},
                       {"expectedDot", FloatHex(ref.dot)}, {"gotDot", FloatHex(fusion.dots()[t * shc + c])},
                       {"expectedGate", FloatHex(ref.gate)}, {"gotGate", FloatHex(fusion.gates()[t * shc + c])},
                       {"expectedOut", HexOfU16(ref.out_bf16)}, {"gotOut", HexOfU16(got)}});
        RC_FAIL("fusion differs from FuseV41Stream(float32) at token " + std::to_string(t) + " stream " + std::to_string(c));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// HostLauncher: everywhere
// ---------------------------------------------------------------------------

// §STO.3 Every (code, scale) pair through the lookup kernel, from backend
// and from mapped host memory. Row r of the table has all eight scales equal
// to r and the 256 codes in the order c * stride mod 256, so the kernel
// decodes every pair; with stride 1 each thread's 8 codes are consecutive
// (groups like 0x08..0x0F take the two-at-a-time path at scales 10..246,
// groups with a zero, subnormal or NaN code the per-element one), with
// stride 37 they mix signs and exponents.
template <class Backend>
void AllPairsLookupMatchesReference() {
  struct AllPairs final : RowSource {
    explicit AllPairs(int stride) : stride_(stride) {}
    int64_t rows() const override { return 256; }
    int64_t head_dim() const override { return 256; }
    std::string name() const override { return "<all pairs, stride " + std::to_string(stride_) + ">"; }
    RowBytes Row(int64_t row) const override {
      RowBytes b;
      for (int c = 0; c < 256; ++c) b.codes.push_back(static_cast<uint8_t>((c * stride_) & 0xFF));
      b.scales.assign(8, static_cast<uint8_t>(row));
      return b;
    }
    int stride_;
  };
  Ids ids(256);
  std::iota(ids.begin(), ids.end(), 0);
  for (int stride : {1, 37}) {
    const AllPairs table(stride);
    for (TableMemory memory : {TableMemory::kBackend, TableMemory::kHostMapped}) {
      Lookup<Backend> lookup(table, memory);
      EXPECT_EQ(lookup.Rows(ids), LookupRows(table, ids)) << table.name();
    }
  }
}

TEST(HostLauncher, DecodeElementThroughLookupExhaustive_STO3) { AllPairsLookupMatchesReference<HostBackend>(); }

// §STO.3 The lookup's normal-scale decode equals the reference for every
// code at every scale of its range, both one element at a time
// (DecodeElementBitsNormalScale) and two at a time (DecodePairNormal, for
// the normal finite codes it is used for, against partners of every kind);
// and the range is the widest one: at scales 9 and 247 the formula is wrong
// for some code (a bf16 subnormal or an overflow).
TEST(HostLauncher, DecodeNormalScaleExhaustive_STO3) {
  int mismatches = 0;
  auto expect = [&](bool ok, int code, int scale, const char* what) {
    if (!ok && ++mismatches <= 10) ADD_FAILURE() << what << ": code 0x" << std::hex << code << " scale 0x" << scale;
  };
  for (int scale = kNormalScaleMin; scale <= kNormalScaleMax; ++scale) {
    const uint32_t e2 = ((static_cast<uint32_t>(scale) - 7u) << 7) * 0x00010001u;
    for (int code = 0; code < 256; ++code) {
      const uint16_t want = DecodeElement(static_cast<uint8_t>(code), static_cast<uint8_t>(scale));
      expect(DecodeElementBitsNormalScale(static_cast<uint8_t>(code), static_cast<uint8_t>(scale)) == want, code, scale,
             "DecodeElementBitsNormalScale");
      if ((code & 0x7F) < 8 || (code & 0x7F) == 0x7F) continue;
      for (int partner : {0x08, 0x7E, 0x80 | 0x08, 0xFE, code, 0x55, 0xAA}) {
        const uint16_t want2 = DecodeElement(static_cast<uint8_t>(partner), static_cast<uint8_t>(scale));
        const uint32_t lanes = DecodePairNormal(static_cast<uint32_t>(code) | static_cast<uint32_t>(partner) << 16, e2);
        expect((lanes & 0xFFFF) == want && (lanes >> 16) == want2, code, scale, "DecodePairNormal");
        const uint32_t swapped = DecodePairNormal(static_cast<uint32_t>(partner) | static_cast<uint32_t>(code) << 16, e2);
        expect((swapped & 0xFFFF) == want2 && (swapped >> 16) == want, code, scale, "DecodePairNormal (high half)");
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  for (int scale : {kNormalScaleMin - 1, kNormalScaleMax + 1}) {
    int wrong = 0;
    for (int code = 0; code < 256; ++code) {
      wrong += DecodeElementBitsNormalScale(static_cast<uint8_t>(code), static_cast<uint8_t>(scale)) !=
               DecodeElement(static_cast<uint8_t>(code), static_cast<uint8_t>(scale));
    }
    EXPECT_GT(wrong, 0) << "scale " << scale << " is decoded correctly by the normal-scale formula: widen the range";
  }
}

// AllNormalCodes / HasZeroByte / LowPair / HighPair against the byte-by-byte
// definitions, for random words with each byte drawn from the code classes
// (zero, subnormal, normal, NaN, either sign).
RC_GTEST_PROP(HostLauncher, NormalCodeWordHelpers_STO3, ()) {
  const auto code = rc::gen::oneOf(rc::gen::element<uint32_t>(0x00, 0x80, 0x7F, 0xFF, 0x08, 0x88, 0x7E, 0xFE),
                                   rc::gen::inRange<uint32_t>(0, 256));
  uint32_t w = 0;
  bool all_normal = true;
  bool zero_byte = false;
  for (int b = 0; b < 4; ++b) {
    const uint32_t c = *code;
    w |= c << (8 * b);
    all_normal = all_normal && (c & 0x7F) >= 8 && (c & 0x7F) != 0x7F;
    zero_byte = zero_byte || c == 0;
  }
  RC_ASSERT(AllNormalCodes(w) == all_normal);
  RC_ASSERT(HasZeroByte(w) == zero_byte);
  RC_ASSERT(LowPair(w) == ((w & 0xFF) | ((w >> 8) & 0xFF) << 16));
  RC_ASSERT(HighPair(w) == (((w >> 16) & 0xFF) | ((w >> 24) & 0xFF) << 16));
}

// The index arithmetic: Quotient(x, MakeFastDiv(d)) == x / d on both of its
// paths (x and d below 2^32: 32-bit; otherwise 64-bit), at the edges of each.
RC_GTEST_PROP(HostLauncher, QuotientEqualsDivision, (uint64_t x_raw, uint64_t d_raw)) {
  const int xbits = *rc::gen::inRange(0, 65);
  const int dbits = *rc::gen::inRange(1, 65);
  const uint64_t x = xbits == 64 ? x_raw : x_raw & ((uint64_t{1} << xbits) - 1);
  const uint64_t d = std::max<uint64_t>(1, dbits == 64 ? d_raw : d_raw & ((uint64_t{1} << dbits) - 1));
  RC_ASSERT(Quotient(x, MakeFastDiv(d)) == x / d);
  const uint64_t k32 = 0xFFFFFFFFull;
  for (uint64_t e : {uint64_t{0}, uint64_t{1}, d - 1, d, d + 1, k32 - 1, k32, k32 + 1, ~uint64_t{0}, d * 7 + 3}) {
    RC_ASSERT(Quotient(e, MakeFastDiv(d)) == e / d);
    for (uint64_t dd : {uint64_t{1}, uint64_t{2}, uint64_t{3}, k32 - 1, k32, k32 + 1, ~uint64_t{0}}) {
      RC_ASSERT(Quotient(e, MakeFastDiv(dd)) == e / dd);
    }
  }
}

// §STO.3 Every (code, scale) pair: the integer decode of the kernels equals
// the reference's float decode bit for bit.
TEST(HostLauncher, DecodeElementExhaustive_STO3) {
  int mismatches = 0;
  for (int code = 0; code < 256; ++code) {
    for (int scale = 0; scale < 256; ++scale) {
      const uint16_t got = DecodeElementBits(static_cast<uint8_t>(code), static_cast<uint8_t>(scale));
      const uint16_t want = DecodeElement(static_cast<uint8_t>(code), static_cast<uint8_t>(scale));
      if (got != want && ++mismatches <= 10) {
        ADD_FAILURE() << "code 0x" << std::hex << code << " scale 0x" << scale << ": got 0x" << got << " want 0x" << want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// §HASH.7 ModP equals `%` for random x and p in [2, 2^63), and at the edges.
RC_GTEST_PROP(HostLauncher, ModPEqualsPercent_HASH7, (uint64_t x)) {
  const int bits = *rc::gen::inRange(2, 64);
  const uint64_t p = std::max<uint64_t>(2, *rc::gen::arbitrary<uint64_t>() >> (64 - bits)) & ((uint64_t{1} << 63) - 1);
  const uint64_t q = std::max<uint64_t>(p, 2);
  const uint64_t m = UINT64_MAX / q;
  RC_ASSERT(ModP(x, q, m) == x % q);
  for (uint64_t edge : {uint64_t{0}, uint64_t{1}, q - 1, q, q + 1, UINT64_MAX, UINT64_MAX - 1, uint64_t{1} << 63}) {
    RC_ASSERT(ModP(edge, q, m) == edge % q);
  }
}

RC_GTEST_PROP(HostLauncher, HashBatchesMatchReference_HASH5, ()) { HashBatchesMatchReference<HostBackend>("HostHashBatches"); }
RC_GTEST_PROP(HostLauncher, RawIdsMatchReference_HASH1, ()) { RawIdsMatchReference<HostBackend>("HostRawIds"); }
RC_GTEST_PROP(HostLauncher, RefusalAndForkMatchReference_HASH6, ()) { RefusalAndForkMatchReference<HostBackend>(); }
RC_GTEST_PROP(HostLauncher, RollbackMatchesReference_HASH6, ()) { RollbackMatchesReference<HostBackend>("HostRollback"); }
RC_GTEST_PROP(HostLauncher, LookupMatchesReference_STO6, ()) { LookupMatchesReference<HostBackend>("HostLookup"); }
RC_GTEST_PROP(HostLauncher, ShardLookupMatchesReference_STO7, ()) { ShardLookupMatchesReference<HostBackend>("HostShard"); }
RC_GTEST_PROP(HostLauncher, HashThenLookupMatchesReference, ()) { HashThenLookupMatchesReference<HostBackend>(); }

// §STO.7 The emulated all_reduce over any world equals ReduceShards of the
// reference's ShardLookups: bit for bit, NaN matching NaN (§STO.9: the GPU's
// canonical NaN is 0x7FFF, the reference's 0x7FC0); world 1 exactly.
RC_GTEST_PROP(HostLauncher, TensorParallelMatchesReduceShards_STO7, ()) {
  const DrawnTable t = DrawTable();
  const int world = *rc::gen::inRange(1, 9);
  const Ids ids = DrawRowIds(t.table->rows());
  const std::vector<uint16_t> got = HostTensorParallelLookup(*t.table, ids, world);
  std::vector<std::vector<uint16_t>> partials;
  for (int r = 0; r < world; ++r) partials.push_back(ShardLookup(*t.table, ids, r, world));
  const std::vector<uint16_t> expected = ReduceShards(partials);
  RC_ASSERT(got.size() == expected.size());
  bool ok = true;
  for (size_t i = 0; i < got.size(); ++i) ok = ok && (world == 1 ? got[i] == expected[i] : Bf16Match(got[i], expected[i]));
  if (!ok) {
    LookupFailCase("HostTensorParallel", t, ids, expected, got, {{"world", world}});
    RC_FAIL("tensor-parallel sum differs from ReduceShards");
  }
}

RC_GTEST_PROP(HostLauncher, FusionV41MatchesFloat32Mirror_FUS3, ()) { FusionV41MatchesMirror<HostBackend>("HostFusionV41"); }

TEST(HostLauncher, BatchArgumentErrors) {
  const Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);
  HostHasher h(layout, 2);
  EXPECT_THROW(h.Append(std::vector<int32_t>{0, 0}, Ids{1, 1}, Ids{1, 2}), Error);  // slot twice
  EXPECT_THROW(h.Append(std::vector<int32_t>{2}, Ids{1}, Ids{1}), Error);           // no such slot
  EXPECT_THROW(h.Append(std::vector<int32_t>{0}, Ids{2}, Ids{1}), Error);           // lengths != ids
  EXPECT_THROW(h.SetSlot(0, SlotState{5, Ids{1, 2}}), Error);                      // needs 3 history ids
  try {
    h.Append(std::vector<int32_t>{0, 1}, Ids{1, 2}, Ids{4, 5, 99092});
    FAIL() << "id 99092 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("position 2 (id 99092)"), std::string::npos) << e.what();
  }
}

// Rollback and fork batches refuse what would be ambiguous or out of range,
// with a message naming the entry, and change no slot.
TEST(HostLauncher, RollbackForkArgumentErrors_HASH6) {
  const Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);  // max_ngram 4: 3 ids for hashing
  auto expect_error = [](auto call, const std::string& part) {
    try {
      call();
      ADD_FAILURE() << "accepted; expected an error containing \"" << part << "\"";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error([&] { HostHasher bad(layout, 1, nullptr, 0, -1); }, "rollback capacity -1");
  expect_error([&] { HostHasher bad(layout, 1, nullptr, 0, INT32_MAX); }, "rollback capacity 2147483647");
  HostHasher h(layout, 4, nullptr, 0, 2);
  h.Append(std::vector<int32_t>{0, 1}, Ids{6, 1}, Ids{1, 2, 3, 4, 5, 6, 7});
  const SlotState before0 = h.GetSlot(0, true), before1 = h.GetSlot(1, true);
  EXPECT_EQ(before0.history, (Ids{2, 3, 4, 5, 6}));  // max-1 + capacity = 5 ids retained
  using Slots = std::vector<int32_t>;
  expect_error([&] { h.Rollback(Slots{0, 0}, Ids{1, 1}); }, "entry 1 names slot 0 again");
  expect_error([&] { h.Rollback(Slots{4}, Ids{1}); }, "rollback: entry 0: slot 4");
  expect_error([&] { h.Rollback(Slots{0}, Ids{1, 2}); }, "1 slots but 2 counts");
  expect_error([&] { h.Rollback(Slots{1, 0}, Ids{0, 3}); }, "entry 1 (slot 0) by 3 needs 6 ids on record but 5");
  expect_error([&] { h.Rollback(Slots{0, 1}, Ids{1, 2}); }, "entry 1 (slot 1) by 2 exceeds the position 1");
  expect_error([&] { h.Rollback(Slots{0}, Ids{-1}); }, "by -1 is negative");
  expect_error([&] { h.Fork(Slots{0, 1}, Slots{2, 2}); }, "entry 1 target slot 2 is also a target");
  expect_error([&] { h.Fork(Slots{0, 2}, Slots{2, 3}); }, "entry 0 target slot 2 is also a target or a source");
  expect_error([&] { h.Fork(Slots{0}, Slots{0}); }, "target slot 0");
  expect_error([&] { h.Fork(Slots{0}, Slots{7}); }, "fork: entry 0 target: slot 7");
  expect_error([&] { h.Fork(Slots{0}, Slots{1, 2}); }, "1 sources but 2 targets");
  expect_error([&] { h.SetSlot(2, SlotState{9, Ids{1, 2, 3, 4, 5, 6}}); }, "needs 3 to 5 history ids");
  EXPECT_EQ(h.GetSlot(0, true).position, before0.position);
  EXPECT_EQ(h.GetSlot(0, true).history, before0.history);
  EXPECT_EQ(h.GetSlot(1, true).history, before1.history);
  // The valid forms: k = 0, a mixed batch, one source to several targets.
  h.Rollback(Slots{0, 1}, Ids{2, 0});
  EXPECT_EQ(h.GetSlot(0, true).history, (Ids{2, 3, 4}));
  EXPECT_EQ(h.GetSlot(0).position, 4);
  h.Fork(Slots{0, 0}, Slots{2, 3});
  EXPECT_EQ(h.GetSlot(3, true).history, (Ids{2, 3, 4}));
  EXPECT_EQ(h.GetSlot(3).position, 4);
  EXPECT_EQ(h.GetSlot(2).history, (Ids{2, 3, 4}));
}

// The V4.1-Flash layout on a longer batch (the shapes the benchmark uses).
TEST(HostLauncher, V41FlashBatchMatchesReference) {
  const Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);
  HostHasher h(layout, 4);
  std::vector<HashState> ref(4, HashState(layout));
  uint64_t s = 12345;
  auto next = [&] { s = s * 6364136223846793005ull + 1442695040888963407ull; return s >> 33; };
  for (int step = 0; step < 6; ++step) {
    Ids lengths, flat, expected;
    for (int q = 0; q < 4; ++q) {
      const int64_t n = step == 0 ? 100 + 37 * q : 1;  // a prefill, then decode steps
      Ids piece;
      for (int64_t i = 0; i < n; ++i) piece.push_back(next() % 13 == 0 ? kDead : static_cast<int64_t>(next() % 99092));
      ref[static_cast<size_t>(q)].Append(piece, expected);
      lengths.push_back(n);
      flat.insert(flat.end(), piece.begin(), piece.end());
    }
    ASSERT_EQ(h.Append(std::vector<int32_t>{0, 1, 2, 3}, lengths, flat), expected) << "step " << step;
  }
}

// ---------------------------------------------------------------------------
// Device: the same properties on a GPU (skipped without one)
// ---------------------------------------------------------------------------

// rc::check prints the seed and the shrunk counterexample on failure.
template <class F>
void CheckOnDevice(const char* name, F body) {
  EXPECT_TRUE(rc::check(name, body));
}

TEST(Device, Describe) {
  SKIP_WITHOUT_DEVICE();
  const int n = DeviceCount();
  for (int d = 0; d < n; ++d) std::cout << "device " << d << ": " << DeviceDescription(d) << "\n";
}

TEST(Device, DecodeElementExhaustive_STO3) {
  SKIP_WITHOUT_DEVICE();
  AllPairsLookupMatchesReference<DeviceBackend>();
}

TEST(Device, HashBatchesMatchReference_HASH5) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device hash batches", [] { HashBatchesMatchReference<DeviceBackend>("DeviceHashBatches"); });
}
TEST(Device, RawIdsMatchReference_HASH1) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device raw ids", [] { RawIdsMatchReference<DeviceBackend>("DeviceRawIds"); });
}
TEST(Device, RefusalAndForkMatchReference_HASH6) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device refusal and fork", [] { RefusalAndForkMatchReference<DeviceBackend>(); });
}
TEST(Device, RollbackMatchesReference_HASH6) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device rollback", [] { RollbackMatchesReference<DeviceBackend>("DeviceRollback"); });
}
TEST(Device, LookupMatchesReference_STO6) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device lookup", [] { LookupMatchesReference<DeviceBackend>("DeviceLookup"); });
}
TEST(Device, ShardLookupMatchesReference_STO7) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device shard lookup", [] { ShardLookupMatchesReference<DeviceBackend>("DeviceShard"); });
}
TEST(Device, HashThenLookupMatchesReference) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device hash then lookup", [] { HashThenLookupMatchesReference<DeviceBackend>(); });
}

TEST(Device, FusionV41MatchesFloat32Mirror_FUS3) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device v4.1 fusion", [] { FusionV41MatchesMirror<DeviceBackend>("DeviceFusionV41"); });
}

TEST(Device, V41FlashLargeBatchMatchesHostLauncher) {
  SKIP_WITHOUT_DEVICE();
  // 64 sequences of mixed lengths (1 .. 4096) through both backends.
  const Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);
  DeviceHasher d(layout, 64);
  HostHasher h(layout, 64);
  uint64_t s = 777;
  auto next = [&] { s = s * 6364136223846793005ull + 1442695040888963407ull; return s >> 33; };
  for (int step = 0; step < 3; ++step) {
    std::vector<int32_t> slots;
    Ids lengths, flat;
    for (int q = 0; q < 64; ++q) {
      const int64_t n = step == 0 ? static_cast<int64_t>(1 + next() % 4096) : 1;
      slots.push_back(q);
      lengths.push_back(n);
      for (int64_t i = 0; i < n; ++i) flat.push_back(next() % 17 == 0 ? kDead : static_cast<int64_t>(next() % 99092));
    }
    ASSERT_EQ(d.Append(slots, lengths, flat), h.Append(slots, lengths, flat)) << "step " << step;
  }
}

// §STO.7 world 1 on one GPU (NCCL with a single rank): exactly the reference.
TEST(Device, TensorParallelWorldOne_STO7) {
  SKIP_WITHOUT_DEVICE();
  CheckOnDevice("device tensor parallel world 1", [] {
    const DrawnTable t = DrawTable();
    const Ids ids = DrawRowIds(t.table->rows());
    TensorParallelLookup tp(*t.table, 1);
    RC_ASSERT(tp.Rows(ids) == ReduceShards({ShardLookup(*t.table, ids, 0, 1)}));
  });
}

// §STO.7 Every GPU a rank: equals ReduceShards (NaN matching NaN, §STO.9).
TEST(Device, TensorParallelMultiRank_STO7) {
  SKIP_WITHOUT_DEVICE();
  const int n = DeviceCount();
  if (n < 2) GTEST_SKIP() << "multi-rank tensor parallel needs >= 2 GPUs; found " << n;
  for (int world = 2; world <= n; world *= 2) {
    const auto table = SyntheticTable(99, 1000 + world, 256, true);
    Ids ids;
    for (int i = 0; i < 300; ++i) ids.push_back((i * 7919) % table->rows());
    TensorParallelLookup tp(*table, world);
    const std::vector<uint16_t> got = tp.Rows(ids);
    std::vector<std::vector<uint16_t>> partials;
    for (int r = 0; r < world; ++r) partials.push_back(ShardLookup(*table, ids, r, world));
    const std::vector<uint16_t> expected = ReduceShards(partials);
    ASSERT_EQ(got.size(), expected.size());
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) bad += Bf16Match(got[i], expected[i]) ? 0 : 1;
    EXPECT_EQ(bad, 0u) << "world " << world;
  }
}

}  // namespace
}  // namespace engram::cuda
