// §FUS engram_conformance._core's fusion functions: reference/fusion.cc's gates, the v4.1 stream and the demo's
// ShortConv and forward, in float64 (the reference, §FUS.8) or float32 (the mirror).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "base/error.h"
#include "python/src/args.h"
#include "python/src/bind.h"
#include "reference/fusion.h"

namespace engram::py {
namespace {

using namespace nb::literals;

const IntRule kDemoSize{1, kInt64Max, "a demo-v1 size"};

engram::Precision ParsePrecision(nb::handle v) {
  const std::string p = Str(v, "precision", "'float64' or 'float32'");
  if (p == "float64") return engram::Precision::kFloat64;
  if (p == "float32") return engram::Precision::kFloat32;
  throw engram::Error("precision: '" + p + "' is neither 'float64' (the reference, §FUS.8) nor 'float32' (the mirror)");
}

// §FUS.5-§FUS.7 Demo parameters from a mapping of their names (engram.DemoParams).
const char* const kDemoSizes[] = {"hc", "hidden", "in", "kernel", "dilation"};
const char* const kDemoArrays[] = {"key_w", "key_b", "norm1_w", "norm2_w", "value_w", "value_b", "conv_norm_w", "conv_w"};

nb::handle Need(const nb::dict& d, const char* key) {
  if (!d.contains(key)) throw engram::Error(std::string("params: key '") + key + "' is missing");
  return d[key];
}

// The mapping of demo parameters, every key one of theirs.
nb::dict ParamsMapping(nb::handle mapping) {
  if (!PyDict_Check(mapping.ptr())) {
    throw nb::type_error(("params: must be a dict (engram.DemoParams(...)), got a " +
                          std::string(Py_TYPE(mapping.ptr())->tp_name))
                             .c_str());
  }
  const nb::dict d = nb::borrow<nb::dict>(mapping);
  for (auto [key, value] : d) {
    const std::string k = nb::cast<std::string>(nb::str(key));
    const bool known = std::find(std::begin(kDemoSizes), std::end(kDemoSizes), k) != std::end(kDemoSizes) ||
                       std::find(std::begin(kDemoArrays), std::end(kDemoArrays), k) != std::end(kDemoArrays);
    if (!known) {
      throw engram::Error("params: unknown key '" + k +
                          "' (sizes hc, hidden, in, kernel, dilation; arrays key_w, key_b, norm1_w, norm2_w, value_w, "
                          "value_b, conv_norm_w, conv_w)");
    }
  }
  return d;
}

// `check`: also DemoParams::Check (every array of its sizes' product, the products in 64 bits, §ERR.3), which
// engram.DemoParams leaves to the functions that use the parameters.
engram::DemoParams ParamsFrom(nb::handle mapping, bool check = true) {
  const nb::dict d = ParamsMapping(mapping);
  auto size = [&](const char* key) {
    return static_cast<size_t>(Int(Need(d, key), (std::string("params: ") + key).c_str(), kDemoSize));
  };
  auto values = [&](const char* key) {
    const Array<double> a = RealArray(Need(d, key), (std::string("params: ") + key).c_str());
    return std::vector<double>(a.data.begin(), a.data.end());
  };
  engram::DemoParams p;
  p.hc = size("hc");
  p.hidden = size("hidden");
  p.in = size("in");
  p.kernel = size("kernel");
  p.dilation = size("dilation");
  p.key_w = values("key_w");
  p.key_b = values("key_b");
  p.norm1_w = values("norm1_w");
  p.norm2_w = values("norm2_w");
  p.value_w = values("value_w");
  p.value_b = values("value_b");
  p.conv_norm_w = values("conv_norm_w");
  p.conv_w = values("conv_w");
  if (check) p.Check();
  return p;
}

// The parameters as engram.DemoParams returns them: sizes as ints, arrays as flat float64 numpy arrays.
nb::dict ParamsDict(const engram::DemoParams& p) {
  nb::dict d;
  d["hc"] = p.hc;
  d["hidden"] = p.hidden;
  d["in"] = p.in;
  d["kernel"] = p.kernel;
  d["dilation"] = p.dilation;
  const std::pair<const char*, const std::vector<double>*> arrays[] = {
      {"key_w", &p.key_w},     {"key_b", &p.key_b},     {"norm1_w", &p.norm1_w},         {"norm2_w", &p.norm2_w},
      {"value_w", &p.value_w}, {"value_b", &p.value_b}, {"conv_norm_w", &p.conv_norm_w}, {"conv_w", &p.conv_w}};
  for (const auto& [key, values] : arrays) d[key] = FromVector<double>(*values, {values->size()});
  return d;
}

nb::dict GatePartsDict(const engram::GateParts& g) {
  nb::dict d;
  d["clamped"] = g.clamped;
  d["root"] = g.root;
  d["signed_root"] = g.signed_root;
  d["gate"] = g.gate;
  return d;
}

// §FUS.3-§FUS.4 one v4.1 stream; bf16 inputs as bit patterns.
nb::dict FuseStream(nb::handle h_obj, nb::handle key_obj, nb::handle value_obj, nb::handle qw_obj, nb::handle kw_obj,
                    nb::handle eps_obj, nb::handle masked_obj, nb::handle p_obj) {
  const auto h = Bf16Array(h_obj, "h");
  const auto key = Bf16Array(key_obj, "key");
  const auto value = Bf16Array(value_obj, "value");
  const auto qw = Bf16Array(qw_obj, "q_weight");
  const auto kw = Bf16Array(kw_obj, "k_weight");
  const double eps = Real(eps_obj, "eps");
  // §FUS.3 eps is norm_eps, which a configuration gives as a finite number >= 0 (reference/config.cc).
  if (!(eps >= 0.0) || !std::isfinite(eps)) {
    throw engram::Error("eps: must be a finite number >= 0 (norm_eps, §FUS.3), got " +
                        nb::cast<std::string>(nb::str(eps_obj)));
  }
  const bool masked = Bool(masked_obj, "masked");
  const engram::Precision p = ParsePrecision(p_obj);
  const engram::V41StreamTrace t = engram::FuseV41Stream(h.data, key.data, value.data, qw.data, kw.data, eps, masked, p);
  nb::dict d;
  d["dot"] = t.dot;
  d["gate"] = t.gate;
  d["gate_parts"] = GatePartsDict(t.gate_parts);
  d["rstd"] = t.rstd;
  d["out"] = FromVector<double>(t.out, {t.out.size()});
  d["out_bf16"] = FromVector<uint16_t>(t.out_bf16, {t.out_bf16.size()});
  return d;
}

// §FUS.7 ShortConv of value[T, hc * hidden].
nb::dict ShortConvDict(nb::handle value_obj, nb::handle params, nb::handle p_obj) {
  const engram::DemoParams q = ParamsFrom(params);
  const auto value = RealArray(value_obj, "value");
  const size_t width = q.hc * q.hidden;
  if (value.ndim() != 2 || value.shape[1] != width) {
    throw engram::Error("value: shape " + ShapeText(value.shape) + "; ShortConv takes value[T, hc * hidden] = [T, " +
                        std::to_string(width) + "] (§FUS.7)");
  }
  const size_t steps = value.shape[0];
  const engram::ShortConvTrace t = engram::ShortConv(value.data, steps, q, ParsePrecision(p_obj));
  nb::dict d;
  d["normed"] = FromVector<double>(t.normed, {steps, width});
  d["conv"] = FromVector<double>(t.conv, {steps, width});
  d["act"] = FromVector<double>(t.act, {steps, width});
  return d;
}

// §FUS.5-§FUS.7 The demo's forward of e[T, in] on hidden[T, hc, hidden] (or [T, hc * hidden]).
nb::dict DemoForwardDict(nb::handle e_obj, nb::handle hidden_obj, nb::handle params, nb::handle p_obj) {
  const engram::DemoParams q = ParamsFrom(params);
  const auto e = RealArray(e_obj, "e");
  const auto hidden = RealArray(hidden_obj, "hidden");
  if (e.ndim() != 2 || e.shape[1] != q.in) {
    throw engram::Error("e: shape " + ShapeText(e.shape) + "; the forward takes e[T, in] = [T, " + std::to_string(q.in) +
                        "] (§FUS.6)");
  }
  const size_t steps = e.shape[0];
  const bool flat = hidden.ndim() == 2 && hidden.shape[0] == steps && hidden.shape[1] == q.hc * q.hidden;
  const bool full = hidden.ndim() == 3 && hidden.shape[0] == steps && hidden.shape[1] == q.hc && hidden.shape[2] == q.hidden;
  if (!flat && !full) {
    throw engram::Error("hidden: shape " + ShapeText(hidden.shape) + "; the forward takes hidden[T, hc, hidden] = " +
                        ShapeText({steps, q.hc, q.hidden}) + " (§FUS.6)");
  }
  const engram::DemoForwardTrace t = engram::DemoForward(e.data, hidden.data, steps, q, ParsePrecision(p_obj));
  std::vector<double> gates;
  for (const auto& tok : t.tokens) {
    for (const auto& s : tok.streams) gates.push_back(s.gate);
  }
  nb::dict d;
  d["gates"] = FromVector<double>(gates, {steps, q.hc});
  d["value"] = FromVector<double>(t.value, {steps, q.hc, q.hidden});
  d["conv"] = FromVector<double>(t.conv.act, {steps, q.hc, q.hidden});
  d["output"] = FromVector<double>(t.output, {steps, q.hc, q.hidden});
  d["hidden_after"] = FromVector<double>(t.hidden_after, {steps, q.hc, q.hidden});
  return d;
}

}  // namespace

void BindFusion(nb::module_& m) {
  m.def("gate_v41", [](nb::handle dot, nb::handle p) {
    return GatePartsDict(engram::GateV41(Real(dot, "dot"), ParsePrecision(p)));
  }, "dot"_a.none(), "precision"_a.none() = "float64",
        nb::sig("def gate_v41(dot: float, precision: str = 'float64') -> dict[str, float]"),
        "§FUS.4 {clamped, root, signed_root, gate}.");
  m.def("gate_demo", [](nb::handle g, nb::handle p) {
    return GatePartsDict(engram::GateDemo(Real(g, "g"), ParsePrecision(p)));
  }, "g"_a.none(), "precision"_a.none() = "float64",
        nb::sig("def gate_demo(g: float, precision: str = 'float64') -> dict[str, float]"),
        "§FUS.6 {clamped, root, signed_root, gate}.");
  m.def("fuse_v41_stream", &FuseStream, "h"_a.none(), "key"_a.none(), "value"_a.none(), "q_weight"_a.none(),
        "k_weight"_a.none(), "eps"_a.none(), "masked"_a.none() = false, "precision"_a.none() = "float64",
        nb::sig("def fuse_v41_stream(h: numpy.typing.ArrayLike, key: numpy.typing.ArrayLike, "
                "value: numpy.typing.ArrayLike, q_weight: numpy.typing.ArrayLike, k_weight: numpy.typing.ArrayLike, "
                "eps: float, masked: bool = False, precision: str = 'float64') -> dict[str, typing.Any]"),
        "§FUS.3-§FUS.4; bf16 inputs as bit patterns (uint16/int16, ints 0-65535).");
  m.def("demo_params", [](nb::handle params) { return ParamsDict(ParamsFrom(params, false)); }, "params"_a.none(),
        nb::sig("def demo_params(params: dict[str, typing.Any]) -> dict[str, typing.Any]"),
        "§FUS.5-§FUS.7 the checked parameters (sizes as ints, arrays as float64).");
  m.def("short_conv", &ShortConvDict, "value"_a.none(), "params"_a.none(), "precision"_a.none() = "float64",
        nb::sig("def short_conv(value: numpy.typing.ArrayLike, params: dict[str, typing.Any], precision: str = "
                "'float64') -> dict[str, numpy.typing.NDArray[numpy.float64]]"),
        "§FUS.7 {normed, conv, act}, each [T, hc * hidden].");
  m.def("demo_forward", &DemoForwardDict, "e"_a.none(), "hidden"_a.none(), "params"_a.none(),
        "precision"_a.none() = "float64",
        nb::sig("def demo_forward(e: numpy.typing.ArrayLike, hidden: numpy.typing.ArrayLike, "
                "params: dict[str, typing.Any], precision: str = 'float64') "
                "-> dict[str, numpy.typing.NDArray[numpy.float64]]"),
        "§FUS.5-§FUS.7 {gates [T, hc], value, conv, output, hidden_after [T, hc, hidden]}.");
}

}  // namespace engram::py
