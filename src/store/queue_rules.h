// What each QueueStore call does to a task, as pure functions on the task's value: every
// backend reads the task, applies one of these and writes it back in one transaction, so the
// backends agree on every transition (queue_store.h has the contracts).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/task.h"
#include "util/status.h"

namespace cairn::store {

Status TaskNotFound(std::string_view id);
Status QueueNotFound(std::string_view name);
Status AgentNotFound(std::string_view id);

// Whether `a` starts before `b`: higher priority first, then the one queued first.
bool StartsBefore(const core::Task& a, const core::Task& b);

// The task leased to `agent` with `gpus` (it must be waiting).
void ApplyLease(core::Task* task, std::string_view agent, std::string_view gpus, int64_t now,
                int64_t lease_expiry);
Status ApplyRenew(core::Task* task, std::string_view agent, int64_t attempt, int64_t lease_expiry);
Status ApplyFinish(core::Task* task, std::string_view agent, int64_t attempt, core::TaskState state,
                   std::string_view reason, int64_t now);
Status ApplyExpire(core::Task* task, int64_t attempt, std::string_view next_run_id,
                   std::string_view reason, int64_t now);
Status ApplyCancel(core::Task* task, std::string_view reason, int64_t now);
Status ApplyMove(core::Task* task, std::string_view queue, int64_t priority);
Status ApplyReason(core::Task* task, std::string_view reason);

}  // namespace cairn::store
