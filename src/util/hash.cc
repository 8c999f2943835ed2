#include "util/hash.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "util/status.h"

namespace cairn {

struct Sha256Hasher::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

namespace {

// Fetched once: EVP_sha256() makes every EVP_DigestInit_ex look the implementation up again,
// which costs more than hashing a short string.
const EVP_MD* Sha256() {
  static const EVP_MD* const md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? static_cast<const EVP_MD*>(fetched) : EVP_sha256();
  }();
  return md;
}

}  // namespace

Sha256Hasher::Sha256Hasher() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  CAIRN_CHECK(impl_->ctx != nullptr);
  CAIRN_CHECK(EVP_DigestInit_ex(impl_->ctx, Sha256(), nullptr) == 1);
}

Sha256Hasher::~Sha256Hasher() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256Hasher::Update(std::string_view bytes) {
  CAIRN_CHECK(EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size()) == 1);
}

std::string Sha256Hasher::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CAIRN_CHECK(EVP_DigestFinal_ex(impl_->ctx, digest, &len) == 1);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest), len));
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256Hasher h;
  h.Update(bytes);
  return h.HexDigest();
}

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  // No early exit: a loop of fixed length without branches runs as a few vector steps.
  bool ok = true;
  for (size_t i = 0; i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    ok &= (static_cast<unsigned char>(c - '0') < 10) | (static_cast<unsigned char>(c - 'a') < 6);
  }
  return ok;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string RandomHex(size_t count) {
  std::string buf(count, '\0');
  CAIRN_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(buf.data()),
                         static_cast<int>(count)) == 1);
  return HexEncode(buf);
}

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool Base64Decode(std::string_view text, std::string* out) {
  if (text.size() % 4 != 0) return false;
  std::string buf(3 * text.size() / 4 + 1, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(buf.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return false;
  size_t len = static_cast<size_t>(n);
  // EVP_DecodeBlock counts padding as zero bytes; drop them. Valid input has at most two.
  size_t padding = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++padding;
  if (padding > 2 || padding > len) return false;
  len -= padding;
  buf.resize(len);
  *out = std::move(buf);
  return true;
}

}  // namespace cairn
