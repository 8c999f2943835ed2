// SHA-256 hashing (OpenSSL) and hex helpers. Content-addressed storage names every blob by the
// lowercase hex SHA-256 of its bytes; Sha256Hasher hashes streams of any length incrementally.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace cairn {

class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void Update(std::string_view bytes);
  // Returns the lowercase hex digest. The hasher must not be updated afterwards.
  std::string HexDigest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string Sha256Hex(std::string_view bytes);
bool IsSha256Hex(std::string_view s);

std::string HexEncode(std::string_view bytes);
// `count` cryptographically random bytes, hex encoded (2*count characters).
std::string RandomHex(size_t count);

std::string Base64Encode(std::string_view bytes);
// Returns false on malformed input.
bool Base64Decode(std::string_view text, std::string* out);

}  // namespace cairn
