// Handlers of MLflow's tracking API (service.proto's MlflowService). Each decodes, calls one
// TrackingService method and encodes.
#include <optional>

#include "core/mlflow_json.h"
#include "server/routes.h"

namespace cairn::server {

using core::WriteExperiment;
using core::WriteMetric;
using core::WriteRun;
using core::WriteRunInfo;
using core::WriteTags;
namespace {

using core::Tag;

constexpr std::string_view kEmpty = "{}";

Result<core::ViewType> DecodeViewType(const Fields& f, std::string_view name) {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> text, f.Str(name));
  core::ViewType view = core::ViewType::kActiveOnly;
  if (text && !text->empty() && !core::ParseViewType(*text, &view)) {
    return InvalidArgument("Invalid value '" + *text + "' for parameter '" + std::string(name) +
                           "': expected ACTIVE_ONLY, DELETED_ONLY or ALL");
  }
  return view;
}

std::string ExperimentResponse(const core::Experiment& e) {
  JsonWriter w;
  w.BeginObject().Key("experiment");
  WriteExperiment(w, e);
  w.EndObject();
  return w.Take();
}

// --- Experiments ---------------------------------------------------------------------------

Result<std::string> CreateExperiment(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> location, f.Str("artifact_location"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<Tag> tags, DecodeTags(f, "tags"));
  CAIRN_ASSIGN_OR_RETURN(std::string id,
                         ctx.tracking->CreateExperiment(name, location.value_or(""), tags));
  // The creator manages what it made.
  CAIRN_RETURN_IF_ERROR(
      ctx.identity->GrantCreator(*ctx.caller, core::ResourceKind::kExperiment, id));
  JsonWriter w;
  w.BeginObject().Key("experiment_id").String(id).EndObject();
  return w.Take();
}

Result<std::string> GetExperiment(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string id, f.RequiredStr("experiment_id"));
  CAIRN_ASSIGN_OR_RETURN(core::Experiment e, ctx.tracking->GetExperiment(id));
  return ExperimentResponse(e);
}

Result<std::string> GetExperimentByName(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("experiment_name"));
  CAIRN_ASSIGN_OR_RETURN(core::Experiment e, ctx.tracking->GetExperimentByName(name));
  return ExperimentResponse(e);
}

Result<std::string> SearchExperiments(ApiContext& ctx, const Fields& f) {
  service::ExperimentSearchRequest req;
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> filter, f.Str("filter"));
  req.filter = filter.value_or("");
  CAIRN_ASSIGN_OR_RETURN(req.view, DecodeViewType(f, "view_type"));
  CAIRN_ASSIGN_OR_RETURN(req.max_results, f.Int("max_results"));
  CAIRN_ASSIGN_OR_RETURN(req.order_by, f.StrList("order_by"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> token, f.Str("page_token"));
  req.page_token = token.value_or("");
  req.visible = ctx.may_read_experiment;
  CAIRN_ASSIGN_OR_RETURN(service::ExperimentPage page, ctx.tracking->SearchExperiments(req));
  JsonWriter w;
  w.BeginObject();
  if (!page.experiments.empty()) {
    w.Key("experiments").BeginArray();
    for (const core::Experiment& e : page.experiments) WriteExperiment(w, e);
    w.EndArray();
  }
  if (!page.next_page_token.empty()) w.Key("next_page_token").String(page.next_page_token);
  w.EndObject();
  return w.Take();
}

Result<std::string> UpdateExperiment(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string id, f.RequiredStr("experiment_id"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> name, f.Str("new_name"));
  if (name) {
    CAIRN_RETURN_IF_ERROR(ctx.tracking->RenameExperiment(id, *name));
  } else {
    CAIRN_RETURN_IF_ERROR(ctx.tracking->GetExperiment(id).status());
  }
  return std::string(kEmpty);
}

Result<std::string> DeleteExperiment(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string id, f.RequiredStr("experiment_id"));
  CAIRN_RETURN_IF_ERROR(ctx.tracking->DeleteExperiment(id));
  return std::string(kEmpty);
}

Result<std::string> RestoreExperiment(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string id, f.RequiredStr("experiment_id"));
  CAIRN_RETURN_IF_ERROR(ctx.tracking->RestoreExperiment(id));
  return std::string(kEmpty);
}

Result<std::string> SetExperimentTag(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string id, f.RequiredStr("experiment_id"));
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> value, f.Str("value"));
  CAIRN_RETURN_IF_ERROR(ctx.tracking->SetExperimentTag(id, {key, value.value_or("")}));
  return std::string(kEmpty);
}

Result<std::string> DeleteExperimentTag(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string id, f.RequiredStr("experiment_id"));
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
  CAIRN_RETURN_IF_ERROR(ctx.tracking->DeleteExperimentTag(id, key));
  return std::string(kEmpty);
}

// --- Runs ----------------------------------------------------------------------------------

std::string RunResponse(const core::Run& run) {
  JsonWriter w;
  w.BeginObject().Key("run");
  WriteRun(w, run);
  w.EndObject();
  return w.Take();
}

Result<std::string> CreateRun(ApiContext& ctx, const Fields& f) {
  service::CreateRunRequest req;
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> exp, f.Str("experiment_id"));
  req.experiment_id = exp.value_or("0");
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> user, f.Str("user_id"));
  req.user_id = user.value_or("");
  // Signed in, the run is the account's, whatever name the client's machine gave.
  if (ctx.access->enabled() && !ctx.caller->username.empty()) req.user_id = ctx.caller->username;
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> name, f.Str("run_name"));
  req.run_name = name.value_or("");
  CAIRN_ASSIGN_OR_RETURN(req.start_time, f.Int("start_time"));
  CAIRN_ASSIGN_OR_RETURN(req.tags, DecodeTags(f, "tags"));
  CAIRN_ASSIGN_OR_RETURN(core::Run run, ctx.tracking->CreateRun(req));
  return RunResponse(run);
}

Result<std::string> UpdateRun(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RunId());
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> status_text, f.Str("status"));
  std::optional<core::RunStatus> status;
  if (status_text) {
    core::RunStatus s;
    if (!core::ParseRunStatus(*status_text, &s)) {
      return InvalidArgument("Invalid value '" + *status_text +
                             "' for parameter 'status': expected RUNNING, SCHEDULED, FINISHED, "
                             "FAILED or KILLED");
    }
    status = s;
  }
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> end_time, f.Int("end_time"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> name, f.Str("run_name"));
  CAIRN_ASSIGN_OR_RETURN(core::RunInfo info,
                         ctx.tracking->UpdateRun(run_id, status, end_time, name));
  JsonWriter w;
  w.BeginObject().Key("run_info");
  WriteRunInfo(w, info);
  w.EndObject();
  return w.Take();
}

Result<std::string> DeleteRun(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RunId());
  CAIRN_RETURN_IF_ERROR(ctx.tracking->DeleteRun(run_id));
  return std::string(kEmpty);
}

Result<std::string> RestoreRun(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RunId());
  CAIRN_RETURN_IF_ERROR(ctx.tracking->RestoreRun(run_id));
  return std::string(kEmpty);
}

Result<std::string> GetRun(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RunId());
  CAIRN_ASSIGN_OR_RETURN(core::Run run, ctx.tracking->GetRun(run_id));
  return RunResponse(run);
}

Result<std::string> SearchRuns(ApiContext& ctx, const Fields& f) {
  service::RunSearchRequest req;
  CAIRN_ASSIGN_OR_RETURN(req.experiment_ids, f.StrList("experiment_ids"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> filter, f.Str("filter"));
  req.filter = filter.value_or("");
  CAIRN_ASSIGN_OR_RETURN(req.view, DecodeViewType(f, "run_view_type"));
  CAIRN_ASSIGN_OR_RETURN(req.max_results, f.Int("max_results"));
  CAIRN_ASSIGN_OR_RETURN(req.order_by, f.StrList("order_by"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> token, f.Str("page_token"));
  req.page_token = token.value_or("");
  req.visible = ctx.may_read_experiment;
  CAIRN_ASSIGN_OR_RETURN(service::RunPage page, ctx.tracking->SearchRuns(req));
  JsonWriter w;
  w.BeginObject();
  if (!page.runs.empty()) {
    w.Key("runs").BeginArray();
    for (const core::Run& run : page.runs) WriteRun(w, run);
    w.EndArray();
  }
  if (!page.next_page_token.empty()) w.Key("next_page_token").String(page.next_page_token);
  w.EndObject();
  return w.Take();
}

// --- Logging -------------------------------------------------------------------------------

Result<std::string> DeleteTag(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RunId());
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
  CAIRN_RETURN_IF_ERROR(ctx.tracking->DeleteTag(run_id, key));
  return std::string(kEmpty);
}

// The logging calls are answered without a thread waiting on the store: the batch is queued
// for the writer, and `reply` runs once it has committed.
void LogBatchThen(ApiContext& ctx, std::string run_id, std::vector<core::Metric> metrics,
                  std::vector<core::Param> params, std::vector<core::Tag> tags,
                  const Reply& reply) {
  ctx.tracking->LogBatchAsync(std::move(run_id), std::move(metrics), std::move(params),
                              std::move(tags), [reply](Status s) {
                                if (s.ok()) return reply(std::string(kEmpty));
                                reply(std::move(s));
                              });
}

// Decodes with `decode`, answering its error at once, else logs what it decoded.
template <typename Decode>
void DecodeThenLog(ApiContext& ctx, const Fields& f, const Reply& reply, Decode decode) {
  std::string run_id;
  std::vector<core::Metric> metrics;
  std::vector<core::Param> params;
  std::vector<core::Tag> tags;
  Status decoded = [&]() -> Status {
    CAIRN_ASSIGN_OR_RETURN(run_id, f.RunId());
    return decode(metrics, params, tags);
  }();
  if (!decoded.ok()) return reply(std::move(decoded));
  LogBatchThen(ctx, std::move(run_id), std::move(metrics), std::move(params), std::move(tags),
               reply);
}

void LogMetric(ApiContext& ctx, const Fields& f, Reply reply) {
  DecodeThenLog(ctx, f, reply, [&](auto& metrics, auto&, auto&) -> Status {
    CAIRN_ASSIGN_OR_RETURN(core::Metric m, DecodeMetric(f));
    metrics.push_back(std::move(m));
    return Status::Ok();
  });
}

void LogParam(ApiContext& ctx, const Fields& f, Reply reply) {
  DecodeThenLog(ctx, f, reply, [&](auto&, auto& params, auto&) -> Status {
    CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
    CAIRN_ASSIGN_OR_RETURN(std::string value, f.RequiredStr("value"));
    params.push_back({std::move(key), std::move(value)});
    return Status::Ok();
  });
}

void SetTag(ApiContext& ctx, const Fields& f, Reply reply) {
  DecodeThenLog(ctx, f, reply, [&](auto&, auto&, auto& tags) -> Status {
    CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
    CAIRN_ASSIGN_OR_RETURN(std::string value, f.RequiredStr("value"));
    tags.push_back({std::move(key), std::move(value)});
    return Status::Ok();
  });
}

void LogBatch(ApiContext& ctx, const Fields& f, Reply reply) {
  DecodeThenLog(ctx, f, reply, [&](auto& metrics, auto& params, auto& tags) -> Status {
    CAIRN_ASSIGN_OR_RETURN(std::vector<Fields> metric_fields, f.Objects("metrics"));
    metrics.reserve(metric_fields.size());
    for (const Fields& m : metric_fields) {
      CAIRN_ASSIGN_OR_RETURN(core::Metric metric, DecodeMetric(m));
      metrics.push_back(std::move(metric));
    }
    CAIRN_ASSIGN_OR_RETURN(std::vector<Tag> param_tags, DecodeTags(f, "params"));
    params.reserve(param_tags.size());
    for (Tag& t : param_tags) params.push_back({std::move(t.key), std::move(t.value)});
    CAIRN_ASSIGN_OR_RETURN(tags, DecodeTags(f, "tags"));
    return Status::Ok();
  });
}

Result<std::string> LogInputs(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RunId());
  if (!f.Has("datasets")) return service::MissingParameter("datasets");
  CAIRN_ASSIGN_OR_RETURN(std::vector<Fields> items, f.Objects("datasets"));
  std::vector<core::DatasetInput> inputs;
  for (const Fields& item : items) {
    core::DatasetInput in;
    CAIRN_ASSIGN_OR_RETURN(in.tags, DecodeTags(item, "tags"));
    CAIRN_ASSIGN_OR_RETURN(std::optional<Fields> ds, item.Object("dataset"));
    if (!ds) return service::MissingParameter("datasets[].dataset");
    core::Dataset& d = in.dataset;
    CAIRN_ASSIGN_OR_RETURN(d.name, ds->RequiredStr("name"));
    CAIRN_ASSIGN_OR_RETURN(d.digest, ds->RequiredStr("digest"));
    CAIRN_ASSIGN_OR_RETURN(d.source_type, ds->RequiredStr("source_type"));
    CAIRN_ASSIGN_OR_RETURN(d.source, ds->RequiredStr("source"));
    CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> schema, ds->Str("schema"));
    CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> profile, ds->Str("profile"));
    d.schema = schema.value_or("");
    d.profile = profile.value_or("");
    inputs.push_back(std::move(in));
  }
  CAIRN_RETURN_IF_ERROR(ctx.tracking->LogInputs(run_id, inputs));
  return std::string(kEmpty);
}

Result<std::string> LogModel(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RunId());
  CAIRN_ASSIGN_OR_RETURN(std::string model_json, f.RequiredStr("model_json"));
  CAIRN_RETURN_IF_ERROR(ctx.tracking->LogModel(run_id, model_json));
  return std::string(kEmpty);
}

Result<BodyStream> GetMetricHistory(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RunId());
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("metric_key"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> max_results, f.Int("max_results"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> token, f.Str("page_token"));
  CAIRN_ASSIGN_OR_RETURN(service::MetricHistoryCursor cursor,
                         ctx.tracking->OpenMetricHistory(run_id, key, max_results.value_or(0),
                                                         token.value_or("")));
  service::TrackingService* tracking = ctx.tracking;
  return BodyStream([tracking, cursor](const BodyWriter& write) -> Status {
    constexpr size_t kSlice = 256 << 10;
    JsonWriter w;
    w.Reserve(kSlice + 1024);
    w.BeginObject();
    bool any = false, client_gone = false;
    std::string next_token;
    Status s = tracking->StreamMetricHistory(
        cursor,
        [&](const core::Metric& m) {
          if (!any) w.Key("metrics").BeginArray();
          any = true;
          WriteMetric(w, m);
          if (w.str().size() >= kSlice) {
            client_gone = !write(w.str());
            w.ClearBuffer();
          }
          return !client_gone;
        },
        &next_token);
    if (client_gone) return Unavailable("client closed the connection");
    CAIRN_RETURN_IF_ERROR(s);
    if (any) w.EndArray();
    if (!next_token.empty()) w.Key("next_page_token").String(next_token);
    w.EndObject();
    if (!write(w.str())) return Unavailable("client closed the connection");
    return Status::Ok();
  });
}

Result<std::string> GetMetricHistoryBulkInterval(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> run_ids, f.StrList("run_ids"));
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("metric_key"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> start, f.Int("start_step"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> end, f.Int("end_step"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> max_results, f.Int("max_results"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<service::RunMetric> rows,
                         ctx.tracking->GetMetricHistoryBulkInterval(run_ids, key, start, end,
                                                                    max_results.value_or(2500)));
  JsonWriter w;
  w.BeginObject();
  if (!rows.empty()) {
    w.Key("metrics").BeginArray();
    for (const service::RunMetric& r : rows) WriteMetric(w, r.metric, r.run_id);
    w.EndArray();
  }
  w.EndObject();
  return w.Take();
}

// The UI's bulk history (an /ajax-api route in MLflow): rows carry their run id.
Result<std::string> GetMetricHistoryBulk(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> run_ids, f.StrList("run_id"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> key, f.Str("metric_key"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> max_results, f.Int("max_results"));
  CAIRN_ASSIGN_OR_RETURN(
      std::vector<service::RunMetric> rows,
      ctx.tracking->GetMetricHistoryBulk(run_ids, key.value_or(""),
                                         max_results.value_or(service::kMaxHistoryBulkResults)));
  JsonWriter w;
  w.BeginObject().Key("metrics").BeginArray();
  for (const service::RunMetric& r : rows) WriteMetric(w, r.metric, r.run_id);
  w.EndArray().EndObject();
  return w.Take();
}

// The UI's dataset list of experiments (an /ajax-api route in MLflow).
Result<std::string> SearchDatasets(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> ids, f.StrList("experiment_ids"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<store::DatasetSummary> found,
                         ctx.tracking->SearchDatasets(ids, ctx.may_read_experiment));
  JsonWriter w;
  w.BeginObject().Key("dataset_summaries").BeginArray();
  for (const store::DatasetSummary& d : found) {
    w.BeginObject().Key("context");
    if (d.context.empty()) {
      w.Null();
    } else {
      w.String(d.context);
    }
    w.Key("digest").String(d.digest).Key("experiment_id").String(d.experiment_id);
    w.Key("name").String(d.name).EndObject();
  }
  w.EndArray().EndObject();
  return w.Take();
}

Result<std::string> ListArtifacts(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RunId());
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> path, f.Str("path"));
  CAIRN_ASSIGN_OR_RETURN(core::RunInfo info, ctx.tracking->GetRunInfo(run_id));
  CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactEntry> entries,
                         ctx.artifacts->ListRunArtifacts(info.artifact_uri, path.value_or("")));
  JsonWriter w;
  w.BeginObject().Key("root_uri").String(info.artifact_uri);
  if (!entries.empty()) {
    w.Key("files").BeginArray();
    for (const store::ArtifactEntry& e : entries) {
      w.BeginObject().Key("path").String(e.name).Key("is_dir").Bool(e.is_dir);
      if (!e.is_dir) w.Key("file_size").Int(e.size);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  return w.Take();
}

Result<std::string> SearchLoggedModels(ApiContext&, const Fields&) {
  return std::string("{\"models\":[]}");
}

constexpr Route kMlflowRoutes[] = {
    {"POST", "experiments/create", CreateExperiment},
    {"GET", "experiments/get", GetExperiment},
    {"GET", "experiments/get-by-name", GetExperimentByName},
    {"POST", "experiments/search", SearchExperiments},
    {"GET", "experiments/search", SearchExperiments},
    {"POST", "experiments/update", UpdateExperiment},
    {"POST", "experiments/delete", DeleteExperiment},
    {"POST", "experiments/restore", RestoreExperiment},
    {"POST", "experiments/set-experiment-tag", SetExperimentTag},
    {"POST", "experiments/delete-experiment-tag", DeleteExperimentTag},
    {"POST", "runs/create", CreateRun},
    {"POST", "runs/update", UpdateRun},
    {"POST", "runs/delete", DeleteRun},
    {"POST", "runs/restore", RestoreRun},
    {"GET", "runs/get", GetRun},
    {"POST", "runs/search", SearchRuns},
    {"POST", "runs/delete-tag", DeleteTag},
    {"POST", "runs/log-inputs", LogInputs},
    {"POST", "runs/log-model", LogModel},
    {"GET", "metrics/get-history-bulk-interval", GetMetricHistoryBulkInterval},
    {"GET", "metrics/get-history-bulk", GetMetricHistoryBulk},
    {"POST", "experiments/search-datasets", SearchDatasets},
    {"GET", "artifacts/list", ListArtifacts},
    {"POST", "logged-models/search", SearchLoggedModels},
};

constexpr AsyncRoute kAsyncRoutes[] = {
    {"POST", "runs/log-metric", LogMetric},
    {"POST", "runs/log-parameter", LogParam},
    {"POST", "runs/set-tag", SetTag},
    {"POST", "runs/log-batch", LogBatch},
};

constexpr StreamRoute kStreamRoutes[] = {
    {"GET", "metrics/get-history", GetMetricHistory},
};

}  // namespace

std::span<const Route> MlflowRoutes() { return kMlflowRoutes; }

std::span<const StreamRoute> MlflowStreamRoutes() { return kStreamRoutes; }

std::span<const AsyncRoute> MlflowAsyncRoutes() { return kAsyncRoutes; }

}  // namespace cairn::server
