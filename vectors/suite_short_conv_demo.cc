// spec/fusion.md — suite `short_conv_demo` (§FUS.10): generator and verifier of
// the demo-v1 ShortConv (ShortConvTest). What the fusion suites share (AddTest,
// the verifiers, the demo-v1 parameters): suite_fusion.cc.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "reference/fusion.h"
#include "vectors/suite.h"
#include "vectors/suite_fusion.h"
#include "vectors/suite_fusion_common.h"

namespace engram::vectors::fusion {

// ---------------------------------------------------------------------------
// ShortConvTest (§FUS.7)

namespace {

ShortConvTrace ShortConvOf(Bug bug, std::span<const double> value, size_t steps, const DemoParams& q, Precision p) {
  if (bug) return MutantShortConv(*bug, value, steps, q, p);
  return ShortConv(value, steps, q, p);
}

}  // namespace

// ShortConvTest: steps, value [T][hc][hidden].
ojson ComputeShortConv(const json& group, const json& test, Bug bug) {
  const DemoParams q = ReadDemoParams(group);
  const size_t steps = test.at("steps");
  const std::vector<double> value = ReadHexList(test.at("value"), "value");
  ojson out;
  try {
    ShortConvTrace r = ShortConvOf(bug, value, steps, q, k64), m = ShortConvOf(bug, value, steps, q, k32);
    out["result"] = "valid";
    out["output"] = {{"float64", HexList(r.act)}, {"float32", HexList(m.act)}};
    out["intermediate"] = {{"float64", {{"normed", HexList(r.normed)}, {"conv", HexList(r.conv)}}},
                           {"float32", {{"normed", HexList(m.normed)}, {"conv", HexList(m.conv)}}}};
  } catch (const Error& err) {
    out["result"] = "invalid";
    out["error"] = err.what();
  }
  return out;
}

// ---------------------------------------------------------------------------
// ShortConvStateTest (§FUS.12)

namespace {

std::unique_ptr<ShortConvState> StateOf(Bug bug, const DemoParams& q, size_t capacity, Precision p) {
  if (bug) return MutantShortConvState(*bug, q, capacity, p);
  return std::make_unique<ShortConvState>(q, capacity, p);
}

// One precision's run of the calls: the outputs of every appended step, in
// call order, and the intermediates of each; the state's exchanged form after.
struct StateRun {
  std::vector<double> output, normed, window, conv, state_out;
};

StateRun RunStateCalls(Bug bug, const DemoParams& q, size_t capacity, const json& test, Precision p) {
  std::unique_ptr<ShortConvState> s = StateOf(bug, q, capacity, p);
  if (test.contains("stateIn")) s->Import(ReadHexList(test.at("stateIn"), "stateIn"));
  StateRun run;
  size_t index = 0;
  for (const json& call : test.at("calls")) {
    const std::string op = call.at("op");
    const std::string where = "calls[" + std::to_string(index++) + "]";
    if (op == "append") {
      const ShortConvStateTrace t = s->Append(ReadHexList(call.at("value"), where + ".value"), call.at("steps"));
      run.output.insert(run.output.end(), t.act.begin(), t.act.end());
      run.normed.insert(run.normed.end(), t.normed.begin(), t.normed.end());
      run.window.insert(run.window.end(), t.window.begin(), t.window.end());
      run.conv.insert(run.conv.end(), t.conv.begin(), t.conv.end());
    } else if (op == "rollback") {
      s->Rollback(call.at("k"));
    } else {
      throw Error(where + ".op: '" + op + "' is not append or rollback");
    }
  }
  run.state_out = s->Window();
  return run;
}

}  // namespace

// ShortConvStateTest: group rollbackCapacity; test stateIn [W][hc*hidden]
// (import tests), calls [{op append, steps, value} | {op rollback, k}].
ojson ComputeShortConvState(const json& group, const json& test, Bug bug) {
  const DemoParams q = ReadDemoParams(group);
  const size_t capacity = group.at("rollbackCapacity");
  ojson out;
  try {
    const StateRun r = RunStateCalls(bug, q, capacity, test, k64), m = RunStateCalls(bug, q, capacity, test, k32);
    out["result"] = "valid";
    out["output"] = {{"float64", HexList(r.output)}, {"float32", HexList(m.output)}};
    out["stateOut"] = {{"float64", HexList(r.state_out)}, {"float32", HexList(m.state_out)}};
    out["intermediate"] = {
        {"float64", {{"normed", HexList(r.normed)}, {"window", HexList(r.window)}, {"conv", HexList(r.conv)}}},
        {"float32", {{"normed", HexList(m.normed)}, {"window", HexList(m.window)}, {"conv", HexList(m.conv)}}}};
  } catch (const Error& err) {
    out["result"] = "invalid";
    out["error"] = err.what();
  }
  return out;
}

namespace {

ojson Append(const std::vector<double>& value, size_t steps) {
  return {{"op", "append"}, {"steps", steps}, {"value", HexList(value)}};
}
ojson RollbackCall(size_t k) { return {{"op", "rollback"}, {"k", k}}; }

// ---------------------------------------------------------------------------
// short_conv_demo

// §FUS.12 ShortConvStateTest: the same layer carried across calls. A group of
// its own, drawn from a stream of its own, after the ShortConvTest group (the
// tests above keep their inputs and tcIds).
void AddStateTests(SuiteBuilder& b) {
  b.Note("ChunkBoundary", "BASIC",
         "A call boundary inside the dilation window: the call's first steps read the steps of earlier calls.",
         "§FUS.12");
  b.Note("OneTokenDecode", "BASIC", "Calls of one step each, as a decode loop makes them.", "§FUS.12");
  b.Note("StateImport", "BASIC",
         "The state of a sequence that began elsewhere is imported as its normed values (stateIn), never normalized "
         "again.",
         "§FUS.12");
  b.Note("ConvRollback", "BASIC",
         "Rejected draft steps are rolled back within the rollback depth; later steps read the steps before them.",
         "§FUS.12");
  b.Note("StateShapeMismatch", "INVALID_INPUT", "stateIn must hold W * hc * hidden values, a call's value steps * hc * hidden.",
         "§FUS.12");
  ojson sg = {{"type", "ShortConvStateTest"},
              {"comment", "ShortConv carried across calls, hc 2, hidden 4, kernel 4, dilation 3 (W = 9), rollback capacity 4"},
              {"profile", "demo-v1"}};
  InputRng rng(0x53544154);
  const size_t hc = 2, hidden = 4, C = hc * hidden, W = 9;
  AddDemoParams(sg, rng, hc, hidden, 1, 4, 3);
  sg["rollbackCapacity"] = 4;
  sg["tolerance"] = FusionTolerance("ShortConvStateTest", "demo-v1");
  const size_t g = b.Group(sg);
  auto values = [&](size_t steps, int exp2 = 0) { return RandomValues(rng, steps * C, exp2); };
  auto add = [&](const std::string& comment, std::vector<std::string> flags, ojson inputs) {
    AddTest(b, g, sg, ComputeShortConvState, comment, std::move(flags), {"§FUS.12"}, std::move(inputs));
  };
  add("prefill of 5 steps, then four one-token decode steps", {"ChunkBoundary", "OneTokenDecode"},
      {{"calls", {Append(values(5), 5), Append(values(1), 1), Append(values(1), 1), Append(values(1), 1),
                  Append(values(1), 1)}}});
  add("chunks of 2, 2, 2, 3 and 1 steps: every boundary inside the dilation window", {"ChunkBoundary"},
      {{"calls", {Append(values(2), 2), Append(values(2), 2), Append(values(2), 2), Append(values(3), 3),
                  Append(values(1), 1)}}});
  add("a fresh sequence decoded one token at a time: the first steps read the zero padding", {"OneTokenDecode"},
      {{"calls", {Append(values(1), 1), Append(values(1), 1), Append(values(1), 1), Append(values(1), 1)}}});
  add("speculative decoding: prefill 6, a draft of 3 of which 2 are rejected, 2 more steps, a draft of 4 all "
      "rejected, one step",
      {"ConvRollback", "ChunkBoundary"},
      {{"calls", {Append(values(6), 6), Append(values(3), 3), RollbackCall(2), Append(values(2), 2),
                  Append(values(4), 4), RollbackCall(4), Append(values(1), 1)}}});
  add("a state imported from a sequence that began elsewhere, then three decode steps", {"StateImport", "OneTokenDecode"},
      {{"stateIn", HexList(values(W))}, {"calls", {Append(values(1), 1), Append(values(1), 1), Append(values(1), 1)}}});
  add("an imported state, a chunk of 4, a rollback of all 4 (the whole depth) and 2 new steps",
      {"StateImport", "ConvRollback"},
      {{"stateIn", HexList(values(W))}, {"calls", {Append(values(4), 4), RollbackCall(4), Append(values(2), 2)}}});
  add("an empty call and a rollback by 0 change nothing", {"ChunkBoundary"},
      {{"calls", {Append(values(3), 3), Append({}, 0), RollbackCall(0), Append(values(2), 2)}}});
  add("small values across calls: the RMSNorm eps 1e-5 dominates", {"ChunkBoundary"},
      {{"calls", {Append(values(3, -9), 3), Append(values(1, -9), 1), Append(values(2, -9), 2)}}});
  add("stateIn has one row too few", {"StateShapeMismatch"},
      {{"stateIn", HexList(values(W - 1))}, {"calls", {Append(values(1), 1)}}});
  add("a call's value has one entry too few", {"StateShapeMismatch"},
      {{"calls", {Append(values(2), 2), {{"op", "append"}, {"steps", 2}, {"value", HexList(RandomValues(rng, 2 * C - 1, 0))}}}}});
}

ojson GenerateShortConv() {
  SuiteBuilder b("short_conv_demo", "fusion.schema.json", "ENGRAM-FUSION");
  CommonNotes(b);
  AddFusionNote(b, FusionMutant::kTapOrder, true);
  b.Note("Dilation", "BASIC", "dilation = max_ngram_size: tap j reads step t - (kernel-1-j) * dilation.", "§FUS.7");
  b.Note("SequenceStart", "EDGE_CASE", "Steps before the start read the zero padding.", "§FUS.7");
  AddFusionNote(b, FusionMutant::kConvNormEps, true);
  b.Note("ShapeMismatch", "INVALID_INPUT", "value must have steps * hc * hidden entries.", "§FUS.7");

  ojson sg = {{"type", "ShortConvTest"}, {"comment", "ShortConv, hc 2, hidden 8, kernel 4, dilation 3"},
              {"profile", "demo-v1"}};
  InputRng rng(0x434F4E56);
  const size_t hc = 2, hidden = 8;
  AddDemoParams(sg, rng, hc, hidden, 1, 4, 3);
  sg["tolerance"] = FusionTolerance("ShortConvTest", "demo-v1");
  size_t g = b.Group(sg);
  const size_t C = hc * hidden;
  {
    std::vector<double> v(12 * C, 0.0);
    for (size_t ch = 0; ch < C; ++ch) v[ch] = 1.0;  // an impulse at t = 0 in every channel
    AddTest(b, g, sg, ComputeShortConv, "impulse at t = 0: the taps appear at t = 0, 3, 6, 9 in the order 3, 2, 1, 0",
            {"Dilation", "SequenceStart"}, {"§FUS.7"}, {{"steps", 12}, {"value", HexList(v)}});
  }
  for (size_t steps : {1, 5, 13}) {
    AddTest(b, g, sg, ComputeShortConv, "random values, " + std::to_string(steps) + " steps",
            {"Dilation", "SequenceStart"}, {"§FUS.7"},
            {{"steps", steps}, {"value", HexList(RandomValues(rng, steps * C, 0))}});
  }
  AddTest(b, g, sg, ComputeShortConv, "small values: the RMSNorm eps 1e-5 dominates", {}, {"§FUS.7"},
          {{"steps", 4}, {"value", HexList(RandomValues(rng, 4 * C, -9))}});
  AddTest(b, g, sg, ComputeShortConv, "value has one entry too few", {"ShapeMismatch"}, {"§FUS.7"},
          {{"steps", 2}, {"value", HexList(RandomValues(rng, 2 * C - 1, 0))}});
  AddStateTests(b);
  return b.Finish();
}

}  // namespace

}  // namespace engram::vectors::fusion

namespace engram::vectors {

SuiteDef ShortConvDemoSuite() { return {"short_conv_demo", "fusion.schema.json", fusion::GenerateShortConv, fusion::FusionVerifiers()}; }

}  // namespace engram::vectors
