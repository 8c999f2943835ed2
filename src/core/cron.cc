#include "core/cron.h"

#include <array>
#include <charconv>
#include <ctime>
#include <vector>

namespace cairn::core {
namespace {

constexpr int64_t kMinuteMs = 60'000;
constexpr int64_t kDayMs = 24 * 60 * kMinuteMs;

struct Field {
  const char* name;
  int low;
  int high;
  const std::array<const char*, 12>* names;  // names for low.. (months from 1, days from 0)
};

constexpr std::array<const char*, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<const char*, 12> kDayNames = {
    "sun", "mon", "tue", "wed", "thu", "fri", "sat", nullptr, nullptr, nullptr, nullptr, nullptr};

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t at = text.find(sep, start);
    out.push_back(
        text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

Result<int> Value(std::string_view text, const Field& f) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) {
    if (v < f.low || v > f.high) {
      return InvalidArgument(std::string("cron ") + f.name + ": " + std::string(text) +
                             " is outside " + std::to_string(f.low) + "-" + std::to_string(f.high));
    }
    return v;
  }
  if (f.names != nullptr) {
    const std::string name = Lower(text);
    for (size_t i = 0; i < f.names->size(); ++i) {
      if ((*f.names)[i] != nullptr && name == (*f.names)[i]) {
        return static_cast<int>(i) + (f.low == 1 ? 1 : 0);
      }
    }
  }
  return InvalidArgument(std::string("cron ") + f.name + ": '" + std::string(text) +
                         "' is not a number" + (f.names != nullptr ? " or a name" : ""));
}

// Sets the values `text` names in `bits` (indexed by value).
template <size_t N>
Status ParseField(std::string_view text, const Field& f, std::bitset<N>* bits) {
  if (text.empty()) return InvalidArgument(std::string("cron ") + f.name + " is empty");
  for (std::string_view part : Split(text, ',')) {
    int step = 1;
    if (const size_t slash = part.find('/'); slash != std::string_view::npos) {
      const std::string_view s = part.substr(slash + 1);
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
      if (ec != std::errc() || end != s.data() + s.size() || s.empty() || step < 1 ||
          step > f.high) {
        return InvalidArgument(std::string("cron ") + f.name + ": bad step '" + std::string(s) +
                               "'");
      }
      part = part.substr(0, slash);
    }
    int from = f.low, to = f.high;
    if (part != "*") {
      const size_t dash = part.find('-');
      CAIRN_ASSIGN_OR_RETURN(from, Value(part.substr(0, dash), f));
      if (dash != std::string_view::npos) {
        CAIRN_ASSIGN_OR_RETURN(to, Value(part.substr(dash + 1), f));
      } else if (step == 1) {
        to = from;
      }
      if (from > to) {
        return InvalidArgument(std::string("cron ") + f.name + ": the range " + std::string(part) +
                               " runs backwards");
      }
    }
    for (int v = from; v <= to; v += step) bits->set(static_cast<size_t>(v));
  }
  return Status::Ok();
}

std::string Macro(std::string_view text) {
  if (text == "@yearly" || text == "@annually") return "0 0 1 1 *";
  if (text == "@monthly") return "0 0 1 * *";
  if (text == "@weekly") return "0 0 * * 0";
  if (text == "@daily" || text == "@midnight") return "0 0 * * *";
  if (text == "@hourly") return "0 * * * *";
  return "";
}

struct Civil {
  int minute, hour, day, month, weekday;  // month 1..12, weekday 0 = Sunday
};

Civil ToCivil(int64_t ms) {
  const time_t t = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  gmtime_r(&t, &tm);
  return {tm.tm_min, tm.tm_hour, tm.tm_mday, tm.tm_mon + 1, tm.tm_wday};
}

bool DayMatches(const CronSchedule& s, const Civil& c) {
  const bool dom = s.days.test(static_cast<size_t>(c.day));
  const bool dow = s.weekdays.test(static_cast<size_t>(c.weekday));
  if (s.any_day && s.any_weekday) return true;
  if (s.any_day) return dow;
  if (s.any_weekday) return dom;
  return dom || dow;
}

}  // namespace

Result<CronSchedule> ParseCron(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  std::string expanded(text);
  if (text.starts_with('@')) {
    expanded = Macro(Lower(text));
    if (expanded.empty()) {
      return InvalidArgument("cron: unknown macro '" + std::string(text) +
                             "' (@yearly, @monthly, @weekly, @daily or @hourly)");
    }
  }
  std::vector<std::string_view> fields;
  for (std::string_view f : Split(expanded, ' ')) {
    if (!f.empty()) fields.push_back(f);
  }
  if (fields.size() != 5) {
    return InvalidArgument("cron: expected 5 fields (minute hour day month weekday), got " +
                           std::to_string(fields.size()));
  }
  static const Field kMinute{"minute", 0, 59, nullptr};
  static const Field kHour{"hour", 0, 23, nullptr};
  static const Field kDay{"day of the month", 1, 31, nullptr};
  static const Field kMonth{"month", 1, 12, &kMonthNames};
  static const Field kWeekday{"day of the week", 0, 7, &kDayNames};
  CronSchedule s;
  CAIRN_RETURN_IF_ERROR(ParseField(fields[0], kMinute, &s.minutes));
  CAIRN_RETURN_IF_ERROR(ParseField(fields[1], kHour, &s.hours));
  CAIRN_RETURN_IF_ERROR(ParseField(fields[2], kDay, &s.days));
  CAIRN_RETURN_IF_ERROR(ParseField(fields[3], kMonth, &s.months));
  std::bitset<8> weekdays;
  CAIRN_RETURN_IF_ERROR(ParseField(fields[4], kWeekday, &weekdays));
  for (size_t d = 0; d < 7; ++d) s.weekdays.set(d, weekdays.test(d));
  if (weekdays.test(7)) s.weekdays.set(0);  // 7 is Sunday too
  s.any_day = fields[2] == "*";
  s.any_weekday = fields[4] == "*";
  return s;
}

bool CronMatches(const CronSchedule& s, int64_t minute_ms) {
  const Civil c = ToCivil(minute_ms);
  return s.minutes.test(static_cast<size_t>(c.minute)) &&
         s.hours.test(static_cast<size_t>(c.hour)) && s.months.test(static_cast<size_t>(c.month)) &&
         DayMatches(s, c);
}

std::optional<int64_t> NextCronFiring(const CronSchedule& s, int64_t after_ms) {
  // The next whole minute, then whole days, hours and minutes skipped while they cannot match.
  int64_t t =
      (after_ms >= 0 ? after_ms / kMinuteMs : (after_ms - kMinuteMs + 1) / kMinuteMs) * kMinuteMs +
      kMinuteMs;
  const int64_t limit = t + 8 * 366 * kDayMs;
  while (t < limit) {
    const Civil c = ToCivil(t);
    const int64_t day_start = t - (c.hour * 60 + c.minute) * kMinuteMs;
    if (!s.months.test(static_cast<size_t>(c.month)) || !DayMatches(s, c)) {
      t = day_start + kDayMs;
      continue;
    }
    if (!s.hours.test(static_cast<size_t>(c.hour))) {
      t = day_start + (c.hour + 1) * 60 * kMinuteMs;
      continue;
    }
    if (!s.minutes.test(static_cast<size_t>(c.minute))) {
      t += kMinuteMs;
      continue;
    }
    return t;
  }
  return std::nullopt;
}

}  // namespace cairn::core
