#include "pipeline/plan.h"

#include <algorithm>

namespace cairn::pipeline {

const char* StepStateName(StepState state) {
  switch (state) {
    case StepState::kWaiting:
      return "waiting";
    case StepState::kRunning:
      return "running";
    case StepState::kDone:
      return "done";
    case StepState::kCached:
      return "cached";
    case StepState::kFailed:
      return "failed";
    case StepState::kSkipped:
      return "skipped";
    case StepState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

Plan::Plan(const Pipeline& pipeline, const Budget& budget)
    : pipeline_(pipeline),
      budget_(budget),
      states_(pipeline.steps.size(), StepState::kWaiting),
      unmet_(pipeline.steps.size()),
      users_(pipeline.steps.size()),
      paused_(pipeline.steps.size(), false) {
  for (size_t i = 0; i < pipeline.steps.size(); ++i) {
    unmet_[i] = pipeline.steps[i].deps.size();
    for (size_t d : pipeline.steps[i].deps) users_[d].push_back(i);
  }
}

std::vector<std::string> Plan::CheckBudget(const Pipeline& pipeline, const Budget& budget) {
  std::vector<std::string> problems;
  for (const Step& s : pipeline.steps) {
    if (s.resources.gpus > budget.gpus) {
      problems.push_back(s.id + " needs " + std::to_string(s.resources.gpus) + " GPU" +
                         (s.resources.gpus == 1 ? "" : "s") + "; the budget has " +
                         std::to_string(budget.gpus));
    }
    if (budget.memory_mib > 0 && s.resources.memory_mib > budget.memory_mib) {
      problems.push_back(s.id + " needs " + std::to_string(s.resources.memory_mib) +
                         " MiB of memory; the budget has " + std::to_string(budget.memory_mib));
    }
  }
  return problems;
}

double Plan::cpus(size_t step) const {
  return std::min(pipeline_.steps[step].resources.cpus, budget_.cpus);
}

bool Plan::Fits(size_t step) const {
  const Resources& r = pipeline_.steps[step].resources;
  if (running_ >= static_cast<size_t>(std::max(1, budget_.jobs))) return false;
  // A step always fits an idle machine, so that nothing waits forever.
  if (running_ == 0) return true;
  if (cpus_used_ + cpus(step) > budget_.cpus + 1e-9) return false;
  if (budget_.memory_mib > 0 && memory_used_ + r.memory_mib > budget_.memory_mib) return false;
  if (gpus_used_ + r.gpus > budget_.gpus) return false;
  return true;
}

void Plan::Hold(size_t step, int sign) {
  running_ = sign > 0 ? running_ + 1 : running_ - 1;
  cpus_used_ += sign * cpus(step);
  memory_used_ += sign * pipeline_.steps[step].resources.memory_mib;
  gpus_used_ += sign * pipeline_.steps[step].resources.gpus;
}

std::vector<size_t> Plan::TakeReady() {
  std::vector<size_t> out;
  for (size_t i = 0; i < states_.size(); ++i) {
    if (states_[i] != StepState::kWaiting || unmet_[i] != 0 || !Fits(i)) continue;
    states_[i] = StepState::kRunning;
    Hold(i, +1);
    out.push_back(i);
  }
  return out;
}

void Plan::Pause(size_t step) {
  if (states_[step] != StepState::kRunning || paused_[step]) return;
  Hold(step, -1);
  paused_[step] = true;
}

bool Plan::Resume(size_t step) {
  if (!paused_[step]) return true;
  if (!Fits(step)) return false;
  Hold(step, +1);
  paused_[step] = false;
  return true;
}

void Plan::Finish(size_t step, StepState outcome) {
  if (states_[step] == StepState::kRunning && !paused_[step]) Hold(step, -1);
  paused_[step] = false;
  states_[step] = outcome;
  if (Completed(outcome)) {
    for (size_t u : users_[step]) --unmet_[u];
    return;
  }
  // Nothing that needs this step can run.
  std::vector<size_t> todo = users_[step];
  while (!todo.empty()) {
    size_t u = todo.back();
    todo.pop_back();
    if (states_[u] != StepState::kWaiting) continue;
    states_[u] = StepState::kSkipped;
    todo.insert(todo.end(), users_[u].begin(), users_[u].end());
  }
}

bool Plan::Over() const {
  if (running_ > 0) return false;
  for (bool paused : paused_) {
    if (paused) return false;  // a retry is due
  }
  for (size_t i = 0; i < states_.size(); ++i) {
    if (states_[i] == StepState::kWaiting && unmet_[i] == 0) return false;
  }
  return true;
}

void Plan::CancelWaiting() {
  for (StepState& s : states_) {
    if (s == StepState::kWaiting) s = StepState::kCancelled;
  }
}

}  // namespace cairn::pipeline
