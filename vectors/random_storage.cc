// spec/conformance.md §CONF.7 — random cases of the suites table_lookup and
// tp_shard (§STO.5-§STO.8): synthetic tables of any shape looked up, row
// sharded over any world size, and head sharded.
//
// Distributions: the table's seed over all of uint64; rows log-uniform in
// [1, 2^40] (one case in four the real V4.1 layer, 384,006,168 rows); head
// dim 32 to 256 in steps of 32; edge rows (NaN codes, scales 0x00 and 0xFF,
// subnormal products, §STO.5) in half the tables. Row ids are the table's
// ends, the first and last row of random shards (tp_shard), repeats, and ids
// of a random bit length; one case in 20 holds an id outside [0, rows) (-1,
// rows, or far beyond) and must be refused. World sizes are one of the fixed
// vectors' (1, 2, 3, 4, 7, 8, 16, 64) or log-uniform in [1, 64], so that a
// world larger than the table (ranks that own no row) and a short last shard
// come up. Head sharding: 1 to 32 columns (more ranks than columns too), 1 to
// 3 positions.
#include <algorithm>

#include "base/error.h"
#include "base/hex.h"
#include "reference/storage.h"
#include "vectors/random_cases.h"
#include "vectors/suite_storage.h"

namespace engram::vectors {
namespace {

constexpr int64_t kV41Rows = 384006168;  // layer 1 of DeepSeek-V4.1-Flash (spec/sources.md [SRC-V41-CONFIG])
const int kFixedWorlds[] = {1, 2, 3, 4, 7, 8, 16, 64};

// One draw per statement (the order of two draws in one expression is unspecified in C++).
ojson DrawTable(CaseRng& rng) {
  ojson t;
  t["seed"] = rng.Next();
  int64_t rows = kV41Rows;
  if (!rng.Chance(1, 4)) rows = rng.Scaled(1, int64_t{1} << 40);
  t["rows"] = rows;
  t["headDim"] = 32 * rng.In(1, 8);
  t["edgeRows"] = rng.Chance(1, 2);
  return t;
}

// A row id of the table: an end, a random one, or a small one.
int64_t DrawRow(CaseRng& rng, int64_t rows) {
  switch (rng.Below(4)) {
    case 0: return 0;
    case 1: return rows - 1;
    case 2: return rng.Below(std::min<int64_t>(rows, 64));
    default: return rng.Scaled(0, rows - 1);
  }
}

// One case in 20: an id outside the table replaces one of `ids`.
void MaybeBreak(CaseRng& rng, ojson& ids, int64_t rows) {
  if (!rng.Chance(1, 20)) return;
  const int64_t bad_kind = rng.Below(3);
  int64_t bad = -1;
  if (bad_kind == 1) bad = rows;
  if (bad_kind == 2) bad = rows + rng.Scaled(1, int64_t{1} << 40);
  const size_t at = static_cast<size_t>(rng.Below(static_cast<int64_t>(ids.size())));
  ids[at] = bad;
}

int DrawWorld(CaseRng& rng) {
  if (rng.Chance(1, 3)) return kFixedWorlds[rng.Below(8)];
  return static_cast<int>(rng.Scaled(1, 64));
}

std::unique_ptr<RowSource> TableOf(const ojson& t) {
  return SyntheticTable(t["seed"].get<uint64_t>(), t["rows"].get<int64_t>(), t["headDim"].get<int64_t>(),
                        t["edgeRows"].get<bool>());
}

ojson TableGroupJson(const ojson& t) {
  return TableJson("synthetic", t["seed"].get<uint64_t>(), t["rows"].get<int64_t>(), t["headDim"].get<int64_t>(),
                   t["edgeRows"].get<bool>());
}

std::string TableSize(const ojson& t) {
  return "rows " + std::to_string(t["rows"].get<int64_t>()) + ", head dim " + std::to_string(t["headDim"].get<int64_t>()) +
         (t["edgeRows"].get<bool>() ? ", edge rows" : "");
}

int64_t TableMeasure(const ojson& t) {
  return BitLength(static_cast<uint64_t>(t["rows"].get<int64_t>())) + t["headDim"].get<int64_t>() / 32 +
         (t["edgeRows"].get<bool>() ? 4 : 0) + (t["seed"].get<uint64_t>() != 0 ? 1 : 0);
}

// The ids of a recipe on a smaller table: a valid id is kept below the new
// row count, an invalid one stays invalid (-1 stays, one past the end moves
// with the end).
ojson IdsFor(const ojson& ids, int64_t old_rows, int64_t new_rows) {
  ojson out = ojson::array();
  for (const auto& j : ids) {
    const int64_t id = j;
    if (id < 0) {
      out.push_back(id);
    } else if (id >= old_rows) {
      out.push_back(new_rows + std::min<int64_t>(id - old_rows, new_rows));
    } else {
      out.push_back(std::min(id, new_rows - 1));
    }
  }
  return out;
}

// Shrink candidates of the table part of a recipe (r["table"]), with the ids
// moved along.
void ShrinkTable(const ojson& r, std::vector<ojson>& out) {
  const ojson& t = r["table"];
  auto with = [&](const char* key, const ojson& value) {
    if (t[key] == value) return;
    ojson c = r;
    c["table"][key] = value;
    out.push_back(c);
  };
  with("edgeRows", false);
  with("headDim", 32);
  with("seed", 0);
  const int64_t rows = t["rows"];
  for (int64_t smaller : {int64_t{1}, rows / 2, rows - 1}) {
    if (smaller < 1 || smaller >= rows) continue;
    ojson c = r;
    c["table"]["rows"] = smaller;
    c["ids"] = IdsFor(r["ids"], rows, smaller);
    out.push_back(c);
  }
}

// Candidates with one id fewer, and with only the first half of the ids.
void ShrinkIds(const ojson& r, std::vector<ojson>& out, size_t keep_multiple_of = 1) {
  const size_t n = r["ids"].size();
  if (n <= keep_multiple_of) return;
  if (keep_multiple_of == 1) {
    for (size_t i = 0; i < n; ++i) {
      ojson c = r;
      c["ids"].erase(i);
      out.push_back(c);
    }
  }
  const size_t half = std::max(keep_multiple_of, n / 2 / keep_multiple_of * keep_multiple_of);
  if (half < n) {
    ojson c = r;
    ojson ids = ojson::array();
    for (size_t i = 0; i < half; ++i) ids.push_back(r["ids"][i]);
    c["ids"] = ids;
    out.push_back(c);
  }
}

// ---------------------------------------------------------------- table_lookup

ojson DrawLookup(uint64_t seed, int64_t index) {
  CaseRng rng(seed, "table_lookup", index);
  ojson r;
  r["table"] = DrawTable(rng);
  const int64_t rows = r["table"]["rows"];
  ojson ids = ojson::array();
  const int64_t n = rng.In(1, 8);
  for (int64_t i = 0; i < n; ++i) ids.push_back(DrawRow(rng, rows));
  if (n > 1 && rng.Chance(1, 4)) ids[static_cast<size_t>(n - 1)] = ids[0];  // a repeated id
  MaybeBreak(rng, ids, rows);
  r["ids"] = ids;
  return r;
}

RandomCase BuildLookup(const ojson& r) {
  RandomCase c;
  c.recipe = r;
  c.type = "SyntheticLookupTest";
  const ojson& t = r["table"];
  auto src = TableOf(t);
  const std::vector<int64_t> ids = r["ids"].get<std::vector<int64_t>>();
  c.group = {{"type", "SyntheticLookupTest"}, {"comment", "random synthetic table, " + TableSize(t)}, {"table", TableGroupJson(t)}};
  c.test = {{"rowIds", ids}};
  try {
    const std::vector<uint16_t> v = LookupRows(*src, ids);
    const size_t d = static_cast<size_t>(src->head_dim());
    ojson codes = ojson::array(), scales = ojson::array(), kinds = ojson::array();
    for (int64_t id : ids) {
      const RowBytes row = src->Row(id);
      codes.push_back(HexOfBytes(row.codes));
      scales.push_back(HexOfBytes(row.scales));
      kinds.push_back(t["edgeRows"].get<bool>() && SyntheticIsEdgeRow(t["seed"].get<uint64_t>(), id));
    }
    c.test["result"] = "valid";
    c.test["rows"] = RowsHex(v, d);
    c.test["intermediate"] = {{"codes", codes}, {"scales", scales}, {"edgeRow", kinds}};
  } catch (const Error& e) {
    c.test["result"] = "invalid";
    c.test["error"] = e.what();
  }
  c.spec_refs = {"§STO.3", "§STO.5", "§STO.6"};
  c.size = std::to_string(ids.size()) + " ids, " + TableSize(t);
  c.measure = 1000 * static_cast<int64_t>(ids.size()) + TableMeasure(t);
  return c;
}

std::vector<ojson> ShrinkLookup(const ojson& r) {
  std::vector<ojson> out;
  ShrinkIds(r, out);
  ShrinkTable(r, out);
  return out;
}

// ---------------------------------------------------------------- tp_shard

ojson DrawShard(uint64_t seed, int64_t index) {
  CaseRng rng(seed, "tp_shard", index);
  ojson r;
  r["table"] = DrawTable(rng);
  const int64_t rows = r["table"]["rows"];
  const int world = DrawWorld(rng);
  r["world"] = world;
  ojson ids = ojson::array();
  if (rng.Chance(2, 3)) {
    r["kind"] = "row";
    // The first and last row of some shards (those that own any), and others.
    const int64_t n = rng.In(1, 10);
    for (int64_t i = 0; i < n; ++i) {
      if (rng.Chance(1, 2)) {
        const int rank = static_cast<int>(rng.Below(world));
        const Shard s = RowShard(rows, rank, world);
        if (s.end > s.begin) {
          const bool first = rng.Chance(1, 2);
          ids.push_back(first ? s.begin : s.end - 1);
          continue;
        }
      }
      ids.push_back(DrawRow(rng, rows));
    }
    MaybeBreak(rng, ids, rows);
  } else {
    r["kind"] = "head";
    const int64_t columns = rng.Chance(1, 3) ? 24 : rng.Scaled(1, 32);
    const int64_t positions = rng.In(1, 3);
    r["columns"] = columns;
    for (int64_t i = 0; i < columns * positions; ++i) ids.push_back(DrawRow(rng, rows));
  }
  r["ids"] = ids;
  return r;
}

RandomCase BuildShard(const ojson& r) {
  RandomCase c;
  c.recipe = r;
  const ojson& t = r["table"];
  auto src = TableOf(t);
  const int world = r["world"];
  const int64_t rows = t["rows"];
  const size_t d = static_cast<size_t>(src->head_dim());
  const std::vector<int64_t> ids = r["ids"].get<std::vector<int64_t>>();
  if (r["kind"] == "row") {
    c.type = "RowShardTest";
    const int64_t part = ShardPart(rows, world);
    c.group = {{"type", "RowShardTest"},
               {"comment", "random: world " + std::to_string(world) + ", part " + std::to_string(part) + ", " + TableSize(t)},
               {"table", TableGroupJson(t)},
               {"world", world},
               {"part", part},
               {"shards", ShardsJson(rows, world)}};
    c.test = {{"rowIds", ids}};
    try {
      const std::vector<uint16_t> reduced = Reduced(*src, ids, world);
      c.test["result"] = "valid";
      c.test["rows"] = RowsHex(reduced, d);
      c.test["intermediate"] = {{"owners", OwnersJson(rows, world, ids)}, {"unsharded", RowsHex(LookupRows(*src, ids), d)}};
    } catch (const Error& e) {
      c.test["result"] = "invalid";
      c.test["error"] = e.what();
    }
    c.spec_refs = {"§STO.6", "§STO.7"};
    c.size = std::to_string(ids.size()) + " ids, world " + std::to_string(world) + ", " + TableSize(t);
    c.measure = 1000 * static_cast<int64_t>(ids.size()) + 10 * world + TableMeasure(t);
    return c;
  }
  c.type = "HeadShardTest";
  const int columns = r["columns"];
  if (columns < 1 || ids.empty() || ids.size() % static_cast<size_t>(columns) != 0) {
    throw Error("tp_shard recipe: " + std::to_string(ids.size()) + " ids are not whole positions of " +
                std::to_string(columns) + " columns");
  }
  ojson ranges = ojson::array();
  for (int rank = 0; rank < world; ++rank) {
    const HeadRange h = HeadShard(columns, rank, world);
    ranges.push_back({h.begin, h.end});
  }
  c.group = {{"type", "HeadShardTest"},
             {"comment", "random: world " + std::to_string(world) + ", " + std::to_string(columns) + " columns, " + TableSize(t)},
             {"table", TableGroupJson(t)},
             {"world", world},
             {"columns", columns},
             {"headRanges", ranges}};
  std::vector<std::vector<uint16_t>> parts;
  for (int rank = 0; rank < world; ++rank) parts.push_back(HeadShardLookup(*src, ids, columns, rank, world));
  const int64_t positions = static_cast<int64_t>(ids.size()) / columns;
  c.test = {{"rowIds", ids}, {"result", "valid"},
            {"rows", RowsHex(GatherHeads(parts, positions, columns, world, src->head_dim()), d)}};
  c.spec_refs = {"§STO.6", "§STO.8"};
  c.size = std::to_string(positions) + " positions x " + std::to_string(columns) + " columns, world " +
           std::to_string(world) + ", " + TableSize(t);
  c.measure = 1000 * static_cast<int64_t>(ids.size()) + 10 * world + TableMeasure(t);
  return c;
}

std::vector<ojson> ShrinkShard(const ojson& r) {
  std::vector<ojson> out;
  const int world = r["world"];
  for (int smaller : {1, world / 2, world - 1}) {
    if (smaller < 1 || smaller >= world) continue;
    ojson c = r;
    c["world"] = smaller;
    out.push_back(c);
  }
  if (r["kind"] == "row") {
    ShrinkIds(r, out);
  } else {
    // Fewer positions, or fewer columns in every position.
    const int64_t columns = r["columns"];
    ShrinkIds(r, out, static_cast<size_t>(columns));
    for (int64_t fewer : {int64_t{1}, columns / 2, columns - 1}) {
      if (fewer < 1 || fewer >= columns) continue;
      ojson c = r;
      c["columns"] = fewer;
      ojson ids = ojson::array();
      for (size_t i = 0; i < r["ids"].size(); ++i) {
        if (static_cast<int64_t>(i) % columns < fewer) ids.push_back(r["ids"][i]);
      }
      c["ids"] = ids;
      out.push_back(c);
    }
  }
  ShrinkTable(r, out);
  return out;
}

}  // namespace

RandomSuite RandomTableLookup() {
  return {"table_lookup", "storage.schema.json", "ENGRAM-TABLE-LOOKUP", DrawLookup, BuildLookup, ShrinkLookup};
}

RandomSuite RandomTpShard() {
  return {"tp_shard", "storage.schema.json", "ENGRAM-TP-SHARD", DrawShard, BuildShard, ShrinkShard};
}

}  // namespace engram::vectors
