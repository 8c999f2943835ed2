// Time as the services see it. Production uses the system clock; tests inject a FakeClock so
// that timestamps are deterministic and nothing sleeps.
#pragma once

#include <atomic>
#include <cstdint>

namespace cairn {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMillis() = 0;
};

Clock* SystemClock();

class FakeClock : public Clock {
 public:
  explicit FakeClock(int64_t start_millis) : now_(start_millis) {}
  int64_t NowMillis() override { return now_.load(); }
  void Advance(int64_t millis) { now_ += millis; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace cairn
