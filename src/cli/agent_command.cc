// `cairn agent --queue NAME ...`: takes queued tasks that fit this machine and runs each as
// `cairn run --run-id` in the run the queue made for its attempt; `cairn agent ls` lists the
// agents a server knows. See docs/agents.md.
//
// One loop, woken every poll interval: it reaps tasks that ended (and finishes them with how
// they ended), renews the leases of the running ones a third of the way through, stops a task
// whose cancel was asked for or whose lease was lost, and leases new work while slots and GPUs
// are free. A task's command runs in a work directory of its own, in its own process group,
// with CUDA_VISIBLE_DEVICES set to the GPUs it was given and its parameters as
// CAIRN_PARAM_<NAME> and through ${params.NAME} in its arguments.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "cli/commands.h"
#include "client/task_client.h"
#include "env/host_facts.h"
#include "report/run_report.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/process.h"

namespace cairn::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct AgentFlags {
  std::string tracking_uri;
  std::vector<std::string> queues;
  std::string id;
  std::string gpus;  // "0,1"; empty: the GPUs this host has
  int64_t slots = 1;
  std::string workdir;
  bool keep_workdir = false;
  int64_t lease_seconds = 60;
  int64_t poll_ms = 200;
  std::string host_facts;  // a JSON file standing in for this host's facts
  int64_t max_tasks = 0;   // 0: no limit
};

std::atomic<bool> g_stop{false};
void OnStop(int) { g_stop = true; }

// A task's attempt in progress on this agent.
struct Running {
  core::Task task;
  Process child;
  std::string workdir;
  int64_t next_renew = 0;
  bool stopping = false;  // asked to stop (cancel or a lost lease); finished as cancelled
  bool lost = false;      // the lease is no longer ours: nothing to report when it ends
  int64_t kill_at = 0;    // SIGKILL after SIGTERM was not enough
};

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

// ${params.NAME} replaced by the parameter's value.
std::string Substitute(std::string text, const std::map<std::string, std::string>& params) {
  for (const auto& [name, value] : params) {
    const std::string ref = "${params." + name + "}";
    for (size_t at = text.find(ref); at != std::string::npos;
         at = text.find(ref, at + value.size())) {
      text.replace(at, ref.size(), value);
    }
  }
  return text;
}

// The command of a task's spec ({"command": [...], "params": {...}}).
Result<std::pair<std::vector<std::string>, std::map<std::string, std::string>>> ReadSpec(
    const std::string& spec) {
  json j = json::parse(spec, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("the task's spec is not a JSON object");
  std::map<std::string, std::string> params;
  if (auto p = j.find("params"); p != j.end() && p->is_object()) {
    for (auto it = p->begin(); it != p->end(); ++it) {
      params[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    }
  }
  std::vector<std::string> command;
  if (auto c = j.find("command"); c != j.end() && c->is_array()) {
    for (const json& arg : *c) {
      if (!arg.is_string()) return InvalidArgument("the task's command holds a non-string");
      command.push_back(Substitute(arg.get<std::string>(), params));
    }
  }
  if (command.empty()) return InvalidArgument("the task's spec names no command");
  return std::make_pair(command, params);
}

std::string ParamVariable(const std::string& name) {
  std::string out = "CAIRN_PARAM_";
  for (char c : name)
    out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? std::toupper(c) : '_');
  return out;
}

class Agent {
 public:
  Agent(const AgentFlags& flags, std::unique_ptr<client::TrackingClient> client)
      : flags_(flags), client_(std::move(client)) {}

  int Run() {
    if (!Init()) return 2;
    std::printf("agent %s taking tasks from %s (%lld slot(s), GPUs %s) at %s\n", id_.c_str(),
                Join(flags_.queues).c_str(), static_cast<long long>(flags_.slots),
                gpus_.empty() ? "none" : Join(gpus_).c_str(), client_->tracking_uri().c_str());
    std::fflush(stdout);
    int64_t started = 0;
    while (true) {
      Reap();
      Renew();
      const bool more = flags_.max_tasks == 0 || started < flags_.max_tasks;
      bool leased = false;
      if (!g_stop && more && static_cast<int64_t>(running_.size()) < flags_.slots) {
        leased = LeaseOne();
        if (leased) ++started;
      }
      if (running_.empty() && (g_stop || !more)) break;
      if (!leased) std::this_thread::sleep_for(std::chrono::milliseconds(flags_.poll_ms));
    }
    return 0;
  }

 private:
  bool Init() {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    id_ = flags_.id.empty() ? std::string(host) : flags_.id;
    env::HostFacts facts;
    if (!flags_.host_facts.empty()) {
      Result<std::string> text = ReadFile(flags_.host_facts);
      Result<env::HostFacts> parsed =
          text.ok() ? env::ParseHostFactsJson(*text) : Result<env::HostFacts>(text.status());
      if (!parsed.ok()) {
        PrintError(parsed.status().WithContext("reading " + flags_.host_facts));
        return false;
      }
      facts = *parsed;
    } else {
      facts = env::CollectHostFacts(*env::RealHostProbe());
    }
    host_json_ = env::HostFactsJson(facts);
    if (!flags_.gpus.empty()) {
      gpus_ = Split(flags_.gpus);
    } else {
      for (const env::GpuInfo& g : facts.gpus) gpus_.push_back(std::to_string(g.index));
    }
    workdir_ =
        flags_.workdir.empty()
            ? (fs::temp_directory_path() / ("cairn-agent-" + std::to_string(getuid()))).string()
            : flags_.workdir;
    if (Status s = MakeDirs(workdir_); !s.ok()) {
      PrintError(s);
      return false;
    }
    core::Agent me;
    me.id = id_;
    me.name = host;
    me.queues = flags_.queues;
    me.gpus = gpus_;
    me.slots = flags_.slots;
    me.host = host_json_;
    if (Status s = client::RegisterAgent(*client_, me); !s.ok()) {
      PrintError(s.WithContext("registering the agent"));
      return false;
    }
    return true;
  }

  bool LeaseOne() {
    std::set<std::string> busy;
    for (const Running& r : running_) {
      for (const std::string& g : Split(r.task.gpus)) busy.insert(g);
    }
    client::LeaseAsk ask;
    ask.agent = id_;
    ask.queues = flags_.queues;
    for (const std::string& g : gpus_) {
      if (busy.count(g) == 0) ask.free_gpus.push_back(g);
    }
    ask.host = host_json_;
    ask.lease_ms = flags_.lease_seconds * 1000;
    Result<std::optional<core::Task>> leased = client::LeaseTask(*client_, ask);
    if (!leased.ok()) {
      Warn("asking for work failed: " + leased.status().message());
      return false;
    }
    if (!leased->has_value()) return false;
    Start(**leased);
    return true;
  }

  void Start(const core::Task& task) {
    const int64_t now = SystemClock()->NowMillis();
    auto spec = ReadSpec(task.spec);
    if (!spec.ok()) {
      Finish(task, core::TaskState::kFailed, spec.status().message());
      return;
    }
    const std::string dir =
        (fs::path(workdir_) / (task.id + "-" + std::to_string(task.attempt))).string();
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (Status s = MakeDirs(dir); !s.ok()) {
      Finish(task, core::TaskState::kFailed, s.message());
      return;
    }
    SpawnOptions spawn;
    spawn.argv = {
        SelfExe(), "run", "--run-id", task.run_id, "--tracking-uri", client_->tracking_uri(), "--"};
    spawn.argv.insert(spawn.argv.end(), spec->first.begin(), spec->first.end());
    spawn.cwd = dir;
    spawn.output_path = dir + ".log";
    spawn.env.push_back({"CUDA_VISIBLE_DEVICES", task.gpus});
    spawn.env.push_back({"CAIRN_TASK_ID", task.id});
    spawn.env.push_back({"CAIRN_AGENT_PID", std::to_string(getpid())});
    for (const auto& [name, value] : spec->second)
      spawn.env.push_back({ParamVariable(name), value});
    Result<Process> child = Process::Spawn(spawn);
    if (!child.ok()) {
      Finish(task, core::TaskState::kFailed, "cannot start: " + child.status().message());
      return;
    }
    Say("started " + task.id.substr(0, 8) + " (run " + task.run_id.substr(0, 8) + ", attempt " +
        std::to_string(task.attempt) + (task.gpus.empty() ? "" : ", GPUs " + task.gpus) + ")");
    running_.push_back(Running{task, std::move(*child), dir, now + flags_.lease_seconds * 1000 / 3,
                               false, false, 0});
  }

  void Reap() {
    for (auto it = running_.begin(); it != running_.end();) {
      Result<std::optional<ExitStatus>> ended = it->child.TryWait();
      if (ended.ok() && !ended->has_value()) {
        ++it;
        continue;
      }
      const ExitStatus exit = ended.ok() ? **ended : ExitStatus{false, 1, 0};
      if (!it->lost) {
        if (it->stopping) {
          Finish(it->task, core::TaskState::kCancelled, it->task.reason);
        } else if (!exit.signaled && exit.code == 0) {
          Finish(it->task, core::TaskState::kDone, "exit code 0");
        } else {
          Finish(it->task, core::TaskState::kFailed,
                 exit.signaled ? "killed by signal " + std::to_string(exit.signal)
                               : "exit code " + std::to_string(exit.code));
        }
      }
      if (!flags_.keep_workdir) {
        std::error_code ec;
        fs::remove_all(it->workdir, ec);
      }
      it = running_.erase(it);
    }
  }

  void Renew() {
    const int64_t now = SystemClock()->NowMillis();
    for (Running& r : running_) {
      if (r.stopping && r.kill_at > 0 && now >= r.kill_at) {
        r.child.SignalGroup(SIGKILL);
        r.kill_at = 0;
      }
      if (g_stop && !r.stopping) Stop(r, "the agent was stopped", now);
      if (r.lost || now < r.next_renew) continue;
      r.next_renew = now + flags_.lease_seconds * 1000 / 3;
      Result<core::Task> renewed =
          client::RenewLease(*client_, r.task, id_, flags_.lease_seconds * 1000);
      if (!renewed.ok()) {
        if (renewed.status().code() == StatusCode::kFailedPrecondition ||
            renewed.status().code() == StatusCode::kInvalidArgument) {
          r.lost = true;
          Stop(r, "its lease was lost", now);
        } else {
          Warn("renewing the lease of " + r.task.id.substr(0, 8) +
               " failed: " + renewed.status().message());
        }
        continue;
      }
      if (renewed->cancel_requested && !r.stopping) Stop(r, renewed->reason, now);
    }
  }

  void Stop(Running& r, const std::string& reason, int64_t now) {
    r.stopping = true;
    r.task.reason = reason.empty() ? "cancelled" : reason;
    r.kill_at = now + 10'000;
    r.child.SignalGroup(SIGTERM);
    Say("stopping " + r.task.id.substr(0, 8) + ": " + r.task.reason);
  }

  void Finish(const core::Task& task, core::TaskState state, const std::string& reason) {
    Result<core::Task> done = client::FinishTask(*client_, task, id_, state, reason);
    if (!done.ok()) {
      Warn("reporting the end of " + task.id.substr(0, 8) + " failed: " + done.status().message());
      return;
    }
    Say(std::string(core::TaskStateName(state)) + " " + task.id.substr(0, 8) + " (" + reason + ")");
  }

  static std::string SelfExe() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("cairn") : self.string();
  }

  void Say(const std::string& text) {
    std::printf("%s %s\n", report::FormatFullTime(SystemClock()->NowMillis()).c_str(),
                text.c_str());
    std::fflush(stdout);
  }
  void Warn(const std::string& text) {
    std::fprintf(stderr, "cairn agent: warning: %s\n", text.c_str());
  }

  const AgentFlags& flags_;
  std::unique_ptr<client::TrackingClient> client_;
  std::string id_;
  std::string host_json_;
  std::vector<std::string> gpus_;
  std::string workdir_;
  std::vector<Running> running_;
};

int RunAgent(const AgentFlags& flags) {
  if (flags.queues.empty()) {
    PrintError(InvalidArgument("say which queues to take tasks from: --queue NAME"));
    return 2;
  }
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  Agent agent(flags, std::move(client));
  return agent.Run();
}

int ListAgents(const AgentFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  auto agents = client::ListAgents(*client);
  if (!agents.ok()) {
    PrintError(agents.status());
    return 1;
  }
  auto tasks =
      client::ListTasks(*client, {.queue = "", .states = {"running"}, .max_results = 10000});
  const int64_t now = SystemClock()->NowMillis();
  report::Table table;
  table.columns = {{"AGENT"},
                   {"QUEUES"},
                   {"GPUS", false, false},
                   {"SLOTS", true, false},
                   {"RUNNING", true, false},
                   {"LAST SEEN", false, false},
                   {"HOST"}};
  for (const core::Agent& a : *agents) {
    int64_t running = 0;
    if (tasks.ok()) {
      for (const core::Task& t : *tasks) running += t.agent == a.id ? 1 : 0;
    }
    std::string host = "-";
    if (Result<env::HostFacts> f = env::ParseHostFactsJson(a.host.empty() ? "{}" : a.host);
        f.ok()) {
      host = env::GpuSummary(*f);
      if (host.empty()) host = f->distribution.empty() ? "-" : f->distribution;
    }
    std::string gpus;
    for (const std::string& g : a.gpus) gpus += (gpus.empty() ? "" : ",") + g;
    table.rows.push_back({a.id, Join(a.queues), gpus.empty() ? "-" : gpus, std::to_string(a.slots),
                          std::to_string(running),
                          report::FormatDuration(now - a.heartbeat_time) + " ago", host});
  }
  PrintText(table.rows.empty() ? "no agents\n"
                               : report::RenderTable(table, report::DetectOutputStyle()));
  return 0;
}

}  // namespace

void RegisterAgent(CLI::App& app, Action* action) {
  auto flags = std::make_shared<AgentFlags>();
  CLI::App* cmd = app.add_subcommand(
      "agent",
      "Run queued tasks on this machine: take tasks from the queues that fit its free GPUs and\n"
      "its host (the CUDA, driver and compute capability their environments need), run each\n"
      "as `cairn run --run-id` in the run the queue made for it, renew its lease while it\n"
      "runs, stop it when it is cancelled, and report how it ended. Authenticate as a service\n"
      "account (a token in CAIRN_TOKEN). Ctrl-C stops the tasks and the agent;\n"
      "their leases run out and the tasks are queued again.\n\n"
      "  cairn agent --queue gpu --gpus 0,1 --slots 2\n"
      "  cairn agent ls");
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->add_option("--queue", flags->queues, "A queue to take tasks from; repeatable");
  cmd->add_option("--id", flags->id, "The agent's id (default: the host name)");
  cmd->add_option("--gpus", flags->gpus,
                  "The GPUs it hands out, e.g. 0,1 (default: every GPU nvidia-smi lists)");
  cmd->add_option("--slots", flags->slots, "Tasks it runs at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--workdir", flags->workdir,
                  "Where task work directories go (default: cairn-agent-UID in the temporary "
                  "directory)");
  cmd->add_flag("--keep-workdir", flags->keep_workdir, "Keep each task's work directory");
  cmd->add_option("--lease-seconds", flags->lease_seconds,
                  "How long a lease holds without renewal; a task of an agent silent this long "
                  "is queued again")
      ->capture_default_str()
      ->check(CLI::Range(2, 3600));
  cmd->add_option("--poll-ms", flags->poll_ms, "How often to ask for work while idle")
      ->capture_default_str()
      ->check(CLI::Range(10, 60000));
  cmd->add_option("--host-facts", flags->host_facts,
                  "A host facts JSON file (as a run's cairn/host.json) to offer instead of this "
                  "host's own");
  cmd->add_option("--max-tasks", flags->max_tasks,
                  "Stop after starting this many tasks and seeing them end (default: run until "
                  "stopped)");
  cmd->callback([flags, action, cmd] {
    if (cmd->got_subcommand("ls")) return;
    *action = [flags] { return RunAgent(*flags); };
  });
  CLI::App* ls = cmd->add_subcommand("ls", "List the agents the server knows, with what they run");
  ls->fallthrough();
  ls->callback([flags, action] { *action = [flags] { return ListAgents(*flags); }; });
}

}  // namespace cairn::cli
