// `engram forward --float32` (spec §FUS.11): a port's own float32
// Engram.forward, from its own table and weights, so that a port's float32
// fixture (SRC-FIXTURE-MLXGO) can be reproduced through the command line.
//
//   --weights FILE  {"embed.weight": [rows][head_dim], "wkv.weight": [(hc+1)*dim][C*head_dim],
//                    "q_weight": [hc][dim], "k_weight": [hc][dim]}   (the module's parameter names)
//   --input FILE    {"x": [T][hc][dim]} and, instead of --ids, "hash_ids": [T][C] (the layer's row
//                    ids, as Engram.forward takes them) with an optional "mask": [T] (false = masked)
//
// A tensor is a nested array or {"shape": [...], "data": [flat]} (the form of
// that fixture). Sizes come from the configuration (dim, hc_mult,
// engram_head_dim, the columns); eps is its norm_eps. Every value is taken as
// a float32: one that is not is rounded, and the tool says so (§FUS.11).
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>

#include "conformance/cli/common.h"
#include "base/error.h"
#include "reference/fusion.h"
#include "reference/hash.h"

namespace engram::cli {
namespace {

// One tensor of `doc[key]` with the given shape, flattened row-major. Errors
// name the file, the key path and what was found.
std::vector<double> Tensor(const nlohmann::json& doc, const std::string& key, const std::vector<size_t>& shape,
                           const std::string& file) {
  if (!doc.contains(key)) throw Error(file + ": missing key '" + key + "'");
  const nlohmann::json& a = doc.at(key);
  std::vector<double> out;
  auto number = [&](const nlohmann::json& v, const std::string& where) {
    if (!v.is_number()) throw Error(file + ": " + where + " is " + v.dump() + ", not a number");
    out.push_back(v.get<double>());
  };
  if (a.is_object()) {  // {"shape": [...], "data": [...]}
    if (!a.contains("shape") || !a.contains("data") || !a.at("data").is_array()) {
      throw Error(file + ": '" + key + "' must be a nested array or {\"shape\": [...], \"data\": [...]}");
    }
    std::vector<size_t> given;
    for (const nlohmann::json& d : a.at("shape")) {
      if (!d.is_number_unsigned()) throw Error(file + ": " + key + ".shape holds " + d.dump() + ", not a size");
      given.push_back(d.get<size_t>());
    }
    if (given != shape) {
      std::string want, got;
      for (size_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      for (size_t d : given) got += (got.empty() ? "" : ", ") + std::to_string(d);
      throw Error(file + ": " + key + ".shape is [" + got + "], expected [" + want + "]");
    }
    size_t n = 1;
    for (size_t d : shape) n *= d;
    if (a.at("data").size() != n) {
      throw Error(file + ": " + key + ".data has " + std::to_string(a.at("data").size()) + " values, expected " +
                  std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) number(a.at("data")[i], key + ".data[" + std::to_string(i) + "]");
    return out;
  }
  std::function<void(const nlohmann::json&, size_t, const std::string&)> walk = [&](const nlohmann::json& v, size_t d,
                                                                                  const std::string& where) {
    if (d == shape.size()) return number(v, where);
    if (!v.is_array() || v.size() != shape[d]) {
      throw Error(file + ": " + where + " must be an array of " + std::to_string(shape[d]) + " entries, got " +
                  (v.is_array() ? std::to_string(v.size()) + " entries" : v.dump()));
    }
    for (size_t i = 0; i < v.size(); ++i) walk(v[i], d + 1, where + "[" + std::to_string(i) + "]");
  };
  walk(a, 0, key);
  return out;
}

// The leading size of a tensor (nested array, or {"shape": [...]}).
size_t Leading(const nlohmann::json& doc, const std::string& key, const std::string& file) {
  if (!doc.contains(key)) throw Error(file + ": missing key '" + key + "'");
  const nlohmann::json& a = doc.at(key);
  if (a.is_object() && a.contains("shape") && a.at("shape").is_array() && !a.at("shape").empty() &&
      a.at("shape")[0].is_number_unsigned()) {
    return a.at("shape")[0].get<size_t>();
  }
  if (a.is_array()) return a.size();
  throw Error(file + ": '" + key + "' must be a nested array or {\"shape\": [...], \"data\": [...]}");
}

struct ForwardOptions {
  Inputs in;
  std::string weights, input, ids, out;
  int64_t layer = 0;
  bool float32 = false;
  CLI::Option *ids_opt = nullptr, *layer_opt = nullptr;
};

// §FUS.11 No silent precision change: every value read is a float32, or is
// rounded to one and reported (stderr, and the counts in "rounded_to_float32").
struct Float32Reader {
  ojson rounded = ojson::object();
  std::vector<double> operator()(std::vector<double> v, const std::string& key, const std::string& file) {
    int64_t changed = 0;
    std::string first;
    for (size_t i = 0; i < v.size(); ++i) {
      const double r = Round(v[i], Precision::kFloat32);
      if (r != v[i]) {
        if (changed++ == 0) {
          std::ostringstream o;
          o.precision(17);
          o << key << " element " << i << ": " << v[i] << " -> " << r;
          first = o.str();
        }
        v[i] = r;
      }
    }
    if (changed > 0) {
      rounded[key] = changed;
      std::cerr << "engram forward: note: " << file << ": " << changed << " of " << v.size() << " values of '" << key
                << "' are not float32 values and were rounded to float32 (§FUS.11), the first: " << first << "\n";
    }
    return v;
  }
};

// The port's table and weights (--weights), in the shapes the configuration gives.
V41FloatWeights ReadWeights(const std::string& path, const EngramConfig& cfg, Float32Reader& f32) {
  V41FloatWeights w;
  w.hc = static_cast<size_t>(cfg.hc_mult);
  w.dim = static_cast<size_t>(cfg.hidden_size);
  w.head_dim = static_cast<size_t>(cfg.head_dim);
  w.columns = static_cast<size_t>(cfg.columns());
  const nlohmann::json wdoc = ReadJsonFile(path, InputKind::kFusionInput);
  if (!wdoc.is_object()) throw Error(path + ": the weights must be a JSON object");
  const size_t rows = Leading(wdoc, "embed.weight", path);
  w.table = f32(Tensor(wdoc, "embed.weight", {rows, w.head_dim}, path), "embed.weight", path);
  w.wkv = f32(Tensor(wdoc, "wkv.weight", {(w.hc + 1) * w.dim, w.columns * w.head_dim}, path), "wkv.weight", path);
  w.q_weight = f32(Tensor(wdoc, "q_weight", {w.hc, w.dim}, path), "q_weight", path);
  w.k_weight = f32(Tensor(wdoc, "k_weight", {w.hc, w.dim}, path), "k_weight", path);
  return w;
}

// The row ids of the chosen layer ([steps][columns]) and the masked positions:
// hashed from --ids, or the input's own hash_ids (+ mask), as the official
// forward takes them.
void RowIds(const ForwardOptions& o, const Loaded& l, const nlohmann::json& in, size_t layer, size_t steps,
            size_t columns, std::vector<int64_t>& row_ids, std::vector<uint8_t>& masked) {
  masked.assign(steps, 0);
  if (o.ids_opt->count() > 0) {
    if (in.contains("hash_ids")) throw Error(o.input + ": give the row ids as 'hash_ids' or --ids, not both");
    const std::vector<int64_t> raw = ParseIntList(o.ids, "--ids");
    if (raw.size() != steps) {
      throw Error("--ids: " + std::to_string(raw.size()) + " ids but " + o.input + "'s x has " +
                  std::to_string(steps) + " positions");
    }
    const std::vector<int64_t> ids = l.token_map ? CompressIds(l.layout, *l.token_map, raw) : raw;
    if (!l.token_map) CheckCompressedIds(l.layout, ids);
    const std::vector<int64_t> all = HashSequence(l.layout, ids);  // [t][layer][col]
    const size_t per_position = l.layout.layers.size() * columns;
    for (size_t t = 0; t < steps; ++t) {
      masked[t] = ids[t] == kDead ? 1 : 0;  // §HASH.1 a masked position: gate 0 (§FUS.3)
      for (size_t c = 0; c < columns; ++c) row_ids.push_back(all[t * per_position + layer * columns + c]);
    }
    return;
  }
  if (!in.contains("hash_ids")) throw Error(o.input + ": missing key 'hash_ids' (or give --ids)");
  for (double v : Tensor(in, "hash_ids", {steps, columns}, o.input)) {
    if (v != std::floor(v) || std::fabs(v) > 9.0e15) {
      throw Error(o.input + ": hash_ids holds " + FloatHex(v) + ", not an integer row id");
    }
    row_ids.push_back(static_cast<int64_t>(v));
  }
  if (!in.contains("mask")) return;
  const nlohmann::json& m = in.at("mask");
  if (!m.is_array() || m.size() != steps) {
    throw Error(o.input + ": 'mask' must be an array of " + std::to_string(steps) + " booleans");
  }
  for (size_t t = 0; t < steps; ++t) {
    if (!m[t].is_boolean()) throw Error(o.input + ": mask[" + std::to_string(t) + "] is " + m[t].dump() + ", not a boolean");
    masked[t] = m[t].get<bool>() ? 0 : 1;  // the official token_mask: false shuts the gate
  }
}

// §FUS.11 the tolerance of out: 2 |m - r| + 2^-17 * max |r| over the
// (position, stream) vector, per element.
ojson OutTolerance(const std::vector<V41FloatPositionTrace>& r, const std::vector<V41FloatPositionTrace>& m,
                   const V41FloatWeights& w) {
  ojson tol = ojson::array();
  for (size_t t = 0; t < r.size(); ++t) {
    ojson pos = ojson::array();
    for (size_t c = 0; c < w.hc; ++c) {
      const std::vector<double>& ro = r[t].streams[c].out;
      const std::vector<double>& mo = m[t].streams[c].out;
      double max_abs = 0;
      for (double v : ro) max_abs = std::max(max_abs, std::fabs(v));
      ojson vec = ojson::array();
      for (size_t i = 0; i < w.dim; ++i) vec.push_back(JsonNumber(2 * std::fabs(mo[i] - ro[i]) + std::ldexp(max_abs, -17)));
      pos.push_back(vec);
    }
    tol.push_back(pos);
  }
  return tol;
}

// kv, gate and out of every position and stream of one trace.
ojson TraceJson(const std::vector<V41FloatPositionTrace>& trace) {
  ojson j, gates = ojson::array(), outs = ojson::array(), kvs = ojson::array();
  for (const V41FloatPositionTrace& pos : trace) {
    ojson g = ojson::array(), o = ojson::array(), kv = ojson::array();
    for (const V41StreamTrace& st : pos.streams) {
      g.push_back(JsonNumber(st.gate));
      ojson vec = ojson::array();
      for (double v : st.out) vec.push_back(JsonNumber(v));
      o.push_back(vec);
    }
    for (double v : pos.kv) kv.push_back(JsonNumber(v));
    gates.push_back(g);
    outs.push_back(o);
    kvs.push_back(kv);
  }
  j["kv"] = kvs;
  j["gate"] = gates;
  j["out"] = outs;
  return j;
}

}  // namespace

void AddForwardCommand(CLI::App& app) {
  auto s = std::make_shared<ForwardOptions>();
  auto* cmd = app.add_subcommand(
      "forward", "A port's own float32 Engram.forward from its own table and weights (spec §FUS.11)");
  AddInputOptions(cmd, s->in, /*config_required=*/true);
  cmd->add_flag("--float32", s->float32,
                "Compute in float32 where the official code does, on float32 tables and weights (required: the "
                "only mode; the checkpoint's bf16/fp8 forward is the engram_forward vector suite)");
  cmd->add_option("--weights", s->weights, "JSON: embed.weight, wkv.weight, q_weight, k_weight")->required();
  cmd->add_option("--input", s->input, "JSON: x [T][hc][dim], and hash_ids [T][C] (+ mask [T]) unless --ids")
      ->required();
  s->ids_opt = cmd->add_option("--ids", s->ids,
                               "Ids to hash (§HASH; raw with --token-map; -1 = a masked position); else the "
                               "input's hash_ids");
  s->layer_opt = cmd->add_option("--layer", s->layer, "Engram layer id (default: the first of the configuration)")
                     ->check(IntIn(0, INT64_MAX, "a layer id of the configuration"));
  cmd->add_option("--out", s->out, "Write the JSON here instead of stdout");
  cmd->callback([s] {
    if (!s->float32) {
      throw Error("forward: pass --float32: the tool computes a port's own float32 Engram.forward (§FUS.11), the "
                  "only mode it has");
    }
    const Loaded l = Load(s->in);
    const EngramConfig& cfg = l.config;
    if (cfg.profile != Profile::kV41) throw Error("forward: " + cfg.source + " is not a v4.1 configuration");
    if (cfg.hidden_size < 1 || cfg.hc_mult < 1) {
      throw Error(cfg.source + ": the forward needs 'dim' (or 'hidden_size') and 'hc_mult'");
    }
    size_t layer = 0;  // the index of --layer in the layout
    if (s->layer_opt->count() > 0) {
      while (layer < l.layout.layers.size() && l.layout.layers[layer].layer_id != s->layer) ++layer;
      if (layer == l.layout.layers.size()) {
        throw Error("--layer: " + std::to_string(s->layer) + " is not an Engram layer of " + cfg.source);
      }
    }
    Float32Reader f32;
    const V41FloatWeights w = ReadWeights(s->weights, cfg, f32);
    const nlohmann::json in = ReadJsonFile(s->input, InputKind::kFusionInput);
    if (!in.is_object()) throw Error(s->input + ": the input must be a JSON object");
    const size_t steps = Leading(in, "x", s->input);
    const std::vector<double> x = f32(Tensor(in, "x", {steps, w.hc, w.dim}, s->input), "x", s->input);
    std::vector<int64_t> row_ids;
    std::vector<uint8_t> masked;
    RowIds(*s, l, in, layer, steps, w.columns, row_ids, masked);
    const std::vector<V41FloatPositionTrace> r =
        ForwardV41Float(w, row_ids, x, masked, steps, cfg.norm_eps, Precision::kFloat64);
    const std::vector<V41FloatPositionTrace> m =
        ForwardV41Float(w, row_ids, x, masked, steps, cfg.norm_eps, Precision::kFloat32);

    ojson doc;
    doc["profile"] = "v4.1";
    doc["mode"] = "float32 forward on a port's own float32 table and weights (spec/fusion.md §FUS.11)";
    doc["layer"] = l.layout.layers[layer].layer_id;
    doc["steps"] = steps;
    doc["hc"] = w.hc;
    doc["dim"] = w.dim;
    doc["eps"] = cfg.norm_eps;
    doc["rounded_to_float32"] = f32.rounded;
    ojson rows_json = ojson::array(), mask_json = ojson::array();
    for (size_t t = 0; t < steps; ++t) {
      rows_json.push_back(std::vector<int64_t>(row_ids.begin() + t * w.columns, row_ids.begin() + (t + 1) * w.columns));
      mask_json.push_back(masked[t] != 0);
    }
    doc["rows"] = rows_json;
    doc["masked"] = mask_json;
    doc["float64"] = TraceJson(r);
    doc["float32"] = TraceJson(m);
    doc["out_tolerance"] = OutTolerance(r, m, w);
    Emit(doc, s->out);
  });
}

}  // namespace engram::cli
