// What keeps other web sites out of a server on a developer's machine or a team's LAN.
//
// DNS rebinding: a page of attacker.example whose name is made to resolve to 127.0.0.1 reaches
// the server as a same-origin page, with "Host: attacker.example". The server answers only
// Host values it can stand behind: its own address or name, localhost, an IP literal (a page
// whose origin is an IP address gains nothing from rebinding), and the names given with
// --allowed-hosts ("*" allows any; "*.example.com" a domain's names).
//
// Cross-site writes: a page elsewhere can make a browser send a "simple" POST (text/plain,
// no preflight) with the user's network position. Writes from a browser must come from the
// server's own origin or one listed with --cors-origins, and JSON APIs take only
// application/json bodies (which a foreign page cannot send without a preflight).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cairn::server {

struct CrossSitePolicy {
  std::string bind_host;                  // the address the server listens on
  std::vector<std::string> allowed_hosts;  // --allowed-hosts
  std::vector<std::string> cors_origins;   // --cors-origins ("*" allows any)
};

// MLflow's wording for the refusals, answered as text/plain with 403.
inline constexpr std::string_view kInvalidHostMessage =
    "Invalid Host header - possible DNS rebinding attack detected";
inline constexpr std::string_view kCrossOriginMessage = "Cross-origin request blocked";

// The host part of a Host header value or URL authority ("[::1]:5000" -> "::1"), lowercased.
std::string HostName(std::string_view authority);

// Whether a request with this Host header may be served. A request without one (HTTP/1.0) is
// served: browsers always send it.
bool HostAllowed(std::string_view host_header, const CrossSitePolicy& policy);

// Whether a request carrying this Origin header may write. No Origin (not a browser, or a
// same-origin GET) is allowed; otherwise the origin's authority must equal the Host header, or
// the origin must be listed in cors_origins.
bool OriginMayWrite(std::string_view origin, std::string_view host_header,
                    const CrossSitePolicy& policy);

// Whether an Origin is one --cors-origins lets read answers (gets Access-Control-Allow-Origin).
bool CorsAllowed(std::string_view origin, const CrossSitePolicy& policy);

}  // namespace cairn::server
