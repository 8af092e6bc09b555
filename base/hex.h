#pragma once
// Hex text of bytes and of 16-bit words: the one encoder and decoder the
// project uses wherever bytes travel as text (SHA-256 digests, layout
// fingerprints, binary histories, fp8 codes, bf16 rows, tokenizer bytes in
// recipes). Lower-case digits, most significant nibble first, no prefix and
// no separators: the form the vectors and reports carry (spec/vectors.md).
// Hex floats ("0x1.8p+1") are another format: reference/fusion.h FloatHex.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace engram {

/// Two lower-case hex digits per byte.
std::string HexOfBytes(std::span<const uint8_t> bytes);
/// Two lower-case hex digits per byte of `bytes` (a byte string).
std::string HexOfBytes(std::string_view bytes);
/// Four lower-case hex digits per 16-bit word (bf16 bit patterns, row-major).
std::string HexOfU16(std::span<const uint16_t> words);
/// Eight lower-case hex digits of a 32-bit word (float32 bit patterns).
std::string HexOfU32(uint32_t word);
/// Sixteen lower-case hex digits of a 64-bit word.
std::string HexOfU64(uint64_t word);

/// The bytes that `hex` spells, or std::nullopt when it is not the form the
/// encoders write: an even number of digits 0-9 a-f (upper case is refused,
/// so that one byte string has one spelling and digests compare as text).
std::optional<std::string> BytesOfHex(std::string_view hex);
/// The 16-bit words that `hex` spells (four digits each), or std::nullopt
/// when it is not a multiple of four lower-case hex digits.
std::optional<std::vector<uint16_t>> U16sOfHex(std::string_view hex);

}  // namespace engram
