// spec/conformance.md §CONF.5 — accumulated vectors: a counter-based input
// stream hashed as one sequence, folded into a running SHA-256.
#ifndef ENGRAM_VECTORS_ACCUMULATE_H_
#define ENGRAM_VECTORS_ACCUMULATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace engram::vectors {

// §CONF.5 The compressed id at position i of the stream.
int64_t StreamId(bool v41, int64_t compressed_vocab_size, uint64_t seed, uint64_t i);

// Hashes positions 0..n-1 of the stream in chunks through `hash_chunk`
// (which must append the rows of the ids it is given to `rows`, in §HASH.4
// order, continuing the same sequence) and returns the hex SHA-256 over every
// row id as int64 little-endian. Memory stays bounded by one chunk.
std::string AccumulateHash(bool v41, int64_t compressed_vocab_size, uint64_t seed, int64_t n,
                           const std::function<void(const std::vector<int64_t>& ids, std::vector<int64_t>& rows)>& hash_chunk);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_ACCUMULATE_H_
