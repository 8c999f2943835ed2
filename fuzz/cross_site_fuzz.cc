// Fuzz target for the Host and Origin checks (server/cross_site.h): any header text, split at
// the first newline into a Host and an Origin, is judged without crashing, and a write the
// checks allow from a foreign origin must be one --cors-origins or the Host itself allows.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/cross_site.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nl = in.find('\n');
  const std::string_view host = in.substr(0, nl);
  const std::string_view origin = nl == std::string_view::npos ? "" : in.substr(nl + 1);
  cairn::server::CrossSitePolicy policy{"127.0.0.1", {"*.lab.example"}, {}};
  (void)cairn::server::HostName(host);
  (void)cairn::server::HostAllowed(host, policy);
  const bool may_write = cairn::server::OriginMayWrite(origin, host, policy);
  // With no CORS origins, an origin may write only when it names the Host's own host (names
  // compare without regard to case).
  std::string lower(origin);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (may_write && !origin.empty() &&
      lower.find(cairn::server::HostName(host)) == std::string::npos) {
    std::abort();
  }
  return 0;
}
