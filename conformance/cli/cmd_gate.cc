// `engram gate` (spec §FUS): the gate and fused output of a few positions,
// every intermediate printed, so that one position can be checked by hand.
//
// Input: --input FILE (JSON, numbers in decimal, nested arrays) or
// --synthetic SEED (small deterministic inputs). The configuration gives the
// profile and its constants (v4.1: norm_eps; demo-v1: kernel_size and
// max_ngram_size = the ShortConv dilation); the sizes come from the arrays.
//
//  v4.1:    {"x": [hc][dim], "key": [hc][dim], "value": [dim], "qWeight": [hc][dim],
//            "kWeight": [hc][dim], "masked": false}      (values rounded to bf16)
//  demo-v1: {"e": [T][in], "hidden": [T][hc][hidden], "keyWeight": [hc][hidden][in],
//            "keyBias": [hc][hidden], "norm1Weight": [hc][hidden], "norm2Weight": [hc][hidden],
//            "valueWeight": [hidden][in], "valueBias": [hidden], "convNormWeight": [hc][hidden],
//            "convWeight": [hc*hidden][kernel]}          (values rounded to float32)
#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>

#include "conformance/cli/common.h"
#include "base/error.h"
#include "base/splitmix64.h"
#include "reference/fusion.h"

namespace engram::cli {
namespace {

// Flattens a nested numeric array whose shape must be `shape`; errors name the file and key.
std::vector<double> Flat(const nlohmann::json& doc, const std::string& key, const std::vector<size_t>& shape,
                         const std::string& file) {
  if (!doc.contains(key)) throw Error(file + ": missing key '" + key + "'");
  std::vector<double> out;
  std::function<void(const nlohmann::json&, size_t, const std::string&)> walk = [&](const nlohmann::json& a, size_t d,
                                                                                  const std::string& where) {
    if (d == shape.size()) {
      if (!a.is_number()) throw Error(file + ": " + where + " is " + a.dump() + ", not a number");
      out.push_back(a.get<double>());
      return;
    }
    if (!a.is_array() || a.size() != shape[d]) {
      throw Error(file + ": " + where + " must be an array of " + std::to_string(shape[d]) + " entries, got " +
                  (a.is_array() ? std::to_string(a.size()) + " entries" : a.dump()));
    }
    for (size_t i = 0; i < a.size(); ++i) walk(a[i], d + 1, where + "[" + std::to_string(i) + "]");
  };
  walk(doc.at(key), 0, key);
  return out;
}

size_t Len(const nlohmann::json& doc, const std::string& key, const std::string& file, size_t depth = 0) {
  const nlohmann::json* a = doc.contains(key) ? &doc.at(key) : nullptr;
  if (a == nullptr) throw Error(file + ": missing key '" + key + "'");
  for (size_t d = 0; d < depth; ++d) {
    if (!a->is_array() || a->empty()) throw Error(file + ": '" + key + "' must be a non-empty nested array");
    a = &(*a)[0];
  }
  if (!a->is_array() || a->empty()) throw Error(file + ": '" + key + "' must be a non-empty array");
  return a->size();
}

double F32(double x) { return Round(x, Precision::kFloat32); }

// Small deterministic inputs: multiples of 1/64 in [-2, 2).
double Synth(uint64_t& state) {
  const uint64_t z = SplitMix64Mix(state += kSplitMix64Golden);  // the next SplitMix64 output
  return static_cast<double>(static_cast<int64_t>(z % 256) - 128) / 64.0;
}

ojson Nest(const std::vector<double>& v, size_t inner) {
  ojson out = ojson::array();
  for (size_t i = 0; i < v.size(); i += inner) out.push_back(std::vector<double>(v.begin() + i, v.begin() + i + inner));
  return out;
}

ojson Nums(const std::vector<double>& v) {
  ojson a = ojson::array();
  for (double x : v) a.push_back(JsonNumber(x));
  return a;
}

ojson GateJson(const GateParts& g) {
  return {{"clamped", JsonNumber(g.clamped)}, {"root", JsonNumber(g.root)}, {"signed_root", JsonNumber(g.signed_root)}};
}

ojson RunV41(const nlohmann::json& in, const std::string& file, double eps) {
  const size_t hc = Len(in, "x", file), dim = Len(in, "x", file, 1);
  // §FUS.1 the v4.1 inputs are bf16: a value that is not one is rounded, and
  // the tool says so (stderr and "rounded_to_bf16"), never silently.
  ojson rounded = ojson::object();
  auto bits = [&](const std::string& key, std::vector<size_t> shape) {
    std::vector<uint16_t> b;
    int64_t changed = 0;
    std::string first;
    const std::vector<double> values = Flat(in, key, shape, file);
    for (size_t i = 0; i < values.size(); ++i) {
      b.push_back(ToBf16(values[i]));
      if (Bf16Value(b.back()) != values[i] && !std::isnan(values[i])) {
        if (changed++ == 0) {
          std::ostringstream o;
          o.precision(17);
          o << key << " element " << i << ": " << values[i] << " -> " << Bf16Value(b.back());
          first = o.str();
        }
      }
    }
    if (changed > 0) {
      rounded[key] = changed;
      std::cerr << "engram gate: note: " << file << ": " << changed << " of " << values.size() << " values of '" << key
                << "' are not bf16 and were rounded to bf16 (§FUS.1: the v4.1 gate computes on bf16 inputs), the "
                   "first: "
                << first << "\n";
    }
    return b;
  };
  const std::vector<uint16_t> x = bits("x", {hc, dim}), key = bits("key", {hc, dim}), value = bits("value", {dim}),
                              qw = bits("qWeight", {hc, dim}), kw = bits("kWeight", {hc, dim});
  const bool masked = in.value("masked", false);
  ojson doc;
  doc["profile"] = "v4.1";
  doc["dim"] = dim;
  doc["hc"] = hc;
  doc["eps"] = eps;
  doc["masked"] = masked;
  doc["rounded_to_bf16"] = rounded;  // §FUS.1 per input key: how many values were not bf16
  doc["streams"] = ojson::array();
  for (size_t c = 0; c < hc; ++c) {
    auto part = [&](const std::vector<uint16_t>& v) { return std::span(v).subspan(c * dim, dim); };
    ojson s;
    for (Precision p : {Precision::kFloat64, Precision::kFloat32}) {
      V41StreamTrace t = FuseV41Stream(part(x), part(key), value, part(qw), part(kw), eps, masked, p);
      std::vector<double> out_bf16;
      for (uint16_t b : t.out_bf16) out_bf16.push_back(Bf16Value(b));
      ojson j = {{"mean_h2", JsonNumber(t.mean_h2)}, {"rstd_h", JsonNumber(t.rstd_h)}, {"mean_k2", JsonNumber(t.mean_k2)},
                 {"rstd_k", JsonNumber(t.rstd_k)},   {"rstd", JsonNumber(t.rstd)},     {"sum_hwk", JsonNumber(t.sum_hwk)},
                 {"dot", JsonNumber(t.dot)},         {"dot_hex", FloatHex(t.dot)}};
      j["gate_parts"] = GateJson(t.gate_parts);
      j["gate"] = JsonNumber(t.gate);
      j["gate_hex"] = FloatHex(t.gate);
      j["out"] = Nums(t.out);
      j["out_bf16"] = Nums(out_bf16);
      s[PrecisionName(p)] = j;
    }
    doc["streams"].push_back(s);
  }
  return doc;
}

ojson RunDemo(const nlohmann::json& in, const std::string& file, size_t kernel, size_t dilation) {
  DemoParams q;
  const size_t steps = Len(in, "e", file), n_in = Len(in, "e", file, 1);
  q.hc = Len(in, "hidden", file, 1);
  q.hidden = Len(in, "hidden", file, 2);
  q.in = n_in;
  q.kernel = kernel;
  q.dilation = dilation;
  auto f32 = [&](const std::string& key, std::vector<size_t> shape) {
    std::vector<double> v = Flat(in, key, shape, file);
    for (double& x : v) x = F32(x);
    return v;
  };
  const std::vector<double> e = f32("e", {steps, n_in}), hidden = f32("hidden", {steps, q.hc, q.hidden});
  q.key_w = f32("keyWeight", {q.hc, q.hidden, n_in});
  q.key_b = f32("keyBias", {q.hc, q.hidden});
  q.norm1_w = f32("norm1Weight", {q.hc, q.hidden});
  q.norm2_w = f32("norm2Weight", {q.hc, q.hidden});
  q.value_w = f32("valueWeight", {q.hidden, n_in});
  q.value_b = f32("valueBias", {q.hidden});
  q.conv_norm_w = f32("convNormWeight", {q.hc, q.hidden});
  q.conv_w = f32("convWeight", {q.hc * q.hidden, kernel});
  ojson doc;
  doc["profile"] = "demo-v1";
  doc["steps"] = steps;
  doc["hc"] = q.hc;
  doc["hidden"] = q.hidden;
  doc["in"] = n_in;
  doc["kernel"] = kernel;
  doc["dilation"] = dilation;
  for (Precision p : {Precision::kFloat64, Precision::kFloat32}) {
    DemoForwardTrace f = DemoForward(e, hidden, steps, q, p);
    ojson j;
    j["positions"] = ojson::array();
    for (size_t t = 0; t < steps; ++t) {
      ojson pos = ojson::array();
      for (const DemoStreamTrace& s : f.tokens[t].streams) {
        pos.push_back({{"rstd_key", JsonNumber(s.normed_key.rstd)},
                       {"rstd_query", JsonNumber(s.normed_query.rstd)},
                       {"sum", JsonNumber(s.sum)},
                       {"g", JsonNumber(s.g)},
                       {"gate_parts", GateJson(s.gate_parts)},
                       {"gate", JsonNumber(s.gate)},
                       {"gate_hex", FloatHex(s.gate)}});
      }
      j["positions"].push_back(pos);
    }
    j["value"] = Nest(f.value, q.hc * q.hidden);
    j["short_conv"] = Nest(f.conv.act, q.hc * q.hidden);
    j["output"] = Nest(f.output, q.hc * q.hidden);
    doc[PrecisionName(p)] = j;
  }
  return doc;
}

nlohmann::json SyntheticInput(Profile profile, uint64_t seed) {
  uint64_t st = seed;
  auto mat = [&](std::vector<size_t> shape) {
    std::function<nlohmann::json(size_t)> build = [&](size_t d) {
      nlohmann::json a = nlohmann::json::array();
      for (size_t i = 0; i < shape[d]; ++i) a.push_back(d + 1 == shape.size() ? nlohmann::json(Synth(st)) : build(d + 1));
      return a;
    };
    return build(0);
  };
  if (profile == Profile::kV41) {
    const size_t hc = 4, dim = 8;
    return {{"x", mat({hc, dim})}, {"key", mat({hc, dim})}, {"value", mat({dim})},
            {"qWeight", mat({hc, dim})}, {"kWeight", mat({hc, dim})}, {"masked", false}};
  }
  const size_t steps = 5, hc = 2, hidden = 4, in = 8, kernel = 4;
  return {{"e", mat({steps, in})},           {"hidden", mat({steps, hc, hidden})},
          {"keyWeight", mat({hc, hidden, in})}, {"keyBias", mat({hc, hidden})},
          {"norm1Weight", mat({hc, hidden})}, {"norm2Weight", mat({hc, hidden})},
          {"valueWeight", mat({hidden, in})}, {"valueBias", mat({hidden})},
          {"convNormWeight", mat({hc, hidden})}, {"convWeight", mat({hc * hidden, kernel})}};
}

}  // namespace

void AddGateCommand(CLI::App& app) {
  struct State {
    std::string config, profile, input, out;
    uint64_t synthetic = 0;
  };
  auto s = std::make_shared<State>();
  auto* cmd = app.add_subcommand("gate", "Gate and fused output of a few positions, every intermediate (spec §FUS)");
  cmd->add_option("--config", s->config, "Configuration JSON (profile, norm_eps / kernel_size, max_ngram_size)")
      ->required();
  cmd->add_option("--profile", s->profile, "v4.1 or demo-v1 (overrides the detected profile)");
  auto* input = cmd->add_option("--input", s->input, "Input JSON (see `engram gate --synthetic 1` for the shape)");
  auto* synth = cmd->add_option("--synthetic", s->synthetic, "Generate small deterministic inputs from this seed")
                    ->check(UnsignedIn(0, UINT64_MAX, "a 64-bit seed"));
  input->excludes(synth);
  cmd->add_option("--out", s->out, "Write the JSON here instead of stdout");
  cmd->callback([s, synth] {
    const bool synthetic = synth->count() > 0;
    std::optional<Profile> override_profile;
    if (!s->profile.empty()) {
      override_profile = ParseProfile(s->profile);
      if (!override_profile) throw Error("--profile: '" + s->profile + "' is not v4.1 or demo-v1");
    }
    const EngramConfig cfg = LoadConfig(s->config, override_profile);
    if (s->input.empty() && !synthetic) throw Error("gate: give --input FILE or --synthetic SEED");
    const std::string file = synthetic ? "--synthetic " + std::to_string(s->synthetic) : s->input;
    const nlohmann::json in = synthetic ? SyntheticInput(cfg.profile, s->synthetic) : ReadJsonFile(s->input, InputKind::kFusionInput);
    if (!in.is_object()) throw Error(file + ": the input must be a JSON object");
    ojson doc;
    if (cfg.profile == Profile::kV41) {
      doc = RunV41(in, file, cfg.norm_eps);
    } else {
      if (cfg.kernel_size < 1) throw Error(s->config + ": kernel_size must be >= 1 for demo-v1");
      doc = RunDemo(in, file, static_cast<size_t>(cfg.kernel_size), static_cast<size_t>(cfg.max_ngram));
    }
    if (synthetic) doc["input"] = ojson::parse(in.dump());
    Emit(doc, s->out);
  });
}

}  // namespace engram::cli
