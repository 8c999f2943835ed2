// `cairn pipeline validate|run|resume|explain|status|ls`: wiring around the pipeline layer
// (pipeline/spec.h, plan.h, builder.h, run_state.h). See docs/pipelines.md.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "report/run_report.h"
#include "client/tracking_client.h"
#include "env/host_facts.h"
#include "pipeline/builder.h"
#include "pipeline/executor.h"
#include "pipeline/run_state.h"
#include "pipeline/session.h"
#include "pipeline/slurm_executor.h"
#include "pipeline/spec.h"
#include "pipeline/step_cache.h"
#include "pipeline/tracker.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"

namespace cairn::cli {
namespace {

namespace fs = std::filesystem;
using pipeline::Pipeline;
using pipeline::RunState;
using pipeline::StepEvent;
using pipeline::StepState;

struct PipelineFlags {
  std::string file = "pipeline.yaml";
  std::vector<std::string> params;  // k=v
  int jobs = 0;                     // 0: the cpus
  double cpus = 0;                  // 0: this machine's
  std::string memory;               // "": this machine's
  int gpus = -1;                    // -1: this machine's (none without nvidia-smi)
  std::string executor = "local";
  std::vector<std::string> sbatch_args;  // --sbatch-arg
  bool no_cache = false;
  bool no_track = false;
  std::string tracking_uri;
  std::string run;   // status, resume, explain
  std::string step;  // explain
};

std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) { g_interrupted = true; }

int Problems(const std::string& file, const std::vector<std::string>& problems) {
  std::fprintf(stderr, "%s: %zu problem%s:\n", file.c_str(), problems.size(),
               problems.size() == 1 ? "" : "s");
  for (const std::string& p : problems) std::fprintf(stderr, "  %s\n", p.c_str());
  return 1;
}

std::string FormatSeconds(int64_t ms) {
  char buf[32];
  if (ms < 60'000) {
    std::snprintf(buf, sizeof buf, "%.1f s", ms / 1000.0);
  } else {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(ms / 60'000),
                  static_cast<int>(ms / 1000 % 60));
  }
  return buf;
}

std::string FormatTime(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// Reads and expands a spec; prints the problems and returns nullopt when there are any.
std::optional<Pipeline> Load(const std::string& file, const std::string& text,
                             const std::map<std::string, std::string>& overrides,
                             const std::string& dir) {
  std::vector<std::string> problems;
  Result<pipeline::PipelineSpec> spec = pipeline::ParsePipelineSpec(text, file, &problems);
  if (!spec.ok()) {
    std::fprintf(stderr, "error: %s\n", spec.status().message().c_str());
    return std::nullopt;
  }
  Pipeline p =
      pipeline::ExpandPipeline(*spec, overrides, dir, pipeline::PathExistsOnDisk, &problems);
  if (!problems.empty()) {
    Problems(file, problems);
    return std::nullopt;
  }
  return p;
}

Result<std::map<std::string, std::string>> Overrides(const std::vector<std::string>& params) {
  std::map<std::string, std::string> out;
  for (const std::string& kv : params) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("-p takes name=value, got '" + kv + "'");
    }
    out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return out;
}

// The spec named by the flags, read, with -p applied and checked; nullopt after saying what
// is wrong, with the exit code in `exit_code` (2 for the command line, 1 for the spec).
struct Loaded {
  std::string text;
  std::map<std::string, std::string> overrides;
  std::string file;  // absolute
  std::string dir;   // the pipeline's directory
  Pipeline pipeline;
};
std::optional<Loaded> LoadFromFlags(const PipelineFlags& flags, int* exit_code) {
  Loaded l;
  Result<std::string> text = ReadFile(flags.file);
  Result<std::map<std::string, std::string>> overrides = Overrides(flags.params);
  for (const Status& s : {text.status(), overrides.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      *exit_code = 2;
      return std::nullopt;
    }
  }
  l.text = *text;
  l.overrides = *overrides;
  l.file = fs::absolute(flags.file).lexically_normal().string();
  l.dir = fs::path(l.file).parent_path().string();
  std::optional<Pipeline> p = Load(flags.file, l.text, l.overrides, l.dir);
  if (!p) {
    *exit_code = 1;
    return std::nullopt;
  }
  l.pipeline = std::move(*p);
  return l;
}

int Validate(const PipelineFlags& flags) {
  int exit_code = 0;
  std::optional<Loaded> loaded = LoadFromFlags(flags, &exit_code);
  if (!loaded) return exit_code;
  const Pipeline* p = &loaded->pipeline;
  std::printf("%s: pipeline %s, %zu step%s, no problems\n", flags.file.c_str(), p->name.c_str(),
              p->steps.size(), p->steps.size() == 1 ? "" : "s");
  for (const pipeline::Step& s : p->steps) {
    std::string needs;
    for (size_t d : s.deps) needs += (needs.empty() ? "" : ", ") + p->steps[d].id;
    std::printf("  %-20s %s%s\n", s.id.c_str(), s.command.c_str(),
                needs.empty() ? "" : ("   (after " + needs + ")").c_str());
  }
  return 0;
}

// Progress on the terminal: one line per event, and the tail of a failed step's log.
// Each step event on a line of its own. On a terminal, a status line below them says how many
// steps have finished and which are running, for how long; it is redrawn when that changes
// and every second, and cleared before anything else is printed. The tracker's thread calls
// Warning too, so every method takes the lock.
class TerminalProgress : public pipeline::Progress {
 public:
  explicit TerminalProgress(size_t steps) : steps_(steps) {
    const char* term = std::getenv("TERM");
    live_ = isatty(STDOUT_FILENO) == 1 && (term == nullptr || std::string(term) != "dumb");
    width_ = static_cast<size_t>(report::DetectOutputStyle().width);
  }
  ~TerminalProgress() override { Finish(); }

  void Event(const std::string& what, const std::string& step, const std::string& detail) override {
    std::lock_guard<std::mutex> lock(mu_);
    ClearStatus();
    std::printf("  %-9s %-24s %s\n", what.c_str(), step.c_str(), detail.c_str());
    if (what == "started") {
      running_[step] = SystemClock()->NowMillis();
    } else {
      running_.erase(step);
      if (what != "retry") ++finished_;  // a retry waits, then starts again
    }
    DrawStatus();
    std::fflush(stdout);
  }

  void FailedLog(const std::string&, const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    ClearStatus();
    std::printf("            log: %s\n", path.c_str());
    Result<std::string> text = ReadFile(path);
    if (text.ok() && !text->empty()) {
      // The last few lines, so that the reason is on screen.
      size_t start = text->size();
      for (int lines = 0; start > 0;) {
        if ((*text)[start - 1] == '\n' && start != text->size() && ++lines == 6) break;
        --start;
      }
      std::string tail = text->substr(start);
      size_t pos = 0;
      while (pos < tail.size()) {
        size_t end = tail.find('\n', pos);
        if (end == std::string::npos) end = tail.size();
        std::printf("            | %s\n", tail.substr(pos, end - pos).c_str());
        pos = end + 1;
      }
    }
    DrawStatus();
    std::fflush(stdout);
  }

  void Warning(const std::string& text) override {
    std::lock_guard<std::mutex> lock(mu_);
    ClearStatus();
    std::fflush(stdout);
    std::fprintf(stderr, "warning: %s\n", text.c_str());
    DrawStatus();
    std::fflush(stdout);
  }

  void Tick() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_ && began_ && !running_.empty() &&
        SystemClock()->NowMillis() - drawn_ms_ >= 1000) {
      ClearStatus();
      DrawStatus();
      std::fflush(stdout);
    }
  }

  // The status line shows from Begin (after the run's heading) to Finish (before its summary).
  void Begin() {
    std::lock_guard<std::mutex> lock(mu_);
    began_ = true;
  }
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    ClearStatus();
    began_ = false;
    std::fflush(stdout);
  }

 private:
  void ClearStatus() {
    if (!shown_) return;
    std::fputs("\r\033[K", stdout);
    shown_ = false;
  }

  void DrawStatus() {
    if (!live_ || !began_) return;
    const int64_t now = SystemClock()->NowMillis();
    std::string line = "[" + std::to_string(finished_) + "/" + std::to_string(steps_) + "]";
    if (!running_.empty()) {
      line += " running:";
      // Longest running first.
      std::vector<std::pair<int64_t, std::string>> by_start;
      for (const auto& [step, started] : running_) by_start.push_back({started, step});
      std::sort(by_start.begin(), by_start.end());
      for (size_t k = 0; k < by_start.size(); ++k) {
        line += (k == 0 ? " " : ", ") + by_start[k].second + " " +
                std::to_string((now - by_start[k].first) / 1000) + "s";
      }
    }
    std::fputs(report::Truncate(line, width_ > 1 ? width_ - 1 : 1).c_str(), stdout);
    shown_ = true;
    drawn_ms_ = now;
  }

  size_t steps_;
  bool live_ = false;
  bool began_ = false;
  size_t width_ = 100;
  bool shown_ = false;
  int64_t drawn_ms_ = 0;
  size_t finished_ = 0;
  std::map<std::string, int64_t> running_;  // step -> when it started
  std::mutex mu_;
};

// The local executor's share is this machine's cpus and memory, no GPUs unless told; on
// Slurm the cluster decides, so only what is given limits it.
pipeline::Budget MachineBudget(const PipelineFlags& flags, const std::string& executor,
                               std::string* error) {
  pipeline::Budget b;
  if (executor == "slurm") {
    b.jobs = flags.jobs > 0 ? flags.jobs : 100;
    b.cpus = flags.cpus > 0 ? flags.cpus : 1e9;
    b.gpus = flags.gpus >= 0 ? flags.gpus : 1 << 20;
    if (!flags.memory.empty()) {
      Result<int64_t> m = pipeline::ParseMemory(flags.memory);
      if (!m.ok()) *error = "--memory: " + m.status().message();
      if (m.ok()) b.memory_mib = *m;
    }
    return b;
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  b.cpus = flags.cpus > 0 ? flags.cpus : cores;
  b.jobs = flags.jobs > 0 ? flags.jobs : static_cast<int>(std::max(1.0, b.cpus));
  if (!flags.memory.empty()) {
    Result<int64_t> m = pipeline::ParseMemory(flags.memory);
    if (!m.ok()) {
      *error = "--memory: " + m.status().message();
    } else {
      b.memory_mib = *m;
    }
  } else {
    b.memory_mib = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) >> 20;
  }
  b.gpus = flags.gpus >= 0 ? flags.gpus : 0;
  return b;
}

// The GPUs of this machine (nvidia-smi; none without it), asked only when a step wants one.
int LocalGpus(const Pipeline& p) {
  const bool wanted = std::any_of(p.steps.begin(), p.steps.end(),
                                  [](const pipeline::Step& s) { return s.resources.gpus > 0; });
  if (!wanted) return 0;
  return static_cast<int>(env::CollectHostFacts(*env::RealHostProbe()).gpus.size());
}

// The budget steps run within, or nullopt after saying why some step can never run in it.
std::optional<pipeline::Budget> BudgetOrExplain(const Pipeline& p, const PipelineFlags& flags,
                                                const std::string& executor_name) {
  std::string error;
  pipeline::Budget budget = MachineBudget(flags, executor_name, &error);
  if (!error.empty()) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return std::nullopt;
  }
  if (executor_name != "slurm" && flags.gpus < 0) budget.gpus = LocalGpus(p);
  if (std::vector<std::string> problems = pipeline::Plan::CheckBudget(p, budget);
      !problems.empty()) {
    std::fprintf(stderr, "error: steps cannot run on this machine:\n");
    for (const std::string& s : problems) std::fprintf(stderr, "  %s\n", s.c_str());
    std::fprintf(stderr,
                 "(--gpus and --memory set the budget; --executor slurm runs steps on a "
                 "cluster)\n");
    return std::nullopt;
  }
  return budget;
}

int Execute(const Pipeline& p, RunState& state, const PipelineFlags& flags,
            const pipeline::Budget& budget, std::map<std::string, StepEvent> completed,
            const std::string& cwd) {
  const std::string& executor_name = state.info().executor;
  std::unique_ptr<pipeline::Executor> executor;
  if (executor_name == "slurm") {
    pipeline::SlurmOptions slurm;
    slurm.sbatch_args = flags.sbatch_args;
    executor = pipeline::NewSlurmExecutor(pipeline::RealSlurmCommands(), slurm);
  } else {
    executor = pipeline::NewLocalExecutor();
  }
  TerminalProgress progress(p.steps.size());
  std::unique_ptr<pipeline::Tracker> tracker;
  if (!state.info().tracking_uri.empty()) {
    Result<std::unique_ptr<pipeline::Tracker>> started =
        pipeline::Tracker::Start(state.info().tracking_uri, p, state.info(), progress);
    if (!started.ok()) {
      std::fprintf(stderr, "error: %s\n", started.status().message().c_str());
      return 2;
    }
    tracker = std::move(*started);
  }
  pipeline::SessionOptions session_options;
  session_options.tracker = tracker.get();
  session_options.workdir = cwd;
  session_options.use_cache = !flags.no_cache && !state.info().no_cache;
  session_options.completed = std::move(completed);
  Result<std::unique_ptr<pipeline::Session>> session =
      pipeline::Session::Create(p, state, std::move(session_options), progress);
  if (!session.ok()) {
    std::fprintf(stderr, "error: %s\n", session.status().message().c_str());
    return 1;
  }
  pipeline::Session& hooks = **session;
  pipeline::BuildOptions options;
  options.budget = budget;
  options.cwd = cwd;
  options.log_dir = state.log_dir();
  options.interrupted = &g_interrupted;
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  std::string where = executor->name() + ", " + std::to_string(budget.jobs) + " job" +
                      (budget.jobs == 1 ? "" : "s");
  if (executor_name != "slurm") {
    char cpus[32];
    std::snprintf(cpus, sizeof cpus, "%g", budget.cpus);
    where += std::string(", ") + cpus + " cpus";
  }
  std::printf("pipeline %s: %zu step%s, run %s (%s)\n", p.name.c_str(), p.steps.size(),
              p.steps.size() == 1 ? "" : "s", state.info().id.c_str(), where.c_str());
  if (tracker != nullptr) {
    std::printf("tracked at %s, experiment %s\n", tracker->tracking_uri().c_str(), p.name.c_str());
  }
  std::fflush(stdout);
  const int64_t t0 = SystemClock()->NowMillis();
  progress.Begin();
  Result<pipeline::BuildResult> result = pipeline::RunPipeline(p, *executor, hooks, options);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  progress.Finish();
  if (tracker != nullptr) {
    tracker->Finish(result.ok() && result->ok(), result.ok() && result->interrupted);
  }
  if (!result.ok()) {
    std::fprintf(stderr, "error: %s\n", result.status().message().c_str());
    return 1;
  }
  std::string summary;
  for (const auto& [s, n] : hooks.counts()) {
    summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + s;
  }
  std::printf("%s in %s%s\n", summary.c_str(),
              FormatSeconds(SystemClock()->NowMillis() - t0).c_str(),
              result->ok() ? ""
                           : ("; `cairn pipeline resume " + state.info().id.substr(0, 8) +
                              "` runs what did not complete")
                                 .c_str());
  if (result->interrupted) return 130;
  return result->ok() ? 0 : 1;
}

int Run(const PipelineFlags& flags) {
  if (flags.executor != "local" && flags.executor != "slurm") {
    std::fprintf(stderr, "error: --executor takes local or slurm, got %s\n",
                 flags.executor.c_str());
    return 2;
  }
  int exit_code = 0;
  std::optional<Loaded> loaded = LoadFromFlags(flags, &exit_code);
  if (!loaded) return exit_code;
  const Pipeline* p = &loaded->pipeline;
  const std::string& dir = loaded->dir;
  std::optional<pipeline::Budget> budget = BudgetOrExplain(*p, flags, flags.executor);
  if (!budget) return 2;
  pipeline::RunInfo info;
  info.id = RandomHex(16);
  info.name = p->name;
  info.spec_file = loaded->file;
  info.params = p->params;
  info.overrides = loaded->overrides;
  info.executor = flags.executor;
  info.no_cache = flags.no_cache;
  info.started_ms = SystemClock()->NowMillis();
  if (!flags.no_track) info.tracking_uri = client::ResolveTrackingUri(flags.tracking_uri);
  Result<std::unique_ptr<RunState>> state =
      RunState::Create(RunState::RootOf(dir), info, loaded->text);
  if (state.ok()) {
    if (Status locked = (*state)->LockRunner(); !locked.ok()) state = locked;
  }
  if (!state.ok()) {
    std::fprintf(stderr, "error: %s\n", state.status().message().c_str());
    return 1;
  }
  return Execute(*p, **state, flags, *budget, {}, dir);
}

int Resume(const PipelineFlags& flags) {
  const std::string dir = fs::absolute(flags.file).lexically_normal().parent_path().string();
  Result<std::unique_ptr<RunState>> state = RunState::Open(RunState::RootOf(dir), flags.run);
  if (!state.ok()) {
    std::fprintf(stderr, "error: %s\n", state.status().message().c_str());
    return state.status().code() == StatusCode::kNotFound ? 1 : 2;
  }
  // One runner at a time: a second would kill the first one's steps below.
  if (Status locked = (*state)->LockRunner(); !locked.ok()) {
    std::fprintf(stderr, "error: %s\n", locked.message().c_str());
    return 1;
  }
  Result<std::string> text = ReadFile((*state)->spec_path());
  if (!text.ok()) {
    std::fprintf(stderr, "error: %s\n", text.status().message().c_str());
    return 1;
  }
  const std::string run_dir = fs::path((*state)->info().spec_file).parent_path().string();
  std::optional<Pipeline> p =
      Load((*state)->info().spec_file, *text, (*state)->info().overrides, run_dir);
  if (!p) return 1;
  // Steps an earlier session left running (its runner killed) would race the new attempts.
  if (int killed = pipeline::KillLeftoverSteps((*state)->info().id); killed > 0) {
    std::printf("stopped %d step process group%s left running by the earlier session\n", killed,
                killed == 1 ? "" : "s");
  }
  if ((*state)->info().executor == "slurm") {
    Result<int> cancelled =
        pipeline::CancelLeftoverSlurmJobs(*pipeline::RealSlurmCommands(), (*state)->info().id);
    if (!cancelled.ok()) {
      std::fprintf(stderr, "warning: %s\n", cancelled.status().message().c_str());
    } else if (*cancelled > 0) {
      std::printf("cancelled %d Slurm job%s left by the earlier session\n", *cancelled,
                  *cancelled == 1 ? "" : "s");
    }
  }
  std::map<std::string, StepEvent> completed;
  for (auto& [step, e] : (*state)->Latest()) {
    if (e.state == "done" || e.state == "cached") completed[step] = e;
  }
  std::optional<pipeline::Budget> budget = BudgetOrExplain(*p, flags, (*state)->info().executor);
  if (!budget) return 2;
  return Execute(*p, **state, flags, *budget, std::move(completed), run_dir);
}

int Status_(const PipelineFlags& flags) {
  const std::string dir = fs::absolute(flags.file).lexically_normal().parent_path().string();
  Result<std::unique_ptr<RunState>> state = RunState::Open(RunState::RootOf(dir), flags.run);
  if (!state.ok()) {
    std::fprintf(stderr, "error: %s\n", state.status().message().c_str());
    return 1;
  }
  const pipeline::RunInfo& info = (*state)->info();
  std::printf("pipeline %s, run %s, started %s (%s)\n", info.name.c_str(), info.id.c_str(),
              FormatTime(info.started_ms).c_str(), info.executor.c_str());
  std::map<std::string, StepEvent> latest = (*state)->Latest();
  // In the order of the spec the run started with.
  std::vector<std::string> order;
  if (Result<std::string> text = ReadFile((*state)->spec_path()); text.ok()) {
    std::vector<std::string> problems;
    if (Result<pipeline::PipelineSpec> spec =
            pipeline::ParsePipelineSpec(*text, info.spec_file, &problems);
        spec.ok()) {
      Pipeline p = pipeline::ExpandPipeline(
          *spec, info.overrides, fs::path(info.spec_file).parent_path().string(),
          [](const std::string&, const std::string&) { return true; }, &problems);
      for (const pipeline::Step& s : p.steps) order.push_back(s.id);
    }
  }
  for (const auto& [step, e] : latest) {
    if (std::find(order.begin(), order.end(), step) == order.end()) order.push_back(step);
  }
  // Steps last seen started were interrupted, unless a runner still runs them.
  const pid_t runner = (*state)->Runner();
  int incomplete = 0;
  for (const std::string& step : order) {
    auto it = latest.find(step);
    std::string state_name = it == latest.end() ? "waiting" : it->second.state;
    if (state_name == "started" || state_name == "retrying") {
      state_name = runner != 0 ? (state_name == "started" ? "running" : "retrying")
                               : "interrupted";
    }
    if (state_name != "done" && state_name != "cached") ++incomplete;
    std::string detail = it == latest.end() ? "" : it->second.reason;
    if (it != latest.end() && !it->second.cached_from.empty() &&
        it->second.cached_from != info.id) {
      detail = "from run " + it->second.cached_from.substr(0, 8);
    }
    std::printf("  %-11s %-24s %s\n", state_name.c_str(), step.c_str(), detail.c_str());
  }
  if (runner != 0) {
    std::printf("running%s: %d of %zu steps not complete yet\n",
                runner > 0 ? (" (process " + std::to_string(runner) + ")").c_str() : "",
                incomplete, order.size());
  } else {
    std::printf("%s\n", incomplete == 0 ? "complete"
                                        : (std::to_string(incomplete) + " of " +
                                           std::to_string(order.size()) +
                                           " steps did not complete")
                                              .c_str());
  }
  return 0;
}

int Explain(const PipelineFlags& flags) {
  const std::string dir = fs::absolute(flags.file).lexically_normal().parent_path().string();
  const std::string root = RunState::RootOf(dir);
  Result<std::unique_ptr<RunState>> state = RunState::Open(root, flags.run);
  if (!state.ok()) {
    std::fprintf(stderr, "error: %s\n", state.status().message().c_str());
    return 1;
  }
  const pipeline::RunInfo& info = (*state)->info();
  std::map<std::string, StepEvent> latest = (*state)->Latest();
  auto event = latest.find(flags.step);
  if (event == latest.end()) {
    std::fprintf(stderr, "error: run %s has no step %s\n", info.id.substr(0, 8).c_str(),
                 flags.step.c_str());
    return 1;
  }
  Result<pipeline::KeyParts> now = pipeline::Session::ReadKeyParts(**state, flags.step);
  std::printf("step %s in run %s: %s", flags.step.c_str(), info.id.substr(0, 8).c_str(),
              event->second.state.c_str());
  if (!event->second.cached_from.empty() && event->second.cached_from != info.id) {
    std::printf(" (outputs of run %s)", event->second.cached_from.substr(0, 8).c_str());
  }
  std::printf("\n");
  if (!now.ok()) {
    std::printf("its cache key was not computed in this run (the step never became ready)\n");
    return 0;
  }
  std::printf("key %s\n", now->Key().c_str());
  // The step's previous run: the newest earlier run of this pipeline that computed its key.
  for (const pipeline::RunInfo& other : RunState::List(root)) {
    if (other.name != info.name || other.id == info.id || other.started_ms > info.started_ms) {
      continue;
    }
    Result<std::unique_ptr<RunState>> before = RunState::Open(root, other.id);
    if (!before.ok()) continue;
    Result<pipeline::KeyParts> then = pipeline::Session::ReadKeyParts(**before, flags.step);
    if (!then.ok()) continue;
    std::printf("compared with run %s (%s):\n", other.id.substr(0, 8).c_str(),
                FormatTime(other.started_ms).c_str());
    std::vector<std::string> changes = pipeline::ExplainChanges(*then, *now);
    if (changes.empty()) std::printf("  the same key: nothing the step depends on changed\n");
    for (const std::string& c : changes) std::printf("  %s\n", c.c_str());
    return 0;
  }
  std::printf("no earlier run of %s computed the key of %s\n", info.name.c_str(),
              flags.step.c_str());
  return 0;
}

int List(const PipelineFlags& flags) {
  const std::string dir = fs::absolute(flags.file).lexically_normal().parent_path().string();
  std::vector<pipeline::RunInfo> runs = pipeline::RunState::List(RunState::RootOf(dir));
  if (runs.empty()) {
    std::printf("no pipeline runs in %s\n", dir.c_str());
    return 0;
  }
  std::printf("%-10s %-19s %-16s %s\n", "RUN", "STARTED", "PIPELINE", "STEPS");
  for (const pipeline::RunInfo& info : runs) {
    Result<std::unique_ptr<RunState>> state = RunState::Open(RunState::RootOf(dir), info.id);
    std::map<std::string, int> counts;
    if (state.ok()) {
      const bool running = (*state)->Runner() != 0;
      for (const auto& [step, e] : (*state)->Latest()) {
        const bool stopped = e.state == "started" || e.state == "retrying";
        ++counts[!stopped ? e.state : running ? "running" : "interrupted"];
      }
    }
    std::string summary;
    for (const auto& [s, n] : counts) {
      summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + s;
    }
    std::printf("%-10s %-19s %-16s %s\n", info.id.substr(0, 8).c_str(),
                FormatTime(info.started_ms).c_str(), info.name.c_str(), summary.c_str());
  }
  return 0;
}

}  // namespace

void RegisterPipeline(CLI::App& app, Action* action) {
  CLI::App* group = app.add_subcommand(
      "pipeline",
      "Pipelines: a DAG of steps declared in pipeline.yaml (commands, inputs, outputs,\n"
      "parameters, resources, retries, timeouts), run in dependency order and in parallel\n"
      "within a budget, recorded so that a failed or interrupted run can be resumed. See\n"
      "docs/pipelines.md and docs/formats/pipeline.md.");
  group->require_subcommand(1);
  auto add = [&](const std::string& name, const std::string& help,
                 std::function<int(const PipelineFlags&)> run) {
    auto flags = std::make_shared<PipelineFlags>();
    CLI::App* cmd = group->add_subcommand(name, help);
    cmd->callback([flags, action, run] { *action = [flags, run] { return run(*flags); }; });
    return std::make_pair(cmd, flags);
  };
  auto spec_flags = [](CLI::App* cmd, PipelineFlags* f, bool positional) {
    if (positional) {
      cmd->add_option("file", f->file, "The pipeline spec (default: pipeline.yaml)");
    } else {
      cmd->add_option("-f,--file", f->file,
                      "The pipeline spec whose directory holds the runs (default: "
                      "pipeline.yaml)");
    }
  };
  auto budget_flags = [](CLI::App* cmd, PipelineFlags* f) {
    cmd->add_option("-j,--jobs", f->jobs, "Steps at once (default: the cpus)");
    cmd->add_option("--cpus", f->cpus, "Cpus the running steps may hold (default: this machine's)");
    cmd->add_option("--memory", f->memory,
                    "Memory the running steps may hold, e.g. 16G (default: this machine's)");
    cmd->add_option("--gpus", f->gpus,
                    "GPUs the running steps may hold (default: this machine's, from nvidia-smi)");
  };

  auto [validate, validate_flags] =
      add("validate",
          "Check a pipeline spec and name every problem at once: the shape of each field, unknown\n"
          "`needs`, cycles, inputs that no step writes and do not exist, two steps writing the\n"
          "same output, unknown parameters. Exits 1 when there are problems.",
          Validate);
  spec_flags(validate, validate_flags.get(), true);
  validate->add_option("-p,--param", validate_flags->params, "Override a parameter: name=value");

  auto [run, run_flags] =
      add("run",
          "Run a pipeline: steps in dependency order, in parallel where the budget allows,\n"
          "failed attempts retried after their backoff, steps past their timeout killed. Ctrl-C\n"
          "stops every step and records its state. Prints a line per step event and, on a\n"
          "terminal, a status line of the running steps. Exits 0 when every step completed.",
          Run);
  spec_flags(run, run_flags.get(), true);
  run->add_option("-p,--param", run_flags->params, "Override a parameter: name=value");
  run->add_option("--executor", run_flags->executor,
                  "Where steps run: local (default; child processes here) or slurm (each step "
                  "a batch job submitted with sbatch)");
  run->add_option("--sbatch-arg", run_flags->sbatch_args,
                  "An extra sbatch argument for every step, e.g. --sbatch-arg=--partition=gpu");
  budget_flags(run, run_flags.get());
  AddTrackingUriOption(run, &run_flags->tracking_uri);
  run->add_flag("--no-track", run_flags->no_track,
                "Do not record the run in a tracking server (the local record is kept)");
  run->add_flag("--no-cache", run_flags->no_cache,
                "Run every step even when the cache holds its outputs (they are stored anew)");

  auto [resume, resume_flags] =
      add("resume",
          "Run what a pipeline run did not complete (after a failure, Ctrl-C or the runner\n"
          "being killed), with the spec and parameters that run started with; completed steps\n"
          "are kept.",
          Resume);
  resume->add_option("run", resume_flags->run, "The run id (or a unique prefix)")->required();
  spec_flags(resume, resume_flags.get(), false);
  budget_flags(resume, resume_flags.get());
  resume->add_option("--sbatch-arg", resume_flags->sbatch_args,
                     "An extra sbatch argument for every step (with the slurm executor)");
  resume->add_flag("--no-cache", resume_flags->no_cache,
                   "Run every step that did not complete even when the cache holds its outputs "
                   "(a run started with --no-cache resumes that way anyway)");

  auto [explain, explain_flags] =
      add("explain",
          "Say why a step ran or was cached: its cache key in the run, and which parts of it\n"
          "(command, parameters, variables, outputs, each input, the code, the environment)\n"
          "differ from the step's previous run.",
          Explain);
  explain->add_option("run", explain_flags->run, "The run id (or a unique prefix)")->required();
  explain->add_option("step", explain_flags->step, "The step id")->required();
  spec_flags(explain, explain_flags.get(), false);

  auto [status, status_flags] =
      add("status", "Show each step's state in a pipeline run: done, cached, failed, skipped, ...",
          Status_);
  status->add_option("run", status_flags->run, "The run id (or a unique prefix)")->required();
  spec_flags(status, status_flags.get(), false);

  auto [ls, ls_flags] =
      add("ls", "List the runs of the pipelines in this directory, newest first.", List);
  spec_flags(ls, ls_flags.get(), false);
}

}  // namespace cairn::cli
