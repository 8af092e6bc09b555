// The C-ABI plug-in (conformance/include/engram/conformance.h, spec §CONF.3) for antirez/ds4's Engram hash,
// ds4_engram.c, compiled from the user's checkout into the same library (conformance/ports/ds4/build.sh).
//
// What comes from where:
// - the layout (engram_layout_*) is the reference's (conformance/plugins/plugin_inputs.cc), an input: ds4
//   reads its multipliers, primes and table rows from the GGUF it loads, and has no code that computes them;
// - every row id comes from ds4_engram_hash: the plug-in fills a ds4_engram_layout with the layout's tables,
//   the identity token map of V ids (the hash suites give compressed ids; raw id c is compressed id c), the
//   compressed pad, and passes DEAD (-1) as mask 0 at that position;
// - ds4 keeps a sequence's state as the last max_ngram - 1 ids (ds4_engram_history); the plug-in counts the
//   position beside it. ds4 has no rollback and no import, so those entry points are not exported: the
//   runner reports their tests skipped (unsupported), never failed.
// ds4 hashes one fixed geometry (ds4_engram.h: 2 layers, max n-gram 4, 8 heads): another layout is refused
// at engram_hasher_create, naming the geometry.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "conformance/plugins/abi_shims.h"
#include "conformance/plugins/plugin_inputs.h"
#include "base/error.h"

extern "C" {
#include "ds4_engram.h"
}

struct engram_hasher {
  ds4_engram_layout layout;
  std::vector<uint32_t> token_map;  // identity, owned here (ds4_engram_layout points at it)
  ds4_engram_history history;
  int64_t position = 0;
};

namespace {

using engram::plugin::Refuse;

void CheckGeometry(const engram::Layout& l) {
  const size_t cols = static_cast<size_t>(l.columns());
  if (l.layers.size() != DS4_ENGRAM_LAYERS || l.max_ngram != DS4_ENGRAM_NGRAM || cols != DS4_ENGRAM_COLS) {
    throw engram::Error("ds4 hashes one fixed geometry (ds4_engram.h: " + std::to_string(DS4_ENGRAM_LAYERS) +
                        " layers, max n-gram " + std::to_string(DS4_ENGRAM_NGRAM) + ", " +
                        std::to_string(DS4_ENGRAM_COLS) + " columns); this layout has " +
                        std::to_string(l.layers.size()) + " layers, max n-gram " + std::to_string(l.max_ngram) +
                        ", " + std::to_string(cols) + " columns");
  }
}

}  // namespace

extern "C" {

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {ENGRAM_CONFORMANCE_ABI_VERSION, "antirez/ds4 ds4_engram.c",
                                                 "checkout", "hash_v41", "v4.1"};
  return &info;
}

engram_hasher* engram_hasher_create(const engram_layout* layout, size_t /*rollback_capacity*/, char* err,
                                    size_t err_len) {
  try {
    const engram::Layout& l = layout->layout;
    CheckGeometry(l);
    if (l.compressed_vocab_size > INT32_MAX) throw engram::Error("V beyond ds4's uint32 token map");
    // ds4_engram_layout keeps each prime and each layer's table size as uint32_t (ds4_engram.h): a layout
    // beyond them cannot be handed to the port, and cutting it to 32 bits would hash another layout.
    for (const engram::LayerLayout& ll : l.layers) {
      for (int c = 0; c < static_cast<int>(ll.offsets.size()); ++c) {
        if (ll.prime(c) > static_cast<int64_t>(UINT32_MAX)) {
          throw engram::Error("a prime of " + std::to_string(ll.prime(c)) + " beyond ds4's uint32_t primes (ds4_engram.h)");
        }
      }
      if (ll.num_embeddings > static_cast<int64_t>(UINT32_MAX)) {
        throw engram::Error("a table of " + std::to_string(ll.num_embeddings) + " rows beyond ds4's uint32_t rows (ds4_engram.h)");
      }
    }
    auto* h = new engram_hasher{};
    const auto v = static_cast<uint32_t>(l.compressed_vocab_size);
    h->token_map.resize(v);
    for (uint32_t i = 0; i < v; ++i) h->token_map[i] = i;
    h->layout.token_map = h->token_map.data();
    h->layout.vocab_size = v;
    h->layout.compressed_vocab_size = v;
    h->layout.pad_id = static_cast<uint32_t>(l.pad);
    for (int layer = 0; layer < DS4_ENGRAM_LAYERS; ++layer) {
      const engram::LayerLayout& ll = l.layers[static_cast<size_t>(layer)];
      h->layout.rows[layer] = static_cast<uint32_t>(ll.num_embeddings);
      for (int j = 0; j < DS4_ENGRAM_NGRAM; ++j) h->layout.multipliers[layer][j] = static_cast<uint64_t>(ll.multipliers[static_cast<size_t>(j)]);
      for (int c = 0; c < DS4_ENGRAM_COLS; ++c) h->layout.primes[layer][c] = static_cast<uint32_t>(ll.prime(c));
    }
    // ds4 validates a layout once at model load (ds4_engram.h)
    if (!ds4_engram_layout_valid(&h->layout)) {
      delete h;
      throw engram::Error("ds4_engram_layout_valid refused the layout");
    }
    ds4_engram_history_reset(&h->history);
    return h;
  } catch (const std::exception& e) {
    Refuse(e, err, err_len);
    return nullptr;
  }
}

engram_hasher* engram_hasher_fork(const engram_hasher* h) {
  auto* copy = new engram_hasher(*h);  // "copying this value also snapshots the complete hash state" (ds4_engram.h)
  copy->layout.token_map = copy->token_map.data();
  return copy;
}

void engram_hasher_destroy(engram_hasher* h) { delete h; }

int engram_hasher_append(engram_hasher* h, const int64_t* ids, size_t n, int64_t* rows, char* err, size_t err_len) {
  try {
    std::vector<int> tokens(n);
    std::vector<uint8_t> mask(n);
    for (size_t i = 0; i < n; ++i) {
      if (ids[i] < INT32_MIN || ids[i] > INT32_MAX) throw engram::Error("ids: beyond ds4's int tokens");
      mask[i] = ids[i] != DS4_ENGRAM_DEAD;
      tokens[i] = mask[i] ? static_cast<int>(ids[i]) : 0;  // DEAD goes through the mask
    }
    std::vector<uint32_t> out(n * DS4_ENGRAM_LAYERS * DS4_ENGRAM_COLS);
    ds4_engram_history next = h->history;
    if (!ds4_engram_hash(&h->layout, &next, tokens.data(), mask.data(), n, out.data())) {
      throw engram::Error("ds4_engram_hash returned false (a token outside [0, vocab_size) or a bad history)");
    }
    h->history = next;
    h->position += static_cast<int64_t>(n);
    for (size_t i = 0; i < out.size(); ++i) rows[i] = out[i];
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int64_t engram_hasher_position(const engram_hasher* h) { return h->position; }

size_t engram_hasher_history(const engram_hasher* h, int64_t* ids) {
  // ds4 keeps the tail newest first; the ABI wants the last min(position, M - 1) ids oldest first
  const size_t count = static_cast<size_t>(std::min<int64_t>(h->position, DS4_ENGRAM_NGRAM - 1));
  for (size_t i = 0; i < count; ++i) ids[i] = h->history.tail[count - 1 - i];
  return count;
}

}  // extern "C"
