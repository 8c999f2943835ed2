// Fuzz target for the credentials of a request: whatever its Authorization and Cookie headers
// say, what is read from them keeps its shape (a username without ':', a non-empty secret that
// needs no trimming), and a request that names no scheme cairn knows carries nothing.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/credentials.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // The Authorization header, then the Cookie header after the first newline.
  const size_t newline = input.find('\n');
  const std::string_view authorization = input.substr(0, newline);
  const std::string_view cookie =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);
  using Kind = cairn::service::Credentials::Kind;
  const cairn::service::Credentials c = cairn::server::ParseCredentials(authorization, cookie);
  auto trimmed = [](std::string_view s) {
    return !s.empty() && s.front() != ' ' && s.back() != ' ' && s.front() != '\t' &&
           s.back() != '\t';
  };
  switch (c.kind) {
    case Kind::kNone:
      if (!c.username.empty() || !c.secret.empty()) std::abort();
      break;
    case Kind::kBasic:
      if (c.username.find(':') != std::string::npos) std::abort();
      if (authorization.empty()) std::abort();
      break;
    case Kind::kBearer:
      if (!trimmed(c.secret) || authorization.empty()) std::abort();
      break;
    case Kind::kSession:
      if (!trimmed(c.secret) || c.secret.find(';') != std::string::npos) std::abort();
      if (authorization.find_first_not_of(" \t") != std::string_view::npos) std::abort();
      break;
  }
  return 0;
}
