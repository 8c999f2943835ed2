#include "util/clock.h"

#include <chrono>

namespace cairn {
namespace {

class RealClock : public Clock {
 public:
  int64_t NowMillis() override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

Clock* SystemClock() {
  static RealClock clock;
  return &clock;
}

}  // namespace cairn
