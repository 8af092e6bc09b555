#include "base/hex.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace {

// Known answers written out by hand (not by the encoder): the digits of each
// byte, most significant nibble first.
TEST(Hex, KnownAnswers) {
  const std::vector<uint8_t> bytes = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
  EXPECT_EQ(engram::HexOfBytes(bytes), "00017f80abff");
  EXPECT_EQ(engram::HexOfBytes(std::string_view("ENGRAM")), "454e4752414d");
  const std::vector<uint16_t> words = {0x0000, 0x3f80, 0x7fc0, 0xffff};
  EXPECT_EQ(engram::HexOfU16(words), "00003f807fc0ffff");
  EXPECT_EQ(engram::HexOfU64(0x0123456789abcdefULL), "0123456789abcdef");
  EXPECT_EQ(engram::HexOfU64(1), "0000000000000001");
  EXPECT_EQ(engram::HexOfU32(0x3f800000u), "3f800000");  // float32 1.0
  EXPECT_EQ(engram::BytesOfHex("454e4752414d"), std::optional<std::string>("ENGRAM"));
  EXPECT_EQ(engram::U16sOfHex("3f807fc0"), (std::optional<std::vector<uint16_t>>(std::vector<uint16_t>{0x3f80, 0x7fc0})));
  EXPECT_EQ(engram::BytesOfHex(""), std::optional<std::string>(""));
}

// Only the encoders' form decodes: one spelling per byte string.
TEST(Hex, RefusesOtherSpellings) {
  EXPECT_EQ(engram::BytesOfHex("abc"), std::nullopt);     // odd length
  EXPECT_EQ(engram::BytesOfHex("AB"), std::nullopt);      // upper case
  EXPECT_EQ(engram::BytesOfHex("0x12"), std::nullopt);    // a prefix
  EXPECT_EQ(engram::BytesOfHex("12 34"), std::nullopt);   // a separator
  EXPECT_EQ(engram::BytesOfHex("g0"), std::nullopt);      // not a digit
  EXPECT_EQ(engram::U16sOfHex("3f8"), std::nullopt);      // not whole words
  EXPECT_EQ(engram::U16sOfHex("3F80"), std::nullopt);     // upper case
}

RC_GTEST_PROP(Hex, BytesRoundTrip, (const std::vector<uint8_t>& bytes)) {
  const std::string hex = engram::HexOfBytes(bytes);
  RC_ASSERT(hex.size() == 2 * bytes.size());
  const auto back = engram::BytesOfHex(hex);
  RC_ASSERT(back.has_value());
  RC_ASSERT(std::vector<uint8_t>(back->begin(), back->end()) == bytes);
}

RC_GTEST_PROP(Hex, WordsRoundTripAndReadAsTheirBytes, (const std::vector<uint16_t>& words)) {
  const std::string hex = engram::HexOfU16(words);
  RC_ASSERT(engram::U16sOfHex(hex) == std::optional<std::vector<uint16_t>>(words));
  // A word is its two bytes, high byte first.
  std::vector<uint8_t> be;
  for (uint16_t w : words) {
    be.push_back(static_cast<uint8_t>(w >> 8));
    be.push_back(static_cast<uint8_t>(w & 0xff));
  }
  RC_ASSERT(hex == engram::HexOfBytes(be));
}

}  // namespace
