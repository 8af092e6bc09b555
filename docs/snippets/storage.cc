// Snippet for docs/storage.md (spec §STO): FP8 codes and scales, one element
// and one row decoded by hand, and what tensor parallelism does to zeros.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "reference/storage.h"
#include "base/hex.h"

using namespace engram;

int main() {
  //! [codes]
  // §STO.1 E4M3fn: sign, 4 exponent bits, 3 mantissa bits; §STO.2 E8M0: 2^(s-127).
  const uint8_t codes[] = {0x00, 0x01, 0x08, 0x38, 0x3C, 0x78, 0x7E, 0x7F, 0x80, 0xBC};
  for (uint8_t c : codes) std::printf("e4m3 0x%02x = %g\n", c, static_cast<double>(DecodeE4M3(c)));
  const uint8_t scales[] = {0x00, 0x7F, 0x80, 0x76, 0xFF};
  for (uint8_t s : scales) {
    if (s == 0xFF) {
      std::printf("e8m0 0x%02x = %g\n", s, DecodeE8M0(s));
    } else {
      std::printf("e8m0 0x%02x = %g (2^%d)\n", s, DecodeE8M0(s), s - 127);
    }
  }
  //! [codes]

  //! [element]
  // §STO.3: value = bf16_RNE(e4m3 * 2^(s-127)); one rounding only.
  struct Case { uint8_t code, scale; };
  const Case cases[] = {{0x3C, 0x7F}, {0x3C, 0x76}, {0x7E, 0xFE}, {0x01, 0x00}, {0x80, 0x7F}, {0x7F, 0x7F}};
  for (const Case& c : cases) {
    const uint16_t b = DecodeElement(c.code, c.scale);
    std::printf("code 0x%02x scale 0x%02x -> bf16 0x%04x = %g\n", c.code, c.scale, b,
                static_cast<double>(Bf16ToFloat(b)));
  }
  //! [element]

  //! [row]
  // §STO.5/§STO.6: row 5 of a synthetic table the size of V4.1 layer 1 (seed 7).
  auto table = SyntheticTable(/*seed=*/7, /*rows=*/384006168, /*head_dim=*/256);
  const RowBytes bytes = table->Row(5);
  const std::vector<uint16_t> row = DecodeRow(bytes);
  //! [row]
  std::printf("row 5: scales %s\n", HexOfBytes(bytes.scales).c_str());
  std::printf("row 5: codes[0..7] %s\n", HexOfBytes(std::span(bytes.codes).first(8)).c_str());
  std::printf("row 5: values[0..7]");
  for (int j = 0; j < 8; ++j) std::printf(" %g", static_cast<double>(Bf16ToFloat(row[static_cast<size_t>(j)])));
  std::printf("\n");

  //! [shards]
  // §STO.7: 16 ranks share layer 1's rows; part = ceil(R / W).
  const int64_t rows = 384006168;
  std::printf("part = %lld\n", static_cast<long long>(ShardPart(rows, 16)));
  for (int r : {0, 1, 15}) {
    const Shard s = RowShard(rows, r, 16);
    std::printf("rank %2d owns [%lld, %lld)\n", r, static_cast<long long>(s.begin), static_cast<long long>(s.end));
  }
  // The all_reduce of a -0 element: -0 + (+0) = +0, the only change sharding makes.
  std::printf("bf16 -0 (0x8000) + +0 (0x0000) = 0x%04x\n", Bf16Add(0x8000, 0x0000));
  //! [shards]
  return 0;
}
