// The tests of every suite mapped onto the C ABI (§CONF.3): each takes a
// `test` request's group and test (§CONF.2) and returns the outputs the vectors
// hold, or throws Refused (the library refused) or Unsupported (it does not
// export the entry point). plugin_host.cc dispatches to them by test type.
#ifndef ENGRAM_CONFORMANCE_HOST_OUTPUTS_H_
#define ENGRAM_CONFORMANCE_HOST_OUTPUTS_H_

#include <string>

#include "conformance/host/marshal.h"
#include "conformance/host/plugin_api.h"

namespace engram::host {

// §RNG.3, §RNG.4, §LAY.3, §HASH.5, §VEC.7, §HASH.9 the ABI 1.0 suites (outputs_hash.cc).
json BoundedIntegersOutputs(const Api& api, const json& group, const json& test);
json MultipliersOutputs(const Api& api, const json& group, const json& test);
json LayoutOutputs(const Api& api, const json& group, const json& test);
json HashOutputs(const Api& api, const json& group, const json& test);
json HashStateOutputs(const Api& api, const json& group, const json& test);
json HashHandoffOutputs(const Api& api, const json& group, const json& test);
// §STO.11 fp8_decode, table_lookup, tp_shard (outputs_storage.cc).
json StorageOutputs(const Api& api, const std::string& type, const json& group, const json& test);
// §TOK TokenMapTest (outputs_token_map.cc).
json TokenMapOutputs(const Api& api, const json& group, const json& test);
// §HASH.1 TokenLookupTest: the library's map and its compress entry point (outputs_token_map.cc).
json TokenLookupOutputs(const Api& api, const json& group, const json& test);
// §FUS.10 gate_v41, gate_demo, short_conv_demo, engram_forward (outputs_fusion.cc).
json FusionOutputs(const Api& api, const std::string& type, const json& group, const json& test);
// §HASH.10-§HASH.11 PackedBatchTest, DraftTreeTest: the test's encoding (§CON.7) read, one engram_hash_packed
// call, the outputs written in the encoding again (outputs_serving.cc).
json ServingOutputs(const Api& api, const std::string& type, const json& group, const json& test);

}  // namespace engram::host

#endif  // ENGRAM_CONFORMANCE_HOST_OUTPUTS_H_
