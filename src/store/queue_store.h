// QueueStore: where queues, the tasks waiting in them or running, and the agents that run them
// live (core/task.h).
//
// Every MetadataStore backend holds one, in the same database as the runs of its tasks
// (MetadataStore::queue()), and passes one conformance suite (queue_store_conformance_test.cc).
// The contracts of MetadataStore hold here too: every method may be called from many threads
// and processes at once, and one that returns OK has committed.
//
// A lease is taken atomically: of agents asking at once, one gets a given task and the others
// the next one or none. Every change to a running task names the attempt it is about, so that
// an agent whose lease ran out (and whose task now waits again, or runs elsewhere) can change
// nothing: it gets kFailedPrecondition. Errors: kNotFound for an unknown task, queue or agent;
// kFailedPrecondition when the task is not in a state the call applies to.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/task.h"
#include "util/status.h"

namespace cairn::store {

struct TaskQuery {
  std::string queue;                    // "": every queue
  std::vector<core::TaskState> states;  // empty: every state
  std::string agent;                    // "": any (else the tasks it holds)
  int64_t max_results = 1000;
};

struct LeaseRequest {
  std::vector<std::string> queues;
  std::string agent;
  int64_t now = 0;
  int64_t lease_expiry = 0;
  // Whether the agent can run a task now, and with which GPUs (CUDA_VISIBLE_DEVICES, "" for
  // none); nullopt when it cannot. Called for waiting tasks in the order they start, inside
  // the lease's transaction: it must not call the store.
  std::function<std::optional<std::string>(const core::Task&)> place;
};

class QueueStore {
 public:
  virtual ~QueueStore() = default;

  // --- Queues -----------------------------------------------------------------------------
  // The queue, created with no description and priority 0 when it does not exist.
  virtual Result<core::Queue> EnsureQueue(std::string_view name, int64_t now) = 0;
  virtual Result<core::Queue> GetQueue(std::string_view name) = 0;
  virtual Status UpdateQueue(std::string_view name, std::string_view description,
                             int64_t default_priority) = 0;
  // By name.
  virtual Result<std::vector<core::Queue>> ListQueues() = 0;

  // --- Tasks ------------------------------------------------------------------------------
  // Stores a new task (its queue must exist) waiting, with the next `seq`; returns it as
  // stored. kAlreadyExists for a task id that is taken.
  virtual Result<core::Task> EnqueueTask(const core::Task& task) = 0;
  virtual Result<core::Task> GetTask(std::string_view id) = 0;
  // In the order they start: priority (highest first), then seq.
  virtual Result<std::vector<core::Task>> ListTasks(const TaskQuery& query) = 0;
  // The first waiting task of the request's queues that `place` accepts, now running under
  // the agent's lease: its attempt counted, its GPUs and start time set. nullopt when none.
  virtual Result<std::optional<core::Task>> LeaseTask(const LeaseRequest& request) = 0;
  // Extends the agent's lease on the task's `attempt`. The task as it is now: a cancel
  // requested meanwhile shows in cancel_requested.
  virtual Result<core::Task> RenewLease(std::string_view id, std::string_view agent,
                                        int64_t attempt, int64_t lease_expiry) = 0;
  // Ends the agent's attempt in `state` (done, failed or cancelled) with a reason.
  virtual Result<core::Task> FinishTask(std::string_view id, std::string_view agent,
                                        int64_t attempt, core::TaskState state,
                                        std::string_view reason, int64_t now) = 0;
  // Running tasks whose lease ran out before `now`.
  virtual Result<std::vector<core::Task>> ExpiredLeases(int64_t now) = 0;
  // Ends an attempt whose lease ran out before `now`, with `reason`: the task waits again
  // (keeping its place in the order) for its next attempt in run `next_run_id`, or fails when
  // it has had max_attempts, or ends cancelled when a cancel was asked for. kFailedPrecondition
  // when the task is no longer running that attempt or its lease was renewed.
  virtual Result<core::Task> ExpireLease(std::string_view id, int64_t attempt,
                                         std::string_view next_run_id, std::string_view reason,
                                         int64_t now) = 0;
  // A waiting task is cancelled at once; a running one is marked cancel_requested for its
  // agent to stop (the agent then finishes it cancelled). kFailedPrecondition once final.
  virtual Result<core::Task> CancelTask(std::string_view id, std::string_view reason,
                                        int64_t now) = 0;
  // A waiting task to another queue (which must exist) and priority; it keeps its seq.
  virtual Result<core::Task> MoveTask(std::string_view id, std::string_view queue,
                                      int64_t priority) = 0;
  // Why a waiting task waits ("over the team's GPU quota"); "" when it just waits its turn.
  virtual Status SetTaskReason(std::string_view id, std::string_view reason) = 0;

  // --- Team quotas --------------------------------------------------------------------------
  // LeaseTask passes over a task that needs GPUs while its team is over its quota
  // (QuotaShortfall), and sets the task's reason to say so. Every attempt that held GPUs is
  // recorded when it ends (finished or expired), for the GPU-hours of the last 7 days.
  // Sets a team's quota; one without any cap is removed.
  virtual Status PutTeamQuota(const core::TeamQuota& quota) = 0;
  // By team.
  virtual Result<std::vector<core::TeamQuota>> ListTeamQuotas() = 0;
  virtual Result<core::TeamUsage> GetTeamUsage(std::string_view team, int64_t now) = 0;

  // --- Agents -----------------------------------------------------------------------------
  // Creates or replaces the agent's record.
  virtual Status PutAgent(const core::Agent& agent) = 0;
  virtual Result<core::Agent> GetAgent(std::string_view id) = 0;
  virtual Status AgentHeartbeat(std::string_view id, int64_t now) = 0;
  // By id.
  virtual Result<std::vector<core::Agent>> ListAgents() = 0;
};

}  // namespace cairn::store
