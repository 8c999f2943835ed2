// TaskService: queued work and the agents that run it (core/task.h), over the QueueStore and
// the runs of the tracking store.
//
// Each attempt of a task is a run: created SCHEDULED when the task is queued (or queued again),
// RUNNING once an agent has leased it, and ended FINISHED, FAILED or KILLED with the attempt.
// A lease is placed only where the task fits: enough free GPUs, CPUs and memory on the agent,
// and a host that meets what the task's environment demands (its lock's CUDA, driver, compute
// capability and glibc, env/host_check.h). Leases that run out are swept by ExpireLeases: the
// attempt's run fails with "agent lost" and the task waits again with a new run, until it has
// had max_attempts.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/reproduce.h"
#include "core/task.h"
#include "env/host_facts.h"
#include "service/artifact_service.h"
#include "service/tracking_service.h"
#include "store/metadata_store.h"
#include "util/clock.h"

namespace cairn::service {

inline constexpr int64_t kMaxTaskSpecBytes = 1 << 20;
inline constexpr int64_t kMaxTaskAttempts = 100;
inline constexpr int64_t kDefaultLeaseMs = 60'000;
inline constexpr int64_t kMaxLeaseWaitMs = 30'000;
// The tags that tie a run to its task.
inline constexpr std::string_view kTaskIdTag = "cairn.task.id";
inline constexpr std::string_view kTaskQueueTag = "cairn.task.queue";
inline constexpr std::string_view kTaskAttemptTag = "cairn.task.attempt";
inline constexpr std::string_view kTaskAgentTag = "cairn.task.agent";

struct EnqueueRequest {
  std::string queue;
  std::string experiment_id;  // where the task's runs go
  // The run of the first attempt, made SCHEDULED by the caller in that experiment (to upload
  // the task's code into it before it can start); empty: a new run.
  std::string run_id;
  std::string run_name;
  std::string user_id;
  std::string team;                 // whose quota it counts against ("" for none)
  std::optional<int64_t> priority;  // unset: the queue's default
  core::TaskNeeds needs;
  std::string spec;          // what to run (JSON object)
  std::string requirements;  // the host it needs (JSON object: cuda, driver,
                             // compute_capability, glibc), "" for none
  int64_t max_attempts = 3;
  std::vector<core::Tag> tags;  // for the runs
};

// A queued run's task queued again (`cairn clone`, `cairn reproduce`, the web UI's buttons).
struct CloneRequest {
  std::string run_id;                         // an attempt's run of the task to queue again
  std::map<std::string, std::string> params;  // changed or added; the others as they were
  std::string queue;                          // "": the task's queue
  std::string run_name;                       // "": the original's name with "-clone"
  std::optional<int64_t> priority;            // unset: the queue's default
  std::optional<int64_t> gpus;                // unset: as the original
  bool reproduce = false;  // tag cairn.reproduce.of (name "-reproduced") instead of cairn.clone.of
  // A reproduction's comparison, made when its task ends (service/reproduction.h).
  core::ReproduceOptions reproduce_options;
  std::string user_id;
  std::string team;
};

// What an agent offers when it asks for work.
struct LeaseAsk {
  std::string agent;
  std::vector<std::string> queues;
  std::vector<std::string> free_gpus;  // the GPUs it can hand out now
  double free_cpus = 0;                // 0: not counted
  int64_t free_memory_mib = 0;         // 0: not counted
  env::HostFacts host;
  int64_t lease_ms = kDefaultLeaseMs;
};

class TaskService {
 public:
  // None of the pointers is owned; all must outlive the service. Without `artifacts`, the
  // verdicts of reproduction tasks are not recorded when they end.
  TaskService(store::MetadataStore* store, TrackingService* tracking, Clock* clock,
              ArtifactService* artifacts = nullptr)
      : store_(store), tracking_(tracking), clock_(clock), artifacts_(artifacts) {}
  // Answers every waiting lease with no task.
  ~TaskService();

  // The task waiting, its first run SCHEDULED.
  Result<core::Task> Enqueue(const EnqueueRequest& request);
  // A new task with the original's code snapshot, environment lock and command, the
  // parameters changed, in a new SCHEDULED run of the original's experiment.
  // FailedPrecondition for a run that no task ran. A reproduction's verdict is recorded in the
  // run of its last attempt when the task ends, however it ends.
  Result<core::Task> Clone(const CloneRequest& request);
  Result<core::Task> GetTask(const std::string& id);
  Result<std::vector<core::Task>> ListTasks(const store::TaskQuery& query);
  // A waiting task ends at once (its run KILLED); a running one is asked to stop.
  Result<core::Task> Cancel(const std::string& id, const std::string& actor);
  // A waiting task to another queue (made on first use) and priority (unset: unchanged).
  Result<core::Task> Move(const std::string& id, const std::string& queue,
                          std::optional<int64_t> priority);
  Result<std::vector<core::Queue>> ListQueues();
  Result<core::Queue> UpdateQueue(const std::string& name, const std::string& description,
                                  int64_t default_priority);

  // A team's quota (core::TeamQuota); one without any cap removes it.
  Status SetQuota(const core::TeamQuota& quota);
  // Every quota with what its team uses now.
  Result<std::vector<std::pair<core::TeamQuota, core::TeamUsage>>> ListQuotas();

  // Records the agent (as it describes itself now) and its heartbeat.
  Status RegisterAgent(core::Agent agent);
  Result<std::vector<core::Agent>> ListAgents();
  Result<core::Agent> GetAgent(const std::string& id);
  // The first waiting task of the agent's queues that fits it, leased to it for
  // `ask.lease_ms`, its run RUNNING; nullopt when none fits.
  Result<std::optional<core::Task>> Lease(const LeaseAsk& ask);
  // Lease, waiting up to `wait_ms` (at most kMaxLeaseWaitMs) for a task that fits when none
  // does yet (a long poll): `done` gets the outcome once, on this thread when it is known at
  // once, else on the service's waiting thread as soon as a task is queued that fits (or at
  // the end of the wait, with nullopt). Nothing waits while nothing is queued: the waiting
  // thread tries again when a task is queued, moved or queued again, and every second.
  using LeaseDone = std::function<void(Result<std::optional<core::Task>>)>;
  void LeaseOrWait(const LeaseAsk& ask, int64_t wait_ms, LeaseDone done);
  // Ends every wait now, each with no task (the server is stopping).
  void StopWaiting();

  // Extends the agent's lease; the task as it is (cancel_requested: stop it).
  Result<core::Task> Renew(const std::string& id, const std::string& agent, int64_t attempt,
                           int64_t lease_ms = kDefaultLeaseMs);
  // Ends the agent's attempt (done, failed or cancelled) and its run.
  Result<core::Task> Finish(const std::string& id, const std::string& agent, int64_t attempt,
                            core::TaskState state, const std::string& reason);
  // Ends every attempt whose lease ran out; returns how many.
  Result<int> ExpireLeases();

  // Why `host` cannot run a task with these requirements ("" when it can).
  static std::string HostShortfall(const std::string& requirements, const env::HostFacts& host);

 private:
  // Makes `request.run_id` the first attempt's run, with `tags`: it must be SCHEDULED, in the
  // task's experiment and no task's yet.
  Status AdoptRun(const EnqueueRequest& request, const std::vector<core::Tag>& tags);
  // A SCHEDULED run for `task`'s next attempt, with the id `run_id`.
  Status ScheduleRun(const core::Task& task, const std::string& run_id, int64_t attempt);
  // The run of an attempt that ended: its status, end time and, for a failure, the reason.
  void EndRun(const core::Task& task, core::RunStatus status, const std::string& reason);
  // A task that reached its final state: a reproduction's verdict is given.
  void Ended(const core::Task& task);

  // Something waiting leases may want changed: wake the waiting thread.
  void WorkChanged();
  void ServeWaiters();

  store::MetadataStore* store_;
  TrackingService* tracking_;
  Clock* clock_;
  ArtifactService* artifacts_;

  struct Waiter {
    LeaseAsk ask;
    int64_t deadline = 0;  // steady ms
    LeaseDone done;
  };
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::deque<Waiter> waiters_;     // in the order they asked
  uint64_t work_generation_ = 0;   // bumped by WorkChanged
  bool stop_waiting_ = false;
  std::thread wait_thread_;        // started with the first waiter
};

}  // namespace cairn::service
