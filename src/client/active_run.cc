#include "client/active_run.h"

#include <chrono>
#include <cstdlib>

#include "util/clock.h"
#include "util/strings.h"

namespace cairn::client {
namespace {

constexpr size_t kMaxMetrics = 1000;
constexpr size_t kMaxParams = 100;
constexpr size_t kMaxTags = 100;
constexpr size_t kEager = 1000;  // send without waiting for the tick
constexpr auto kTick = std::chrono::seconds(1);

Status RunNotThereYet(const std::string& run_id, const Status& cause) {
  return NotFound("run " + run_id +
                  " is not on the tracking server yet: its wrapper creates it once the server "
                  "is reachable (" +
                  cause.message() + ")");
}

// The run `cairn run` passed on, as far as it is known: one lookup, without retries, since the
// command must not wait for the server. A server that is away, or that does not have the run
// yet (the wrapper creates it once the server is back), leaves what the environment tells.
Result<core::RunInfo> WrapperRun(const ClientOptions& client_options, const std::string& run_id) {
  ClientOptions once = client_options;
  once.retries = 0;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TrackingClient> client, TrackingClient::Create(once));
  Result<core::Run> run = client->GetRun(run_id);
  if (run.ok()) return run->info;
  if (run.status().code() != StatusCode::kUnavailable &&
      run.status().code() != StatusCode::kNotFound) {
    return run.status();
  }
  core::RunInfo info;
  info.run_id = run_id;
  info.experiment_id = EnvOrEmpty("MLFLOW_EXPERIMENT_ID");
  return info;
}

}  // namespace

Result<std::unique_ptr<ActiveRun>> ActiveRun::Start(const Options& options) {
  ClientOptions client_options;
  client_options.tracking_uri = ResolveTrackingUri(options.tracking_uri);
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TrackingClient> client,
                         TrackingClient::Create(client_options));
  std::string wrapper_run = EnvOrEmpty("CAIRN_RUN_ID");
  if (wrapper_run.empty()) wrapper_run = EnvOrEmpty("MLFLOW_RUN_ID");
  core::RunInfo info;
  bool attached = !wrapper_run.empty();
  if (attached) {
    CAIRN_ASSIGN_OR_RETURN(info, WrapperRun(client_options, wrapper_run));
  } else {
    std::string experiment_id = "0";
    if (!options.experiment.empty()) {
      CAIRN_ASSIGN_OR_RETURN(experiment_id, client->GetOrCreateExperiment(options.experiment));
    }
    std::vector<core::Tag> tags = {{"mlflow.source.type", "LOCAL"}};
    if (const std::string user = EnvOrEmpty("USER"); !user.empty()) tags.push_back({"mlflow.user", user});
    CAIRN_ASSIGN_OR_RETURN(info, client->CreateRun(experiment_id, options.run_name,
                                                   SystemClock()->NowMillis(), tags));
  }
  std::unique_ptr<ActiveRun> run(new ActiveRun(std::move(client), std::move(info), attached));
  for (const core::Param& p : options.params) run->LogParam(p.key, p.value);
  for (const core::Tag& t : options.tags) run->SetTag(t.key, t.value);
  return run;
}

ActiveRun::ActiveRun(std::unique_ptr<TrackingClient> client, core::RunInfo info, bool attached)
    : client_(std::move(client)),
      info_(std::move(info)),
      attached_(attached),
      artifact_uri_(info_.artifact_uri) {
  thread_ = std::thread([this] { Loop(); });
}

ActiveRun::~ActiveRun() {
  (void)End();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ActiveRun::LogMetric(const std::string& key, double value, int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  metrics_.push_back({key, value, SystemClock()->NowMillis(), step});
  if (metrics_.size() >= kEager) cv_.notify_one();
}

void ActiveRun::LogParam(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  params_.push_back({key, value});
}

void ActiveRun::SetTag(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  tags_.push_back({key, value});
}

bool ActiveRun::SendSome(std::unique_lock<std::mutex>& lock) {
  if (metrics_.empty() && params_.empty() && tags_.empty()) return false;
  std::vector<core::Metric> metrics;
  std::vector<core::Param> params;
  std::vector<core::Tag> tags;
  while (!params_.empty() && params.size() < kMaxParams) {
    params.push_back(std::move(params_.front()));
    params_.pop_front();
  }
  while (!tags_.empty() && tags.size() < kMaxTags) {
    tags.push_back(std::move(tags_.front()));
    tags_.pop_front();
  }
  // MLflow counts every item against 1000.
  while (!metrics_.empty() && metrics.size() + params.size() + tags.size() < kMaxMetrics) {
    metrics.push_back(std::move(metrics_.front()));
    metrics_.pop_front();
  }
  ++sending_;
  lock.unlock();
  Status s = client_->LogBatch(info_.run_id, metrics, params, tags);
  lock.lock();
  --sending_;
  // The server is away (the client has retried already), or the wrapper has not created its
  // run there yet: keep the batch, in order, for the next tick rather than lose it.
  const bool not_there_yet = attached_ && s.code() == StatusCode::kNotFound;
  if ((s.code() == StatusCode::kUnavailable || not_there_yet) && !stop_) {
    metrics_.insert(metrics_.begin(), metrics.begin(), metrics.end());
    params_.insert(params_.begin(), params.begin(), params.end());
    tags_.insert(tags_.begin(), tags.begin(), tags.end());
    undelivered_ = not_there_yet ? RunNotThereYet(info_.run_id, s) : s;
    return false;
  }
  undelivered_ = Status::Ok();
  if (!s.ok() && error_.ok()) error_ = s;
  return true;
}

void ActiveRun::Loop() {
  // Only this thread sends, so batches reach the server in the order they were logged (a tag
  // set twice ends with its last value).
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    // After a failed delivery a full queue does not cut the tick short: a run that is not on
    // the server yet is refused at once, and retrying at once would spin.
    cv_.wait_for(lock, kTick, [&] {
      return stop_ || flush_ || (undelivered_.ok() && metrics_.size() >= kEager);
    });
    while (SendSome(lock)) {
    }
    flush_ = false;
    ++passes_;
    drained_.notify_all();
  }
}

Status ActiveRun::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  flush_ = true;
  cv_.notify_one();
  // One whole pass of the sender after this call: everything queued before it was sent, or
  // (the server away) kept for later with the error below.
  const uint64_t pass = passes_;
  drained_.wait(lock, [&] { return passes_ > pass || stop_; });
  if (error_.ok()) return undelivered_;
  Status s = error_;
  error_ = Status::Ok();
  return s;
}

Status ActiveRun::LogArtifact(const std::string& local_path, const std::string& artifact_path) {
  CAIRN_RETURN_IF_ERROR(Flush());
  std::string artifact_uri;
  {
    std::lock_guard<std::mutex> lock(mu_);
    artifact_uri = artifact_uri_;
  }
  if (artifact_uri.empty()) {  // attached to a run that was not on the server at Start
    Result<core::Run> run = client_->GetRun(info_.run_id);
    if (!run.ok()) {
      return run.status().code() == StatusCode::kNotFound
                 ? RunNotThereYet(info_.run_id, run.status())
                 : run.status();
    }
    artifact_uri = run->info.artifact_uri;
    std::lock_guard<std::mutex> lock(mu_);
    artifact_uri_ = artifact_uri;
  }
  return client_->UploadArtifactFile(artifact_uri, artifact_path, local_path);
}

Status ActiveRun::End(core::RunStatus status) {
  Status flushed = Flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return flushed;
    ended_ = true;
  }
  if (attached_) return flushed;
  Status updated = client_->UpdateRun(info_.run_id, status, SystemClock()->NowMillis());
  return flushed.ok() ? updated : flushed;
}

}  // namespace cairn::client
