// An Executor whose jobs take scripted time on a fake clock and end with scripted exit codes:
// nothing runs and nothing sleeps. Each step id has a script of attempts (a duration and an
// exit code, -1 for a job that cannot start); a step without one takes a second and exits 0.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"
#include "pipeline/executor.h"

namespace cairn::fakes {

class FakeExecutor : public pipeline::Executor {
 public:
  struct Attempt {
    int64_t duration_ms = 1000;
    int exit_code = 0;
  };
  struct Start {
    int64_t at;
    std::string id;
    int attempt;
  };

  FakeClock clock_{0};
  std::map<std::string, std::vector<Attempt>> script;  // per step id, per attempt
  std::vector<Start> starts;
  size_t max_parallel = 0;
  std::function<void(int64_t now)> on_wait;  // e.g. raise an interrupt at some time

  std::string name() const override { return "fake"; }
  Clock& clock() override { return clock_; }

  Status Start(const pipeline::StepJob& job) override {
    Attempt a;
    auto it = script.find(job.id);
    if (it != script.end() && !it->second.empty()) {
      a = it->second[std::min<size_t>(job.attempt - 1, it->second.size() - 1)];
    }
    if (a.exit_code == -1) return Unavailable("the fake refuses " + job.id);
    running_[job.step] = {clock_.NowMillis() + a.duration_ms, a.exit_code, false};
    starts.push_back({clock_.NowMillis(), job.id, job.attempt});
    max_parallel = std::max(max_parallel, running_.size());
    return Status::Ok();
  }

  Result<std::optional<pipeline::JobResult>> Wait(int64_t deadline_ms) override {
    if (on_wait) on_wait(clock_.NowMillis());
    auto first = running_.end();
    for (auto it = running_.begin(); it != running_.end(); ++it) {
      if (first == running_.end() || it->second.end < first->second.end) first = it;
    }
    if (first == running_.end() || first->second.end > deadline_ms) {
      if (deadline_ms > clock_.NowMillis()) clock_.Advance(deadline_ms - clock_.NowMillis());
      return std::optional<pipeline::JobResult>();
    }
    if (first->second.end > clock_.NowMillis()) {
      clock_.Advance(first->second.end - clock_.NowMillis());
    }
    pipeline::JobResult r;
    r.step = first->first;
    r.exit_code = first->second.killed ? 137 : first->second.exit_code;
    r.signaled = first->second.killed;
    running_.erase(first);
    return std::optional<pipeline::JobResult>(r);
  }

  void Kill(size_t step) override {
    auto it = running_.find(step);
    if (it == running_.end()) return;
    it->second.end = clock_.NowMillis();
    it->second.killed = true;
  }

 private:
  struct Running {
    int64_t end;
    int exit_code;
    bool killed;
  };
  std::map<size_t, Running> running_;
};

}  // namespace cairn::fakes
