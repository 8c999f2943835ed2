// Tracker: a pipeline run in the tracking store. The pipeline run is a parent run (its id is
// the pipeline run's id) in the experiment named after the pipeline; each step that runs or
// is restored from the cache is a child run (`mlflow.parentRunId`) with its command,
// parameters, state, exit code, cache key, console log (the step's log file) and the list of
// its outputs (cairn/outputs.json). A cached step's run names the run that produced its
// outputs (cairn.step.cached_from_run). A step that ran and has `register` uploads that output
// as its run's artifacts under outputs/ and makes it a version of the registered model.
//
// Everything goes through a TrackingSink (tracking_sink.h), by default run journals, so that a
// tracking server that is down or goes away loses nothing: records wait and `cairn sync`
// delivers them. A step's
// run is created before the step starts, so that the MLFLOW_RUN_ID it gets exists for the
// step's own MLflow or cairn client when the server is up. The records of a step's end are
// delivered by a background thread, so that the tracking server does not slow the pipeline.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/run_state.h"
#include "pipeline/spec.h"
#include "util/status.h"

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
  int64_t start_ms = 0;
};

class Tracker {
 public:
  // Starts the parent run (or, for a resumed run, continues it). An unreachable server is a
  // warning: the records wait in journals.
  static Result<std::unique_ptr<Tracker>> Start(const std::string& tracking_uri,
                                                const Pipeline& pipeline, const RunInfo& run,
                                                Progress& progress);
  // The same, with the records going to `sink`.
  static Result<std::unique_ptr<Tracker>> Start(std::unique_ptr<TrackingSink> sink,
                                                const Pipeline& pipeline, const RunInfo& run,
                                                Progress& progress);
  ~Tracker();

  const std::string& tracking_uri() const;
  // The run id for a step about to start (its run is created now), to put in MLFLOW_RUN_ID.
  std::string StepRun(const Step& step);
  // The experiment id of the parent run ("" when the server was unreachable).
  std::string ExperimentId() const;
  // Records a step's end (creating its run first when it never started, e.g. cached).
  void StepEnded(const Step& step, const StepRecord& record);
  // Ends the parent run and waits (a few seconds at most) for the records to be delivered;
  // says what is left for `cairn sync`.
  void Finish(bool ok, bool interrupted);

 private:
  struct Impl;
  explicit Tracker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::pipeline
