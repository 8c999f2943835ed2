// `cairn agent --queue NAME ...`: takes queued tasks that fit this machine and runs each as
// `cairn run --run-id` in the run the queue made for its attempt; `cairn agent ls` lists the
// agents a server knows. See docs/agents.md.
//
// One loop, woken every poll interval: it reaps tasks that ended (and finishes them with how
// they ended), renews the leases of the running ones a third of the way through, stops a task
// whose cancel was asked for or whose lease was lost, and leases new work while slots and GPUs
// are free. A task's command runs in a work directory of its own, in its own process group,
// with CUDA_VISIBLE_DEVICES set to the GPUs it was given and its parameters as
// CAIRN_PARAM_<NAME> and through ${params.NAME} in its arguments. With `--executor slurm`,
// each task is a batch job instead (the pipeline's Slurm executor) that runs `cairn agent
// exec-task` on the node Slurm chose; the agent follows the job and keeps its lease.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "capture/run_wrapper.h"
#include "cli/code_snapshot.h"
#include "cli/commands.h"
#include "client/task_client.h"
#include "core/task_spec.h"
#include "env/env_store.h"
#include "env/host_facts.h"
#include "env/install/venv_layout.h"
#include "pipeline/executor.h"
#include "pipeline/slurm_executor.h"
#include "report/run_report.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/process.h"
#include "util/strings.h"

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
  std::string executor = "local";        // or "slurm"
  std::vector<std::string> sbatch_args;  // --sbatch-arg, with the slurm executor
};

constexpr int64_t kIdleWaitMs = 2000;
constexpr int64_t kSlurmBackOffMs = 30'000;

std::atomic<bool> g_stop{false};
void OnStop(int) { g_stop = true; }

// A byte is written here whenever a child ends (SIGCHLD), so that the loop wakes at once to
// reap it and take the next task, rather than at its next poll.
int g_child_pipe[2] = {-1, -1};
void OnChild(int) {
  const int saved = errno;
  if (g_child_pipe[1] >= 0) (void)!::write(g_child_pipe[1], "c", 1);
  errno = saved;
}

// Sleeps up to `ms`, less when a child ends meanwhile.
void WaitForChild(int64_t ms) {
  if (g_child_pipe[0] < 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return;
  }
  struct pollfd p = {g_child_pipe[0], POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(ms)) > 0) {
    char drain[64];
    while (::read(g_child_pipe[0], drain, sizeof(drain)) > 0) {
    }
  }
}

// A task's attempt in progress on this agent: a forked process, or a Slurm job.
struct Running {
  core::Task task;
  std::optional<Process> child;  // run here
  std::optional<size_t> job;     // or a Slurm job: the executor's step number
  std::string workdir;
  int64_t next_renew = 0;
  bool stopping = false;  // asked to stop (cancel or a lost lease); finished as cancelled
  bool lost = false;      // the lease is no longer ours: nothing to report when it ends
  int64_t kill_at = 0;    // SIGKILL after SIGTERM was not enough
};

struct ExecFlags {
  std::string tracking_uri;
  std::string run_id;
  std::string spec;       // the spec file (`cairn agent exec-task --spec`)
  std::string spec_text;  // or the spec itself (an agent's forked copy has it already)
};

// Inside the task's work directory (the current one): writes the task's code snapshot here,
// builds its environment from the lock (or finds it built in the environment store), and
// becomes `cairn run --run-id` of the command. A failure before the command starts is written
// to <work directory>.failure, which the agent reports as the attempt's end.
int ExecTask(const ExecFlags& flags) {
  std::error_code ec;
  const std::string dir = fs::current_path(ec).string();
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "cairn agent: the task cannot start: %s\n", why.c_str());
    (void)WriteFileAtomic(dir + ".failure", "cannot start: " + why);
    return 3;
  };
  if (!FollowAgent()) return fail("the agent that started it is gone");
  Result<std::string> text = flags.spec_text.empty() ? ReadFile(flags.spec)
                                                     : Result<std::string>(flags.spec_text);
  if (!text.ok()) return fail(text.status().message());
  Result<core::TaskSpec> spec = core::ParseTaskSpec(*text);
  if (!spec.ok()) return fail(spec.status().message());
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return fail("cannot reach " + flags.tracking_uri);

  capture::RunOptions run;
  run.tracking_uri = client->tracking_uri();
  run.run_id = flags.run_id;
  // The artifact URI of the run holding the code or the lock (usually the same run).
  std::map<std::string, std::string> uris;
  auto uri_of = [&](const std::string& run_id) -> Result<std::string> {
    if (auto it = uris.find(run_id); it != uris.end()) return it->second;
    CAIRN_ASSIGN_OR_RETURN(core::Run holder, client->GetRun(run_id));
    return uris[run_id] = holder.info.artifact_uri;
  };
  const core::TaskCode& code = spec->code;
  if (!code.snapshot.empty()) {
    Result<std::string> holder = uri_of(code.run_id);
    if (!holder.ok()) return fail("reading the run holding the code: " + holder.status().message());
    Result<int64_t> files = MaterialiseCodeSnapshot(*client, *holder, code.snapshot, dir);
    if (!files.ok()) return fail("writing the code snapshot: " + files.status().message());
    std::fprintf(stderr, "cairn agent: code snapshot %s: %lld files\n",
                 code.snapshot.substr(0, 12).c_str(), static_cast<long long>(*files));
    if (!code.cwd.empty()) {
      const fs::path cwd = fs::path(code.cwd).lexically_normal();
      if (cwd.is_absolute() || cwd.string().starts_with("..") || ::chdir(cwd.c_str()) != 0) {
        return fail("the snapshot has no directory " + code.cwd);
      }
    }
    run.tags.push_back({"cairn.code.snapshot", code.snapshot});
    if (!code.commit.empty()) run.tags.push_back({"mlflow.source.git.commit", code.commit});
    if (!code.branch.empty()) run.tags.push_back({"mlflow.source.git.branch", code.branch});
    if (!code.remote_url.empty()) {
      run.tags.push_back({"mlflow.source.git.repoURL", code.remote_url});
    }
  }
  if (!spec->environment.run_id.empty()) {
    Result<std::string> holder = uri_of(spec->environment.run_id);
    Result<std::string> lock =
        holder.ok() ? client->DownloadArtifact(*holder, std::string(core::kTaskLockArtifact))
                    : Result<std::string>(holder.status());
    if (!lock.ok()) return fail("reading the environment lock: " + lock.status().message());
    if (env::LockHash(*lock) != spec->environment.lock_hash) {
      return fail("the environment lock is not the one the task was queued with");
    }
    const std::string lock_path = dir + ".pylock.toml";
    if (Status s = WriteFileAtomic(lock_path, *lock); !s.ok()) return fail(s.message());
    env::BuildOptions options;
    options.progress = [last = std::string()](const std::string& line) mutable {
      if (line.substr(0, 8) == last.substr(0, 8)) return;  // one line per stage
      last = line;
      std::fprintf(stderr, "cairn agent: %s\n", line.c_str());
    };
    env::EnvStore store(env::EnvStore::DefaultRoot());
    Result<env::BuiltEnvironment> built = store.Build(lock_path, options);
    if (!built.ok()) return fail("building the environment: " + built.status().message());
    std::fprintf(stderr, "cairn agent: environment %s %s\n", built->id.c_str(),
                 built->already_built ? "was built already" : "built");
    run.tags.push_back({"cairn.env.lock", spec->environment.lock_hash});
    run.tags.push_back({"cairn.env.id", built->id});
    for (const auto& [name, value] : env::ActivationVariables(built->path)) {
      setenv(name.c_str(), value.c_str(), 1);
    }
    run.python = built->path + "/bin/python";
  }
  for (const auto& [name, value] : spec->params) run.params.push_back({name, value});
  run.command = core::SubstituteParams(spec->command, spec->params);
  // The rest is `cairn run --run-id`, in this process.
  Result<int> code_of_command = capture::RunTracked(run);
  if (!code_of_command.ok()) {
    std::fprintf(stderr, "cairn run: %s\n", code_of_command.status().message().c_str());
    return code_of_command.status().code() == StatusCode::kNotFound ? 127 : 2;
  }
  return *code_of_command;
}

class Agent {
 public:
  Agent(const AgentFlags& flags, std::unique_ptr<client::TrackingClient> client)
      : flags_(flags), client_(std::move(client)) {}

  int Run() {
    if (!Init()) return 2;
    std::printf("agent %s taking tasks from %s (%lld slot(s), GPUs %s%s) at %s\n", id_.c_str(),
                Join(flags_.queues, ",").c_str(), static_cast<long long>(flags_.slots),
                gpus_.empty() ? "none" : Join(gpus_, ",").c_str(), slurm_ ? ", as Slurm jobs" : "",
                client_->tracking_uri().c_str());
    std::fflush(stdout);
    int64_t started = 0;
    while (true) {
      Reap();
      Renew();
      const bool more = flags_.max_tasks == 0 || started < flags_.max_tasks;
      Asked asked = Asked::kNothing;
      if (!g_stop && more && static_cast<int64_t>(running_.size()) < flags_.slots) {
        asked = LeaseOne();
        if (asked == Asked::kLeased) ++started;
      }
      if (running_.empty() && (g_stop || !more)) break;
      // An idle agent waited on the server already; one with tasks running polls, so that it
      // reaps and renews them on time.
      if (asked == Asked::kFailed || asked == Asked::kPaused ||
          (asked != Asked::kLeased && !running_.empty())) {
        WaitForChild(flags_.poll_ms);
      }
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
      gpus_ = SplitNonEmpty(flags_.gpus, ',');
    } else if (flags_.executor != "slurm") {  // this host's GPUs are not the cluster's
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
    if (flags_.executor == "slurm" && !StartSlurm()) return false;
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

  // Cancels the jobs an earlier agent of this id left (killed, its tasks queued again since),
  // and makes the executor that submits tasks as jobs named cairn-agent-<id>-<task>.
  bool StartSlurm() {
    std::error_code ec;
    self_ = fs::read_symlink("/proc/self/exe", ec).string();
    if (ec) {
      PrintError(Internal("cannot find this program's path: " + ec.message()));
      return false;
    }
    pipeline::SlurmOptions options;
    options.sbatch_args = flags_.sbatch_args;
    options.job_name_prefix = "cairn-agent-" + id_ + "-";
    // A slow controller must not hold the loop past the time leases are renewed in.
    slurm_timeout_ = std::chrono::milliseconds(
        std::clamp<int64_t>(flags_.lease_seconds * 1000 / 4, 1000, 60'000));
    // Only names of this agent's shape, <task id's first 8>-<attempt>: agent "gpu" must not
    // take agent "gpu-1"'s jobs for its own.
    auto task_and_attempt = [](std::string_view rest) {
      const size_t dash = rest.find('-');
      return dash == 8 && rest.size() > 9 &&
             std::all_of(rest.begin() + 9, rest.end(), [](char c) { return IsAsciiDigit(c); });
    };
    Result<int> left = pipeline::CancelSlurmJobsNamed(
        *pipeline::RealSlurmCommands(slurm_timeout_), options.job_name_prefix, task_and_attempt);
    if (!left.ok()) {
      PrintError(left.status().WithContext("asking Slurm for the jobs of an earlier agent " + id_));
      return false;
    }
    if (*left > 0) {
      Say("cancelled " + std::to_string(*left) + " Slurm job(s) an earlier agent " + id_ + " left");
    }
    slurm_options_ = options;
    slurm_ = pipeline::NewSlurmExecutor(pipeline::RealSlurmCommands(slurm_timeout_), options);
    return true;
  }

  // kPaused: no work is taken for now (after sbatch failed to run).
  enum class Asked { kNothing, kLeased, kFailed, kPaused };

  Asked LeaseOne() {
    if (SystemClock()->NowMillis() < pause_leasing_until_) return Asked::kPaused;
    std::set<std::string> busy;
    for (const Running& r : running_) {
      for (const std::string& g : SplitNonEmpty(r.task.gpus, ',')) busy.insert(g);
    }
    client::LeaseAsk ask;
    ask.agent = id_;
    ask.queues = flags_.queues;
    for (const std::string& g : gpus_) {
      if (busy.count(g) == 0) ask.free_gpus.push_back(g);
    }
    ask.host = host_json_;
    ask.lease_ms = flags_.lease_seconds * 1000;
    // Idle, it waits on the server, which answers as soon as a task that fits is queued; not
    // long, so that Ctrl-C is seen soon.
    if (running_.empty()) ask.wait_ms = kIdleWaitMs;
    Result<std::optional<core::Task>> leased = client::LeaseTask(*client_, ask);
    if (!leased.ok()) {
      Warn("asking for work failed: " + leased.status().message());
      return Asked::kFailed;
    }
    if (!leased->has_value()) return Asked::kNothing;
    Start(**leased);
    return Asked::kLeased;
  }

  // Starts the task in its work directory (ExecTask): its code written out, its environment
  // built, its command run as `cairn run --run-id` does.
  void Start(const core::Task& task) {
    const int64_t now = SystemClock()->NowMillis();
    Result<core::TaskSpec> spec = core::ParseTaskSpec(task.spec);
    if (!spec.ok()) {
      Finish(task, core::TaskState::kFailed, spec.status().message());
      return;
    }
    const std::string dir =
        (fs::path(workdir_) / (task.id + "-" + std::to_string(task.attempt))).string();
    RemoveTaskFiles(dir);
    Status ready = MakeDirs(dir);
    if (!ready.ok()) {
      Finish(task, core::TaskState::kFailed, ready.message());
      return;
    }
    if (slurm_) {
      SubmitJob(task, dir, now);
      return;
    }
    SpawnOptions spawn;
    spawn.cwd = dir;
    spawn.output_path = dir + ".log";
    spawn.env.push_back({"CUDA_VISIBLE_DEVICES", task.gpus});
    spawn.env.push_back({"CAIRN_TASK_ID", task.id});
    spawn.env.push_back({"CAIRN_AGENT_PID", std::to_string(getpid())});
    // A copy of this process runs `cairn agent exec-task` (this process has one thread, and
    // the copy makes its own connection), sparing the program's loading for every task.
    ExecFlags exec;
    exec.tracking_uri = client_->tracking_uri();
    exec.run_id = task.run_id;
    exec.spec_text = task.spec;
    Result<Process> child = Process::Fork(spawn, [&exec] { return ExecTask(exec); });
    if (!child.ok()) {
      Finish(task, core::TaskState::kFailed, "cannot start: " + child.status().message());
      return;
    }
    SayStarted(task, "");
    running_.push_back(Running{task, std::move(*child), std::nullopt, dir,
                               now + flags_.lease_seconds * 1000 / 3, false, false, 0});
  }

  // Submits the task as a batch job that runs `cairn agent exec-task` in its work directory
  // (which the nodes must share with this machine), with the resources it needs; Slurm sets
  // CUDA_VISIBLE_DEVICES for the GPUs it grants. The job's output is <work directory>.log.
  void SubmitJob(const core::Task& task, const std::string& dir, int64_t now) {
    const std::string spec_path = dir + ".spec.json";
    if (Status s = WriteFileAtomic(spec_path, task.spec, Sync::kNoSync); !s.ok()) {
      Finish(task, core::TaskState::kFailed, "cannot start: " + s.message());
      return;
    }
    pipeline::StepJob job;
    job.step = next_job_++;
    job.attempt = static_cast<int>(task.attempt);
    job.id = task.id.substr(0, 8) + "-" + std::to_string(task.attempt);
    job.command = ShellQuote(self_) + " agent exec-task --run-id " + task.run_id + " --spec " +
                  ShellQuote(spec_path) + " --tracking-uri " + ShellQuote(client_->tracking_uri());
    job.cwd = dir;
    job.env["CAIRN_TASK_ID"] = task.id;
    job.log_path = dir + ".log";
    job.resources.cpus = task.needs.cpus;
    job.resources.memory_mib = task.needs.memory_mib;
    job.resources.gpus = static_cast<int>(task.needs.gpus);
    job.cpus = task.needs.cpus;
    if (Status s = slurm_->Start(job); !s.ok()) {
      RemoveTaskFiles(dir);
      if (s.code() == StatusCode::kFailedPrecondition) {  // sbatch refused this job
        Finish(task, core::TaskState::kFailed, "cannot start: " + s.message());
        return;
      }
      // sbatch could not be run, or did not answer (it may have queued the job all the same):
      // nothing is the task's fault. Its job is cancelled by name, its lease left to run out so
      // that the server queues it again, and no work is taken for a while.
      (void)pipeline::RealSlurmCommands(slurm_timeout_)
          ->Run({"scancel", "--name=" + slurm_options_.job_name_prefix + job.id});
      pause_leasing_until_ = now + kSlurmBackOffMs;
      Warn("sbatch failed for " + task.id.substr(0, 8) + " (" + s.message() +
           "); the task goes back to its queue when its lease runs out, and no work is taken "
           "for " + std::to_string(kSlurmBackOffMs / 1000) + " s");
      return;
    }
    SayStarted(task, ", as a Slurm job");
    running_.push_back(Running{task, std::nullopt, job.step, dir,
                               now + flags_.lease_seconds * 1000 / 3, false, false, 0});
  }

  void SayStarted(const core::Task& task, const std::string& how) {
    Say("started " + task.id.substr(0, 8) + " (run " + task.run_id.substr(0, 8) + ", attempt " +
        std::to_string(task.attempt) + (task.gpus.empty() ? "" : ", GPUs " + task.gpus) + how +
        ")");
  }

  // How a task's process or job ended; nullopt while it runs.
  std::optional<std::pair<ExitStatus, std::string>> Ended(Running& r) {
    if (r.job.has_value()) {
      auto it = jobs_ended_.find(*r.job);
      if (it == jobs_ended_.end()) return std::nullopt;
      const pipeline::JobResult job = it->second;
      jobs_ended_.erase(it);
      ExitStatus exit{job.signaled, job.exit_code, job.signaled ? job.exit_code - 128 : 0};
      return std::make_pair(exit, job.error);
    }
    Result<std::optional<ExitStatus>> ended = r.child->TryWait();
    if (ended.ok() && !ended->has_value()) return std::nullopt;
    return std::make_pair(ended.ok() ? **ended : ExitStatus{false, 1, 0}, std::string());
  }

  // Collects the Slurm jobs that ended since the last look (squeue at most every half second).
  void FollowJobs() {
    if (!slurm_) return;
    for (;;) {
      Result<std::optional<pipeline::JobResult>> ended = slurm_->Wait(SystemClock()->NowMillis());
      if (!ended.ok()) {
        // The executor asks Slurm again for minutes before it gives up; once it has, the jobs
        // are beyond following: each ends failed with the reason (which a lost lease would
        // only say later), and a new executor cancels them (best effort) and starts afresh.
        const std::string why = "lost track of its Slurm job: " + ended.status().message();
        Warn(why);
        for (Running& r : running_) {
          if (r.job.has_value()) {
            pipeline::JobResult lost;
            lost.step = *r.job;
            lost.exit_code = -1;
            lost.error = why;
            jobs_ended_[*r.job] = lost;
          }
        }
        slurm_ = pipeline::NewSlurmExecutor(pipeline::RealSlurmCommands(slurm_timeout_),
                                            slurm_options_);
        return;
      }
      if (!ended->has_value()) return;
      jobs_ended_[(*ended)->step] = **ended;
    }
  }

  void Reap() {
    FollowJobs();
    for (auto it = running_.begin(); it != running_.end();) {
      std::optional<std::pair<ExitStatus, std::string>> ended = Ended(*it);
      if (!ended.has_value()) {
        ++it;
        continue;
      }
      const auto& [exit, error] = *ended;
      Result<std::string> unprepared = ReadFile(it->workdir + ".failure");
      if (!it->lost) {
        if (unprepared.ok() && !it->stopping) {
          Finish(it->task, core::TaskState::kFailed, *unprepared);
        } else if (it->stopping) {
          Finish(it->task, core::TaskState::kCancelled, it->task.reason);
        } else if (!error.empty()) {
          Finish(it->task, core::TaskState::kFailed, error);
        } else if (!exit.signaled && exit.code == 0) {
          Finish(it->task, core::TaskState::kDone, "exit code 0");
        } else {
          Finish(it->task, core::TaskState::kFailed,
                 exit.signaled ? "killed by signal " + std::to_string(exit.signal)
                               : "exit code " + std::to_string(exit.code));
        }
      }
      if (!flags_.keep_workdir) RemoveTaskFiles(it->workdir);
      it = running_.erase(it);
    }
  }

  void Renew() {
    const int64_t now = SystemClock()->NowMillis();
    for (Running& r : running_) {
      if (r.stopping && r.kill_at > 0 && now >= r.kill_at) {
        if (r.child.has_value()) {
          r.child->SignalGroup(SIGKILL);
          r.kill_at = 0;
        } else {
          slurm_->Kill(*r.job);  // scancel again until the job is seen to end
          r.kill_at = now + 10'000;
        }
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
    if (r.job.has_value()) {
      slurm_->Kill(*r.job);  // scancel: Slurm signals the job, then kills it after KillWait
    } else {
      r.child->SignalGroup(SIGTERM);
    }
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

  // A task's work directory and the files beside it (its lock and failure; the log is kept).
  static void RemoveTaskFiles(const std::string& dir) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    for (const char* suffix : {".pylock.toml", ".failure", ".spec.json", ".log.sbatch"}) {
      fs::remove(dir + suffix, ec);
    }
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
  // With --executor slurm: the executor, this program's path for the jobs to run, and the
  // jobs that ended but were not yet reaped.
  std::unique_ptr<pipeline::Executor> slurm_;
  pipeline::SlurmOptions slurm_options_;
  std::chrono::milliseconds slurm_timeout_{60'000};
  int64_t pause_leasing_until_ = 0;  // after sbatch failed to run
  std::string self_;
  size_t next_job_ = 0;
  std::map<size_t, pipeline::JobResult> jobs_ended_;
};

int RunAgent(const AgentFlags& flags) {
  if (flags.queues.empty()) {
    PrintError(InvalidArgument("say which queues to take tasks from: --queue NAME"));
    return 2;
  }
  if (!flags.sbatch_args.empty() && flags.executor != "slurm") {
    PrintError(InvalidArgument("--sbatch-arg is for --executor slurm"));
    return 2;
  }
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (::pipe2(g_child_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
    struct sigaction child {};
    child.sa_handler = OnChild;
    child.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&child.sa_mask);
    sigaction(SIGCHLD, &child, nullptr);
  }
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
    table.rows.push_back({a.id, Join(a.queues, ","), gpus.empty() ? "-" : gpus, std::to_string(a.slots),
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
      "their leases run out and the tasks are queued again. With --executor slurm, each task\n"
      "is a batch job on the cluster, which places it.\n\n"
      "  cairn agent --queue gpu --gpus 0,1 --slots 2\n"
      "  cairn agent --queue train --executor slurm --slots 20 --workdir /shared/cairn\n"
      "  cairn agent ls");
  AddTrackingUriOption(cmd, &flags->tracking_uri);
  cmd->add_option("--queue", flags->queues, "A queue to take tasks from; repeatable");
  cmd->add_option("--id", flags->id, "The agent's id (default: the host name)");
  cmd->add_option("--gpus", flags->gpus,
                  "The GPUs it hands out, e.g. 0,1 (default: every GPU nvidia-smi lists). With "
                  "--executor slurm, one label per GPU its jobs may hold at once (default: none); "
                  "Slurm picks the devices");
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
  cmd->add_option("--poll-ms", flags->poll_ms,
                  "How often to ask for more work while tasks run (an idle agent waits on the "
                  "server, which answers as soon as a task is queued)")
      ->capture_default_str()
      ->check(CLI::Range(10, 60000));
  cmd->add_option("--host-facts", flags->host_facts,
                  "A host facts JSON file (as a run's cairn/host.json) to offer instead of this "
                  "host's own");
  cmd->add_option("--executor", flags->executor,
                  "How tasks run: local (processes on this machine) or slurm (each a batch job, "
                  "its GPUs asked for as --gres; --workdir must be on a filesystem the nodes "
                  "share)")
      ->capture_default_str()
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--sbatch-arg", flags->sbatch_args,
                  "An extra sbatch argument for every job, e.g. --sbatch-arg=--partition=gpu; "
                  "repeatable");
  cmd->add_option("--max-tasks", flags->max_tasks,
                  "Stop after starting this many tasks and seeing them end (default: run until "
                  "stopped)");
  cmd->callback([flags, action, cmd] {
    if (cmd->got_subcommand("ls") || cmd->got_subcommand("exec-task")) return;
    *action = [flags] { return RunAgent(*flags); };
  });
  auto exec_flags = std::make_shared<ExecFlags>();
  CLI::App* exec = cmd->add_subcommand(
      "exec-task", "Used by the agent: start a leased task in the current directory");
  exec->group("");  // not listed: the agent runs it, people do not
  exec->add_option("--run-id", exec_flags->run_id)->required();
  exec->add_option("--spec", exec_flags->spec)->required();
  AddTrackingUriOption(exec, &exec_flags->tracking_uri);
  exec->callback([exec_flags, action] { *action = [exec_flags] { return ExecTask(*exec_flags); }; });
  CLI::App* ls = cmd->add_subcommand("ls", "List the agents the server knows, with what they run");
  ls->fallthrough();
  ls->callback([flags, action] { *action = [flags] { return ListAgents(*flags); }; });
}

}  // namespace cairn::cli
