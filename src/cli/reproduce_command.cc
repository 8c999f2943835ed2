// `cairn clone RUN` and `cairn reproduce RUN` (docs/reproduce.md): a past queued run's task
// queued again, with other parameters or the same ones; a reproduction then waits for the new
// run and compares it with the original (report/reproduce.h).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "capture/run_wrapper.h"
#include "cli/commands.h"
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

// The task a run was an attempt of, and what it ran.
struct Origin {
  core::Run run;
  core::Task task;
  core::TaskSpec spec;
};

Result<Origin> ReadOrigin(client::TrackingClient& client, const std::string& run_id) {
  Origin o;
  CAIRN_ASSIGN_OR_RETURN(o.run, client.GetRun(run_id));
  const std::string task_id = TagOf(o.run, "cairn.task.id");
  if (task_id.empty()) {
    return FailedPrecondition("run " + run_id +
                              " was not run from a queue, so it has no code snapshot to run "
                              "again; queue work with `cairn run --queue`");
  }
  CAIRN_ASSIGN_OR_RETURN(o.task, client::GetTask(client, task_id));
  CAIRN_ASSIGN_OR_RETURN(o.spec, core::ParseTaskSpec(o.task.spec));
  return o;
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
  Result<core::Task> task = client::CloneTask(*client, ask);
  if (!task.ok()) return Failed("clone", task.status());
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

// The shortest form of a number that reads back the same.
std::string Number(double v) {
  for (int precision = 6; precision < 17; ++precision) {
    char text[40];
    std::snprintf(text, sizeof(text), "%.*g", precision, v);
    if (std::strtod(text, nullptr) == v) return text;
  }
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
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
             Number(num(m, "reproduced")) + ", original " + Number(num(m, "original")) + ")";
    } else if (!note.empty()) {
      out += " (" + note + ")";
    } else if (verdict == "within tolerance") {
      out += " (largest difference " + Number(num(m, "max_abs_diff")) + ")";
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
  if (flags.local) {
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
  cmd->add_option("RUN", flags->run, "The run to run again (one that ran from a queue)")
      ->required();
  cmd->add_option("--queue", flags->queue, "Queue it here (default: the original's queue)");
  cmd->add_option("--name", flags->name, "Name of the new run");
  cmd->add_option("--priority", flags->priority, "Higher starts first (default: the queue's)");
  cmd->add_option("--gpus", flags->gpus, "GPUs it needs (default: as the original)")
      ->check(CLI::Range(0, 64));
}

}  // namespace

void RegisterClone(CLI::App& app, Action* action) {
  auto [cmd, flags] = AddSubcommand<CloneFlags>(
      &app, action, "clone",
      "Queue a past run's task again, with parameters changed: the same code snapshot,\n"
      "environment lock and command, in a new run of the same experiment (tag cairn.clone.of).\n"
      "The command gets the parameters through ${params.NAME}, CAIRN_PARAM_<NAME> and the\n"
      "Python client's cairn.params().\n\n"
      "  cairn clone 0f3c2a... -p lr=0.001 --queue gpu",
      Clone);
  AddCloneOptions(cmd, flags.get());
  cmd->add_option("-p,--param", flags->params, "Parameter key=value to change; repeatable")
      ->allow_extra_args(false);
}

void RegisterReproduce(CLI::App& app, Action* action) {
  auto [cmd, flags] = AddSubcommand<CloneFlags>(
      &app, action, "reproduce",
      "Run a past run again from its record alone (code snapshot, environment lock,\n"
      "parameters, command) and compare the new run with it, metric by metric and step by\n"
      "step: identical (bit for bit), within tolerance, diverged (the first metric and step\n"
      "beyond tolerance) or incomplete. Also lists how the environment, code, datasets and\n"
      "artifacts differ. The verdict goes into the new run (tags cairn.reproduce.of and\n"
      "cairn.reproduce.verdict, artifact cairn/reproduce.json). Exits 0 for identical or\n"
      "within tolerance, 1 otherwise.\n\n"
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
