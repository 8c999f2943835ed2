// A Clock for tests: starts where it is told and moves only when advanced, so timestamps are
// deterministic and nothing sleeps.
#pragma once

#include <atomic>
#include <cstdint>

#include "util/clock.h"

namespace cairn::fakes {

class FakeClock : public Clock {
 public:
  explicit FakeClock(int64_t start_millis) : now_(start_millis) {}
  int64_t NowMillis() override { return now_.load(); }
  void Advance(int64_t millis) { now_ += millis; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace cairn::fakes
