// The tests of the ABI 1.0 suites (§CONF.3) mapped onto the C ABI: the
// random numbers, the layout and the hasher (multipliers, layout, hash_v41,
// hash_demo, hash_state). Each takes a `test` request's group and test and
// returns the outputs the vectors hold, or throws Refused / Unsupported.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conformance/host/handles.h"
#include "conformance/host/marshal.h"
#include "conformance/host/outputs.h"

namespace engram::host {

// §RNG.3 BoundedIntegersTest: engram_bounded_integers.
json BoundedIntegersOutputs(const Api& api, const json& /*group*/, const json& test) {
  if (api.bounded_integers == nullptr) throw Unsupported{"engram_bounded_integers"};
  const json& high = test.at("high");
  // high may be 2^63: pass high - 1, which always fits int64.
  const int64_t high_minus_one = high.is_number_unsigned() && high.get<uint64_t>() == (uint64_t{1} << 63)
                                     ? INT64_MAX
                                     : I64(high) - 1;
  std::vector<int64_t> values(Count(test.at("count")));
  char err[1024] = "";
  if (api.bounded_integers(U64(test.at("seed")), I64(test.at("low")), high_minus_one, values.size(),
                           values.data(), err, sizeof(err)) != 0) {
    throw Refused{err};
  }
  return {{"values", values}};
}

// §RNG.4 MultipliersTest: engram_multipliers.
json MultipliersOutputs(const Api& api, const json& /*group*/, const json& test) {
  if (api.multipliers == nullptr) throw Unsupported{"engram_multipliers"};
  std::vector<int64_t> m(static_cast<size_t>(std::max(0, I32(test.at("maxNgram")))));
  char err[1024] = "";
  if (api.multipliers(I64(test.at("seed")), I64(test.at("layerId")),
                      I64(test.at("compressedVocabSize")), I32(test.at("maxNgram")), m.data(), err,
                      sizeof(err)) != 0) {
    throw Refused{err};
  }
  return {{"multipliers", m}};
}

// §LAY.3 LayoutTest: a layout built from the test's configuration.
json LayoutOutputs(const Api& api, const json& /*group*/, const json& test) {
  Layout layout(api, test);
  return {{"layers", layout.LayersJson()}};
}

// §HASH.5 HashTest: one append from a fresh sequence.
json HashOutputs(const Api& api, const json& group, const json& test) {
  if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
  Layout layout(api, group);
  Hasher h(api, layout, size_t{0});
  return {{"rows", h.Append(test.at("ids").get<std::vector<int64_t>>())}};
}

// §VEC.7 HashStateTest: the named sequences' appends, rollbacks and forks.
json HashStateOutputs(const Api& api, const json& group, const json& test) {
  if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
  Layout layout(api, group);
  const size_t capacity = group.value("rollbackCapacity", size_t{0});
  std::map<std::string, std::unique_ptr<Hasher>> seqs;
  // §VEC.7 A rollback, or a fork from, a name no append has started is
  // refused, naming the step and the name.
  auto named = [&](const std::string& name, size_t index, const std::string& op) -> Hasher& {
    auto it = seqs.find(name);
    if (it == seqs.end()) {
      throw Refused{"steps[" + std::to_string(index) + "] (" + op + "): sequence '" + name + "' was never appended to"};
    }
    return *it->second;
  };
  json steps = test.at("steps");
  size_t index = 0;
  for (json& step : steps) {
    const std::string op = step.at("op");
    const size_t at = index++;
    if (op == "append") {
      auto& h = seqs[step.at("seq").get<std::string>()];
      if (!h) h = std::make_unique<Hasher>(api, layout, capacity);
      step["rows"] = h->Append(step.at("ids").get<std::vector<int64_t>>());
      step["positionAfter"] = h->position();
      step["historyAfter"] = h->history();
    } else if (op == "rollback") {
      Hasher& h = named(step.at("seq").get<std::string>(), at, op);
      h.Rollback(Count(step.at("k")));
      step["positionAfter"] = h.position();
      step["historyAfter"] = h.history();
    } else if (op == "fork") {
      // §VEC.7 A fork onto a name that exists replaces that sequence: the
      // unique_ptr assignment destroys the old state (engram_hasher_destroy),
      // so nothing leaks.
      std::unique_ptr<Hasher> copy = named(step.at("from").get<std::string>(), at, op).Fork();
      seqs[step.at("to").get<std::string>()] = std::move(copy);
    } else {
      throw Refused{"steps[" + std::to_string(at) + "]: unknown op " + json(op).dump()};
    }
  }
  return {{"steps", steps}};
}

// §HASH.9 HashHandoffTest: segments that import a history, hash, export.
json HashHandoffOutputs(const Api& api, const json& group, const json& test) {
  if (!api.HasHasher()) throw Unsupported{"engram_hasher_* entry points"};
  Layout layout(api, group);
  const std::string fingerprint = group.value("layoutFingerprint", layout.fingerprint());
  auto segment = [&](json seg, const std::vector<int64_t>& ids) {
    Hasher h(api, layout, size_t{0});
    h.Import(seg.at("historyIn"), fingerprint);
    const size_t from = Count(seg.at("from")), to = Count(seg.at("to"));
    seg["rows"] = h.Append(std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(from),
                                                ids.begin() + static_cast<std::ptrdiff_t>(to)));
    seg["historyOut"] = {{"position", h.position()}, {"history", h.history()}};
    return seg;
  };
  if (test.contains("historyIn")) {  // an invalid test: the import must be refused
    Hasher h(api, layout, size_t{0});
    h.Import(test["historyIn"], test["historyIn"].value("layoutFingerprint", fingerprint));
    return {{"imported", true}};
  }
  if (test.contains("segments")) {
    const std::vector<int64_t> ids = test.at("ids").get<std::vector<int64_t>>();
    json segs = json::array();
    for (const json& seg : test.at("segments")) segs.push_back(segment(seg, ids));
    return {{"segments", segs}};
  }
  const auto seqs = test.at("sequences").get<std::vector<std::vector<int64_t>>>();
  json batches = json::array();
  for (const json& micro : test.at("microBatches")) {
    json out = json::array();
    for (const json& seg : micro) out.push_back(segment(seg, seqs.at(Count(seg.at("sequence")))));
    batches.push_back(out);
  }
  return {{"microBatches", batches}};
}

}  // namespace engram::host
