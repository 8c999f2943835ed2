// Cron expressions, for schedules: when a command runs on its own.
//
// Five fields, minute (0-59), hour (0-23), day of the month (1-31), month (1-12 or jan-dec)
// and day of the week (0-7 or sun-sat, 0 and 7 both Sunday), each `*`, a number, a range
// `a-b`, a step `*/n` or `a-b/n` or `a/n` (from a to the field's end), or a list of these
// joined by commas. Or one of @yearly (@annually), @monthly, @weekly, @daily (@midnight) and
// @hourly. As in Vixie cron, when both day fields are restricted a day that matches either
// one fires. Times are UTC.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

namespace cairn::core {

struct CronSchedule {
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> days;     // 1..31
  std::bitset<13> months;   // 1..12
  std::bitset<7> weekdays;  // 0 (Sunday)..6
  bool any_day = true;      // the day-of-month field was `*`
  bool any_weekday = true;  // the day-of-week field was `*`
};

// InvalidArgument naming the field and what is wrong with it.
Result<CronSchedule> ParseCron(std::string_view text);

// Whether the schedule fires in the minute that starts at `minute_ms` (UTC, epoch ms).
bool CronMatches(const CronSchedule& schedule, int64_t minute_ms);

// The start of the first minute after `after_ms` (epoch ms) in which the schedule fires;
// nullopt when it never does (the 30th of February) within the next eight years.
std::optional<int64_t> NextCronFiring(const CronSchedule& schedule, int64_t after_ms);

}  // namespace cairn::core
