#include "cli/queue_run.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "capture/code_state.h"
#include "cli/code_snapshot.h"
#include "cli/commands.h"
#include "client/task_client.h"
#include "client/tracking_client.h"
#include "core/task_spec.h"
#include "env/lock.h"
#include "env/project_env.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/json_writer.h"
#include "util/strings.h"

namespace cairn::cli {
namespace {

namespace fs = std::filesystem;

std::string RequirementsJson(const env::HostRequirements& r) {
  if (r.empty()) return "";
  JsonWriter w;
  w.BeginObject();
  if (!r.cuda.empty()) w.Key("cuda").String(r.cuda);
  if (!r.driver.empty()) w.Key("driver").String(r.driver);
  if (!r.compute_capability.empty()) w.Key("compute_capability").String(r.compute_capability);
  if (!r.glibc.empty()) w.Key("glibc").String(r.glibc);
  w.EndObject();
  return w.Take();
}

std::string Size(int64_t bytes) {
  char text[32];
  if (bytes < 1024 * 1024) {
    std::snprintf(text, sizeof(text), "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1024 * 1024));
  }
  return text;
}

// A line that rewrites itself on a terminal.
void ShowProgress(size_t done, size_t total) {
  if (isatty(STDERR_FILENO) == 0) return;
  std::fprintf(stderr, "\r\033[Kuploading the code snapshot: %zu/%zu files", done, total);
  if (done == total) std::fprintf(stderr, "\r\033[K");
}

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "cairn run --queue: %s: %s\n", what.c_str(), s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

int QueueRun(const QueueRunOptions& options) {
  std::error_code ec;
  const std::string cwd = options.cwd.empty() ? fs::current_path(ec).string() : options.cwd;

  Result<CodeSnapshot> snapshot = TakeCodeSnapshot(cwd);
  if (!snapshot.ok()) return Fail("taking the code snapshot", snapshot.status());
  Result<capture::CodeState> code = capture::ReadCodeState(cwd);

  std::string lock_path = options.lock;
  if (lock_path.empty()) {
    const fs::path project_lock = fs::path(env::FindProjectDir(cwd)) / "pylock.toml";
    if (fs::is_regular_file(project_lock, ec)) lock_path = project_lock.string();
  }
  std::string lock_text;
  env::HostRequirements requirements;
  if (!lock_path.empty()) {
    Result<std::string> text = ReadFile(lock_path);
    if (!text.ok()) return Fail("reading " + lock_path, text.status());
    Result<env::Lock> lock = env::ParseLock(*text, lock_path);
    if (!lock.ok()) return Fail("reading " + lock_path, lock.status());
    lock_text = std::move(*text);
    requirements = lock->host;
  }

  auto client = ConnectOrExplain(options.tracking_uri);
  if (client == nullptr) return 2;
  std::string experiment = options.experiment;
  if (experiment.empty()) experiment = EnvOrEmpty("MLFLOW_EXPERIMENT_NAME");
  std::vector<core::Tag> tags = options.tags;
  if (const std::string user = EnvOrEmpty("USER"); !user.empty()) {
    tags.push_back({"mlflow.user", user});
  }
  tags.push_back({"mlflow.source.type", "LOCAL"});
  const std::string run_id = RandomHex(16);
  Result<core::RunInfo> run =
      client->CreateRunWithId(run_id, "", experiment, options.run_name,
                              SystemClock()->NowMillis(), tags, /*scheduled=*/true);
  if (!run.ok()) return Fail("creating the task's run", run.status());
  // The run exists from here on: a failure below ends it, so that no SCHEDULED run is left
  // without a task.
  auto abandon = [&](const std::string& what, const Status& s) {
    (void)client->UpdateRun(run->run_id, core::RunStatus::kFailed, SystemClock()->NowMillis());
    return Fail(what, s);
  };
  if (!options.params.empty()) {
    if (Status s = client->LogBatch(run->run_id, {}, options.params, {}); !s.ok()) {
      return abandon("recording the parameters", s);
    }
  }
  if (Status s = UploadCodeSnapshot(*client, run->artifact_uri, *snapshot, ShowProgress);
      !s.ok()) {
    return abandon("uploading the code snapshot", s);
  }

  core::TaskSpec spec;
  spec.command = options.command;
  for (const core::Param& p : options.params) spec.params[p.key] = p.value;
  spec.code.snapshot = snapshot->tree.digest;
  spec.code.run_id = run->run_id;
  spec.code.cwd = snapshot->cwd;
  spec.code.files = static_cast<int64_t>(snapshot->tree.files.size());
  spec.code.bytes = snapshot->tree.bytes;
  if (code.ok() && code->in_repository) {
    spec.code.commit = code->commit;
    spec.code.branch = code->branch;
    spec.code.remote_url = code->remote_url;
    spec.code.dirty = code->dirty;
  }
  if (!lock_text.empty()) {
    Status s = client->UploadArtifact(run->artifact_uri, std::string(core::kTaskLockArtifact),
                                      lock_text);
    if (!s.ok()) return abandon("uploading " + lock_path, s);
    spec.environment.run_id = run->run_id;
    spec.environment.lock_hash = env::LockHash(lock_text);
  }

  client::TaskRequest request;
  request.queue = options.queue;
  request.experiment_id = run->experiment_id;
  request.run_id = run->run_id;
  request.priority = options.priority;
  request.needs.gpus = options.gpus;
  request.spec = core::TaskSpecJson(spec);
  request.requirements = RequirementsJson(requirements);
  request.max_attempts = options.max_attempts;
  Result<core::Task> task = client::EnqueueTask(*client, request);
  if (!task.ok()) return abandon("queueing the task", task.status());

  std::printf("queued task %s in %s: run %s in experiment %s\n", task->id.c_str(),
              task->queue.c_str(), task->run_id.c_str(), run->experiment_id.c_str());
  std::printf("  code: %lld files, %s%s%s\n", static_cast<long long>(spec.code.files),
              Size(spec.code.bytes).c_str(),
              spec.code.commit.empty() ? "" : (", commit " + spec.code.commit.substr(0, 12)).c_str(),
              spec.code.dirty ? " with uncommitted changes" : "");
  if (!lock_text.empty()) {
    std::printf("  environment: %s (%s)\n", lock_path.c_str(),
                spec.environment.lock_hash.substr(0, 16).c_str());
  }
  std::printf("  follow it with: cairn task show %s\n", task->id.substr(0, 8).c_str());
  return 0;
}

}  // namespace cairn::cli
