// `cairn run --queue NAME`: queue a command as a task instead of running it. Takes the code
// snapshot of the project (cli/code_snapshot.h) and its environment lock (pylock.toml of the
// project, when there is one), makes the task's first run SCHEDULED, uploads both into it, and
// queues the task with the lock's host requirements, so that only an agent whose host can
// run the environment takes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"

namespace cairn::cli {

struct QueueRunOptions {
  std::string tracking_uri;  // as given; resolved here
  std::string queue;
  std::string experiment;  // name; empty: $MLFLOW_EXPERIMENT_NAME, else Default
  std::string run_name;
  std::vector<core::Param> params;
  std::vector<core::Tag> tags;
  std::vector<std::string> command;
  std::string cwd;    // the directory the command runs in; empty: this process's
  std::string lock;   // the lock file; empty: the project's pylock.toml when it has one
  int64_t gpus = 0;
  std::optional<int64_t> priority;
  int64_t max_attempts = 3;
};

// Queues the task and prints what was queued; returns the exit code (0 once queued).
int QueueRun(const QueueRunOptions& options);

}  // namespace cairn::cli
