// Snippet for docs/layout.md (spec §LAY): primes, offsets and table rows of
// the V4.1 layout, and what the consistency check catches.
#include <cstdio>
#include <set>
#include <string>

#include "reference/config.h"
#include "base/error.h"
#include "reference/layout.h"

using namespace engram;

int main() {
  //! [search]
  // §LAY.2 by hand for the first three primes of layer 1, order 2: start at base - 1.
  std::set<uint64_t> seen;
  uint64_t start = 16000000 - 1;
  for (int head = 0; head < 3; ++head) {
    uint64_t p = FindNextPrime(start, seen);
    std::printf("head %d: next prime after %llu not yet used = %llu\n", head, static_cast<unsigned long long>(start),
                static_cast<unsigned long long>(p));
    seen.insert(p);
    start = p;
  }
  //! [search]

  //! [layout]
  const Layout layout = BuildLayout(V41FlashConfig(), /*V=*/99092, /*compressed pad=*/2);
  //! [layout]
  for (const LayerLayout& l : layout.layers) {
    std::printf("\nlayer %lld: %d columns\n", static_cast<long long>(l.layer_id), layout.columns());
    std::printf("  col  n  head      prime      offset\n");
    for (int c = 0; c < layout.columns(); ++c) {
      std::printf("  %3d  %d  %4d  %9lld  %10lld\n", c, c / layout.heads + 2, c % layout.heads,
                  static_cast<long long>(l.prime(c)), static_cast<long long>(l.offsets[static_cast<size_t>(c)]));
    }
    std::printf("  num_embeddings = %lld\n", static_cast<long long>(l.num_embeddings));
  }
  std::printf("\nfingerprint (§LAY.5): %s\n", LayoutFingerprint(layout).c_str());

  //! [check]
  // §LAY.4: a config whose engram_num_embeddings disagree with the prime sums is refused.
  EngramConfig wrong = V41FlashConfig();
  wrong.num_embeddings[1] += 1;
  try {
    BuildLayout(wrong, 99092, 2);
  } catch (const Error& e) {
    std::printf("refused: %s\n", e.what());
  }
  //! [check]
  return 0;
}
