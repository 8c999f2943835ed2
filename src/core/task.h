// Tasks, queues and agents: work that waits in a named queue until an agent on a machine that
// can run it takes it.
//
// A task is one piece of work (a command with its code snapshot, environment lock and
// parameters, kept in `spec` for the task service) and its run in the tracking store, which
// stays SCHEDULED while the task waits. An agent takes a task by a lease: the task is its own
// until `lease_expiry`, and the agent renews the lease while the task runs. A lease that runs
// out (the agent died or lost the network) ends that attempt; the task waits again as a new
// attempt, with a new run, until `max_attempts` have been started. Within a queue, tasks of
// higher priority start first and tasks of one priority in the order they were queued.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::core {

enum class TaskState { kQueued, kRunning, kDone, kFailed, kCancelled };
std::string_view TaskStateName(TaskState state);  // "queued", "running", "done", ...
bool ParseTaskState(std::string_view text, TaskState* out);
// Done, failed or cancelled: nothing happens to the task any more.
bool TaskStateFinal(TaskState state);

// What a task needs of the machine that runs it.
struct TaskNeeds {
  int64_t gpus = 0;
  double cpus = 1;
  int64_t memory_mib = 0;  // 0: not said
  bool operator==(const TaskNeeds&) const = default;
};

struct Task {
  std::string id;  // 32 lowercase hex digits
  std::string queue;
  int64_t priority = 0;  // higher starts first
  int64_t seq = 0;       // the order tasks were queued in (given by the store; kept on requeue)
  TaskState state = TaskState::kQueued;
  TaskNeeds needs;
  std::string spec;          // what to run (JSON written and read by the task service)
  std::string requirements;  // the host its environment needs (JSON), for placement
  std::string owner;         // the account that queued it
  std::string team;          // whose quota it counts against ("" for none)
  std::string run_id;        // the run of the current (or next) attempt
  int64_t attempt = 0;       // attempts started so far
  int64_t max_attempts = 1;
  std::string agent;              // the agent holding the lease, while running
  int64_t lease_expiry = 0;       // ms since the epoch, while running
  std::string gpus;               // the GPUs the agent gave it, as CUDA_VISIBLE_DEVICES ("0,1")
  bool cancel_requested = false;  // cancelled while running: the agent stops it
  std::string reason;             // why it waits, or how its last attempt ended
  int64_t created_time = 0;
  int64_t start_time = 0;  // when the current attempt was leased (0 before)
  int64_t end_time = 0;    // when it reached a final state (0 before)
};

struct Queue {
  std::string name;
  std::string description;
  int64_t default_priority = 0;
  int64_t created_time = 0;
  bool operator==(const Queue&) const = default;
};

// A team's share of the GPUs (0: no cap): at most `gpus` GPUs at once, and `gpu_hours`
// GPU-hours in any 7 days. A task that needs GPUs and would go over waits, with the reason.
struct TeamQuota {
  std::string team;
  int64_t gpus = 0;
  double gpu_hours = 0;
  bool operator==(const TeamQuota&) const = default;
};

// What a team uses: the GPUs of its running tasks, and the GPU-hours of its attempts (ended
// or running) within the last 7 days.
struct TeamUsage {
  int64_t gpus = 0;
  double gpu_hours = 0;
};

// An agent as it last described itself.
struct Agent {
  std::string id;     // chosen by the agent, stable across its restarts
  std::string name;   // for people: the host name by default
  std::string owner;  // the account it authenticates as
  std::vector<std::string> queues;
  std::string host;               // its host facts (JSON)
  std::vector<std::string> gpus;  // the GPUs it may hand out ("0", "1", ...)
  int64_t slots = 1;              // tasks it runs at once
  int64_t started_time = 0;
  int64_t heartbeat_time = 0;
  bool operator==(const Agent&) const = default;
};

}  // namespace cairn::core
