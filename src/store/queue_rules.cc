#include "store/queue_rules.h"

#include <algorithm>
#include <cstdio>

namespace cairn::store {
namespace {

using core::Task;
using core::TaskState;

// The attempt `agent` holds, or why it holds none.
Status Held(const Task& t, std::string_view agent, int64_t attempt) {
  if (t.state != TaskState::kRunning || t.agent != agent || t.attempt != attempt) {
    return FailedPrecondition(
        "task " + t.id + " attempt " + std::to_string(attempt) + " is no longer held by agent " +
        std::string(agent) + " (it is " + std::string(core::TaskStateName(t.state)) +
        (t.state == TaskState::kRunning
             ? ", attempt " + std::to_string(t.attempt) + " on agent " + t.agent
             : "") +
        ")");
  }
  return Status::Ok();
}

Status Waiting(const Task& t, std::string_view what) {
  if (t.state != TaskState::kQueued) {
    return FailedPrecondition("task " + t.id + " is " + std::string(core::TaskStateName(t.state)) +
                              ": only a waiting task can be " + std::string(what));
  }
  return Status::Ok();
}

void End(Task* t, TaskState state, std::string_view reason, int64_t now) {
  t->state = state;
  t->reason = std::string(reason);
  t->end_time = now;
  t->agent.clear();
  t->lease_expiry = 0;
}

}  // namespace

Status TaskNotFound(std::string_view id) { return NotFound("No task with id " + std::string(id)); }
Status QueueNotFound(std::string_view name) {
  return NotFound("No queue named '" + std::string(name) + "'");
}
Status AgentNotFound(std::string_view id) {
  return NotFound("No agent with id " + std::string(id));
}

bool StartsBefore(const Task& a, const Task& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  return a.seq < b.seq;
}

double GpuHoursInWindow(int64_t gpus, int64_t start, int64_t end, int64_t now) {
  const int64_t from = std::max(start, now - kQuotaWindowMs);
  const int64_t to = std::min(end, now);
  if (gpus <= 0 || to <= from) return 0;
  return static_cast<double>(gpus) * static_cast<double>(to - from) / 3'600'000.0;
}

std::string QuotaShortfall(const Task& task, const core::TeamQuota& quota,
                           const core::TeamUsage& usage) {
  if (task.needs.gpus <= 0) return "";
  if (quota.gpus > 0 && usage.gpus + task.needs.gpus > quota.gpus) {
    return "over quota: team " + quota.team + " has " + std::to_string(usage.gpus) + " of its " +
           std::to_string(quota.gpus) + " GPUs in use";
  }
  if (quota.gpu_hours > 0 && usage.gpu_hours >= quota.gpu_hours) {
    char used[64];
    std::snprintf(used, sizeof(used), "%.1f of its %.1f", usage.gpu_hours, quota.gpu_hours);
    return "over quota: team " + quota.team + " used " + used + " GPU-hours in the last 7 days";
  }
  return "";
}

bool EndsGpuAttempt(const Task& before, const Task& after) {
  return before.state == TaskState::kRunning && before.needs.gpus > 0 && !before.team.empty() &&
         (after.state != TaskState::kRunning || after.attempt != before.attempt);
}

void ApplyLease(Task* t, std::string_view agent, std::string_view gpus, int64_t now,
                int64_t lease_expiry) {
  t->state = TaskState::kRunning;
  t->agent = std::string(agent);
  t->gpus = std::string(gpus);
  t->lease_expiry = lease_expiry;
  t->attempt += 1;
  t->start_time = now;
  t->reason.clear();
}

Status ApplyRenew(Task* t, std::string_view agent, int64_t attempt, int64_t lease_expiry) {
  CAIRN_RETURN_IF_ERROR(Held(*t, agent, attempt));
  t->lease_expiry = std::max(t->lease_expiry, lease_expiry);
  return Status::Ok();
}

Status ApplyFinish(Task* t, std::string_view agent, int64_t attempt, TaskState state,
                   std::string_view reason, int64_t now) {
  if (!core::TaskStateFinal(state)) {
    return InvalidArgument("a task finishes done, failed or cancelled, not " +
                           std::string(core::TaskStateName(state)));
  }
  CAIRN_RETURN_IF_ERROR(Held(*t, agent, attempt));
  End(t, state, reason, now);
  return Status::Ok();
}

Status ApplyExpire(Task* t, int64_t attempt, std::string_view next_run_id, std::string_view reason,
                   int64_t now) {
  if (t->state != TaskState::kRunning || t->attempt != attempt || t->lease_expiry >= now) {
    return FailedPrecondition("task " + t->id + " attempt " + std::to_string(attempt) +
                              " holds no expired lease");
  }
  if (t->cancel_requested) {  // its agent died before it could stop it
    End(t, TaskState::kCancelled, t->reason, now);
    return Status::Ok();
  }
  if (t->attempt >= t->max_attempts) {
    End(t, TaskState::kFailed, reason, now);
    return Status::Ok();
  }
  t->state = TaskState::kQueued;
  t->agent.clear();
  t->lease_expiry = 0;
  t->gpus.clear();
  t->start_time = 0;
  t->run_id = std::string(next_run_id);
  t->reason = std::string(reason);
  return Status::Ok();
}

Status ApplyCancel(Task* t, std::string_view reason, int64_t now) {
  if (core::TaskStateFinal(t->state)) {
    return FailedPrecondition("task " + t->id + " is " +
                              std::string(core::TaskStateName(t->state)) + " already");
  }
  if (t->state == TaskState::kQueued) {
    End(t, TaskState::kCancelled, reason, now);
  } else {
    t->cancel_requested = true;
    t->reason = std::string(reason);
  }
  return Status::Ok();
}

Status ApplyMove(Task* t, std::string_view queue, int64_t priority) {
  CAIRN_RETURN_IF_ERROR(Waiting(*t, "moved"));
  t->queue = std::string(queue);
  t->priority = priority;
  return Status::Ok();
}

Status ApplyReason(Task* t, std::string_view reason) {
  CAIRN_RETURN_IF_ERROR(Waiting(*t, "given a reason to wait"));
  t->reason = std::string(reason);
  return Status::Ok();
}

}  // namespace cairn::store
