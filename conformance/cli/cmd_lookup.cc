// `engram lookup` (spec §STO): ids or row ids -> table rows, decoded, with the
// stored bytes beside each row so that one position can be checked by hand.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "conformance/cli/common.h"
#include "base/hex.h"
#include "base/error.h"
#include "reference/hash.h"
#include "reference/storage.h"

namespace engram::cli {
namespace {

// JSON has no NaN or infinities: those become strings; -0 stays -0.0.
ojson FloatJson(float f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  return static_cast<double>(f);
}

std::string Hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, v);
  return buf;
}

struct LookupOptions {
  Inputs in;
  std::string table, tensor, packed, ids, rows, out;
  uint64_t seed = 0;
  bool edge_rows = false;
  int64_t layer = -1;
  int world = 0, rank = -1;
  CLI::Option *ids_opt = nullptr, *rows_opt = nullptr, *layer_opt = nullptr, *world_opt = nullptr, *rank_opt = nullptr;
  bool by_ids() const { return ids_opt->count() > 0; }
  bool sharded() const { return world_opt->count() > 0; }
};

// The index of --layer in the layout (the first layer by default).
size_t LayerIndex(const LookupOptions& s, const Loaded& l) {
  const Layout& layout = l.layout;
  if (s.layer_opt->count() == 0) return 0;
  for (size_t k = 0; k < layout.layers.size(); ++k) {
    if (layout.layers[k].layer_id == s.layer) return k;
  }
  throw Error("--layer: " + std::to_string(s.layer) + " is not an Engram layer of " + l.config.source);
}

// The row ids to look up: --rows as given, or --ids hashed (§HASH) and the
// layer's columns of every position taken. `compressed` receives the ids.
std::vector<int64_t> RowIds(const LookupOptions& s, const Loaded& l, size_t li, std::vector<int64_t>& compressed) {
  const Layout& layout = l.layout;
  if (!s.by_ids()) return ParseIntList(s.rows, "--rows");
  const int columns = layout.columns();
  const std::vector<int64_t> raw = ParseIntList(s.ids, "--ids");
  compressed = l.token_map ? CompressIds(layout, *l.token_map, raw) : raw;
  CheckCompressedIds(layout, compressed);
  const std::vector<int64_t> all = HashSequence(layout, compressed);
  const size_t per_pos = layout.layers.size() * static_cast<size_t>(columns);
  std::vector<int64_t> row_ids;
  for (size_t pos = 0; pos < compressed.size(); ++pos) {
    for (int c = 0; c < columns; ++c) row_ids.push_back(all[pos * per_pos + li * static_cast<size_t>(columns) + static_cast<size_t>(c)]);
  }
  return row_ids;
}

// Where lookup k comes from: its position and column (--ids), and its row.
ojson Where(const LookupOptions& s, int columns, const std::vector<int64_t>& row_ids, size_t k) {
  ojson e;
  if (s.by_ids()) {
    e["position"] = k / static_cast<size_t>(columns);
    e["column"] = k % static_cast<size_t>(columns);
  }
  e["row"] = row_ids[k];
  return e;
}

// §STO.10 demo-v1: float32 rows of a synthetic table.
ojson DemoLookups(const LookupOptions& s, const Loaded& l, const LayerLayout& layer, const std::vector<int64_t>& row_ids,
                  ojson& doc) {
  if (!s.table.empty() || !s.packed.empty()) {
    throw Error("demo-v1 tables are float32 multi-head embeddings: only --synthetic SEED is supported");
  }
  if (s.sharded()) throw Error("--world: demo-v1 defines no tensor-parallel sharding");
  auto table = SyntheticFloatTable(s.seed, layer.num_embeddings, l.config.head_dim);
  doc["table"] = {{"source", table->name()}, {"rows", table->rows()}, {"width", table->width()}};
  const std::vector<float> v = LookupFloatRows(*table, row_ids);
  const size_t wd = static_cast<size_t>(table->width());
  ojson lookups = ojson::array();
  for (size_t k = 0; k < row_ids.size(); ++k) {
    ojson e = Where(s, l.layout.columns(), row_ids, k);
    ojson bits = ojson::array(), vals = ojson::array();
    for (size_t j = 0; j < wd; ++j) {
      uint32_t u;
      std::memcpy(&u, &v[k * wd + j], 4);
      bits.push_back(Hex(u, 8));
      vals.push_back(FloatJson(v[k * wd + j]));
    }
    e["f32"] = bits;
    e["values"] = vals;
    lookups.push_back(e);
  }
  return lookups;
}

// §STO.4 the table of this layer: a checkpoint, a packed-row file or a synthetic table.
std::unique_ptr<RowSource> OpenTable(const LookupOptions& s, const Loaded& l, const LayerLayout& layer) {
  std::unique_ptr<RowSource> table;
  if (!s.table.empty()) {
    table = OpenSafetensors(s.table, s.tensor.empty() ? "layers." + std::to_string(layer.layer_id) + ".engram.embed" : s.tensor);
  } else if (!s.packed.empty()) {
    table = OpenPackedRows(s.packed, l.config.head_dim);
  } else {
    table = SyntheticTable(s.seed, layer.num_embeddings, l.config.head_dim, s.edge_rows);
  }
  if (table->head_dim() != l.config.head_dim) {
    throw Error(table->name() + ": rows are " + std::to_string(table->head_dim()) + " wide but the configuration's head_dim is " +
                std::to_string(l.config.head_dim));
  }
  if (s.by_ids() && table->rows() != layer.num_embeddings) {
    throw Error(table->name() + ": the table has " + std::to_string(table->rows()) + " rows but layer " +
                std::to_string(layer.layer_id) + " hashes into " + std::to_string(layer.num_embeddings));
  }
  return table;
}

// §STO.6 / §STO.7 the values: unsharded, one rank's partial, or the all_reduce.
std::vector<uint16_t> Values(const LookupOptions& s, const RowSource& table, const std::vector<int64_t>& row_ids,
                             ojson& doc) {
  if (!s.sharded()) return LookupRows(table, row_ids);
  if (s.rank_opt->count() > 0) {
    const Shard sh = RowShard(table.rows(), s.rank, s.world);
    doc["tp"] = {{"world", s.world}, {"rank", s.rank}, {"part", ShardPart(table.rows(), s.world)},
                 {"owns", {sh.begin, sh.end}}, {"output", "this rank's partial: rows it does not own are +0"}};
    return ShardLookup(table, row_ids, s.rank, s.world);
  }
  // The left fold over ranks 0 ... W-1 (§STO.7), one partial at a time.
  std::vector<uint16_t> v = ShardLookup(table, row_ids, 0, s.world);
  for (int rk = 1; rk < s.world; ++rk) v = ReduceShards({v, ShardLookup(table, row_ids, rk, s.world)});
  doc["tp"] = {{"world", s.world}, {"part", ShardPart(table.rows(), s.world)},
               {"output", "bf16 sum of all ranks' partials (the all_reduce)"}};
  return v;
}

// §STO v4.1: FP8 rows decoded to bf16, the stored bytes beside each.
ojson V41Lookups(const LookupOptions& s, const Loaded& l, const LayerLayout& layer, const std::vector<int64_t>& row_ids,
                 ojson& doc) {
  const std::unique_ptr<RowSource> table = OpenTable(s, l, layer);
  doc["table"] = {{"source", table->name()}, {"rows", table->rows()}, {"head_dim", table->head_dim()}};
  const std::vector<uint16_t> v = Values(s, *table, row_ids, doc);
  const size_t d = static_cast<size_t>(table->head_dim());
  ojson lookups = ojson::array();
  for (size_t k = 0; k < row_ids.size(); ++k) {
    ojson e = Where(s, l.layout.columns(), row_ids, k);
    if (s.sharded()) {
      const int owner = OwnerRank(table->rows(), s.world, row_ids[k]);
      e["owner_rank"] = owner;
      e["local_row"] = row_ids[k] - RowShard(table->rows(), owner, s.world).begin;
    }
    const RowBytes b = table->Row(row_ids[k]);
    e["codes"] = HexOfBytes(b.codes);
    e["scales"] = HexOfBytes(b.scales);
    ojson bits = ojson::array(), vals = ojson::array();
    for (size_t j = 0; j < d; ++j) {
      bits.push_back(Hex(v[k * d + j], 4));
      vals.push_back(FloatJson(Bf16ToFloat(v[k * d + j])));
    }
    e["bf16"] = bits;
    e["values"] = vals;
    lookups.push_back(e);
  }
  return lookups;
}

void RunLookup(const LookupOptions& s) {
  const Loaded l = Load(s.in);
  const Layout& layout = l.layout;
  const size_t li = LayerIndex(s, l);
  const LayerLayout& layer = layout.layers[li];
  if (s.by_ids() == (s.rows_opt->count() > 0)) throw Error("give exactly one of --ids and --rows");
  // §STO.7 the rank is one of the world's.
  if (s.rank_opt->count() > 0 && s.rank >= s.world) {
    throw Error("--rank " + std::to_string(s.rank) + " is outside [0, " + std::to_string(s.world) +
                ") (the ranks of --world " + std::to_string(s.world) + ")");
  }
  std::vector<int64_t> compressed;
  const std::vector<int64_t> row_ids = RowIds(s, l, li, compressed);
  ojson doc;
  doc["profile"] = std::string(ProfileName(layout.profile));
  doc["layer"] = layer.layer_id;
  if (s.by_ids()) {
    doc["compressed_ids"] = compressed;
    doc["columns"] = layout.columns();
  }
  const ojson lookups = layout.profile == Profile::kDemoV1 ? DemoLookups(s, l, layer, row_ids, doc)
                                                           : V41Lookups(s, l, layer, row_ids, doc);
  doc["lookups"] = lookups;
  Emit(doc, s.out);
}

}  // namespace

void AddLookupCommand(CLI::App& app) {
  auto s = std::make_shared<LookupOptions>();
  auto* cmd = app.add_subcommand("lookup", "Look up and decode table rows (FP8 -> bf16; demo-v1: float rows)");
  AddInputOptions(cmd, s->in, true);
  auto* t = cmd->add_option("--table", s->table, "A .safetensors checkpoint holding <prefix>.weight and <prefix>.scale");
  cmd->add_option("--tensor", s->tensor, "Tensor name prefix (default layers.<layer>.engram.embed)")->needs(t);
  auto* p = cmd->add_option("--packed", s->packed, "A packed-row file (head_dim codes then head_dim/32 scales per row)");
  auto* y = cmd->add_option("--synthetic", s->seed, "A synthetic table with this seed (§STO.5)")
                ->check(UnsignedIn(0, UINT64_MAX, "a 64-bit seed"));
  cmd->add_flag("--edge-rows", s->edge_rows, "Synthetic table with edge rows (one in 8: NaN, scale 0x00/0xFF, ...)")->needs(y);
  t->excludes(p)->excludes(y);
  p->excludes(y);
  auto* i = cmd->add_option("--ids", s->ids,
                            "Comma-separated decimal token ids: hashed first (§HASH), then looked up (--ids= : none)");
  auto* r = cmd->add_option("--rows", s->rows, "Comma-separated decimal table row ids, looked up directly (--rows= : none)");
  i->excludes(r);
  s->ids_opt = i;
  s->rows_opt = r;
  s->layer_opt = cmd->add_option("--layer", s->layer, "Engram layer id (default: the first of the configuration)")
                     ->check(IntIn(0, INT64_MAX, "layer ids are >= 0"));
  auto* w = cmd->add_option("--world", s->world, "Tensor-parallel world size (row sharding, §STO.7), 1 ... " +
                                                     std::to_string(kMaxWorld))
                ->check(IntIn(1, kMaxWorld, kWorldWhy));
  s->world_opt = w;
  s->rank_opt = cmd->add_option("--rank", s->rank,
                                "With --world: print this rank's masked partial instead of the all_reduce (0 ... world-1)")
                    ->check(IntIn(0, kMaxWorld - 1, "ranks are 0 ... world - 1"))
                    ->needs(w);
  cmd->add_option("--out", s->out, "Write the JSON here instead of stdout");
  cmd->callback([s] { RunLookup(*s); });
}

}  // namespace engram::cli
