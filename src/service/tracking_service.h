// TrackingService: the rules of MLflow's tracking API over a MetadataStore.
//
// It validates what a request may not do (sizes, key names, lifecycle states, log-batch
// limits), fills in what the request leaves to the server (ids, times, artifact URIs), and
// pages search results. It knows nothing of HTTP or JSON; errors are Status values whose
// messages are written for the person who sent the request.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "service/validation.h"
#include "store/metadata_store.h"
#include "util/clock.h"

namespace cairn::service {

// MLflow's limits (mlflow/utils/validation.py).
inline constexpr size_t kMaxMetricsPerBatch = 1000;
inline constexpr size_t kMaxParamsPerBatch = 100;
inline constexpr size_t kMaxTagsPerBatch = 100;
inline constexpr size_t kMaxEntitiesPerBatch = 1000;
inline constexpr size_t kMaxParamValueLength = 6000;
inline constexpr size_t kMaxDatasetsPerBatch = 1000;
inline constexpr int64_t kMaxHistoryBulkResults = 25000;
inline constexpr int64_t kMaxDatasetSummaries = 1000;
inline constexpr size_t kMaxTagValueLength = 8000;
inline constexpr int64_t kMaxSearchResults = 50000;
inline constexpr int64_t kDefaultSearchResults = 1000;
// A pipeline step's approval (POST runs/approval): the approver its run names, which the runner
// sets, and the decision's tags, which only DecideApproval writes (clients may not).
inline constexpr std::string_view kApprovalByTag = "cairn.approval.by";
inline constexpr std::string_view kApprovalPrefix = "cairn.approval.";
inline constexpr std::string_view kApprovalDecisionTag = "cairn.approval.decision";
inline constexpr std::string_view kApprovalDecidedByTag = "cairn.approval.decided_by";
// Where every run's artifacts are, whatever its experiment's artifact_location says.
inline constexpr std::string_view kServerArtifactRoot = "mlflow-artifacts:/";

struct CreateRunRequest {
  // Chosen by the client (32 lowercase hex digits) so that a run can be recorded before the
  // server is reachable; empty: a new id. Creating a run that exists returns it unchanged.
  std::string run_id;
  std::string experiment_id;
  std::string user_id;
  std::string run_name;
  std::optional<int64_t> start_time;
  std::vector<core::Tag> tags;
  // Made SCHEDULED rather than RUNNING: a run that waits to be started elsewhere, such as the
  // first attempt of a task whose code is uploaded before it is queued.
  bool scheduled = false;
};

// One record of a batch (TrackingService::ApplyRunRecords), as its own call would make it.
struct RunRecord {
  enum class Op {
    kCreate,   // CreateRun(create): create.run_id set, create.experiment_id resolved
    kLog,      // LogBatch(run_id, metrics, params, tags)
    kConsole,  // AppendRunLog(run_id, chunks)
    kUpdate,   // the run's status, start and end times where given (a status clears the
               // failure reason a heartbeat sweep gave, as UpdateRun does)
  };
  Op op = Op::kLog;
  std::string run_id;
  CreateRunRequest create;
  std::vector<core::Metric> metrics;
  std::vector<core::Param> params;
  std::vector<core::Tag> tags;
  std::vector<core::ConsoleChunk> chunks;
  store::MetadataStore::RunUpdate update;
};

// Which experiments a search may show; unset: all. Searches leave the others out as if they
// did not exist, before paging, so that pages stay full.
using ExperimentFilter = std::function<bool(std::string_view experiment_id)>;

struct RunSearchRequest {
  std::vector<std::string> experiment_ids;
  ExperimentFilter visible;
  std::string filter;
  core::ViewType view = core::ViewType::kActiveOnly;
  std::optional<int64_t> max_results;
  std::vector<std::string> order_by;
  std::string page_token;
};

struct RunPage {
  std::vector<core::Run> runs;
  std::string next_page_token;  // empty when there is no next page
};

struct ExperimentSearchRequest {
  ExperimentFilter visible;
  std::string filter;
  core::ViewType view = core::ViewType::kActiveOnly;
  std::optional<int64_t> max_results;
  std::vector<std::string> order_by;
  std::string page_token;
};

struct ExperimentPage {
  std::vector<core::Experiment> experiments;
  std::string next_page_token;
};

// A validated metric-history request, ready to stream.
struct MetricHistoryCursor {
  store::MetricHistoryQuery query;
  int64_t page_size = 0;  // 0: everything
};

struct RunMetric {
  std::string run_id;
  core::Metric metric;
};

// A metric's points for a chart (GetMetricSeries), as columns.
struct MetricSeries {
  int64_t total_points = 0;  // in the whole history
  std::vector<int64_t> steps;
  std::vector<int64_t> timestamps;
  std::vector<double> values;
};

class TrackingService {
 public:
  // Neither pointer is owned; both must outlive the service.
  TrackingService(store::MetadataStore* store, Clock* clock) : store_(store), clock_(clock) {}

  Result<std::string> CreateExperiment(const std::string& name,
                                       const std::string& artifact_location,
                                       const std::vector<core::Tag>& tags);
  Result<core::Experiment> GetExperiment(const std::string& experiment_id);
  Result<core::Experiment> GetExperimentByName(const std::string& name);
  Result<ExperimentPage> SearchExperiments(const ExperimentSearchRequest& request);
  Status RenameExperiment(const std::string& experiment_id, const std::string& new_name);
  Status DeleteExperiment(const std::string& experiment_id);
  Status RestoreExperiment(const std::string& experiment_id);
  Status SetExperimentTag(const std::string& experiment_id, const core::Tag& tag);
  Status DeleteExperimentTag(const std::string& experiment_id, const std::string& key);

  Result<core::Run> CreateRun(const CreateRunRequest& request);
  // Applies `records` in order, each checked as its own call would check it, and written
  // without waiting for one another, so that the store commits them as one group (many runs'
  // records cost about one commit). Returns each record's outcome. A run created again with
  // the same experiment (a batch delivered twice) is not an error.
  std::vector<Status> ApplyRunRecords(std::vector<RunRecord> records);
  // Records the decision on a step that waits for approval: `tags` (under kApprovalPrefix) on
  // run `run_id`, once. kFailedPrecondition for a run that waits for no approval;
  // kAlreadyExists naming the decision made before.
  Status DecideApproval(const std::string& run_id, const std::vector<core::Tag>& tags);
  Result<core::RunInfo> UpdateRun(const std::string& run_id, std::optional<core::RunStatus> status,
                                  std::optional<int64_t> end_time,
                                  std::optional<std::string> run_name);
  Status DeleteRun(const std::string& run_id);
  Status RestoreRun(const std::string& run_id);
  Result<core::Run> GetRun(const std::string& run_id);
  Result<core::RunInfo> GetRunInfo(const std::string& run_id);
  Result<RunPage> SearchRuns(const RunSearchRequest& request);
  // Run counts and last activity of every experiment with active runs.
  Result<std::vector<store::ExperimentRunStats>> RunStatsByExperiment();

  Status LogMetric(const std::string& run_id, const core::Metric& metric);
  Status LogParam(const std::string& run_id, const core::Param& param);
  Status SetTag(const std::string& run_id, const core::Tag& tag);
  Status DeleteTag(const std::string& run_id, const std::string& key);
  Status LogBatch(const std::string& run_id, const std::vector<core::Metric>& metrics,
                  const std::vector<core::Param>& params, const std::vector<core::Tag>& tags);
  // LogBatch without waiting (store::MetadataStore::LogBatchAsync): `done` gets the outcome,
  // at once for a batch that fails validation, else once the store has committed it.
  void LogBatchAsync(std::string run_id, std::vector<core::Metric> metrics,
                     std::vector<core::Param> params, std::vector<core::Tag> tags,
                     std::function<void(Status)> done);
  Status LogInputs(const std::string& run_id, const std::vector<core::DatasetInput>& inputs);
  // MLflow's runs/log-model: `model_json` (an MLmodel as JSON, with artifact_path, flavors,
  // utc_time_created and run_id) is appended to the run's mlflow.log-model.history tag, a JSON
  // list; when the list outgrows a tag, its oldest entries give way.
  Status LogModel(const std::string& run_id, const std::string& model_json);

  // A run's console log (store::MetadataStore::AppendRunLog for the rules). Appends at most
  // kMaxLogChunks chunks of non-empty data, kMaxLogAppendBytes in all; returns the length.
  Result<int64_t> AppendRunLog(const std::string& run_id,
                               const std::vector<core::ConsoleChunk>& chunks);
  // The log from `offset` on, at most about max_bytes (0: the default of 1 MiB, at most
  // 16 MiB), with the first chunk trimmed to start at `offset`.
  Result<std::vector<core::ConsoleChunk>> ReadRunLog(const std::string& run_id, int64_t offset,
                                                     int64_t max_bytes);
  static constexpr size_t kMaxLogChunks = 10000;
  // At most this many records in one ApplyRunRecords.
  static constexpr size_t kMaxRunRecords = 10000;

  // Runs that `cairn run` started send a heartbeat (tag kHeartbeatTag, epoch ms). A RUNNING
  // run whose heartbeat is older than `timeout_ms` lost its wrapper (killed, or its host
  // died): it is marked FAILED, ending at its last heartbeat, with the reason in the tag
  // kFailureReasonTag, which goes again when the run's status is next set (its wrapper was
  // only suspended or cut off, and ends the run after all). Runs without a heartbeat (other
  // clients) are left alone. Returns how many runs were failed.
  Result<int> FailStaleRuns(int64_t timeout_ms);
  static constexpr std::string_view kHeartbeatTag = "cairn.heartbeat";
  static constexpr std::string_view kFailureReasonTag = "cairn.failure_reason";
  static constexpr size_t kMaxLogAppendBytes = 8 << 20;

  // A metric's history, paged with max_results (0: everything) and an opaque page token, in
  // two steps so that answers stream as they are read: Open validates the request and checks
  // the run exists; Stream visits the page's points in order and then sets the token of the
  // next page (empty on the last).
  Result<MetricHistoryCursor> OpenMetricHistory(const std::string& run_id, const std::string& key,
                                                int64_t max_results,
                                                const std::string& page_token);
  Status StreamMetricHistory(const MetricHistoryCursor& cursor,
                             const std::function<bool(const core::Metric&)>& visit,
                             std::string* next_page_token);
  // For each run, the points at up to max_results steps spread evenly over the steps the runs
  // logged in [start_step, end_step], always including the first and last.
  // MLflow's metrics/get-history-bulk: the points of up to 100 runs, by run id, each run's by
  // time, then step; at most max_results (capped at kMaxHistoryBulkResults) in all.
  Result<std::vector<RunMetric>> GetMetricHistoryBulk(const std::vector<std::string>& run_ids,
                                                      const std::string& key,
                                                      int64_t max_results);
  // MLflow's experiments/search-datasets over up to 20 experiments (those `visible` refuses
  // are left out; unset: all), at most kMaxDatasetSummaries.
  Result<std::vector<store::DatasetSummary>> SearchDatasets(
      const std::vector<std::string>& experiment_ids,
      const std::function<bool(std::string_view)>& visible);
  Result<std::vector<RunMetric>> GetMetricHistoryBulkInterval(
      const std::vector<std::string>& run_ids, const std::string& key,
      std::optional<int64_t> start_step, std::optional<int64_t> end_step, int64_t max_results);

  // A metric's whole history thinned to at most `max_points` points that keep its peaks and
  // troughs (core::DownsampleMinMax), in (step, timestamp) order. max_points in
  // [kMinSeriesPoints, kMaxSeriesPoints].
  Result<MetricSeries> GetMetricSeries(const std::string& run_id, const std::string& key,
                                       int64_t max_points);
  static constexpr int64_t kMinSeriesPoints = 4;
  static constexpr int64_t kMaxSeriesPoints = 100000;

 private:
  Status RequireActiveRun(const std::string& run_id);
  // The run CreateRun would store for `request`, checked (the run id, the experiment, the
  // tags); `experiment` is the request's, looked up.
  Result<core::Run> NewRun(const CreateRunRequest& request, const core::Experiment& experiment);

  store::MetadataStore* store_;
  Clock* clock_;
  std::mutex log_model_mu_;  // a history tag is read, extended and written as one step
  std::mutex approval_mu_;   // a decision is looked for and written as one step
};

// Page tokens are base64 of {"offset": N}, as MLflow's stores write them.
std::string EncodePageToken(int64_t offset);
Result<int64_t> DecodePageToken(const std::string& token);

}  // namespace cairn::service
