#include "base/sha256.h"
#include "base/hex.h"

#include <openssl/evp.h>

#include "base/error.h"

namespace engram {
namespace {

// SHA-256 fetched once: OpenSSL 3 looks EVP_sha256() up in its provider
// table at every EVP_Digest, which costs more than hashing a short line
// (the runner digests every request line, §CONF.9).
const EVP_MD* Sha256Md() {
  static const EVP_MD* md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : EVP_sha256();
  }();
  return md;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, Sha256Md(), nullptr) != 1) {
    throw Error("SHA-256 failed (OpenSSL EVP_Digest)");
  }
  return HexOfBytes(std::span<const uint8_t>(digest, len));
}

struct Sha256::Ctx {
  EVP_MD_CTX* md = nullptr;  // null once the digest is final
  ~Ctx() {
    if (md != nullptr) EVP_MD_CTX_free(md);
  }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256 init failed (OpenSSL EVP_DigestInit_ex)");
  }
}

Sha256::~Sha256() = default;

void Sha256::Update(const void* data, size_t size) {
  if (ctx_->md == nullptr) throw Error("SHA-256: update after the digest was taken");
  if (EVP_DigestUpdate(ctx_->md, data, size) != 1) throw Error("SHA-256 update failed (OpenSSL EVP_DigestUpdate)");
}

std::string Sha256::HexDigest() {
  if (ctx_->md == nullptr) throw Error("SHA-256: the digest was already taken");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const int ok = EVP_DigestFinal_ex(ctx_->md, digest, &len);
  EVP_MD_CTX_free(ctx_->md);
  ctx_->md = nullptr;
  if (ok != 1) throw Error("SHA-256 final failed (OpenSSL EVP_DigestFinal_ex)");
  return HexOfBytes(std::span<const uint8_t>(digest, len));
}

}  // namespace engram
