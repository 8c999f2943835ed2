#include "server/cross_site.h"
#include "util/strings.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>

namespace cairn::server {
namespace {

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// "*" matches anything; "*.example.com" any name under example.com; otherwise equality.
bool Matches(const std::string& host, std::string_view pattern) {
  const std::string p = HostName(pattern);
  if (pattern == "*") return true;
  if (pattern.starts_with("*.")) {
    const std::string suffix = AsciiLower(pattern.substr(1));
    return host.size() > suffix.size() && host.ends_with(suffix);
  }
  return host == p;
}

const std::string& MachineName() {
  static const std::string name = [] {
    char buf[256] = {};
    if (gethostname(buf, sizeof(buf) - 1) != 0) return std::string();
    return AsciiLower(buf);
  }();
  return name;
}

// "http://host:port" -> "host:port"; "" when it is not an http(s) origin.
std::string_view OriginAuthority(std::string_view origin) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (origin.starts_with(scheme)) {
      std::string_view rest = origin.substr(scheme.size());
      return rest.substr(0, rest.find('/'));
    }
  }
  return {};
}

bool DefaultPort(std::string_view origin, std::string_view authority_port) {
  return authority_port.empty() ||
         (origin.starts_with("http://") && authority_port == "80") ||
         (origin.starts_with("https://") && authority_port == "443");
}

std::string_view PortOf(std::string_view authority) {
  const size_t bracket = authority.rfind(']');
  const size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos) return {};
  if (bracket != std::string_view::npos && colon < bracket) return {};
  if (bracket == std::string_view::npos && authority.find(':') != colon) return {};  // bare IPv6
  return authority.substr(colon + 1);
}

}  // namespace

std::string HostName(std::string_view authority) {
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    return AsciiLower(authority.substr(1, close == std::string_view::npos ? std::string_view::npos
                                                                      : close - 1));
  }
  const size_t colon = authority.find(':');
  if (colon != std::string_view::npos && authority.find(':', colon + 1) != std::string_view::npos) {
    return AsciiLower(authority);  // a bare IPv6 address
  }
  return AsciiLower(authority.substr(0, colon));
}

bool HostAllowed(std::string_view host_header, const CrossSitePolicy& policy) {
  if (host_header.empty()) return true;
  const std::string host = HostName(host_header);
  if (host.empty()) return false;
  if (host == "localhost" || host.ends_with(".localhost") || IsIpLiteral(host)) return true;
  if (host == HostName(policy.bind_host) || host == MachineName()) return true;
  return std::any_of(policy.allowed_hosts.begin(), policy.allowed_hosts.end(),
                     [&](const std::string& p) { return Matches(host, p); });
}

bool CorsAllowed(std::string_view origin, const CrossSitePolicy& policy) {
  if (origin.empty()) return false;
  return std::any_of(policy.cors_origins.begin(), policy.cors_origins.end(),
                     [&](const std::string& o) { return o == "*" || o == origin; });
}

bool OriginMayWrite(std::string_view origin, std::string_view host_header,
                    const CrossSitePolicy& policy) {
  if (origin.empty()) return true;
  if (CorsAllowed(origin, policy)) return true;
  const std::string_view authority = OriginAuthority(origin);
  if (authority.empty() || host_header.empty()) return false;  // "null", file:, no Host
  if (HostName(authority) != HostName(host_header)) return false;
  const std::string_view a = PortOf(authority), b = PortOf(host_header);
  return a == b || (DefaultPort(origin, a) && DefaultPort(origin, b));
}

}  // namespace cairn::server
