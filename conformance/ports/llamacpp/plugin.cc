// The C-ABI plug-in (conformance/include/engram/conformance.h, spec §CONF.3) for the Engram hash of llama.cpp
// pull request 19654, src/llama-engram.cpp (engram_hash_mapping: the demo-v1 hash on the host), compiled from
// the user's checkout into the same library (conformance/ports/llamacpp/build.sh). pestopoppa/llama.cpp's v4.1
// port, src/llama-dsv41-engram.cpp, is a plug-in of its own: conformance/ports/pestopoppa.
//
// What comes from where:
// - the layout (engram_layout_*) is the reference's (conformance/plugins/plugin_inputs.cc), an input: the port
//   takes multipliers and head vocabulary sizes (primes) from the GGUF (engram_hash_params.layer_multipliers,
//   layer_vocab_sizes) and computes only the MHE offsets, in engram_hash_mapping::init;
// - every row id comes from engram_hash_mapping::compute_hash, called per layer on the whole sequence (the
//   port hashes whole sequences and keeps no state): the plug-in keeps the sequence's ids and, for each append,
//   hashes the sequence so far and returns the rows of the new ids. Rollback and import are not exported (the
//   port has neither): the runner reports their tests skipped;
// - the token map: the test's ids are compressed ids, so the plug-in hands the port a token map of the ids the
//   sequence holds and raw ids indexing it: the k-th distinct non-negative id c of the sequence is raw id k,
//   compressed_lookup[k] = c (a map of as many entries as distinct ids, not an identity of the largest id's
//   length: an id near 2^31 would need 8 GiB). Negative ids are handed as they are (the port hashes them as the
//   pad, src/llama-engram.cpp:71). The port reads compressed_lookup[tid] for tid >= 0 with no bounds check
//   against V, so an id >= V meets its own entry (the port accepts it) rather than undefined behaviour;
// - the port's API is int32 (input_ids, out_hash): an id beyond int32 cannot be handed to it and is refused
//   here, naming that limit; a row id beyond int32 is what the port's int32 output holds.
#include <climits>
#include <cstdint>
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "conformance/plugins/abi_shims.h"
#include "conformance/plugins/plugin_inputs.h"
#include "base/error.h"

#include "llama-engram.h"

struct engram_hasher {
  std::shared_ptr<engram_hash_params> params;  // the layout's tables, shared by forks
  std::vector<int64_t> ids;                    // the sequence so far (the port hashes whole sequences)
};

namespace {

using engram::Error;
using engram::plugin::Refuse;

std::shared_ptr<engram_hash_params> Params(const engram::Layout& l) {
  if (l.profile != engram::Profile::kDemoV1) throw Error("llama.cpp's engram_hash_mapping implements demo-v1 only");
  if (l.max_ngram < 2 || l.heads < 1) {
    throw Error("engram_hash_mapping::init asserts max_ngram_size >= 2 and n_head_per_ngram >= 1 (max n-gram " +
                std::to_string(l.max_ngram) + ", " + std::to_string(l.heads) + " heads)");
  }
  if (l.pad < INT32_MIN || l.pad > INT32_MAX) throw Error("the pad is beyond the port's int32_t pad_id");
  auto p = std::make_shared<engram_hash_params>();
  p->max_ngram_size = static_cast<uint32_t>(l.max_ngram);
  p->n_head_per_ngram = static_cast<uint32_t>(l.heads);
  p->n_embed_per_ngram = static_cast<uint32_t>(l.heads);
  p->pad_id = static_cast<int32_t>(l.pad);
  p->engram_vocab_size.assign(static_cast<size_t>(l.orders()), 0);  // init asserts its length only
  for (const engram::LayerLayout& ll : l.layers) {
    if (ll.layer_id < 0 || ll.layer_id > INT32_MAX) throw Error("a layer id beyond the port's int32_t layer ids");
    p->layer_ids.push_back(static_cast<uint32_t>(ll.layer_id));
    for (int64_t m : ll.multipliers) p->layer_multipliers.push_back(static_cast<uint64_t>(m));
    for (int c = 0; c < l.columns(); ++c) p->layer_vocab_sizes.push_back(static_cast<uint64_t>(ll.prime(c)));
  }
  return p;
}

}  // namespace

extern "C" {

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {ENGRAM_CONFORMANCE_ABI_VERSION,
                                                 "llama.cpp src/llama-engram.cpp engram_hash_mapping", "checkout",
                                                 "hash_demo", "demo-v1"};
  return &info;
}

engram_hasher* engram_hasher_create(const engram_layout* layout, size_t /*rollback_capacity*/, char* err,
                                    size_t err_len) {
  try {
    auto* h = new engram_hasher{};
    h->params = Params(layout->layout);
    return h;
  } catch (const std::exception& e) {
    Refuse(e, err, err_len);
    return nullptr;
  }
}

engram_hasher* engram_hasher_fork(const engram_hasher* h) { return new engram_hasher(*h); }

void engram_hasher_destroy(engram_hasher* h) { delete h; }

int engram_hasher_append(engram_hasher* h, const int64_t* ids, size_t n, int64_t* rows, char* err, size_t err_len) {
  try {
    std::vector<int64_t> seq = h->ids;
    seq.insert(seq.end(), ids, ids + n);
    if (seq.size() > static_cast<size_t>(INT32_MAX)) throw Error("more tokens than the port's int32_t n_tokens");
    std::vector<int32_t> input(seq.size());
    engram_hash_params p = *h->params;
    std::vector<int64_t> distinct;
    for (int64_t id : seq) {
      if (id < INT32_MIN || id > INT32_MAX) {
        throw Error("id " + std::to_string(id) + " is beyond compute_hash's int32_t input_ids");
      }
      if (id >= 0) distinct.push_back(id);
    }
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    p.compressed_lookup.assign(distinct.begin(), distinct.end());  // raw id k -> compressed id distinct[k]
    for (size_t i = 0; i < seq.size(); ++i) {
      input[i] = seq[i] < 0 ? static_cast<int32_t>(seq[i])
                            : static_cast<int32_t>(std::lower_bound(distinct.begin(), distinct.end(), seq[i]) -
                                                   distinct.begin());
    }
    engram_hash_mapping port;
    port.init(p);
    const size_t cols = static_cast<size_t>(port.n_hash_heads());
    const size_t layers = p.layer_ids.size();
    std::vector<int32_t> out(seq.size() * cols);
    for (size_t li = 0; li < layers; ++li) {
      port.compute_hash(input.data(), static_cast<int32_t>(seq.size()), static_cast<int32_t>(p.layer_ids[li]),
                        out.data());
      for (size_t t = 0; t < n; ++t) {
        for (size_t c = 0; c < cols; ++c) rows[(t * layers + li) * cols + c] = out[(h->ids.size() + t) * cols + c];
      }
    }
    h->ids = std::move(seq);
    return 0;
  } catch (const std::exception& e) {
    return Refuse(e, err, err_len);
  }
}

int64_t engram_hasher_position(const engram_hasher* h) { return static_cast<int64_t>(h->ids.size()); }

size_t engram_hasher_history(const engram_hasher* h, int64_t* ids) {
  const size_t keep = std::min(h->ids.size(), static_cast<size_t>(h->params->max_ngram_size - 1));
  std::copy(h->ids.end() - static_cast<std::ptrdiff_t>(keep), h->ids.end(), ids);
  return keep;
}

}  // extern "C"
