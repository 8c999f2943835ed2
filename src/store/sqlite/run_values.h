// What a run logs, as the SQLite store writes and reads it: params (never changed once set),
// tags (mlflow.runName mirrored in the run's name column) and metric points.
//
// New metric points are appended to metric_log, which touches a page or two per commit however
// many runs and keys a batch spans, and latest_metrics keeps each key's newest point. The
// writer moves the log into metrics, clustered by (run, key, step), in large batches
// (CompactMetricLog); a history read merges both tables.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "store/metadata_store.h"
#include "store/sqlite/sqlite_db.h"

namespace cairn::store::sqlite {

// Upserts a run tag; the mlflow.runName tag also sets the run's name.
Status UpsertRunTag(Connection& c, int64_t run, const core::Tag& tag);

// LogBatch's writes for the run with internal key `run` (run_id names it in messages): params
// (kInvalidArgument when one is stored with another value), tags, then metric points. Adds the
// number of points appended to metric_log to *logged_points.
Status LogBatchIn(Connection& c, int64_t run, std::string_view run_id,
                  const std::vector<core::Metric>& metrics, const std::vector<core::Param>& params,
                  const std::vector<core::Tag>& tags, int64_t* logged_points);

// ScanMetricHistory on a read connection.
Status ScanHistoryIn(Connection& c, const MetricHistoryQuery& query,
                     const std::function<bool(const core::Metric&)>& visit);

// Moves the metric log into the clustered metrics table in one transaction, on the writer's
// connection between groups. A failure leaves the log as it was.
Status CompactMetricLog(Connection& writer);

}  // namespace cairn::store::sqlite
