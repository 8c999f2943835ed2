// Passwords as the identity tables keep them: Argon2id (libsodium's crypto_pwhash_str, with
// its interactive limits: 64 MiB and two passes), in the self-describing encoded form, so that
// stronger limits later still verify old hashes. At most two hashes are computed at once: each
// takes 64 MiB and most of a core for tens of milliseconds, and a burst of sign-ins must take
// neither the server's memory nor every core nor every handler thread.
#pragma once

#include <chrono>
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
// of a service account included). kResourceExhausted when other hashes took every slot for
// kHashWait: a burst of sign-ins is answered "try again" rather than queued without end.
Result<bool> VerifyPassword(std::string_view hash, std::string_view password);
inline constexpr std::chrono::milliseconds kHashWait{2000};

// The hash of a password nobody knows: what an unknown account's password is checked against,
// so that answering takes as long as for an account that exists.
const std::string& DecoyPasswordHash();

}  // namespace cairn::service
