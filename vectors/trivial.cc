// spec/conformance.md §CONF.4 "Trivial tests".
#include "vectors/trivial.h"

#include "vectors/compare.h"

namespace engram::vectors {

using ojson = nlohmann::ordered_json;

namespace {

bool EmptyList(const ojson& test, const char* key) {
  return test.contains(key) && test[key].is_array() && test[key].empty();
}

// §HASH.9 A segment that appends nothing hands its imported history on as it
// came: {"position", "history"} of its `historyIn` (the JSON form; a segment
// given only the binary form would need decoding, which is computing).
std::optional<ojson> HandedOn(const ojson& segment) {
  if (!segment.is_object() || !segment.contains("from") || !segment.contains("to") || segment["from"] != segment["to"]) {
    return std::nullopt;
  }
  if (!segment.contains("historyIn") || !segment["historyIn"].is_object()) return std::nullopt;
  const ojson& in = segment["historyIn"];
  if (!in.contains("position") || !in.contains("history")) return std::nullopt;
  return ojson{{"rows", ojson::array()}, {"historyOut", {{"position", in["position"]}, {"history", in["history"]}}}};
}

}  // namespace

std::optional<ojson> HollowOutputs(const ojson& group, const ojson& test) {
  const std::string type = group.value("type", "");
  const ojson empty = ojson::array();
  if (type == "HashTest" && EmptyList(test, "ids")) return ojson{{"rows", empty}};
  if (type == "BoundedIntegersTest" && test.value("count", int64_t{-1}) == 0) return ojson{{"values", empty}};
  if (type == "TokenLookupTest" && EmptyList(test, "rawIds")) return ojson{{"ids", empty}};
  if ((type == "SyntheticLookupTest" || type == "FloatLookupTest" || type == "RowShardTest" ||
       type == "SafetensorsLookupTest" || type == "PackedLookupTest" || type == "HeadShardTest") &&
      EmptyList(test, "rowIds")) {
    return ojson{{"rows", empty}};
  }
  if (type == "WkvTest" && test.value("outFeatures", int64_t{-1}) == 0) return ojson{{"kv", empty}};
  if (type == "ShortConvTest" && test.value("steps", int64_t{-1}) == 0) return ojson{{"output", empty}};
  if (type == "ShortConvStateTest" && test.contains("calls") && test["calls"].is_array()) {
    // §FUS.12 No step appended anywhere (a rollback then has nothing to undo):
    // no output, and the state handed on as it came, or the fresh zeros.
    for (const ojson& call : test["calls"]) {
      if (call.value("op", "") == "append" && call.value("steps", int64_t{-1}) != 0) return std::nullopt;
    }
    if (test.contains("stateIn")) return ojson{{"output", empty}, {"stateOut", test["stateIn"]}};
    const auto dim = [&](const char* key) { return group.value(key, int64_t{0}); };
    const int64_t n = (dim("kernel") - 1) * dim("dilation") * dim("hc") * dim("hidden");
    ojson zeros = ojson::array();
    for (int64_t i = 0; i < n; ++i) zeros.push_back("0x0.0p+0");
    return ojson{{"output", empty}, {"stateOut", zeros}};
  }
  if (type == "EngramForwardTest" && EmptyList(test, "ids")) {
    if (group.value("profile", "") == "v4.1") return ojson{{"out", empty}, {"gate", empty}};
    return ojson{{"output", empty}, {"hiddenAfter", empty}, {"gate", empty}};
  }
  if (type == "V41GateTest" && test.value("masked", false) && test.contains("x") && test["x"].is_array()) {
    // §FUS.3 a masked stream: gate 0, and x unchanged is what a port that
    // skips the stream returns (whether that passes depends on x: -0 and NaN
    // elements do not come out as they went in).
    ojson gate = ojson::array();
    for (size_t i = 0; i < static_cast<size_t>(group.value("hc", int64_t{0})); ++i) gate.push_back("0x0.0p+0");
    return ojson{{"gate", gate}, {"out", test["x"]}};
  }
  if (type == "HashStateTest" && test.contains("steps") && test["steps"].is_array()) {
    // Nothing appended anywhere: every state stays at position 0 with no
    // history, which needs no hash.
    ojson steps = ojson::array();
    for (const ojson& step : test["steps"]) {
      const std::string op = step.value("op", "");
      if (op == "append" && !EmptyList(step, "ids")) return std::nullopt;
      if (op == "rollback" && step.value("k", int64_t{-1}) != 0) return std::nullopt;
      if (op == "fork") {
        steps.push_back(ojson::object());
      } else {
        ojson out = {{"positionAfter", 0}, {"historyAfter", empty}};
        if (op == "append") out = {{"rows", empty}, {"positionAfter", 0}, {"historyAfter", empty}};
        steps.push_back(std::move(out));
      }
    }
    return ojson{{"steps", steps}};
  }
  if (type == "HashHandoffTest") {
    ojson out = ojson::object();
    if (test.contains("segments") && test["segments"].is_array()) {
      ojson list = ojson::array();
      for (const ojson& s : test["segments"]) {
        std::optional<ojson> h = HandedOn(s);
        if (!h) return std::nullopt;
        list.push_back(std::move(*h));
      }
      out["segments"] = std::move(list);
    }
    if (test.contains("microBatches") && test["microBatches"].is_array()) {
      ojson batches = ojson::array();
      for (const ojson& batch : test["microBatches"]) {
        if (!batch.is_array()) return std::nullopt;
        ojson list = ojson::array();
        for (const ojson& s : batch) {
          std::optional<ojson> h = HandedOn(s);
          if (!h) return std::nullopt;
          list.push_back(std::move(*h));
        }
        batches.push_back(std::move(list));
      }
      out["microBatches"] = std::move(batches);
    }
    if (out.empty()) return std::nullopt;
    return out;
  }
  return std::nullopt;
}

bool IsTrivial(const ojson& group, const ojson& test) {
  if (test.value("result", "") != "valid") return false;
  return IsTrivial(group, test, SplitOrdered(group.value("type", ""), test));
}

bool IsTrivial(const ojson& group, const ojson& test, const SplitTest& split) {
  if (test.value("result", "") != "valid") return false;
  const std::optional<ojson> hollow = HollowOutputs(group, test);
  if (!hollow) return false;
  if (split.expected.empty()) return false;  // nothing expected: nothing to pass (the runner refuses such vectors)
  return CompareOrdered(group.value("type", ""), group, split.expected, *hollow).empty();
}

}  // namespace engram::vectors
