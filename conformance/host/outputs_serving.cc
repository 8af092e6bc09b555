// §HASH.10-§HASH.11, §CON.7 The serving_v41 suite through the C ABI: the
// test's encoding read into one packed call (engram_hash_packed takes the
// §HASH.9 form), its answer written back in the encoding.
#include <vector>

#include "base/error.h"
#include "conformance/host/handles.h"
#include "conformance/host/marshal.h"
#include "conformance/host/outputs.h"
#include "conformance/host/plugin_api.h"
#include "vectors/serving.h"
#include "vectors/suite.h"

namespace engram::host {

json ServingOutputs(const Api& api, const std::string& type, const json& group, const json& test) {
  Need(api.hash_packed, "engram_hash_packed");
  Layout layout(api, group);
  // The encodings are read with the layout the group states (max n-gram, pad, V); the library hashes with its own.
  const engram::Layout stated = vectors::GroupLayout(group);
  vectors::ServingCase c;
  try {
    c = vectors::ReadServingCase(stated, type, test);
  } catch (const Error& e) {
    throw Refused{std::string("plugin-host: ") + e.what()};
  }
  const PackedCall& call = c.call;
  const size_t window = layout.max_ngram() - 1, requests = call.cu_seqlens.size() - 1;
  std::vector<int64_t> positions_in(requests), ids_in(requests * window), accepted;
  std::vector<size_t> counts_in(requests), offsets;
  for (size_t r = 0; r < requests; ++r) {
    const HashHistory& h = call.histories[r];
    positions_in[r] = h.position;
    counts_in[r] = h.ids.size();
    if (h.ids.size() > window) throw Refused{"historyIn[" + std::to_string(r) + "]: more than max_ngram - 1 ids"};
    std::copy(h.ids.begin(), h.ids.end(), ids_in.begin() + static_cast<std::ptrdiff_t>(r * window));
  }
  engram_packed_call_t in{call.ids.data(), call.ids.size(), call.cu_seqlens.data(), requests, call.positions.data(),
                          positions_in.data(), counts_in.data(), ids_in.data(), nullptr, nullptr, nullptr};
  if (!call.parents.empty()) {
    offsets.push_back(0);
    for (const std::vector<int64_t>& path : call.accepted) {
      accepted.insert(accepted.end(), path.begin(), path.end());
      offsets.push_back(accepted.size());
    }
    if (call.accepted.size() != requests) throw Refused{"accepted: not one path per request"};
    in.parents = call.parents.data();
    in.accepted = accepted.data();
    in.accepted_offsets = offsets.data();
  }
  // Rows for the request slots only; a boundary the library must refuse may claim more, so room for every slot.
  const size_t per_slot = layout.layers() * layout.columns();
  std::vector<int64_t> rows(std::max<size_t>(call.ids.size(), 1) * per_slot), positions_out(requests), ids_out(requests * window);
  std::vector<size_t> counts_out(requests);
  engram_packed_result_t out{rows.data(), rows.size(), positions_out.data(), counts_out.data(), ids_out.data()};
  char err[kErrLen] = "";
  if (api.hash_packed(layout.get(), &in, &out, err, sizeof err) != 0) throw Refused{err};
  const size_t request_slots = static_cast<size_t>(call.cu_seqlens.back());
  rows.resize(request_slots * per_slot);
  std::vector<HashHistory> histories;
  for (size_t r = 0; r < requests; ++r) {
    const size_t n = std::min(counts_out[r], window);
    const auto begin = ids_out.begin() + static_cast<std::ptrdiff_t>(r * window);
    histories.push_back(HashHistory{positions_out[r], std::vector<int64_t>(begin, begin + static_cast<std::ptrdiff_t>(n)), ""});
  }
  const vectors::ServingOutcome outcome = vectors::ServingOutcomeOf(stated, c, std::move(rows), histories);
  return json(vectors::ServingOutputs(stated, c, outcome));
}

}  // namespace engram::host
