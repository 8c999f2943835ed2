// `cairn run --queue NAME`: queue a command as a task instead of running it. Takes the code
// snapshot of the project (cli/code_snapshot.h) and its environment lock (pylock.toml of the
// project, when there is one), makes the task's first run SCHEDULED, uploads both into it, and
// queues the task with the lock's host requirements, so that only an agent whose host can
// run the environment takes it. `cairn clone` and `cairn reproduce` of a run no queue ran use it
// too, with the code rebuilt from the run's record.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/task.h"
#include "core/task_spec.h"
#include "util/status.h"

namespace cairn::client {
class TrackingClient;
}

namespace cairn::cli {

struct QueueRunOptions {
  std::string tracking_uri;  // as given; resolved here
  std::string queue;
  std::string experiment;     // name; empty: $MLFLOW_EXPERIMENT_NAME, else Default
  std::string experiment_id;  // instead of the name
  std::string run_name;
  std::vector<core::Param> params;
  std::vector<core::Tag> tags;
  std::vector<std::string> command;
  std::string cwd;    // the directory the command runs in; empty: this process's
  std::string lock;   // the lock file; empty: the project's pylock.toml when it has one
  // The code: the project's snapshot around cwd; with code_root, every file under it (the code
  // rebuilt from a run's record, cwd within it), recorded as coming from `origin` (its commit,
  // branch, remote and dirty flag).
  std::string code_root;
  core::TaskCode origin;
  core::TaskReproduction reproduce;  // a reproduction's
  bool enqueue = true;               // false: the run is made ready, but no task is queued
  int64_t gpus = 0;
  std::optional<int64_t> priority;
  int64_t max_attempts = 3;
};

struct QueuedRun {
  core::RunInfo run;
  core::TaskSpec spec;
  std::optional<core::Task> task;  // unless !enqueue
  std::string lock_path;           // the lock it runs with ("" for none)
};

// Makes the task's run SCHEDULED, uploads its parameters, code snapshot and lock into it, and
// queues its task (unless !enqueue). A failure once the run exists ends it FAILED, so that no
// SCHEDULED run is left without a task.
Result<QueuedRun> PrepareQueuedRun(client::TrackingClient& client, const QueueRunOptions& options);
// What was queued: the task, its run, code and environment.
void PrintQueued(const QueuedRun& queued);

// Queues the task and prints what was queued; returns the exit code (0 once queued).
int QueueRun(const QueueRunOptions& options);

}  // namespace cairn::cli
