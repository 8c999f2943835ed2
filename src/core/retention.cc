#include "core/retention.h"

#include <charconv>

#include "util/json_reader.h"
#include "util/json_writer.h"

namespace cairn::core {
namespace {

// '*' and '?' within one segment.
bool SegmentMatches(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == s[si])) {
      ++pi;
      ++si;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

std::vector<std::string_view> Segments(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t slash = s.find('/', start);
    out.push_back(s.substr(start, slash - start));
    if (slash == std::string_view::npos) return out;
    start = slash + 1;
  }
}

bool Match(const std::vector<std::string_view>& p, size_t pi,
           const std::vector<std::string_view>& s, size_t si) {
  if (pi == p.size()) return si == s.size();
  if (p[pi] == "**") {
    for (size_t k = si; k <= s.size(); ++k) {
      if (Match(p, pi + 1, s, k)) return true;
    }
    return false;
  }
  return si < s.size() && SegmentMatches(p[pi], s[si]) && Match(p, pi + 1, s, si + 1);
}

std::string AgeText(int64_t ms) {
  if (ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace

bool GlobMatches(std::string_view pattern, std::string_view path) {
  return Match(Segments(pattern), 0, Segments(path), 0);
}

std::string RetentionUnit(std::string_view pattern, std::string_view path) {
  size_t end = 0;
  for (;;) {
    end = path.find('/', end);
    const std::string_view prefix = path.substr(0, end);
    if (GlobMatches(pattern, prefix)) return std::string(prefix);
    if (end == std::string_view::npos) return "";
    ++end;
  }
}

bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      std::string_view x = a.substr(i, ie - i), y = b.substr(j, je - j);
      while (x.size() > 1 && x[0] == '0') x.remove_prefix(1);
      while (y.size() > 1 && y[0] == '0') y.remove_prefix(1);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;  // "007" and "7": a stable order all the same
}

Result<int64_t> ParseRetentionAge(std::string_view text) {
  auto bad = [&] {
    return InvalidArgument("'" + std::string(text) +
                           "' is not an age: use a number with d, h, m, s or ms (90d)");
  };
  size_t n = 0;
  while (n < text.size() && text[n] >= '0' && text[n] <= '9') ++n;
  if (n == 0 || n > 12) return bad();
  int64_t value = 0;
  std::from_chars(text.data(), text.data() + n, value);
  const std::string_view unit = text.substr(n);
  int64_t scale = 0;
  if (unit == "d") scale = 86'400'000;
  if (unit == "h") scale = 3'600'000;
  if (unit == "m") scale = 60'000;
  if (unit == "s") scale = 1000;
  if (unit == "ms") scale = 1;
  if (scale == 0) return bad();
  return value * scale;
}

std::string RetentionRule::Text() const {
  JsonWriter w;
  w.BeginObject();
  switch (kind) {
    case RetentionKind::kKeepLast:
      w.Key("keep_last").Int(count);
      break;
    case RetentionKind::kKeepBest:
      w.Key("keep_best").Int(count).Key("by").String("metrics." + metric);
      w.Key("order").String(lower_is_better ? "min" : "max");
      break;
    case RetentionKind::kMaxAge:
      w.Key("max_age").String(AgeText(age_ms));
      if (!status.empty()) w.Key("status").String(status);
      break;
    case RetentionKind::kPurgeDeleted:
      w.Key("purge_deleted_after").String(AgeText(age_ms));
      break;
  }
  if (kind != RetentionKind::kPurgeDeleted) w.Key("artifacts").String(artifacts);
  w.EndObject();
  return w.Take();
}

Result<std::vector<RetentionRule>> ParseRetentionRules(std::string_view json) {
  Result<JsonDocument> doc = JsonDocument::Parse(json, 8);
  if (!doc.ok()) return InvalidArgument("retention rules are not JSON: " + doc.status().message());
  const JsonValue root = doc->root();
  if (!root.is_array()) return InvalidArgument("retention rules must be a JSON list");
  std::vector<RetentionRule> rules;
  size_t index = 0;
  for (JsonValue item : root) {
    const std::string at = "retention rule " + std::to_string(index++) + ": ";
    if (!item.is_object()) return InvalidArgument(at + "must be an object");
    RetentionRule r;
    int kinds = 0;
    for (auto it = item.begin(); it != item.end(); ++it) {
      const std::string_view key = it.key();
      const JsonValue v = *it;
      auto count = [&]() -> Status {
        if (!v.is_int() || v.int_value() < 0)
          return InvalidArgument(at + std::string(key) + " takes a count from 0");
        r.count = v.int_value();
        ++kinds;
        return Status::Ok();
      };
      auto age = [&]() -> Status {
        if (!v.is_string()) return InvalidArgument(at + std::string(key) + " takes an age (90d)");
        Result<int64_t> ms = ParseRetentionAge(v.str());
        if (!ms.ok()) return InvalidArgument(at + ms.status().message());
        r.age_ms = *ms;
        ++kinds;
        return Status::Ok();
      };
      auto text = [&](std::string* out) -> Status {
        if (!v.is_string()) return InvalidArgument(at + std::string(key) + " takes a string");
        *out = std::string(v.str());
        return Status::Ok();
      };
      if (key == "keep_last") {
        r.kind = RetentionKind::kKeepLast;
        CAIRN_RETURN_IF_ERROR(count());
      } else if (key == "keep_best") {
        r.kind = RetentionKind::kKeepBest;
        CAIRN_RETURN_IF_ERROR(count());
      } else if (key == "max_age") {
        r.kind = RetentionKind::kMaxAge;
        CAIRN_RETURN_IF_ERROR(age());
      } else if (key == "purge_deleted_after") {
        r.kind = RetentionKind::kPurgeDeleted;
        CAIRN_RETURN_IF_ERROR(age());
      } else if (key == "artifacts") {
        CAIRN_RETURN_IF_ERROR(text(&r.artifacts));
        if (r.artifacts.empty() || r.artifacts.starts_with('/')) {
          return InvalidArgument(at + "artifacts is a pattern of paths under a run's root");
        }
      } else if (key == "by") {
        CAIRN_RETURN_IF_ERROR(text(&r.metric));
        if (r.metric.starts_with("metrics.")) r.metric = r.metric.substr(8);
        if (r.metric.empty()) return InvalidArgument(at + "by names a metric: metrics.KEY");
      } else if (key == "order") {
        std::string order;
        CAIRN_RETURN_IF_ERROR(text(&order));
        if (order != "min" && order != "max") {
          return InvalidArgument(at + "order is min (lower is better) or max");
        }
        r.lower_is_better = order == "min";
      } else if (key == "status") {
        CAIRN_RETURN_IF_ERROR(text(&r.status));
        if (r.status != "FINISHED" && r.status != "FAILED" && r.status != "KILLED") {
          return InvalidArgument(at + "status is FINISHED, FAILED or KILLED");
        }
      } else {
        return InvalidArgument(at + "unknown field '" + std::string(key) + "'");
      }
    }
    if (kinds != 1) {
      return InvalidArgument(at +
                             "give exactly one of keep_last, keep_best, max_age and "
                             "purge_deleted_after");
    }
    if (r.kind == RetentionKind::kKeepBest && r.metric.empty()) {
      return InvalidArgument(at + "keep_best needs by: metrics.KEY");
    }
    if (r.kind != RetentionKind::kKeepBest && (!r.metric.empty())) {
      return InvalidArgument(at + "by goes with keep_best only");
    }
    if (r.kind != RetentionKind::kMaxAge && !r.status.empty()) {
      return InvalidArgument(at + "status goes with max_age only");
    }
    rules.push_back(std::move(r));
  }
  return rules;
}

}  // namespace cairn::core
