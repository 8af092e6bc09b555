// Snippet for docs/hash.md (spec §HASH): one position by hand, DEAD blocking,
// chunking, rollback and the history hand-off.
#include <cstdio>
#include <string>
#include <vector>

#include "reference/config.h"
#include "reference/hash.h"
#include "reference/layout.h"

using namespace engram;

static void PrintIds(const char* label, const std::vector<int64_t>& v) {
  std::printf("%s", label);
  for (int64_t x : v) std::printf(" %lld", static_cast<long long>(x));
  std::printf("\n");
}

int main() {
  const Layout layout = BuildLayout(V41FlashConfig(), 99092, 2);
  const LayerLayout& l1 = layout.layers[0];

  //! [by_hand]
  // Position 3 of the compressed ids [10, 20, 30, 40]: tok_s is the id s positions back.
  const int64_t tok[4] = {40, 30, 20, 10};
  int64_t rolling = tok[0] * l1.multipliers[0];       // §HASH.3 product_0
  for (int s = 1; s < 4; ++s) {
    rolling ^= tok[s] * l1.multipliers[static_cast<size_t>(s)];  // rolling_s = rolling_{s-1} XOR product_s
    const int n = s + 1;                               // this is the n-gram mix
    const int col = (n - 2) * layout.heads;            // head 0 of order n
    const int64_t residue = rolling % l1.prime(col);   // non-negative in v4.1 (§HASH.7)
    std::printf("%d-gram mix %lld, head 0: prime %lld, residue %lld, row %lld\n", n, static_cast<long long>(rolling),
                static_cast<long long>(l1.prime(col)), static_cast<long long>(residue),
                static_cast<long long>(residue + l1.offsets[static_cast<size_t>(col)]));
  }
  //! [by_hand]

  //! [trace]
  const std::vector<PositionTrace> t = TraceSequence(layout, std::vector<int64_t>{10, 20, 30, 40});
  std::printf("reference, position 3, layer 1: mixes %lld %lld %lld; rows of head 0: %lld %lld %lld\n",
              static_cast<long long>(t[3].mixes[0][0]), static_cast<long long>(t[3].mixes[0][1]),
              static_cast<long long>(t[3].mixes[0][2]), static_cast<long long>(t[3].rows[0][0]),
              static_cast<long long>(t[3].rows[0][8]), static_cast<long long>(t[3].rows[0][16]));
  //! [trace]

  //! [dead]
  // §HASH.2: a DEAD id blocks look-back across it; its effect ends max-1 = 3 positions later.
  const std::vector<int64_t> ids = {10, 20, kDead, 30, 40, 50, 60};
  const std::vector<PositionTrace> d = TraceSequence(layout, ids);
  for (size_t p = 0; p < ids.size(); ++p) {
    std::printf("pos %zu  id %3lld  blocked ", p, static_cast<long long>(ids[p]));
    for (uint8_t b : d[p].blocked) std::printf("%d", b);
    std::printf("  tokens");
    for (int64_t x : d[p].tokens) std::printf(" %lld", static_cast<long long>(x));
    std::printf("\n");
  }
  //! [dead]

  //! [chunks]
  // §HASH.5: any chunking gives the one-shot rows; §HASH.6 rollback forgets a draft.
  const std::vector<int64_t> seq = {5, 7, 9, 11, 13};
  const std::vector<int64_t> one_shot = HashSequence(layout, seq);
  HashState state(layout, /*rollback_capacity=*/2);
  std::vector<int64_t> rows;
  state.Append(std::vector<int64_t>{5, 7}, rows);           // prefill chunk
  state.Append(std::vector<int64_t>{9}, rows);              // decode step
  state.Append(std::vector<int64_t>{99, 98}, rows);         // a rejected speculative draft ...
  state.Rollback(2);                                         // ... rolled back
  rows.resize(rows.size() - 2 * 2 * 24);                     // drop the draft's rows
  state.Append(std::vector<int64_t>{11, 13}, rows);         // the accepted tokens
  std::printf("chunked + rollback == one-shot: %s (%zu row ids)\n", rows == one_shot ? "yes" : "NO", rows.size());
  //! [chunks]

  //! [handoff]
  // §HASH.9: prefill on one instance, export, import elsewhere, continue.
  HashState prefill(layout);
  std::vector<int64_t> r1;
  prefill.Append(std::vector<int64_t>{5, 7, 9}, r1);
  const HashHistory h = prefill.Export();
  PrintIds("exported history ids:", h.ids);
  std::printf("position %lld, binary form %zu bytes, fingerprint %.16s...\n", static_cast<long long>(h.position),
              EncodeHistoryBinary(h).size(), h.layout_fingerprint.c_str());
  HashState decode = HashState::Import(layout, h);
  decode.Append(std::vector<int64_t>{11, 13}, r1);
  std::printf("handed-off rows == one-shot: %s\n", r1 == one_shot ? "yes" : "NO");
  //! [handoff]
  return 0;
}
