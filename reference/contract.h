/// \file
/// spec/contract.md — the hash contract: one small JSON that pins everything
/// the row ids depend on, so that a port (or a converted model file) can
/// prove at load time that it hashes exactly like the model it serves.
///
/// Why: real ports broke on a token map built from the wrong tokenizer
/// revision (same size, different ids), and on converted model files that lost
/// the multipliers/primes/offsets. A size check catches neither; the
/// contract's digests do (§CON.1).
#ifndef ENGRAM_REFERENCE_CONTRACT_H_
#define ENGRAM_REFERENCE_CONTRACT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/config.h"
#include "reference/layout.h"
#include "reference/token_map.h"

namespace engram {

/// §CON.1 The value of the contract's "format" key.
inline constexpr const char* kContractFormat = "engram-hash-contract";
/// §CON.1 The value of the contract's "version" key (the contract format).
inline constexpr int kContractVersion = 1;

/// §CON.1 Builds the contract of `config` with `token_map` (and the SHA-256 of
/// the tokenizer file it came from, when known). The result ends with
/// "contractDigest" (§CON.2).
nlohmann::ordered_json BuildContract(const EngramConfig& config, const TokenMap& token_map,
                                     std::optional<std::string> tokenizer_sha256);

/// §CON.2 SHA-256 (hex) of the contract's canonical serialization without its
/// "contractDigest" key: compact JSON (no spaces), keys in contract order.
std::string ContractDigest(const nlohmann::ordered_json& contract);

/// §CON.3 Checks the form of a contract document (format, version, types) and
/// its own digest; throws engram::Error naming `source` and the key.
void CheckContractForm(const nlohmann::ordered_json& contract, std::string_view source);

/// §CON.3 The config a contract describes (profile, layers, orders, heads,
/// bases, seed, raw pad), so that a contract can be re-derived from a token
/// map alone.
EngramConfig ConfigFromContract(const nlohmann::ordered_json& contract, std::string_view source);

/// §CON.3 Every field where `actual` differs from `expected`, as
/// "path: expected X, got Y" (paths like layers[1].primes[0][3]); empty when equal.
std::vector<std::string> CompareContracts(const nlohmann::ordered_json& expected, const nlohmann::ordered_json& actual);

}  // namespace engram

#endif  // ENGRAM_REFERENCE_CONTRACT_H_
