// The Slurm executor: each step is a batch job. `sbatch` submits it (resources as
// --cpus-per-task, --mem, --gres=gpu:N and --time), `squeue` follows it, `scontrol show job`
// (or `sacct` once slurmctld has forgotten the job) gives its end and exit code, and `scancel`
// stops it. The job's output goes to the step's log file (--output, appended), so the log
// directory must be on a filesystem the compute nodes share with this machine.
//
// The commands run through a SlurmCommands interface so that tests drive the executor with
// recorded outputs of a real cluster (tests/data/slurm) as well as against one.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "env/host_facts.h"
#include "pipeline/executor.h"

namespace cairn::pipeline {

class SlurmCommands {
 public:
  virtual ~SlurmCommands() = default;
  // Runs `argv` (sbatch, squeue, scontrol, sacct, scancel) and returns how it ended.
  virtual Result<env::CommandOutput> Run(const std::vector<std::string>& argv) = 0;
};

// The real commands, found on PATH, each given at most `timeout`.
std::unique_ptr<SlurmCommands> RealSlurmCommands(
    std::chrono::milliseconds timeout = std::chrono::seconds(60));

struct SlurmOptions {
  std::vector<std::string> sbatch_args;  // extra, e.g. --partition=gpu
  // Jobs are named <job_name_prefix><step id>; empty: cairn-<first 8 of the pipeline run>-.
  std::string job_name_prefix;
  int64_t poll_ms = 500;                 // how often squeue is asked while jobs run
  // squeue failing to run (a hung controller: the command's timeout) is retried at each poll;
  // the run fails only when it has failed for this long.
  int64_t give_up_ms = 10 * 60 * 1000;
  // A job cancelled (timeout, Ctrl-C) while squeue fails counts as ended after this long.
  int64_t cancel_grace_ms = 30 * 1000;
};

std::unique_ptr<Executor> NewSlurmExecutor(std::unique_ptr<SlurmCommands> commands,
                                           SlurmOptions options, Clock* clock = nullptr);

// Cancels the jobs an earlier session of pipeline run `run_id` left queued or running (its
// runner killed): those named cairn-<first 8 of run_id>-<step>. Returns how many.
Result<int> CancelLeftoverSlurmJobs(SlurmCommands& commands, const std::string& run_id);
// Cancels this user's queued and running jobs whose names start with `prefix` (and, when
// `rest` is given, whose names past it it accepts). Returns how many.
Result<int> CancelSlurmJobsNamed(SlurmCommands& commands, const std::string& prefix,
                                 const std::function<bool(std::string_view)>& rest = nullptr);

// Parsers, exposed for tests.
// `sbatch --parsable` prints "JOBID" or "JOBID;CLUSTER".
Result<std::string> ParseSbatchParsable(std::string_view output);
struct SlurmJobState {
  std::string job_id;
  std::string state;  // RUNNING, COMPLETED, FAILED, CANCELLED (without " by UID"), ...
  bool has_exit = false;
  int exit_code = 0;  // of "CODE:SIGNAL"
  int signal = 0;
};
// Lines of `squeue -h -t all -o %i|%T|%r`.
std::vector<SlurmJobState> ParseSqueue(std::string_view output);
// `scontrol show job -o ID`: JobState= and ExitCode=.
Result<SlurmJobState> ParseScontrolJob(std::string_view output);
// `sacct -n -P -X -j ID -o JobID,State,ExitCode`: the job's line.
Result<SlurmJobState> ParseSacct(std::string_view output);
// Whether a state is final (COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, ...).
bool SlurmStateIsFinal(std::string_view state);
// The job's end as a JobResult (an error text for states that are no plain exit).
JobResult SlurmResult(size_t step, const SlurmJobState& state);

}  // namespace cairn::pipeline
