// spec/conformance.md §CONF.4 — expected failures (--expect-fail): the tests a
// port knows it fails, read against the vectors and applied to each result.
#ifndef ENGRAM_CONFORMANCE_RUNNER_EXPECT_FAIL_H_
#define ENGRAM_CONFORMANCE_RUNNER_EXPECT_FAIL_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "conformance/runner/runner.h"
#include "conformance/runner/vector_set.h"

namespace engram::conform {

// suite -> tcIds; suite "contract" holds the contract checks' ids (VectorSet::contract_ids).
struct ExpectFail {
  std::map<std::string, std::set<int64_t>> ids;
  bool Contains(const std::string& suite, int64_t id) const {
    auto it = ids.find(suite);
    return it != ids.end() && it->second.count(id) != 0;
  }
};

// §CONF.4 {"suite": [tcId, ...]} or ["suite:tcId", ...]; every entry must name
// a test the vectors have (an entry that names none would never match). An
// empty `path`: no expected failures. Throws engram::Error naming the file and
// the entry.
ExpectFail LoadExpectFail(const std::filesystem::path& path, const VectorSet& vectors);

// §CONF.4 A listed test that fails is an expected failure; one that passes is
// stale (listed as an expected failure but passes). Other results, and tests
// not listed, are left as they are.
void ApplyExpectFail(const ExpectFail& expect_fail, TestResult& r);

}  // namespace engram::conform

#endif  // ENGRAM_CONFORMANCE_RUNNER_EXPECT_FAIL_H_
