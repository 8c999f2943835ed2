#include "capture/run_wrapper.h"

#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include "capture/code_state.h"
#include "core/task_spec.h"
#include "capture/console_recorder.h"
#include "capture/python_env_cache.h"
#include "capture/system_metrics.h"
#include "client/run_journal.h"
#include "client/tracking_client.h"
#include "env/env_diff.h"
#include "env/host_facts.h"
#include "env/install/venv_layout.h"
#include "env/project_env.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/json_writer.h"
#include "util/process.h"

extern char** environ;

namespace cairn::capture {

using client::ClientOptions;
using client::DefaultJournalDir;
using client::FallbackJournalDir;
using client::JournalDirs;
using client::RunJournal;
using client::SyncJournals;
using client::TrackingClient;
namespace {

// Environment variables whose values are recorded: they change results and hold no secrets.
// Every other variable is recorded by name only.
constexpr const char* kRecordedValues[] = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",    "CUBLAS_WORKSPACE_CONFIG",
    "OMP_NUM_THREADS",      "MKL_NUM_THREADS",      "OPENBLAS_NUM_THREADS",
    "PYTHONHASHSEED",       "TF_DETERMINISTIC_OPS", "NCCL_DEBUG",
    "WORLD_SIZE",           "LOCAL_RANK",           "RANK",
    "SLURM_JOB_ID",         "SLURM_NTASKS",         "VIRTUAL_ENV",
    "CONDA_DEFAULT_ENV",
};

// The signals a wrapper passes on to its command.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

std::string CurrentUser() {
  if (const char* u = std::getenv("USER"); u != nullptr && *u != '\0') return u;
  if (const passwd* pw = getpwuid(getuid()); pw != nullptr) return pw->pw_name;
  return "unknown";
}

// What MLflow records as the run's source: the script when the command runs one.
std::string SourceName(const std::vector<std::string>& command) {
  for (size_t i = 1; i < command.size(); ++i) {
    if (command[i].ends_with(".py")) return command[i];
  }
  return command.empty() ? "" : command[0];
}

// The command line, working directory and environment the command ran with, as JSON.
std::string ProcessRecord(const std::vector<std::string>& command, const std::string& cwd) {
  std::vector<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    names.emplace_back(entry.substr(0, entry.find('=')));
  }
  std::sort(names.begin(), names.end());
  JsonWriter w;
  w.BeginObject();
  w.Key("command").BeginArray();
  for (const std::string& arg : command) w.String(arg);
  w.EndArray();
  w.Key("command_line").String(ShellJoin(command));
  w.Key("cwd").String(cwd);
  w.Key("env_names").BeginArray();
  for (const std::string& n : names) w.String(n);
  w.EndArray();
  w.Key("env_values").BeginObject();
  for (const char* name : kRecordedValues) {
    if (const char* v = std::getenv(name); v != nullptr) w.Key(name).String(v);
  }
  w.EndObject();
  w.EndObject();
  return w.Take();
}

bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Hands the terminal to the command's process group while it runs, so that it can read the
// terminal and Ctrl-C reaches it directly; gives it back on destruction.
class TerminalHandoff {
 public:
  explicit TerminalHandoff(pid_t group) : group_(group) {
    if (isatty(STDIN_FILENO) == 0) return;
    const pid_t foreground = tcgetpgrp(STDIN_FILENO);
    if (foreground < 0) return;  // not this session's terminal
    interactive_ = true;
    if (foreground == getpgrp()) SetForeground(group);
  }
  ~TerminalHandoff() {
    if (interactive_ && tcgetpgrp(STDIN_FILENO) == group_) SetForeground(getpgrp());
  }

  // The command stopped with `signal`. A shell knows only this process, so its job must stop
  // too, or the terminal stays with a stopped command: Ctrl-Z (SIGTSTP), or a command in the
  // background that wants the terminal (SIGTTIN, SIGTTOU), stops this process's group with
  // the same signal, after taking the terminal back. Once continued (`fg`, `bg`), the command
  // gets the terminal again if this process has it, and is continued. Without a terminal, a
  // stopped command is left to whoever stopped it.
  void CommandStopped(int signal, const Process& command) {
    if (!interactive_) return;
    const bool wants_terminal = signal == SIGTTIN || signal == SIGTTOU;
    if (!wants_terminal || tcgetpgrp(STDIN_FILENO) != getpgrp()) {
      if (tcgetpgrp(STDIN_FILENO) == group_) SetForeground(getpgrp());
      kill(0, signal == SIGSTOP ? SIGTSTP : signal);  // returns once continued
    }
    if (tcgetpgrp(STDIN_FILENO) == getpgrp()) SetForeground(group_);
    command.SignalGroup(SIGCONT);
  }

 private:
  static bool SetForeground(pid_t group) {
    // A process that is not in the foreground gets SIGTTOU for tcsetpgrp unless it blocks it.
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    bool ok = tcsetpgrp(STDIN_FILENO, group) == 0;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return ok;
  }
  const pid_t group_;
  bool interactive_ = false;  // started from a terminal of this session
};

// While the command runs: a heartbeat every heartbeat interval (straight to the server: a
// late heartbeat means nothing), and system metrics every metrics interval (through the
// journal), from a thread of its own. Failures are reported once: a run must not stop because
// the server is briefly away.
class RunMonitor {
 public:
  RunMonitor(TrackingClient* client, RunJournal* journal, pid_t group, bool gpus,
             const RunOptions& options)
      : client_(client),
        journal_(journal),
        run_id_(journal->run_id()),
        sampler_(env::RealHostProbe(), group),
        metrics_every_(options.system_metrics_interval_seconds * 1000),
        beat_every_(std::max(1, options.heartbeat_interval_seconds) * 1000) {
    if (!gpus) sampler_.DisableGpus();
    thread_ = std::thread([this] { Loop(); });
  }
  ~RunMonitor() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Loop() {
    // What was recorded before the command started (parameters, the records of the code,
    // host and environment) goes to the server while the command runs, not after it.
    Report(journal_->Deliver(*client_));
    Clock* clock = SystemClock();
    int64_t next_beat = clock->NowMillis() + beat_every_;
    // The first sample after one interval, as MLflow's sampler does: a command that ends
    // sooner has no load worth recording.
    int64_t next_sample = clock->NowMillis() + metrics_every_;
    int64_t step = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      const int64_t now = clock->NowMillis();
      int64_t wake = next_beat;
      if (metrics_every_ > 0) wake = std::min(wake, next_sample);
      if (cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(0, wake - now)),
                       [this] { return stop_; })) {
        return;
      }
      lock.unlock();
      const int64_t t = clock->NowMillis();
      if (t >= next_beat) {
        // Records wait in the journal until something delivers: do it at least this often
        // (a run started while the server was away is created by the first of them).
        (void)journal_->Deliver(*client_);
        Report(client_->SetTag(run_id_, "cairn.heartbeat", std::to_string(t)));
        next_beat = t + beat_every_;
      }
      if (metrics_every_ > 0 && t >= next_sample) {
        std::vector<core::Metric> metrics = sampler_.Sample(t, step++);
        if (!metrics.empty()) {
          Status s = journal_->AppendBatch(metrics, {}, {});
          if (s.ok()) s = journal_->Deliver(*client_);
          Report(s);
        }
        next_sample = t + metrics_every_;
      }
      lock.lock();
    }
  }

  void Report(const Status& s) {
    if (s.ok() || warned_) return;
    warned_ = true;
    std::fprintf(stderr, "cairn: warning: %s (will keep trying)\n", s.ToString().c_str());
  }

  TrackingClient* client_;
  RunJournal* journal_;
  const std::string run_id_;
  capture::SystemSampler sampler_;
  const int64_t metrics_every_;
  const int64_t beat_every_;
  bool warned_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// The interpreter the command will use: --python, else the command itself when it is a
// Python interpreter (the active environment's when it has one of that name), else the active
// environment's python, else python3 on PATH.
std::string PythonOf(const RunOptions& options, const std::optional<std::string>& active_env) {
  if (!options.python.empty()) return options.python;
  const std::string& program = options.command[0];
  const std::string base = std::filesystem::path(program).filename().string();
  const bool python = base.starts_with("python");
  if (active_env && program.find('/') == std::string::npos) {
    // The command runs with the environment's bin first on PATH.
    const std::string in_env = *active_env + "/bin/" + (python ? base : "python");
    if (access(in_env.c_str(), X_OK) == 0) return in_env;
  }
  if (python) return program;
  return "python3";
}

core::RunStatus StatusOfExit(const ExitStatus& exit) {
  if (exit.signaled) return core::RunStatus::kKilled;
  return exit.code == 0 ? core::RunStatus::kFinished : core::RunStatus::kFailed;
}

// Runs the child to its end: copies its output to ours and to the run's log, forwards the signals
// this process receives to its process group. Returns how it ended.
Result<ExitStatus> Supervise(Process& child, int signal_fd, ConsoleRecorder& console) {
  TerminalHandoff terminal(child.pid());
  // A command stopped by SIGTTIN before it got the terminal needs to be continued.
  child.SignalGroup(SIGCONT);
  int fds[2] = {child.stdout_fd(), child.stderr_fd()};
  const int ours[2] = {STDOUT_FILENO, STDERR_FILENO};
  bool passing[2] = {true, true};
  std::optional<ExitStatus> exit;
  int64_t exited_at = 0;
  char buf[64 * 1024];
  for (;;) {
    pollfd polls[3];
    int n = 0;
    int index_of[3] = {-1, -1, -1};
    for (int i = 0; i < 2; ++i) {
      if (fds[i] >= 0) {
        index_of[n] = i;
        polls[n++] = {fds[i], POLLIN, 0};
      }
    }
    const int signal_slot = n;
    polls[n++] = {signal_fd, POLLIN, 0};
    if (exit && fds[0] < 0 && fds[1] < 0) break;
    // Processes the command left behind may hold its output open: once it has exited, wait
    // for them only briefly.
    int timeout = exit ? 200 : -1;
    if (exit && SystemClock()->NowMillis() - exited_at > 2000) break;
    int ready = poll(polls, static_cast<nfds_t>(n), timeout);
    if (ready < 0 && errno != EINTR) return Internal("poll failed while running the command");
    for (int p = 0; p < signal_slot; ++p) {
      if ((polls[p].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      int i = index_of[p];
      ssize_t got = read(fds[i], buf, sizeof(buf));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[i] = -1;  // closed by ~Process
        continue;
      }
      // A reader that went away (`cairn run ... | head`) ends the pass-through, not the
      // recording.
      if (passing[i] && !WriteAll(ours[i], buf, static_cast<size_t>(got))) passing[i] = false;
      console.Add(i == 0 ? core::ConsoleStream::kStdout : core::ConsoleStream::kStderr,
                  std::string_view(buf, static_cast<size_t>(got)));
    }
    if ((polls[signal_slot].revents & POLLIN) != 0) {
      signalfd_siginfo info;
      if (read(signal_fd, &info, sizeof(info)) == sizeof(info) &&
          static_cast<int>(info.ssi_signo) != SIGCHLD) {
        child.SignalGroup(static_cast<int>(info.ssi_signo));
      }
      if (!exit) {
        int stopped_by = 0;
        CAIRN_ASSIGN_OR_RETURN(exit, child.TryWait(&stopped_by));
        if (exit) exited_at = SystemClock()->NowMillis();
        if (stopped_by != 0) terminal.CommandStopped(stopped_by, child);
      }
    }
  }
  return *exit;
}

// The run's journal in the data directory, else (not writable) in the temporary directory.
Result<std::unique_ptr<RunJournal>> OpenJournal(const std::string& run_id,
                                                const std::string& tracking_uri) {
  Result<std::unique_ptr<RunJournal>> journal =
      RunJournal::Open(DefaultJournalDir(), run_id, tracking_uri);
  if (journal.ok()) return journal;
  const std::string fallback = FallbackJournalDir();
  std::fprintf(stderr, "cairn: warning: %s; keeping the run's journal in %s\n",
               journal.status().message().c_str(), fallback.c_str());
  return RunJournal::Open(fallback, run_id, tracking_uri);
}

// Delivers what the journal still holds, trying for a while when the server is away; what is
// left waits for `cairn sync` or the next `cairn run`.
void FinishDelivery(RunJournal& journal, TrackingClient& client) {
  constexpr int64_t kPatienceMs = 10'000;
  const int64_t give_up = SystemClock()->NowMillis() + kPatienceMs;
  Status s = journal.Deliver(client);
  while (!s.ok() && SystemClock()->NowMillis() < give_up) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    s = journal.Deliver(client);
  }
  if (journal.complete()) {
    (void)journal.Remove();
    return;
  }
  std::fprintf(stderr,
               "cairn: %zu record(s) of run %s are not on the server yet (%s); they wait in the "
               "journal, and `cairn sync` or the next `cairn run` uploads them\n",
               journal.pending(), journal.run_id().c_str(), s.message().c_str());
}

}  // namespace

Result<std::pair<std::string, std::string>> ParseKeyValue(const std::string& text,
                                                          const std::string& flag) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument(flag + " takes key=value, got '" + text + "'");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
             std::string_view("@%+=:,./-_").find(c) != std::string_view::npos;
    });
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

namespace {

// What the run depends on, read in parallel with the first requests to the server: the code
// state (libgit2 loads the system's CA certificates on start, some milliseconds), the host and
// the Python environment.
struct PendingCaptures {
  std::future<Result<CodeState>> code;
  std::future<Result<CachedSnapshot>> python;
  std::future<env::HostFacts> host;
};

PendingCaptures StartCaptures(const RunOptions& options, const std::string& cwd,
                              const std::optional<std::string>& active_env) {
  PendingCaptures p;
  p.code = std::async(std::launch::async, [cwd] { return ReadCodeState(cwd); });
  p.python = std::async(std::launch::async, [python = PythonOf(options, active_env)] {
    return SnapshotPythonEnvironmentCached(python, DefaultPythonEnvCacheDir());
  });
  p.host =
      std::async(std::launch::async, [] { return env::CollectHostFacts(*env::RealHostProbe()); });
  return p;
}

// Records earlier runs could not deliver go first, in order.
void DeliverPendingJournals(TrackingClient& client) {
  SyncJournals(JournalDirs(), client,
               [](const std::string& run_id, size_t delivered, size_t left, const Status& s) {
                 // Nothing delivered: the server is away, which the run says next.
                 if (delivered == 0) return;
                 std::fprintf(
                     stderr, "cairn: uploaded %zu pending record(s) of run %s%s\n", delivered,
                     run_id.c_str(),
                     left > 0
                         ? (", " + std::to_string(left) + " still pending: " + s.message()).c_str()
                         : "");
               });
}

struct Experiment {
  std::string name;
  std::string id = "0";  // empty while offline: known once the server has the run
};

// The experiment by --experiment or MLFLOW_EXPERIMENT_NAME, created when missing. An
// unreachable server sets `offline` instead of failing: the command runs all the same.
Result<Experiment> ResolveExperiment(TrackingClient& client, const RunOptions& options,
                                     bool* offline) {
  Experiment e;
  e.name = options.experiment;
  if (e.name.empty()) {
    if (const char* name = std::getenv("MLFLOW_EXPERIMENT_NAME"); name != nullptr) e.name = name;
  }
  if (e.name.empty()) return e;
  Result<std::string> id = client.GetOrCreateExperiment(e.name);
  if (id.ok()) {
    e.id = *id;
  } else if (id.status().code() == StatusCode::kUnavailable) {
    *offline = true;
    e.id.clear();
  } else {
    return id.status();
  }
  return e;
}

// The code the command runs, as MLflow's git tags so that other MLflow tools read them too.
void AddCodeTags(const Result<CodeState>& code, std::vector<core::Tag>* tags) {
  if (!code.ok()) {
    std::fprintf(stderr, "cairn: warning: code state not recorded: %s\n",
                 code.status().message().c_str());
    tags->push_back({"cairn.git.error", code.status().message().substr(0, 4000)});
    return;
  }
  for (core::Tag& t : capture::CodeTags(*code)) tags->push_back(std::move(t));
}

// The Python environment: every installed distribution, as a lock-shaped snapshot.
void AddPythonTags(const Result<CachedSnapshot>& python, const RunOptions& options,
                   std::vector<core::Tag>* tags) {
  if (python.ok()) {
    tags->push_back({"cairn.env.hash", python->snapshot.hash});
    tags->push_back({"cairn.python.version", python->snapshot.interpreter.version});
    tags->push_back({"cairn.python.executable", python->snapshot.interpreter.executable});
    tags->push_back({"cairn.python.packages", std::to_string(python->package_count)});
  } else if (python.status().code() == StatusCode::kNotFound && options.python.empty()) {
    tags->push_back({"cairn.python.version", "no Python"});
  } else {
    std::fprintf(stderr, "cairn: warning: Python environment not recorded: %s\n",
                 python.status().message().c_str());
    tags->push_back({"cairn.env.error", python.status().message().substr(0, 4000)});
  }
}

// The project's active environment (cairn env build), which the command runs in; nullopt
// when it cannot be read, with a warning.
std::optional<env::StoredEnvironment> AddEnvironmentTags(const std::string& active_env,
                                                         std::vector<core::Tag>* tags) {
  Result<env::StoredEnvironment> stored = env::LoadStoredEnvironment(active_env);
  if (!stored.ok()) {
    std::fprintf(stderr, "cairn: warning: the active environment %s: %s\n", active_env.c_str(),
                 stored.status().message().c_str());
    return std::nullopt;
  }
  tags->push_back({"cairn.env.lock", stored->lock_hash});
  tags->push_back({"cairn.env.id", stored->id});
  return *stored;
}

// Everything the run records on its own account, once the captures are in.
struct Captured {
  std::string cwd;
  env::HostFacts host;
  Result<CodeState> code = Unavailable("not read");
  Result<CachedSnapshot> python = Unavailable("not read");
  std::optional<std::string> active_env;
  std::optional<env::StoredEnvironment> environment;
};

std::vector<core::Tag> RunTags(const RunOptions& options, Captured& c) {
  std::vector<core::Tag> tags = {
      {"mlflow.user", CurrentUser()},
      {"mlflow.source.name", SourceName(options.command)},
      {"mlflow.source.type", "LOCAL"},
      {"cairn.command", ShellJoin(options.command)},
      {"cairn.cwd", c.cwd},
  };
  AddCodeTags(c.code, &tags);
  // The machine: key facts as cairn.* tags, all of them as an artifact.
  for (core::Tag& t : env::HostFactTags(c.host)) tags.push_back(std::move(t));
  tags.push_back({"cairn.heartbeat", std::to_string(SystemClock()->NowMillis())});
  AddPythonTags(c.python, options, &tags);
  if (c.active_env) c.environment = AddEnvironmentTags(*c.active_env, &tags);
  for (const core::Tag& t : options.tags) tags.push_back(t);
  return tags;
}

// The run `options.run_id` names, RUNNING from now on; made under that id when the server does
// not have it yet.
Result<core::RunInfo> AttachRun(TrackingClient& client, const RunOptions& options,
                                const Experiment& experiment, int64_t start_time,
                                const std::vector<core::Tag>& tags) {
  Result<core::Run> existing = client.GetRun(options.run_id);
  if (!existing.ok()) {
    if (existing.status().code() != StatusCode::kNotFound) return existing.status();
    return client.CreateRunWithId(options.run_id, "", experiment.name, options.run_name, start_time,
                                  tags);
  }
  if (existing->info.status != core::RunStatus::kScheduled &&
      existing->info.status != core::RunStatus::kRunning) {
    return FailedPrecondition("run " + options.run_id + " has ended (" +
                              std::string(core::RunStatusName(existing->info.status)) +
                              "): only a scheduled or running run takes a command");
  }
  if (existing->info.status != core::RunStatus::kRunning) {
    CAIRN_RETURN_IF_ERROR(
        client.UpdateRun(options.run_id, core::RunStatus::kRunning, std::nullopt));
  }
  return existing->info;
}

// Creates the run on the server, or, when it cannot be reached, under an id chosen here; then
// opens the run's journal, through which everything the server must learn goes from here on,
// so that an unreachable server loses nothing.
Result<core::RunInfo> StartRun(TrackingClient& client, const RunOptions& options,
                               const Experiment& experiment, const std::vector<core::Tag>& tags,
                               bool offline, std::unique_ptr<RunJournal>* journal) {
  const int64_t start_time = SystemClock()->NowMillis();
  core::RunInfo run;
  const bool attach = !options.run_id.empty();
  if (!offline) {
    Result<core::RunInfo> created =
        attach ? AttachRun(client, options, experiment, start_time, tags)
               : client.CreateRun(experiment.id, options.run_name, start_time, tags);
    if (created.ok()) {
      run = std::move(created).value();
    } else if (created.status().code() == StatusCode::kUnavailable) {
      offline = true;
    } else {
      return created.status();
    }
  }
  if (offline) {
    run.run_id = attach ? options.run_id : RandomHex(16);
    run.run_name = options.run_name;
    run.experiment_id = experiment.id;
  }
  CAIRN_ASSIGN_OR_RETURN(*journal, OpenJournal(run.run_id, client.tracking_uri()));
  // A run that existed keeps the tags it was made with: this run's go on top.
  if (attach) CAIRN_RETURN_IF_ERROR((*journal)->AppendBatch({}, {}, tags));
  if (offline) {
    CAIRN_RETURN_IF_ERROR(
        (*journal)->AppendCreate(experiment.name, options.run_name, start_time, tags));
    std::fprintf(stderr,
                 "cairn: the tracking server at %s cannot be reached; run %s is recorded in "
                 "the journal and created there once the server is back\n",
                 client.tracking_uri().c_str(), run.run_id.c_str());
  }
  std::fprintf(stderr, "cairn: run %s (%s) in experiment %s at %s\n", run.run_id.c_str(),
               run.run_name.empty() ? "unnamed" : run.run_name.c_str(),
               experiment.id.empty() ? experiment.name.c_str() : experiment.id.c_str(),
               client.tracking_uri().c_str());
  return run;
}

// The params and the records `cairn run` uploads with every run: the process, the host, the
// Python environment and the code state.
Status RecordRunInputs(RunJournal& journal, const core::RunInfo& run, const RunOptions& options,
                       const Captured& c) {
  Status record = journal.AppendBatch({}, options.params, {});
  if (record.ok()) record = journal.AppendInputs(options.inputs);
  auto artifact = [&](std::string_view path, const std::string& content) {
    if (record.ok()) record = journal.AppendArtifact(run.artifact_uri, std::string(path), content);
  };
  artifact("cairn/process.json", ProcessRecord(options.command, c.cwd));
  artifact(env::kRunHostArtifact, env::HostFactsJson(c.host));
  if (c.python.ok()) artifact(env::kRunPylockArtifact, c.python->snapshot.toml);
  if (c.code.ok() && c.code->in_repository) {
    artifact(capture::kCodeStateArtifact, capture::CodeStateJson(*c.code));
    if (!c.code->patch.empty()) artifact(capture::kCodeDiffArtifact, c.code->patch);
  }
  return record;
}

// The signals to forward, taken through a signalfd: blocked before the child exists, and
// unblocked only once the run's end is recorded, so that an interrupt cannot kill the wrapper
// with its default action in between.
class ForwardedSignals {
 public:
  Status Block() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : kForwarded) sigaddset(&mask, sig);
    sigaddset(&mask, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &mask, &old_mask_);
    fd_ = signalfd(-1, &mask, SFD_CLOEXEC);
    if (fd_ < 0) {
      pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
      return Internal(std::string("signalfd: ") + strerror(errno));
    }
    return Status::Ok();
  }
  ~ForwardedSignals() {
    if (fd_ < 0) return;
    close(fd_);
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  int fd() const { return fd_; }

 private:
  sigset_t old_mask_;
  int fd_ = -1;
};

SpawnOptions ChildOptions(const RunOptions& options, const std::string& tracking_uri,
                          const std::string& authorization, const core::RunInfo& run,
                          const std::string& experiment_id, const Captured& c) {
  SpawnOptions spawn;
  spawn.argv = options.command;
  spawn.capture_output = true;
  spawn.env = {{"MLFLOW_TRACKING_URI", tracking_uri},
               {"MLFLOW_RUN_ID", run.run_id},
               {"CAIRN_TRACKING_URI", tracking_uri},
               {"CAIRN_RUN_ID", run.run_id}};
  if (!experiment_id.empty()) spawn.env.push_back({"MLFLOW_EXPERIMENT_ID", experiment_id});
  // The parameters, for commands that read them: CAIRN_PARAM_<NAME> each, and CAIRN_PARAMS,
  // one JSON object under the names as given (what the Python client's cairn.params() reads).
  if (!options.params.empty()) {
    JsonWriter params;
    params.BeginObject();
    for (const core::Param& p : options.params) {
      params.Key(p.key).String(p.value);
      spawn.env.push_back({core::ParamVariable(p.key), p.value});
    }
    params.EndObject();
    spawn.env.push_back({"CAIRN_PARAMS", params.Take()});
  }
  if (c.active_env) {
    for (auto& variable : env::ActivationVariables(*c.active_env)) {
      spawn.env.push_back(std::move(variable));
    }
  }
  // MLflow clients in the command log with the token cairn found (in its credentials file,
  // say), unless they were given credentials of their own.
  if (std::string_view auth = authorization; auth.starts_with("Bearer ") &&
                                             std::getenv("MLFLOW_TRACKING_TOKEN") == nullptr &&
                                             std::getenv("MLFLOW_TRACKING_USERNAME") == nullptr) {
    spawn.env.push_back({"MLFLOW_TRACKING_TOKEN", std::string(auth.substr(7))});
  }
  // Output goes through a pipe, where Python would buffer it in blocks; keep it live.
  if (std::getenv("PYTHONUNBUFFERED") == nullptr) spawn.env.push_back({"PYTHONUNBUFFERED", "1"});
  return spawn;
}

// How the command ended, as tags and a run status; a command that never ran (or could not be
// followed) failed, with the reason.
Status RecordRunEnd(RunJournal& journal, const Result<ExitStatus>& exit, core::RunStatus status) {
  const int64_t end_time = SystemClock()->NowMillis();
  std::vector<core::Tag> end_tags;
  if (!exit.ok()) {
    end_tags.push_back({"cairn.error", exit.status().message().substr(0, 4000)});
  } else if (exit->signaled) {
    end_tags.push_back({"cairn.exit_signal", std::to_string(exit->signal)});
  } else {
    end_tags.push_back({"cairn.exit_code", std::to_string(exit->code)});
  }
  CAIRN_RETURN_IF_ERROR(journal.AppendBatch({}, {}, end_tags));
  return journal.AppendEnd(status, end_time);
}

}  // namespace

Result<int> RunTracked(const RunOptions& options) {
  if (options.command.empty()) return InvalidArgument("no command given: cairn run -- COMMAND");
  // A closed pipe on our output must not kill the wrapper before it ends the run; the command
  // gets default signal handling back (Process::Spawn).
  signal(SIGPIPE, SIG_IGN);
  ClientOptions client_options;
  client_options.tracking_uri = options.tracking_uri;
  // A server that accepts connections but does not answer must not hold the command back for
  // minutes: what cannot be sent waits in the journal.
  client_options.timeout_seconds = 10;
  client_options.retries = 1;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TrackingClient> client,
                         TrackingClient::Create(client_options));

  Captured c;
  std::error_code ec;
  c.cwd = std::filesystem::current_path(ec).string();
  c.active_env = env::ProjectEnv(env::FindProjectDir(c.cwd)).ActivePath();
  PendingCaptures pending = StartCaptures(options, c.cwd, c.active_env);
  DeliverPendingJournals(*client);
  bool offline = false;
  CAIRN_ASSIGN_OR_RETURN(Experiment experiment, ResolveExperiment(*client, options, &offline));
  c.host = pending.host.get();
  c.code = pending.code.get();
  c.python = pending.python.get();
  const std::vector<core::Tag> tags = RunTags(options, c);

  std::unique_ptr<RunJournal> journal;
  CAIRN_ASSIGN_OR_RETURN(core::RunInfo run,
                         StartRun(*client, options, experiment, tags, offline, &journal));
  CAIRN_RETURN_IF_ERROR(RecordRunInputs(*journal, run, options, c));

  ForwardedSignals signals;
  CAIRN_RETURN_IF_ERROR(signals.Block());
  SpawnOptions spawn =
      ChildOptions(options, client->tracking_uri(), client->authorization(), run,
                   run.experiment_id.empty() ? experiment.id : run.experiment_id, c);
  if (c.environment) (void)env::RecordEnvironmentRun(*c.active_env, run.run_id);
  ConsoleRecorder console(journal.get(), client.get());
  Result<Process> child = Process::Spawn(spawn);
  Result<ExitStatus> exit = child.status();
  if (child.ok()) {
    RunMonitor monitor(client.get(), journal.get(), child->pid(), !c.host.gpus.empty(), options);
    exit = Supervise(*child, signals.fd(), console);
  }
  Status recorded = console.Close();
  const core::RunStatus status = exit.ok() ? StatusOfExit(*exit) : core::RunStatus::kFailed;
  if (recorded.ok()) recorded = RecordRunEnd(*journal, exit, status);
  if (!recorded.ok()) {
    std::fprintf(stderr, "cairn: warning: %s\n", recorded.ToString().c_str());
  }
  FinishDelivery(*journal, *client);
  if (!exit.ok()) return exit.status();
  std::fprintf(stderr, "cairn: run %s %s (%s)\n", run.run_id.c_str(),
               std::string(core::RunStatusName(status)).c_str(), exit->ToString().c_str());
  return exit->ShellCode();
}

}  // namespace cairn::capture
