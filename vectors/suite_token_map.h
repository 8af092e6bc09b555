// The tokenizer.json documents and expected fields of suite token_map
// (spec/token_map.md §TOK.7), shared by its fixed vectors (suite_token_map.cc)
// and its random cases (random_token_map.cc), so that both write the same
// documents and fields.
#ifndef ENGRAM_VECTORS_SUITE_TOKEN_MAP_H_
#define ENGRAM_VECTORS_SUITE_TOKEN_MAP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reference/config.h"
#include "reference/token_map.h"
#include "vectors/suite.h"

namespace engram::vectors {

// §TOK.2 The vocab entry (GPT-2 byte-level string) whose bytes are `bytes`.
std::string ByteLevelToken(std::string_view bytes);

// An entry of a tokenizer.json's "added_tokens".
struct AddedToken {
  int64_t id;
  std::string content;
  bool special;
};

// A tokenizer.json in the shape the Hugging Face library writes: vocab[i] has
// id i, a BPE model without merges, ByteLevel pre-tokenizer and `decoder`,
// no normalizer.
ojson TokenizerDoc(const std::vector<std::string>& vocab, const std::vector<AddedToken>& added,
                   const ojson& decoder = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
                                           {"use_regex", true}},
                   const std::string& model_type = "BPE");

// §TOK.7 A TokenMapTest's expected fields for a tokenizer.json text and the
// test's inputs (padId, engramCompressedVocabSize): result, then tokens,
// compressedSize, sha256, map, compressedPad and intermediate, or error.
ojson TokenMapExpected(const std::string& tokenizer_json, const json& test_inputs);
// §HASH.1 A TokenLookupTest's expected fields: result and ids, or error.
ojson TokenLookupExpected(const TokenMap& map, const json& test, Profile profile);

}  // namespace engram::vectors

#endif  // ENGRAM_VECTORS_SUITE_TOKEN_MAP_H_
