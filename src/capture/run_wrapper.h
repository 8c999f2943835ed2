// `cairn run`: wraps a command in a tracked run. Creates the run with its parameters and the
// standard system tags, runs the command with the variables that let MLflow and cairn clients
// inside log into the same run, passes its console through (and keeps a copy for the run),
// forwards interrupts to it, and ends the run FINISHED, FAILED or KILLED by how it exited.
#pragma once

#include <string>
#include <vector>

#include "core/model.h"
#include "util/status.h"

namespace cairn::capture {

struct RunOptions {
  std::string tracking_uri;  // resolved already (ResolveTrackingUri)
  std::string experiment;    // experiment name; empty: $MLFLOW_EXPERIMENT_NAME, else Default
  std::string run_name;
  // An existing run to record into (32 hex digits), such as a queued task's scheduled run: it
  // keeps its experiment and name, and becomes RUNNING. One that has ended is refused. Empty:
  // a new run.
  std::string run_id;
  std::vector<core::Param> params;
  std::vector<core::Tag> tags;
  // Datasets the command uses (`cairn run --data`), recorded as the run's inputs.
  std::vector<core::DatasetInput> inputs;
  std::vector<std::string> command;
  // The Python interpreter whose packages are recorded; empty: the command's own when it
  // starts with one (python, python3.11, .venv/bin/python), else python3 on PATH.
  std::string python;
  // Seconds between samples of system/... metrics; 0 turns them off.
  int system_metrics_interval_seconds = 10;
  // Seconds between heartbeats (tag cairn.heartbeat); the server fails runs whose heartbeat
  // is older than its --run-heartbeat-timeout, 120 s by default.
  int heartbeat_interval_seconds = 10;
};

// Runs the command as a tracked run and returns the exit code the wrapper should exit with:
// the command's (128 + signal when a signal ended it). A failure before the command starts
// (server unreachable, command not found) is returned as a Status; the command does not run.
Result<int> RunTracked(const RunOptions& options);

// Splits "key=value" (the first '=' separates); fails on a missing '=' or an empty key.
Result<std::pair<std::string, std::string>> ParseKeyValue(const std::string& text,
                                                          const std::string& flag);

// The command line as a POSIX shell would need it typed, each argument quoted when needed.
std::string ShellJoin(const std::vector<std::string>& argv);

}  // namespace cairn::capture
