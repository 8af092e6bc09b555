// §FUS.10 The fusion suites through the C ABI: gates, the wkv projection, the
// demo gate and short convolution, and the whole forward step.
#include <algorithm>
#include <vector>

#include "conformance/host/handles.h"
#include "conformance/host/marshal.h"
#include "conformance/host/outputs.h"
#include "conformance/host/plugin_api.h"
#include "reference/fusion.h"

namespace engram::host {
namespace {

// The demo-v1 parameters of a group (§FUS.10) and the arrays they point into.
struct DemoParamsHolder {
  std::vector<double> key_w, key_b, norm1_w, norm2_w, value_w, value_b, conv_norm_w, conv_w;
  engram_demo_params_t p{};

  explicit DemoParamsHolder(const json& g)
      : key_w(ReadFloats(g.at("keyWeight"), "keyWeight")),
        key_b(ReadFloats(g.at("keyBias"), "keyBias")),
        norm1_w(ReadFloats(g.at("norm1Weight"), "norm1Weight")),
        norm2_w(ReadFloats(g.at("norm2Weight"), "norm2Weight")),
        value_w(ReadFloats(g.at("valueWeight"), "valueWeight")),
        value_b(ReadFloats(g.at("valueBias"), "valueBias")),
        conv_norm_w(ReadFloats(g.at("convNormWeight"), "convNormWeight")),
        conv_w(ReadFloats(g.at("convWeight"), "convWeight")) {
    p.hc = g.at("hc");
    p.hidden = g.at("hidden");
    p.in = g.at("in");
    p.kernel = g.at("kernel");
    p.dilation = g.at("dilation");
    p.key_weight = Span(key_w);
    p.key_bias = Span(key_b);
    p.norm1_weight = Span(norm1_w);
    p.norm2_weight = Span(norm2_w);
    p.value_weight = Span(value_w);
    p.value_bias = Span(value_b);
    p.conv_norm_weight = Span(conv_norm_w);
    p.conv_weight = Span(conv_w);
  }
  DemoParamsHolder(const DemoParamsHolder&) = delete;
  DemoParamsHolder& operator=(const DemoParamsHolder&) = delete;
};

}  // namespace

json FusionOutputs(const Api& api, const std::string& type, const json& group, const json& test) {
  char err[kErrLen] = "";
  if (type == "GateFunctionTest") {
    Need(api.gate, "engram_gate");
    double gate = 0;
    const std::string profile = group.at("profile");
    if (api.gate(profile.c_str(), ReadFloat(test.at("dot"), "dot"), &gate, err, sizeof err) != 0) throw Refused{err};
    return {{"gate", FloatHex(gate)}};
  }
  if (type == "V41GateTest") {
    Need(api.v41_gate, "engram_v41_gate");
    const size_t dim = group.at("dim"), hc = group.at("hc");
    const auto x = test.at("x").get<std::vector<uint16_t>>(), key = test.at("key").get<std::vector<uint16_t>>(),
               value = test.at("value").get<std::vector<uint16_t>>(), qw = test.at("qWeight").get<std::vector<uint16_t>>(),
               kw = test.at("kWeight").get<std::vector<uint16_t>>();
    std::vector<double> gate(hc);
    std::vector<uint16_t> out(hc * dim);
    if (api.v41_gate(dim, hc, ReadFloat(group.at("eps"), "eps"), Span(x), Span(key), Span(value), Span(qw), Span(kw),
                     test.at("masked").get<bool>() ? 1 : 0, gate.data(), out.data(), err, sizeof err) != 0) {
      throw Refused{err};
    }
    return {{"gate", HexFloats(gate.data(), gate.size())}, {"out", out}};
  }
  if (type == "WkvTest") {
    const auto e = test.at("e").get<std::vector<uint16_t>>();
    const size_t out_features = test.at("outFeatures");
    std::vector<uint16_t> kv(out_features);
    if (test.contains("weight")) {
      Need(api.wkv_bf16, "engram_wkv_bf16");
      const auto w = test.at("weight").get<std::vector<uint16_t>>();
      if (api.wkv_bf16(Span(e), Span(w), out_features, kv.data(), err, sizeof err) != 0) throw Refused{err};
    } else {
      Need(api.wkv_fp8, "engram_wkv_fp8");
      const auto wc = test.at("weightCodes").get<std::vector<uint8_t>>(), ws = test.at("weightScales").get<std::vector<uint8_t>>();
      if (api.wkv_fp8(Span(e), Span(wc), Span(ws), out_features, kv.data(), err, sizeof err) != 0) throw Refused{err};
    }
    return {{"kv", kv}};
  }
  if (type == "DemoGateTest") {
    Need(api.demo_gate, "engram_demo_gate");
    const DemoParamsHolder q(group);
    const std::vector<double> e = ReadFloats(test.at("e"), "e"), hidden = ReadFloats(test.at("hidden"), "hidden");
    std::vector<double> gate(q.p.hc), value(q.p.hc * q.p.hidden);
    if (api.demo_gate(&q.p, Span(e), Span(hidden), gate.data(), value.data(), err, sizeof err) != 0) throw Refused{err};
    return {{"gate", HexFloats(gate.data(), gate.size())}, {"value", HexFloats(value.data(), value.size())}};
  }
  if (type == "ShortConvTest") {
    Need(api.short_conv, "engram_short_conv");
    const DemoParamsHolder q(group);
    const size_t steps = test.at("steps");
    const std::vector<double> value = ReadFloats(test.at("value"), "value");
    std::vector<double> output(steps * q.p.hc * q.p.hidden);
    if (api.short_conv(&q.p, steps, Span(value), output.data(), err, sizeof err) != 0) throw Refused{err};
    return {{"output", HexFloats(output.data(), output.size())}};
  }
  if (type == "ShortConvStateTest") {
    // §FUS.12 One state through the test's calls, released by the library's
    // destroy whatever a call refuses.
    if (!api.conv_state_create || !api.conv_state_destroy || !api.conv_state_append || !api.conv_state_rollback ||
        !api.conv_state_window) {
      throw Unsupported{"engram_conv_state_* entry points"};
    }
    const DemoParamsHolder q(group);
    const std::vector<double> window_in = test.contains("stateIn") ? ReadFloats(test.at("stateIn"), "stateIn")
                                                                   : std::vector<double>();
    engram_conv_state* raw = api.conv_state_create(&q.p, group.at("rollbackCapacity"), Span(window_in), err, sizeof err);
    if (raw == nullptr) throw Refused{err};
    const std::unique_ptr<engram_conv_state, decltype(api.conv_state_destroy)> state(raw, api.conv_state_destroy);
    const size_t channels = q.p.hc * q.p.hidden;
    std::vector<double> output;
    for (const json& call : test.at("calls")) {
      if (call.at("op") == "rollback") {
        if (api.conv_state_rollback(state.get(), call.at("k"), err, sizeof err) != 0) throw Refused{err};
        continue;
      }
      const size_t steps = call.at("steps");
      const std::vector<double> value = ReadFloats(call.at("value"), "value");
      std::vector<double> out(steps * channels);
      if (api.conv_state_append(state.get(), steps, Span(value), out.data(), err, sizeof err) != 0) throw Refused{err};
      output.insert(output.end(), out.begin(), out.end());
    }
    std::vector<double> window((q.p.kernel - 1) * q.p.dilation * channels);
    if (api.conv_state_window(state.get(), window.data(), window.size(), err, sizeof err) != 0) throw Refused{err};
    return {{"output", HexFloats(output.data(), output.size())}, {"stateOut", HexFloats(window.data(), window.size())}};
  }
  if (type == "EngramForwardTest") {
    const bool v41 = group.at("profile") == "v4.1";
    if (v41 ? api.forward_v41 == nullptr : api.forward_demo == nullptr) {
      throw Unsupported{v41 ? "engram_forward_v41" : "engram_forward_demo"};
    }
    Layout layout(api, group);
    const auto ids = test.at("ids").get<std::vector<int64_t>>();
    const uint64_t seed = group.at("tableSeed");
    if (v41) {
      const auto x = test.at("x").get<std::vector<uint16_t>>(), qw = group.at("qWeight").get<std::vector<uint16_t>>(),
                 kw = group.at("kWeight").get<std::vector<uint16_t>>();
      const auto wc = group.at("wkvWeightCodes").get<std::vector<uint8_t>>(),
                 ws = group.at("wkvWeightScales").get<std::vector<uint8_t>>();
      const engram_v41_fusion_params_t p{Span(qw), Span(kw), Span(wc), Span(ws)};
      std::vector<uint16_t> out(x.size());
      std::vector<double> gate(x.size());  // n·hc <= n·hc·dim values
      size_t gate_count = 0;
      if (api.forward_v41(layout.get(), seed, &p, ids.data(), ids.size(), Span(x), out.data(), gate.data(), gate.size(),
                          &gate_count, err, sizeof err) != 0) {
        throw Refused{err};
      }
      return {{"out", out}, {"gate", HexFloats(gate.data(), std::min(gate_count, gate.size()))}};
    }
    const DemoParamsHolder q(group);
    const std::vector<double> hidden = ReadFloats(test.at("hidden"), "hidden");
    const size_t n = ids.size(), per = q.p.hc * q.p.hidden;
    std::vector<double> output(n * per), after(n * per), gate(n * q.p.hc);
    if (api.forward_demo(layout.get(), seed, &q.p, ids.data(), n, Span(hidden), output.data(), after.data(), gate.data(), err,
                         sizeof err) != 0) {
      throw Refused{err};
    }
    return {{"output", HexFloats(output.data(), output.size())},
            {"hiddenAfter", HexFloats(after.data(), after.size())},
            {"gate", HexFloats(gate.data(), gate.size())}};
  }
  throw Unsupported{"test type " + type};
}

}  // namespace engram::host
