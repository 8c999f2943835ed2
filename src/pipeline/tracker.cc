#include "pipeline/tracker.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "capture/code_state.h"
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
// While the server cannot be reached, the worker tries a delivery this often to see whether it
// is back, and leaves the records in the journal meanwhile: each try of an unreachable server
// costs the client's retries (seconds), which must not add up step by step.
constexpr int64_t kProbeEveryMs = 10'000;
// Records appended within this long of each other go in one delivery (a step's end and the
// next one's start, and those of the steps after it), unless a step waits for them or there
// are kGatherRecords of them already.
constexpr int64_t kGatherMs = 100;
constexpr size_t kGatherRecords = 500;
// The longest a step waits for the creation of the steps' runs before it starts anyway.
constexpr int64_t kCreateWaitMs = 30'000;
// A patch recorded with the runs is cut at this size, as `cairn run` cuts its own.
constexpr int64_t kMaxRecordedPatchBytes = 16 << 20;
// MLflow refuses longer tag values.
constexpr size_t kMaxTagValue = 4'900;

std::string Cut(std::string value) {
  if (value.size() > kMaxTagValue) value = value.substr(0, kMaxTagValue) + "...";
  return value;
}

core::RunStatus StatusOf(const std::string& state) {
  if (state == "done" || state == "cached") return core::RunStatus::kFinished;
  if (state == "failed") return core::RunStatus::kFailed;
  return core::RunStatus::kKilled;  // skipped, cancelled: it did not run
}

}  // namespace

struct Tracker::Impl {
  // A step's run.
  struct StepRun {
    std::unique_ptr<RunRecords> records;
    bool kept = false;     // completed in the run being resumed: no new run
    bool created = false;  // its creation is in the journal
    bool started = false;
    bool ended = false;
  };

  std::unique_ptr<TrackingSink> sink;
  Progress* progress = nullptr;
  const Pipeline* pipeline = nullptr;
  RunInfo run;
  std::unique_ptr<RunRecords> parent;
  std::vector<StepRun> steps;           // by index in the pipeline
  std::map<std::string, size_t> index;  // step id -> index

  mutable std::mutex mu;              // guards the fields below
  std::condition_variable wake;       // the worker: records to deliver, or stop
  std::condition_variable delivered;  // a delivery ended
  bool dirty = false;                 // records appended since the last delivery began
  bool urgent = false;                // a step waits for the records appended
  bool stopping = false;
  bool server_up = true;
  bool warned = false;
  int64_t next_probe_ms = 0;  // while the server is down: when the worker tries it again
  size_t attempts = 0;        // deliveries tried
  std::string experiment_id;
  std::thread worker;
  // The code the pipeline runs (SetCode): tags for every run, artifacts for those that run.
  std::vector<core::Tag> code_tags;
  std::vector<std::pair<std::string, std::string>> code_artifacts;  // path, content

  // Notes how a delivery went (mu held): the server is down only when it cannot be reached
  // (a record it refuses is not that).
  void Note(const Status& s) {
    if (!s.ok() && !warned) {
      warned = true;
      progress->Warning("the tracking server at " + sink->tracking_uri() +
                        " cannot take the pipeline's records (" + s.message() +
                        "); they wait in a journal for `cairn sync`");
    }
    if (s.code() == StatusCode::kUnavailable) {
      if (server_up) next_probe_ms = SystemClock()->NowMillis() + kProbeEveryMs;
      server_up = false;
    } else if (s.ok()) {
      server_up = true;
    }
    ++attempts;
  }

  // Delivers what is appended, in batches, until stopped. While the server is down, only a try
  // every kProbeEveryMs; meanwhile the records are made durable where they wait.
  void Work() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      if (server_up) {
        wake.wait(lock, [this] { return stopping || dirty; });
        // More records come with the next steps: gathered, they cost one request.
        wake.wait_for(lock, std::chrono::milliseconds(kGatherMs), [this] {
          return stopping || urgent || sink->appended() - sink->acknowledged() >= kGatherRecords;
        });
      } else {
        const int64_t wait_ms =
            std::clamp<int64_t>(next_probe_ms - SystemClock()->NowMillis(), 0, 1'000);
        wake.wait_for(lock, std::chrono::milliseconds(wait_ms), [this] { return stopping; });
      }
      if (stopping) return;
      if (!server_up && SystemClock()->NowMillis() < next_probe_ms) {
        lock.unlock();
        (void)sink->Keep();
        lock.lock();
        continue;
      }
      if (!server_up) next_probe_ms = SystemClock()->NowMillis() + kProbeEveryMs;
      dirty = false;
      urgent = false;
      lock.unlock();
      Status s = sink->Deliver();
      std::optional<Result<std::string>> experiment;
      if (s.ok() && ExperimentIdUnknown()) experiment = sink->ExperimentOf(run.id);
      lock.lock();
      Note(s);
      if (experiment && experiment->ok()) experiment_id = **experiment;
      delivered.notify_all();
    }
  }

  bool ExperimentIdUnknown() {
    std::lock_guard<std::mutex> lock(mu);
    return experiment_id.empty();
  }

  void Poke() {
    {
      std::lock_guard<std::mutex> lock(mu);
      dirty = true;
    }
    wake.notify_one();
  }

  std::vector<core::Tag> StepTags(const Step& step) const {
    std::vector<core::Tag> tags = {
        {"mlflow.parentRunId", run.id},           {"mlflow.runName", step.id},
        {"mlflow.source.type", "LOCAL"},          {"cairn.pipeline.run", run.id},
        {"cairn.pipeline.name", pipeline->name},  {"cairn.step.id", step.id},
        {"cairn.step.command", Cut(step.command)}};
    if (!step.item.empty()) tags.push_back({"cairn.step.item", Cut(step.item)});
    // The steps it waits for, as a JSON array of ids: with these the DAG can be drawn.
    nlohmann::json needs = nlohmann::json::array();
    for (size_t dep : step.deps) {
      if (dep < pipeline->steps.size()) needs.push_back(pipeline->steps[dep].id);
    }
    if (!needs.empty()) tags.push_back({"cairn.step.needs", Cut(needs.dump())});
    // Its declared outputs, as a JSON array of paths: the DAG page links each to its artifacts.
    if (!step.outputs.empty()) {
      tags.push_back({"cairn.step.outputs", Cut(nlohmann::json(step.outputs).dump())});
    }
    tags.insert(tags.end(), code_tags.begin(), code_tags.end());
    return tags;
  }

  // Appends the step's creation, with `extra` tags; a `scheduled` run waits for its start.
  Status Create(size_t i, bool scheduled, const std::vector<core::Tag>& extra = {}) {
    const Step& step = pipeline->steps[i];
    StepRun& s = steps[i];
    std::vector<core::Tag> tags = StepTags(step);
    tags.insert(tags.end(), extra.begin(), extra.end());
    CAIRN_RETURN_IF_ERROR(s.records->AppendCreate(pipeline->name, step.id,
                                                  SystemClock()->NowMillis(), tags, scheduled));
    s.created = true;
    if (step.params.empty()) return Status::Ok();
    std::vector<core::Param> params;
    for (const auto& [k, v] : step.params) params.push_back({k, Cut(v)});
    return s.records->AppendBatch(params, {});
  }

  // Creates the runs of every step that has none yet, SCHEDULED, and waits until the server
  // has them (or cannot be reached, or kCreateWaitMs passed).
  void CreateAll() {
    bool any = false;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].kept || steps[i].created) continue;
      if (Status s = Create(i, /*scheduled=*/true); !s.ok()) {
        progress->Warning("cannot record step " + pipeline->steps[i].id + ": " + s.message());
      }
      any = true;
    }
    if (any) WaitForDelivery();
  }

  // Waits until the server has every record appended so far (or cannot be reached, or
  // kCreateWaitMs passed).
  void WaitForDelivery() {
    const size_t target = sink->appended();
    std::unique_lock<std::mutex> lock(mu);
    if (!server_up) return;
    const size_t attempts_before = attempts;
    dirty = true;
    urgent = true;
    wake.notify_one();
    delivered.wait_for(lock, std::chrono::milliseconds(kCreateWaitMs), [&] {
      return !server_up || (attempts > attempts_before && sink->acknowledged() >= target);
    });
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
};

Tracker::Tracker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Tracker::~Tracker() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
}

const std::string& Tracker::tracking_uri() const { return impl_->sink->tracking_uri(); }

std::string Tracker::ExperimentId() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->experiment_id;
}

Result<std::unique_ptr<Tracker>> Tracker::Start(const std::string& tracking_uri,
                                                const Pipeline& pipeline, const RunInfo& run,
                                                Progress& progress,
                                                const std::map<std::string, StepEvent>* resumed) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TrackingSink> sink,
                         NewJournalSink(tracking_uri, run.id, [&progress](const std::string& text) {
                           progress.Note(text);
                         }));
  return Start(std::move(sink), pipeline, run, progress, resumed);
}

Result<std::unique_ptr<Tracker>> Tracker::Start(std::unique_ptr<TrackingSink> sink,
                                                const Pipeline& pipeline, const RunInfo& run,
                                                Progress& progress,
                                                const std::map<std::string, StepEvent>* resumed) {
  auto impl = std::make_unique<Impl>();
  impl->sink = std::move(sink);
  impl->progress = &progress;
  impl->pipeline = &pipeline;
  impl->run = run;
  impl->parent = impl->sink->Run(run.id);
  impl->steps.resize(pipeline.steps.size());
  for (size_t i = 0; i < pipeline.steps.size(); ++i) {
    const Step& step = pipeline.steps[i];
    impl->index[step.id] = i;
    Impl::StepRun& s = impl->steps[i];
    // A step the resume keeps has its run; so does one that waited for approval when the
    // earlier session stopped, and a decision made on that run meanwhile counts.
    const StepEvent* before = nullptr;
    if (resumed != nullptr) {
      if (auto it = resumed->find(step.id); it != resumed->end()) before = &it->second;
    }
    const bool waited = before != nullptr && before->state == "waiting" && !before->run_id.empty();
    s.kept = before != nullptr && !waited;
    s.created = waited;
    s.records = impl->sink->Run(before != nullptr ? before->run_id : RandomHex(16));
  }
  if (resumed != nullptr) {
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
    CAIRN_RETURN_IF_ERROR(impl->parent->AppendCreate(pipeline.name, pipeline.name, run.started_ms,
                                                     tags, /*scheduled=*/false));
    std::vector<core::Param> params;
    for (const auto& [k, v] : pipeline.params) params.push_back({k, Cut(v)});
    if (!params.empty()) CAIRN_RETURN_IF_ERROR(impl->parent->AppendBatch(params, {}));
  }
  std::unique_ptr<Tracker> tracker(new Tracker(std::move(impl)));
  Impl* d = tracker->impl_.get();
  d->worker = std::thread([d] { d->Work(); });
  d->Poke();
  return tracker;
}

void Tracker::SetCode(capture::CodeState code) {
  Impl& d = *impl_;
  if (!code.in_repository) return;
  capture::CutPatch(&code, kMaxRecordedPatchBytes);
  d.code_tags = capture::CodeTags(code);
  d.code_artifacts.push_back(
      {std::string(capture::kCodeStateArtifact), capture::CodeStateJson(code)});
  if (!code.patch.empty()) {
    d.code_artifacts.push_back({std::string(capture::kCodeDiffArtifact), std::move(code.patch)});
  }
  Status s = d.parent->AppendBatch({}, d.code_tags);
  for (const auto& [path, content] : d.code_artifacts) {
    if (s.ok()) s = d.parent->AppendArtifact(path, content);
  }
  if (!s.ok()) d.progress->Warning("cannot record the pipeline's code: " + s.message());
  d.Poke();
}

void Tracker::StepWaiting(const Step& step) {
  Impl& d = *impl_;
  Impl::StepRun& s = d.steps[d.index.at(step.id)];
  if (!s.created) d.CreateAll();
  Status st = s.records->AppendBatch(
      {}, {{"cairn.step.state", "waiting for approval"}, {"cairn.approval.by", step.approval->by}});
  if (!st.ok()) d.progress->Warning("cannot record step " + step.id + ": " + st.message());
  d.WaitForDelivery();
}

std::optional<ApprovalDecision> Tracker::ApprovalOf(const Step& step) {
  Impl& d = *impl_;
  Result<std::map<std::string, std::string>> tags =
      d.sink->TagsOf(d.steps[d.index.at(step.id)].records->run_id());
  if (!tags.ok()) return std::nullopt;
  auto get = [&](const char* key) {
    auto it = tags->find(key);
    return it == tags->end() ? std::string() : it->second;
  };
  const std::string decision = get("cairn.approval.decision");
  if (decision != "approved" && decision != "rejected") return std::nullopt;
  return ApprovalDecision{decision == "approved", get("cairn.approval.decided_by"),
                          get("cairn.approval.comment"), 0};
}

std::string Tracker::StepRunId(const Step& step) const {
  return impl_->steps.at(impl_->index.at(step.id)).records->run_id();
}

std::string Tracker::StepRun(const Step& step) {
  Impl& d = *impl_;
  const size_t i = d.index.at(step.id);
  Impl::StepRun& s = d.steps[i];
  if (!s.created) d.CreateAll();
  if (!s.started && !s.kept) {
    s.started = true;
    if (Status st = s.records->AppendStart(SystemClock()->NowMillis()); !st.ok()) {
      d.progress->Warning("cannot record step " + step.id + ": " + st.message());
    }
    d.Poke();
  }
  return s.records->run_id();
}

void Tracker::StepEnded(const Step& step, const StepRecord& r) {
  Impl& d = *impl_;
  Impl::StepRun& s = d.steps[d.index.at(step.id)];
  if (s.ended || s.kept) return;
  std::vector<core::Tag> tags = {{"cairn.step.state", r.state}};
  if (r.state == "done" || r.state == "failed") {
    tags.push_back({"cairn.step.exit_code", std::to_string(r.exit_code)});
  }
  if (!r.reason.empty()) tags.push_back({"cairn.step.reason", Cut(r.reason)});
  if (!r.cache_key.empty()) tags.push_back({"cairn.step.cache_key", r.cache_key});
  if (!r.cached_from_run.empty()) tags.push_back({"cairn.step.cached_from_run", r.cached_from_run});
  RunRecords& j = *s.records;
  // A step that never started has no run yet: it is created with its outcome.
  Status st = s.created ? j.AppendBatch({}, tags)
                        : d.Create(d.index.at(step.id), /*scheduled=*/false, tags);
  if (st.ok() && !r.log_path.empty()) {
    if (Result<std::string> log = ReadFile(r.log_path); log.ok()) {
      for (size_t offset = 0; offset < log->size() && st.ok(); offset += kLogChunkBytes) {
        core::ConsoleChunk chunk;
        chunk.offset = static_cast<int64_t>(offset);
        chunk.timestamp = SystemClock()->NowMillis();
        chunk.data = log->substr(offset, kLogChunkBytes);
        st = j.AppendLog({chunk});
      }
    }
  }
  if (st.ok() && !step.outputs.empty() && !r.outputs_json.empty()) {
    st = j.AppendArtifact("cairn/outputs.json", r.outputs_json);
  }
  if (st.ok() && !r.output_files.empty()) st = j.AppendBlobs(r.output_files);
  // A step that ran a command: the code it ran, as `cairn run` records it.
  for (size_t k = 0; s.started && st.ok() && k < d.code_artifacts.size(); ++k) {
    st = j.AppendArtifact(d.code_artifacts[k].first, d.code_artifacts[k].second);
  }
  if (st.ok() && step.registration && !r.registered_output.empty()) {
    // The run ends either way: a failure here costs the version, not the run's records.
    if (Status reg = d.Register(j, *step.registration, r.registered_output); !reg.ok()) {
      d.progress->Warning("step " + step.id + ": nothing registered as " +
                          step.registration->model + ": " + reg.message());
    }
  }
  if (st.ok()) st = j.AppendEnd(StatusOf(r.state), SystemClock()->NowMillis());
  if (!st.ok()) d.progress->Warning("cannot record step " + step.id + ": " + st.message());
  s.ended = true;
  d.Poke();
}

client::BlobTotals Tracker::OutputTotals() const { return impl_->sink->blob_totals(); }

void Tracker::Finish(bool ok, bool interrupted) {
  Impl& d = *impl_;
  // Steps the run never reached end with it.
  for (size_t i = 0; i < d.steps.size(); ++i) {
    if (d.steps[i].kept || d.steps[i].ended) continue;
    StepRecord r;
    r.state = "cancelled";
    r.reason = interrupted ? "the pipeline run was interrupted" : "the pipeline run ended first";
    StepEnded(d.pipeline->steps[i], r);
  }
  const std::string state = ok ? "complete" : interrupted ? "interrupted" : "failed";
  Status s = d.parent->AppendBatch({}, {{"cairn.pipeline.state", state}});
  if (s.ok()) {
    s = d.parent->AppendEnd(ok            ? core::RunStatus::kFinished
                            : interrupted ? core::RunStatus::kKilled
                                          : core::RunStatus::kFailed,
                            SystemClock()->NowMillis());
  }
  if (!s.ok()) d.progress->Warning("cannot record the pipeline run's end: " + s.message());
  // The worker stops; what is left is delivered here, for a few seconds at most, and not
  // past the first sign that the server cannot be reached (tried once at most while it is
  // known to be down).
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.stopping = true;
  }
  d.wake.notify_all();
  if (d.worker.joinable()) d.worker.join();
  const int64_t give_up = SystemClock()->NowMillis() + kFinishPatienceMs;
  while (!d.sink->complete() && SystemClock()->NowMillis() < give_up) {
    const size_t before = d.sink->acknowledged();
    Status delivered = d.sink->Deliver();
    std::lock_guard<std::mutex> lock(d.mu);
    d.Note(delivered);
    if (!delivered.ok() || d.sink->acknowledged() == before) break;
  }
  if (d.sink->complete()) {
    (void)d.sink->Remove();
    return;
  }
  (void)d.sink->Keep();  // left for `cairn sync`: on disk
  const size_t pending = d.sink->appended() - d.sink->acknowledged();
  d.progress->Warning(std::to_string(pending) + " record(s) of this pipeline run are not on " +
                      "the tracking server at " + d.sink->tracking_uri() +
                      " yet; `cairn sync` uploads them");
}

}  // namespace cairn::pipeline
