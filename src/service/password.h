// Passwords as the identity tables keep them: Argon2id (libsodium's crypto_pwhash_str, with
// its interactive limits: 64 MiB and two passes), in the self-describing encoded form, so that
// stronger limits later still verify old hashes. At most two hashes are computed at once: each
// takes 64 MiB and most of a core for tens of milliseconds, and a burst of sign-ins must not
// take the server's memory or every core.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace cairn::service {

// Passwords longer than this are refused: hashing them costs the same, but nobody types them.
inline constexpr size_t kMaxPasswordLength = 1024;
inline constexpr size_t kMinPasswordLength = 8;

// kInvalidArgument for a password shorter than kMinPasswordLength or longer than
// kMaxPasswordLength.
Result<std::string> HashPassword(std::string_view password);
// False for a wrong password, and for a hash that is not libsodium's encoded form (an empty one
// of a service account included).
bool VerifyPassword(std::string_view hash, std::string_view password);

}  // namespace cairn::service
