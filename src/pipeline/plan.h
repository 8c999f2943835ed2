// Plan: which steps of a pipeline can start now (ninja's Plan).
//
// The plan tracks each step's state and the resources running steps hold. A step is ready
// when every step it needs has completed (run or restored from the cache); it may start when
// it also fits the budget: at most `jobs` steps at once, and the cpus, memory and GPUs of the
// running steps within the machine's (or the cluster's) share. A failed step fails nothing
// else directly, but the steps that need it, and the steps that need those, can never run:
// they are marked skipped. The plan does no I/O and knows no clock; the Builder drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/spec.h"

namespace cairn::pipeline {

enum class StepState {
  kWaiting,    // for the steps it needs
  kRunning,    // started (or waiting to be retried)
  kDone,       // ran and succeeded
  kCached,     // restored from the cache (or from the run being resumed)
  kFailed,     // ran out of attempts, or timed out on the last one
  kSkipped,    // a step it needs failed or was cancelled
  kCancelled,  // stopped by the user (Ctrl-C) before it completed
};

// "waiting", "running", "done", "cached", "failed", "skipped", "cancelled".
const char* StepStateName(StepState state);
// Done or cached: what later steps may use.
inline bool Completed(StepState s) { return s == StepState::kDone || s == StepState::kCached; }
// No further change will come.
inline bool Final(StepState s) { return s != StepState::kWaiting && s != StepState::kRunning; }

struct Budget {
  int jobs = 1;            // steps at once
  double cpus = 1;         // cpus of all running steps
  int64_t memory_mib = 0;  // 0: not limited
  int gpus = 0;
};

class Plan {
 public:
  // `pipeline` must outlive the plan. Steps that ask for more cpus than the whole budget are
  // given the whole budget (as snakemake scales threads to --cores); steps that ask for more
  // memory or GPUs than the budget can never run here: CheckBudget says so beforehand.
  Plan(const Pipeline& pipeline, const Budget& budget);

  // Problems that keep steps from ever running within the budget ("train needs 1 GPU; the
  // budget has 0"), one per step.
  static std::vector<std::string> CheckBudget(const Pipeline& pipeline, const Budget& budget);

  // The steps that may start now, in pipeline order; they become kRunning and hold their
  // resources until Finish.
  std::vector<size_t> TakeReady();
  // A step that is known to be complete before it starts (resumed, or found in the cache by
  // the builder after TakeReady): completes it.
  void Finish(size_t step, StepState outcome);

  StepState state(size_t step) const { return states_[step]; }
  const std::vector<StepState>& states() const { return states_; }
  // The cpus the step is given (its request capped at the budget).
  double cpus(size_t step) const;
  size_t running() const { return running_; }
  // True when no step is running and none can start: the pipeline is over.
  bool Over() const;
  // Marks every step that has not completed and is not running as cancelled (Ctrl-C).
  void CancelWaiting();
  // A running step waiting out a retry's backoff: it gives back its resources meanwhile, and
  // takes them again with Resume, which is false while they do not fit.
  void Pause(size_t step);
  bool Resume(size_t step);

 private:
  bool Fits(size_t step) const;
  // Adds (+1) or removes (-1) a step's resources from what running steps hold.
  void Hold(size_t step, int sign);

  const Pipeline& pipeline_;
  Budget budget_;
  std::vector<StepState> states_;
  std::vector<size_t> unmet_;               // deps not yet completed
  std::vector<std::vector<size_t>> users_;  // steps that need each step
  std::vector<bool> paused_;                // running steps holding no resources (Pause)
  size_t running_ = 0;
  double cpus_used_ = 0;
  int64_t memory_used_ = 0;
  int gpus_used_ = 0;
};

}  // namespace cairn::pipeline
