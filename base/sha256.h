/// \file
/// SHA-256 digests as lowercase hex (OpenSSL's EVP interface underneath).
///
/// The ground floor's digest, shared by the reference (token-map and contract
/// digests, §TOK.6 and §CON), the vectors (MANIFEST.sha256, §VEC.9; the
/// accumulated row digest, §CONF.5) and the runner (checking a manifest).
#ifndef ENGRAM_BASE_SHA256_H_
#define ENGRAM_BASE_SHA256_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace engram {

/// The SHA-256 of `data` as 64 lowercase hex digits. Throws engram::Error if
/// OpenSSL fails.
std::string Sha256Hex(std::string_view data);

/// An incremental SHA-256, for digests over more data than is held at once
/// (the §CONF.5 accumulated vectors). Update() any number of times, then
/// HexDigest() once; a second HexDigest() or an Update() after it throws.
class Sha256 {
 public:
  Sha256();  // throws engram::Error if OpenSSL cannot start a digest
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  std::string HexDigest();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace engram

#endif  // ENGRAM_BASE_SHA256_H_
