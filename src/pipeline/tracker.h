// Tracker: a pipeline run in the tracking store. The pipeline run is a parent run (its id is
// the pipeline run's id) in the experiment named after the pipeline; each step of the run is a
// child run (`mlflow.parentRunId`) with its command, parameters, state, exit code, cache key,
// console log (the step's log file) and the list of its outputs (cairn/outputs.json). A cached
// step's run names the run that produced its outputs (cairn.step.cached_from_run); a step that
// did not run (skipped, cancelled) ends KILLED. A step that ran and has `register` uploads
// that output as its run's artifacts under outputs/ and makes it a version of the registered
// model.
//
// Everything goes through a TrackingSink (tracking_sink.h): one journal per pipeline run, so
// that a tracking server that is down or goes away loses nothing (records wait, and `cairn
// sync` or a resume delivers them), and a pipeline of any size keeps one file open. The
// scheduler never waits for the server, with one exception: before the first step that runs
// a command, the runs of every step not yet recorded are created (SCHEDULED) in one batch and
// delivered, so that the MLFLOW_RUN_ID each step gets exists for its own MLflow or cairn client
// when the server is up. Everything else is delivered in batches by a background thread. A
// pipeline whose steps all come from the cache waits for nothing until its end.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/run_journal.h"
#include "pipeline/approval.h"
#include "pipeline/run_state.h"
#include "pipeline/spec.h"
#include "util/status.h"

namespace cairn::capture {
struct CodeState;
}

namespace cairn::pipeline {

class Progress;
class TrackingSink;

struct StepRecord {
  std::string state;  // StepStateName
  int exit_code = 0;
  std::string reason;
  std::string cache_key;
  std::string cached_from_run;  // a cached step: the tracking run of the step that produced it
  std::string log_path;         // uploaded as the run's console log
  std::string outputs_json;     // cairn/outputs.json, when the step has outputs
  // Where the output the step registers (Step::registration) lies on this machine; empty when
  // there is none or the step did not run.
  std::string registered_output;
  // The step's outputs to record as its run's artifacts (under outputs/), from the cache.
  std::vector<client::BlobFile> output_files;
  int64_t start_ms = 0;
};

class Tracker {
 public:
  // Starts the parent run, or for a resume continues it: `resumed` holds the last events of
  // the steps it keeps, which get no new run, and of steps that were waiting for approval,
  // whose runs carry on (a decision made meanwhile counts). An unreachable server is a warning: the
  // records wait in the journal.
  static Result<std::unique_ptr<Tracker>> Start(
      const std::string& tracking_uri, const Pipeline& pipeline, const RunInfo& run,
      Progress& progress, const std::map<std::string, StepEvent>* resumed = nullptr);
  // The same, with the records going to `sink`.
  static Result<std::unique_ptr<Tracker>> Start(
      std::unique_ptr<TrackingSink> sink, const Pipeline& pipeline, const RunInfo& run,
      Progress& progress, const std::map<std::string, StepEvent>* resumed = nullptr);
  ~Tracker();

  const std::string& tracking_uri() const;
  // The code the pipeline runs: its repository's commit, branch and uncommitted changes, as
  // `cairn run` records them (capture/code_state.h): tags on the pipeline run and on every step
  // run, and the state and the patch as artifacts of the pipeline run and of each step run
  // that runs a command. Called before any step's run is recorded.
  void SetCode(capture::CodeState code);
  // The run id of a step about to start, to put in MLFLOW_RUN_ID: the run exists on the
  // server when this returns, unless the server cannot be reached.
  std::string StepRun(const Step& step);
  // The step's run id, without starting it.
  std::string StepRunId(const Step& step) const;
  // A step that waits for approval (Step::approval): its run says so at once
  // (cairn.step.state "waiting for approval", cairn.approval.by), so that an approver finds it.
  void StepWaiting(const Step& step);
  // The decision on a waiting step, as the server has it (tags cairn.approval.decision
  // "approved" or "rejected", .decided_by, .comment); nullopt while there is none or the
  // server cannot be asked.
  std::optional<ApprovalDecision> ApprovalOf(const Step& step);
  // The experiment id of the parent run ("" until the server has answered).
  std::string ExperimentId() const;
  // Records a step's end (its run created now when it has none yet, e.g. cached).
  void StepEnded(const Step& step, const StepRecord& record);
  // Ends the runs of steps that never ended (KILLED) and the parent run, and waits (a few
  // seconds at most) for the records to be delivered; says what is left for `cairn sync`.
  void Finish(bool ok, bool interrupted);
  // The step outputs recorded as artifacts so far (StepRecord::output_files delivered).
  client::BlobTotals OutputTotals() const;

 private:
  struct Impl;
  explicit Tracker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::pipeline
