#include "server/range.h"
#include "util/strings.h"

#include <optional>
#include <vector>

namespace cairn::server {
namespace {

// More ranges than this in one header is an attack or a mistake, never a download.
constexpr size_t kMaxRanges = 100;

struct Spec {
  std::optional<int64_t> first;  // absent for a suffix range "-N"
  std::optional<int64_t> last;   // absent for an open range "N-"
};

// Decimal digits only; values past int64 saturate (a range past any representation).
std::optional<int64_t> ParseCount(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  constexpr int64_t kMax = INT64_MAX / 10 - 10;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v >= kMax ? kMax : v * 10 + (c - '0');
  }
  return v;
}

std::optional<Spec> ParseSpec(std::string_view s) {
  s = Trim(s);
  const size_t dash = s.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  Spec spec;
  std::string_view a = s.substr(0, dash), b = s.substr(dash + 1);
  if (!a.empty()) {
    spec.first = ParseCount(a);
    if (!spec.first) return std::nullopt;
  }
  if (!b.empty()) {
    spec.last = ParseCount(b);
    if (!spec.last) return std::nullopt;
  }
  if (!spec.first && !spec.last) return std::nullopt;               // "-"
  if (spec.first && spec.last && *spec.last < *spec.first) return std::nullopt;  // inverted
  return spec;
}


}  // namespace

std::string RangeDecision::ContentRange(int64_t size) const {
  switch (kind) {
    case Kind::kWhole: return "";
    case Kind::kUnsatisfiable: return "bytes */" + std::to_string(size);
    case Kind::kPartial:
      return "bytes " + std::to_string(first) + "-" + std::to_string(first + length - 1) + "/" +
             std::to_string(size);
  }
  return "";
}

RangeDecision DecideRange(std::string_view header, int64_t size) {
  RangeDecision whole{RangeDecision::Kind::kWhole, 0, size < 0 ? 0 : size};
  if (header.empty() || size <= 0 || !StartsWithIgnoreCase(Trim(header), "bytes=")) return whole;
  std::string_view list = Trim(header).substr(6);
  std::vector<Spec> specs;
  while (true) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    if (!Trim(item).empty()) {  // RFC 9110 allows empty list elements
      std::optional<Spec> spec = ParseSpec(item);
      if (!spec || specs.size() == kMaxRanges) return whole;
      specs.push_back(*spec);
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  if (specs.size() != 1) return whole;
  const Spec& s = specs.front();
  RangeDecision out;
  if (!s.first) {  // the last N bytes
    if (*s.last == 0) return {RangeDecision::Kind::kUnsatisfiable, 0, 0};
    out.first = *s.last >= size ? 0 : size - *s.last;
  } else {
    if (*s.first >= size) return {RangeDecision::Kind::kUnsatisfiable, 0, 0};
    out.first = *s.first;
  }
  const int64_t last = s.first && s.last ? std::min(*s.last, size - 1) : size - 1;
  out.kind = RangeDecision::Kind::kPartial;
  out.length = last - out.first + 1;
  return out;
}

}  // namespace cairn::server
