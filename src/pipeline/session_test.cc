// A Session around the Builder, on a fake executor whose steps "run" by writing their declared
// outputs: what a user of `cairn pipeline run` and `resume` sees of the cache, the run's record,
// retries, the tracking store and the project's environment.
#include "pipeline/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "env/project_env.h"
#include "fakes/fake_executor.h"
#include "fakes/fake_tracking_sink.h"
#include "fakes/shell.h"
#include "fakes/temp_dir.h"
#include "pipeline/launch.h"
#include "pipeline/run_state.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;
using ::testing::SizeIs;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

using Script = std::map<std::string, std::vector<fakes::FakeExecutor::Attempt>>;

// A step's command writes each of its outputs as its id around the bytes of its inputs, so an
// output changes when, and only when, what the step read does. Each attempt appends a line to
// its log.
class WritingExecutor : public fakes::FakeExecutor {
 public:
  explicit WritingExecutor(const Pipeline& pipeline) : pipeline_(pipeline) {}

  std::set<std::string> writes_nothing;  // steps that exit without writing their outputs
  std::map<std::string, std::map<std::string, std::string>> env;  // step id -> its variables

  Status Start(const StepJob& job) override {
    env[job.id] = job.env;
    std::ofstream(job.log_path, std::ios::app) << job.id << " attempt " << job.attempt << "\n";
    const Step& step = pipeline_.steps[job.step];
    if (writes_nothing.count(job.id) == 0) {
      std::string read;
      for (const std::string& input : step.inputs) read += fakes::Slurp(fs::path(job.cwd) / input);
      for (const std::string& output : step.outputs) {
        std::ofstream(fs::path(job.cwd) / output) << job.id << "(" << read << ")";
      }
    }
    return FakeExecutor::Start(job);
  }

 private:
  const Pipeline& pipeline_;
};

class RecordingProgress : public Progress {
 public:
  void Event(const std::string& what, const std::string& step, const std::string& detail) override {
    events.push_back(what + " " + step + (detail.empty() ? "" : ": " + detail));
  }
  void FailedLog(const std::string& step, const std::string& log_path) override {
    failed_logs.push_back(log_path);
  }
  void Warning(const std::string& text) override { warnings.push_back(text); }

  std::vector<std::string> events;
  std::vector<std::string> failed_logs;
  std::vector<std::string> warnings;
};

// How one session goes: what its steps do, and the SessionOptions that differ from a plain run.
struct Scenario {
  Script script{};
  std::set<std::string> writes_nothing{};
  bool use_cache = true;
  std::map<std::string, StepEvent> completed{};
  Tracker* tracker = nullptr;
  UploadOutputs upload_outputs = UploadOutputs::kSmall;
  int64_t small_output_bytes = kSmallOutputBytes;
};

struct SessionOutcome {
  BuildResult result;
  std::vector<std::string> started;  // "id#attempt", in the order they started
  std::map<std::string, std::map<std::string, std::string>> env;
  std::map<std::string, int> counts;
  std::vector<std::string> events;  // the run's record: "id state" (or "id state#attempt")
  std::map<std::string, StepEvent> latest;
  RecordingProgress progress;
};

class SessionTest : public ::testing::Test {
 protected:
  SessionTest() { fs::create_directories(work_); }

  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((work_ / rel).parent_path());
    std::ofstream(work_ / rel) << text;
  }
  std::string Read(const std::string& rel) { return fakes::Slurp(work_ / rel); }
  std::string RunsRoot() const { return RunState::RootOf(work_.string()); }
  std::unique_ptr<RunState> Reopen(const std::string& id) {
    Result<std::unique_ptr<RunState>> state = RunState::Open(RunsRoot(), id);
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? std::move(*state) : nullptr;
  }

  Pipeline Load(const std::string& yaml, const std::map<std::string, std::string>& overrides = {}) {
    Result<LoadedPipeline> loaded = LoadPipeline("pipeline.yaml", yaml, overrides, work_.string());
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    if (!loaded.ok()) return {};
    EXPECT_THAT(loaded->problems, IsEmpty());
    return loaded->pipeline;
  }

  std::unique_ptr<RunState> NewRun(const Pipeline& pipeline, const std::string& id) {
    RunInfo info;
    info.id = id;
    info.name = pipeline.name;
    info.spec_file = (work_ / "pipeline.yaml").string();
    info.executor = "fake";
    Result<std::unique_ptr<RunState>> state = RunState::Create(RunsRoot(), info, "");
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? std::move(*state) : nullptr;
  }

  // One session of the run `state` to its end; the session is gone (its cache entries written)
  // when this returns.
  std::unique_ptr<SessionOutcome> Drive(const Pipeline& pipeline, RunState& state,
                                 Scenario scenario = {}) {
    auto out = std::make_unique<SessionOutcome>();
    WritingExecutor executor(pipeline);
    executor.script = scenario.script;
    executor.writes_nothing = scenario.writes_nothing;
    {
      SessionOptions options;
      options.workdir = work_.string();
      options.use_cache = scenario.use_cache;
      options.cache_root = (dir_ / "cache").string();
      options.completed = scenario.completed;
      options.upload_outputs = scenario.upload_outputs;
      options.small_output_bytes = scenario.small_output_bytes;
      options.tracker = scenario.tracker;
      Result<std::unique_ptr<Session>> session =
          Session::Create(pipeline, state, std::move(options), out->progress);
      EXPECT_TRUE(session.ok()) << session.status().ToString();
      if (!session.ok()) return out;
      BuildOptions build;
      build.budget = {2, 2, 0, 0};
      build.cwd = work_.string();
      build.log_dir = state.log_dir();
      Result<BuildResult> result = RunPipeline(pipeline, executor, **session, build);
      EXPECT_TRUE(result.ok()) << result.status().ToString();
      if (result.ok()) out->result = *result;
      out->counts = (*session)->counts();
    }
    for (const auto& s : executor.starts) {
      out->started.push_back(s.id + "#" + std::to_string(s.attempt));
    }
    out->env = executor.env;
    for (const StepEvent& e : state.Events()) {
      const bool per_attempt = e.state == "started" || e.state == "retrying";
      out->events.push_back(e.step + " " + e.state +
                            (per_attempt ? "#" + std::to_string(e.attempt) : ""));
    }
    out->latest = state.Latest();
    return out;
  }

  // A new run of `pipeline`, driven to its end.
  std::unique_ptr<SessionOutcome> RunNew(const Pipeline& pipeline, const std::string& id,
                                  Scenario scenario = {}) {
    std::unique_ptr<RunState> state = NewRun(pipeline, id);
    if (state == nullptr) return std::make_unique<SessionOutcome>();
    return Drive(pipeline, *state, std::move(scenario));
  }

  fakes::TempDir dir_{"session"};
  const fs::path work_ = dir_ / "p";
};

// Listed out of order: the steps run in the order their inputs and outputs give.
constexpr const char* kTwoSteps = R"(
name: demo
steps:
  train: {run: python train.py, inputs: [data.csv], outputs: [model.bin]}
  prepare: {run: python prepare.py, inputs: [raw.txt], outputs: [data.csv]}
)";

TEST_F(SessionTest, TwoStepsRunInDependencyOrderAndTheRunRecordsThem) {
  Write("raw.txt", "raw");
  Pipeline p = Load(kTwoSteps);
  std::unique_ptr<SessionOutcome> o = RunNew(p, "11111111aaaaaaaa");
  EXPECT_TRUE(o->result.ok());
  EXPECT_THAT(o->started, ElementsAre("prepare#1", "train#1"));
  EXPECT_EQ(Read("model.bin"), "train(prepare(raw))");
  EXPECT_THAT(o->events,
              ElementsAre("prepare started#1", "prepare done", "train started#1", "train done"));
  EXPECT_EQ(o->counts, (std::map<std::string, int>{{"done", 2}}));
  EXPECT_EQ(o->env["train"]["CAIRN_PIPELINE_RUN"], "11111111aaaaaaaa");

  // The key each step was run under is recorded with its parts, for `cairn pipeline explain`.
  std::unique_ptr<RunState> state = Reopen("11111111");
  Result<KeyParts> parts = Session::ReadKeyParts(*state, "train");
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_EQ(o->latest.at("train").cache_key, parts->Key());
  EXPECT_THAT(parts->inputs, ElementsAre(Pair("data.csv", Not(IsEmpty()))));
  EXPECT_THAT(parts->definition, HasSubstr("python train.py"));
  EXPECT_EQ(parts->env, "none") << "the project has no active environment";
  EXPECT_THAT(o->progress.events, Contains(StartsWith("done train: ")));
}

TEST_F(SessionTest, ASecondRunWithUnchangedInputsRestoresEveryStepFromTheCache) {
  Write("raw.txt", "raw");
  Pipeline p = Load(kTwoSteps);
  RunNew(p, "11111111aaaaaaaa");
  fs::remove(work_ / "data.csv");
  fs::remove(work_ / "model.bin");

  std::unique_ptr<SessionOutcome> o = RunNew(p, "22222222bbbbbbbb");
  EXPECT_TRUE(o->result.ok());
  EXPECT_THAT(o->started, IsEmpty()) << "nothing runs";
  EXPECT_EQ(Read("data.csv"), "prepare(raw)");
  EXPECT_EQ(Read("model.bin"), "train(prepare(raw))");
  EXPECT_EQ(o->counts, (std::map<std::string, int>{{"cached", 2}}));
  EXPECT_THAT(o->events, ElementsAre("prepare cached", "train cached"));
  EXPECT_EQ(o->latest.at("train").cached_from, "11111111aaaaaaaa");
  EXPECT_THAT(o->progress.events, Contains("cached train: from run 11111111"));
}

constexpr const char* kDiamond = R"(
name: diamond
steps:
  clean: {run: clean, inputs: [raw.txt], outputs: [clean.txt]}
  stats: {run: stats, inputs: [other.txt], outputs: [stats.txt]}
  train: {run: train, inputs: [clean.txt], outputs: [model.bin]}
  report: {run: report, inputs: [model.bin, stats.txt], outputs: [report.md]}
  publish: {run: publish, needs: [train]}
)";

TEST_F(SessionTest, ChangingAnInputReRunsItsReaderAndWhatIsDownstreamOfIt) {
  Write("raw.txt", "raw");
  Write("other.txt", "other");
  Pipeline p = Load(kDiamond);
  EXPECT_THAT(RunNew(p, "11111111aaaaaaaa")->started, SizeIs(5));

  // publish only `needs` train: what train wrote is its input all the same.
  Write("raw.txt", "raw, edited");
  std::unique_ptr<SessionOutcome> o = RunNew(p, "22222222bbbbbbbb");
  EXPECT_TRUE(o->result.ok());
  EXPECT_THAT(o->started, UnorderedElementsAre("clean#1", "train#1", "report#1", "publish#1"));
  EXPECT_EQ(o->latest.at("stats").state, "cached");
  EXPECT_EQ(Read("report.md"), "report(train(clean(raw, edited))stats(other))");

  Write("other.txt", "other, edited");
  EXPECT_THAT(RunNew(p, "33333333cccccccc")->started, UnorderedElementsAre("stats#1", "report#1"));
}

TEST_F(SessionTest, AStepWhoseUpstreamRewroteTheSameBytesIsNotRunAgain) {
  Write("raw.txt", "raw");
  Write("other.txt", "other");
  RunNew(Load(kDiamond), "11111111aaaaaaaa");

  // clean's command changes; what it writes does not.
  std::string edited = kDiamond;
  edited.replace(edited.find("run: clean"), 10, "run: clean --fast");
  std::unique_ptr<SessionOutcome> o = RunNew(Load(edited), "22222222bbbbbbbb");
  EXPECT_TRUE(o->result.ok());
  EXPECT_THAT(o->started, ElementsAre("clean#1"));
  EXPECT_EQ(o->counts, (std::map<std::string, int>{{"cached", 4}, {"done", 1}}));

  // `explain` compares the parts the two runs recorded.
  std::unique_ptr<RunState> before = Reopen("11111111");
  std::unique_ptr<RunState> now = Reopen("22222222");
  EXPECT_THAT(ExplainChanges(*Session::ReadKeyParts(*before, "clean"),
                             *Session::ReadKeyParts(*now, "clean")),
              ElementsAre("command changed: \"clean\" -> \"clean --fast\""));
}

TEST_F(SessionTest, AParameterChangeReRunsOnlyTheStepsThatUseIt) {
  Write("raw.txt", "raw");
  constexpr const char* kSpec = R"(
name: params
params: {lr: 0.1}
steps:
  prepare: {run: prepare, inputs: [raw.txt], outputs: [data.csv]}
  train: {run: 'train --lr ${params.lr}', inputs: [data.csv], outputs: [model.bin]}
)";
  RunNew(Load(kSpec), "11111111aaaaaaaa");
  EXPECT_THAT(RunNew(Load(kSpec, {{"lr", "0.2"}}), "22222222bbbbbbbb")->started,
              ElementsAre("train#1"));
  // Back to 0.1: the first run's result is still in the cache.
  std::unique_ptr<SessionOutcome> o = RunNew(Load(kSpec, {{"lr", "0.1"}}), "33333333cccccccc");
  EXPECT_THAT(o->started, IsEmpty());
  EXPECT_EQ(o->latest.at("train").cached_from, "11111111aaaaaaaa");
}

constexpr const char* kWithAFailure = R"(
name: failing
steps:
  bad: {run: bad, outputs: [bad.out]}
  child: {run: child, inputs: [bad.out], outputs: [child.out]}
  grandchild: {run: grandchild, needs: [child]}
  other: {run: other, outputs: [other.out]}
)";

TEST_F(SessionTest, AFailingStepSkipsWhatNeedsItWhileIndependentStepsFinish) {
  Pipeline p = Load(kWithAFailure);
  std::unique_ptr<RunState> state = NewRun(p, "11111111aaaaaaaa");
  std::unique_ptr<SessionOutcome> o = Drive(p, *state, {.script = {{"bad", {{1000, 3}}}}});
  EXPECT_FALSE(o->result.ok());
  EXPECT_THAT(o->started, UnorderedElementsAre("bad#1", "other#1"));
  const StepEvent& bad = o->latest.at("bad");
  EXPECT_EQ(bad.state, "failed");
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(bad.reason, "exit code 3");
  EXPECT_EQ(o->latest.at("child").state, "skipped");
  EXPECT_EQ(o->latest.at("child").reason, "needs bad, which failed");
  EXPECT_EQ(o->latest.at("grandchild").state, "skipped");
  EXPECT_EQ(o->latest.at("other").state, "done");
  EXPECT_EQ(o->counts, (std::map<std::string, int>{{"done", 1}, {"failed", 1}, {"skipped", 2}}));
  EXPECT_THAT(o->progress.failed_logs, ElementsAre(state->log_dir() + "/bad.log"));
  EXPECT_EQ(fakes::Slurp(state->log_dir() + "/bad.log"), "bad attempt 1\n");
}

TEST_F(SessionTest, AFailedAttemptIsRetriedAsTheSpecAllows) {
  Pipeline p = Load(R"(
name: retries
steps:
  flaky: {run: flaky, retries: {limit: 2, backoff: 10s}}
  stubborn: {run: stubborn, retries: 1}
)");
  std::unique_ptr<SessionOutcome> o =
      RunNew(p, "11111111aaaaaaaa",
             {.script = {{"flaky", {{1000, 1}, {1000, 1}, {1000, 0}}}, {"stubborn", {{1000, 4}}}}});
  EXPECT_EQ(o->latest.at("flaky").state, "done");
  EXPECT_EQ(o->latest.at("stubborn").state, "failed");
  EXPECT_EQ(o->latest.at("stubborn").exit_code, 4);
  std::vector<std::string> flaky, stubborn;
  for (const std::string& e : o->events) {
    if (e.starts_with("flaky ")) flaky.push_back(e);
    if (e.starts_with("stubborn ")) stubborn.push_back(e);
  }
  EXPECT_THAT(flaky, ElementsAre("flaky started#1", "flaky retrying#1", "flaky started#2",
                                 "flaky retrying#2", "flaky started#3", "flaky done"));
  EXPECT_THAT(stubborn, ElementsAre("stubborn started#1", "stubborn retrying#1",
                                    "stubborn started#2", "stubborn failed"))
      << "no retry is announced after the last attempt";
  EXPECT_THAT(o->progress.events, AllOf(Contains("retry flaky: exit code 1; attempt 2 in 10.0 s"),
                                        Contains("retry flaky: exit code 1; attempt 3 in 20.0 s"),
                                        Contains("started flaky: attempt 3")));
}

TEST_F(SessionTest, AResumeKeepsWhatCompletedAndRunsTheRest) {
  Pipeline p = Load(kWithAFailure);
  {
    std::unique_ptr<RunState> first = NewRun(p, "11111111aaaaaaaa");
    Drive(p, *first, {.script = {{"bad", {{1000, 3}}}}});
  }
  Write("other.out", "changed since, by hand");
  std::unique_ptr<RunState> state = Reopen("11111111");
  // Even without the cache: a completed step is kept as it is.
  std::unique_ptr<SessionOutcome> o =
      Drive(p, *state, {.use_cache = false, .completed = CompletedSteps(*state)});
  EXPECT_TRUE(o->result.ok());
  EXPECT_THAT(o->started, ElementsAre("bad#1", "child#1", "grandchild#1"));
  EXPECT_EQ(Read("other.out"), "changed since, by hand") << "a kept step is not touched";
  EXPECT_EQ(o->counts, (std::map<std::string, int>{{"done", 3}, {"kept", 1}}));
  EXPECT_EQ(o->latest.at("other").state, "done") << "kept as it was, not restored";
  EXPECT_THAT(o->progress.events, Contains("kept other: done before this resume"));
}

TEST_F(SessionTest, WithoutTheCacheEveryStepRunsAndItsOutputsAreStillStored) {
  Write("raw.txt", "raw");
  Pipeline p = Load(R"(
name: nocache
steps:
  fetch: {run: fetch, outputs: [fetched.txt], cache: false}
  prepare: {run: prepare, inputs: [raw.txt], outputs: [data.csv]}
)");
  RunNew(p, "11111111aaaaaaaa");
  EXPECT_THAT(RunNew(p, "22222222bbbbbbbb", {.use_cache = false})->started,
              UnorderedElementsAre("fetch#1", "prepare#1"));
  // A step marked `cache: false` runs every time; the other one is taken from the cache.
  std::unique_ptr<SessionOutcome> o = RunNew(p, "33333333cccccccc");
  EXPECT_THAT(o->started, ElementsAre("fetch#1"));
  EXPECT_EQ(o->latest.at("prepare").cached_from, "22222222bbbbbbbb");
}

TEST_F(SessionTest, AStepThatDoesNotWriteADeclaredOutputFailsEvenWhenAnOldOneIsThere) {
  Write("raw.txt", "raw");
  Write("data.csv", "left over from before");
  Pipeline p = Load(kTwoSteps);
  std::unique_ptr<SessionOutcome> o = RunNew(p, "11111111aaaaaaaa", {.writes_nothing = {"prepare"}});
  EXPECT_EQ(o->latest.at("prepare").state, "failed");
  EXPECT_THAT(o->latest.at("prepare").reason, HasSubstr("did not write its output data.csv"));
  EXPECT_EQ(o->latest.at("train").state, "skipped");
  EXPECT_FALSE(fs::exists(work_ / "data.csv")) << "outputs are removed before a step runs";

  // Nothing was stored for it: the next run runs it again.
  EXPECT_THAT(RunNew(p, "22222222bbbbbbbb")->started, ElementsAre("prepare#1", "train#1"));
}

// The children of the parent run `parent`, by step id.
std::map<std::string, fakes::FakeRun> Children(const std::map<std::string, fakes::FakeRun>& runs,
                                               const std::string& parent) {
  std::map<std::string, fakes::FakeRun> out;
  for (const auto& [id, run] : runs) {
    auto it = run.tags.find("mlflow.parentRunId");
    if (it != run.tags.end() && it->second == parent) out[run.tags.at("cairn.step.id")] = run;
  }
  return out;
}

// A tracker of the run `state` on a fresh fake tracking server.
struct Tracked {
  Tracked(const Pipeline& p, const RunState& state) {
    auto sink = std::make_unique<fakes::FakeTrackingSink>();
    server = sink->server();
    Result<std::unique_ptr<Tracker>> started =
        Tracker::Start(std::move(sink), p, state.info(), progress);
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    if (started.ok()) tracker = std::move(*started);
  }
  RecordingProgress progress;
  std::shared_ptr<fakes::FakeTrackingSink::Server> server;
  std::unique_ptr<Tracker> tracker;
};

TEST_F(SessionTest, TheTrackerSeesOneParentRunAndAChildPerStepThatRan) {
  Pipeline p = Load(kWithAFailure);
  std::unique_ptr<RunState> state = NewRun(p, "11111111aaaaaaaa");
  Tracked t(p, *state);
  ASSERT_NE(t.tracker, nullptr);
  std::unique_ptr<SessionOutcome> o =
      Drive(p, *state, {.script = {{"bad", {{1000, 3}}}}, .tracker = t.tracker.get()});
  t.tracker->Finish(o->result.ok(), o->result.interrupted);

  const std::map<std::string, fakes::FakeRun> runs = t.server->Runs();
  const fakes::FakeRun& parent = runs.at("11111111aaaaaaaa");
  EXPECT_EQ(parent.status, core::RunStatus::kFailed);
  EXPECT_THAT(parent.tags, Contains(Pair("cairn.pipeline.state", "failed")));
  std::map<std::string, fakes::FakeRun> children = Children(runs, "11111111aaaaaaaa");
  ASSERT_THAT(children, SizeIs(4)) << "a run for every step, those that did not run too";
  EXPECT_EQ(runs.size(), 5u);
  for (const char* skipped : {"child", "grandchild"}) {
    EXPECT_THAT(children.at(skipped).tags, Contains(Pair("cairn.step.state", "skipped")));
    EXPECT_EQ(children.at(skipped).status, core::RunStatus::kKilled) << skipped;
    EXPECT_EQ(children.at(skipped).console, "") << "nothing ran";
  }

  const fakes::FakeRun& other = children.at("other");
  EXPECT_THAT(other.tags, Contains(Pair("cairn.step.state", "done")));
  EXPECT_THAT(other.tags, Contains(Pair("cairn.step.exit_code", "0")));
  EXPECT_THAT(other.tags, Contains(Pair("cairn.step.cache_key", o->latest.at("other").cache_key)));
  EXPECT_EQ(other.status, core::RunStatus::kFinished);
  EXPECT_EQ(other.console, "other attempt 1\n");
  EXPECT_THAT(other.artifacts.at("cairn/outputs.json"), HasSubstr("\"other.out\""));
  EXPECT_EQ(other.artifacts.at("outputs/other.out"), "other()") << "its output, as written";
  EXPECT_EQ(other.experiment_id, parent.experiment_id);

  const fakes::FakeRun& bad = children.at("bad");
  EXPECT_THAT(bad.tags, Contains(Pair("cairn.step.state", "failed")));
  EXPECT_THAT(bad.tags, Contains(Pair("cairn.step.exit_code", "3")));
  EXPECT_EQ(bad.status, core::RunStatus::kFailed);

  // The step's own MLflow or cairn client logs into its child run.
  const std::map<std::string, std::string>& env = o->env.at("other");
  EXPECT_EQ(env.at("MLFLOW_RUN_ID"), other.run_id);
  EXPECT_EQ(env.at("CAIRN_RUN_ID"), other.run_id);
  EXPECT_EQ(env.at("MLFLOW_TRACKING_URI"), "fake://tracking");
  EXPECT_EQ(env.at("CAIRN_TRACKING_URI"), "fake://tracking");
  EXPECT_EQ(env.at("MLFLOW_EXPERIMENT_ID"), parent.experiment_id);
  EXPECT_EQ(o->latest.at("other").run_id, other.run_id) << "the run's record names it too";
  EXPECT_THAT(t.progress.warnings, IsEmpty());
}

TEST_F(SessionTest, AStepKeptOnResumeStillNamesItsTrackingRun) {
  Pipeline p = Load(kWithAFailure);
  std::string other_run;
  {
    std::unique_ptr<RunState> first = NewRun(p, "11111111aaaaaaaa");
    Tracked t(p, *first);
    ASSERT_NE(t.tracker, nullptr);
    std::unique_ptr<SessionOutcome> o =
        Drive(p, *first, {.script = {{"bad", {{1000, 3}}}}, .tracker = t.tracker.get()});
    other_run = o->latest.at("other").run_id;
  }
  ASSERT_FALSE(other_run.empty());
  std::unique_ptr<RunState> state = Reopen("11111111");
  std::unique_ptr<SessionOutcome> o = Drive(p, *state, {.completed = CompletedSteps(*state)});
  EXPECT_EQ(o->latest.at("other").state, "done");
  EXPECT_EQ(o->latest.at("other").run_id, other_run)
      << "the run's record still leads from the kept step to its tracking run";
}

TEST_F(SessionTest, ACachedStepsTrackingRunNamesTheRunThatProducedItsOutputs) {
  Write("raw.txt", "raw");
  Pipeline p = Load(kTwoSteps);
  std::string produced_by;
  {
    std::unique_ptr<RunState> state = NewRun(p, "11111111aaaaaaaa");
    Tracked t(p, *state);
    Drive(p, *state, {.tracker = t.tracker.get()});
    t.tracker->Finish(true, false);
    produced_by = Children(t.server->Runs(), "11111111aaaaaaaa").at("train").run_id;
  }
  std::unique_ptr<RunState> state = NewRun(p, "22222222bbbbbbbb");
  Tracked t(p, *state);
  std::unique_ptr<SessionOutcome> o = Drive(p, *state, {.tracker = t.tracker.get()});
  t.tracker->Finish(o->result.ok(), o->result.interrupted);
  EXPECT_THAT(o->started, IsEmpty());
  std::map<std::string, fakes::FakeRun> children = Children(t.server->Runs(), "22222222bbbbbbbb");
  ASSERT_THAT(children, SizeIs(2)) << "a step restored from the cache has a run too";
  const fakes::FakeRun& train = children.at("train");
  EXPECT_THAT(train.tags, Contains(Pair("cairn.step.state", "cached")));
  EXPECT_THAT(train.tags, Contains(Pair("cairn.step.cached_from_run", produced_by)));
  EXPECT_NE(train.run_id, produced_by);
  EXPECT_EQ(train.console, "") << "nothing ran";
  EXPECT_THAT(train.artifacts.at("cairn/outputs.json"), HasSubstr("\"model.bin\""));
  EXPECT_EQ(train.artifacts.count("outputs/model.bin"), 0u)
      << "the run that produced it has the output";
}

TEST_F(SessionTest, OutputsGoWithTheirRunUnlessToldNot) {
  Write("raw.txt", "raw");
  Pipeline p = Load(kTwoSteps);
  // data.csv holds "prepare(raw)" (12 bytes), model.bin "train(prepare(raw))" (19).
  const std::vector<std::pair<UploadOutputs, int>> modes = {
      {UploadOutputs::kNever, 0}, {UploadOutputs::kSmall, 1}, {UploadOutputs::kAlways, 2}};
  for (const auto& [mode, expected] : modes) {
    std::unique_ptr<RunState> state = NewRun(p, std::string(8, char('1' + expected)) + "aaaaaaaa");
    Tracked t(p, *state);
    std::unique_ptr<SessionOutcome> o = Drive(p, *state,
                                              {.use_cache = false,
                                               .tracker = t.tracker.get(),
                                               .upload_outputs = mode,
                                               .small_output_bytes = 15});
    t.tracker->Finish(o->result.ok(), o->result.interrupted);
    std::map<std::string, fakes::FakeRun> runs = Children(t.server->Runs(), state->info().id);
    const int recorded = static_cast<int>(runs.at("prepare").artifacts.count("outputs/data.csv") +
                                          runs.at("train").artifacts.count("outputs/model.bin"));
    EXPECT_EQ(recorded, expected) << static_cast<int>(mode);
    if (mode == UploadOutputs::kAlways) {
      EXPECT_EQ(runs.at("train").artifacts.at("outputs/model.bin"), "train(prepare(raw))");
    }
    if (mode == UploadOutputs::kSmall) {
      EXPECT_THAT(o->progress.warnings,
                  Contains(HasSubstr("step train: 1 output file(s) over 15 bytes are not")));
    }
  }
}

// Sets an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_F(SessionTest, TheProjectsActiveEnvironmentIsActivatedAndPartOfTheKey) {
  for (const std::string lock : {"a", "b"}) {
    fs::create_directories(dir_ / "envs" / lock / ".cairn");
    std::ofstream(dir_ / "envs" / lock / ".cairn" / "info.json")
        << R"({"lock_hash": "lock-)" << lock << R"("})";
  }
  ASSERT_TRUE(env::ProjectEnv(work_.string()).Use((dir_ / "envs" / "a").string()).ok());
  Write("raw.txt", "raw");
  Pipeline p = Load(R"(
name: envs
steps:
  train: {run: python train.py, inputs: [raw.txt], outputs: [model.bin]}
  tool: {run: tool, env: none, outputs: [tool.out]}
)");
  std::unique_ptr<SessionOutcome> o = RunNew(p, "11111111aaaaaaaa");
  const std::string prefix = (dir_ / "envs" / "a").string();
  EXPECT_THAT(o->env["train"]["PATH"], StartsWith(prefix + "/bin:"));
  EXPECT_EQ(o->env["train"]["VIRTUAL_ENV"], prefix);
  EXPECT_EQ(o->env["train"]["PYTHONHOME"], "");
  EXPECT_EQ(o->env["tool"].count("VIRTUAL_ENV"), 0u) << "env: none activates nothing";
  std::unique_ptr<RunState> state = Reopen("11111111");
  EXPECT_EQ(Session::ReadKeyParts(*state, "train")->env, "lock-a");
  EXPECT_EQ(Session::ReadKeyParts(*state, "tool")->env, "none");

  // Another environment made active: what runs in it runs again.
  ASSERT_TRUE(env::ProjectEnv(work_.string()).Use((dir_ / "envs" / "b").string()).ok());
  o = RunNew(p, "22222222bbbbbbbb");
  EXPECT_THAT(o->started, ElementsAre("train#1"));
  EXPECT_EQ(o->env["train"]["VIRTUAL_ENV"], (dir_ / "envs" / "b").string());
}

TEST_F(SessionTest, AStepWhoseLockedEnvironmentIsNotBuiltFailsWithoutRunning) {
  ScopedEnv store("CAIRN_ENV_STORE", (dir_ / "store").string());
  Write("pylock.toml", "lock-version = \"1.0\"\n");
  Pipeline p = Load(R"(
name: locked
steps:
  train: {run: python train.py, env: pylock.toml, outputs: [model.bin]}
  report: {run: report, inputs: [model.bin]}
)");
  std::unique_ptr<SessionOutcome> o = RunNew(p, "11111111aaaaaaaa");
  EXPECT_THAT(o->started, IsEmpty());
  EXPECT_EQ(o->latest.at("train").state, "failed");
  EXPECT_EQ(o->latest.at("train").reason,
            "the environment of pylock.toml is not built: cairn env build --lock pylock.toml "
            "--no-use");
  EXPECT_EQ(o->latest.at("report").state, "skipped");
}

constexpr const char* kNoCode = R"(
name: code
steps:
  clean: {run: python clean.py, inputs: [raw.txt], outputs: [clean.txt]}
  stats: {run: python stats.py, inputs: [other.txt], outputs: [stats.txt]}
)";

TEST_F(SessionTest, OutsideGitOnlyDeclaredCodePathsInvalidateAStep) {
  Write("raw.txt", "raw");
  Write("other.txt", "other");
  Write("clean.py", "v1");
  Write("stats.py", "v1");
  std::unique_ptr<SessionOutcome> o = RunNew(Load(kNoCode), "11111111aaaaaaaa");
  EXPECT_THAT(o->progress.warnings, ElementsAre(HasSubstr("not in a git repository")));

  // Every step declares its code: git is not needed.
  Pipeline p = Load(R"(
name: code
steps:
  clean: {run: python clean.py, inputs: [raw.txt], outputs: [clean.txt], code: [clean.py]}
  stats: {run: python stats.py, inputs: [other.txt], outputs: [stats.txt], code: [stats.py]}
)");
  o = RunNew(p, "22222222bbbbbbbb");
  EXPECT_THAT(o->progress.warnings, IsEmpty());
  Write("clean.py", "v2");
  EXPECT_THAT(RunNew(p, "33333333cccccccc")->started, ElementsAre("clean#1"));
}

TEST_F(SessionTest, InAGitRepositoryAnEditedScriptReRunsTheStepsThatDeclareNoCode) {
  Write("raw.txt", "raw");
  Write("other.txt", "other");
  Write("clean.py", "v1");
  fakes::ShellRun git =
      fakes::RunShell("cd '" + work_.string() +
                      "' && git init -q && git add -A && git -c user.name=t "
                      "-c user.email=t@example.com -c commit.gpgsign=false commit -qm init");
  ASSERT_EQ(git.code, 0) << git.out;
  Pipeline p = Load(kNoCode);
  std::unique_ptr<SessionOutcome> o = RunNew(p, "11111111aaaaaaaa");
  EXPECT_THAT(o->progress.warnings, IsEmpty());
  // The run's own records and the steps' outputs, untracked, change nothing.
  EXPECT_THAT(RunNew(p, "22222222bbbbbbbb")->started, IsEmpty());

  // A tracked input is the input of its reader, not code for every step.
  Write("other.txt", "other, edited");
  EXPECT_THAT(RunNew(p, "33333333cccccccc")->started, ElementsAre("stats#1"));

  Write("clean.py", "v2");
  EXPECT_THAT(RunNew(p, "44444444dddddddd")->started, UnorderedElementsAre("clean#1", "stats#1"));
}

}  // namespace
}  // namespace cairn::pipeline
