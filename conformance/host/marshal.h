// Marshalling between the protocol's JSON (§CONF.2) and the C ABI's types
// (§CONF.3): the integers of a request as the C types they are passed as, the
// text forms the vectors write (hex rows, float.hex() strings), spans over
// vectors, and the two answers that are not outputs: a refusal and an entry
// point the library does not export.
#ifndef ENGRAM_CONFORMANCE_HOST_MARSHAL_H_
#define ENGRAM_CONFORMANCE_HOST_MARSHAL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engram/conformance.h"

namespace engram::host {

// The host's JSON: the protocol's requests and answers.
using json = nlohmann::json;

// A refusal by the library, carried to the protocol as {"refused": ...}.
struct Refused {
  std::string message;
};

// An operation the library does not export, carried as {"unsupported": ...}.
struct Unsupported {
  std::string what;
};

// §CONF.4, §VEC.4 An integer of a request, as the C type it is passed as,
// by value. nlohmann's get<int64_t>() of 2^63 gives -2^63 and get<uint64_t>()
// of -1 gives 2^64 - 1 (both modulo 2^64): another, valid input would reach
// the library (a MultipliersTest seed of 2^63 read as -2^63). A value outside
// the type is refused (Refused), naming it.
int64_t I64(const json& v);
uint64_t U64(const json& v);
int32_t I32(const json& v);
// A count or an index: non-negative, and below 2^31 (no test of any suite
// comes near; a larger one would only be an allocation that fails).
size_t Count(const json& v);

// Every call below hands the library an `err` buffer of this size.
constexpr size_t kErrLen = 1024;

// `fn`, or Unsupported{name} when the library does not export it.
template <typename F>
F Need(F fn, const char* name) {
  if (fn == nullptr) throw Unsupported{name};
  return fn;
}

// §STO.11 text forms: bf16 rows as 4 hex digits per element, float32 as 8, bytes as 2.
std::string F32Hex(float f);
// Hex text as bytes; engram::Error names `field` when the digits are odd in number.
std::vector<uint8_t> HexBytes(const std::string& hex, const std::string& field);
// bf16 rows as the vectors write them: one string per row of `width` values.
json Bf16Rows(const std::vector<uint16_t>& v, size_t width);

// §FUS.9 floats as Python float.hex() strings.
json HexFloats(const double* v, size_t n);
// Floats of a request, each a float.hex() string or a JSON number; `field` names them in an error.
std::vector<double> ReadFloats(const json& a, const std::string& field);
double ReadFloat(const json& s, const std::string& field);

inline engram_bf16_span_t Span(const std::vector<uint16_t>& v) { return {v.data(), v.size()}; }
inline engram_u8_span_t Span(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }
inline engram_f64_span_t Span(const std::vector<double>& v) { return {v.data(), v.size()}; }

}  // namespace engram::host

#endif  // ENGRAM_CONFORMANCE_HOST_MARSHAL_H_
