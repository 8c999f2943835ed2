// Starting, resuming and running a pipeline run, as `cairn pipeline run` and `resume` do:
// the spec read with its -p overrides, the run's record created (or reopened) and held by
// this process as its runner, whatever an earlier session left running stopped, and the run
// driven to its end by a Runner: the executor the run names, its Session around the Builder.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/builder.h"
#include "pipeline/executor.h"
#include "pipeline/run_state.h"
#include "pipeline/session.h"
#include "pipeline/spec.h"
#include "pipeline/tracker.h"
#include "util/status.h"

namespace cairn::pipeline {

// "-p name=value" flags as overrides; InvalidArgument for one without a name or "=".
Result<std::map<std::string, std::string>> ParseOverrides(const std::vector<std::string>& params);

// The pipeline's directory (that of its spec file, absolute), where its runs are recorded.
std::string PipelineDir(const std::string& spec_file);

struct LoadedPipeline {
  Pipeline pipeline;
  std::vector<std::string> problems;  // the pipeline runs only when there are none
};

// Parses and expands a spec against the disk. InvalidArgument when `text` is not a spec at
// all (not YAML, not a mapping); every other problem is in `problems`.
Result<LoadedPipeline> LoadPipeline(const std::string& source, const std::string& text,
                                    const std::map<std::string, std::string>& overrides,
                                    const std::string& dir);

// Records a new run of `pipeline` under its directory (info.id is given here, and its name,
// parameters and start time) and holds it as its runner.
Result<std::unique_ptr<RunState>> CreateRun(const Pipeline& pipeline, RunInfo info,
                                            const std::string& spec_text);

// Holds a run to resume as its runner (FailedPrecondition while another process runs it: it
// would kill the other's steps) and returns the spec it started with.
Result<std::string> HoldForResume(RunState& state);

// What an earlier session of a run left running, stopped so that it does not race the new
// attempts.
struct Leftovers {
  int killed = 0;       // step process groups
  int cancelled = 0;    // Slurm jobs
  Status slurm_status;  // why the Slurm jobs could not be listed or cancelled
};
Leftovers StopLeftovers(const RunInfo& run);

// Steps the run completed (done or cached), with their last events: a resume keeps them.
std::map<std::string, StepEvent> CompletedSteps(const RunState& state);

// The run's tracker, started (the parent run created, or for a resume continued: `resumed`
// holds the steps it keeps); null when the run is not tracked. An error when the tracking URI
// cannot be used.
Result<std::unique_ptr<Tracker>> StartTracker(
    const Pipeline& pipeline, const RunInfo& run, Progress& progress,
    const std::map<std::string, StepEvent>* resumed = nullptr);

struct RunnerOptions {
  Budget budget;
  std::string cwd;                             // the pipeline's directory
  std::vector<std::string> sbatch_args;        // for the Slurm executor
  bool no_cache = false;                       // run every step (as a run started so does anyway)
  std::map<std::string, StepEvent> completed;  // kept as they are (CompletedSteps)
  Tracker* tracker = nullptr;                  // optional
  UploadOutputs upload_outputs = UploadOutputs::kSmall;
  DataSource* data = nullptr;                  // for steps that read datasets
  const std::atomic<bool>* interrupted = nullptr;
};

// One session of a run: the executor the run names and the Session over its record.
class Runner {
 public:
  // The Session's errors (the cache or the code state cannot be read).
  static Result<std::unique_ptr<Runner>> Create(const Pipeline& pipeline, RunState& state,
                                                RunnerOptions options, Progress& progress);

  // Where steps run, for the run's heading: "local, 4 jobs, 4 cpus", "slurm, 100 jobs".
  std::string Where() const;
  // Runs the steps that did not complete to their end (or until interrupted).
  Result<BuildResult> Run();
  // Steps by outcome: "done", "cached", "failed", ...
  const std::map<std::string, int>& counts() const { return session_->counts(); }

 private:
  Runner(const Pipeline& pipeline, RunState& state, RunnerOptions options);

  const Pipeline& pipeline_;
  RunState& state_;
  RunnerOptions options_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Session> session_;
};

}  // namespace cairn::pipeline
