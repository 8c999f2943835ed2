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

// The window GPU-hours quotas count: 7 days.
inline constexpr int64_t kQuotaWindowMs = 7ll * 24 * 3600 * 1000;

// The GPU-hours of `gpus` GPUs held from `start` to `end` (ms) that fall in the window ending
// at `now`.
double GpuHoursInWindow(int64_t gpus, int64_t start, int64_t end, int64_t now);
// Why `task` cannot start now under its team's quota, its team using `usage` ("" when it can;
// a task that needs no GPU always can).
std::string QuotaShortfall(const core::Task& task, const core::TeamQuota& quota,
                           const core::TeamUsage& usage);
// Whether a change from `before` to `after` ended an attempt that held GPUs, which the quota
// ledger then records.
bool EndsGpuAttempt(const core::Task& before, const core::Task& after);

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
