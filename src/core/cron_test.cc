#include "core/cron.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ctime>

namespace cairn::core {
namespace {

using ::testing::HasSubstr;

// Epoch ms of a UTC time.
int64_t Utc(int year, int month, int day, int hour = 0, int minute = 0) {
  struct tm tm {};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

int64_t Next(const std::string& cron, int64_t after) {
  Result<CronSchedule> s = ParseCron(cron);
  EXPECT_TRUE(s.ok()) << cron << ": " << s.status().ToString();
  if (!s.ok()) return -1;
  std::optional<int64_t> next = NextCronFiring(*s, after);
  return next.value_or(-1);
}

TEST(CronTest, TheNextFiringIsTheFirstMatchingMinuteAfter) {
  const int64_t now = Utc(2026, 12, 6, 4, 20) + 30'000;  // a Sunday, 04:20:30
  EXPECT_EQ(Next("0 3 * * *", now), Utc(2026, 12, 7, 3, 0));
  EXPECT_EQ(Next("*/15 * * * *", now), Utc(2026, 12, 6, 4, 30));
  EXPECT_EQ(Next("20 4 * * *", now), Utc(2026, 12, 7, 4, 20)) << "strictly after";
  EXPECT_EQ(Next("21 4 * * *", Utc(2026, 12, 6, 4, 20)), Utc(2026, 12, 6, 4, 21));
  EXPECT_EQ(Next("0 0 1 * *", now), Utc(2027, 1, 1));
  EXPECT_EQ(Next("30 9 * * mon-fri", now), Utc(2026, 12, 7, 9, 30));
  EXPECT_EQ(Next("0 12 * dec sun", now), Utc(2026, 12, 6, 12, 0));
  EXPECT_EQ(Next("0 0 29 2 *", now), Utc(2028, 2, 29)) << "the next leap day";
  EXPECT_EQ(Next("@hourly", now), Utc(2026, 12, 6, 5, 0));
  EXPECT_EQ(Next("@weekly", now), Utc(2026, 12, 13));
  EXPECT_EQ(Next("@YEARLY", now), Utc(2027, 1, 1));
  EXPECT_EQ(Next("5,10-12/2 1 * * 7", now), Utc(2026, 12, 13, 1, 5)) << "7 is Sunday";
  EXPECT_EQ(Next("0 6/6 * * *", now), Utc(2026, 12, 6, 6, 0));
}

TEST(CronTest, BothDayFieldsRestrictedMeansEitherDay) {
  // The 13th, or any Friday: from Sunday 2026-12-06, Friday the 11th comes first.
  EXPECT_EQ(Next("0 0 13 * fri", Utc(2026, 12, 6)), Utc(2026, 12, 11));
  EXPECT_EQ(Next("0 0 13 * fri", Utc(2026, 12, 11, 1)), Utc(2026, 12, 13));
}

TEST(CronTest, AScheduleThatNeverFiresHasNoNextFiring) {
  Result<CronSchedule> s = ParseCron("0 0 30 2 *");
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(NextCronFiring(*s, Utc(2026, 12, 6)).has_value());
}

TEST(CronTest, MatchingIsPerMinute) {
  Result<CronSchedule> s = ParseCron("15 10 * * *");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(CronMatches(*s, Utc(2026, 12, 6, 10, 15)));
  EXPECT_FALSE(CronMatches(*s, Utc(2026, 12, 6, 10, 16)));
}

TEST(CronTest, MistakesAreNamed) {
  const std::pair<const char*, const char*> bad[] = {
      {"* * * *", "expected 5 fields"},
      {"60 * * * *", "minute: 60 is outside 0-59"},
      {"* 24 * * *", "hour: 24 is outside 0-23"},
      {"* * 0 * *", "day of the month: 0 is outside 1-31"},
      {"* * * 13 *", "month: 13 is outside 1-12"},
      {"* * * * 8", "day of the week: 8 is outside 0-7"},
      {"* * * foo *", "month: 'foo' is not a number or a name"},
      {"*/0 * * * *", "minute: bad step '0'"},
      {"*/x * * * *", "bad step 'x'"},
      {"10-5 * * * *", "the range 10-5 runs backwards"},
      {"1,,2 * * * *", "minute: '' is not a number"},
      {"@sometimes", "unknown macro '@sometimes'"},
      {"", "expected 5 fields"},
  };
  for (const auto& [text, message] : bad) {
    Result<CronSchedule> s = ParseCron(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(s.status().message(), HasSubstr(message)) << text;
  }
}

}  // namespace
}  // namespace cairn::core
