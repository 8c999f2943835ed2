// Executors run step commands (ninja's CommandRunner): `local` runs them as child processes
// on this machine, `slurm` submits them as batch jobs, and tests use a fake that finishes
// jobs on a fake clock. The Builder starts jobs and waits for them; an executor knows nothing
// of plans, caches or runs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "pipeline/spec.h"
#include "util/clock.h"
#include "util/status.h"

namespace cairn::pipeline {

struct StepJob {
  size_t step = 0;                         // the step's index in the pipeline
  int attempt = 1;                         // 1 for the first run, 2 for the first retry, ...
  std::string id;                          // the step's id, for names and messages
  std::string command;                     // run with /bin/sh -c
  std::string cwd;                         // the pipeline's directory
  std::map<std::string, std::string> env;  // set on top of the runner's environment
  std::string log_path;                    // stdout and stderr are appended here
  Resources resources;
  double cpus = 1;         // the cpus granted (resources.cpus capped at the budget)
  int64_t timeout_ms = 0;  // for executors that enforce it themselves (Slurm's --time)
};

struct JobResult {
  size_t step = 0;
  int exit_code = 0;  // the command's exit code, or 128 + the signal that ended it
  bool signaled = false;
  std::string error;  // the job could not be run or followed (e.g. sbatch refused it)
  bool ok() const { return error.empty() && exit_code == 0 && !signaled; }
};

class Executor {
 public:
  virtual ~Executor() = default;
  // "local", "slurm", ...
  virtual std::string name() const = 0;
  // Starts the job. An error means it did not start (the builder counts it as a failed
  // attempt).
  virtual Status Start(const StepJob& job) = 0;
  // Waits until a started job ends, or until `deadline_ms` on the executor's clock has
  // passed (nullopt then). Returns at once when a job has already ended.
  virtual Result<std::optional<JobResult>> Wait(int64_t deadline_ms) = 0;
  // Stops the job (its whole process group, or the batch job); its result still comes
  // through Wait. Safe for a job that has just ended.
  virtual void Kill(size_t step) = 0;
  // The clock deadlines are measured on.
  virtual Clock& clock() = 0;
};

struct LocalExecutorOptions {
  // Waits on a pidfd per job; false polls each job every 10 ms, as happens anyway where the
  // kernel has no pidfd_open (before Linux 5.3, or under a seccomp filter).
  bool use_pidfd = true;
};

// Child processes on this machine, in their own process groups, output to their log files.
std::unique_ptr<Executor> NewLocalExecutor(const LocalExecutorOptions& options = {});

// Kills the process groups of processes left running by an earlier session of the pipeline
// run `run_id` (a runner killed with SIGKILL leaves its steps running): those whose
// environment holds CAIRN_PIPELINE_RUN=<run_id>. Returns how many groups were signalled.
int KillLeftoverSteps(const std::string& run_id);

}  // namespace cairn::pipeline
