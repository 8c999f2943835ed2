#include "server/cairn_api.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/mlflow_json.h"
#include "server/access_rules.h"
#include "server/http_errors.h"
#include "service/reproduction.h"
#include "service/run_environment.h"
#include "util/clock.h"
#include "util/json_writer.h"

namespace cairn::server {
namespace {

// The chunks of a console log upload.
Result<std::vector<core::ConsoleChunk>> DecodeChunks(const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<Fields> items, f.Objects("chunks"));
  std::vector<core::ConsoleChunk> chunks;
  chunks.reserve(items.size());
  for (const Fields& item : items) {
    core::ConsoleChunk c;
    CAIRN_ASSIGN_OR_RETURN(c.offset, item.RequiredInt("offset"));
    CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> stream, item.Str("stream"));
    if (stream && !core::ParseConsoleStream(*stream, &c.stream)) {
      return InvalidArgument("Invalid value '" + *stream +
                             "' for 'stream': expected stdout or stderr");
    }
    CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> timestamp, item.Int("timestamp"));
    c.timestamp = timestamp.value_or(0);
    CAIRN_ASSIGN_OR_RETURN(c.data, item.RequiredStr("data"));
    chunks.push_back(std::move(c));
  }
  return chunks;
}

Result<CairnResponse> AppendLog(ApiContext& ctx, const CairnCall& call) {
  const std::string run_id(call.wildcard);
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::ConsoleChunk> chunks, DecodeChunks(call.fields));
  CAIRN_ASSIGN_OR_RETURN(int64_t length, ctx.tracking->AppendRunLog(run_id, chunks));
  JsonWriter w;
  w.BeginObject().Key("length").Int(length).EndObject();
  return CairnResponse{w.Take()};
}

Result<CairnResponse> ReadLog(ApiContext& ctx, const CairnCall& call) {
  const std::string run_id(call.wildcard);
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> offset, f.Int("offset"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> max_bytes, f.Int("max_bytes"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> format, f.Str("format"));
  if (format && *format != "json" && *format != "text") {
    return InvalidArgument("Invalid value '" + *format + "' for 'format': expected text or json");
  }
  // The status first: a follower that sees a finished run after reading knows it has it all.
  CAIRN_ASSIGN_OR_RETURN(core::RunInfo info, ctx.tracking->GetRunInfo(run_id));
  const int64_t from = offset.value_or(0);
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::ConsoleChunk> chunks,
                         ctx.tracking->ReadRunLog(run_id, from, max_bytes.value_or(0)));
  int64_t next = from;
  for (const core::ConsoleChunk& c : chunks) next = c.offset + static_cast<int64_t>(c.data.size());
  const std::string status(core::RunStatusName(info.status));
  CairnResponse out;
  if (format.value_or("text") == "json") {
    JsonWriter w;
    w.BeginObject();
    w.Key("offset").Int(from).Key("next_offset").Int(next).Key("run_status").String(status);
    w.Key("chunks").BeginArray();
    for (const core::ConsoleChunk& c : chunks) core::WriteConsoleChunk(w, c);
    w.EndArray().EndObject();
    out.body = w.Take();
  } else {
    for (const core::ConsoleChunk& c : chunks) out.body += c.data;
    out.content_type = "text/plain; charset=utf-8";
  }
  out.headers = {{"X-Cairn-Log-Offset", std::to_string(from)},
                 {"X-Cairn-Log-Next-Offset", std::to_string(next)},
                 {"X-Cairn-Run-Status", status}};
  return out;
}

// GET metrics/series: a metric thinned for a chart (see docs/api/cairn.md).
Result<CairnResponse> MetricSeries(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RequiredStr("run_id"));
  CAIRN_ASSIGN_OR_RETURN(std::string key, f.RequiredStr("key"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> points, f.Int("points"));
  CAIRN_ASSIGN_OR_RETURN(service::MetricSeries series,
                         ctx.tracking->GetMetricSeries(run_id, key, points.value_or(2000)));
  JsonWriter w;
  w.BeginObject();
  w.Key("run_id").String(run_id).Key("key").String(key);
  w.Key("total_points").Int(series.total_points);
  w.Key("steps").BeginArray();
  for (int64_t v : series.steps) w.Int(v);
  w.EndArray().Key("timestamps").BeginArray();
  for (int64_t v : series.timestamps) w.Int(v);
  w.EndArray().Key("values").BeginArray();
  for (double v : series.values) w.Double(v);
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

// GET experiments/stats: run counts and last activity per experiment (see docs/api/cairn.md).
Result<CairnResponse> ExperimentStats(ApiContext& ctx, const CairnCall&) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<store::ExperimentRunStats> stats,
                         ctx.tracking->RunStatsByExperiment());
  JsonWriter w;
  w.BeginObject().Key("experiments").BeginArray();
  for (const store::ExperimentRunStats& st : stats) {
    if (ctx.may_read_experiment && !ctx.may_read_experiment(st.experiment_id)) continue;
    w.BeginObject();
    w.Key("experiment_id").String(st.experiment_id);
    w.Key("runs").Int(st.runs).Key("running").Int(st.running);
    w.Key("last_activity").Int(st.last_activity);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

// POST runs: creates a run under an id the client chose (see docs/api/cairn.md).
// The experiment a new run goes to: experiment_id, else experiment_name (created when
// missing, the caller its creator), else the default experiment "0".
Result<std::string> ExperimentForNewRun(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> experiment_id, f.Str("experiment_id"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> experiment_name, f.Str("experiment_name"));
  if (experiment_id) return *experiment_id;
  if (!experiment_name) return std::string("0");
  Result<core::Experiment> e = ctx.tracking->GetExperimentByName(*experiment_name);
  if (!e.ok() && e.status().code() == StatusCode::kNotFound) {
    Result<std::string> id = ctx.tracking->CreateExperiment(*experiment_name, "", {});
    if (id.ok()) {
      CAIRN_RETURN_IF_ERROR(
          ctx.identity->GrantCreator(*ctx.caller, core::ResourceKind::kExperiment, *id));
    }
    // Created meanwhile by another client: look it up again.
    if (!id.ok() && id.status().code() == StatusCode::kAlreadyExists) {
      e = ctx.tracking->GetExperimentByName(*experiment_name);
    } else {
      CAIRN_RETURN_IF_ERROR(id.status());
      e = ctx.tracking->GetExperiment(*id);
    }
  }
  CAIRN_RETURN_IF_ERROR(e.status());
  return e->experiment_id;
}

// A new run's creation, as POST runs takes it (see docs/api/cairn.md), in `experiment_id`.
Result<service::CreateRunRequest> DecodeNewRun(ApiContext& ctx, const Fields& f,
                                               std::string experiment_id) {
  service::CreateRunRequest req;
  CAIRN_ASSIGN_OR_RETURN(req.run_id, f.RequiredStr("run_id"));
  req.experiment_id = std::move(experiment_id);
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> user, f.Str("user_id"));
  req.user_id = user.value_or("");
  // Signed in, the run is the account's, whatever name the client's machine gave.
  if (ctx.access->enabled() && !ctx.caller->username.empty()) req.user_id = ctx.caller->username;
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> name, f.Str("run_name"));
  req.run_name = name.value_or("");
  CAIRN_ASSIGN_OR_RETURN(req.start_time, f.Int("start_time"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> status, f.Str("status"));
  if (status && *status != "RUNNING" && *status != "SCHEDULED") {
    return InvalidArgument("Invalid value '" + *status +
                           "' for 'status': a new run is RUNNING or SCHEDULED");
  }
  req.scheduled = status == "SCHEDULED";
  CAIRN_ASSIGN_OR_RETURN(req.tags, DecodeTags(f, "tags"));
  return req;
}

Result<CairnResponse> CreateRun(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::string experiment_id, ExperimentForNewRun(ctx, f));
  if (!f.Has("experiment_id") && f.Has("experiment_name")) {
    // The gate let an experiment to be created through; one that appeared meanwhile must
    // still be the caller's to write to.
    CAIRN_ASSIGN_OR_RETURN(
        core::Permission p,
        ctx.access->PermissionOn(*ctx.caller, core::ResourceKind::kExperiment, experiment_id));
    if (!core::Allows(p, core::Access::kUpdate)) return PermissionDenied("Permission denied");
  }
  CAIRN_ASSIGN_OR_RETURN(service::CreateRunRequest req, DecodeNewRun(ctx, f, experiment_id));
  CAIRN_ASSIGN_OR_RETURN(core::Run run, ctx.tracking->CreateRun(req));
  JsonWriter w;
  w.BeginObject();
  w.Key("run_id").String(run.info.run_id);
  w.Key("experiment_id").String(run.info.experiment_id);
  w.Key("artifact_uri").String(run.info.artifact_uri);
  w.EndObject();
  return CairnResponse{w.Take()};
}

// POST runs/records: many runs' records in one request, applied in order and committed
// together (see docs/api/cairn.md). Each record is checked as its own call would be, the
// caller's access among it; the answer lists the records that failed, by index.
Result<CairnResponse> ApplyRunRecords(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<Fields> items, call.fields.Objects("records"));
  if (items.size() > service::TrackingService::kMaxRunRecords) {
    return InvalidArgument("A records request may hold at most " +
                           std::to_string(service::TrackingService::kMaxRunRecords) +
                           " records, got " + std::to_string(items.size()));
  }
  std::vector<Status> failed(items.size());
  // The records decoded, by their index in `items`; an artifact (a file of the run, with its
  // content) is written through the artifact store rather than the run's records.
  struct Decoded {
    size_t index = 0;
    service::RunRecord record;
    // An artifact: its path, and its content or (a blob sent before) its digest.
    struct Artifact {
      std::string path;
      std::string content;
      std::string blob;
    };
    std::optional<Artifact> artifact;
  };
  std::vector<Decoded> decoded;
  std::vector<Decoded> creates;  // applied first: the other records' checks see their runs
  // What the caller may do, asked once per experiment and run.
  std::map<std::string, Status> experiment_ok, run_ok;
  auto may_update_experiment = [&](const std::string& id) -> Status {
    auto it = experiment_ok.find(id);
    if (it != experiment_ok.end()) return it->second;
    Status s = [&]() -> Status {
      CAIRN_ASSIGN_OR_RETURN(
          bool may, CallerMay(ctx, core::ResourceKind::kExperiment, id, core::Access::kUpdate));
      return may ? Status::Ok() : PermissionDenied("Permission denied");
    }();
    return experiment_ok[id] = s;
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const Fields& f = items[i];
    std::optional<Decoded::Artifact> artifact;
    Result<service::RunRecord> record = [&]() -> Result<service::RunRecord> {
      service::RunRecord r;
      CAIRN_ASSIGN_OR_RETURN(r.run_id, f.RequiredStr("run_id"));
      CAIRN_ASSIGN_OR_RETURN(std::string op, f.RequiredStr("op"));
      if (op == "create") {
        CAIRN_ASSIGN_OR_RETURN(std::string experiment, ExperimentForNewRun(ctx, f));
        CAIRN_RETURN_IF_ERROR(may_update_experiment(experiment));
        r.op = service::RunRecord::Op::kCreate;
        CAIRN_ASSIGN_OR_RETURN(r.create, DecodeNewRun(ctx, f, experiment));
        return r;
      }
      if (op == "batch") {
        r.op = service::RunRecord::Op::kLog;
        CAIRN_ASSIGN_OR_RETURN(std::vector<Fields> metrics, f.Objects("metrics"));
        for (const Fields& m : metrics) {
          CAIRN_ASSIGN_OR_RETURN(core::Metric metric, DecodeMetric(m));
          r.metrics.push_back(std::move(metric));
        }
        CAIRN_ASSIGN_OR_RETURN(std::vector<core::Tag> params, DecodeTags(f, "params"));
        for (core::Tag& p : params) r.params.push_back({std::move(p.key), std::move(p.value)});
        CAIRN_ASSIGN_OR_RETURN(r.tags, DecodeTags(f, "tags"));
      } else if (op == "log") {
        r.op = service::RunRecord::Op::kConsole;
        CAIRN_ASSIGN_OR_RETURN(r.chunks, DecodeChunks(f));
      } else if (op == "artifact" || op == "blob") {
        artifact.emplace();
        CAIRN_ASSIGN_OR_RETURN(std::string path, f.RequiredStr("path"));
        CAIRN_ASSIGN_OR_RETURN(artifact->path,
                               service::NormalizeArtifactPath(path, /*allow_root=*/false));
        if (op == "blob") {
          CAIRN_ASSIGN_OR_RETURN(artifact->blob, f.RequiredStr("sha256"));
        } else {
          CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> content, f.Str("content"));
          artifact->content = content.value_or("");
        }
      } else if (op == "start" || op == "end") {
        r.op = service::RunRecord::Op::kUpdate;
        if (op == "start") {
          r.update.status = core::RunStatus::kRunning;
          CAIRN_ASSIGN_OR_RETURN(r.update.start_time, f.Int("start_time"));
        } else {
          CAIRN_ASSIGN_OR_RETURN(std::string status, f.RequiredStr("status"));
          core::RunStatus s;
          if (!core::ParseRunStatus(status, &s)) {
            return InvalidArgument("Invalid value '" + status +
                                   "' for 'status': expected RUNNING, SCHEDULED, FINISHED, "
                                   "FAILED or KILLED");
          }
          r.update.status = s;
          CAIRN_ASSIGN_OR_RETURN(r.update.end_time, f.Int("end_time"));
        }
      } else {
        return InvalidArgument(
            "Invalid value '" + op +
            "' for 'op': expected create, batch, log, artifact, blob, start or end");
      }
      return r;
    }();
    if (!record.ok()) {
      failed[i] = record.status();
      continue;
    }
    (record->op == service::RunRecord::Op::kCreate ? creates : decoded)
        .push_back({i, std::move(*record), std::move(artifact)});
  }
  // The runs' creations first, then every other record is checked against the run as it now
  // is: a run this request created is the caller's, and one that existed (a create refused, a
  // run of someone else's) is checked like any other.
  if (!creates.empty()) {
    std::vector<service::RunRecord> records;
    for (Decoded& c : creates) records.push_back(std::move(c.record));
    std::vector<Status> applied = ctx.tracking->ApplyRunRecords(std::move(records));
    for (size_t j = 0; j < creates.size(); ++j) failed[creates[j].index] = std::move(applied[j]);
  }
  if (ctx.access->enabled()) {
    std::vector<Decoded> allowed;
    for (Decoded& d : decoded) {
      auto it = run_ok.find(d.record.run_id);
      if (it == run_ok.end()) {
        it = run_ok
                 .emplace(d.record.run_id,
                          RequireRunAccess(ctx, d.record.run_id, core::Access::kUpdate))
                 .first;
      }
      if (it->second.ok()) {
        allowed.push_back(std::move(d));
      } else {
        failed[d.index] = it->second;
      }
    }
    decoded = std::move(allowed);
  }
  // Runs of records go to the store together; an artifact is written in its turn, after the
  // records before it.
  std::map<std::string, Result<std::string>> proxy_paths;  // run -> where its artifacts go
  for (size_t k = 0; k < decoded.size();) {
    size_t end = k;
    while (end < decoded.size() && !decoded[end].artifact) ++end;
    if (end > k) {
      std::vector<service::RunRecord> records;
      for (size_t j = k; j < end; ++j) records.push_back(std::move(decoded[j].record));
      std::vector<Status> applied = ctx.tracking->ApplyRunRecords(std::move(records));
      for (size_t j = k; j < end; ++j) failed[decoded[j].index] = std::move(applied[j - k]);
      k = end;
      continue;
    }
    Decoded& d = decoded[k++];
    auto root = proxy_paths.find(d.record.run_id);
    if (root == proxy_paths.end()) {
      Result<core::RunInfo> run = ctx.tracking->GetRunInfo(d.record.run_id);
      root = proxy_paths
                 .emplace(d.record.run_id, run.ok() ? service::ProxyPathOfUri(run->artifact_uri)
                                                    : Result<std::string>(run.status()))
                 .first;
    }
    if (!root->second.ok()) {
      failed[d.index] = root->second.status();
      continue;
    }
    const std::string path = *root->second + "/" + d.artifact->path;
    failed[d.index] =
        d.artifact->blob.empty()
            ? ctx.artifacts->PutBytes(path, d.artifact->content)
            : ctx.datasets->LinkBlob(ctx.caller != nullptr ? ctx.caller->username : "", path,
                                     d.artifact->blob);
  }
  JsonWriter w;
  w.BeginObject().Key("failures").BeginArray();
  for (size_t i = 0; i < failed.size(); ++i) {
    if (failed[i].ok()) continue;
    w.BeginObject().Key("index").Int(static_cast<int64_t>(i));
    w.Key("error_code").String(ToHttpError(failed[i].code()).error_code);
    w.Key("message").String(failed[i].message()).EndObject();
  }
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

// POST runs/approval {"run_id", "decision": "approve"|"reject", "comment"}: decides on a
// pipeline step that waits for approval (its run names the approver in cairn.approval.by). The
// caller must be that user or a member of that team (an admin may decide any); the decision
// goes into the run's tags, where the pipeline's runner reads it, and stands once made.
Result<CairnResponse> DecideApproval(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RequiredStr("run_id"));
  CAIRN_ASSIGN_OR_RETURN(std::string decision, f.RequiredStr("decision"));
  if (decision != "approve" && decision != "reject") {
    return InvalidArgument("Invalid value '" + decision +
                           "' for 'decision': expected approve or reject");
  }
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> comment, f.Str("comment"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> user, f.Str("user"));
  const std::string outcome = decision == "approve" ? "approved" : "rejected";
  const core::Principal* caller = ctx.caller;
  // Without sign-in, the name the client gives (its machine's user), for the record.
  const std::string decided_by =
      ctx.access->enabled() && caller != nullptr ? caller->username : user.value_or("");
  Status decided = [&]() -> Status {
    CAIRN_RETURN_IF_ERROR(ctx.tracking->GetRunInfo(run_id).status());
    if (ctx.access->enabled() && caller != nullptr && !caller->ActsAsAdmin()) {
      // The route is open to readers: deciding still takes a token that may write.
      if (!caller->scopes.write) return PermissionDenied("Permission denied: a read-only token");
      CAIRN_ASSIGN_OR_RETURN(core::Run run, ctx.tracking->GetRun(run_id));
      const core::Tag* by = run.FindTag(service::kApprovalByTag);
      const bool named = by != nullptr && (caller->username == by->value ||
                                           std::find(caller->teams.begin(), caller->teams.end(),
                                                     by->value) != caller->teams.end());
      if (by != nullptr && !named) {
        return PermissionDenied("Permission denied: the step of run " + run_id +
                                " is approved by " + by->value);
      }
    }
    std::vector<core::Tag> tags = {
        {std::string(service::kApprovalDecisionTag), outcome},
        {std::string(service::kApprovalDecidedByTag), decided_by},
        {"cairn.approval.time", std::to_string(SystemClock()->NowMillis())}};
    if (comment && !comment->empty()) tags.push_back({"cairn.approval.comment", *comment});
    return ctx.tracking->DecideApproval(run_id, tags);
  }();
  // The route is open to readers, whose calls are not audited: a decision, or an attempt at
  // one, always is.
  core::AuditEntry entry;
  entry.time = SystemClock()->NowMillis();
  entry.actor = caller != nullptr ? caller->username : "";
  if (caller != nullptr && !caller->token_name.empty()) entry.actor += "/" + caller->token_name;
  entry.source = std::string(ctx.remote_address);
  entry.action = "POST runs/approval (" + outcome + ")";
  entry.object = "run " + run_id;
  entry.outcome =
      decided.ok() ? "ok"
                   : std::string(ToHttpError(decided.code()).error_code) + ": " + decided.message();
  ctx.access->Audit(std::move(entry));
  CAIRN_RETURN_IF_ERROR(decided);
  JsonWriter w;
  w.BeginObject().Key("run_id").String(run_id).Key("decision").String(outcome);
  w.Key("decided_by").String(decided_by).EndObject();
  return CairnResponse{w.Take()};
}

// GET runs/environment-diff: the recorded environments of 2 to 10 runs, each against the first
// that has one (see docs/api/cairn.md).
Result<CairnResponse> RunEnvironmentDiff(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> run_ids, f.StrList("run_id"));
  CAIRN_ASSIGN_OR_RETURN(service::EnvironmentComparison comparison,
                         service::CompareRunEnvironments(*ctx.tracking, *ctx.artifacts, run_ids));
  JsonWriter w;
  w.BeginObject().Key("baseline");
  if (comparison.baseline.empty()) {
    w.Null();
  } else {
    w.String(comparison.baseline);
  }
  w.Key("runs").BeginArray();
  for (const service::RunEnvironmentRecord& run : comparison.runs) {
    w.BeginObject().Key("run_id").String(run.run_id).Key("recorded").Bool(run.recorded);
    if (!run.error.empty()) w.Key("error").String(run.error);
    w.EndObject();
  }
  w.EndArray().Key("diffs").BeginArray();
  for (const service::RunEnvironmentDiff& d : comparison.diffs) {
    w.BeginObject().Key("run_id").String(d.run_id);
    w.Key("diff").Raw(env::EnvDiffJson(d.diff)).EndObject();
  }
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

}  // namespace

Result<bool> CallerMay(ApiContext& ctx, core::ResourceKind kind, const std::string& id,
                       core::Access access) {
  if (ctx.access == nullptr || !ctx.access->enabled() || ctx.caller == nullptr ||
      ctx.caller->ActsAsAdmin()) {
    return true;
  }
  CAIRN_ASSIGN_OR_RETURN(core::Permission p, ctx.access->PermissionOn(*ctx.caller, kind, id));
  return core::Allows(p, access);
}

Status RequireRunAccess(ApiContext& ctx, const std::string& run_id, core::Access access) {
  CAIRN_ASSIGN_OR_RETURN(core::RunInfo run, ctx.tracking->GetRunInfo(run_id));
  CAIRN_ASSIGN_OR_RETURN(
      bool may, CallerMay(ctx, core::ResourceKind::kExperiment, run.experiment_id, access));
  if (!may) return PermissionDenied("Permission denied");
  return Status::Ok();
}

Status RequireRunRead(ApiContext& ctx, const std::string& run_id) {
  return RequireRunAccess(ctx, run_id, core::Access::kRead);
}

namespace {

// POST runs/reproduction: compares a run with the run it reproduces (its cairn.reproduce.of
// tag, or original_run_id), records the verdict in it, and answers with the record (see
// docs/api/cairn.md).
Result<CairnResponse> RunReproduction(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::string run_id, f.RequiredStr("run_id"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> original, f.Str("original_run_id"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> options_json, f.ObjectJson("options"));
  core::ReproduceOptions options;
  if (options_json) {
    Result<core::ReproduceOptions> parsed = core::ParseReproduceOptions(*options_json);
    if (!parsed.ok()) return InvalidArgument("Invalid 'options': " + parsed.status().message());
    options = *std::move(parsed);
  }
  CAIRN_ASSIGN_OR_RETURN(core::Run run, ctx.tracking->GetRun(run_id));
  std::string of = original.value_or("");
  if (of.empty()) {
    const core::Tag* tag = run.FindTag(service::kReproduceOfTag);
    if (tag == nullptr) {
      return InvalidArgument("Run " + run_id +
                             " reproduces no run (it has no cairn.reproduce.of tag); name the "
                             "original in 'original_run_id'.");
    }
    of = tag->value;
  }
  if (of == run_id) return InvalidArgument("A run cannot reproduce itself.");
  // The verdict shows the original's values: the caller must be able to read it.
  CAIRN_RETURN_IF_ERROR(RequireRunRead(ctx, of));
  CAIRN_ASSIGN_OR_RETURN(
      std::string record,
      service::RecordReproduction(*ctx.tracking, *ctx.artifacts, of, run_id, options));
  return CairnResponse{"{\"reproduction\":" + record + "}"};
}

void WriteRetention(JsonWriter& w, const service::RetentionOutcome& r) {
  w.BeginObject().Key("files").Int(r.files).Key("bytes").Int(r.bytes);
  w.Key("blobs_freed").Int(r.blobs_freed).Key("bytes_freed").Int(r.bytes_freed);
  w.Key("rules").BeginArray();
  for (const service::RuleOutcome& o : r.rules) {
    w.BeginObject().Key("scope").String(o.scope).Key("rule").Raw(o.rule);
    w.Key("runs").Int(o.runs).Key("files").Int(o.files).Key("bytes").Int(o.bytes);
    w.Key("blobs_freed").Int(o.blobs_freed).Key("bytes_freed").Int(o.bytes_freed).EndObject();
  }
  w.EndArray().Key("problems").BeginArray();
  for (const std::string& p : r.problems) w.String(p);
  w.EndArray().EndObject();
}

// POST gc: the retention rules applied, then the blobs no artifact file names removed (or only
// counted, with dry_run), but those written in the last grace_seconds (default an hour).
// Admins only (see docs/api/cairn.md).
Result<CairnResponse> CollectGarbage(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::optional<bool> dry_run, f.Bool("dry_run"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> grace, f.Int("grace_seconds"));
  if (grace && (*grace < 0 || *grace > int64_t{365} * 86400)) {
    return InvalidArgument("Invalid value " + std::to_string(*grace) +
                           " for parameter 'grace_seconds': expected 0 to 31536000");
  }
  const int64_t grace_ms = grace.value_or(service::kDefaultGcGraceSeconds) * 1000;
  CAIRN_ASSIGN_OR_RETURN(
      service::StorageCollection c,
      ctx.retention->Collect(grace_ms, dry_run.value_or(false), SystemClock()->NowMillis()));
  JsonWriter w;
  w.BeginObject().Key("dry_run").Bool(dry_run.value_or(false));
  w.Key("blobs").Int(c.blobs.blobs).Key("collected").Int(c.blobs.collected);
  w.Key("bytes_freed").Int(c.blobs.bytes_freed).Key("in_grace").Int(c.blobs.in_grace);
  w.Key("retention");
  WriteRetention(w, c.retention);
  w.EndObject();
  return CairnResponse{w.Take()};
}

// GET storage: the bytes of each experiment's artifacts and of the registry's files, and of the
// content store's blobs (see docs/api/cairn.md). Admins only.
Result<CairnResponse> StorageUsage(ApiContext& ctx, const CairnCall&) {
  CAIRN_ASSIGN_OR_RETURN(service::ArtifactService::Usage usage, ctx.artifacts->MeasureUsage());
  JsonWriter w;
  w.BeginObject().Key("experiments").BeginArray();
  const service::ArtifactService::Usage::Part* registry = nullptr;
  for (const auto& [root, part] : usage.by_root) {
    if (root == service::kRegistryArtifactRoot) {
      registry = &part;
      continue;
    }
    Result<core::Experiment> e = ctx.tracking->GetExperiment(root);
    w.BeginObject().Key("experiment_id").String(root);
    w.Key("name").String(e.ok() ? e->name : "");
    w.Key("files").Int(part.files).Key("bytes").Int(part.bytes).EndObject();
  }
  w.EndArray();
  auto part = [&w](std::string_view key, const service::ArtifactService::Usage::Part& p) {
    w.Key(key).BeginObject().Key("files").Int(p.files).Key("bytes").Int(p.bytes).EndObject();
  };
  part("registry", registry != nullptr ? *registry : service::ArtifactService::Usage::Part{});
  w.Key("datasets").BeginArray();
  for (const auto& [name, p] : usage.by_dataset) {
    w.BeginObject().Key("name").String(name);
    w.Key("blobs").Int(p.files).Key("bytes").Int(p.bytes).EndObject();
  }
  w.EndArray();
  w.Key("blobs").BeginObject().Key("count").Int(usage.blobs.files);
  w.Key("bytes").Int(usage.blobs.bytes).EndObject();
  w.Key("unreferenced").BeginObject().Key("count").Int(usage.unreferenced.files);
  w.Key("bytes").Int(usage.unreferenced.bytes).EndObject();
  // The same bytes by kind: run artifacts and the registry's files as listed, datasets' blobs
  // (each once per dataset), and the metadata store's own files.
  service::ArtifactService::Usage::Part runs, datasets;
  for (const auto& [root, p] : usage.by_root) {
    if (root == service::kRegistryArtifactRoot) continue;
    runs.files += p.files;
    runs.bytes += p.bytes;
  }
  for (const auto& [name, p] : usage.by_dataset) {
    datasets.files += p.files;
    datasets.bytes += p.bytes;
  }
  w.Key("kinds").BeginObject();
  part("artifacts", runs);
  part("models", registry != nullptr ? *registry : service::ArtifactService::Usage::Part{});
  part("datasets", datasets);
  w.Key("metadata").BeginObject().Key("bytes").Int(usage.metadata_bytes).EndObject();
  w.EndObject();
  CAIRN_ASSIGN_OR_RETURN(service::RetentionOutcome would,
                         ctx.retention->Preview(SystemClock()->NowMillis()));
  w.Key("retention");
  WriteRetention(w, would);
  w.EndObject();
  return CairnResponse{w.Take()};
}

constexpr CairnRoute kCairnRoutes[] = {
    {"GET", "storage", StorageUsage},
    {"POST", "gc", CollectGarbage},
    {"GET", "metrics/series", MetricSeries},
    {"GET", "experiments/stats", ExperimentStats},
    {"GET", "runs/environment-diff", RunEnvironmentDiff},
    {"POST", "runs/reproduction", RunReproduction},
    {"POST", "runs", CreateRun},
    {"POST", "runs/records", ApplyRunRecords},
    {"POST", "runs/approval", DecideApproval},
    {"GET", "runs/*/log", ReadLog},
    {"POST", "runs/*/log", AppendLog},
};

}  // namespace

std::span<const CairnRoute> CairnRoutes() { return kCairnRoutes; }

const CairnRoute* FindCairnRoute(std::string_view method, std::string_view path,
                                 std::string_view* wildcard) {
  for (std::span<const CairnRoute> table :
       {CairnRoutes(), CairnIdentityRoutes(), CairnRegistryRoutes(), CairnTaskRoutes(),
        CairnDatasetRoutes()}) {
    for (const CairnRoute& r : table) {
      if (method == r.method && PathMatches(r.path, path, wildcard)) return &r;
    }
  }
  return nullptr;
}

}  // namespace cairn::server
