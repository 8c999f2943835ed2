#include "service/tracking_service.h"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_set>

#include "core/downsample.h"
#include "core/identity.h"
#include "core/retention.h"
#include "core/search.h"
#include "service/validation.h"
#include "store/store_util.h"
#include "util/hash.h"
#include "util/json_reader.h"

namespace cairn::service {
namespace {

using core::Experiment;
using core::LifecycleStage;
using core::Run;

Status ValidateTag(const core::Tag& t) {
  CAIRN_RETURN_IF_ERROR(ValidateKey("tag", t.key));
  if (t.key == core::kDeletedTimeTag) {
    // Retention purges by it: only deleting a run sets it.
    return InvalidArgument("Tag " + t.key + " is set by the server when a run is deleted");
  }
  if (t.key.starts_with(kApprovalPrefix) && t.key != kApprovalByTag) {
    return InvalidArgument("Tag " + t.key +
                           " is set by the server when a step is approved or "
                           "rejected (POST /api/cairn/v1/runs/approval)");
  }
  return ValidateLength("Tag", t.key, t.value, kMaxTagValueLength);
}

Status ValidateParam(const core::Param& p) {
  CAIRN_RETURN_IF_ERROR(ValidateKey("param", p.key));
  return ValidateLength("Param", p.key, p.value, kMaxParamValueLength);
}

Result<int64_t> ResolveMaxResults(std::optional<int64_t> requested) {
  int64_t n = requested.value_or(kDefaultSearchResults);
  if (n <= 0 || n > kMaxSearchResults) {
    return InvalidArgument("Invalid value " + std::to_string(n) +
                           " for parameter 'max_results' supplied. It must be a positive "
                           "integer at most " +
                           std::to_string(kMaxSearchResults));
  }
  return n;
}

// A readable default run name, "<adjective>-<noun>-<number>", as MLflow gives unnamed runs.
std::string RandomRunName() {
  static constexpr std::string_view kAdjectives[] = {
      "amber", "bold",  "brisk", "calm",  "clever", "crisp", "dapper", "eager",
      "fleet", "gentle", "keen", "lucid", "mellow", "nimble", "quiet", "sturdy"};
  static constexpr std::string_view kNouns[] = {
      "badger", "crane", "falcon", "fox",  "heron", "ibis",  "lynx",  "marten",
      "otter",  "owl",   "panda",  "robin", "seal", "stoat", "swift", "wren"};
  std::string hex = RandomHex(3);
  // The value (0-15) of each of the first two hex digits picks one of the sixteen words.
  unsigned a = static_cast<unsigned>(std::stoul(hex.substr(0, 1), nullptr, 16));
  unsigned b = static_cast<unsigned>(std::stoul(hex.substr(1, 1), nullptr, 16));
  unsigned n = static_cast<unsigned>(std::stoul(hex.substr(2), nullptr, 16)) % 1000;
  return std::string(kAdjectives[a]) + "-" + std::string(kNouns[b]) + "-" + std::to_string(n);
}

}  // namespace

std::string EncodePageToken(int64_t offset) {
  return Base64Encode("{\"offset\": " + std::to_string(offset) + "}");
}

Result<int64_t> DecodePageToken(const std::string& token) {
  if (token.empty()) return int64_t{0};
  std::string json;
  auto invalid = [&] { return InvalidArgument("Invalid page token: '" + token + "'"); };
  if (!Base64Decode(token, &json)) return invalid();
  size_t key = json.find("\"offset\"");
  if (key == std::string::npos) return invalid();
  size_t colon = json.find(':', key);
  if (colon == std::string::npos) return invalid();
  size_t start = json.find_first_not_of(" \t", colon + 1);
  if (start == std::string::npos) return invalid();
  int64_t offset = 0;
  auto r = std::from_chars(json.data() + start, json.data() + json.size(), offset);
  // Offsets past 2^53 cannot come from a token this server wrote; refusing them keeps the
  // arithmetic on offsets far from overflow.
  if (r.ec != std::errc() || offset < 0 || offset > (int64_t{1} << 53)) return invalid();
  return offset;
}

// --- Experiments ---------------------------------------------------------------------------

Result<std::string> TrackingService::CreateExperiment(const std::string& name,
                                                      const std::string& artifact_location,
                                                      const std::vector<core::Tag>& tags) {
  if (name.empty()) return InvalidArgument("Invalid experiment name: ''. Name must not be empty.");
  for (const core::Tag& t : tags) CAIRN_RETURN_IF_ERROR(ValidateTag(t));
  Experiment e;
  e.name = name;
  e.artifact_location = artifact_location;
  e.creation_time = e.last_update_time = clock_->NowMillis();
  e.tags = tags;
  return store_->CreateExperiment(e);
}

Result<Experiment> TrackingService::GetExperiment(const std::string& experiment_id) {
  return store_->GetExperiment(experiment_id);
}

Result<Experiment> TrackingService::GetExperimentByName(const std::string& name) {
  return store_->GetExperimentByName(name);
}

Result<ExperimentPage> TrackingService::SearchExperiments(const ExperimentSearchRequest& req) {
  CAIRN_ASSIGN_OR_RETURN(int64_t max_results, ResolveMaxResults(req.max_results));
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Clause> filter, core::ParseExperimentFilter(req.filter));
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::OrderKey> order,
                         core::ParseExperimentOrderBy(req.order_by));
  CAIRN_ASSIGN_OR_RETURN(int64_t offset, DecodePageToken(req.page_token));
  CAIRN_ASSIGN_OR_RETURN(std::vector<Experiment> all, store_->ListExperiments(req.view));
  std::vector<Experiment> matched;
  for (Experiment& e : all) {
    if (req.visible && !req.visible(e.experiment_id)) continue;
    if (core::ExperimentMatches(e, filter)) matched.push_back(std::move(e));
  }
  core::SortExperiments(&matched, order);
  ExperimentPage page;
  size_t begin = std::min(matched.size(), static_cast<size_t>(offset));
  size_t end = std::min(matched.size(), begin + static_cast<size_t>(max_results));
  page.experiments.assign(std::make_move_iterator(matched.begin() + begin),
                          std::make_move_iterator(matched.begin() + end));
  if (end < matched.size()) page.next_page_token = EncodePageToken(static_cast<int64_t>(end));
  return page;
}

Status TrackingService::RenameExperiment(const std::string& experiment_id,
                                         const std::string& new_name) {
  if (new_name.empty()) {
    return InvalidArgument("Invalid experiment name: ''. Name must not be empty.");
  }
  CAIRN_ASSIGN_OR_RETURN(Experiment e, store_->GetExperiment(experiment_id));
  if (e.lifecycle_stage != LifecycleStage::kActive) {
    return InvalidArgument("Cannot rename a non-active experiment.");
  }
  return store_->RenameExperiment(experiment_id, new_name, clock_->NowMillis());
}

Status TrackingService::DeleteExperiment(const std::string& experiment_id) {
  if (experiment_id == "0") {
    return InvalidArgument("Cannot delete the default experiment '0'. This is an internally "
                           "reserved experiment.");
  }
  return store_->SetExperimentStage(experiment_id, LifecycleStage::kDeleted, clock_->NowMillis());
}

Status TrackingService::RestoreExperiment(const std::string& experiment_id) {
  return store_->SetExperimentStage(experiment_id, LifecycleStage::kActive, clock_->NowMillis());
}

Status TrackingService::SetExperimentTag(const std::string& experiment_id, const core::Tag& tag) {
  CAIRN_RETURN_IF_ERROR(ValidateTag(tag));
  if (tag.key == core::kRetentionTag) {
    // Rules that cannot be read would be skipped at every collection: refuse them now.
    Result<std::vector<core::RetentionRule>> rules = core::ParseRetentionRules(tag.value);
    if (!rules.ok()) {
      return InvalidArgument("Invalid value for tag " + tag.key + ": " + rules.status().message());
    }
  }
  CAIRN_ASSIGN_OR_RETURN(Experiment e, store_->GetExperiment(experiment_id));
  if (e.lifecycle_stage != LifecycleStage::kActive) {
    return InvalidArgument("The experiment " + experiment_id +
                           " must be in the 'active' state. Current state is deleted.");
  }
  return store_->SetExperimentTag(experiment_id, tag);
}

Status TrackingService::DeleteExperimentTag(const std::string& experiment_id,
                                            const std::string& key) {
  return store_->DeleteExperimentTag(experiment_id, key);
}

// --- Runs ----------------------------------------------------------------------------------

namespace {

// Defined with LogBatch below.
Status ValidateBatch(const std::vector<core::Metric>& metrics,
                     const std::vector<core::Param>& params, const std::vector<core::Tag>& tags);

Status ValidateRunId(const std::string& run_id) {
  const bool hex =
      run_id.size() == 32 && run_id.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (hex) return Status::Ok();
  return InvalidArgument("Invalid value '" + run_id +
                         "' for 'run_id': expected 32 lowercase hexadecimal digits");
}

Status RequireActiveExperiment(const Experiment& e) {
  if (e.lifecycle_stage == LifecycleStage::kActive) return Status::Ok();
  return InvalidArgument("The experiment " + e.experiment_id +
                         " must be in the 'active' state. Current state is deleted.");
}

Status ValidateLog(const std::vector<core::ConsoleChunk>& chunks) {
  if (chunks.size() > TrackingService::kMaxLogChunks) {
    return InvalidArgument("A console log upload may hold at most " +
                           std::to_string(TrackingService::kMaxLogChunks) + " chunks, got " +
                           std::to_string(chunks.size()));
  }
  size_t bytes = 0;
  for (const core::ConsoleChunk& c : chunks) {
    if (c.offset < 0) return InvalidArgument("Console log chunk offset must not be negative");
    if (c.data.empty()) return InvalidArgument("Console log chunk data must not be empty");
    bytes += c.data.size();
  }
  if (bytes > TrackingService::kMaxLogAppendBytes) {
    return InvalidArgument("A console log upload may hold at most " +
                           std::to_string(TrackingService::kMaxLogAppendBytes) + " bytes, got " +
                           std::to_string(bytes));
  }
  return Status::Ok();
}

}  // namespace

Result<Run> TrackingService::NewRun(const CreateRunRequest& request, const Experiment& e) {
  if (!request.run_id.empty()) CAIRN_RETURN_IF_ERROR(ValidateRunId(request.run_id));
  CAIRN_RETURN_IF_ERROR(RequireActiveExperiment(e));
  for (const core::Tag& t : request.tags) CAIRN_RETURN_IF_ERROR(ValidateTag(t));
  Run run;
  run.info.run_id = request.run_id.empty() ? RandomHex(16) : request.run_id;
  run.info.experiment_id = e.experiment_id;
  run.info.user_id = request.user_id;
  run.info.status = request.scheduled ? core::RunStatus::kScheduled : core::RunStatus::kRunning;
  run.info.start_time = request.start_time.value_or(clock_->NowMillis());
  // Artifacts always go through this server's store; an experiment's artifact_location given
  // by a client is kept as a label only.
  run.info.artifact_uri = std::string(kServerArtifactRoot) + e.experiment_id + "/" +
                          run.info.run_id + "/artifacts";
  run.data.tags = request.tags;

  const core::Tag* name_tag = nullptr;
  for (const core::Tag& t : run.data.tags) {
    if (t.key == core::kRunNameTag) name_tag = &t;
  }
  if (!request.run_name.empty() && name_tag != nullptr && name_tag->value != request.run_name) {
    return InvalidArgument("Both 'run_name' argument and 'mlflow.runName' tag are specified, but "
                           "with different values (run_name='" +
                           request.run_name + "', mlflow.runName='" + name_tag->value + "').");
  }
  run.info.run_name = !request.run_name.empty() ? request.run_name
                      : name_tag != nullptr     ? name_tag->value
                                                : RandomRunName();
  if (name_tag == nullptr) run.data.tags.push_back({std::string(core::kRunNameTag), run.info.run_name});
  return run;
}

Result<Run> TrackingService::CreateRun(const CreateRunRequest& request) {
  if (!request.run_id.empty()) {
    CAIRN_RETURN_IF_ERROR(ValidateRunId(request.run_id));
    // Created already (a repeated upload of a journal): the run as it is, if it is in the
    // experiment asked for; another experiment's run is not shown to whoever guessed its id.
    Result<Run> existing = store_->GetRun(request.run_id);
    if (existing.ok() &&
        existing->info.experiment_id != core::CanonicalExperimentId(request.experiment_id)) {
      return AlreadyExists("Run with id=" + request.run_id + " already exists");
    }
    if (existing.ok() || existing.status().code() != StatusCode::kNotFound) return existing;
  }
  CAIRN_ASSIGN_OR_RETURN(Experiment e, store_->GetExperiment(request.experiment_id));
  CAIRN_ASSIGN_OR_RETURN(Run run, NewRun(request, e));
  CAIRN_RETURN_IF_ERROR(store_->CreateRun(run));
  return store_->GetRun(run.info.run_id);
}

std::vector<Status> TrackingService::ApplyRunRecords(std::vector<RunRecord> records) {
  std::vector<Status> out(records.size());
  // Each record is checked here, then queued for the store without waiting; the outcomes of
  // the queued ones arrive on the store's writer thread.
  struct Pending {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
  } pending;
  auto done_for = [&pending, &out](size_t i) {
    return [&pending, &out, i](Status s) {
      std::lock_guard<std::mutex> lock(pending.mu);
      out[i] = std::move(s);
      if (--pending.left == 0) pending.cv.notify_all();
    };
  };
  std::map<std::string, Result<Experiment>> experiments;
  std::map<std::string, Status> active;  // runs not created here: whether they are active
  std::set<std::string> created;
  for (size_t i = 0; i < records.size(); ++i) {
    RunRecord& r = records[i];
    Status checked = [&]() -> Status {
      switch (r.op) {
        case RunRecord::Op::kCreate:
          return ValidateRunId(r.create.run_id);
        case RunRecord::Op::kLog:
          return ValidateBatch(r.metrics, r.params, r.tags);
        case RunRecord::Op::kConsole:
          return ValidateLog(r.chunks);
        case RunRecord::Op::kUpdate:
          if (created.count(r.run_id) != 0) return Status::Ok();
          if (auto it = active.find(r.run_id); it != active.end()) return it->second;
          return active[r.run_id] = RequireActiveRun(r.run_id);
      }
      return Status::Ok();
    }();
    Result<Run> run = Internal("unset");
    if (checked.ok() && r.op == RunRecord::Op::kCreate) {
      auto e = experiments.find(r.create.experiment_id);
      if (e == experiments.end()) {
        e = experiments
                .emplace(r.create.experiment_id, store_->GetExperiment(r.create.experiment_id))
                .first;
      }
      run = e->second.ok() ? NewRun(r.create, *e->second) : Result<Run>(e->second.status());
      checked = run.status();
      if (checked.ok()) created.insert(r.create.run_id);
    }
    if (!checked.ok()) {
      out[i] = std::move(checked);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(pending.mu);
      ++pending.left;
    }
    switch (r.op) {
      case RunRecord::Op::kCreate:
        store_->CreateRunAsync(std::move(*run), done_for(i));
        break;
      case RunRecord::Op::kLog:
        store_->LogBatchAsync(std::move(r.run_id), std::move(r.metrics), std::move(r.params),
                              std::move(r.tags), done_for(i));
        break;
      case RunRecord::Op::kConsole:
        store_->AppendRunLogAsync(std::move(r.run_id), std::move(r.chunks), done_for(i));
        break;
      case RunRecord::Op::kUpdate:
        if (r.update.status) r.update.drop_tag = std::string(kFailureReasonTag);
        store_->UpdateRunAsync(std::move(r.run_id), std::move(r.update), done_for(i));
        break;
    }
  }
  {
    std::unique_lock<std::mutex> lock(pending.mu);
    pending.cv.wait(lock, [&] { return pending.left == 0; });
  }
  // A run that exists already is the one this batch made before (delivered twice), when it is
  // in the same experiment.
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].op != RunRecord::Op::kCreate || out[i].code() != StatusCode::kAlreadyExists) {
      continue;
    }
    const CreateRunRequest& c = records[i].create;
    Result<core::RunInfo> info = store_->GetRunInfo(c.run_id);
    if (info.ok() && info->experiment_id == core::CanonicalExperimentId(c.experiment_id)) {
      out[i] = Status::Ok();
    }
  }
  return out;
}

Status TrackingService::DecideApproval(const std::string& run_id,
                                       const std::vector<core::Tag>& tags) {
  std::lock_guard<std::mutex> lock(approval_mu_);
  CAIRN_ASSIGN_OR_RETURN(Run run, store_->GetRun(run_id));
  const core::Tag* by = run.FindTag(kApprovalByTag);
  if (by == nullptr || by->value.empty()) {
    return FailedPrecondition("run " + run_id + " is not a step waiting for approval");
  }
  if (const core::Tag* made = run.FindTag(kApprovalDecisionTag); made != nullptr) {
    const core::Tag* who = run.FindTag(kApprovalDecidedByTag);
    return AlreadyExists("the step of run " + run_id + " was " + made->value + " already" +
                         (who != nullptr && !who->value.empty() ? " by " + who->value : ""));
  }
  return store_->LogBatch(run_id, {}, {}, tags);
}

Status TrackingService::RequireActiveRun(const std::string& run_id) {
  CAIRN_ASSIGN_OR_RETURN(core::RunInfo info, store_->GetRunInfo(run_id));
  if (info.lifecycle_stage != LifecycleStage::kActive) {
    return store::RunNotActive(run_id, info.lifecycle_stage);
  }
  return Status::Ok();
}

Result<core::RunInfo> TrackingService::UpdateRun(const std::string& run_id,
                                                 std::optional<core::RunStatus> status,
                                                 std::optional<int64_t> end_time,
                                                 std::optional<std::string> run_name) {
  CAIRN_RETURN_IF_ERROR(RequireActiveRun(run_id));
  if (run_name && run_name->empty()) run_name.reset();
  CAIRN_RETURN_IF_ERROR(store_->UpdateRun(run_id, status, end_time, run_name));
  if (status) {
    // The reason a sweep gave for failing the run no longer holds once its owner says how it
    // ended (a wrapper that was suspended, or cut off from the server, for a while).
    Status cleared = store_->DeleteRunTag(run_id, kFailureReasonTag);
    if (!cleared.ok() && cleared.code() != StatusCode::kNotFound) return cleared;
  }
  return store_->GetRunInfo(run_id);
}

Status TrackingService::DeleteRun(const std::string& run_id) {
  // When it was deleted, for retention's purge_deleted_after; a run deleted already keeps its
  // first time.
  Status tagged = store_->LogBatch(
      run_id, {}, {},
      {core::Tag{std::string(core::kDeletedTimeTag), std::to_string(clock_->NowMillis())}});
  if (!tagged.ok() && tagged.code() != StatusCode::kInvalidArgument) return tagged;
  return store_->SetRunStage(run_id, LifecycleStage::kDeleted);
}

Status TrackingService::RestoreRun(const std::string& run_id) {
  CAIRN_RETURN_IF_ERROR(store_->SetRunStage(run_id, LifecycleStage::kActive));
  Status untagged = store_->DeleteRunTag(run_id, core::kDeletedTimeTag);
  return untagged.code() == StatusCode::kNotFound ? Status::Ok() : untagged;
}

Result<Run> TrackingService::GetRun(const std::string& run_id) { return store_->GetRun(run_id); }

Result<core::RunInfo> TrackingService::GetRunInfo(const std::string& run_id) {
  return store_->GetRunInfo(run_id);
}

Result<std::vector<store::ExperimentRunStats>> TrackingService::RunStatsByExperiment() {
  return store_->RunStatsByExperiment();
}

Result<RunPage> TrackingService::SearchRuns(const RunSearchRequest& request) {
  CAIRN_ASSIGN_OR_RETURN(int64_t max_results, ResolveMaxResults(request.max_results));
  store::RunSearchQuery query;
  CAIRN_ASSIGN_OR_RETURN(query.filter, core::ParseRunFilter(request.filter));
  CAIRN_ASSIGN_OR_RETURN(query.order, core::ParseRunOrderBy(request.order_by));
  CAIRN_ASSIGN_OR_RETURN(query.offset, DecodePageToken(request.page_token));
  // Each experiment once, by its canonical id ("01" is "1"): a repeated id must not repeat runs.
  for (const std::string& id : request.experiment_ids) {
    int64_t n = 0;
    if (!store::ParseExperimentId(id, &n)) continue;  // names no experiment: matches nothing
    std::string canonical = std::to_string(n);
    if (request.visible && !request.visible(canonical)) continue;
    if (std::find(query.experiment_ids.begin(), query.experiment_ids.end(), canonical) ==
        query.experiment_ids.end()) {
      query.experiment_ids.push_back(std::move(canonical));
    }
  }
  query.view = request.view;
  // One more than a page tells whether another page exists.
  query.max_results = max_results + 1;
  CAIRN_ASSIGN_OR_RETURN(std::vector<Run> runs, store_->SearchRuns(query));
  RunPage page;
  if (static_cast<int64_t>(runs.size()) > max_results) {
    runs.resize(static_cast<size_t>(max_results));
    page.next_page_token = EncodePageToken(query.offset + max_results);
  }
  page.runs = std::move(runs);
  return page;
}

// --- Logging -------------------------------------------------------------------------------

Status TrackingService::LogMetric(const std::string& run_id, const core::Metric& metric) {
  return LogBatch(run_id, {metric}, {}, {});
}

Status TrackingService::LogParam(const std::string& run_id, const core::Param& param) {
  return LogBatch(run_id, {}, {param}, {});
}

Status TrackingService::SetTag(const std::string& run_id, const core::Tag& tag) {
  return LogBatch(run_id, {}, {}, {tag});
}

Status TrackingService::DeleteTag(const std::string& run_id, const std::string& key) {
  CAIRN_RETURN_IF_ERROR(RequireActiveRun(run_id));
  return store_->DeleteRunTag(run_id, key);
}

namespace {

// MLflow's limits and checks on a batch, before anything reaches the store.
Status ValidateBatch(const std::vector<core::Metric>& metrics,
                     const std::vector<core::Param>& params, const std::vector<core::Tag>& tags) {
  auto too_many = [](std::string_view what, size_t n, size_t limit) {
    return InvalidArgument("A batch logging request can contain at most " + std::to_string(limit) +
                           " " + std::string(what) + ". Got " + std::to_string(n) + " " +
                           std::string(what) + ". Please split up " + std::string(what) +
                           " across multiple requests and try again.");
  };
  if (metrics.size() > kMaxMetricsPerBatch) {
    return too_many("metrics", metrics.size(), kMaxMetricsPerBatch);
  }
  if (params.size() > kMaxParamsPerBatch) {
    return too_many("params", params.size(), kMaxParamsPerBatch);
  }
  if (tags.size() > kMaxTagsPerBatch) return too_many("tags", tags.size(), kMaxTagsPerBatch);
  size_t total = metrics.size() + params.size() + tags.size();
  if (total > kMaxEntitiesPerBatch) {
    return too_many("total metrics, params, and tags", total, kMaxEntitiesPerBatch);
  }
  std::unordered_set<std::string_view> seen;
  for (const core::Param& p : params) {
    CAIRN_RETURN_IF_ERROR(ValidateParam(p));
    if (!seen.insert(p.key).second) {
      return InvalidArgument("Duplicate parameter keys have been submitted: ['" + p.key +
                             "']. Please ensure the request contains only one param value per "
                             "param key.");
    }
  }
  for (const core::Tag& t : tags) CAIRN_RETURN_IF_ERROR(ValidateTag(t));
  std::string_view last_key;
  for (const core::Metric& m : metrics) {
    if (m.key != last_key) CAIRN_RETURN_IF_ERROR(ValidateKey("metric", m.key));
    last_key = m.key;
  }
  return Status::Ok();
}

}  // namespace

Status TrackingService::LogBatch(const std::string& run_id,
                                 const std::vector<core::Metric>& metrics,
                                 const std::vector<core::Param>& params,
                                 const std::vector<core::Tag>& tags) {
  CAIRN_RETURN_IF_ERROR(ValidateBatch(metrics, params, tags));
  // The store checks that the run is active inside the write itself.
  return store_->LogBatch(run_id, metrics, params, tags);
}

void TrackingService::LogBatchAsync(std::string run_id, std::vector<core::Metric> metrics,
                                    std::vector<core::Param> params, std::vector<core::Tag> tags,
                                    std::function<void(Status)> done) {
  Status valid = ValidateBatch(metrics, params, tags);
  if (!valid.ok()) return done(std::move(valid));
  store_->LogBatchAsync(std::move(run_id), std::move(metrics), std::move(params),
                        std::move(tags), std::move(done));
}

Result<int> TrackingService::FailStaleRuns(int64_t timeout_ms) {
  const int64_t now = clock_->NowMillis();
  std::vector<std::string> experiments;
  ExperimentSearchRequest all;
  all.view = core::ViewType::kAll;
  all.max_results = 50000;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(ExperimentPage page, SearchExperiments(all));
    for (const core::Experiment& e : page.experiments) experiments.push_back(e.experiment_id);
    if (page.next_page_token.empty()) break;
    all.page_token = page.next_page_token;
  }
  store::RunSearchQuery query;
  query.experiment_ids = std::move(experiments);
  CAIRN_ASSIGN_OR_RETURN(query.filter,
                         core::ParseRunFilter("attributes.status = 'RUNNING' and "
                                              "tags.`cairn.heartbeat` != ''"));
  query.max_results = 50000;
  int failed = 0;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<core::Run> runs, store_->SearchRuns(query));
    const int failed_before = failed;
    for (const core::Run& run : runs) {
      const core::Tag* beat = run.FindTag(kHeartbeatTag);
      const int64_t last = beat == nullptr ? 0 : std::strtoll(beat->value.c_str(), nullptr, 10);
      if (last <= 0 || now - last <= timeout_ms) continue;
      const core::Tag reason{std::string(kFailureReasonTag),
                             "no heartbeat from cairn run for " +
                                 std::to_string((now - last) / 1000) + " s (timeout " +
                                 std::to_string(timeout_ms / 1000) +
                                 " s): the wrapper or its host stopped without ending the run"};
      Status s = store_->LogBatch(run.info.run_id, {}, {}, {reason});
      if (s.ok()) s = store_->UpdateRun(run.info.run_id, core::RunStatus::kFailed, last,
                                        std::nullopt);
      // A run ended or deleted meanwhile is no longer this sweep's business.
      if (s.ok()) ++failed;
    }
    if (static_cast<int64_t>(runs.size()) < query.max_results) break;
    // Failed runs no longer match: the next page starts that much earlier.
    query.offset += query.max_results - (failed - failed_before);
  }
  return failed;
}

Result<int64_t> TrackingService::AppendRunLog(const std::string& run_id,
                                              const std::vector<core::ConsoleChunk>& chunks) {
  CAIRN_RETURN_IF_ERROR(ValidateLog(chunks));
  return store_->AppendRunLog(run_id, chunks);
}

Result<std::vector<core::ConsoleChunk>> TrackingService::ReadRunLog(const std::string& run_id,
                                                                    int64_t offset,
                                                                    int64_t max_bytes) {
  if (offset < 0) return InvalidArgument("Console log offset must not be negative");
  if (max_bytes < 0) return InvalidArgument("max_bytes must not be negative");
  if (max_bytes == 0) max_bytes = 1 << 20;
  max_bytes = std::min<int64_t>(max_bytes, 16 << 20);
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::ConsoleChunk> chunks,
                         store_->ReadRunLog(run_id, offset, max_bytes));
  if (!chunks.empty() && chunks[0].offset < offset) {
    chunks[0].data.erase(0, static_cast<size_t>(offset - chunks[0].offset));
    chunks[0].offset = offset;
  }
  return chunks;
}

Status TrackingService::LogInputs(const std::string& run_id,
                                  const std::vector<core::DatasetInput>& inputs) {
  // MLflow's limits (mlflow/utils/validation.py, _validate_dataset_inputs): a value over its
  // limit would not fit MLflow's columns either.
  const auto too_long = [](std::string_view what, std::string_view value, size_t limit) {
    return value.size() > limit ? InvalidArgument(std::string(what) +
                                                  " exceeds the maximum length of " +
                                                  std::to_string(limit))
                                : Status::Ok();
  };
  if (inputs.size() > kMaxDatasetsPerBatch) {
    return InvalidArgument("Logging of more than " + std::to_string(kMaxDatasetsPerBatch) +
                           " datasets in one request is not allowed; got " +
                           std::to_string(inputs.size()));
  }
  for (const core::DatasetInput& in : inputs) {
    const core::Dataset& d = in.dataset;
    if (d.name.empty()) return InvalidArgument("Dataset name cannot be empty");
    if (d.digest.empty()) return InvalidArgument("Dataset digest cannot be empty");
    CAIRN_RETURN_IF_ERROR(too_long("Dataset name", d.name, 500));
    CAIRN_RETURN_IF_ERROR(too_long("Dataset digest", d.digest, 36));
    CAIRN_RETURN_IF_ERROR(too_long("Dataset source", d.source, 65535));
    CAIRN_RETURN_IF_ERROR(too_long("Dataset schema", d.schema, 1048575));
    CAIRN_RETURN_IF_ERROR(too_long("Dataset profile", d.profile, 16777215));
    for (const core::Tag& t : in.tags) {
      if (t.key.empty()) return InvalidArgument("InputTag key cannot be empty");
      CAIRN_RETURN_IF_ERROR(too_long("InputTag key", t.key, 255));
      CAIRN_RETURN_IF_ERROR(too_long("InputTag value", t.value, 500));
    }
  }
  CAIRN_RETURN_IF_ERROR(RequireActiveRun(run_id));
  return store_->LogInputs(run_id, inputs);
}

Result<std::vector<store::DatasetSummary>> TrackingService::SearchDatasets(
    const std::vector<std::string>& experiment_ids,
    const std::function<bool(std::string_view)>& visible) {
  if (experiment_ids.empty()) {
    return InvalidArgument("SearchDatasets request must specify at least one experiment_id.");
  }
  if (experiment_ids.size() > 20) {
    return InvalidArgument("SearchDatasets request cannot specify more than 20 experiment_ids. "
                           "Received " +
                           std::to_string(experiment_ids.size()) + " experiment_ids.");
  }
  std::vector<std::string> ids;
  for (const std::string& id : experiment_ids) {
    if (!visible || visible(id)) ids.push_back(id);
  }
  return store_->SearchDatasets(ids, kMaxDatasetSummaries);
}

Status TrackingService::LogModel(const std::string& run_id, const std::string& model_json) {
  Result<JsonDocument> doc = JsonDocument::Parse(model_json, /*max_depth=*/64);
  if (!doc.ok()) {
    return InvalidArgument("Malformed model info. \n " + model_json.substr(0, 200) +
                           " \n is not a valid JSON.");
  }
  if (!doc->root().is_object()) return InvalidArgument("Model json must be a JSON object");
  std::string missing;
  for (const char* field : {"artifact_path", "flavors", "run_id", "utc_time_created"}) {
    if (doc->root().Find(field).exists()) continue;
    missing += (missing.empty() ? "'" : ", '") + std::string(field) + "'";
  }
  if (!missing.empty()) {
    return InvalidArgument("Model json is missing mandatory fields: {" + missing + "}");
  }
  std::lock_guard lock(log_model_mu_);
  CAIRN_RETURN_IF_ERROR(RequireActiveRun(run_id));
  CAIRN_ASSIGN_OR_RETURN(core::Run run, store_->GetRun(run_id));
  // The history's entries, each as the JSON text a client sent.
  std::vector<std::string> entries;
  if (const core::Tag* tag = run.FindTag(core::kLoggedModelsTag)) {
    Result<JsonDocument> old = JsonDocument::Parse(tag->value, 64);
    if (old.ok() && old->root().is_array()) {
      for (JsonValue e : old->root()) entries.push_back(e.Serialize());
    }
  }
  entries.push_back(doc->root().Serialize());
  std::string value;
  for (size_t first = 0; first < entries.size(); ++first) {
    value = "[";
    for (size_t i = first; i < entries.size(); ++i) {
      value += (i == first ? "" : ", ") + entries[i];
    }
    value += "]";
    if (value.size() <= kMaxTagValueLength) break;
  }
  if (value.size() > kMaxTagValueLength) {
    return InvalidArgument("Model json is " + std::to_string(model_json.size()) +
                           " bytes; a run's model history holds at most " +
                           std::to_string(kMaxTagValueLength));
  }
  return store_->LogBatch(run_id, {}, {}, {core::Tag{std::string(core::kLoggedModelsTag), value}});
}

Result<MetricHistoryCursor> TrackingService::OpenMetricHistory(const std::string& run_id,
                                                               const std::string& key,
                                                               int64_t max_results,
                                                               const std::string& page_token) {
  if (max_results < 0) {
    return InvalidArgument("Invalid value " + std::to_string(max_results) +
                           " for parameter 'max_results'");
  }
  MetricHistoryCursor cursor;
  cursor.query.run_id = run_id;
  cursor.query.key = key;
  CAIRN_ASSIGN_OR_RETURN(cursor.query.offset, DecodePageToken(page_token));
  // One point more than the page tells whether there is a next page.
  cursor.query.max_results = max_results > 0 ? max_results + 1 : 0;
  cursor.page_size = max_results;
  CAIRN_RETURN_IF_ERROR(store_->GetRunInfo(run_id).status());
  return cursor;
}

Result<MetricSeries> TrackingService::GetMetricSeries(const std::string& run_id,
                                                      const std::string& key,
                                                      int64_t max_points) {
  if (max_points < kMinSeriesPoints || max_points > kMaxSeriesPoints) {
    return InvalidArgument("Invalid value " + std::to_string(max_points) +
                           " for parameter 'points': expected " +
                           std::to_string(kMinSeriesPoints) + " to " +
                           std::to_string(kMaxSeriesPoints));
  }
  if (key.empty()) return MissingParameter("key");
  CAIRN_RETURN_IF_ERROR(store_->GetRunInfo(run_id).status());
  // The whole history as three columns (24 bytes a point), read in one pass: unlike
  // get-history nothing waits on the client while the snapshot is open. Then the points to keep.
  store::MetricHistoryQuery query;
  query.run_id = run_id;
  query.key = key;
  MetricSeries all;
  CAIRN_RETURN_IF_ERROR(store_->ScanMetricHistory(query, [&all](const core::Metric& m) {
    all.steps.push_back(m.step);
    all.timestamps.push_back(m.timestamp);
    all.values.push_back(m.value);
    return true;
  }));
  MetricSeries out;
  out.total_points = static_cast<int64_t>(all.values.size());
  const std::vector<size_t> kept =
      core::DownsampleMinMax(all.values, static_cast<size_t>(max_points));
  out.steps.reserve(kept.size());
  out.timestamps.reserve(kept.size());
  out.values.reserve(kept.size());
  for (size_t i : kept) {
    out.steps.push_back(all.steps[i]);
    out.timestamps.push_back(all.timestamps[i]);
    out.values.push_back(all.values[i]);
  }
  return out;
}

Status TrackingService::StreamMetricHistory(const MetricHistoryCursor& cursor,
                                            const std::function<bool(const core::Metric&)>& visit,
                                            std::string* next_page_token) {
  // Points are read in batches, each in its own short read transaction, and handed to `visit`
  // between them: a slow client never holds a database snapshot open.
  constexpr int64_t kBatch = 50000;
  next_page_token->clear();
  store::MetricHistoryQuery q = cursor.query;
  int64_t wanted = cursor.query.max_results;  // 0: all
  int64_t count = 0;
  for (;;) {
    q.max_results = wanted > 0 ? std::min(kBatch, wanted - count) : kBatch;
    CAIRN_ASSIGN_OR_RETURN(std::vector<core::Metric> batch, store_->GetMetricHistory(q));
    // The next batch starts after this one's last point.
    if (!batch.empty()) q.after = batch.back();
    q.offset = 0;
    for (const core::Metric& m : batch) {
      if (cursor.page_size > 0 && count == cursor.page_size) {
        *next_page_token = EncodePageToken(cursor.query.offset + cursor.page_size);
        return Status::Ok();
      }
      ++count;
      if (!visit(m)) return Status::Ok();
    }
    if (static_cast<int64_t>(batch.size()) < q.max_results) return Status::Ok();
    if (wanted > 0 && count >= wanted) return Status::Ok();
  }
}

Result<std::vector<RunMetric>> TrackingService::GetMetricHistoryBulk(
    const std::vector<std::string>& run_ids, const std::string& key, int64_t max_results) {
  if (run_ids.empty()) {
    return InvalidArgument("GetMetricHistoryBulk request must specify at least one run_id.");
  }
  if (run_ids.size() > 100) {
    return InvalidArgument("GetMetricHistoryBulk request cannot specify more than 100 run_ids. "
                           "Received " +
                           std::to_string(run_ids.size()) + " run_ids.");
  }
  if (key.empty()) {
    return InvalidArgument("GetMetricHistoryBulk request must specify a metric_key.");
  }
  max_results = std::clamp<int64_t>(max_results, 0, kMaxHistoryBulkResults);
  std::vector<std::string> sorted_ids = run_ids;
  std::sort(sorted_ids.begin(), sorted_ids.end());
  sorted_ids.erase(std::unique(sorted_ids.begin(), sorted_ids.end()), sorted_ids.end());
  std::vector<RunMetric> out;
  for (const std::string& run_id : sorted_ids) {
    if (static_cast<int64_t>(out.size()) >= max_results) break;
    store::MetricHistoryQuery q;
    q.run_id = run_id;
    q.key = key;
    q.max_results = max_results - static_cast<int64_t>(out.size());
    const size_t first = out.size();
    CAIRN_RETURN_IF_ERROR(store_->ScanMetricHistory(q, [&](const core::Metric& m) {
      out.push_back({run_id, m});
      return true;
    }));
    // MLflow lists each run's points by time, then step, then value.
    std::sort(out.begin() + static_cast<ptrdiff_t>(first), out.end(),
              [](const RunMetric& a, const RunMetric& b) {
                return std::tie(a.metric.timestamp, a.metric.step, a.metric.value) <
                       std::tie(b.metric.timestamp, b.metric.step, b.metric.value);
              });
  }
  return out;
}

Result<std::vector<RunMetric>> TrackingService::GetMetricHistoryBulkInterval(
    const std::vector<std::string>& run_ids, const std::string& key,
    std::optional<int64_t> start_step, std::optional<int64_t> end_step, int64_t max_results) {
  if (run_ids.empty()) return MissingParameter("run_ids");
  if (run_ids.size() > 100) {
    return InvalidArgument("GetMetricHistoryBulkInterval request must specify at most 100 "
                           "run_ids. Received " +
                           std::to_string(run_ids.size()) + " run_ids." + std::string(kApiDocs));
  }
  if (key.empty()) return MissingParameter("metric_key");
  if (max_results < 1 || max_results > 2500) {
    return InvalidArgument("max_results must be between 1 and 2500." + std::string(kApiDocs));
  }
  if (start_step.has_value() != end_step.has_value()) {
    return InvalidArgument("If either start step or end step are specified, both must be "
                           "specified.");
  }
  if (start_step && *start_step > *end_step) {
    return InvalidArgument("end_step must be greater than start_step. Found start_step=" +
                           std::to_string(*start_step) + " and end_step=" +
                           std::to_string(*end_step) + ".");
  }
  std::vector<std::string> sorted_ids = run_ids;
  std::sort(sorted_ids.begin(), sorted_ids.end());
  sorted_ids.erase(std::unique(sorted_ids.begin(), sorted_ids.end()), sorted_ids.end());

  std::vector<std::vector<core::Metric>> histories;
  std::set<int64_t> steps;
  for (const std::string& id : sorted_ids) {
    store::MetricHistoryQuery q;
    q.run_id = id;
    q.key = key;
    q.min_step = start_step;
    q.max_step = end_step;
    CAIRN_ASSIGN_OR_RETURN(std::vector<core::Metric> h, store_->GetMetricHistory(q));
    for (const core::Metric& m : h) steps.insert(m.step);
    histories.push_back(std::move(h));
  }
  // Evenly spaced picks over the distinct steps, keeping the first and the last.
  std::vector<int64_t> all(steps.begin(), steps.end());
  std::unordered_set<int64_t> chosen;
  if (static_cast<int64_t>(all.size()) <= max_results) {
    chosen.insert(all.begin(), all.end());
  } else if (!all.empty()) {
    size_t n = all.size();
    size_t picks = static_cast<size_t>(max_results);
    for (size_t i = 0; i < picks; ++i) {
      size_t idx = picks == 1 ? 0 : i * (n - 1) / (picks - 1);
      chosen.insert(all[idx]);
    }
  }
  std::vector<RunMetric> out;
  for (size_t r = 0; r < sorted_ids.size(); ++r) {
    for (core::Metric& m : histories[r]) {
      if (chosen.count(m.step) != 0) out.push_back({sorted_ids[r], std::move(m)});
    }
  }
  return out;
}

}  // namespace cairn::service
