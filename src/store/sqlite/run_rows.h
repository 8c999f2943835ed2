// Runs and experiments as the SQLite store keys and reads them. Internally a run is an integer
// key (the runs table's id) so that the large tables do not repeat 32-character run ids; these
// functions map public ids to keys, read rows into core values, and load whole runs for any
// number of runs in a few queries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "store/sqlite/sqlite_db.h"
#include "util/status.h"

namespace cairn::store::sqlite {

// The columns ReadRunInfo reads, in its order; a string literal, for the statement cache.
#define CAIRN_RUN_INFO_COLUMNS                                                               \
  "id, run_uuid, experiment_id, name, user_id, status, start_time, end_time, artifact_uri, " \
  "lifecycle_stage"

// Reads a row of CAIRN_RUN_INFO_COLUMNS from runs. Returns the internal run key.
int64_t ReadRunInfo(const Stmt& s, core::RunInfo* info);
// Reads columns step, timestamp, is_nan, value from `first_col` on.
core::Metric ReadMetricPoint(const Stmt& s, int first_col, std::string key);

// The experiment's key (its numeric id); kNotFound when there is no such experiment.
Result<int64_t> ExperimentKey(Connection& c, std::string_view experiment_id);

// A run's internal key, experiment and lifecycle stage, as writes need them.
struct RunRow {
  int64_t key = 0;
  int64_t experiment = 0;
  core::LifecycleStage stage = core::LifecycleStage::kActive;
};
// kNotFound when there is no such run.
Result<RunRow> FindRun(Connection& c, std::string_view run_id);
Result<int64_t> RunKey(Connection& c, std::string_view run_id);

// Reads the run's info; returns its internal key.
Result<int64_t> LoadRunInfo(Connection& c, std::string_view run_id, core::RunInfo* info);
// The run with its latest metrics, params, tags and inputs.
Result<core::Run> LoadRun(Connection& c, std::string_view run_id);
// Replaces each run (as loaded for matching: partial) with the complete run, in place.
Status ReloadRuns(Connection& c, std::vector<core::Run>* runs);
// Loads latest metrics, params, tags and inputs of runs whose info is loaded; keys[i] is the
// internal key of (*runs)[i]. A few queries for any number of runs.
Status LoadRunData(Connection& c, const std::vector<int64_t>& keys, std::vector<core::Run>* runs);

}  // namespace cairn::store::sqlite
