// Time as the services see it. Production uses the system clock; tests inject a fake one
// (tests/fakes/fake_clock.h) so that timestamps are deterministic and nothing sleeps.
#pragma once

#include <cstdint>

namespace cairn {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMillis() = 0;
};

Clock* SystemClock();

}  // namespace cairn
