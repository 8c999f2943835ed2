#include "pipeline/run_history.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "pipeline/session.h"
#include "pipeline/spec.h"
#include "util/file.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;

bool InFlight(const std::string& recorded) {
  return recorded == "started" || recorded == "retrying";
}

// The step ids of the spec a run started with, in dependency order; empty when it cannot be
// read. Inputs are taken to exist: the project may have changed since.
std::vector<std::string> StepOrder(const RunState& state) {
  std::vector<std::string> order;
  Result<std::string> text = ReadFile(state.spec_path());
  if (!text.ok()) return order;
  const RunInfo& info = state.info();
  std::vector<std::string> problems;
  Result<PipelineSpec> spec = ParsePipelineSpec(*text, info.spec_file, &problems);
  if (!spec.ok()) return order;
  Pipeline p = ExpandPipeline(
      *spec, info.overrides, fs::path(info.spec_file).parent_path().string(),
      [](const std::string&, const std::string&) { return true; }, &problems);
  for (const Step& s : p.steps) order.push_back(s.id);
  return order;
}

}  // namespace

std::string ShownState(const std::string& recorded, bool has_runner) {
  if (!InFlight(recorded)) return recorded;
  if (!has_runner) return "interrupted";
  return recorded == "started" ? "running" : recorded;
}

Result<RunStatus> ReadRunStatus(const std::string& root, const std::string& id_or_prefix) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<RunState> state, RunState::Open(root, id_or_prefix));
  RunStatus out;
  out.info = state->info();
  out.runner = state->Runner();
  const std::map<std::string, StepEvent> latest = state->Latest();
  std::vector<std::string> order = StepOrder(*state);
  for (const auto& [step, e] : latest) {
    if (std::find(order.begin(), order.end(), step) == order.end()) order.push_back(step);
  }
  for (const std::string& step : order) {
    StepStatus s;
    s.step = step;
    auto it = latest.find(step);
    s.state = it == latest.end() ? "waiting" : ShownState(it->second.state, out.runner != 0);
    if (s.state != "done" && s.state != "cached") ++out.incomplete;
    if (it != latest.end()) {
      s.detail = it->second.reason;
      if (!it->second.cached_from.empty() && it->second.cached_from != out.info.id) {
        s.detail = "from run " + it->second.cached_from.substr(0, 8);
      }
    }
    out.steps.push_back(std::move(s));
  }
  return out;
}

std::vector<RunSummary> SummariseRuns(const std::string& root) {
  std::vector<RunSummary> out;
  for (const RunInfo& info : RunState::List(root)) {
    RunSummary summary;
    summary.info = info;
    if (Result<std::unique_ptr<RunState>> state = RunState::Open(root, info.id); state.ok()) {
      const bool running = (*state)->Runner() != 0;
      for (const auto& [step, e] : (*state)->Latest()) {
        ++summary.counts[InFlight(e.state) && running ? "running" : ShownState(e.state, running)];
      }
    }
    out.push_back(std::move(summary));
  }
  return out;
}

Result<StepExplanation> ExplainStep(const std::string& root, const std::string& id_or_prefix,
                                    const std::string& step) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<RunState> state, RunState::Open(root, id_or_prefix));
  StepExplanation out;
  out.run = state->info();
  const std::map<std::string, StepEvent> latest = state->Latest();
  auto event = latest.find(step);
  if (event == latest.end()) {
    return NotFound("run " + out.run.id.substr(0, 8) + " has no step " + step);
  }
  out.event = event->second;
  Result<KeyParts> now = Session::ReadKeyParts(*state, step);
  if (!now.ok()) return out;
  out.key = *now;
  for (const RunInfo& other : RunState::List(root)) {
    if (other.name != out.run.name || other.id == out.run.id ||
        other.started_ms > out.run.started_ms) {
      continue;
    }
    Result<std::unique_ptr<RunState>> before = RunState::Open(root, other.id);
    if (!before.ok()) continue;
    Result<KeyParts> then = Session::ReadKeyParts(**before, step);
    if (!then.ok()) continue;
    out.previous = other;
    out.changes = ExplainChanges(*then, *now);
    break;
  }
  return out;
}

}  // namespace cairn::pipeline
