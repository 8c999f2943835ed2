// The credentials a request carries, read from its headers: `Authorization: Basic` (MLflow's
// username and password), `Authorization: Bearer` (a token) or, without an Authorization
// header, the web UI's session cookie. Anything else carries none. Server-internal.
#pragma once

#include <string_view>

#include "service/access_service.h"

namespace cairn::server {

inline constexpr std::string_view kSessionCookie = "cairn_session";

service::Credentials ParseCredentials(std::string_view authorization,
                                      std::string_view cookie_header);

}  // namespace cairn::server
