// Snippet for docs/contract.md (spec §CON): the hash contract of the V4.1
// config, and what a changed token map does to it.
#include <cstdio>
#include <string>
#include <vector>

#include "reference/config.h"
#include "reference/contract.h"
#include "reference/token_map.h"

using namespace engram;

int main() {
  //! [build]
  // A stand-in token map: the identity on 99092 ids (the real one comes from the
  // tokenizer, docs/token_map.md). V = 99092 = engram_compressed_vocab_size.
  const TokenMap map = IdentityTokenMap(99092);
  const nlohmann::ordered_json contract = BuildContract(V41FlashConfig(), map, std::nullopt);
  //! [build]
  std::printf("keys:");
  for (auto it = contract.begin(); it != contract.end(); ++it) std::printf(" %s", it.key().c_str());
  std::printf("\n");
  std::printf("tokenMap            %s\n", contract["tokenMap"].dump().c_str());
  std::printf("layoutFingerprint   %s\n", contract["layoutFingerprint"].get<std::string>().c_str());
  std::printf("contractDigest      %s\n", contract["contractDigest"].get<std::string>().c_str());
  std::printf("layers[0].numEmbeddings %s, layers[1].numEmbeddings %s\n",
              contract["layers"][0]["numEmbeddings"].dump().c_str(),
              contract["layers"][1]["numEmbeddings"].dump().c_str());

  //! [swap]
  // Same size, two ids swapped: V, primes and multipliers are unchanged, only the map digest differs.
  TokenMap other = map;
  std::swap(other.map[5], other.map[6]);
  const nlohmann::ordered_json changed = BuildContract(V41FlashConfig(), other, std::nullopt);
  for (const std::string& diff : CompareContracts(contract, changed)) std::printf("differs: %s\n", diff.c_str());
  //! [swap]
  return 0;
}
