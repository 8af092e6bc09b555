/// \file
/// spec/hash.md — n-gram hashing, per-sequence state, chunking, rollback, fork.
///
/// For every position t and every Engram layer, the last max_ngram compressed
/// ids (tok_0 = the id at t, tok_s = the id s positions back) are multiplied by
/// the layer's multipliers and XOR-ed together one look-back at a time; after
/// step i the running value is the (i+1)-gram hash, reduced modulo each head's
/// prime and shifted by the column's offset (§HASH.3, §HASH.4).
///
/// Output layout (§HASH.4): rows[t][layer][col], col = (n-2)*heads + head,
/// flattened row-major into one std::vector<int64_t>.
#ifndef ENGRAM_REFERENCE_HASH_H_
#define ENGRAM_REFERENCE_HASH_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/layout.h"
#include "reference/token_map.h"

namespace engram {

/// §HASH.1 The compressed id of a masked (dead) position in v4.1.
inline constexpr int64_t kDead = -1;

/// §HASH.1 Raw ids -> compressed ids through `token_map`.
///  v4.1: raw -1 marks a masked position (DEAD); mask[t] == 0 marks one too
///        (image spans). Other negative ids are refused.
///  demo-v1: negative ids are copied through unchanged (and hashed as they are).
/// Ids >= token_map.tokens() are refused. Errors name the position and value.
std::vector<int64_t> CompressIds(Profile profile, const TokenMap& token_map, std::span<const int64_t> raw_ids,
                                 std::span<const uint8_t> mask = {});
/// The same with the layout's profile.
inline std::vector<int64_t> CompressIds(const Layout& layout, const TokenMap& token_map,
                                        std::span<const int64_t> raw_ids, std::span<const uint8_t> mask = {}) {
  return CompressIds(layout.profile, token_map, raw_ids, mask);
}

/// §HASH.1 Checks ids that are already compressed: v4.1 ids must be in [0, V)
/// or DEAD; demo-v1 ids must be < V (negatives allowed). Throws engram::Error.
void CheckCompressedIds(const Layout& layout, std::span<const int64_t> ids);

/// §HASH.7 x mod p for 0 <= x < 2^64 and 2 <= p < 2^63 without a division
/// instruction: one 128-bit multiply by floor((2^64-1)/p) and one correction.
struct DivisionFreeMod {
  uint64_t p = 0;  ///< the modulus, 2 <= p < 2^63
  uint64_t m = 0;  ///< floor((2^64 - 1) / p)
  /// §HASH.7 Precomputes m for modulus `prime`.
  explicit DivisionFreeMod(uint64_t prime);
  DivisionFreeMod() = default;
  /// x mod p, for every uint64 x (the proof is in §HASH.7).
  uint64_t Mod(uint64_t x) const;
  /// numpy/torch floor-mod of a signed value: result in [0, p) (§HASH.4).
  int64_t FloorMod(int64_t x) const;
};

/// Intermediate values of one position, for vectors and `engram explain`.
struct PositionTrace {
  std::vector<int64_t> window;    ///< tok_0 .. tok_{max-1} as read (DEAD/-ve kept), before blocking
  std::vector<uint8_t> blocked;   ///< §HASH.2 per slot: 1 if the slot reads pad
  std::vector<int64_t> tokens;    ///< §HASH.2 per slot after blocking/padding
  std::vector<std::vector<int64_t>> mixes;     ///< [layer][order index]: rolling value of the n-gram
  std::vector<std::vector<int64_t>> residues;  ///< [layer][col]: mix mod prime, before the offset
  std::vector<std::vector<int64_t>> rows;      ///< [layer][col]: residue + offset
};

/// §HASH.9 What one sequence's hash state hands to another instance.
struct HashHistory {
  int64_t position = 0;          ///< ids consumed so far
  std::vector<int64_t> ids;      ///< the last min(position, max_ngram - 1) compressed ids, oldest first
  std::string layout_fingerprint;  ///< LayoutFingerprint() of the layout that produced it (hex)
};

/// §HASH.9 The documented binary form (little-endian; see spec/hash.md) and JSON form.
std::string EncodeHistoryBinary(const HashHistory& history);
/// §HASH.9 Decodes the binary form; refuses (engram::Error naming `source`) a wrong magic,
/// an unknown version or a length other than 56 + 8 * count.
HashHistory DecodeHistoryBinary(std::string_view bytes, std::string_view source);
/// §HASH.9 The JSON form: format, version, layoutFingerprint, position, history (in that order).
nlohmann::ordered_json HistoryToJson(const HashHistory& history);
/// §HASH.9 Reads the JSON form; refuses (engram::Error naming `source` and the key) a malformed one.
HashHistory HistoryFromJson(const nlohmann::json& doc, std::string_view source);

/// §HASH.5 The per-sequence hash state: the position (tokens consumed so far)
/// and the most recent compressed ids. It keeps max_ngram - 1 ids for hashing
/// plus `rollback_capacity` more so that Rollback(k <= capacity) can restore
/// the exact earlier state. Copying a HashState forks the sequence (§HASH.6).
class HashState {
 public:
  /// A fresh sequence (position 0, empty history) of `layout`, which must outlive the
  /// state; `rollback_capacity` = how many ids Rollback() can forget (§HASH.6).
  explicit HashState(const Layout& layout, size_t rollback_capacity = 0);

  /// §HASH.5 Consumes `ids` (compressed, checked with CheckCompressedIds) and
  /// appends ids.size() * layers * columns row ids to `rows`. Feeding a
  /// sequence in chunks of any sizes yields exactly the one-shot rows.
  void Append(std::span<const int64_t> ids, std::vector<int64_t>& rows);
  /// §HASH.5 Same, writing into caller-provided storage of exactly
  /// ids.size() * layers * columns values (a preallocated output tensor);
  /// throws engram::Error when the size differs.
  void AppendInto(std::span<const int64_t> ids, std::span<int64_t> rows_out);
  /// §HASH.8 Same, also appending one PositionTrace per id.
  void AppendTraced(std::span<const int64_t> ids, std::vector<int64_t>& rows,
                    std::vector<PositionTrace>& traces);

  /// §HASH.6 Forgets the last k consumed ids, as if they had never been fed.
  /// Throws engram::Error when k > position() or when the retained history is
  /// too short (k larger than the rollback capacity).
  void Rollback(size_t k);

  /// §HASH.5 Ids consumed so far.
  int64_t position() const { return position_; }
  /// §HASH.6 How many ids Rollback() can always forget.
  size_t rollback_capacity() const { return capacity_; }
  /// §HASH.5 The last min(position, max_ngram - 1) ids, oldest first.
  std::vector<int64_t> History() const;

  /// §HASH.9 Hand-off: the state as (position, history), enough for another
  /// instance to continue the sequence exactly (disaggregated prefill/decode,
  /// a micro-batch that starts mid-sequence).
  HashHistory Export() const;
  /// §HASH.9 A state that continues from `history`. Throws engram::Error when
  /// the history does not fit the layout (count, ids, position).
  static HashState Import(const Layout& layout, const HashHistory& history, size_t rollback_capacity = 0);
  /// §HASH.9 Import into this state: its position and history become `history`'s, checked as Import checks
  /// them (a refused history leaves the state as it was); its layout, moduli and rollback capacity stay, so
  /// that one state can serve the requests of a packed call (§HASH.10) one after another.
  void Restore(const HashHistory& history);

 private:
  void Feed(std::span<const int64_t> ids, int64_t* rows_out, std::vector<PositionTrace>* traces);
  // §HASH.5 throws engram::Error when n more ids would take the position past 2^63 - 1.
  void CheckRoom(size_t n) const;

  const Layout* layout_;
  size_t capacity_;
  int64_t position_ = 0;
  std::vector<int64_t> recent_;  ///< up to max_ngram - 1 + capacity ids, oldest first
  std::vector<std::vector<DivisionFreeMod>> mods_;  ///< [layer][col]
};

/// §HASH.10-§HASH.12 One call of a serving engine: B requests packed into one
/// flat buffer of slots, each continuing its own state.
struct PackedCall {
  std::vector<int64_t> ids;          ///< T slots: the requests' ids in order, then padding (DEAD = -1)
  std::vector<int64_t> cu_seqlens;   ///< B + 1 boundaries: request r owns slots [cu[r], cu[r + 1])
  std::vector<int64_t> positions;    ///< T absolute positions (padding: never read)
  std::vector<HashHistory> histories;  ///< B states before the call (§HASH.9)
  /// §HASH.11 Empty: every request slot is committed in order. Else T entries: each request slot's
  /// parent draft, -1 (the committed state) or an earlier slot of the request (its index in it).
  std::vector<int64_t> parents;
  /// §HASH.11 With `parents`: per request, the committed path (indices within the request).
  std::vector<std::vector<int64_t>> accepted;
  /// §HASH.12 The policy `segment-reset`: a position that restarts at 0 inside a request starts a fresh
  /// segment.
  bool segment_reset = false;
};

/// What a packed call gives.
struct PackedResult {
  std::vector<int64_t> rows;           ///< [cu[B]][layer][col] flattened: the request slots' rows
  std::vector<HashHistory> histories;  ///< B states after the call, each with its state's fingerprint before
};

/// §HASH.10-§HASH.12 Hashes a packed call. Throws engram::Error naming the request, slot and value for
/// what §HASH.10 item 1, §HASH.11 and §HASH.9 refuse (and for positions that break §HASH.10 item 3).
PackedResult HashPacked(const Layout& layout, const PackedCall& call);

/// §HASH.4 The flat rows [t][layer][col] of HashState::Append as nested
/// vectors rows[t][layer][col] (for JSON output and tests).
std::vector<std::vector<std::vector<int64_t>>> NestRows(const Layout& layout, const std::vector<int64_t>& rows);

/// One-shot hashing of a whole sequence from its start (§HASH.5).
std::vector<int64_t> HashSequence(const Layout& layout, std::span<const int64_t> ids);
/// §HASH.8 One-shot with traces.
std::vector<PositionTrace> TraceSequence(const Layout& layout, std::span<const int64_t> ids);

}  // namespace engram

#endif  // ENGRAM_REFERENCE_HASH_H_
