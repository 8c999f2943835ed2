#include "server/http_message.h"

#include "util/strings.h"

namespace cairn::server {

const std::string* HttpHeaders::Find(std::string_view name) const {
  for (const auto& [n, v] : fields_) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void ParseQuery(std::string_view q, QueryParams* out) {
  while (!q.empty()) {
    const size_t amp = q.find('&');
    std::string_view item = q.substr(0, amp);
    if (!item.empty()) {
      const size_t eq = item.find('=');
      std::string key = PercentDecode(item.substr(0, eq), true);
      std::string value =
          eq == std::string_view::npos ? std::string() : PercentDecode(item.substr(eq + 1), true);
      out->emplace(std::move(key), std::move(value));
    }
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
}

}  // namespace cairn::server
