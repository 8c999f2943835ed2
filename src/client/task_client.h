// cairn's task, queue and agent calls (docs/api/cairn.md, "Tasks, queues and agents") over a
// TrackingClient: what `cairn task`, `cairn queue` and agents send.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/tracking_client.h"
#include "core/reproduce.h"
#include "core/task.h"
#include "util/status.h"

namespace cairn::client {

struct TaskFilter {
  std::string queue;                // "": every queue
  std::vector<std::string> states;  // "queued", "running", ...; empty: every state
  int64_t max_results = 1000;
};

// A queue with how many of its tasks wait and run.
struct QueueSummary {
  core::Queue queue;
  int64_t queued = 0;
  int64_t running = 0;
};

// What POST tasks takes (docs/api/cairn.md).
struct TaskRequest {
  std::string queue;
  std::string experiment_id;  // "": Default
  std::string run_id;         // a SCHEDULED run of that experiment for the first attempt; "": new
  std::string run_name;
  std::optional<int64_t> priority;  // unset: the queue's default
  core::TaskNeeds needs;
  std::string spec;          // JSON object
  std::string requirements;  // JSON object, "" for none
  int64_t max_attempts = 3;
  std::vector<core::Tag> tags;
};
Result<core::Task> EnqueueTask(TrackingClient& client, const TaskRequest& request);

// POST tasks/clone: a queued run's task queued again with parameters changed.
struct CloneAsk {
  std::string run_id;
  std::vector<core::Param> params;
  std::string queue;  // "": the original's
  std::string run_name;
  std::optional<int64_t> priority;
  std::optional<int64_t> gpus;
  bool reproduce = false;
  core::ReproduceOptions reproduce_options;  // with reproduce: how the server compares
};
Result<core::Task> CloneTask(TrackingClient& client, const CloneAsk& ask);
// POST runs/reproduction: the verdict of `run_id` against the run it reproduces (`original`,
// or "" for its cairn.reproduce.of tag), recorded in it; the record (cairn/reproduce.json).
Result<std::string> RecordReproduction(TrackingClient& client, const std::string& run_id,
                                       const std::string& original,
                                       const core::ReproduceOptions& options);

Result<std::vector<core::Task>> ListTasks(TrackingClient& client, const TaskFilter& filter);
Result<core::Task> GetTask(TrackingClient& client, const std::string& id);
Result<core::Task> CancelTask(TrackingClient& client, const std::string& id);
// To `queue` ("" keeps it) at `priority` (unset keeps it).
Result<core::Task> MoveTask(TrackingClient& client, const std::string& id, const std::string& queue,
                            std::optional<int64_t> priority);
Result<std::vector<QueueSummary>> ListQueues(TrackingClient& client);
Result<std::vector<core::Agent>> ListAgents(TrackingClient& client);
// Team quotas with what each team uses now; setting one needs an admin.
Result<std::vector<std::pair<core::TeamQuota, core::TeamUsage>>> ListQuotas(
    TrackingClient& client);
Status SetQuota(TrackingClient& client, const core::TeamQuota& quota);

// --- What an agent calls (as a service account) -------------------------------------------
// `agent.host` is the agent's host facts as JSON (env::HostFactsJson).
Status RegisterAgent(TrackingClient& client, const core::Agent& agent);

struct LeaseAsk {
  std::string agent;
  std::vector<std::string> queues;
  std::vector<std::string> free_gpus;
  double free_cpus = 0;         // 0: not said
  int64_t free_memory_mib = 0;  // 0: not said
  std::string host;             // host facts as JSON
  int64_t lease_ms = 60000;
  // Wait this long on the server for a task when none fits yet (a long poll; at most 30 s,
  // below the client's timeout).
  int64_t wait_ms = 0;
};
// The task leased, or nullopt when nothing waiting fits.
Result<std::optional<core::Task>> LeaseTask(TrackingClient& client, const LeaseAsk& ask);
// FailedPrecondition (a 400) once the attempt is no longer the agent's.
Result<core::Task> RenewLease(TrackingClient& client, const core::Task& task,
                              const std::string& agent, int64_t lease_ms);
Result<core::Task> FinishTask(TrackingClient& client, const core::Task& task,
                              const std::string& agent, core::TaskState state,
                              const std::string& reason);

// A task or an agent as the API writes it; InvalidArgument for JSON that is not one.
Result<core::Task> ParseTaskJson(std::string_view json);
Result<core::Agent> ParseAgentJson(std::string_view json);

}  // namespace cairn::client
