// Fuzz target for cron expressions: any text parses or is refused without crashing, and a
// schedule's next firing is a minute after the start that the schedule matches.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/cron.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  // The first four bytes choose the start: a minute within about 8,000 years of 1970.
  uint32_t start_minutes = 0;
  std::memcpy(&start_minutes, data, 4);
  const int64_t after = static_cast<int64_t>(start_minutes) * 60'000 + 17'000;
  std::string_view text(reinterpret_cast<const char*>(data + 4), size - 4);
  cairn::Result<cairn::core::CronSchedule> s = cairn::core::ParseCron(text);
  if (!s.ok()) return 0;
  std::optional<int64_t> next = cairn::core::NextCronFiring(*s, after);
  if (!next) return 0;
  if (*next <= after || *next % 60'000 != 0 || !cairn::core::CronMatches(*s, *next)) std::abort();
  return 0;
}
