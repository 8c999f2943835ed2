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
  // Waits for a slot for up to `wait`; taken() says whether it got one.
  explicit HashSlot(std::chrono::milliseconds wait) : taken_(HashSlots().try_acquire_for(wait)) {}
  ~HashSlot() {
    if (taken_) HashSlots().release();
  }
  bool taken() const { return taken_; }

 private:
  bool taken_;
};

Status Busy() {
  return ResourceExhausted("The server is checking many passwords at once; try again in a "
                           "moment.");
}

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
  HashSlot slot(kHashWait * 5);
  if (!slot.taken()) return Busy();
  if (crypto_pwhash_str(out, password.data(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                        crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0) {
    return Unavailable("hashing a password ran out of memory");
  }
  return std::string(out);
}

Result<bool> VerifyPassword(std::string_view hash, std::string_view password) {
  if (hash.empty() || hash.size() >= crypto_pwhash_STRBYTES ||
      password.size() > kMaxPasswordLength || !SodiumReady()) {
    return false;
  }
  char encoded[crypto_pwhash_STRBYTES] = {};
  hash.copy(encoded, hash.size());
  HashSlot slot(kHashWait);
  if (!slot.taken()) return Busy();
  return crypto_pwhash_str_verify(encoded, password.data(), password.size()) == 0;
}

const std::string& DecoyPasswordHash() {
  static const std::string decoy = [] {
    if (!SodiumReady()) return std::string();
    unsigned char secret[32];
    randombytes_buf(secret, sizeof(secret));
    Result<std::string> h = HashPassword(
        std::string_view(reinterpret_cast<const char*>(secret), sizeof(secret)));
    return h.ok() ? *h : std::string();
  }();
  return decoy;
}

}  // namespace cairn::service
