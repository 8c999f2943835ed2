// Builder: the loop that runs a pipeline (ninja's Builder). It asks the Plan what may start,
// asks the hooks whether a step can be reused instead (the cache, or a run being resumed),
// starts the rest on the Executor, and waits; a failed attempt is retried after its backoff
// (doubling each time), a step past its timeout is killed (its whole process group) and
// counts as failed, and an interrupt (Ctrl-C) kills what runs and cancels what waits. Time is
// the executor's clock, so that tests run on a fake one without sleeping.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "pipeline/executor.h"
#include "pipeline/plan.h"
#include "pipeline/spec.h"

namespace cairn::pipeline {

// What happens around steps: the cache, the tracking store, the progress display. Every
// method is called from the builder's thread.
// Whether a step that must be approved may start (StepHooks::Approve).
struct ApprovalState {
  enum Decision { kApproved, kWaiting, kRejected };
  Decision decision = kApproved;
  std::string reason;  // for kRejected: who rejected it, and why
};

class StepHooks {
 public:
  virtual ~StepHooks() = default;
  // Before a ready step starts: true when it need not run (its outputs were restored from the
  // cache, or it completed in the run being resumed). An error fails the step.
  virtual Result<bool> Reuse(size_t step) { return false; }
  // Before a step that is not reused starts, and again while it waits (at the pace of the
  // builder's loop, every 100 ms or so): whether it may. A waiting step holds no resources
  // meanwhile; a rejected one fails, with the reason.
  virtual ApprovalState Approve(size_t step) { return {}; }
  // Before each attempt starts: may add to the job (environment variables).
  virtual void Prepare(StepJob* job) {}
  virtual void AttemptStarted(const StepJob& job) {}
  // After an attempt that exited 0 and within its time: e.g. collect the step's outputs. An
  // error makes the attempt a failure (a declared output that was not written).
  virtual Status Succeeded(const StepJob& job) { return Status::Ok(); }
  // Every attempt's end. `reason` says why it failed ("" when it succeeded); `retry_in_ms` is
  // when it will be tried again, or -1 when it will not.
  virtual void AttemptEnded(const StepJob& job, const JobResult& result, const std::string& reason,
                            int64_t retry_in_ms) {}
  // A step's final state, with the reason for failed, skipped and cancelled ones.
  virtual void StepEnded(size_t step, StepState state, const std::string& reason) {}
  // Before the builder waits for running steps, once whatever could start has started: the
  // place for bookkeeping that should not hold up the next step (writing cache entries while
  // its process starts).
  virtual void BeforeWait() {}
};

struct BuildOptions {
  Budget budget;
  std::string cwd;      // where commands run: the pipeline's directory
  std::string log_dir;  // <log_dir>/<step id>.log gets each step's output
  // Set (from a signal handler, say) to stop: running steps are killed, waiting ones
  // cancelled. Optional.
  const std::atomic<bool>* interrupted = nullptr;
};

struct BuildResult {
  std::vector<StepState> states;
  bool interrupted = false;
  bool ok() const;  // every step done or cached
};

// A step id as a file name, '/' and '%' escaped: "train[a/b]" -> "train[a%2Fb]".
std::string StepFileName(const std::string& step_id);
// The log file name of a step id: "train[a/b]" -> "train[a%2Fb].log".
std::string LogFileName(const std::string& step_id);

Result<BuildResult> RunPipeline(const Pipeline& pipeline, Executor& executor, StepHooks& hooks,
                                const BuildOptions& options);

}  // namespace cairn::pipeline
