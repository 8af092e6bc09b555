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
//
// The identity map is as long as V (random layouts draw V up to 2^31: 8 GiB of uint32_t), but ds4 reads only
// the entries of the ids it hashes. So the map is reserved, not filled: an anonymous mapping of V entries
// (MAP_NORESERVE) whose pages are written, identity, just before ds4 reads an id in them. ds4 still sees a
// map of V entries (its bounds check `tokens[i] >= vocab_size` is the port's), and memory grows with the
// pages the tests' ids touch. ds4_engram_layout_valid, which reads every entry, runs once on the first page.
#include <sys/mman.h>

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "conformance/plugins/abi_shims.h"
#include "conformance/plugins/plugin_inputs.h"
#include "base/error.h"

extern "C" {
#include "ds4_engram.h"
}

namespace {

// The identity map of V ids, written a page at a time as ids need it (shared by a hasher and its forks).
class IdentityMap {
 public:
  static constexpr size_t kPage = 1024;  // entries per page written (4 KiB)

  explicit IdentityMap(uint32_t v) : size_(v) {
    void* p = mmap(nullptr, Bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw engram::Error("cannot reserve an identity token map of " + std::to_string(v) + " ids");
    base_ = static_cast<uint32_t*>(p);
  }
  IdentityMap(const IdentityMap&) = delete;
  IdentityMap& operator=(const IdentityMap&) = delete;
  ~IdentityMap() { munmap(base_, Bytes()); }

  const uint32_t* data() const { return base_; }
  // Writes the entries of the page holding id (ids outside [0, V) are the port's to refuse: nothing to write).
  void Cover(int64_t id) {
    if (id < 0 || id >= static_cast<int64_t>(size_)) return;
    const size_t page = static_cast<size_t>(id) / kPage;
    if (!written_.insert(page).second) return;
    const size_t end = std::min<size_t>(size_, (page + 1) * kPage);
    for (size_t i = page * kPage; i < end; ++i) base_[i] = static_cast<uint32_t>(i);
  }

 private:
  size_t Bytes() const { return std::max<size_t>(size_, 1) * sizeof(uint32_t); }
  uint32_t* base_ = nullptr;
  size_t size_;
  std::unordered_set<size_t> written_;
};

}  // namespace

struct engram_hasher {
  ds4_engram_layout layout;
  std::shared_ptr<IdentityMap> token_map;  // ds4_engram_layout points into it
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
    h->token_map = std::make_shared<IdentityMap>(v);
    h->token_map->Cover(0);
    h->layout.token_map = h->token_map->data();
    // ds4_engram_layout_valid reads all vocab_size entries: it checks them on the first page (every entry of an
    // identity map is below V alike), then the map is V entries long as ds4 hashes
    h->layout.vocab_size = std::min<uint32_t>(v, IdentityMap::kPage);
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
    h->layout.vocab_size = v;
    ds4_engram_history_reset(&h->history);
    return h;
  } catch (const std::exception& e) {
    Refuse(e, err, err_len);
    return nullptr;
  }
}

engram_hasher* engram_hasher_fork(const engram_hasher* h) {
  // "copying this value also snapshots the complete hash state" (ds4_engram.h); the map is shared, read-only to ds4
  return new engram_hasher(*h);
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
      h->token_map->Cover(tokens[i]);
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
