// Marshalling between the protocol's JSON and the C ABI's types (marshal.h).
#include "conformance/host/marshal.h"

#include <cstring>
#include <span>

#include "base/error.h"
#include "base/hex.h"
#include "reference/fusion.h"

namespace engram::host {

// §CONF.4, §VEC.4 by value, in the C type (marshal.h says why).
int64_t I64(const json& v) {
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return v.get<int64_t>();
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  throw Refused{"the value " + v.dump() + " is not an integer in [-2^63, 2^63)"};
}
uint64_t U64(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  throw Refused{"the value " + v.dump() + " is not an integer in [0, 2^64)"};
}
int32_t I32(const json& v) {
  const int64_t x = I64(v);
  if (x < INT32_MIN || x > INT32_MAX) throw Refused{"the value " + v.dump() + " is not an integer in [-2^31, 2^31)"};
  return static_cast<int32_t>(x);
}
// A count or an index: non-negative, and below 2^31 (no test of any suite
// comes near; a larger one would only be an allocation that fails).
size_t Count(const json& v) {
  const int64_t x = I64(v);
  if (x < 0 || x > INT32_MAX) throw Refused{"the value " + v.dump() + " is not a count in [0, 2^31)"};
  return static_cast<size_t>(x);
}

// §STO.11 text forms: bf16 rows as 4 hex digits per element, float32 as 8, bytes as 2.
std::string F32Hex(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return HexOfU32(u);
}

std::vector<uint8_t> HexBytes(const std::string& hex, const std::string& field) {
  if (hex.size() % 2 != 0) throw Error(field + ": odd number of hex digits");
  std::vector<uint8_t> out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// bf16 rows as the vectors write them: one string per row of `width` values.
json Bf16Rows(const std::vector<uint16_t>& v, size_t width) {
  json out = json::array();
  for (size_t i = 0; i + width <= v.size() && width > 0; i += width) {
    out.push_back(HexOfU16(std::span<const uint16_t>(v.data() + i, width)));
  }
  return out;
}

// §FUS.9 floats as Python float.hex() strings.
json HexFloats(const double* v, size_t n) {
  json out = json::array();
  for (size_t i = 0; i < n; ++i) out.push_back(FloatHex(v[i]));
  return out;
}

std::vector<double> ReadFloats(const json& a, const std::string& field) {
  std::vector<double> out;
  for (const json& s : a) out.push_back(s.is_string() ? ParseFloat(s.get<std::string>(), field) : s.get<double>());
  return out;
}

double ReadFloat(const json& s, const std::string& field) {
  return s.is_string() ? ParseFloat(s.get<std::string>(), field) : s.get<double>();
}

}  // namespace engram::host
