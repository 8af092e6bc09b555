// spec/conformance.md §CONF.4 "Trivial tests" — the tests a port passes
// without computing anything, found by answering them with nothing computed.
#ifndef ENGRAM_VECTORS_TRIVIAL_H_
#define ENGRAM_VECTORS_TRIVIAL_H_

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "vectors/compare.h"

namespace engram::vectors {

// §VEC.12 The flag the generator puts on every trivial test (its note says
// why such a test does not count toward a verdict).
inline constexpr const char* kTrivialFlag = "Trivial";

// §CONF.4 What an implementation that computes nothing can answer to a test
// from the shape of its inputs alone: empty lists for empty sequences, the
// imported history handed on unchanged when no id is appended, a masked gate
// stream passed through (gate +0, out = x). nullopt when such a port has
// nothing to say (any input that needs a hash, a lookup or arithmetic).
// `group` is the test's group (its `type`, `profile`); `inputs` the test.
std::optional<nlohmann::ordered_json> HollowOutputs(const nlohmann::ordered_json& group,
                                                    const nlohmann::ordered_json& test);

// §CONF.4 A valid test is trivial when its hollow answer (above) passes it
// under the runner's own comparison (§CONF.1): whatever the test guards, a
// port that passes it has shown nothing. The flag is thus computed, as the
// KNOWN_DIVERGENCE flags are (§VEC.12), never chosen by hand.
bool IsTrivial(const nlohmann::ordered_json& group, const nlohmann::ordered_json& test);
/// The same, with `split` = SplitOrdered(type, test) already made.
bool IsTrivial(const nlohmann::ordered_json& group, const nlohmann::ordered_json& test, const SplitTest& split);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_TRIVIAL_H_
