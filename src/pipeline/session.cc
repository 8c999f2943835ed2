#include "pipeline/session.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "capture/code_state.h"
#include "core/dataset.h"
#include "env/env_store.h"
#include "env/install/venv_layout.h"
#include "env/lock.h"
#include "env/project_env.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"

namespace cairn::pipeline {
namespace {

// A checkpoint's file written within this long is taken by a later save (checkpoint.h).
constexpr int64_t kCheckpointSettleMs = 100;
// How often a step waiting for approval looks for a decision.
constexpr int64_t kApprovalPollMs = 1'000;

namespace fs = std::filesystem;
using nlohmann::json;

std::string FormatSeconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", ms / 1000.0);
  return buf;
}

}  // namespace

std::string Session::CanonicalDefinition(const Step& step) {
  json j = {{"command", step.command},
            {"params", step.params},
            {"variables", step.variables},
            {"outputs", step.outputs}};
  return j.dump();
}

Session::Session(const Pipeline& pipeline, RunState& state, SessionOptions options,
                 Progress& progress)
    : pipeline_(pipeline), state_(state), options_(std::move(options)), progress_(progress) {}

Session::~Session() {
  if (cache_) FlushCache();
  if (stat_cache_) {
    Status s = stat_cache_->Save();
    if (!s.ok()) progress_.Warning("cannot save the stat cache: " + s.message());
  }
}

Result<std::unique_ptr<Session>> Session::Create(const Pipeline& pipeline, RunState& state,
                                                 SessionOptions options, Progress& progress) {
  if (options.cache_root.empty()) options.cache_root = StepCache::DefaultRoot();
  std::unique_ptr<Session> s(new Session(pipeline, state, std::move(options), progress));
  CAIRN_ASSIGN_OR_RETURN(s->stat_cache_, StatCache::Open(s->options_.cache_root + "/stat-cache"));
  s->cache_ = std::make_unique<StepCache>(s->options_.cache_root, s->stat_cache_.get());
  s->checkpoints_ = std::make_unique<CheckpointStore>(state.info().dir, s->cache_.get());
  s->checkpoint_thread_ = std::make_unique<SideThread>();

  // The code part of steps that declare no code paths: the repository's commit and its
  // uncommitted changes, leaving out the pipeline's data and outputs and cairn's own records.
  // The whole patch counts (it is hashed, not stored), and so does every untracked file left
  // out of it (binary or large), by content.
  bool needs_git = false;
  capture::CodeStateOptions code_options;
  code_options.max_patch_bytes = std::numeric_limits<int64_t>::max();
  std::error_code ec;
  const std::string workdir = fs::weakly_canonical(s->options_.workdir, ec).string();
  code_options.exclude.push_back(workdir + "/.cairn");
  for (const Step& step : pipeline.steps) {
    if (step.code.empty()) needs_git = true;
    for (const auto* paths : {&step.inputs, &step.outputs}) {
      for (const std::string& p : *paths) {
        code_options.exclude.push_back(p.starts_with('/') ? p : workdir + "/" + p);
      }
    }
    for (const DataInput& d : step.data) code_options.exclude.push_back(workdir + "/" + d.path);
  }
  CAIRN_RETURN_IF_ERROR(s->PlaceData(workdir));
  // A tracked run records the code it runs too.
  if (needs_git || s->options_.tracker != nullptr) {
    Result<capture::CodeState> code = capture::ReadCodeState(workdir, code_options);
    if (code.ok() && s->options_.tracker != nullptr) s->options_.tracker->SetCode(*code);
    if (!code.ok()) {
      s->progress_.Warning("cannot read the code state: " + code.status().message());
    } else if (needs_git && !code->in_repository) {
      s->progress_.Warning(
          "the pipeline is not in a git repository and some steps declare no `code`: a "
          "change to their scripts will not invalidate their cached results");
    } else if (needs_git) {
      std::string changes = code->patch;
      for (const std::string& file : code->untracked_skipped) {
        Result<std::string> digest = s->cache_->Hash(code->root, file);
        changes += "\nuntracked " + file + " " + (digest.ok() ? *digest : "unreadable");
      }
      s->git_code_["git commit"] = code->commit;
      s->git_code_["git uncommitted changes"] = Sha256Hex(changes);
    }
  }
  return s;
}

Result<std::pair<std::string, std::string>> Session::EnvironmentOf(const Step& step) {
  const std::string spec = step.env.empty() ? "project" : step.env;
  if (auto it = envs_.find(spec); it != envs_.end()) return it->second;
  std::pair<std::string, std::string> out{"none", ""};
  if (spec == "project") {
    if (std::optional<std::string> active =
            env::ProjectEnv(env::FindProjectDir(options_.workdir)).ActivePath()) {
      CAIRN_ASSIGN_OR_RETURN(env::StoredEnvironment e, env::LoadStoredEnvironment(*active));
      out = {e.lock_hash, *active};
    }
  } else if (spec != "none") {
    const std::string path = spec.starts_with('/') ? spec : options_.workdir + "/" + spec;
    CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    const std::string hash = env::LockHash(text);
    env::EnvStore store(env::EnvStore::DefaultRoot());
    Result<env::StoredEnvironment> e = store.Find(hash.substr(0, 16));
    if (!e.ok()) {
      return FailedPrecondition("the environment of " + spec +
                                " is not built: cairn env build --lock " + spec + " --no-use");
    }
    out = {hash, e->path};
  }
  envs_[spec] = out;
  return out;
}

Status Session::PlaceData(const std::string& workdir) {
  for (const Step& step : pipeline_.steps) {
    for (const DataInput& d : step.data) {
      if (data_.count(d.path) != 0) continue;
      if (options_.data == nullptr) {
        return FailedPrecondition("step " + step.id + " reads dataset " + d.name +
                                  ", which needs a tracking server to fetch it from");
      }
      Result<PlacedData> placed = options_.data->Place(d.name, d.version, workdir + "/" + d.path);
      if (!placed.ok()) {
        return placed.status().WithContext("putting dataset " +
                                           core::DataRefText(d.name, d.version) + " in " + d.path +
                                           " for step " + step.id);
      }
      progress_.Note("dataset " + core::DataRefText(d.name, placed->version) + " in " + d.path +
                     " (" + placed->digest.substr(0, 12) + ")");
      data_[d.path] = *std::move(placed);
    }
  }
  return Status::Ok();
}

std::string Session::DataKey(const DataInput& d) { return "dataset " + d.name + " in " + d.path; }

Result<KeyParts> Session::ComputeKeyParts(const Step& step) {
  KeyParts parts;
  parts.definition = CanonicalDefinition(step);
  // Hashing may take long: the entries of the steps that ended before are written first.
  bool hashes = !step.inputs.empty() || !step.code.empty();
  for (size_t dep : step.deps) hashes = hashes || !pipeline_.steps[dep].outputs.empty();
  if (hashes) FlushCache();
  for (const std::string& input : step.inputs) {
    Result<std::string> digest = cache_->Hash(options_.workdir, input);
    if (!digest.ok()) {
      return digest.status().WithContext("hashing the input " + input + " of " + step.id);
    }
    parts.inputs[input] = *digest;
  }
  // A dataset counts by its version's digest, which names the directory's content.
  for (const DataInput& d : step.data) parts.inputs[DataKey(d)] = data_.at(d.path).digest;
  // What the steps it waits for wrote counts as input too, declared or not.
  for (size_t dep : step.deps) {
    for (const std::string& output : pipeline_.steps[dep].outputs) {
      if (parts.inputs.count(output) != 0) continue;
      Result<std::string> digest = cache_->Hash(options_.workdir, output);
      if (!digest.ok()) {
        return digest.status().WithContext("hashing " + output + ", an output of " +
                                           pipeline_.steps[dep].id);
      }
      parts.inputs[output] = *digest;
    }
  }
  if (step.code.empty()) {
    parts.code = git_code_;
  } else {
    for (const std::string& path : step.code) {
      Result<std::string> digest = cache_->Hash(options_.workdir, path);
      if (!digest.ok()) return digest.status().WithContext("hashing the code " + path);
      parts.code[path] = *digest;
    }
  }
  CAIRN_ASSIGN_OR_RETURN(auto env, EnvironmentOf(step));
  parts.env = env.first;
  return parts;
}

Result<KeyParts> Session::ReadKeyParts(const RunState& state, const std::string& step_id) {
  CAIRN_ASSIGN_OR_RETURN(std::string text, state.KeyParts(step_id));
  return KeyParts::FromJson(text);
}

Result<bool> Session::Reuse(size_t index) {
  const Step& step = pipeline_.steps[index];
  if (auto it = options_.completed.find(step.id); it != options_.completed.end()) {
    kept_.insert(index);
    return true;
  }
  CAIRN_ASSIGN_OR_RETURN(KeyParts parts, ComputeKeyParts(step));
  const std::string key = parts.Key();
  parts_[index] = parts;
  keys_[index] = key;
  CAIRN_RETURN_IF_ERROR(state_.AppendKeyParts(step.id, parts.ToJson()));
  if (!step.cache || !options_.use_cache) return false;
  CAIRN_ASSIGN_OR_RETURN(std::optional<CacheEntry> entry, cache_->Lookup(key));
  if (!entry) return false;
  CAIRN_RETURN_IF_ERROR(cache_->Restore(options_.workdir, *entry).status());
  cached_from_[index] = entry->pipeline_run;
  cached_from_run_[index] = entry->tracking_run;
  outputs_json_[index] = OutputsJson(entry->outputs);
  return true;
}

ApprovalState Session::Approve(size_t index) {
  const Step& step = pipeline_.steps[index];
  if (!step.approval) return {};
  const int64_t now = SystemClock()->NowMillis();
  auto [ask, first] = next_ask_.try_emplace(index, 0);
  if (first) {
    // On the server first: whoever is told the step waits finds it there.
    if (options_.tracker != nullptr) options_.tracker->StepWaiting(step);
    StepEvent e;
    e.step = step.id;
    e.state = "waiting";
    e.reason = "for approval by " + step.approval->by;
    if (options_.tracker != nullptr) e.run_id = options_.tracker->StepRunId(step);
    Record(e);
    progress_.Event("waiting", step.id,
                    "for approval by " + step.approval->by + ": cairn pipeline approve " +
                        state_.info().id.substr(0, 8) + " " + step.id);
  }
  if (now < ask->second) return {ApprovalState::kWaiting, ""};
  ask->second = now + kApprovalPollMs;
  std::optional<ApprovalDecision> decision = options_.tracker != nullptr
                                                 ? options_.tracker->ApprovalOf(step)
                                                 : ReadLocalDecision(state_.info().dir, step.id);
  if (!decision) return {ApprovalState::kWaiting, ""};
  next_ask_.erase(index);
  // "by alice: looks good", "by alice", "looks good".
  std::string detail = decision->by.empty() ? "" : "by " + decision->by;
  if (!decision->comment.empty()) detail += (detail.empty() ? "" : ": ") + decision->comment;
  if (!decision->approved) {
    return {ApprovalState::kRejected, "rejected" + (detail.empty() ? "" : " " + detail)};
  }
  progress_.Event("approved", step.id, detail);
  return {};
}

void Session::Prepare(StepJob* job) {
  const Step& step = pipeline_.steps[job->step];
  Status removed = StepCache::RemoveOutputs(options_.workdir, step.outputs);
  if (!removed.ok()) progress_.Warning(removed.message());
  if (step.checkpoint) {
    // The last save of an attempt before is over before its checkpoint comes back.
    checkpoint_thread_->Wait();
    ReportCheckpointErrors();
    Result<std::optional<size_t>> restored = checkpoints_->Restore(step.id, CheckpointDir(step));
    if (!restored.ok()) {
      progress_.Warning("step " + step.id + ": " + restored.status().message());
    } else if (*restored) {
      progress_.Event("restored", step.id,
                      "its checkpoint, " + std::to_string(**restored) + " file(s)");
    }
  }
  Result<std::pair<std::string, std::string>> env = EnvironmentOf(step);
  if (env.ok() && !env->second.empty()) {
    for (const auto& [name, value] : env::ActivationVariables(env->second)) {
      job->env[name] = value;
    }
  }
  job->env["CAIRN_PIPELINE_RUN"] = state_.info().id;
  if (options_.tracker != nullptr) {
    // The step's run, for MLflow and cairn clients inside it.
    const std::string run_id = options_.tracker->StepRun(step);
    run_ids_[job->step] = run_id;
    job->env["MLFLOW_TRACKING_URI"] = options_.tracker->tracking_uri();
    job->env["CAIRN_TRACKING_URI"] = options_.tracker->tracking_uri();
    job->env["MLFLOW_RUN_ID"] = run_id;
    job->env["CAIRN_RUN_ID"] = run_id;
    if (std::string experiment = options_.tracker->ExperimentId(); !experiment.empty()) {
      job->env["MLFLOW_EXPERIMENT_ID"] = experiment;
    }
  }
}

std::string Session::OutputsJson(const std::vector<CachedOutput>& outputs) {
  json j = json::array();
  for (const CachedOutput& o : outputs) {
    j.push_back({{"path", o.path},
                 {"digest", o.digest},
                 {"directory", o.is_directory},
                 {"bytes", o.bytes}});
  }
  return j.dump(1) + "\n";
}

std::string Session::CheckpointDir(const Step& step) const {
  std::error_code ec;
  return (fs::absolute(options_.workdir.empty() ? "." : options_.workdir, ec) /
          step.checkpoint->path)
      .string();
}

void Session::SaveCheckpoint(size_t index, int64_t settle_ms, bool wait) {
  if (wait) {
    checkpoint_thread_->Wait();
  } else if (checkpoint_busy_.load()) {
    return;  // the next turn takes what changed meanwhile
  }
  const Step& step = pipeline_.steps[index];
  checkpoint_busy_ = true;
  checkpoint_thread_->Start([this, id = step.id, dir = CheckpointDir(step), settle_ms] {
    Result<size_t> saved = checkpoints_->Save(id, dir, settle_ms);
    if (!saved.ok()) {
      std::lock_guard<std::mutex> lock(checkpoint_mu_);
      checkpoint_errors_.push_back("step " + id +
                                   ": its checkpoint was not stored: " + saved.status().message());
    }
    checkpoint_busy_ = false;
  });
}

void Session::ReportCheckpointErrors() {
  std::vector<std::string> errors;
  {
    std::lock_guard<std::mutex> lock(checkpoint_mu_);
    errors.swap(checkpoint_errors_);
  }
  for (const std::string& e : errors) progress_.Warning(e);
}

void Session::AttemptStarted(const StepJob& job) {
  started_[job.step] = SystemClock()->NowMillis();
  if (pipeline_.steps[job.step].checkpoint) checkpoint_saved_[job.step] = started_[job.step];
  StepEvent e;
  e.step = job.id;
  e.state = "started";
  e.attempt = job.attempt;
  Record(e);
  progress_.Event("started", job.id,
                  job.attempt > 1 ? "attempt " + std::to_string(job.attempt) : "");
}

Status Session::Succeeded(const StepJob& job) {
  const Step& step = pipeline_.steps[job.step];
  auto key = keys_.find(job.step);
  if (key == keys_.end()) return Status::Ok();
  CacheEntry meta;
  meta.pipeline_run = state_.info().id;
  meta.step = step.id;
  meta.time_ms = SystemClock()->NowMillis();
  if (auto run = run_ids_.find(job.step); run != run_ids_.end()) meta.tracking_run = run->second;
  CAIRN_ASSIGN_OR_RETURN(CacheEntry stored, cache_->Store(options_.workdir, key->second,
                                                          parts_[job.step], step.outputs, meta));
  outputs_json_[job.step] = OutputsJson(stored.outputs);
  if (options_.tracker != nullptr) output_files_[job.step] = OutputFiles(step, stored.outputs);
  return Status::Ok();
}

Result<UploadOutputs> ParseUploadOutputs(std::string_view text) {
  if (text == "never") return UploadOutputs::kNever;
  if (text == "small") return UploadOutputs::kSmall;
  if (text == "always") return UploadOutputs::kAlways;
  return InvalidArgument("--upload-outputs takes never, small or always, not '" +
                         std::string(text) + "'");
}

std::vector<client::BlobFile> Session::OutputFiles(const Step& step,
                                                   const std::vector<CachedOutput>& outputs) {
  std::vector<client::BlobFile> files;
  if (options_.upload_outputs == UploadOutputs::kNever) return files;
  const int64_t limit = options_.upload_outputs == UploadOutputs::kSmall
                            ? options_.small_output_bytes
                            : std::numeric_limits<int64_t>::max();
  std::string registered;
  if (step.registration)
    registered = "outputs/" + fs::path(step.registration->path).lexically_normal().generic_string();
  size_t too_large = 0;
  auto add = [&](const std::string& path, const FileEntry& f) {
    if (f.mode == kModeSymlink) return;
    if (!registered.empty() && (path == registered || path.starts_with(registered + "/"))) return;
    if (f.size > limit) {
      ++too_large;
      return;
    }
    files.push_back(
        {path, f.sha256, f.size, cache_->ObjectPath(f.sha256, f.mode == kModeExecutable)});
  };
  for (const CachedOutput& out : outputs) {
    std::string base = fs::path(out.path).lexically_normal().generic_string();
    while (base.ends_with('/')) base.pop_back();
    base = "outputs/" + base;
    Result<std::vector<FileEntry>> entries = cache_->OutputFiles(out);
    if (!entries.ok()) {
      progress_.Warning("step " + step.id + ": output " + out.path +
                        " is not recorded with its run: " + entries.status().message());
      continue;
    }
    for (const FileEntry& f : *entries) add(f.path.empty() ? base : base + "/" + f.path, f);
  }
  if (too_large > 0) {
    const std::string over = limit % (1 << 20) == 0 ? std::to_string(limit >> 20) + " MiB"
                                                    : std::to_string(limit) + " bytes";
    progress_.Warning("step " + step.id + ": " + std::to_string(too_large) +
                      " output file(s) over " + over +
                      " are not recorded with its run (--upload-outputs always records them)");
  }
  return files;
}

void Session::AttemptEnded(const StepJob& job, const JobResult& result, const std::string& reason,
                           int64_t retry_in_ms) {
  last_exit_[job.step] = result.exit_code;
  if (checkpoint_saved_.erase(job.step) != 0) {
    SaveCheckpoint(job.step, /*settle_ms=*/0, /*wait=*/true);
  }
  if (reason.empty() || retry_in_ms < 0) return;
  StepEvent e;
  e.step = job.id;
  e.state = "retrying";
  e.attempt = job.attempt;
  e.reason = reason;
  e.exit_code = result.exit_code;
  Record(e);
  progress_.Event("retry", job.id,
                  reason + "; attempt " + std::to_string(job.attempt + 1) + " in " +
                      FormatSeconds(retry_in_ms));
}

void Session::StepEnded(size_t index, StepState state, const std::string& reason) {
  const Step& step = pipeline_.steps[index];
  StepEvent e;
  e.step = step.id;
  if (auto k = keys_.find(index); k != keys_.end()) e.cache_key = k->second;
  if (state == StepState::kCached && kept_.count(index) != 0) {
    // Completed in an earlier session of this run: kept as it was.
    const StepEvent& before = options_.completed.at(step.id);
    ++counts_["kept"];
    e.state = before.state;
    e.cached_from = before.cached_from;
    e.cache_key = before.cache_key;
    e.run_id = before.run_id;
    Record(e);
    progress_.Event("kept", step.id, before.state + " before this resume");
    return;
  }
  ++counts_[StepStateName(state)];
  std::string detail = reason;
  if (state == StepState::kCached) {
    e.cached_from = cached_from_[index];
    detail = "from run " + e.cached_from.substr(0, 8);
  }
  if (auto it = started_.find(index); it != started_.end() && state != StepState::kCached) {
    const std::string took = FormatSeconds(SystemClock()->NowMillis() - it->second);
    if (detail.empty()) {
      detail = took;
    } else if (!detail.starts_with("timed out")) {  // "timed out after 1 s" says how long
      detail += " after " + took;
    }
  }
  e.state = StepStateName(state);
  e.reason = reason;
  if (state == StepState::kFailed) e.exit_code = last_exit_[index];
  if (options_.tracker != nullptr) {
    StepRecord r;
    r.state = e.state;
    r.exit_code = state == StepState::kDone ? 0 : last_exit_[index];
    r.reason = reason;
    r.cache_key = e.cache_key;
    r.cached_from_run = cached_from_run_[index];
    if (started_.count(index) != 0) r.log_path = state_.log_dir() + "/" + LogFileName(step.id);
    r.outputs_json = outputs_json_[index];
    if (state == StepState::kDone) r.output_files = std::move(output_files_[index]);
    if (state == StepState::kDone && step.registration)
      r.registered_output = RegisteredOutput(step);
    options_.tracker->StepEnded(step, r);
    e.run_id = options_.tracker->StepRunId(step);
  }
  Record(e);
  progress_.Event(StepStateName(state), step.id, detail);
  if (state == StepState::kFailed && started_.count(index) != 0) {
    progress_.FailedLog(step.id, state_.log_dir() + "/" + LogFileName(step.id));
  }
}

std::string Session::RegisteredOutput(const Step& step) {
  std::error_code ec;
  const fs::path base = fs::canonical(options_.workdir.empty() ? "." : options_.workdir, ec);
  const fs::path out = fs::weakly_canonical(base / step.registration->path, ec);
  const std::string b = base.string(), o = out.string();
  if (ec || !(o.size() > b.size() && o.starts_with(b) && (b == "/" || o[b.size()] == '/'))) {
    progress_.Warning("step " + step.id + ": output " + step.registration->path +
                      " leads outside the pipeline's directory; nothing was registered");
    return "";
  }
  return o;
}

void Session::BeforeWait() {
  FlushCache();
  // Files of a checkpoint are stored once they have not changed for kCheckpointSettleMs, and
  // did not change while they were copied: one being written keeps its earlier copy.
  const int64_t now = SystemClock()->NowMillis();
  for (auto& [index, saved] : checkpoint_saved_) {
    if (now - saved < pipeline_.steps[index].checkpoint->every_ms) continue;
    SaveCheckpoint(index, kCheckpointSettleMs, /*wait=*/false);
    saved = now;
  }
  ReportCheckpointErrors();
  progress_.Tick();
}

void Session::FlushCache() {
  Status s = cache_->Flush();
  if (!s.ok()) progress_.Warning("cannot record a step in the cache: " + s.message());
}

void Session::Record(StepEvent event) {
  event.time_ms = SystemClock()->NowMillis();
  Status s = state_.Append(event);
  if (!s.ok()) progress_.Warning(s.message());
}

}  // namespace cairn::pipeline
