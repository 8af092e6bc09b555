// spec/conformance.md §CONF.1 — comparing an implementation's outputs with a
// test's expected outputs: exact integers, hex floats (§STO.11), §FUS.9
// tolerances.
#ifndef ENGRAM_VECTORS_COMPARE_H_
#define ENGRAM_VECTORS_COMPARE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace engram::vectors {

// §CONF.1 The keys an implementation must produce for `test` (the expected
// outputs), and `test` with them removed (what is sent). Informative outputs
// (`error`, the fp8_decode tests' `value`) are in neither.
struct SplitTest {
  nlohmann::ordered_json inputs;
  nlohmann::ordered_json expected;  // output key -> expected value
};
// `test` must keep the file's key order (read it as nlohmann::ordered_json,
// never as nlohmann::json, whose objects are sorted alphabetically).
SplitTest SplitOrdered(const std::string& type, const nlohmann::ordered_json& test);

// §CONF.4 Compares returned outputs with the expected ones. Returns an empty
// string when they match, else a description naming the first differing
// element by path ("rows[3][1][17]: expected 5, got 6"). `group` (the test's
// group without its tests) supplies the §FUS.9 `tolerance` of float outputs;
// without it every output is compared exactly (hex floats of §STO.11 still
// match NaN with NaN, §STO.9).
std::string CompareOrdered(const std::string& type, const nlohmann::ordered_json& group,
                           const nlohmann::ordered_json& expected, const nlohmann::ordered_json& actual);
// The same with no group (no tolerances).
std::string CompareOrdered(const std::string& type, const nlohmann::ordered_json& expected,
                           const nlohmann::ordered_json& actual);

// §CONF.1 exact comparison: "" or "path: expected X, got Y" at the first
// element that differs (depth first, in `expected`'s key order). An expected
// integer matches only a JSON integer of the same value (§VEC.4): a float is
// refused however close it is.
std::string FirstDifference(const nlohmann::ordered_json& expected, const nlohmann::ordered_json& actual,
                            const std::string& path);

// §CONF.4, §VEC.4 Whether two JSON integers have the same value. nlohmann's
// operator== compares a signed with an unsigned integer after converting one
// to the other's type, that is modulo 2^64: -1 would equal
// 18446744073709551615 and 2^63 would equal -2^63, so a port writing negative
// outputs as their uint64 bit patterns (or large ones as negative int64)
// would pass. Integers are compared by value.
template <class Json>
bool SameInteger(const Json& a, const Json& b) {
  if (a.is_number_unsigned() == b.is_number_unsigned()) return a == b;
  const Json& u = a.is_number_unsigned() ? a : b;
  const Json& s = a.is_number_unsigned() ? b : a;
  const int64_t sv = s.template get<int64_t>();
  return sv >= 0 && static_cast<uint64_t>(sv) == u.template get<uint64_t>();
}

// §CONF.1 Outputs written for people (`error`; `value` of the fp8 decode
// tests): never sent, required or compared.
bool IsInformative(const std::string& type, const std::string& key);

// `v` as compact JSON, cut to `max_chars` with "..." (for one-line messages).
std::string Short(const nlohmann::ordered_json& v, size_t max_chars = 160);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_COMPARE_H_
