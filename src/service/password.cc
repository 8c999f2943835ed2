#include "service/password.h"

#include <sodium.h>

#include <semaphore>

namespace cairn::service {
namespace {

std::counting_semaphore<2>& HashSlots() {
  static std::counting_semaphore<2> slots(2);
  return slots;
}

class HashSlot {
 public:
  HashSlot() { HashSlots().acquire(); }
  ~HashSlot() { HashSlots().release(); }
};

bool SodiumReady() {
  static const bool ready = sodium_init() >= 0;
  return ready;
}

}  // namespace

Result<std::string> HashPassword(std::string_view password) {
  if (password.size() < kMinPasswordLength) {
    return InvalidArgument("Password must be at least " + std::to_string(kMinPasswordLength) +
                           " characters long.");
  }
  if (password.size() > kMaxPasswordLength) {
    return InvalidArgument("Password must be at most " + std::to_string(kMaxPasswordLength) +
                           " characters long.");
  }
  if (!SodiumReady()) return Internal("libsodium could not be initialised");
  char out[crypto_pwhash_STRBYTES];
  HashSlot slot;
  if (crypto_pwhash_str(out, password.data(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                        crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0) {
    return Unavailable("hashing a password ran out of memory");
  }
  return std::string(out);
}

bool VerifyPassword(std::string_view hash, std::string_view password) {
  if (hash.empty() || hash.size() >= crypto_pwhash_STRBYTES || password.size() > kMaxPasswordLength ||
      !SodiumReady()) {
    return false;
  }
  char encoded[crypto_pwhash_STRBYTES] = {};
  hash.copy(encoded, hash.size());
  HashSlot slot;
  return crypto_pwhash_str_verify(encoded, password.data(), password.size()) == 0;
}

}  // namespace cairn::service
