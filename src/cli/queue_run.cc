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

}  // namespace

Result<QueuedRun> PrepareQueuedRun(client::TrackingClient& client, const QueueRunOptions& options) {
  std::error_code ec;
  const std::string cwd = options.cwd.empty() ? fs::current_path(ec).string() : options.cwd;

  Result<CodeSnapshot> snapshot = TakeCodeSnapshot(cwd, {}, options.code_root);
  if (!snapshot.ok()) return snapshot.status().WithContext("taking the code snapshot");
  core::TaskCode origin = options.origin;
  if (options.code_root.empty()) {
    if (Result<capture::CodeState> code = capture::ReadCodeState(cwd);
        code.ok() && code->in_repository) {
      origin.commit = code->commit;
      origin.branch = code->branch;
      origin.remote_url = code->remote_url;
      origin.dirty = code->dirty;
    }
  }

  QueuedRun out;
  out.lock_path = options.lock;
  if (out.lock_path.empty()) {
    const fs::path project_lock = fs::path(env::FindProjectDir(cwd)) / "pylock.toml";
    const bool inside =
        options.code_root.empty() ||
        !fs::relative(project_lock, options.code_root, ec).string().starts_with("..");
    if (inside && fs::is_regular_file(project_lock, ec)) out.lock_path = project_lock.string();
  }
  std::string lock_text;
  env::HostRequirements requirements;
  if (!out.lock_path.empty()) {
    CAIRN_ASSIGN_OR_RETURN(lock_text, ReadFile(out.lock_path));
    Result<env::Lock> lock = env::ParseLock(lock_text, out.lock_path);
    if (!lock.ok()) return lock.status().WithContext("reading " + out.lock_path);
    requirements = lock->host;
  }

  std::string experiment = options.experiment;
  if (experiment.empty() && options.experiment_id.empty()) {
    experiment = EnvOrEmpty("MLFLOW_EXPERIMENT_NAME");
  }
  std::vector<core::Tag> tags = options.tags;
  if (const std::string user = EnvOrEmpty("USER"); !user.empty()) {
    tags.push_back({"mlflow.user", user});
  }
  tags.push_back({"mlflow.source.type", "LOCAL"});
  Result<core::RunInfo> run =
      client.CreateRunWithId(RandomHex(16), options.experiment_id, experiment, options.run_name,
                             SystemClock()->NowMillis(), tags, /*scheduled=*/true);
  if (!run.ok()) return run.status().WithContext("creating the task's run");
  out.run = *run;
  // The run exists from here on: a failure below ends it.
  auto abandon = [&](const std::string& what, const Status& s) {
    (void)client.UpdateRun(run->run_id, core::RunStatus::kFailed, SystemClock()->NowMillis());
    return s.WithContext(what);
  };
  if (!options.params.empty()) {
    if (Status s = client.LogBatch(run->run_id, {}, options.params, {}); !s.ok()) {
      return abandon("recording the parameters", s);
    }
  }
  if (Status s = UploadCodeSnapshot(client, run->artifact_uri, *snapshot, ShowProgress); !s.ok()) {
    return abandon("uploading the code snapshot", s);
  }

  core::TaskSpec& spec = out.spec;
  spec.command = options.command;
  for (const core::Param& p : options.params) spec.params[p.key] = p.value;
  spec.code = origin;
  spec.code.snapshot = snapshot->tree.digest;
  spec.code.run_id = run->run_id;
  spec.code.cwd = snapshot->cwd;
  spec.code.files = static_cast<int64_t>(snapshot->tree.files.size());
  spec.code.bytes = snapshot->tree.bytes;
  spec.reproduce = options.reproduce;
  if (!lock_text.empty()) {
    Status s =
        client.UploadArtifact(run->artifact_uri, std::string(core::kTaskLockArtifact), lock_text);
    if (!s.ok()) return abandon("uploading " + out.lock_path, s);
    spec.environment.run_id = run->run_id;
    spec.environment.lock_hash = env::LockHash(lock_text);
  }
  if (!options.enqueue) return out;

  client::TaskRequest request;
  request.queue = options.queue;
  request.experiment_id = run->experiment_id;
  request.run_id = run->run_id;
  request.priority = options.priority;
  request.needs.gpus = options.gpus;
  request.spec = core::TaskSpecJson(spec);
  request.requirements = RequirementsJson(requirements);
  request.max_attempts = options.max_attempts;
  Result<core::Task> task = client::EnqueueTask(client, request);
  if (!task.ok()) return abandon("queueing the task", task.status());
  out.task = *task;
  return out;
}

void PrintQueued(const QueuedRun& queued) {
  const core::TaskSpec& spec = queued.spec;
  if (queued.task) {
    std::printf("queued task %s in %s: run %s in experiment %s\n", queued.task->id.c_str(),
                queued.task->queue.c_str(), queued.run.run_id.c_str(),
                queued.run.experiment_id.c_str());
  }
  std::printf("  code: %lld files, %s%s%s\n", static_cast<long long>(spec.code.files),
              Size(spec.code.bytes).c_str(),
              spec.code.commit.empty() ? "" : (", commit " + spec.code.commit.substr(0, 12)).c_str(),
              spec.code.dirty ? " with uncommitted changes" : "");
  if (!spec.environment.lock_hash.empty()) {
    std::printf("  environment: %s (%s)\n", queued.lock_path.c_str(),
                spec.environment.lock_hash.substr(0, 16).c_str());
  }
  if (queued.task) {
    std::printf("  follow it with: cairn task show %s\n", queued.task->id.substr(0, 8).c_str());
  }
}

int QueueRun(const QueueRunOptions& options) {
  auto client = ConnectOrExplain(options.tracking_uri);
  if (client == nullptr) return 2;
  Result<QueuedRun> queued = PrepareQueuedRun(*client, options);
  if (!queued.ok()) {
    std::fprintf(stderr, "cairn run --queue: %s\n", queued.status().message().c_str());
    return queued.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  PrintQueued(*queued);
  return 0;
}

}  // namespace cairn::cli
