// spec/hash.md — n-gram hashing with per-sequence state.
#include "reference/hash.h"
#include "base/hex.h"

#include <algorithm>
#include <limits>
#include <string>

#include "base/error.h"

namespace engram {
namespace {

__extension__ using u128 = unsigned __int128;

// §HASH.3 Products wrap in two's complement, as numpy's and torch's int64
// arithmetic does. For 0 <= id < V they never wrap (§HASH.7); only demo-v1
// negative ids can reach the wrap, and there the ports wrap too.
int64_t WrappingMul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

std::string Where(size_t t, int64_t v) {
  return "position " + std::to_string(t) + " (id " + std::to_string(v) + ")";
}

}  // namespace

// §HASH.7 With m = floor((2^64-1)/p), q' = floor(x*m / 2^64) is floor(x/p)
// or one less, so a single conditional subtraction finishes the job.
DivisionFreeMod::DivisionFreeMod(uint64_t prime) : p(prime) {
  if (prime < 2 || prime >= (uint64_t{1} << 63)) throw Error("modulus " + std::to_string(prime) + " is outside [2, 2^63)");
  m = UINT64_MAX / prime;
}

uint64_t DivisionFreeMod::Mod(uint64_t x) const {
  uint64_t q = static_cast<uint64_t>((static_cast<u128>(x) * m) >> 64);
  uint64_t r = x - q * p;
  if (r >= p) r -= p;
  return r;
}

// §HASH.4 floor-mod (Python/numpy/torch `%`): the result takes the sign of
// the divisor, so it is always in [0, p). For x < 0, -x-1 = ~x >= 0 and
// floor_mod(x) = p - 1 - ((-x-1) mod p).
int64_t DivisionFreeMod::FloorMod(int64_t x) const {
  if (x >= 0) return static_cast<int64_t>(Mod(static_cast<uint64_t>(x)));
  return static_cast<int64_t>(p - 1 - Mod(~static_cast<uint64_t>(x)));
}

std::vector<int64_t> CompressIds(Profile profile, const TokenMap& token_map, std::span<const int64_t> raw_ids,
                                 std::span<const uint8_t> mask) {
  if (!mask.empty() && mask.size() != raw_ids.size()) {
    throw Error("mask has " + std::to_string(mask.size()) + " entries but there are " +
                std::to_string(raw_ids.size()) + " ids");
  }
  if (!mask.empty() && profile == Profile::kDemoV1) {
    throw Error("mask: demo-v1 has no masking (only v4.1 marks positions DEAD)");
  }
  std::vector<int64_t> out(raw_ids.size());
  for (size_t t = 0; t < raw_ids.size(); ++t) {
    int64_t raw = raw_ids[t];
    if (profile == Profile::kV41) {
      // §HASH.1 v4.1 masks positions (image spans, padding) as DEAD; there
      // are no negative token ids to hash. Raw -1 is this spec's spelling of
      // a masked position.
      if (raw == kDead) {
        out[t] = kDead;
        continue;
      }
      if (raw < 0) throw Error("ids: " + Where(t, raw) + " is negative; v4.1 accepts only -1 (masked)");
      // The V4.1 code indexes the map before applying the mask, so even a
      // masked id must be a valid token id.
      out[t] = token_map.Lookup(raw, "ids: position " + std::to_string(t));
      if (!mask.empty() && mask[t] == 0) out[t] = kDead;
    } else {
      // §HASH.1 demo-v1 copies negative ids through and hashes them as they are.
      out[t] = raw < 0 ? raw : token_map.Lookup(raw, "ids: position " + std::to_string(t));
    }
  }
  return out;
}

void CheckCompressedIds(const Layout& layout, std::span<const int64_t> ids) {
  const int64_t v = layout.compressed_vocab_size;
  for (size_t t = 0; t < ids.size(); ++t) {
    int64_t id = ids[t];
    if (id >= v) {
      throw Error("ids: " + Where(t, id) + " is not a compressed id: must be < " + std::to_string(v));
    }
    if (layout.profile == Profile::kV41 && id < 0 && id != kDead) {
      throw Error("ids: " + Where(t, id) + " is negative; v4.1 compressed ids are in [0, " + std::to_string(v) +
                  ") or -1 (DEAD)");
    }
  }
}

HashState::HashState(const Layout& layout, size_t rollback_capacity)
    : layout_(&layout), capacity_(rollback_capacity) {
  for (const LayerLayout& layer : layout.layers) {
    std::vector<DivisionFreeMod> cols;
    for (int col = 0; col < layout.columns(); ++col) cols.emplace_back(static_cast<uint64_t>(layer.prime(col)));
    mods_.push_back(std::move(cols));
  }
}

// §HASH.5 the position is an int64 that never wraps: refuse an append that
// would take it past 2^63 - 1 (reachable after importing a large position,
// §HASH.9), before anything changes.
void HashState::CheckRoom(size_t n) const {
  const uint64_t room = static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - position_);
  if (static_cast<uint64_t>(n) > room) {
    throw Error("append: " + std::to_string(n) + " ids at position " + std::to_string(position_) +
                " would take the position past 2^63 - 1 (§HASH.5: it never wraps)");
  }
}

void HashState::Append(std::span<const int64_t> ids, std::vector<int64_t>& rows) {
  CheckCompressedIds(*layout_, ids);  // before touching `rows`: a refused call changes nothing
  CheckRoom(ids.size());
  const size_t at = rows.size();
  rows.resize(at + ids.size() * layout_->layers.size() * static_cast<size_t>(layout_->columns()));
  Feed(ids, rows.data() + at, nullptr);
}

void HashState::AppendInto(std::span<const int64_t> ids, std::span<int64_t> rows_out) {
  const size_t needed = ids.size() * layout_->layers.size() * static_cast<size_t>(layout_->columns());
  if (rows_out.size() != needed) {
    throw Error("rows: the output holds " + std::to_string(rows_out.size()) + " values but " +
                std::to_string(ids.size()) + " ids need " + std::to_string(needed));
  }
  CheckCompressedIds(*layout_, ids);
  CheckRoom(ids.size());
  Feed(ids, rows_out.data(), nullptr);
}

void HashState::AppendTraced(std::span<const int64_t> ids, std::vector<int64_t>& rows,
                             std::vector<PositionTrace>& traces) {
  CheckCompressedIds(*layout_, ids);
  CheckRoom(ids.size());
  const size_t at = rows.size();
  rows.resize(at + ids.size() * layout_->layers.size() * static_cast<size_t>(layout_->columns()));
  Feed(ids, rows.data() + at, &traces);
}

// Requires ids checked by CheckCompressedIds and room for their rows.
void HashState::Feed(std::span<const int64_t> ids, int64_t* rows_out, std::vector<PositionTrace>* trace_out) {
  const Layout& L = *layout_;
  const int max_ngram = L.max_ngram;
  const int heads = L.heads;
  const int columns = L.columns();
  const bool v41 = L.profile == Profile::kV41;

  // The ids visible to this chunk: the retained history, then the chunk.
  std::vector<int64_t> ids_seen(recent_);
  ids_seen.insert(ids_seen.end(), ids.begin(), ids.end());
  const size_t first = recent_.size();  // index of ids[0] in ids_seen

  const size_t layers = L.layers.size();
  std::vector<int64_t> window(static_cast<size_t>(max_ngram));  // x_s as read (§HASH.8)
  std::vector<int64_t> tokens(static_cast<size_t>(max_ngram));  // tok_s after blocking
  std::vector<uint8_t> blocked(static_cast<size_t>(max_ngram));
  std::vector<int64_t> mixes(layers * static_cast<size_t>(max_ngram - 1));  // kept for traces

  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t pos = position_ + static_cast<int64_t>(i);
    // §HASH.2 Read tok_s, s positions back, and decide which slots read pad.
    bool block = false;
    for (int s = 0; s < max_ngram; ++s) {
      const bool before_start = pos < s;
      const int64_t x = before_start ? L.pad : ids_seen[first + i - static_cast<size_t>(s)];
      if (v41) {
        // Once a slot is blocked, every older slot is too: an n-gram never
        // reaches across the sequence start or a DEAD span.
        block = block || before_start || x == kDead;
      } else {
        block = before_start;  // demo-v1: np.pad with pad_id, nothing else
      }
      window[static_cast<size_t>(s)] = x;
      blocked[static_cast<size_t>(s)] = block ? 1 : 0;
      tokens[static_cast<size_t>(s)] = block ? L.pad : x;
    }
    int64_t* position_rows = rows_out + i * layers * static_cast<size_t>(columns);
    for (size_t li = 0; li < layers; ++li) {
      // Plain pointers: the compiler then knows that writing a row cannot
      // move the layer's tables, and keeps them in registers.
      const int64_t* multipliers = L.layers[li].multipliers.data();
      const int64_t* offsets = L.layers[li].offsets.data();
      const DivisionFreeMod* mods = mods_[li].data();
      int64_t* row_out = position_rows + li * static_cast<size_t>(columns);
      // §HASH.3 After XOR-ing in look-back slot k, `rolling` is the hash of
      // the (k+1)-gram ending at this position.
      int64_t rolling = WrappingMul(tokens[0], multipliers[0]);
      for (int k = 1; k < max_ngram; ++k) {
        rolling ^= WrappingMul(tokens[static_cast<size_t>(k)], multipliers[k]);
        mixes[li * static_cast<size_t>(max_ngram - 1) + static_cast<size_t>(k - 1)] = rolling;
        // §HASH.4 One residue per head, shifted into the column's row range.
        // Floor-mod of a negative mix (demo-v1 only) is p - 1 - ((-x-1) mod p);
        // the sign is the same for every head, so it is decided once here.
        const bool negative = rolling < 0;
        const uint64_t magnitude = negative ? ~static_cast<uint64_t>(rolling) : static_cast<uint64_t>(rolling);
        const int first_col = (k - 1) * heads;
#pragma GCC unroll 8
        for (int h = 0; h < heads; ++h) {
          const int col = first_col + h;
          uint64_t residue = mods[col].Mod(magnitude);
          if (negative) residue = mods[col].p - 1 - residue;
          row_out[col] = static_cast<int64_t>(residue) + offsets[col];
        }
      }
    }
    if (trace_out != nullptr) {
      // §HASH.8 Everything a failing port needs to find the step that differs.
      PositionTrace trace;
      trace.window = window;
      trace.blocked = blocked;
      trace.tokens = tokens;
      for (size_t li = 0; li < layers; ++li) {
        const auto mix_begin = mixes.begin() + static_cast<std::ptrdiff_t>(li * static_cast<size_t>(max_ngram - 1));
        trace.mixes.emplace_back(mix_begin, mix_begin + (max_ngram - 1));
        const int64_t* row_out = position_rows + li * static_cast<size_t>(columns);
        trace.rows.emplace_back(row_out, row_out + columns);
        trace.residues.emplace_back();
        for (int col = 0; col < columns; ++col) {
          trace.residues.back().push_back(row_out[col] - L.layers[li].offsets[static_cast<size_t>(col)]);
        }
      }
      trace_out->push_back(std::move(trace));
    }
  }

  // §HASH.5 Keep max_ngram - 1 ids for the look-back, plus the rollback reserve.
  position_ += static_cast<int64_t>(ids.size());
  const size_t keep = static_cast<size_t>(max_ngram - 1) + capacity_;
  if (ids_seen.size() > keep) ids_seen.erase(ids_seen.begin(), ids_seen.end() - static_cast<std::ptrdiff_t>(keep));
  recent_ = std::move(ids_seen);
}

void HashState::Rollback(size_t k) {
  // Compared unsigned: a count of 2^63 or more must not wrap to a negative
  // int64 that passes the check (position_ is never negative).
  if (k > static_cast<uint64_t>(position_)) {
    throw Error("rollback by " + std::to_string(k) + " but only " + std::to_string(position_) + " ids were fed");
  }
  // §HASH.6 After the rollback the state must still hold the max_ngram - 1
  // ids (or all of them, near the start) that precede the new position.
  const int64_t new_position = position_ - static_cast<int64_t>(k);
  const size_t needed = static_cast<size_t>(std::min<int64_t>(new_position, layout_->max_ngram - 1));
  if (recent_.size() < k + needed) {
    throw Error("rollback by " + std::to_string(k) + " exceeds the retained history (rollback capacity " +
                std::to_string(capacity_) + ")");
  }
  recent_.resize(recent_.size() - k);
  position_ = new_position;
}

std::vector<int64_t> HashState::History() const {
  const size_t n = std::min(recent_.size(), static_cast<size_t>(layout_->max_ngram - 1));
  return std::vector<int64_t>(recent_.end() - static_cast<std::ptrdiff_t>(n), recent_.end());
}

HashHistory HashState::Export() const {
  return HashHistory{position_, History(), LayoutFingerprint(*layout_)};
}

HashState HashState::Import(const Layout& layout, const HashHistory& history, size_t rollback_capacity) {
  HashState state(layout, rollback_capacity);
  state.Restore(history);
  return state;
}

void HashState::Restore(const HashHistory& history) {
  const Layout& layout = *layout_;
  // §HASH.9 A history from another layout would silently hash differently.
  if (!history.layout_fingerprint.empty()) {
    const std::string expected = LayoutFingerprint(layout);
    if (history.layout_fingerprint != expected) {
      throw Error("history: layoutFingerprint " + history.layout_fingerprint + " is not this layout's " + expected);
    }
  }
  if (history.position < 0) throw Error("history: position must be >= 0, got " + std::to_string(history.position));
  const size_t want = static_cast<size_t>(std::min<int64_t>(history.position, layout.max_ngram - 1));
  if (history.ids.size() != want) {
    throw Error("history: position " + std::to_string(history.position) + " needs " + std::to_string(want) +
                " ids (min(position, max_ngram - 1)), got " + std::to_string(history.ids.size()));
  }
  try {
    CheckCompressedIds(layout, history.ids);
  } catch (const Error& e) {
    throw Error(std::string("history: the kept ids: ") + e.what());
  }
  position_ = history.position;
  recent_ = history.ids;
}

namespace {

constexpr char kHistoryMagic[8] = {'E', 'N', 'G', 'R', 'A', 'M', 'H', 'S'};
constexpr uint32_t kHistoryVersion = 1;

void PutLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t GetLe(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + static_cast<size_t>(i)])) << (8 * i);
  return v;
}

// §HASH.9 The 32 bytes of a layout fingerprint (64 lower-case hex digits).
std::string FingerprintBytes(const std::string& hex, std::string_view what) {
  const std::optional<std::string> bytes = BytesOfHex(hex);
  if (hex.size() != 64) throw Error(std::string(what) + ": layoutFingerprint must be 64 hex digits, got '" + hex + "'");
  if (!bytes) throw Error(std::string(what) + ": layoutFingerprint '" + hex + "' is not lower-case hex");
  return *bytes;
}

}  // namespace

// §HASH.9 Binary form: "ENGRAMHS", u32 version, 32-byte fingerprint,
// i64 position, u32 count, count x i64 ids; all little-endian.
std::string EncodeHistoryBinary(const HashHistory& history) {
  std::string out(kHistoryMagic, sizeof(kHistoryMagic));
  PutLe(out, kHistoryVersion, 4);
  out += FingerprintBytes(history.layout_fingerprint, "history");
  PutLe(out, static_cast<uint64_t>(history.position), 8);
  PutLe(out, history.ids.size(), 4);
  for (int64_t id : history.ids) PutLe(out, static_cast<uint64_t>(id), 8);
  return out;
}

HashHistory DecodeHistoryBinary(std::string_view bytes, std::string_view source) {
  const std::string where(source);
  if (bytes.size() < 56) throw Error(where + ": a binary history has at least 56 bytes, got " + std::to_string(bytes.size()));
  if (bytes.substr(0, 8) != std::string_view(kHistoryMagic, 8)) throw Error(where + ": not a hash history (magic is not ENGRAMHS)");
  const uint64_t version = GetLe(bytes, 8, 4);
  if (version != kHistoryVersion) throw Error(where + ": history format version " + std::to_string(version) + " is not supported (expected 1)");
  HashHistory h;
  h.layout_fingerprint = HexOfBytes(bytes.substr(12, 32));
  h.position = static_cast<int64_t>(GetLe(bytes, 44, 8));
  const uint64_t count = GetLe(bytes, 52, 4);
  if (bytes.size() != 56 + 8 * count) {
    throw Error(where + ": " + std::to_string(count) + " ids need " + std::to_string(56 + 8 * count) +
                " bytes, the history has " + std::to_string(bytes.size()));
  }
  for (uint64_t i = 0; i < count; ++i) h.ids.push_back(static_cast<int64_t>(GetLe(bytes, 56 + 8 * i, 8)));
  return h;
}

nlohmann::ordered_json HistoryToJson(const HashHistory& history) {
  return {{"format", "engram-hash-history"}, {"version", kHistoryVersion},
          {"layoutFingerprint", history.layout_fingerprint}, {"position", history.position}, {"history", history.ids}};
}

HashHistory HistoryFromJson(const nlohmann::json& doc, std::string_view source) {
  const std::string where(source);
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != "engram-hash-history") {
    throw Error(where + ": key 'format': expected \"engram-hash-history\"");
  }
  if (!doc.contains("version") || doc["version"] != kHistoryVersion) {
    throw Error(where + ": key 'version': " + (doc.contains("version") ? doc["version"].dump() : "missing") + " is not supported (expected 1)");
  }
  HashHistory h;
  // §HASH.9 Every integer is an int64: a JSON reader that converts an
  // unsigned 2^64 - 1 (or 2^63) to int64 wraps it into -1, DEAD (or
  // INT64_MIN); it is refused as out of range instead.
  auto in_int64 = [](const nlohmann::json& v) {
    return v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX});
  };
  if (!doc.contains("position") || !doc["position"].is_number_integer()) throw Error(where + ": key 'position': expected an integer");
  if (!in_int64(doc["position"])) {
    throw Error(where + ": key 'position': " + doc["position"].dump() + " is outside the int64 range (§HASH.9)");
  }
  h.position = doc["position"].get<int64_t>();
  if (!doc.contains("history") || !doc["history"].is_array()) throw Error(where + ": key 'history': expected an array of ids");
  for (const auto& id : doc["history"]) {
    if (!id.is_number_integer()) throw Error(where + ": key 'history': " + id.dump() + " is not an integer id");
    if (!in_int64(id)) throw Error(where + ": key 'history': " + id.dump() + " is outside the int64 range of an id (§HASH.9)");
    h.ids.push_back(id.get<int64_t>());
  }
  if (!doc.contains("layoutFingerprint") || !doc["layoutFingerprint"].is_string()) {
    throw Error(where + ": key 'layoutFingerprint': expected a 64-digit hex string");
  }
  h.layout_fingerprint = doc["layoutFingerprint"].get<std::string>();
  FingerprintBytes(h.layout_fingerprint, where);  // validates the form
  return h;
}

std::vector<std::vector<std::vector<int64_t>>> NestRows(const Layout& layout, const std::vector<int64_t>& rows) {
  const size_t cols = static_cast<size_t>(layout.columns());
  const size_t layers = layout.layers.size();
  std::vector<std::vector<std::vector<int64_t>>> out;
  for (size_t at = 0; at + layers * cols <= rows.size() && layers * cols > 0; at += layers * cols) {
    std::vector<std::vector<int64_t>> per_layer;
    for (size_t li = 0; li < layers; ++li) {
      const auto begin = rows.begin() + static_cast<std::ptrdiff_t>(at + li * cols);
      per_layer.emplace_back(begin, begin + static_cast<std::ptrdiff_t>(cols));
    }
    out.push_back(std::move(per_layer));
  }
  return out;
}

std::vector<int64_t> HashSequence(const Layout& layout, std::span<const int64_t> ids) {
  HashState state(layout);
  std::vector<int64_t> rows;
  state.Append(ids, rows);
  return rows;
}

std::vector<PositionTrace> TraceSequence(const Layout& layout, std::span<const int64_t> ids) {
  HashState state(layout);
  std::vector<int64_t> rows;
  std::vector<PositionTrace> traces;
  state.AppendTraced(ids, rows, traces);
  return traces;
}

namespace {

// §HASH.10 "request r (slots a ... b - 1)", the place a packed call's refusal names.
std::string RequestName(const PackedCall& call, size_t r) {
  return "request " + std::to_string(r) + " (slots " + std::to_string(call.cu_seqlens[r]) + " ... " +
         std::to_string(call.cu_seqlens[r + 1] - 1) + ")";
}

// §HASH.10 item 1 The boundaries, and the per-slot and per-request lists, checked before anything is read
// through them.
void CheckPackedShape(const PackedCall& call) {
  const std::vector<int64_t>& cu = call.cu_seqlens;
  const size_t slots = call.ids.size();
  if (cu.empty()) throw Error("cuSeqlens: empty; a call has B + 1 >= 1 boundaries");
  if (cu[0] != 0) throw Error("cuSeqlens[0] = " + std::to_string(cu[0]) + ": the first boundary must be 0");
  for (size_t r = 1; r < cu.size(); ++r) {
    if (cu[r] < cu[r - 1]) {
      throw Error("cuSeqlens[" + std::to_string(r) + "] = " + std::to_string(cu[r]) + " is below cuSeqlens[" +
                  std::to_string(r - 1) + "] = " + std::to_string(cu[r - 1]) + ": boundaries never decrease");
    }
  }
  if (static_cast<uint64_t>(cu.back()) > slots) {
    throw Error("cuSeqlens[" + std::to_string(cu.size() - 1) + "] = " + std::to_string(cu.back()) +
                " is beyond the buffer's " + std::to_string(slots) + " slots");
  }
  if (call.positions.size() != slots) {
    throw Error("positions: " + std::to_string(call.positions.size()) + " entries for " + std::to_string(slots) +
                " slots");
  }
  const size_t requests = cu.size() - 1;
  if (call.histories.size() != requests) {
    throw Error("histories: " + std::to_string(call.histories.size()) + " for " + std::to_string(requests) +
                " requests");
  }
  if (!call.parents.empty() && call.parents.size() != slots) {
    throw Error("parents: " + std::to_string(call.parents.size()) + " entries for " + std::to_string(slots) +
                " slots");
  }
  if (!call.parents.empty() && call.accepted.size() != requests) {
    throw Error("accepted: " + std::to_string(call.accepted.size()) + " paths for " + std::to_string(requests) +
                " requests");
  }
}

// §HASH.10 item 3 (or, with the policy, §HASH.12): slot t must have the position `at` + `plus`. Added
// unsigned, so that a sum beyond 2^63 - 1 (which the append then refuses, §HASH.5) is no overflow here.
void CheckPosition(const PackedCall& call, size_t r, size_t t, int64_t at, uint64_t plus) {
  const int64_t expected = static_cast<int64_t>(static_cast<uint64_t>(at) + plus);
  if (call.positions[t] != expected) {
    throw Error(RequestName(call, r) + ": slot " + std::to_string(t) + " has position " +
                std::to_string(call.positions[t]) + ", but it continues the request at " + std::to_string(expected) +
                " (§HASH.10 item 3)");
  }
}

// §HASH.11 A request's drafts: each one's state is its parent's after consuming it, so its window follows its
// path. Returns the state after the accepted path.
HashState HashDrafts(const Layout& layout, const PackedCall& call, size_t r, const HashState& committed,
                     int64_t* rows) {
  const size_t begin = static_cast<size_t>(call.cu_seqlens[r]);
  const size_t k = static_cast<size_t>(call.cu_seqlens[r + 1]) - begin;
  const size_t per_slot = layout.layers.size() * static_cast<size_t>(layout.columns());
  std::vector<HashState> after;  // the state after consuming draft j's path
  std::vector<int64_t> depth(k);
  after.reserve(k);
  for (size_t j = 0; j < k; ++j) {
    const int64_t parent = call.parents[begin + j];
    if (parent < -1 || parent >= static_cast<int64_t>(j)) {
      throw Error(RequestName(call, r) + ": draft " + std::to_string(j) + " (slot " + std::to_string(begin + j) +
                  ") has parent " + std::to_string(parent) + "; a parent is -1 or an earlier draft of the request");
    }
    depth[j] = parent < 0 ? 0 : depth[static_cast<size_t>(parent)] + 1;
    CheckPosition(call, r, begin + j, committed.position(), static_cast<uint64_t>(depth[j]));
    after.push_back(parent < 0 ? committed : after[static_cast<size_t>(parent)]);
    after.back().AppendInto(std::span<const int64_t>(&call.ids[begin + j], 1),
                            std::span<int64_t>(rows + j * per_slot, per_slot));
  }
  // The commit: a path from a draft whose parent is -1, each the parent of the next.
  const std::vector<int64_t>& path = call.accepted[r];
  int64_t previous = -1;
  for (size_t i = 0; i < path.size(); ++i) {
    const int64_t a = path[i];
    if (a < 0 || a >= static_cast<int64_t>(k) || call.parents[begin + static_cast<size_t>(a)] != previous) {
      throw Error(RequestName(call, r) + ": accepted[" + std::to_string(i) + "] = " + std::to_string(a) +
                  " does not continue the accepted path (its parent must be " + std::to_string(previous) +
                  "; §HASH.11)");
    }
    previous = a;
  }
  return path.empty() ? committed : after[static_cast<size_t>(path.back())];
}

}  // namespace

PackedResult HashPacked(const Layout& layout, const PackedCall& call) {
  CheckPackedShape(call);
  const std::vector<int64_t>& cu = call.cu_seqlens;
  const size_t requests = cu.size() - 1;
  const size_t request_slots = static_cast<size_t>(cu.back());
  const size_t per_slot = layout.layers.size() * static_cast<size_t>(layout.columns());
  // §HASH.10 item 4 The request slots' ids, by their slot index; padding is never read.
  try {
    CheckCompressedIds(layout, std::span<const int64_t>(call.ids.data(), request_slots));
  } catch (const Error& e) {
    throw Error(std::string("slots: ") + e.what());
  }
  std::string fingerprint;  // §LAY.5, computed when a history carries one to compare
  PackedResult out;
  out.rows.resize(request_slots * per_slot);
  out.histories.reserve(requests);
  HashState state(layout);  // one state, restored for each request (its moduli built once)
  for (size_t r = 0; r < requests; ++r) {
    try {
      // §HASH.9 a history of another layout is refused; the layout's fingerprint is computed once
      const HashHistory& h = call.histories[r];
      if (!h.layout_fingerprint.empty() && fingerprint.empty()) fingerprint = LayoutFingerprint(layout);
      if (!h.layout_fingerprint.empty() && h.layout_fingerprint != fingerprint) {
        throw Error("history: layoutFingerprint " + h.layout_fingerprint + " is not this layout's " + fingerprint);
      }
      state.Restore(HashHistory{h.position, h.ids, ""});
    } catch (const Error& e) {
      throw Error(RequestName(call, r) + ": " + e.what());
    }
    const size_t begin = static_cast<size_t>(cu[r]), end = static_cast<size_t>(cu[r + 1]);
    if (!call.parents.empty()) {
      state = HashDrafts(layout, call, r, state, out.rows.data() + begin * per_slot);
    } else {
      // §HASH.10 The request's slots continue its state; with §HASH.12's policy a position restarting at 0
      // starts a fresh segment, so the ids before it enter no later window.
      size_t from = begin;
      for (size_t t = begin; t < end; ++t) {
        const bool restart = call.segment_reset && t > begin && call.positions[t] == 0;
        if (restart) {
          state.AppendInto(std::span<const int64_t>(call.ids.data() + from, t - from),
                           std::span<int64_t>(out.rows.data() + from * per_slot, (t - from) * per_slot));
          state.Restore(HashHistory{0, {}, ""});
          from = t;
        }
        CheckPosition(call, r, t, restart ? 0 : state.position(), t - from);
      }
      state.AppendInto(std::span<const int64_t>(call.ids.data() + from, end - from),
                       std::span<int64_t>(out.rows.data() + from * per_slot, (end - from) * per_slot));
    }
    // The state after, with the fingerprint the state before carried (empty or this layout's).
    out.histories.push_back(HashHistory{state.position(), state.History(), call.histories[r].layout_fingerprint});
  }
  return out;
}

}  // namespace engram
