// `cairn pipeline validate|run|resume|explain|status|ls|gc`: flags, one call into the pipeline
// layer (pipeline/launch.h, run_history.h, budget.h, cache_gc.h) and what it prints. See
// docs/pipelines.md.
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "client/tracking_client.h"
#include "data/server_data_source.h"
#include "pipeline/approval.h"
#include "pipeline/budget.h"
#include "pipeline/cache_gc.h"
#include "pipeline/executor.h"
#include "pipeline/launch.h"
#include "pipeline/run_history.h"
#include "pipeline/run_state.h"
#include "pipeline/session.h"
#include "report/progress_line.h"
#include "report/run_report.h"
#include "util/clock.h"
#include "util/file.h"

namespace cairn::cli {
namespace {

using pipeline::Pipeline;
using pipeline::RunState;
using pipeline::StepEvent;

struct PipelineFlags {
  std::string file = "pipeline.yaml";
  std::vector<std::string> params;  // k=v
  pipeline::BudgetRequest budget;   // -j, --cpus, --memory, --gpus
  std::string executor = "local";
  std::vector<std::string> sbatch_args;  // --sbatch-arg
  bool no_cache = false;
  bool no_track = false;
  std::string upload_outputs = "small";
  bool reject = false;  // approve
  std::string comment;  // approve
  std::string tracking_uri;
  std::string run;   // status, resume, explain
  std::string step;  // explain
  std::string max_age = "30d";  // gc
  std::string max_size;         // gc
  bool dry_run = false;         // gc
};

std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) { g_interrupted = true; }

int Error(const Status& status, int exit_code) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return exit_code;
}

std::string Plural(size_t n) { return n == 1 ? "" : "s"; }

// "2 done, 1 cached": counts by state.
std::string CountsText(const std::map<std::string, int>& counts) {
  std::string out;
  for (const auto& [s, n] : counts) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + s;
  return out;
}

// Reads and expands a spec; prints the problems and returns nullopt when there are any.
std::optional<Pipeline> Load(const std::string& file, const std::string& text,
                             const std::map<std::string, std::string>& overrides,
                             const std::string& dir) {
  Result<pipeline::LoadedPipeline> loaded = pipeline::LoadPipeline(file, text, overrides, dir);
  if (!loaded.ok()) {
    Error(loaded.status(), 1);
    return std::nullopt;
  }
  if (const std::vector<std::string>& problems = loaded->problems; !problems.empty()) {
    std::fprintf(stderr, "%s: %zu problem%s:\n", file.c_str(), problems.size(),
                 Plural(problems.size()).c_str());
    for (const std::string& p : problems) std::fprintf(stderr, "  %s\n", p.c_str());
    return std::nullopt;
  }
  return std::move(loaded->pipeline);
}

// The spec named by the flags, read, with -p applied and checked; nullopt after saying what
// is wrong, with the exit code in `exit_code` (2 for the command line, 1 for the spec).
struct Loaded {
  std::string text;
  std::map<std::string, std::string> overrides;
  Pipeline pipeline;
};
std::optional<Loaded> LoadFromFlags(const PipelineFlags& flags, int* exit_code) {
  Result<std::string> text = ReadFile(flags.file);
  Result<std::map<std::string, std::string>> overrides = pipeline::ParseOverrides(flags.params);
  for (const Status& s : {text.status(), overrides.status()}) {
    if (!s.ok()) {
      *exit_code = Error(s, 2);
      return std::nullopt;
    }
  }
  std::optional<Pipeline> p =
      Load(flags.file, *text, *overrides, pipeline::PipelineDir(flags.file));
  if (!p) {
    *exit_code = 1;
    return std::nullopt;
  }
  return Loaded{*text, *overrides, std::move(*p)};
}

int Validate(const PipelineFlags& flags) {
  int exit_code = 0;
  std::optional<Loaded> loaded = LoadFromFlags(flags, &exit_code);
  if (!loaded) return exit_code;
  const Pipeline& p = loaded->pipeline;
  std::printf("%s: pipeline %s, %zu step%s, no problems\n", flags.file.c_str(), p.name.c_str(),
              p.steps.size(), Plural(p.steps.size()).c_str());
  for (const pipeline::Step& s : p.steps) {
    std::string needs;
    for (size_t d : s.deps) needs += (needs.empty() ? "" : ", ") + p.steps[d].id;
    std::printf("  %-20s %s%s\n", s.id.c_str(), s.command.c_str(),
                needs.empty() ? "" : ("   (after " + needs + ")").c_str());
  }
  return 0;
}

// The progress line on this process's terminal.
class TerminalProgress : public pipeline::Progress {
 public:
  explicit TerminalProgress(size_t steps) : line(steps, report::ProgressLine::ForStdout()) {}
  void Event(const std::string& what, const std::string& step, const std::string& detail) override {
    line.Event(what, step, detail);
  }
  void FailedLog(const std::string&, const std::string& path) override { line.FailedLog(path); }
  void Warning(const std::string& text) override { line.Warning(text); }
  void Note(const std::string& text) override { line.Note(text); }
  void Tick() override { line.Tick(); }
  report::ProgressLine line;
};

// The budget steps run within, or nullopt after saying why there is none.
std::optional<pipeline::Budget> SizeBudget(const Pipeline& p, const PipelineFlags& flags,
                                           const std::string& executor) {
  Result<pipeline::Budget> budget =
      pipeline::SizeBudget(p, flags.budget, executor, pipeline::ThisMachine());
  if (!budget.ok()) {
    Error(budget.status(), 2);
    return std::nullopt;
  }
  return *budget;
}

// Runs the pipeline: a new run, or a resume (`completed` set: the steps it keeps).
int Execute(const Pipeline& p, RunState& state, const PipelineFlags& flags,
            const pipeline::Budget& budget,
            std::optional<std::map<std::string, StepEvent>> completed, const std::string& cwd) {
  // Checked by Run and Resume before anything is recorded.
  Result<pipeline::UploadOutputs> upload = pipeline::ParseUploadOutputs(flags.upload_outputs);
  if (!upload.ok()) return Error(upload.status(), 2);
  TerminalProgress progress(p.steps.size());
  // A resume's tracker: the steps kept, and those that waited for approval, carry their runs.
  std::optional<std::map<std::string, StepEvent>> resumed = completed;
  if (resumed) {
    for (const auto& [step, e] : state.Latest()) {
      if (e.state == "waiting") resumed->emplace(step, e);
    }
  }
  Result<std::unique_ptr<pipeline::Tracker>> tracker =
      pipeline::StartTracker(p, state.info(), progress, resumed ? &*resumed : nullptr);
  if (!tracker.ok()) return Error(tracker.status(), 2);
  if (*tracker == nullptr &&
      std::any_of(p.steps.begin(), p.steps.end(),
                  [](const pipeline::Step& s) { return s.registration.has_value(); })) {
    progress.Warning("this run is not tracked: steps with `register` register nothing");
  }
  // Datasets come from the run's tracking server, or the one the flags name.
  data::ServerDataSource data(!state.info().tracking_uri.empty()
                                  ? state.info().tracking_uri
                                  : client::ResolveTrackingUri(flags.tracking_uri));
  pipeline::RunnerOptions options{
      .budget = budget,
      .cwd = cwd,
      .sbatch_args = flags.sbatch_args,
      .no_cache = flags.no_cache,
      .completed = completed.value_or(std::map<std::string, StepEvent>{}),
      .tracker = tracker->get(),
      .upload_outputs = *upload,
      .data = &data,
      .interrupted = &g_interrupted};
  Result<std::unique_ptr<pipeline::Runner>> runner =
      pipeline::Runner::Create(p, state, std::move(options), progress);
  if (!runner.ok()) return Error(runner.status(), 1);
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  std::printf("pipeline %s: %zu step%s, run %s (%s)\n", p.name.c_str(), p.steps.size(),
              Plural(p.steps.size()).c_str(), state.info().id.c_str(), (*runner)->Where().c_str());
  if (*tracker != nullptr) {
    std::printf("tracked at %s, experiment %s\n", (*tracker)->tracking_uri().c_str(),
                p.name.c_str());
  }
  std::fflush(stdout);
  const int64_t t0 = SystemClock()->NowMillis();
  progress.line.Begin();
  Result<pipeline::BuildResult> result = (*runner)->Run();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  progress.line.Finish();
  if (*tracker != nullptr) {
    (*tracker)->Finish(result.ok() && result->ok(), result.ok() && result->interrupted);
    if (const client::BlobTotals out = (*tracker)->OutputTotals(); out.files > 0) {
      std::printf(
          "outputs: %zu file%s recorded as artifacts, %zu sent (%s), %zu already on the "
          "server\n",
          out.files, Plural(out.files).c_str(), out.sent,
          report::FormatSize(out.sent_bytes).c_str(), out.files - out.sent);
    }
  }
  if (!result.ok()) return Error(result.status(), 1);
  std::printf("%s in %s%s\n", CountsText((*runner)->counts()).c_str(),
              report::FormatElapsed(SystemClock()->NowMillis() - t0).c_str(),
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
  if (Result<pipeline::UploadOutputs> u = pipeline::ParseUploadOutputs(flags.upload_outputs);
      !u.ok()) {
    return Error(u.status(), 2);
  }
  int exit_code = 0;
  std::optional<Loaded> loaded = LoadFromFlags(flags, &exit_code);
  if (!loaded) return exit_code;
  const Pipeline& p = loaded->pipeline;
  std::optional<pipeline::Budget> budget = SizeBudget(p, flags, flags.executor);
  if (!budget) return 2;
  pipeline::RunInfo info;
  info.spec_file = std::filesystem::absolute(flags.file).lexically_normal().string();
  info.overrides = loaded->overrides;
  info.executor = flags.executor;
  info.no_cache = flags.no_cache;
  if (!flags.no_track) info.tracking_uri = client::ResolveTrackingUri(flags.tracking_uri);
  Result<std::unique_ptr<RunState>> state = pipeline::CreateRun(p, info, loaded->text);
  if (!state.ok()) return Error(state.status(), 1);
  return Execute(p, **state, flags, *budget, std::nullopt, pipeline::PipelineDir(flags.file));
}

int Resume(const PipelineFlags& flags) {
  if (Result<pipeline::UploadOutputs> u = pipeline::ParseUploadOutputs(flags.upload_outputs);
      !u.ok()) {
    return Error(u.status(), 2);
  }
  const std::string root = RunState::RootOf(pipeline::PipelineDir(flags.file));
  Result<std::unique_ptr<RunState>> state = RunState::Open(root, flags.run);
  if (!state.ok())
    return Error(state.status(), state.status().code() == StatusCode::kNotFound ? 1 : 2);
  Result<std::string> text = pipeline::HoldForResume(**state);
  if (!text.ok()) return Error(text.status(), 1);
  const pipeline::RunInfo& info = (*state)->info();
  const std::string run_dir = pipeline::PipelineDir(info.spec_file);
  std::optional<Pipeline> p = Load(info.spec_file, *text, info.overrides, run_dir);
  if (!p) return 1;
  const pipeline::Leftovers left = pipeline::StopLeftovers(info);
  if (left.killed > 0) {
    std::printf("stopped %d step process group%s left running by the earlier session\n",
                left.killed, Plural(left.killed).c_str());
  }
  if (!left.slurm_status.ok()) {
    std::fprintf(stderr, "warning: %s\n", left.slurm_status.message().c_str());
  } else if (left.cancelled > 0) {
    std::printf("cancelled %d Slurm job%s left by the earlier session\n", left.cancelled,
                Plural(left.cancelled).c_str());
  }
  std::optional<pipeline::Budget> budget = SizeBudget(*p, flags, info.executor);
  if (!budget) return 2;
  return Execute(*p, **state, flags, *budget, pipeline::CompletedSteps(**state), run_dir);
}

// This machine's name for the user running the command.
std::string LocalUserName() {
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') return user;
  if (const struct passwd* pw = getpwuid(getuid()); pw != nullptr) return pw->pw_name;
  return "";
}

// Decides on a step waiting for approval: through the tracking server for a tracked run (or a
// run of another machine, named by its full id), else in the run's directory.
int Approve(const PipelineFlags& flags) {
  const std::string root = RunState::RootOf(pipeline::PipelineDir(flags.file));
  Result<std::unique_ptr<RunState>> state = RunState::Open(root, flags.run);
  const pipeline::ApprovalDecision decision{!flags.reject, LocalUserName(), flags.comment,
                                            SystemClock()->NowMillis()};
  const std::string verb = flags.reject ? "rejected" : "approved";
  if (state.ok()) {
    const auto latest = (*state)->Latest();
    auto it = latest.find(flags.step);
    if (it == latest.end() || it->second.state != "waiting") {
      return Error(
          FailedPrecondition("step " + flags.step + " of run " + (*state)->info().id.substr(0, 8) +
                             " does not wait for approval" +
                             (it == latest.end() ? "" : " (it is " + it->second.state + ")")),
          1);
    }
    if ((*state)->info().tracking_uri.empty()) {
      Status s = pipeline::WriteLocalDecision((*state)->info().dir, flags.step, decision);
      if (!s.ok()) return Error(s, 1);
      std::printf("%s step %s of run %s\n", verb.c_str(), flags.step.c_str(),
                  (*state)->info().id.substr(0, 8).c_str());
      return 0;
    }
  } else if (state.status().code() != StatusCode::kNotFound) {
    return Error(state.status(), 2);
  }
  // The run's server: the one it was started against, or for a run of another machine the
  // one the flags name.
  const std::string run_id = state.ok() ? (*state)->info().id : flags.run;
  std::unique_ptr<client::TrackingClient> client =
      ConnectOrExplain(state.ok() ? (*state)->info().tracking_uri : flags.tracking_uri);
  if (client == nullptr) return 2;
  Result<core::Run> parent = client->GetRun(run_id);
  if (!parent.ok()) return Error(parent.status(), 1);
  client::TrackingClient::RunSearch search;
  search.experiment_ids = {parent->info.experiment_id};
  search.filter = "tags.`cairn.pipeline.run` = '" + run_id + "' and tags.`cairn.step.id` = '" +
                  flags.step + "'";
  search.order_by = {"attributes.start_time DESC"};
  search.max_results = 1;
  Result<client::TrackingClient::RunPage> found = client->SearchRuns(search);
  if (!found.ok()) return Error(found.status(), 1);
  if (found->runs.empty()) {
    return Error(NotFound("run " + run_id + " has no step " + flags.step), 1);
  }
  const std::string step_run = found->runs.front().info.run_id;
  nlohmann::json body = {{"run_id", step_run},
                         {"decision", flags.reject ? "reject" : "approve"},
                         {"comment", flags.comment},
                         {"user", decision.by}};
  Result<std::string> answer = client->CallJson("POST", "/api/cairn/v1/runs/approval", body.dump());
  if (!answer.ok()) return Error(answer.status(), 1);
  std::printf("%s step %s of run %s (its run %s)\n", verb.c_str(), flags.step.c_str(),
              run_id.substr(0, 8).c_str(), step_run.substr(0, 8).c_str());
  return 0;
}

int Status_(const PipelineFlags& flags) {
  const std::string root = RunState::RootOf(pipeline::PipelineDir(flags.file));
  Result<pipeline::RunStatus> status = pipeline::ReadRunStatus(root, flags.run);
  if (!status.ok()) return Error(status.status(), 1);
  const pipeline::RunInfo& info = status->info;
  std::printf("pipeline %s, run %s, started %s (%s)\n", info.name.c_str(), info.id.c_str(),
              report::FormatFullTime(info.started_ms).c_str(), info.executor.c_str());
  for (const pipeline::StepStatus& s : status->steps) {
    std::printf("  %-11s %-24s %s\n", s.state.c_str(), s.step.c_str(), s.detail.c_str());
  }
  const std::string steps = std::to_string(status->steps.size());
  if (status->runner != 0) {
    std::printf(
        "running%s: %d of %s steps not complete yet\n",
        status->runner > 0 ? (" (process " + std::to_string(status->runner) + ")").c_str() : "",
        status->incomplete, steps.c_str());
  } else if (status->incomplete == 0) {
    std::printf("complete\n");
  } else {
    std::printf("%d of %s steps did not complete\n", status->incomplete, steps.c_str());
  }
  return 0;
}

int Explain(const PipelineFlags& flags) {
  const std::string root = RunState::RootOf(pipeline::PipelineDir(flags.file));
  Result<pipeline::StepExplanation> e = pipeline::ExplainStep(root, flags.run, flags.step);
  if (!e.ok()) return Error(e.status(), 1);
  std::printf("step %s in run %s: %s", flags.step.c_str(), e->run.id.substr(0, 8).c_str(),
              e->event.state.c_str());
  if (!e->event.cached_from.empty() && e->event.cached_from != e->run.id) {
    std::printf(" (outputs of run %s)", e->event.cached_from.substr(0, 8).c_str());
  }
  std::printf("\n");
  if (!e->key) {
    std::printf("its cache key was not computed in this run (the step never became ready)\n");
    return 0;
  }
  std::printf("key %s\n", e->key->Key().c_str());
  if (!e->previous) {
    std::printf("no earlier run of %s computed the key of %s\n", e->run.name.c_str(),
                flags.step.c_str());
    return 0;
  }
  std::printf("compared with run %s (%s):\n", e->previous->id.substr(0, 8).c_str(),
              report::FormatFullTime(e->previous->started_ms).c_str());
  if (e->changes.empty()) std::printf("  the same key: nothing the step depends on changed\n");
  for (const std::string& c : e->changes) std::printf("  %s\n", c.c_str());
  return 0;
}

int List(const PipelineFlags& flags) {
  const std::string dir = pipeline::PipelineDir(flags.file);
  std::vector<pipeline::RunSummary> runs = pipeline::SummariseRuns(RunState::RootOf(dir));
  if (runs.empty()) {
    std::printf("no pipeline runs in %s\n", dir.c_str());
    return 0;
  }
  std::printf("%-10s %-19s %-16s %s\n", "RUN", "STARTED", "PIPELINE", "STEPS");
  for (const pipeline::RunSummary& run : runs) {
    std::printf("%-10s %-19s %-16s %s\n", run.info.id.substr(0, 8).c_str(),
                report::FormatFullTime(run.info.started_ms).c_str(), run.info.name.c_str(),
                CountsText(run.counts).c_str());
  }
  return 0;
}

int Gc(const PipelineFlags& flags) {
  pipeline::CacheGcOptions options;
  options.dry_run = flags.dry_run;
  Result<int64_t> age = ParseMaxAge(flags.max_age);
  if (!age.ok()) return Error(age.status(), 2);
  options.max_age_ms = *age;
  if (!flags.max_size.empty()) {
    Result<int64_t> mib = pipeline::ParseMemory(flags.max_size);
    if (!mib.ok()) return Error(InvalidArgument("--max-size: " + mib.status().message()), 2);
    options.max_bytes = *mib * 1024 * 1024;
  }
  const char* verb = flags.dry_run ? "would remove" : "removing";
  options.on_remove = [verb](const std::string& step, const std::string& run, int64_t used) {
    std::printf("%s step %s of run %s (last used %s)\n", verb, step.c_str(),
                run.substr(0, 8).c_str(), report::FormatFullTime(used).c_str());
  };
  const std::string root = pipeline::StepCache::DefaultRoot();
  Result<pipeline::CacheGcReport> report = pipeline::CollectStepCache(root, options);
  if (!report.ok()) return Error(report.status(), 1);
  std::printf("%s: %lld entr%s %s, %lld kept (%s); %lld object%s %s, %s %s\n", root.c_str(),
              static_cast<long long>(report->entries_removed),
              report->entries_removed == 1 ? "y" : "ies", flags.dry_run ? "to remove" : "removed",
              static_cast<long long>(report->entries_kept),
              report::FormatSize(report->bytes_kept).c_str(),
              static_cast<long long>(report->objects_removed),
              Plural(report->objects_removed).c_str(), flags.dry_run ? "to remove" : "removed",
              report::FormatSize(report->bytes_freed).c_str(), flags.dry_run ? "to free" : "freed");
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
    cmd->add_option("-j,--jobs", f->budget.jobs, "Steps at once (default: the cpus)");
    cmd->add_option("--cpus", f->budget.cpus,
                    "Cpus the running steps may hold (default: this machine's)");
    cmd->add_option("--memory", f->budget.memory,
                    "Memory the running steps may hold, e.g. 16G (default: this machine's)");
    cmd->add_option("--gpus", f->budget.gpus,
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
  const char* upload_help =
      "Which output files of the steps that run are recorded as their runs' artifacts (sent "
      "to the server unless it has them): never, small (the default: files up to 100 MiB) or "
      "always";
  run->add_option("--upload-outputs", run_flags->upload_outputs, upload_help);

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
  resume->add_option("--upload-outputs", resume_flags->upload_outputs, upload_help);

  auto [explain, explain_flags] =
      add("explain",
          "Say why a step ran or was cached: its cache key in the run, and which parts of it\n"
          "(command, parameters, variables, outputs, each input, the code, the environment)\n"
          "differ from the step's previous run.",
          Explain);
  explain->add_option("run", explain_flags->run, "The run id (or a unique prefix)")->required();
  explain->add_option("step", explain_flags->step, "The step id")->required();
  spec_flags(explain, explain_flags.get(), false);

  auto [approve, approve_flags] =
      add("approve",
          "Approve (or with --reject, reject) a step that waits for approval (`approve: {by:\n"
          "NAME}` in its spec). The decision goes to the run's tracking server, which checks\n"
          "that you are NAME or a member of the team NAME and records it in the audit log; a\n"
          "run that is not tracked is decided in its directory. A rejected step fails.",
          Approve);
  approve
      ->add_option("run", approve_flags->run,
                   "The run id (or a unique prefix of a run in this directory)")
      ->required();
  approve->add_option("step", approve_flags->step, "The step id")->required();
  approve->add_flag("--reject", approve_flags->reject, "Reject the step: it fails");
  approve->add_option("-m,--comment", approve_flags->comment, "Why, for the record");
  spec_flags(approve, approve_flags.get(), false);
  AddTrackingUriOption(approve, &approve_flags->tracking_uri);

  auto [status, status_flags] =
      add("status", "Show each step's state in a pipeline run: done, cached, failed, skipped, ...",
          Status_);
  status->add_option("run", status_flags->run, "The run id (or a unique prefix)")->required();
  spec_flags(status, status_flags.get(), false);

  auto [ls, ls_flags] =
      add("ls", "List the runs of the pipelines in this directory, newest first.", List);
  spec_flags(ls, ls_flags.get(), false);

  auto [gc, gc_flags] =
      add("gc",
          "Shrink this machine's step cache ($CAIRN_CACHE_DIR, else ~/.cache/cairn): remove the\n"
          "entries not used for --max-age, then the least recently used ones while the rest\n"
          "hold more than --max-size, then the stored outputs no entry names. Entries used and\n"
          "outputs stored in the last hour stay, so a pipeline running meanwhile loses nothing.",
          Gc);
  gc->add_option("--max-age", gc_flags->max_age,
                 "Remove entries not used for this long: 30d (default), 12h, ...; 0 for no limit");
  gc->add_option("--max-size", gc_flags->max_size,
                 "Keep the cache's outputs under this size, e.g. 50G (default: no limit)");
  gc->add_flag("--dry-run", gc_flags->dry_run, "Only say what would be removed");
}

}  // namespace cairn::cli
