#include "pipeline/builder.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace cairn::pipeline {
namespace {

// How often an interrupt is looked for while steps run.
constexpr int64_t kInterruptPollMs = 100;

struct Active {
  StepJob job;
  int64_t deadline = 0;  // the timeout's, or 0
  bool timed_out = false;
};

struct Retry {
  int64_t at = 0;
  int attempt = 0;
};

class Loop {
 public:
  Loop(const Pipeline& pipeline, Executor& executor, StepHooks& hooks, const BuildOptions& options)
      : pipeline_(pipeline),
        executor_(executor),
        hooks_(hooks),
        options_(options),
        plan_(pipeline, options.budget) {}

  Result<BuildResult> Run() {
    for (;;) {
      if (!stopping_ && options_.interrupted != nullptr && options_.interrupted->load()) Stop();
      if (!stopping_) StartWhatIsReady();
      if (active_.empty() && retries_.empty() && awaiting_.empty()) {
        if (plan_.Over() || stopping_) break;
        continue;
      }
      int64_t now = executor_.clock().NowMillis();
      int64_t deadline = now + kInterruptPollMs;
      for (const auto& [step, a] : active_) {
        if (a.deadline > 0 && !a.timed_out) deadline = std::min(deadline, a.deadline);
      }
      // A retry that is due but does not fit the budget waits for a step to end.
      for (const auto& [step, r] : retries_) {
        if (r.at > now) deadline = std::min(deadline, r.at);
      }
      hooks_.BeforeWait();
      CAIRN_ASSIGN_OR_RETURN(std::optional<JobResult> result, executor_.Wait(deadline));
      if (result) Ended(*result);
      now = executor_.clock().NowMillis();
      for (auto& [step, a] : active_) {
        if (a.deadline > 0 && !a.timed_out && now >= a.deadline) {
          a.timed_out = true;
          executor_.Kill(step);
        }
      }
    }
    BuildResult out;
    out.states = plan_.states();
    out.interrupted = stopping_;
    return out;
  }

 private:
  void StartWhatIsReady() {
    // Retries whose backoff is over first, as far as the budget allows; while one waits for
    // room, nothing new starts, so that smaller steps do not keep taking it.
    const int64_t now = executor_.clock().NowMillis();
    bool retry_waits = false;
    for (auto it = retries_.begin(); it != retries_.end();) {
      if (it->second.at > now) {
        ++it;
        continue;
      }
      if (!plan_.Resume(it->first)) {
        retry_waits = true;
        ++it;
        continue;
      }
      const size_t step = it->first;
      const int attempt = it->second.attempt;
      it = retries_.erase(it);
      StartAttempt(step, attempt);
    }
    if (retry_waits) return;
    // Steps waiting for approval: those approved start as the budget allows.
    for (auto it = awaiting_.begin(); it != awaiting_.end();) {
      const size_t step = *it;
      const ApprovalState approval = hooks_.Approve(step);
      if (approval.decision == ApprovalState::kWaiting ||
          (approval.decision == ApprovalState::kApproved && !plan_.Resume(step))) {
        ++it;
        continue;
      }
      it = awaiting_.erase(it);
      if (approval.decision == ApprovalState::kRejected) {
        Finish(step, StepState::kFailed, approval.reason);
      } else {
        StartAttempt(step, 1);
      }
    }
    // Reused steps complete at once and may make others ready: go round until none is.
    for (bool again = true; again;) {
      again = false;
      for (size_t step : plan_.TakeReady()) {
        Result<bool> reuse = hooks_.Reuse(step);
        if (!reuse.ok()) {
          Finish(step, StepState::kFailed, reuse.status().message());
          continue;
        }
        if (*reuse) {
          Finish(step, StepState::kCached, "");
          again = true;
          continue;
        }
        const ApprovalState approval = hooks_.Approve(step);
        if (approval.decision == ApprovalState::kRejected) {
          Finish(step, StepState::kFailed, approval.reason);
        } else if (approval.decision == ApprovalState::kWaiting) {
          plan_.Pause(step);  // its resources are free while it waits, for others now
          awaiting_.insert(step);
          again = true;
        } else {
          StartAttempt(step, 1);
        }
      }
    }
  }

  void StartAttempt(size_t step, int attempt) {
    const Step& s = pipeline_.steps[step];
    Active a;
    a.job.step = step;
    a.job.attempt = attempt;
    a.job.id = s.id;
    a.job.command = s.command;
    a.job.cwd = options_.cwd;
    a.job.env = s.variables;
    a.job.env["CAIRN_PIPELINE_STEP"] = s.id;
    a.job.env["CAIRN_STEP_ATTEMPT"] = std::to_string(attempt);
    a.job.log_path = options_.log_dir + "/" + LogFileName(s.id);
    a.job.resources = s.resources;
    a.job.cpus = plan_.cpus(step);
    a.job.timeout_ms = s.timeout_ms;
    hooks_.Prepare(&a.job);
    const int64_t now = executor_.clock().NowMillis();
    if (s.timeout_ms > 0) a.deadline = now + s.timeout_ms;
    Status started = executor_.Start(a.job);
    if (!started.ok()) {
      JobResult r;
      r.step = step;
      r.exit_code = -1;
      r.error = started.message();
      active_.emplace(step, std::move(a));
      Ended(r);
      return;
    }
    hooks_.AttemptStarted(a.job);
    active_.emplace(step, std::move(a));
  }

  void Ended(const JobResult& result) {
    auto it = active_.find(result.step);
    if (it == active_.end()) return;  // not ours (already handled)
    Active a = std::move(it->second);
    active_.erase(it);
    const Step& s = pipeline_.steps[result.step];
    std::string reason;
    if (!result.error.empty()) {
      reason = result.error;
    } else if (a.timed_out) {
      reason = "timed out after " + FormatSeconds(s.timeout_ms);
    } else if (stopping_ && !result.ok()) {
      reason = "interrupted";
    } else if (result.signaled) {
      reason = "killed by signal " + std::to_string(result.exit_code - 128);
    } else if (result.exit_code != 0) {
      reason = "exit code " + std::to_string(result.exit_code);
    } else if (Status done = hooks_.Succeeded(a.job); !done.ok()) {
      reason = done.message();
    }
    int64_t retry_in = -1;
    if (!reason.empty() && !stopping_ && a.job.attempt <= s.retries.limit) {
      retry_in = s.retries.backoff_ms;
      for (int k = 1; k < a.job.attempt && retry_in < (int64_t{1} << 40); ++k) retry_in *= 2;
    }
    hooks_.AttemptEnded(a.job, result, reason, retry_in);
    if (reason.empty()) {
      Finish(result.step, StepState::kDone, "");
    } else if (retry_in >= 0) {
      // Its resources are free for other steps during the backoff.
      plan_.Pause(result.step);
      retries_[result.step] = {executor_.clock().NowMillis() + retry_in, a.job.attempt + 1};
    } else {
      Finish(result.step, stopping_ ? StepState::kCancelled : StepState::kFailed, reason);
    }
  }

  void Finish(size_t step, StepState state, const std::string& reason) {
    std::vector<StepState> before = plan_.states();
    plan_.Finish(step, state);
    hooks_.StepEnded(step, state, reason);
    // Steps that can no longer run because of this one.
    for (size_t i = 0; i < before.size(); ++i) {
      if (before[i] != plan_.state(i) && i != step) {
        hooks_.StepEnded(i, plan_.state(i),
                         "needs " + pipeline_.steps[step].id + ", which " +
                             (state == StepState::kCancelled ? std::string("was cancelled")
                                                             : std::string("failed")));
      }
    }
  }

  void Stop() {
    stopping_ = true;
    for (const auto& [step, a] : active_) executor_.Kill(step);
    // Every step whose state this changes is told, the users of a cancelled retry included.
    const std::vector<StepState> before = plan_.states();
    std::map<size_t, Retry> retrying = std::exchange(retries_, {});
    const std::set<size_t> awaiting = std::exchange(awaiting_, {});
    plan_.CancelWaiting();
    for (const auto& [step, r] : retrying) plan_.Finish(step, StepState::kCancelled);
    for (size_t step : awaiting) plan_.Finish(step, StepState::kCancelled);
    for (size_t i = 0; i < before.size(); ++i) {
      if (before[i] == plan_.state(i)) continue;
      hooks_.StepEnded(i, plan_.state(i),
                       retrying.count(i) != 0   ? "interrupted before its retry"
                       : awaiting.count(i) != 0 ? "interrupted while waiting for approval"
                                                : "interrupted");
    }
  }

  static std::string FormatSeconds(int64_t ms) {
    if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
    return std::to_string(ms) + " ms";
  }

  const Pipeline& pipeline_;
  Executor& executor_;
  StepHooks& hooks_;
  const BuildOptions& options_;
  Plan plan_;
  std::map<size_t, Active> active_;
  std::map<size_t, Retry> retries_;
  std::set<size_t> awaiting_;  // steps waiting for approval (paused in the plan)
  bool stopping_ = false;
};

}  // namespace

bool BuildResult::ok() const {
  return std::all_of(states.begin(), states.end(), [](StepState s) { return Completed(s); });
}

std::string StepFileName(const std::string& step_id) {
  // '/' cannot be in a file name; '%' is escaped too so that no two ids share a name.
  std::string name;
  for (char c : step_id) {
    if (c == '%') {
      name += "%25";
    } else if (c == '/') {
      name += "%2F";
    } else {
      name += c;
    }
  }
  return name;
}

std::string LogFileName(const std::string& step_id) { return StepFileName(step_id) + ".log"; }

Result<BuildResult> RunPipeline(const Pipeline& pipeline, Executor& executor, StepHooks& hooks,
                                const BuildOptions& options) {
  Loop loop(pipeline, executor, hooks, options);
  return loop.Run();
}

}  // namespace cairn::pipeline
