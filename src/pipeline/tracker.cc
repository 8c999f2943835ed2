#include "pipeline/tracker.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "pipeline/session.h"
#include "pipeline/tracking_sink.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;

// A step's console log goes up in pieces of this size.
constexpr size_t kLogChunkBytes = 1 << 20;
// How long Finish waits for the server before leaving records to `cairn sync`.
constexpr int64_t kFinishPatienceMs = 5'000;
// While the server cannot be reached, the worker tries one delivery this often to see whether
// it is back, and leaves the other records in their journals: each try of an unreachable
// server costs the client's retries (seconds), which must not add up step by step.
constexpr int64_t kProbeEveryMs = 10'000;
// MLflow refuses longer tag values.
constexpr size_t kMaxTagValue = 4'900;

std::string Cut(std::string value) {
  if (value.size() > kMaxTagValue) value = value.substr(0, kMaxTagValue) + "...";
  return value;
}

core::RunStatus StatusOf(const std::string& state) {
  if (state == "done" || state == "cached") return core::RunStatus::kFinished;
  if (state == "cancelled") return core::RunStatus::kKilled;
  return core::RunStatus::kFailed;
}

}  // namespace

struct Tracker::Impl {
  std::unique_ptr<TrackingSink> sink;
  std::mutex deliver_mu;  // one delivery at a time
  Progress* progress = nullptr;
  std::string experiment;
  std::string experiment_id;
  RunInfo run;
  std::unique_ptr<RunRecords> parent;
  std::map<std::string, std::unique_ptr<RunRecords>> steps;  // step id -> its run's journal
  std::vector<std::string> step_ids;                         // by index in the pipeline
  bool server_up = true;
  bool warned = false;

  std::mutex queue_mu;
  std::condition_variable queue_cv;
  std::deque<RunRecords*> queue;
  std::vector<RunRecords*> passed_over;  // while the server was down; queued again once it is up
  bool stopping = false;
  std::thread worker;
  int64_t next_probe_ms = 0;  // while the server is down: when the worker may try it again

  // Marks the server down when it cannot be reached (a record it refuses is not that).
  Status Deliver(RunRecords& journal) {
    std::lock_guard<std::mutex> lock(deliver_mu);
    Status s = journal.Deliver();
    if (!s.ok() && !warned) {
      warned = true;
      progress->Warning("the tracking server at " + sink->tracking_uri() +
                        " cannot take the pipeline's records (" + s.message() +
                        "); they wait in journals for `cairn sync`");
    }
    if (s.code() == StatusCode::kUnavailable && server_up) {
      server_up = false;
      next_probe_ms = SystemClock()->NowMillis() + kProbeEveryMs;
    } else if (s.ok()) {
      server_up = true;
    }
    return s;
  }

  // The output's files as the run's artifacts under outputs/, then a version made of them.
  // A link is followed only to a file inside the output: the registry gets what the step
  // wrote, never a file from elsewhere on the machine.
  Status Register(RunRecords& j, const Registration& reg, const std::string& local) {
    const std::string artifact = "outputs/" + reg.path;
    std::error_code ec;
    const fs::path root = fs::canonical(local, ec);
    if (ec) return NotFound("the output is missing: " + ec.message());
    std::vector<std::pair<std::string, fs::path>> files;  // artifact path, the file
    std::vector<std::string> skipped;
    if (fs::is_regular_file(root, ec)) {
      files.push_back({artifact, root});
    } else if (fs::is_directory(root, ec)) {
      fs::recursive_directory_iterator it(root, ec);
      for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const fs::file_status st = it->symlink_status(ec);
        if (ec) break;
        const std::string rel = it->path().lexically_relative(root).generic_string();
        if (fs::is_regular_file(st)) {
          files.push_back({artifact + "/" + rel, it->path()});
        } else if (fs::is_symlink(st)) {
          std::error_code link_ec;
          const fs::path target = fs::canonical(it->path(), link_ec);
          const std::string t = target.string(), r = root.string();
          const bool inside =
              !link_ec && t.size() > r.size() && t.starts_with(r) && t[r.size()] == '/';
          if (inside && fs::is_regular_file(target, link_ec)) {
            files.push_back({artifact + "/" + rel, target});
          } else {
            skipped.push_back(rel);
          }
        }
      }
      if (ec) return Internal("reading the output: " + ec.message());
    }
    if (!skipped.empty()) {
      progress->Warning(
          "step output " + reg.path + ": links that lead outside it are not " +
          "registered: " + skipped.front() +
          (skipped.size() > 1 ? " and " + std::to_string(skipped.size() - 1) + " more" : ""));
    }
    if (files.empty()) {
      progress->Warning("step output " + reg.path + " holds no files; nothing was registered as " +
                        reg.model);
      return Status::Ok();
    }
    std::sort(files.begin(), files.end());
    std::vector<client::RegisteredFile> kept;
    for (const auto& [path, file] : files) {
      CAIRN_ASSIGN_OR_RETURN(int64_t size, j.AppendArtifactFile(path, file.string()));
      kept.push_back({path, size});
    }
    return j.AppendRegister(reg.model, "runs:/" + j.run_id() + "/" + artifact, reg.alias, kept);
  }

  // Delivers the records of steps that ended, one journal at a time, until stopped with
  // nothing left. While the server is down, only a probe now and then: the other journals are
  // passed over, for Finish or `cairn sync`.
  void Work() {
    for (;;) {
      RunRecords* journal = nullptr;
      {
        std::unique_lock<std::mutex> lock(queue_mu);
        queue_cv.wait(lock, [this] { return stopping || !queue.empty(); });
        if (queue.empty()) return;
        journal = queue.front();
        queue.pop_front();
      }
      if (!MayTry()) {
        // It waits in its journal, on disk, until the server is back.
        (void)journal->Keep();
        std::lock_guard<std::mutex> lock(queue_mu);
        passed_over.push_back(journal);
        continue;
      }
      if (Deliver(*journal).ok()) {
        // The server is back: the journals passed over go again.
        std::lock_guard<std::mutex> lock(queue_mu);
        queue.insert(queue.end(), passed_over.begin(), passed_over.end());
        passed_over.clear();
      }
    }
  }

  // Whether a delivery should be tried now: always while the server answers, else as a probe
  // every kProbeEveryMs.
  bool MayTry() {
    std::lock_guard<std::mutex> lock(deliver_mu);
    if (server_up) return true;
    const int64_t now = SystemClock()->NowMillis();
    if (now < next_probe_ms) return false;
    next_probe_ms = now + kProbeEveryMs;
    return true;
  }

  void Enqueue(RunRecords* journal) {
    {
      std::lock_guard<std::mutex> lock(queue_mu);
      queue.push_back(journal);
    }
    queue_cv.notify_one();
  }

  Result<std::unique_ptr<RunRecords>> Open(const std::string& run_id) {
    return sink->OpenRun(run_id);
  }
};

Tracker::Tracker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Tracker::~Tracker() {
  {
    std::lock_guard<std::mutex> lock(impl_->queue_mu);
    impl_->stopping = true;
  }
  impl_->queue_cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

const std::string& Tracker::tracking_uri() const { return impl_->sink->tracking_uri(); }

std::string Tracker::ExperimentId() const { return impl_->experiment_id; }

Result<std::unique_ptr<Tracker>> Tracker::Start(const std::string& tracking_uri,
                                                const Pipeline& pipeline, const RunInfo& run,
                                                Progress& progress) {
  CAIRN_ASSIGN_OR_RETURN(
      std::unique_ptr<TrackingSink> sink,
      NewJournalSink(tracking_uri, [&progress](const std::string& text) { progress.Note(text); }));
  return Start(std::move(sink), pipeline, run, progress);
}

Result<std::unique_ptr<Tracker>> Tracker::Start(std::unique_ptr<TrackingSink> sink,
                                                const Pipeline& pipeline, const RunInfo& run,
                                                Progress& progress) {
  auto impl = std::make_unique<Impl>();
  impl->sink = std::move(sink);
  impl->progress = &progress;
  impl->experiment = pipeline.name;
  impl->run = run;
  for (const Step& step : pipeline.steps) impl->step_ids.push_back(step.id);
  CAIRN_ASSIGN_OR_RETURN(impl->parent, impl->Open(run.id));
  // A resumed run continues its parent run; a new one creates it.
  Result<std::string> existing = [&]() -> Result<std::string> {
    std::lock_guard<std::mutex> lock(impl->deliver_mu);
    return impl->sink->ExperimentOf(run.id);
  }();
  if (existing.ok()) {
    impl->experiment_id = *existing;
    CAIRN_RETURN_IF_ERROR(impl->parent->AppendBatch({}, {{"cairn.pipeline.state", "resumed"}}));
  } else {
    std::vector<core::Tag> tags = {{"mlflow.runName", pipeline.name},
                                   {"mlflow.source.name", run.spec_file},
                                   {"mlflow.source.type", "LOCAL"},
                                   {"cairn.pipeline.name", pipeline.name},
                                   {"cairn.pipeline.run", run.id},
                                   {"cairn.pipeline.steps", std::to_string(pipeline.steps.size())},
                                   {"cairn.pipeline.executor", run.executor},
                                   {"cairn.pipeline.state", "running"}};
    if (const char* user = std::getenv("USER"); user != nullptr) {
      tags.push_back({"mlflow.user", user});
    }
    CAIRN_RETURN_IF_ERROR(
        impl->parent->AppendCreate(pipeline.name, pipeline.name, run.started_ms, tags));
    std::vector<core::Param> params;
    for (const auto& [k, v] : pipeline.params) params.push_back({k, Cut(v)});
    CAIRN_RETURN_IF_ERROR(impl->parent->AppendBatch(params, {}));
  }
  (void)impl->Deliver(*impl->parent);
  if (impl->experiment_id.empty() && impl->server_up) {
    std::lock_guard<std::mutex> lock(impl->deliver_mu);
    if (Result<std::string> created = impl->sink->ExperimentOf(run.id); created.ok()) {
      impl->experiment_id = *created;
    }
  }
  std::unique_ptr<Tracker> tracker(new Tracker(std::move(impl)));
  tracker->impl_->worker = std::thread([t = tracker->impl_.get()] { t->Work(); });
  return tracker;
}

std::string Tracker::StepRun(const Step& step) {
  Impl& d = *impl_;
  if (auto it = d.steps.find(step.id); it != d.steps.end()) return it->second->run_id();
  const std::string run_id = RandomHex(16);
  Result<std::unique_ptr<RunRecords>> journal = d.Open(run_id);
  if (!journal.ok()) {
    d.progress->Warning("cannot record step " + step.id + ": " + journal.status().message());
    return run_id;
  }
  std::vector<core::Tag> tags = {
      {"mlflow.parentRunId", d.run.id},         {"mlflow.runName", step.id},
      {"mlflow.source.type", "LOCAL"},          {"cairn.pipeline.run", d.run.id},
      {"cairn.pipeline.name", d.experiment},    {"cairn.step.id", step.id},
      {"cairn.step.command", Cut(step.command)}};
  if (!step.item.empty()) tags.push_back({"cairn.step.item", Cut(step.item)});
  // The steps it waits for, as a JSON array of ids: with these the DAG can be drawn.
  nlohmann::json needs = nlohmann::json::array();
  for (size_t dep : step.deps) {
    if (dep < d.step_ids.size()) needs.push_back(d.step_ids[dep]);
  }
  if (!needs.empty()) tags.push_back({"cairn.step.needs", Cut(needs.dump())});
  Status s = (*journal)->AppendCreate(d.experiment, step.id, SystemClock()->NowMillis(), tags);
  std::vector<core::Param> params;
  for (const auto& [k, v] : step.params) params.push_back({k, Cut(v)});
  if (s.ok() && !params.empty()) s = (*journal)->AppendBatch(params, {});
  if (!s.ok()) d.progress->Warning("cannot record step " + step.id + ": " + s.message());
  // Created now, so that the step's own client finds its run.
  if (d.server_up) (void)d.Deliver(**journal);
  d.steps[step.id] = std::move(*journal);
  return run_id;
}

void Tracker::StepEnded(const Step& step, const StepRecord& r) {
  Impl& d = *impl_;
  StepRun(step);
  RunRecords& j = *d.steps.at(step.id);
  std::vector<core::Tag> tags = {{"cairn.step.state", r.state}};
  if (r.state == "done" || r.state == "failed") {
    tags.push_back({"cairn.step.exit_code", std::to_string(r.exit_code)});
  }
  if (!r.reason.empty()) tags.push_back({"cairn.step.reason", Cut(r.reason)});
  if (!r.cache_key.empty()) tags.push_back({"cairn.step.cache_key", r.cache_key});
  if (!r.cached_from_run.empty()) tags.push_back({"cairn.step.cached_from_run", r.cached_from_run});
  Status s = j.AppendBatch({}, tags);
  if (s.ok() && !r.log_path.empty()) {
    if (Result<std::string> log = ReadFile(r.log_path); log.ok()) {
      for (size_t offset = 0; offset < log->size() && s.ok(); offset += kLogChunkBytes) {
        core::ConsoleChunk chunk;
        chunk.offset = static_cast<int64_t>(offset);
        chunk.timestamp = SystemClock()->NowMillis();
        chunk.data = log->substr(offset, kLogChunkBytes);
        s = j.AppendLog({chunk});
      }
    }
  }
  if (s.ok() && !r.outputs_json.empty()) s = j.AppendArtifact("cairn/outputs.json", r.outputs_json);
  if (s.ok() && step.registration && !r.registered_output.empty()) {
    // The run ends either way: a failure here costs the version, not the run's records.
    if (Status reg = d.Register(j, *step.registration, r.registered_output); !reg.ok()) {
      d.progress->Warning("step " + step.id + ": nothing registered as " +
                          step.registration->model + ": " + reg.message());
    }
  }
  if (s.ok()) s = j.AppendEnd(StatusOf(r.state), SystemClock()->NowMillis());
  if (!s.ok()) d.progress->Warning("cannot record step " + step.id + ": " + s.message());
  d.Enqueue(&j);
}

void Tracker::Finish(bool ok, bool interrupted) {
  Impl& d = *impl_;
  const std::string state = ok ? "complete" : interrupted ? "interrupted" : "failed";
  Status s = d.parent->AppendBatch({}, {{"cairn.pipeline.state", state}});
  if (s.ok()) {
    s = d.parent->AppendEnd(ok            ? core::RunStatus::kFinished
                            : interrupted ? core::RunStatus::kKilled
                                          : core::RunStatus::kFailed,
                            SystemClock()->NowMillis());
  }
  if (!s.ok()) d.progress->Warning("cannot record the pipeline run's end: " + s.message());
  // Let the worker finish what it has (quickly while the server is down), then deliver the
  // rest here, for a few seconds at most, and not past the first sign that the server cannot
  // be reached.
  {
    std::lock_guard<std::mutex> lock(d.queue_mu);
    d.stopping = true;
  }
  d.queue_cv.notify_all();
  if (d.worker.joinable()) d.worker.join();
  std::vector<RunRecords*> all = {d.parent.get()};
  for (auto& [id, j] : d.steps) all.push_back(j.get());
  const int64_t give_up = SystemClock()->NowMillis() + kFinishPatienceMs;
  bool reachable = true;
  size_t pending = 0;
  for (RunRecords* j : all) {
    if (!j->complete() && reachable && SystemClock()->NowMillis() < give_up) {
      reachable = d.Deliver(*j).code() != StatusCode::kUnavailable;
    } else if (!j->complete()) {
      (void)j->Keep();  // left for `cairn sync`: on disk
    }
    if (j->complete()) {
      (void)j->Remove();
    } else {
      ++pending;
    }
  }
  if (pending > 0) {
    d.progress->Warning(std::to_string(pending) + " run(s) of this pipeline are not on the " +
                        "tracking server at " + d.sink->tracking_uri() +
                        " yet; `cairn sync` uploads them");
  }
}

}  // namespace cairn::pipeline
