#include "base/hex.h"

namespace engram {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

// The value of one lower-case hex digit, or -1.
int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string HexOfBytes(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve(2 * bytes.size());
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::string HexOfBytes(std::string_view bytes) {
  return HexOfBytes(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

std::string HexOfU16(std::span<const uint16_t> words) {
  std::string out;
  out.reserve(4 * words.size());
  for (uint16_t w : words) {
    for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kDigits[(w >> shift) & 15]);
  }
  return out;
}

std::string HexOfU32(uint32_t word) {
  std::string out;
  for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kDigits[(word >> shift) & 15]);
  return out;
}

std::string HexOfU64(uint64_t word) {
  std::string out;
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kDigits[(word >> shift) & 15]);
  return out;
}

std::optional<std::string> BytesOfHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = DigitValue(hex[i]), lo = DigitValue(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

std::optional<std::vector<uint16_t>> U16sOfHex(std::string_view hex) {
  if (hex.size() % 4 != 0) return std::nullopt;
  std::vector<uint16_t> out;
  out.reserve(hex.size() / 4);
  for (size_t i = 0; i < hex.size(); i += 4) {
    int w = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int d = DigitValue(hex[i + k]);
      if (d < 0) return std::nullopt;
      w = w * 16 + d;
    }
    out.push_back(static_cast<uint16_t>(w));
  }
  return out;
}

}  // namespace engram
