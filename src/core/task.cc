#include "core/task.h"

namespace cairn::core {
namespace {

constexpr std::pair<TaskState, std::string_view> kStateNames[] = {
    {TaskState::kQueued, "queued"},       {TaskState::kRunning, "running"},
    {TaskState::kDone, "done"},           {TaskState::kFailed, "failed"},
    {TaskState::kCancelled, "cancelled"},
};

}  // namespace

std::string_view TaskStateName(TaskState state) {
  for (const auto& [s, name] : kStateNames) {
    if (s == state) return name;
  }
  return "queued";
}

bool ParseTaskState(std::string_view text, TaskState* out) {
  for (const auto& [s, name] : kStateNames) {
    if (name == text) {
      *out = s;
      return true;
    }
  }
  return false;
}

bool TaskStateFinal(TaskState state) {
  return state == TaskState::kDone || state == TaskState::kFailed || state == TaskState::kCancelled;
}

}  // namespace cairn::core
