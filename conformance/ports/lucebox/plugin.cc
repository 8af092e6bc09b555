// The C-ABI plug-in (conformance/include/engram/conformance.h, spec §CONF.3) for Luce-Org/lucebox's Engram
// addressing and element decode, server/src/deepseek4/deepseek4_engram.cpp (C++17), compiled from the user's
// checkout into the same library (conformance/ports/lucebox/build.sh).
//
// What comes from where:
// - the layout (engram_layout_*) is the reference's (conformance/plugins/plugin_inputs.cc), an input: lucebox
//   reads multipliers, primes and offsets out of the GGUF it loads (DeepSeek4EngramHasher::init) and has no
//   code that computes them;
// - every row id comes from DeepSeek4EngramHasher::hash: the plug-in calls the port's init_raw with the layout's
//   tables, the identity token map of V ids (the hash suites give compressed ids; raw id c is compressed id c)
//   and the compressed pad, and passes DEAD (-1) through the port's `dead` byte at that position. Any other id
//   goes to the port as it is (its compress() decides what an id outside the token map becomes);
// - one init_raw per layout: the port's hasher is immutable after init and hash() is const, so the hashers of
//   one layout share it (the runner asks one layout for several cases in a row, and the identity map of a V
//   near 2^31 is 8 GiB); each engram_hasher holds its own DeepSeek4EngramHistory, the port's per-sequence
//   state, and the position the plug-in counts beside it (the port keeps none);
// - fork copies the history ("Copying the struct snapshots the state", deepseek4_engram.h). The port's hasher
//   has no rollback and no import (its runtime's rewind is private to DeepSeek4EngramRuntime and needs the GGUF
//   tables), so those entry points are not exported: the runner reports their tests skipped, never failed;
// - engram_decode_element is the port's deepseek4_engram_decode_value (E4M3 x 2^(E8M0 - 127), rounded to bf16
//   in a float); the plug-in returns the float's upper 16 bits, which is all the port's rounding left;
// - engram_table_lookup is the port's DeepSeek4EngramTable::open and ::read (pread, sort and dedup, the NaN-code
//   check of decode_row, decode_value). The port reads only its own layout, rows of 256 E4M3 codes then 8 E8M0
//   scales (264 bytes) at an offset in a file: the plug-in writes the row bytes of the requested ids (from the
//   table the host opened or derived, an input like the layout) at their places in a sparse file of the table's
//   full size and lets the port open and read it. Other head_dims are refused (kDim is 256).
// Nothing of the port is changed; a refusal of the port (init_raw's false) is passed on with its message.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <climits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "conformance/plugins/abi_shims.h"
#include "conformance/plugins/plugin_inputs.h"
#include "base/error.h"

#include "deepseek4/deepseek4_engram.h"

using luce::common::DeepSeek4EngramHasher;
using luce::common::DeepSeek4EngramHistory;
using luce::common::DeepSeek4EngramTable;

struct engram_hasher {
  std::shared_ptr<const DeepSeek4EngramHasher> port;  // shared by every sequence of one layout
  DeepSeek4EngramHistory history;                     // the port's per-sequence state
  int64_t position = 0;  // the port keeps none: counted here
};

namespace {

using engram::Error;
using engram::plugin::Guard;
using engram::plugin::GuardHandle;

// The port's hasher for a layout: built by init_raw once and kept for the next cases of the same layout.
std::shared_ptr<const DeepSeek4EngramHasher> PortHasher(const engram_layout& in) {
  thread_local std::string last_key;
  thread_local std::shared_ptr<const DeepSeek4EngramHasher> last;
  if (last && in.fingerprint == last_key) return last;
  last.reset();  // the previous identity map can be GiBs: free it before building the next
  const engram::Layout& l = in.layout;
  const size_t cols = static_cast<size_t>(l.columns());
  if (l.compressed_vocab_size > INT32_MAX) throw Error("V " + std::to_string(l.compressed_vocab_size) +
                                                       " is beyond lucebox's int32_t token map");
  // The port takes raw tokenizer ids through its token map; the hash suites
  // give compressed ids, so this glue hands it an identity map of V entries
  // (4 bytes each). The random layouts draw V up to 2^31: an 8 GiB map for
  // one case. Above 2^26 ids (256 MiB) the glue refuses, a limit of this
  // adapter, not of the port (a real map has the tokenizer's ~130k entries).
  constexpr int64_t kMaxIdentityMap = int64_t{1} << 26;
  if (l.compressed_vocab_size > kMaxIdentityMap) {
    throw Error("V " + std::to_string(l.compressed_vocab_size) + ": the adapter's identity token map would take " +
                std::to_string(l.compressed_vocab_size * 4 >> 20) + " MiB; it refuses V above 2^26 (a limit of this "
                "glue, which hands the port compressed ids as raw ids, not of lucebox)");
  }
  if (l.pad > INT32_MAX) throw Error("pad beyond lucebox's int32_t pad_id");
  std::vector<int> layer_ids;
  std::vector<uint64_t> multipliers, primes, offsets, rows;
  for (const engram::LayerLayout& layer : l.layers) {
    if (layer.layer_id > INT_MAX) throw Error("layer id beyond lucebox's int layer ids");
    layer_ids.push_back(static_cast<int>(layer.layer_id));
    for (int64_t m : layer.multipliers) multipliers.push_back(static_cast<uint64_t>(m));
    for (size_t c = 0; c < cols; ++c) {
      primes.push_back(static_cast<uint64_t>(layer.prime(static_cast<int>(c))));
      offsets.push_back(static_cast<uint64_t>(layer.offsets[c]));
    }
    rows.push_back(static_cast<uint64_t>(layer.num_embeddings));
  }
  std::vector<int32_t> token_map(static_cast<size_t>(l.compressed_vocab_size));
  for (size_t i = 0; i < token_map.size(); ++i) token_map[i] = static_cast<int32_t>(i);
  auto port = std::make_shared<DeepSeek4EngramHasher>();
  std::string err;
  if (!port->init_raw(layer_ids, l.heads, l.max_ngram,
                      static_cast<int32_t>(l.pad), std::move(token_map), std::move(multipliers), std::move(primes),
                      std::move(offsets), std::move(rows), &err)) {
    throw Error("lucebox DeepSeek4EngramHasher::init_raw refused the layout: " + err);
  }
  if (!port->present()) throw Error("lucebox DeepSeek4EngramHasher::init_raw: no Engram layer");
  last_key = in.fingerprint;
  last = std::move(port);
  return last;
}

}  // namespace

extern "C" {

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {ENGRAM_CONFORMANCE_ABI_VERSION,
                                                 "Luce-Org/lucebox deepseek4_engram.cpp", "checkout",
                                                 "hash_v41,fp8_decode,table_lookup", "v4.1"};
  return &info;
}

engram_hasher* engram_hasher_create(const engram_layout* layout, size_t /*rollback_capacity*/, char* err,
                                    size_t err_len) {
  return GuardHandle(err, err_len, [&] {
    auto* h = new engram_hasher{};
    try {
      h->port = PortHasher(*layout);
    } catch (...) {
      delete h;
      throw;
    }
    return h;
  });
}

engram_hasher* engram_hasher_fork(const engram_hasher* h) { return new engram_hasher(*h); }

void engram_hasher_destroy(engram_hasher* h) { delete h; }

int engram_hasher_append(engram_hasher* h, const int64_t* ids, size_t n, int64_t* rows, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    std::vector<int32_t> tokens(n);
    std::vector<uint8_t> dead(n);
    for (size_t i = 0; i < n; ++i) {
      // the port's tokens are int32_t: an id that does not fit cannot be given to it
      if (ids[i] < INT32_MIN || ids[i] > INT32_MAX) {
        throw Error("ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                    ": beyond lucebox's int32_t tokens (the plug-in cannot pass it to the port)");
      }
      dead[i] = ids[i] == DeepSeek4EngramHistory::kDead;  // DEAD goes through the port's dead bytes
      tokens[i] = dead[i] ? 0 : static_cast<int32_t>(ids[i]);
    }
    const DeepSeek4EngramHasher& port = *h->port;
    std::vector<uint32_t> out(n * static_cast<size_t>(port.n_layers()) * static_cast<size_t>(port.cols()));
    port.hash(h->history, tokens.data(), dead.data(), n, out.data());
    for (size_t i = 0; i < out.size(); ++i) rows[i] = out[i];
    h->position += static_cast<int64_t>(n);
    return 0;
  });
}

int64_t engram_hasher_position(const engram_hasher* h) { return h->position; }

size_t engram_hasher_history(const engram_hasher* h, int64_t* ids) {
  // The port's tail, newest first (what compress() made of each id; DEAD is -1 as in the ABI); the ABI wants the
  // last min(position, max_ngram - 1) ids oldest first.
  const size_t count = static_cast<size_t>(std::min<int64_t>(h->position, h->port->max_ngram() - 1));
  for (size_t i = 0; i < count; ++i) ids[i] = h->history.tail[count - 1 - i];
  return count;
}

int engram_decode_element(uint8_t code, uint8_t scale, uint16_t* bf16_bits, char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const float v = luce::common::deepseek4_engram_decode_value(code, scale);
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    *bf16_bits = static_cast<uint16_t>(bits >> 16);  // the port rounded to bf16: the low half is zero
    return 0;
  });
}

int engram_table_lookup(const engram_table* table, const int64_t* row_ids, size_t n, uint16_t* out, size_t out_len,
                        char* err, size_t err_len) {
  return Guard(err, err_len, [&] {
    const engram::RowSource& source = *table->source;
    if (source.head_dim() != DeepSeek4EngramTable::kDim) {
      throw Error("head_dim " + std::to_string(source.head_dim()) + ": lucebox reads rows of " +
                  std::to_string(DeepSeek4EngramTable::kDim) + " values only (DeepSeek4EngramTable::kDim)");
    }
    engram::plugin::CheckCapacity(out_len, n * DeepSeek4EngramTable::kDim, "out");
    std::vector<uint32_t> ids(n);
    for (size_t i = 0; i < n; ++i) {  // the port's row ids are uint32_t
      if (row_ids[i] < 0 || row_ids[i] > UINT32_MAX) {
        throw Error("row_ids[" + std::to_string(i) + "] = " + std::to_string(row_ids[i]) +
                    ": beyond lucebox's uint32_t row ids (the plug-in cannot pass it to the port)");
      }
      ids[i] = static_cast<uint32_t>(row_ids[i]);
    }
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/lucebox_table_XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0) throw Error("lucebox plug-in: mkstemp " + path + ": " + std::strerror(errno));
    struct Cleanup {
      int fd;
      std::string path;
      ~Cleanup() { ::close(fd); ::unlink(path.c_str()); }
    } cleanup{fd, path};
    const auto row_bytes = static_cast<uint64_t>(DeepSeek4EngramTable::kRowBytes);
    const auto rows = static_cast<uint64_t>(source.rows());
    if (ftruncate(fd, static_cast<off_t>(rows * row_bytes)) != 0) {
      throw Error("lucebox plug-in: ftruncate " + path + ": " + std::strerror(errno));
    }
    for (uint32_t id : ids) {
      if (id >= rows) continue;  // not in the table: the port's read decides
      const engram::RowBytes row = source.Row(id);
      std::vector<uint8_t> packed(row.codes);
      packed.insert(packed.end(), row.scales.begin(), row.scales.end());
      if (pwrite(fd, packed.data(), packed.size(), static_cast<off_t>(id * row_bytes)) !=
          static_cast<ssize_t>(packed.size())) {
        throw Error("lucebox plug-in: pwrite " + path + ": " + std::strerror(errno));
      }
    }
    DeepSeek4EngramTable port;
    std::string why;
    if (!port.open(path, 0, rows, &why)) throw Error("lucebox DeepSeek4EngramTable::open refused: " + why);
    std::vector<float> values(n * DeepSeek4EngramTable::kDim);
    errno = 0;
    if (!port.read(ids.data(), n, values.data())) {
      throw Error(std::string("lucebox DeepSeek4EngramTable::read returned false: ") + std::strerror(errno) +
                  (errno == EDOM ? " (a NaN code or scale 0xFF, deepseek4_engram.cpp decode_row)" : "") +
                  (errno == EINVAL ? " (a row id outside the table)" : ""));
    }
    for (size_t i = 0; i < values.size(); ++i) {
      uint32_t bits = 0;
      std::memcpy(&bits, &values[i], sizeof bits);
      out[i] = static_cast<uint16_t>(bits >> 16);
    }
    return 0;
  });
}

}  // extern "C"
