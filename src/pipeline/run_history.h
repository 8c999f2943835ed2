// What the record of pipeline runs (run_state.h) says, for `cairn pipeline status`, `ls` and
// `explain`: each step's state in a run, a count of states per run, and why a step's cache key
// differs from its previous run's.
//
// A step's recorded state is its last event. A step last seen "started" or "retrying" is in
// flight while a runner holds the run; when none does, its runner was killed or stopped and
// the step was interrupted.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/run_state.h"
#include "pipeline/step_cache.h"
#include "util/status.h"

namespace cairn::pipeline {

// The state a step is shown in: its recorded state, "started" as "running", and "interrupted"
// for a step in flight when no runner holds the run.
std::string ShownState(const std::string& recorded, bool has_runner);

struct StepStatus {
  std::string step;
  std::string state;   // ShownState, or "waiting" for a step with no event yet
  std::string detail;  // the reason, or "from run <id>" for outputs reused from another run
};

struct RunStatus {
  RunInfo info;
  pid_t runner = 0;  // RunState::Runner
  // In the order of the spec the run started with, then steps the spec no longer names.
  std::vector<StepStatus> steps;
  int incomplete = 0;  // steps neither done nor cached
};

// The run whose id is (or starts with) `id_or_prefix` under `root`; RunState::Open's errors.
Result<RunStatus> ReadRunStatus(const std::string& root, const std::string& id_or_prefix);

struct RunSummary {
  RunInfo info;
  // Steps by shown state; a step waiting out a retry's backoff counts as running.
  std::map<std::string, int> counts;
};

// Every run under `root`, newest first.
std::vector<RunSummary> SummariseRuns(const std::string& root);

struct StepExplanation {
  RunInfo run;
  StepEvent event;                   // the step's last event in the run
  std::optional<KeyParts> key;       // none when the step never became ready
  std::optional<RunInfo> previous;   // the newest earlier run that computed the step's key
  std::vector<std::string> changes;  // ExplainChanges from `previous` to this run
};

// Why `step` ran or was cached in a run. NotFound when the run has no such step.
Result<StepExplanation> ExplainStep(const std::string& root, const std::string& id_or_prefix,
                                    const std::string& step);

}  // namespace cairn::pipeline
