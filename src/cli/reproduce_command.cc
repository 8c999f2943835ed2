// `cairn clone RUN` and `cairn reproduce RUN` (docs/reproduce.md): a past run queued again,
// with other parameters or the same ones; a reproduction then waits for the new run, and the
// server compares it with the original (service/reproduction.h). A run a queue ran is queued
// again through the server (its task's spec); a run `cairn run` ran is rebuilt from its record
// here: its commit and recorded changes written out of the local repository, and queued as
// `cairn run --queue` queues a command (cli/queue_run.h).
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "capture/code_state.h"
#include "capture/run_wrapper.h"
#include "cli/commands.h"
#include "cli/queue_run.h"
#include "client/task_client.h"
#include "client/tracking_client.h"
#include "core/task_spec.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/process.h"
#include "util/strings.h"

namespace cairn::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct CloneFlags {
  std::string tracking_uri;
  std::string run;
  std::string queue;
  std::vector<std::string> params;
  std::string name;
  std::optional<int64_t> priority;
  std::optional<int64_t> gpus;
  std::string repo;  // where the commit of a run no queue ran is found
  // reproduce only
  bool local = false;
  std::vector<std::string> rtol;
  std::vector<std::string> atol;
  std::vector<std::string> metrics;
  int64_t timeout_seconds = 0;
};

int Failed(const std::string& command, const Status& s) {
  std::fprintf(stderr, "cairn %s: %s\n", command.c_str(), s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

std::string TagOf(const core::Run& run, std::string_view key) {
  const core::Tag* t = run.FindTag(key);
  return t == nullptr ? "" : t->value;
}

// The run to run again, and what it ran: its task's spec when a queue ran it; else what its
// record says (command, working directory, parameters, code state).
struct Origin {
  core::Run run;
  std::optional<core::Task> task;
  core::TaskSpec spec;
};

// The record of a run `cairn run` ran: the command and the directory it ran in.
Status ReadRecordedCommand(client::TrackingClient& client, Origin* o) {
  const std::string& id = o->run.info.run_id;
  Result<std::string> text =
      client.DownloadArtifact(o->run.info.artifact_uri, "cairn/process.json");
  if (!text.ok()) {
    return FailedPrecondition("run " + id + " has no cairn/process.json (" +
                              text.status().message() +
                              "): only runs that `cairn run` or a queue ran can be run again");
  }
  const json process = json::parse(*text, nullptr, false);
  if (process.is_object() && process.contains("command") && process["command"].is_array()) {
    for (const json& arg : process["command"]) {
      if (arg.is_string()) o->spec.command.push_back(arg.get<std::string>());
    }
  }
  if (o->spec.command.empty()) {
    return FailedPrecondition("run " + id + "'s cairn/process.json names no command");
  }
  for (const core::Param& p : o->run.data.params) o->spec.params[p.key] = p.value;
  return Status::Ok();
}

Result<Origin> ReadOrigin(client::TrackingClient& client, const std::string& run_id) {
  Origin o;
  CAIRN_ASSIGN_OR_RETURN(o.run, client.GetRun(run_id));
  const std::string task_id = TagOf(o.run, "cairn.task.id");
  if (task_id.empty()) {
    CAIRN_RETURN_IF_ERROR(ReadRecordedCommand(client, &o));
    return o;
  }
  CAIRN_ASSIGN_OR_RETURN(o.task, client::GetTask(client, task_id));
  CAIRN_ASSIGN_OR_RETURN(o.spec, core::ParseTaskSpec(o.task->spec));
  return o;
}

// A temporary directory of this user's alone (mode 0700), removed with everything in it when it
// goes.
struct ScratchDir {
  std::string path;
  Status Make(const std::string& prefix) {
    std::string pattern = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return Unavailable("making a directory like " + pattern + ": " + std::strerror(errno));
    }
    path = pattern;
    return Status::Ok();
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// The code of a run `cairn run` ran, written into `dir` out of the repository around
// `repo_dir`: its commit with its recorded uncommitted changes. Fills the options' command,
// directory and code origin; the lock is the project's in that code, as `cairn run --queue`
// takes it.
Status RebuildRunCode(client::TrackingClient& client, const Origin& o, const std::string& repo_dir,
                      const std::string& dir, QueueRunOptions* options) {
  const core::Run& run = o.run;
  const std::string& id = run.info.run_id;
  const std::string commit = TagOf(run, "mlflow.source.git.commit");
  const std::string root = TagOf(run, "cairn.git.root");
  if (commit.empty() || root.empty()) {
    return FailedPrecondition("run " + id +
                              " did not run in a git repository, so its code cannot be rebuilt "
                              "(a run queued with `cairn run --queue` keeps a snapshot of it)");
  }
  const bool dirty = TagOf(run, "cairn.git.dirty") == "true";
  std::string patch;
  if (dirty) {
    Result<std::string> record = client.DownloadArtifact(run.info.artifact_uri, "cairn/code.json");
    const json code = record.ok() ? json::parse(*record, nullptr, false) : json();
    if (!code.is_object()) {
      return FailedPrecondition("run " + id +
                                " has uncommitted changes but no readable "
                                "cairn/code.json, so its code cannot be rebuilt");
    }
    if (code.value("patch_truncated", false)) {
      return FailedPrecondition("run " + id +
                                "'s uncommitted changes were over the size "
                                "recorded in full, so its code cannot be rebuilt exactly");
    }
    std::vector<std::string> skipped;
    for (const json& f : code.value("untracked_skipped", json::array())) {
      if (f.is_string()) skipped.push_back(f.get<std::string>());
    }
    if (!skipped.empty()) {
      return FailedPrecondition("run " + id + " had untracked files that were not recorded (" +
                                Join(skipped, ", ") +
                                ": binary or over 256 KiB), so its code cannot be rebuilt "
                                "exactly; commit them, or queue with `cairn run --queue`");
    }
    Result<std::string> diff = client.DownloadArtifact(run.info.artifact_uri, "cairn/code.diff");
    if (diff.ok()) {
      patch = *std::move(diff);
    } else if (code.value("patch_bytes", 0) > 0) {
      return diff.status().WithContext("reading run " + id + "'s cairn/code.diff");
    }
  }
  CAIRN_RETURN_IF_ERROR(capture::RebuildCode(repo_dir, commit, patch, dir));
  fs::path cwd = fs::path(TagOf(run, "cairn.cwd")).lexically_relative(root);
  if (cwd.empty() || cwd.string().starts_with("..")) cwd = ".";
  options->command = o.spec.command;
  options->cwd = (fs::path(dir) / cwd).lexically_normal().string();
  options->code_root = dir;
  options->origin.commit = commit;
  options->origin.branch = TagOf(run, "mlflow.source.git.branch");
  options->origin.remote_url = TagOf(run, "mlflow.source.git.repoURL");
  options->origin.dirty = dirty;
  return Status::Ok();
}

// Queues (or, without `enqueue`, only makes ready) a new run of a run `cairn run` ran, its
// code rebuilt from the record; `of_tag` names the original.
Result<QueuedRun> QueueRecordedRun(client::TrackingClient& client, const CloneFlags& flags,
                                   const Origin& o, const std::string& of_tag,
                                   const std::string& suffix, core::TaskReproduction reproduce,
                                   bool enqueue) {
  if (enqueue && flags.queue.empty()) {
    return InvalidArgument("run " + o.run.info.run_id +
                           " was not run from a queue: say which queue takes it, --queue NAME");
  }
  std::error_code ec;
  const std::string repo = flags.repo.empty() ? fs::current_path(ec).string() : flags.repo;
  ScratchDir scratch;
  CAIRN_RETURN_IF_ERROR(scratch.Make("cairn-rebuild-"));
  QueueRunOptions options;
  CAIRN_RETURN_IF_ERROR(RebuildRunCode(client, o, repo, scratch.path + "/code", &options));
  options.tracking_uri = client.tracking_uri();
  options.queue = flags.queue;
  options.experiment_id = o.run.info.experiment_id;
  options.run_name = flags.name.empty() ? o.run.info.run_name + suffix : flags.name;
  for (const auto& [k, v] : o.spec.params) options.params.push_back({k, v});
  options.tags = {{of_tag, o.run.info.run_id}};
  options.gpus = flags.gpus.value_or(0);
  options.priority = flags.priority;
  options.reproduce = std::move(reproduce);
  options.enqueue = enqueue;
  CAIRN_ASSIGN_OR_RETURN(QueuedRun queued, PrepareQueuedRun(client, options));
  if (const std::string used = TagOf(o.run, "cairn.env.lock");
      !used.empty() && used != queued.spec.environment.lock_hash) {
    std::fprintf(stderr,
                 "cairn: warning: run %s ran in an environment built from lock %s, which its "
                 "code does not hold; the new run %s\n",
                 o.run.info.run_id.c_str(), used.substr(0, 16).c_str(),
                 queued.spec.environment.lock_hash.empty()
                     ? "runs in the agent's own environment"
                     : ("uses " + queued.spec.environment.lock_hash.substr(0, 16)).c_str());
  }
  return queued;
}

// A SCHEDULED run beside the original, for a new attempt at its task's spec.
// `of_tag` (cairn.clone.of or cairn.reproduce.of) names the original; the run is named
// `name`, else the original's name with `suffix`.
Result<core::RunInfo> NewRun(client::TrackingClient& client, const Origin& o,
                             const std::string& name, const std::string& suffix,
                             const std::string& of_tag, const core::TaskSpec& spec) {
  std::vector<core::Tag> all = {{of_tag, o.run.info.run_id}};
  if (const std::string user = EnvOrEmpty("USER"); !user.empty()) {
    all.push_back({"mlflow.user", user});
  }
  CAIRN_ASSIGN_OR_RETURN(
      core::RunInfo run,
      client.CreateRunWithId(RandomHex(16), o.run.info.experiment_id, "",
                             name.empty() ? o.run.info.run_name + suffix : name,
                             SystemClock()->NowMillis(), all, /*scheduled=*/true));
  std::vector<core::Param> params;
  for (const auto& [k, v] : spec.params) params.push_back({k, v});
  if (!params.empty()) CAIRN_RETURN_IF_ERROR(client.LogBatch(run.run_id, {}, params, {}));
  return run;
}

client::CloneAsk AskFor(const CloneFlags& flags, bool reproduce) {
  client::CloneAsk ask;
  ask.run_id = flags.run;
  ask.queue = flags.queue;
  ask.run_name = flags.name;
  ask.priority = flags.priority;
  ask.gpus = flags.gpus;
  ask.reproduce = reproduce;
  return ask;
}

int Clone(const CloneFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  Result<Origin> origin = ReadOrigin(*client, flags.run);
  if (!origin.ok()) return Failed("clone", origin.status());
  client::CloneAsk ask = AskFor(flags, /*reproduce=*/false);
  for (const std::string& item : flags.params) {
    auto kv = capture::ParseKeyValue(item, "-p");
    if (!kv.ok()) return Failed("clone", kv.status());
    ask.params.push_back({kv->first, kv->second});
  }
  std::optional<core::Task> task;
  if (origin->task) {
    Result<core::Task> cloned = client::CloneTask(*client, ask);
    if (!cloned.ok()) return Failed("clone", cloned.status());
    task = *cloned;
  } else {
    Origin changed = *origin;
    for (const core::Param& p : ask.params) changed.spec.params[p.key] = p.value;
    Result<QueuedRun> queued =
        QueueRecordedRun(*client, flags, changed, "cairn.clone.of", "-clone", {}, true);
    if (!queued.ok()) return Failed("clone", queued.status());
    task = queued->task;
  }
  std::printf("queued task %s in %s: run %s, a clone of %s\n", task->id.c_str(),
              task->queue.c_str(), task->run_id.c_str(), flags.run.c_str());
  for (const core::Param& p : ask.params) {
    auto was = origin->spec.params.find(p.key);
    if (was == origin->spec.params.end() || was->second != p.value) {
      std::printf("  %s = %s (was %s)\n", p.key.c_str(), p.value.c_str(),
                  was == origin->spec.params.end() ? "not set" : was->second.c_str());
    }
  }
  return 0;
}

// --rtol/--atol values: "R" for every metric, "KEY=R" for one; a metric given only one of
// them keeps the other's value for every metric.
Status ReadTolerances(const std::vector<std::string>& rtol, const std::vector<std::string>& atol,
                      core::ReproduceOptions* options) {
  std::map<std::string, double> per[2];
  double* every[2] = {&options->tolerance.rtol, &options->tolerance.atol};
  const std::vector<std::string>* lists[2] = {&rtol, &atol};
  for (int i = 0; i < 2; ++i) {
    for (const std::string& item : *lists[i]) {
      const size_t eq = item.rfind('=');
      const std::string number = eq == std::string::npos ? item : item.substr(eq + 1);
      char* end = nullptr;
      const double value = std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0' || !(value >= 0) || eq == 0) {
        return InvalidArgument(std::string(i == 0 ? "--rtol" : "--atol") +
                               " takes a number >= 0, or KEY=NUMBER; got '" + item + "'");
      }
      if (eq == std::string::npos) {
        *every[i] = value;
      } else {
        per[i][item.substr(0, eq)] = value;
      }
    }
  }
  for (int i = 0; i < 2; ++i) {
    for (const auto& [key, value] : per[i]) {
      core::Tolerance& t = options->per_metric[key];
      (i == 0 ? t.rtol : t.atol) = value;
      if (per[1 - i].count(key) == 0) (i == 0 ? t.atol : t.rtol) = *every[1 - i];
    }
  }
  return Status::Ok();
}

// Waits for the task to end, saying where it is as that changes.
Result<core::Task> WaitForTask(client::TrackingClient& client, const std::string& id,
                               int64_t timeout_seconds) {
  const int64_t deadline =
      timeout_seconds > 0 ? SystemClock()->NowMillis() + timeout_seconds * 1000 : 0;
  std::string said;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(core::Task task, client::GetTask(client, id));
    if (core::TaskStateFinal(task.state)) return task;
    const std::string now = task.state == core::TaskState::kQueued
                                ? "waiting in " + task.queue
                                : "running on " + task.agent + " (attempt " +
                                      std::to_string(task.attempt) + ")";
    if (now != said) {
      std::fprintf(stderr, "cairn reproduce: %s\n", now.c_str());
      said = now;
    }
    if (deadline > 0 && SystemClock()->NowMillis() > deadline) {
      return Unavailable("the task " + id + " did not end within " +
                         std::to_string(timeout_seconds) + " s; it goes on: `cairn task show " +
                         id.substr(0, 8) + "`");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// Runs the spec here, as an agent would, in a directory of its own; returns when it ended.
Status RunLocally(client::TrackingClient& client, const core::RunInfo& run,
                  const core::TaskSpec& spec) {
  const fs::path dir = fs::temp_directory_path() / ("cairn-reproduce-" + run.run_id);
  std::error_code ec;
  fs::remove_all(dir, ec);
  CAIRN_RETURN_IF_ERROR(MakeDirs(dir / "work"));
  CAIRN_RETURN_IF_ERROR(WriteFileAtomic(dir / "work.spec.json", core::TaskSpecJson(spec)));
  std::error_code self_ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", self_ec);
  SpawnOptions spawn;
  spawn.argv = {self_ec ? std::string("cairn") : self.string(), "agent", "exec-task",
                "--run-id", run.run_id, "--spec", (dir / "work.spec.json").string(),
                "--tracking-uri", client.tracking_uri()};
  spawn.cwd = (dir / "work").string();
  CAIRN_ASSIGN_OR_RETURN(Process child, Process::Spawn(spawn));
  Result<ExitStatus> exit = child.Wait();
  Result<std::string> failure = ReadFile(dir / "work.failure");
  fs::remove_all(dir, ec);
  if (failure.ok()) {
    (void)client.SetTag(run.run_id, "cairn.failure_reason", *failure);
    (void)client.UpdateRun(run.run_id, core::RunStatus::kFailed, SystemClock()->NowMillis());
  }
  return exit.status();
}

// What `cairn reproduce` prints from the record (cairn/reproduce.json): the verdict, a line per
// metric, then the differences.
std::string FormatReproduction(const json& r) {
  auto str = [](const json& o, const char* key) {
    return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
  };
  auto num = [](const json& o, const char* key) {
    return o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0.0;
  };
  std::string out = "reproduction of " + str(r, "original") + " in run " + str(r, "reproduced") +
                    "\n" + str(r, "summary") + "\n";
  for (const json& m : r.value("metrics", json::array())) {
    if (!m.is_object()) continue;
    const std::string verdict = str(m, "verdict");
    const std::string note = str(m, "note");
    out += "  " + str(m, "key") + ": " + verdict;
    if (verdict == "diverged" && note.empty()) {
      out += " at step " + std::to_string(static_cast<int64_t>(num(m, "step"))) + " (" +
             ShortestNumber(num(m, "reproduced")) + ", original " +
             ShortestNumber(num(m, "original")) + ")";
    } else if (!note.empty()) {
      out += " (" + note + ")";
    } else if (verdict == "within tolerance") {
      out += " (largest difference " + ShortestNumber(num(m, "max_abs_diff")) + ")";
    }
    out += ", " + std::to_string(static_cast<int64_t>(num(m, "points"))) + " value(s)\n";
  }
  const json differences = r.value("differences", json::object());
  for (const char* section : {"environment", "code", "datasets", "artifacts"}) {
    const json lines = differences.value(section, json::array());
    if (!lines.is_array() || lines.empty()) continue;
    out += std::string(section) + ":\n";
    for (const json& line : lines) {
      if (line.is_string()) out += "  " + line.get<std::string>() + "\n";
    }
  }
  return out;
}

int Reproduce(const CloneFlags& flags) {
  core::ReproduceOptions options;
  options.metrics = flags.metrics;
  if (Status s = ReadTolerances(flags.rtol, flags.atol, &options); !s.ok()) {
    return Failed("reproduce", s);
  }
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  Result<Origin> origin = ReadOrigin(*client, flags.run);
  if (!origin.ok()) return Failed("reproduce", origin.status());
  std::string run_id;
  if (!origin->task) {
    // A run `cairn run` ran: rebuilt from its record, then queued or run here.
    Result<QueuedRun> queued = QueueRecordedRun(*client, flags, *origin, "cairn.reproduce.of",
                                                "-reproduced", {flags.run, options}, !flags.local);
    if (!queued.ok()) return Failed("reproduce", queued.status());
    run_id = queued->run.run_id;
    std::fprintf(stderr,
                 "cairn reproduce: run %s reproduces %s, its code rebuilt from commit %s%s\n",
                 run_id.c_str(), flags.run.c_str(), queued->spec.code.commit.substr(0, 12).c_str(),
                 queued->spec.code.dirty ? " and its recorded changes" : "");
    if (flags.local) {
      if (Status s = RunLocally(*client, queued->run, queued->spec); !s.ok()) {
        return Failed("reproduce", s);
      }
    } else {
      Result<core::Task> ended = WaitForTask(*client, queued->task->id, flags.timeout_seconds);
      if (!ended.ok()) return Failed("reproduce", ended.status());
      run_id = ended->run_id;
    }
  } else if (flags.local) {
    Result<core::RunInfo> run =
        NewRun(*client, *origin, flags.name, "-reproduced", "cairn.reproduce.of", origin->spec);
    if (!run.ok()) return Failed("reproduce", run.status());
    run_id = run->run_id;
    std::fprintf(stderr, "cairn reproduce: run %s reproduces %s\n", run_id.c_str(),
                 flags.run.c_str());
    if (Status s = RunLocally(*client, *run, origin->spec); !s.ok()) return Failed("reproduce", s);
  } else {
    client::CloneAsk ask = AskFor(flags, /*reproduce=*/true);
    ask.reproduce_options = options;
    Result<core::Task> task = client::CloneTask(*client, ask);
    if (!task.ok()) return Failed("reproduce", task.status());
    run_id = task->run_id;
    std::fprintf(stderr, "cairn reproduce: run %s reproduces %s; queued task %s in %s\n",
                 run_id.c_str(), flags.run.c_str(), task->id.c_str(), task->queue.c_str());
    Result<core::Task> ended = WaitForTask(*client, task->id, flags.timeout_seconds);
    if (!ended.ok()) return Failed("reproduce", ended.status());
    run_id = ended->run_id;  // the last attempt's
  }
  // The server compares the runs and records the verdict in the new one.
  Result<std::string> record = client::RecordReproduction(*client, run_id, flags.run, options);
  if (!record.ok()) return Failed("reproduce", record.status());
  const json r = json::parse(*record, nullptr, false);
  PrintText(FormatReproduction(r));
  const std::string verdict = r.is_object() ? r.value("verdict", std::string()) : "";
  return verdict == "identical" || verdict == "within tolerance" ? 0 : 1;
}

void AddCloneOptions(CLI::App* cmd, CloneFlags* flags) {
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->add_option("RUN", flags->run, "The run to run again (one a queue or `cairn run` ran)")
      ->required();
  cmd->add_option("--queue", flags->queue,
                  "Queue it here (default: the original's queue; needed for a run no queue "
                  "ran)");
  cmd->add_option("--repo", flags->repo,
                  "For a run no queue ran: the git repository holding its commit, from which "
                  "its code is rebuilt (default: the current directory's)");
  cmd->add_option("--name", flags->name, "Name of the new run");
  cmd->add_option("--priority", flags->priority, "Higher starts first (default: the queue's)");
  cmd->add_option("--gpus", flags->gpus, "GPUs it needs (default: as the original)")
      ->check(CLI::Range(0, 64));
}

}  // namespace

void RegisterClone(CLI::App& app, Action* action) {
  auto [cmd, flags] = AddSubcommand<CloneFlags>(
      &app, action, "clone",
      "Queue a past run again, with parameters changed: the same code, environment lock and\n"
      "command, in a new run of the same experiment (tag cairn.clone.of). A run a queue ran\n"
      "keeps its code snapshot; a run `cairn run` ran has its code rebuilt from its commit and\n"
      "recorded changes, out of the git repository here (or --repo). The command gets the\n"
      "parameters through ${params.NAME}, CAIRN_PARAM_<NAME> and the Python client's\n"
      "cairn.params().\n\n"
      "  cairn clone 0f3c2a... -p lr=0.001 --queue gpu",
      Clone);
  AddCloneOptions(cmd, flags.get());
  cmd->add_option("-p,--param", flags->params, "Parameter key=value to change; repeatable")
      ->allow_extra_args(false);
}

void RegisterReproduce(CLI::App& app, Action* action) {
  auto [cmd, flags] = AddSubcommand<CloneFlags>(
      &app, action, "reproduce",
      "Run a past run again from its record alone (code, environment lock, parameters,\n"
      "command; the code of a run `cairn run` ran is rebuilt from its commit and recorded\n"
      "changes, out of the git repository here or --repo), and have the server compare the\n"
      "new run with it, metric by metric and step by step: identical (bit for bit), within\n"
      "tolerance, diverged (the first metric and step beyond tolerance) or incomplete. Also\n"
      "lists how the environment, code, datasets and output artifacts differ.\n"
      "The verdict goes into the new run (tags cairn.reproduce.of and cairn.reproduce.verdict,\n"
      "artifact cairn/reproduce.json). Exits 0 for identical or within tolerance, 1 otherwise.\n\n"
      "  cairn reproduce 0f3c2a... --rtol 1e-3\n"
      "  cairn reproduce 0f3c2a... --local --metric loss",
      Reproduce);
  AddCloneOptions(cmd, flags.get());
  cmd->add_flag("--local", flags->local,
                "Run it here, as an agent would, rather than through a queue");
  cmd->add_option("--rtol", flags->rtol,
                  "Relative tolerance, for every metric (R) or one (KEY=R); repeatable");
  cmd->add_option("--atol", flags->atol,
                  "Absolute tolerance, for every metric (A) or one (KEY=A); repeatable");
  cmd->add_option("--metric", flags->metrics,
                  "Compare only these metrics (default: all but system/...); repeatable");
  cmd->add_option("--timeout", flags->timeout_seconds,
                  "Give up waiting for a queued reproduction after this many seconds "
                  "(default: wait)")
      ->check(CLI::Range(0, 30 * 86400));
}

}  // namespace cairn::cli
