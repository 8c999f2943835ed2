// `cairn run`: run a command as a tracked run (client/run_wrapper.h does the work).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "capture/run_wrapper.h"
#include "cli/commands.h"
#include "cli/queue_run.h"
#include "client/tracking_client.h"
#include "core/dataset.h"
#include "data/dataset_ops.h"
#include "report/run_report.h"

namespace cairn::cli {
namespace {

struct RunFlags {
  std::string experiment;
  std::string name;
  std::string run_id;
  std::vector<std::string> params;
  std::vector<std::string> tags;
  std::string tracking_uri;
  std::string python;
  int system_metrics_interval = 10;
  int heartbeat_interval = 10;
  // --queue: queue the command as a task instead of running it.
  std::string queue;
  int64_t gpus = 0;
  std::optional<int64_t> priority;
  int64_t max_attempts = 3;
  std::string lock;
  std::vector<std::string> data;  // NAME[@VERSION][:DIR]
};

// Materialises each --data version in its directory (data/NAME by default) and returns the
// inputs that record them; prints what it did on stderr.
Result<std::vector<core::DatasetInput>> FetchRunData(const std::vector<std::string>& refs,
                                                     const std::string& tracking_uri) {
  std::vector<core::DatasetInput> inputs;
  if (refs.empty()) return inputs;
  client::ClientOptions options;
  options.tracking_uri = tracking_uri;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<data::DatasetClient> datasets,
                         data::DatasetClient::Open(options));
  for (const std::string& text : refs) {
    CAIRN_ASSIGN_OR_RETURN(core::DataRef ref, core::ParseDataRef(text, /*allow_dir=*/true));
    const std::string dir = ref.dir.empty() ? "data/" + ref.name : ref.dir;
    Result<data::GetResult> got =
        data::GetVersion(*datasets, ref.name, ref.version, dir, data::GetOptions());
    if (!got.ok()) return got.status().WithContext("--data " + text);
    const core::DataVersion& v = got->version;
    std::fprintf(stderr, "cairn: %s in %s (%lld files, %s; fetched %lld)\n",
                 core::DataRefText(v.name, v.version).c_str(), dir.c_str(),
                 static_cast<long long>(v.files), report::FormatSize(v.bytes).c_str(),
                 static_cast<long long>(got->fetched));
    inputs.push_back(core::DataVersionInput(v, ""));
  }
  return inputs;
}

int RunCommand(const RunFlags& flags, std::vector<std::string> command) {
  if (!flags.queue.empty() && !flags.run_id.empty()) {
    std::fprintf(stderr, "error: --queue makes a new task and its run; it cannot take --run-id\n");
    return 2;
  }
  if (!FollowAgent()) {
    std::fprintf(stderr, "cairn run: the agent that started this is gone\n");
    return 2;
  }
  capture::RunOptions options;
  options.tracking_uri = client::ResolveTrackingUri(flags.tracking_uri);
  options.experiment = flags.experiment;
  options.run_name = flags.name;
  options.run_id = flags.run_id;
  options.command = std::move(command);
  options.system_metrics_interval_seconds = flags.system_metrics_interval;
  options.python = flags.python;
  options.heartbeat_interval_seconds = flags.heartbeat_interval;
  // -p and --tag take key=value.
  auto parse = [](const std::vector<std::string>& items, const char* flag, auto* out) {
    for (const std::string& item : items) {
      auto kv = capture::ParseKeyValue(item, flag);
      if (!kv.ok()) {
        std::fprintf(stderr, "error: %s\n", kv.status().message().c_str());
        return false;
      }
      out->push_back({kv->first, kv->second});
    }
    return true;
  };
  if (!parse(flags.params, "-p", &options.params) || !parse(flags.tags, "--tag", &options.tags)) {
    return 2;
  }
  if (!flags.queue.empty() && !flags.data.empty()) {
    std::fprintf(stderr,
                 "error: --data cannot go with --queue: have the queued command fetch its data "
                 "(cairn data get NAME@VERSION DIR)\n");
    return 2;
  }
  if (!flags.queue.empty()) {
    QueueRunOptions queued;
    queued.tracking_uri = flags.tracking_uri;
    queued.queue = flags.queue;
    queued.experiment = flags.experiment;
    queued.run_name = flags.name;
    queued.params = options.params;
    queued.tags = options.tags;
    queued.command = options.command;
    queued.lock = flags.lock;
    queued.gpus = flags.gpus;
    queued.priority = flags.priority;
    queued.max_attempts = flags.max_attempts;
    return QueueRun(queued);
  }
  Result<std::vector<core::DatasetInput>> inputs = FetchRunData(flags.data, options.tracking_uri);
  if (!inputs.ok()) {
    std::fprintf(stderr, "cairn run: %s\n", inputs.status().message().c_str());
    return 2;
  }
  options.inputs = std::move(inputs).value();
  Result<int> code = capture::RunTracked(options);
  if (!code.ok()) {
    std::fprintf(stderr, "cairn run: %s\n", code.status().message().c_str());
    // 127 as a shell reports a command it cannot find; 2 for everything else before it ran.
    return code.status().code() == StatusCode::kNotFound ? 127 : 2;
  }
  return *code;
}

}  // namespace

bool FollowAgent() {
  const char* variable = std::getenv("CAIRN_AGENT_PID");
  if (variable == nullptr || *variable == '\0') return true;
  const std::string agent = variable;
  unsetenv("CAIRN_AGENT_PID");  // the command's own `cairn run`, if any, is not the agent's
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The agent may have died before the line above.
  return std::to_string(getppid()) == agent;
}

void RegisterRun(CLI::App& app, Action* action, std::vector<std::string> after_dashes) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run COMMAND as a tracked run: records its parameters, command line, working directory\n"
      "and console, and ends the run FINISHED (exit 0), FAILED (other exit codes) or KILLED\n"
      "(a signal). The command sees MLFLOW_TRACKING_URI, MLFLOW_RUN_ID, MLFLOW_EXPERIMENT_ID,\n"
      "CAIRN_TRACKING_URI and CAIRN_RUN_ID, so MLflow and cairn clients inside log into the\n"
      "same run. Ctrl-C and SIGTERM are passed to the command. cairn exits with the command's\n"
      "exit code (128 + N when signal N ended it).\n\n"
      "  cairn run --experiment mnist -p lr=0.01 -- python train.py --epochs 3");
  cmd->add_option("--experiment,-e", flags->experiment,
                  "Experiment name, created if missing (default $MLFLOW_EXPERIMENT_NAME, else "
                  "Default)");
  cmd->add_option("--name,-n", flags->name, "Run name (default: a generated one)");
  cmd->add_option("--run-id", flags->run_id,
                  "Record into this existing run (32 hex digits), e.g. a queued task's "
                  "scheduled run, instead of a new one; it keeps its experiment and name")
      ->check([](const std::string& id) {
        const bool hex =
            id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
        return hex ? std::string() : std::string("a run id is 32 lowercase hex digits");
      });
  cmd->add_option("-p,--param", flags->params, "Parameter key=value; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--tag", flags->tags, "Tag key=value; repeatable")->allow_extra_args(false);
  cmd->add_option("--data", flags->data,
                  "NAME[@VERSION][:DIR]: put that version of a dataset (the latest without "
                  "@VERSION) in DIR (default data/NAME) before the command starts, and record "
                  "the exact version as the run's input; repeatable")
      ->allow_extra_args(false);
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->add_option("--python", flags->python,
                  "Python interpreter whose installed packages are recorded (default: the "
                  "command when it is one, else python3 on PATH)");
  cmd->add_option("--system-metrics-interval", flags->system_metrics_interval,
                  "Seconds between samples of CPU, memory and GPU use (metrics system/...); "
                  "0 turns them off")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400));
  cmd->add_option("--heartbeat-interval", flags->heartbeat_interval,
                  "Seconds between heartbeats; the server fails a run whose heartbeats stop for "
                  "its --run-heartbeat-timeout (120 s by default), so keep this well below it")
      ->capture_default_str()
      ->check(CLI::Range(1, 60));
  cmd->add_option("--queue", flags->queue,
                  "Queue the command as a task in this queue instead of running it: the code "
                  "snapshot (the working tree with uncommitted and untracked files) and the "
                  "project's pylock.toml go with it, and an agent runs it (docs/agents.md)");
  cmd->add_option("--gpus", flags->gpus, "With --queue: GPUs the task needs")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--priority", flags->priority,
                  "With --queue: higher starts first (default: the queue's)");
  cmd->add_option("--max-attempts", flags->max_attempts,
                  "With --queue: attempts before the task fails, when agents are lost")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_option("--lock", flags->lock,
                  "With --queue: the environment lock to run with (default: the project's "
                  "pylock.toml, when it has one)");
  // The command starts at the first argument that is not an option of `run`, or after "--"
  // (which Main splits off before parsing, so that no option parsing touches the command).
  cmd->prefix_command();
  cmd->allow_extras();
  cmd->callback([flags, action, cmd, after_dashes] {
    std::vector<std::string> command = cmd->remaining();
    if (!command.empty()) {
      // `cairn run python train.py -- --lr 3`: the "--" belongs to the command.
      if (!after_dashes.empty()) command.push_back("--");
    }
    command.insert(command.end(), after_dashes.begin(), after_dashes.end());
    *action = [flags, command] {
      if (command.empty()) {
        std::fprintf(stderr, "error: no command given; usage: cairn run [OPTIONS] -- COMMAND\n");
        return 2;
      }
      return RunCommand(*flags, command);
    };
  });
}

}  // namespace cairn::cli
