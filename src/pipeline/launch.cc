#include "pipeline/launch.h"

#include <cstdio>
#include <filesystem>

#include "pipeline/slurm_executor.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/hash.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;

}  // namespace

Result<std::map<std::string, std::string>> ParseOverrides(const std::vector<std::string>& params) {
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

std::string PipelineDir(const std::string& spec_file) {
  return fs::absolute(spec_file).lexically_normal().parent_path().string();
}

Result<LoadedPipeline> LoadPipeline(const std::string& source, const std::string& text,
                                    const std::map<std::string, std::string>& overrides,
                                    const std::string& dir) {
  LoadedPipeline out;
  CAIRN_ASSIGN_OR_RETURN(PipelineSpec spec, ParsePipelineSpec(text, source, &out.problems));
  out.pipeline = ExpandPipeline(spec, overrides, dir, PathExistsOnDisk, &out.problems);
  return out;
}

Result<std::unique_ptr<RunState>> CreateRun(const Pipeline& pipeline, RunInfo info,
                                            const std::string& spec_text) {
  const std::string dir = fs::path(info.spec_file).parent_path().string();
  info.id = RandomHex(16);
  info.name = pipeline.name;
  info.params = pipeline.params;
  info.started_ms = SystemClock()->NowMillis();
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<RunState> state,
                         RunState::Create(RunState::RootOf(dir), info, spec_text));
  CAIRN_RETURN_IF_ERROR(state->LockRunner());
  return state;
}

Result<std::string> HoldForResume(RunState& state) {
  CAIRN_RETURN_IF_ERROR(state.LockRunner());
  return ReadFile(state.spec_path());
}

Leftovers StopLeftovers(const RunInfo& run) {
  Leftovers out;
  out.killed = KillLeftoverSteps(run.id);
  if (run.executor == "slurm") {
    Result<int> cancelled = CancelLeftoverSlurmJobs(*RealSlurmCommands(), run.id);
    if (cancelled.ok()) {
      out.cancelled = *cancelled;
    } else {
      out.slurm_status = cancelled.status();
    }
  }
  return out;
}

std::map<std::string, StepEvent> CompletedSteps(const RunState& state) {
  std::map<std::string, StepEvent> completed;
  for (auto& [step, e] : state.Latest()) {
    if (e.state == "done" || e.state == "cached") completed[step] = e;
  }
  return completed;
}

Result<std::unique_ptr<Tracker>> StartTracker(const Pipeline& pipeline, const RunInfo& run,
                                              Progress& progress,
                                              const std::map<std::string, StepEvent>* resumed) {
  if (run.tracking_uri.empty()) return std::unique_ptr<Tracker>();
  return Tracker::Start(run.tracking_uri, pipeline, run, progress, resumed);
}

Runner::Runner(const Pipeline& pipeline, RunState& state, RunnerOptions options)
    : pipeline_(pipeline), state_(state), options_(std::move(options)) {}

Result<std::unique_ptr<Runner>> Runner::Create(const Pipeline& pipeline, RunState& state,
                                               RunnerOptions options, Progress& progress) {
  std::unique_ptr<Runner> runner(new Runner(pipeline, state, std::move(options)));
  if (state.info().executor == "slurm") {
    SlurmOptions slurm;
    slurm.sbatch_args = runner->options_.sbatch_args;
    runner->executor_ = NewSlurmExecutor(RealSlurmCommands(), slurm);
  } else {
    runner->executor_ = NewLocalExecutor();
  }
  SessionOptions session;
  session.tracker = runner->options_.tracker;
  session.data = runner->options_.data;
  session.workdir = runner->options_.cwd;
  session.use_cache = !runner->options_.no_cache && !state.info().no_cache;
  session.completed = runner->options_.completed;
  session.upload_outputs = runner->options_.upload_outputs;
  CAIRN_ASSIGN_OR_RETURN(runner->session_,
                         Session::Create(pipeline, state, std::move(session), progress));
  return runner;
}

std::string Runner::Where() const {
  const Budget& budget = options_.budget;
  std::string where = executor_->name() + ", " + std::to_string(budget.jobs) + " job" +
                      (budget.jobs == 1 ? "" : "s");
  if (state_.info().executor != "slurm") {
    char cpus[32];
    std::snprintf(cpus, sizeof cpus, "%g", budget.cpus);
    where += std::string(", ") + cpus + " cpus";
  }
  return where;
}

Result<BuildResult> Runner::Run() {
  BuildOptions options;
  options.budget = options_.budget;
  options.cwd = options_.cwd;
  options.log_dir = state_.log_dir();
  options.interrupted = options_.interrupted;
  return RunPipeline(pipeline_, *executor_, *session_, options);
}

}  // namespace cairn::pipeline
