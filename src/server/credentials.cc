#include "server/credentials.h"

#include <string>

#include "util/hash.h"
#include "util/strings.h"

namespace cairn::server {
namespace {

using service::Credentials;

// The value of one cookie in a Cookie header ("a=1; cairn_session=abc").
std::string_view CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t semi = header.find(';');
    const std::string_view pair = Trim(header.substr(0, semi));
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
      return Trim(pair.substr(eq + 1));
    }
    if (semi == std::string_view::npos) break;
    header.remove_prefix(semi + 1);
  }
  return {};
}

}  // namespace

Credentials ParseCredentials(std::string_view authorization, std::string_view cookie_header) {
  Credentials c;
  authorization = Trim(authorization);
  if (!authorization.empty()) {
    const size_t space = authorization.find(' ');
    if (space == std::string_view::npos) return c;
    const std::string_view scheme = authorization.substr(0, space);
    const std::string_view rest = Trim(authorization.substr(space + 1));
    if (rest.empty()) return c;
    if (EqualsIgnoreCase(scheme, "Bearer")) {
      c.kind = Credentials::Kind::kBearer;
      c.secret = std::string(rest);
      return c;
    }
    std::string decoded;
    if (EqualsIgnoreCase(scheme, "Basic") && Base64Decode(rest, &decoded)) {
      const size_t colon = decoded.find(':');
      if (colon == std::string::npos) return c;
      c.kind = Credentials::Kind::kBasic;
      c.username = decoded.substr(0, colon);
      c.secret = decoded.substr(colon + 1);
    }
    // An Authorization header says who asks even when it cannot be read: the cookie is not
    // consulted then.
    return c;
  }
  const std::string_view session = CookieValue(cookie_header, kSessionCookie);
  if (!session.empty()) {
    c.kind = Credentials::Kind::kSession;
    c.secret = std::string(session);
  }
  return c;
}

}  // namespace cairn::server
