// The C-ABI plug-in (conformance/include/engram/conformance.h, spec §CONF.3) for pestopoppa/llama.cpp's
// DeepSeek-V4.1 Engram host side, src/llama-dsv41-engram.{h,cpp}, compiled unchanged from the user's checkout
// into the same library (conformance/ports/pestopoppa/build.sh).
//
// The port's file includes llama.cpp's internal headers; shim/ declares only the names it uses (the id types,
// the ubatch fields, the graph-input interface, the loader's getters, GGML_ASSERT, ggml_backend_tensor_set),
// and this file defines what the file calls outside itself. What runs is the port's own code:
// - the layout goes in as a GGUF holds it: llama_dsv41_engram_spec::load reads deepseek41.engram.{layer_ids,
//   rows, token_map, primes, multipliers, pad_id, compressed_vocab_size} through llama_model_loader (whose
//   getters here answer from the reference's layout, an input: the port computes none of it), derives max
//   n-gram, heads and offsets, and validate() checks them; a throw is a refusal with the port's message;
// - every row id comes from llm_graph_input_dsv41_engram::set_input on a llama_ubatch: it commits the ids
//   through compress() into llama_dsv41_engram_state, gathers each position's look-back from it and calls
//   hash(); its two ggml_backend_tensor_set calls land in this file's ggml_tensor (the I32 [n_col, n_tokens]
//   plane per layer, and the gate mask);
// - the token map: the tests give compressed ids, so the k-th distinct id c in [0, V) is raw id k with
//   token_map[k] = c (an identity of V entries could take 8 GiB); an id outside [0, V) is handed as itself,
//   outside the map, as an identity map would have it, and compress() turns it into DEAD;
// - TokenLookupTest (§HASH.1): the map is the reference's build of the tokenizer (the converter's work: the port
//   reads engram.token_map from the GGUF), every raw id goes through the port's compress(); the port takes no mask
//   (DEAD comes only from an id outside the map), so a mask is refused;
// - a hasher is one sequence (seq_id 0); its rollback is the port's seq_rm of the removed positions, its
//   import writes the §HASH.9 history into the port's cache through state_read (the port has no hand-off
//   entry: the plug-in checks the history's form, fingerprint, count and position, as the ABI defines it);
// - a packed call (§HASH.10-§HASH.11) is one ubatch: request r is a sequence of its own; drafts that form a
//   tree get one sequence per leaf, each token listing the sequences of the leaves below it (the port commits a
//   token to all of them and looks back in the first), the request's history copied by the port's seq_cp.
// The port's state keeps 4 bytes per position from 0; the plug-in hands it positions less a base (the lowest
// position a call touches, less max n-gram - 1, floored at 0), which leaves every row as it is: the port reads
// a position only as pos - j and pos >= j for j < max n-gram, and every rebased position is then >= max
// n-gram - 1 or not rebased at all. Positions and ids beyond int32 are refused: llama_pos and llama_token are
// int32_t, and so is the port's cache.
#include <climits>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "conformance/plugins/abi_shims.h"
#include "conformance/plugins/plugin_inputs.h"
#include "base/error.h"
#include "reference/token_map.h"

#include "llama-dsv41-engram.h"
#include "llama-io.h"
#include "llama-model-loader.h"

// What set_input writes through ggml_backend_tensor_set: the tensor's bytes.
struct ggml_tensor {
  std::vector<uint8_t> data;
};

extern "C" void ggml_backend_tensor_set(ggml_tensor* tensor, const void* data, size_t offset, size_t size) {
  if (tensor->data.size() < offset + size) tensor->data.resize(offset + size);
  if (size > 0) std::memcpy(tensor->data.data() + offset, data, size);
}

extern "C" [[noreturn]] void ggml_abort(const char* file, int line, const char* fmt, ...) {
  char what[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(what, sizeof what, fmt, args);
  va_end(args);
  const char* base = std::strrchr(file, '/');
  throw engram::Error(std::string(what) + " at " + (base != nullptr ? base + 1 : file) + ":" + std::to_string(line));
}

std::string format(const char* fmt, ...) {
  va_list args, again;
  va_start(args, fmt);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string s(static_cast<size_t>(std::max(n, 0)) + 1, '\0');
  std::vsnprintf(s.data(), s.size(), fmt, again);
  va_end(again);
  s.resize(static_cast<size_t>(std::max(n, 0)));
  return s;
}

// The deepseek41.engram.* keys of one layout, as the GGUF types them (arrays of u32 or u64, u32 scalars).
struct pesto_gguf {
  std::map<llm_kv, std::vector<uint64_t>> arrays;
  std::map<llm_kv, uint64_t> scalars;
};

template <typename T>
bool llama_model_loader::get_arr(enum llm_kv kid, T& result, bool required) {
  const auto it = kv.arrays.find(kid);
  if (it == kv.arrays.end()) {
    if (required) throw engram::Error("GGUF key " + std::to_string(kid) + " not found");
    return false;
  }
  result.assign(it->second.begin(), it->second.end());
  return true;
}

template <typename T>
bool llama_model_loader::get_key(enum llm_kv kid, T& result, bool required) {
  const auto it = kv.scalars.find(kid);
  if (it == kv.scalars.end()) {
    if (required) throw engram::Error("GGUF key " + std::to_string(kid) + " not found");
    return false;
  }
  result = static_cast<T>(it->second);
  return true;
}

// the types load() asks for (llama-dsv41-engram.cpp: engram_layer_ids, engram_rows, token_map, primes: u32;
// multipliers: u64; pad_id, compressed_vocab_size: u32)
template bool llama_model_loader::get_arr<std::vector<uint32_t>>(enum llm_kv, std::vector<uint32_t>&, bool);
template bool llama_model_loader::get_arr<std::vector<uint64_t>>(enum llm_kv, std::vector<uint64_t>&, bool);
template bool llama_model_loader::get_key<uint32_t>(enum llm_kv, uint32_t&, bool);

namespace {

using engram::Error;
using engram::plugin::Refuse;

constexpr int64_t kMaxSpan = int64_t{1} << 26;  // positions one sequence may span past its base (4 bytes each)

// A session stream over bytes the plug-in wrote (state_read's input).
class ByteReader : public llama_io_read_i {
 public:
  explicit ByteReader(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  void read(void* dst, size_t size) override {
    if (at_ + size > bytes_.size()) throw Error("state_read read past the stream");
    std::memcpy(dst, bytes_.data() + at_, size);
    at_ += size;
  }

 private:
  std::vector<uint8_t> bytes_;
  size_t at_ = 0;
};

// One layout as the port holds it, and the raw ids handed to it.
struct Model {
  llama_dsv41_engram_spec spec;
  std::unordered_map<int64_t, llama_token> raw_of;  // compressed id -> its index in spec.token_map
  int64_t vocab = 0;
  size_t layers = 0, columns = 0, window = 0;
  std::string fingerprint;

  llama_token Raw(int64_t id) {
    if (id < INT32_MIN || id > INT32_MAX) {
      throw Error("id " + std::to_string(id) + " is beyond llama_token, int32_t (compress, llama-dsv41-engram.h:60)");
    }
    if (id < 0 || id >= vocab) return static_cast<llama_token>(id);  // outside the map: compress() gives DEAD
    const auto [it, fresh] = raw_of.emplace(id, static_cast<llama_token>(spec.token_map.size()));
    if (fresh) spec.token_map.push_back(static_cast<uint32_t>(id));
    return it->second;
  }
};

// A value of a u32 GGUF key; `where` names the port's uint32_t that holds it.
uint64_t U32(int64_t v, const std::string& what, const char* where) {
  if (v < 0 || v > static_cast<int64_t>(UINT32_MAX)) {
    throw Error(what + " " + std::to_string(v) + " does not fit the port's uint32_t (" + where + ")");
  }
  return static_cast<uint64_t>(v);
}

std::shared_ptr<Model> LoadModel(const engram_layout* layout) {
  const engram::Layout& l = layout->layout;
  pesto_gguf kv;
  std::vector<uint64_t>& ids = kv.arrays[LLM_KV_DSV41_ENGRAM_LAYERS];
  std::vector<uint64_t>& rows = kv.arrays[LLM_KV_DSV41_ENGRAM_ROWS];
  std::vector<uint64_t>& primes = kv.arrays[LLM_KV_DSV41_ENGRAM_PRIMES];
  std::vector<uint64_t>& multipliers = kv.arrays[LLM_KV_DSV41_ENGRAM_MULTIPLIERS];
  kv.arrays[LLM_KV_DSV41_ENGRAM_TOKEN_MAP] = {};  // filled as ids arrive (Model::Raw)
  for (const engram::LayerLayout& ll : l.layers) {
    ids.push_back(U32(ll.layer_id, "engram.layer_ids entry", "llama-dsv41-engram.h:47"));
    rows.push_back(U32(ll.num_embeddings, "engram.rows entry", "llama-dsv41-engram.cpp:46"));
    for (int c = 0; c < l.columns(); ++c) {
      primes.push_back(U32(ll.prime(c), "engram.primes entry", "llama-dsv41-engram.h:51"));
    }
    for (int64_t m : ll.multipliers) multipliers.push_back(static_cast<uint64_t>(m));
  }
  kv.scalars[LLM_KV_DSV41_ENGRAM_PAD_ID] = U32(l.pad, "engram.pad_id", "llama-dsv41-engram.h:44");
  kv.scalars[LLM_KV_DSV41_ENGRAM_COMPRESSED_VOCAB_SIZE] = U32(l.compressed_vocab_size, "engram.compressed_vocab_size",
                                                              "llama-dsv41-engram.h:45");
  auto m = std::make_shared<Model>();
  llama_model_loader ml(kv);
  try {
    if (!m->spec.load(ml, 0)) throw Error("load() found no engram layers");
  } catch (const std::exception& e) {
    throw Error(std::string("llama_dsv41_engram_spec::load refused the layout: ") + e.what());
  }
  m->vocab = l.compressed_vocab_size;
  m->layers = m->spec.n_engram;
  m->columns = m->spec.n_col;
  m->window = m->spec.n_ngram - 1;
  m->fingerprint = layout->fingerprint;
  return m;
}

// One ubatch through the port's set_input: rows[token][layer][column].
std::vector<int64_t> SetInput(Model& m, llama_dsv41_engram_state& state, std::vector<llama_token>& tokens,
                              std::vector<llama_pos>& pos, std::vector<std::vector<llama_seq_id>>& seqs) {
  const size_t n = tokens.size();
  if (n == 0) return {};
  std::vector<int32_t> n_seq(n);
  std::vector<llama_seq_id*> seq_ptr(n);
  for (size_t i = 0; i < n; ++i) {
    n_seq[i] = static_cast<int32_t>(seqs[i].size());
    seq_ptr[i] = seqs[i].data();
  }
  llama_ubatch ub;
  ub.n_tokens = static_cast<uint32_t>(n);
  ub.token = tokens.data();
  ub.pos = pos.data();
  ub.n_seq_id = n_seq.data();
  ub.seq_id = seq_ptr.data();
  std::vector<ggml_tensor> planes(m.layers);
  ggml_tensor mask;
  llm_graph_input_dsv41_engram input(&m.spec, &state, static_cast<uint32_t>(n));
  for (ggml_tensor& t : planes) input.ids.push_back(&t);
  input.gate_mask = &mask;
  input.set_input(&ub);
  std::vector<int64_t> rows(n * m.layers * m.columns);
  for (size_t e = 0; e < m.layers; ++e) {
    if (planes[e].data.size() != n * m.columns * sizeof(int32_t)) throw Error("set_input wrote no ids for a layer");
    for (size_t t = 0; t < n; ++t) {
      for (size_t c = 0; c < m.columns; ++c) {
        int32_t v;
        std::memcpy(&v, planes[e].data.data() + (t * m.columns + c) * sizeof(int32_t), sizeof v);
        rows[(t * m.layers + e) * m.columns + c] = v;
      }
    }
  }
  return rows;
}

llama_pos Pos(int64_t absolute, int64_t base, const std::string& what) {
  if (absolute < 0 || absolute > INT32_MAX) {
    throw Error(what + ": position " + std::to_string(absolute) +
                " is beyond llama_pos, int32_t (the state's set/get, llama-dsv41-engram.h:88-89)");
  }
  if (absolute - base > kMaxSpan) {
    throw Error(what + ": position " + std::to_string(absolute) + " lies more than 2^26 past the sequence's first (" +
                std::to_string(base) + "): the port's cache would take 4 bytes for each one in between");
  }
  return static_cast<llama_pos>(absolute - base);
}

// The lowest position a sequence's base may take: min_touched less max n-gram - 1, floored at 0.
int64_t Base(int64_t min_touched, size_t window) {
  return std::max<int64_t>(0, min_touched - static_cast<int64_t>(window));
}

// A §HASH.9 history (position, count ids) written into sequence `seq` of the port's cache through state_read:
// DEAD from the base up to the history, then its ids.
void ImportHistory(llama_dsv41_engram_state& state, llama_seq_id seq, int64_t position, const int64_t* ids,
                   size_t count, int64_t base, size_t window, const std::string& what) {
  if (position < 0) throw Error(what + ": negative position " + std::to_string(position));
  if (count != static_cast<size_t>(std::min<int64_t>(position, static_cast<int64_t>(window)))) {
    throw Error(what + ": " + std::to_string(count) + " ids for position " + std::to_string(position) +
                " (min(position, max_ngram - 1) = " +
                std::to_string(std::min<int64_t>(position, static_cast<int64_t>(window))) + ")");
  }
  if (position > int64_t{INT32_MAX} + 1) {
    throw Error(what + ": position " + std::to_string(position) +
                " is beyond llama_pos, int32_t (the state's set/get, llama-dsv41-engram.h:88-89)");
  }
  const auto n = static_cast<uint32_t>(position - base);
  std::vector<int32_t> cache(n, llama_dsv41_engram_spec::DEAD);
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] < INT32_MIN || ids[i] > INT32_MAX) {
      throw Error(what + ": id " + std::to_string(ids[i]) +
                  " is beyond the port's int32_t cache (llama-dsv41-engram.h:108)");
    }
    cache[n - count + i] = static_cast<int32_t>(ids[i]);
  }
  std::vector<uint8_t> bytes(sizeof n + n * sizeof(int32_t));
  std::memcpy(bytes.data(), &n, sizeof n);
  if (n > 0) std::memcpy(bytes.data() + sizeof n, cache.data(), n * sizeof(int32_t));
  ByteReader reader(std::move(bytes));
  state.state_read(reader, seq);
}

}  // namespace

struct engram_hasher {
  std::shared_ptr<Model> model;  // shared by forks (the token map only grows)
  llama_dsv41_engram_state state{1};
  int64_t position = 0;
  int64_t base = 0;  // the port's position 0 is this absolute position
};

extern "C" {

const engram_conformance_info_t* engram_conformance_info(void) {
  static const engram_conformance_info_t info = {ENGRAM_CONFORMANCE_ABI_VERSION,
                                                 "pestopoppa/llama.cpp src/llama-dsv41-engram.cpp", "checkout",
                                                 "hash_v41,hash_state,accumulated,serving_v41,token_map", "v4.1"};
  return &info;
}

engram_hasher* engram_hasher_create(const engram_layout* layout, size_t /*rollback_capacity*/, char* err,
                                    size_t err_len) {
  return engram::plugin::GuardHandle(err, err_len, [&] {
    if (layout->layout.profile != engram::Profile::kV41) throw Error("the port hashes v4.1 only");
    auto* h = new engram_hasher{};
    h->model = LoadModel(layout);
    return h;
  });
}

engram_hasher* engram_hasher_fork(const engram_hasher* h) { return new engram_hasher(*h); }

void engram_hasher_destroy(engram_hasher* h) { delete h; }

int engram_hasher_append(engram_hasher* h, const int64_t* ids, size_t n, int64_t* rows, char* err, size_t err_len) {
  return engram::plugin::Guard(err, err_len, [&] {
    Model& m = *h->model;
    std::vector<llama_token> tokens(n);
    std::vector<llama_pos> pos(n);
    std::vector<std::vector<llama_seq_id>> seqs(n, std::vector<llama_seq_id>{0});
    for (size_t i = 0; i < n; ++i) {
      tokens[i] = m.Raw(ids[i]);
      pos[i] = Pos(h->position + static_cast<int64_t>(i), h->base, "ids[" + std::to_string(i) + "]");
    }
    const std::vector<int64_t> out = SetInput(m, h->state, tokens, pos, seqs);
    std::copy(out.begin(), out.end(), rows);
    h->position += static_cast<int64_t>(n);
    return 0;
  });
}

int engram_hasher_rollback(engram_hasher* h, size_t k, char* err, size_t err_len) {
  return engram::plugin::Guard(err, err_len, [&] {
    if (k > static_cast<uint64_t>(h->position)) {
      throw Error("rollback by " + std::to_string(k) + " past position " + std::to_string(h->position));
    }
    const int64_t to = h->position - static_cast<int64_t>(k);
    if (h->base > 0 && to - h->base < static_cast<int64_t>(h->model->window)) {
      throw Error("rollback to " + std::to_string(to) + " below the imported history's base (" +
                  std::to_string(h->base) + " + max_ngram - 1): the plug-in's rebased positions would no longer "
                  "hash as the port's absolute ones");
    }
    h->position = to;
    h->state.seq_rm(0, static_cast<llama_pos>(to - h->base), -1);
    return 0;
  });
}

int64_t engram_hasher_position(const engram_hasher* h) { return h->position; }

size_t engram_hasher_history(const engram_hasher* h, int64_t* ids) {
  const auto count = static_cast<size_t>(std::min<int64_t>(h->position, static_cast<int64_t>(h->model->window)));
  for (size_t i = 0; i < count; ++i) {
    ids[i] = h->state.get(0, static_cast<llama_pos>(h->position - h->base - static_cast<int64_t>(count - i)));
  }
  return count;
}

int engram_hasher_import(engram_hasher* h, int64_t position, const int64_t* ids, size_t count,
                         const char* layout_fingerprint, char* err, size_t err_len) {
  return engram::plugin::Guard(err, err_len, [&] {
    if (layout_fingerprint == nullptr || h->model->fingerprint != layout_fingerprint) {
      throw Error("history from another layout (fingerprint " +
                  std::string(layout_fingerprint != nullptr ? layout_fingerprint : "NULL") + ")");
    }
    const int64_t base = Base(position - static_cast<int64_t>(count), h->model->window);
    llama_dsv41_engram_state state(1);
    ImportHistory(state, 0, position, ids, count, base, h->model->window, "history");
    h->state = std::move(state);
    h->position = position;
    h->base = base;
    return 0;
  });
}

}  // extern "C"

namespace {

// §HASH.10-§HASH.11 The shape of a packed call, as an engine checks it before building a ubatch: boundaries,
// parents and accepted paths (the port's file takes a ubatch, never a packed call).
struct Request {
  size_t begin = 0, end = 0;
  std::vector<int64_t> parent;    // per slot of the request: -1 or an earlier slot (its index in the request)
  std::vector<int64_t> accepted;  // the committed path
  int64_t base = 0;
  llama_seq_id seq = 0;                       // the request's sequence (its history)
  std::vector<std::vector<llama_seq_id>> of;  // per slot: the sequences it is committed to, the first looked in
};

std::vector<Request> ReadShape(const engram_packed_call_t* call) {
  const size_t b = call->requests;
  if (call->cu_seqlens[0] != 0) throw Error("cu_seqlens[0] = " + std::to_string(call->cu_seqlens[0]) + ", not 0");
  std::vector<Request> req(b);
  for (size_t r = 0; r < b; ++r) {
    const int64_t lo = call->cu_seqlens[r], hi = call->cu_seqlens[r + 1];
    if (hi < lo || hi > static_cast<int64_t>(call->slots)) {
      throw Error("cu_seqlens[" + std::to_string(r + 1) + "] = " + std::to_string(hi) +
                  ": below the one before it or past " + std::to_string(call->slots) + " slots");
    }
    Request& q = req[r];
    q.begin = static_cast<size_t>(lo);
    q.end = static_cast<size_t>(hi);
    const size_t n = q.end - q.begin;
    for (size_t i = 0; i < n; ++i) {
      const int64_t p = call->parents != nullptr ? call->parents[q.begin + i] : static_cast<int64_t>(i) - 1;
      if (p < -1 || p >= static_cast<int64_t>(i)) {
        throw Error("parents[" + std::to_string(q.begin + i) + "] = " + std::to_string(p) +
                    ": neither -1 nor an earlier draft of request " + std::to_string(r));
      }
      q.parent.push_back(p);
    }
    if (call->parents == nullptr) {
      for (size_t i = 0; i < n; ++i) q.accepted.push_back(static_cast<int64_t>(i));
      continue;
    }
    q.accepted.assign(call->accepted + call->accepted_offsets[r], call->accepted + call->accepted_offsets[r + 1]);
    int64_t prev = -1;
    for (int64_t a : q.accepted) {
      if (a < 0 || a >= static_cast<int64_t>(n) || q.parent[static_cast<size_t>(a)] != prev) {
        throw Error("accepted path of request " + std::to_string(r) + ": draft " + std::to_string(a) +
                    " does not continue the path");
      }
      prev = a;
    }
  }
  return req;
}

// Sequence ids: the request's own, and for a tree of drafts one per leaf, every slot listing its leaves'.
llama_seq_id AssignSequences(std::vector<Request>& req) {
  llama_seq_id next = 0;
  for (Request& q : req) {
    q.seq = next++;
    const size_t n = q.end - q.begin;
    q.of.assign(n, {});
    bool chain = true;
    for (size_t i = 0; i < n; ++i) chain = chain && q.parent[i] == static_cast<int64_t>(i) - 1;
    if (chain) {
      for (auto& s : q.of) s = {q.seq};
      continue;
    }
    std::vector<bool> has_child(n, false);
    for (size_t i = 0; i < n; ++i) {
      if (q.parent[i] >= 0) has_child[static_cast<size_t>(q.parent[i])] = true;
    }
    for (size_t leaf = 0; leaf < n; ++leaf) {
      if (has_child[leaf]) continue;
      const llama_seq_id s = next++;
      for (int64_t i = static_cast<int64_t>(leaf); i >= 0; i = q.parent[static_cast<size_t>(i)]) {
        q.of[static_cast<size_t>(i)].push_back(s);
      }
    }
  }
  return next;
}

}  // namespace

extern "C" int engram_hash_packed(const engram_layout* layout, const engram_packed_call_t* call,
                                  engram_packed_result_t* result, char* err, size_t err_len) {
  return engram::plugin::Guard(err, err_len, [&] {
    if (layout->layout.profile != engram::Profile::kV41) throw Error("the port hashes v4.1 only");
    const std::shared_ptr<Model> model = LoadModel(layout);
    Model& m = *model;
    const size_t w = m.window;
    std::vector<Request> req = ReadShape(call);
    const llama_seq_id state_seqs = AssignSequences(req);
    llama_dsv41_engram_state state(static_cast<uint32_t>(state_seqs));
    std::vector<llama_token> tokens;
    std::vector<llama_pos> pos;
    std::vector<std::vector<llama_seq_id>> seqs;
    for (size_t r = 0; r < req.size(); ++r) {
      Request& q = req[r];
      const std::string name = "request " + std::to_string(r);
      const int64_t hpos = call->history_positions[r];
      int64_t lowest = hpos - static_cast<int64_t>(call->history_counts[r]);
      for (size_t t = q.begin; t < q.end; ++t) lowest = std::min(lowest, call->positions[t]);
      q.base = Base(lowest, w);
      ImportHistory(state, q.seq, hpos, call->history_ids + r * w, call->history_counts[r], q.base, w,
                    name + " history");
      // each leaf's sequence starts from the request's history: the port's seq_cp
      for (llama_seq_id s = q.seq + 1; s < (r + 1 < req.size() ? req[r + 1].seq : state_seqs); ++s) {
        state.seq_cp(q.seq, s, -1, -1);
      }
      for (size_t t = q.begin; t < q.end; ++t) {
        tokens.push_back(m.Raw(call->ids[t]));
        pos.push_back(Pos(call->positions[t], q.base, name + " slot " + std::to_string(t)));
        seqs.push_back(q.of[t - q.begin]);
      }
    }
    const std::vector<int64_t> rows = SetInput(m, state, tokens, pos, seqs);
    engram::plugin::CheckCapacity(result->rows_len, rows.size(), "rows");
    std::copy(rows.begin(), rows.end(), result->rows);
    for (size_t r = 0; r < req.size(); ++r) {
      const Request& q = req[r];
      const int64_t after = call->history_positions[r] + static_cast<int64_t>(q.accepted.size());
      const llama_seq_id s = q.accepted.empty() ? q.seq : q.of[static_cast<size_t>(q.accepted.back())].front();
      const auto count = static_cast<size_t>(std::min<int64_t>(after, static_cast<int64_t>(w)));
      result->history_positions[r] = after;
      result->history_counts[r] = count;
      for (size_t i = 0; i < count; ++i) {
        result->history_ids[r * w + i] =
            state.get(s, static_cast<llama_pos>(after - q.base - static_cast<int64_t>(count - i)));
      }
    }
    return 0;
  });
}

// §HASH.1 TokenLookupTest (ABI 1.2): the port's compress() on the map the tokenizer gives.
struct engram_token_map {
  llama_dsv41_engram_spec spec;  // only its token_map: compress() reads nothing else
};

extern "C" {

engram_token_map* engram_token_map_build(const char* tokenizer_json, size_t length, char* err, size_t err_len) {
  return engram::plugin::GuardHandle(err, err_len, [&] {
    if (tokenizer_json == nullptr) throw Error("tokenizer_json: NULL");
    const engram::TokenMap map = engram::BuildTokenMap(
        engram::ParseTokenizerJson(std::string_view(tokenizer_json, length), "tokenizer.json"));
    auto m = std::make_unique<engram_token_map>();
    for (int64_t c : map.map) m->spec.token_map.push_back(static_cast<uint32_t>(c));
    return m.release();
  });
}

void engram_token_map_destroy(engram_token_map* map) { delete map; }

int engram_token_map_compress(const engram_token_map* map, const int64_t* raw, const uint8_t* mask, size_t n,
                              const char* profile, int64_t* out, char* err, size_t err_len) {
  return engram::plugin::Guard(err, err_len, [&] {
    if (profile == nullptr || std::string(profile) != "v4.1") throw Error("the port implements v4.1 only");
    if (mask != nullptr) {
      throw Error("the port takes no mask: compress() maps a raw id alone (llama-dsv41-engram.h:60), DEAD only for "
                  "an id outside the map (llama-dsv41-engram.cpp:31)");
    }
    for (size_t i = 0; i < n; ++i) {
      if (raw[i] < INT32_MIN || raw[i] > INT32_MAX) {
        throw Error("raw id " + std::to_string(raw[i]) + " is beyond llama_token, int32_t (llama-dsv41-engram.h:60)");
      }
      out[i] = map->spec.compress(static_cast<llama_token>(raw[i]));
    }
    return 0;
  });
}

}  // extern "C"
