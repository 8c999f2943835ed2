#include "pipeline/tracker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "capture/code_state.h"
#include "fakes/fake_tracking_sink.h"
#include "fakes/temp_dir.h"
#include "pipeline/session.h"

namespace cairn::pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class WarningRecorder : public Progress {
 public:
  void Event(const std::string&, const std::string&, const std::string&) override {}
  void Warning(const std::string& text) override { warnings.push_back(text); }
  std::vector<std::string> warnings;
};

Pipeline TwoSteps() {
  Pipeline p;
  p.name = "demo";
  p.params = {{"lr", "0.1"}};
  Step prepare;
  prepare.id = "prepare";
  prepare.command = "make data";
  Step train;
  train.id = "train";
  train.command = "python train.py --lr 0.1";
  train.params = {{"lr", "0.1"}};
  train.deps = {0};
  p.steps = {prepare, train};
  return p;
}

RunInfo RunOf(const std::string& id = "0123456789abcdef") {
  RunInfo info;
  info.id = id;
  info.name = "demo";
  info.spec_file = "/project/pipeline.yaml";
  info.executor = "local";
  info.started_ms = 1'700'000'000'000;
  return info;
}

struct Fixture {
  Fixture() : sink(std::make_unique<fakes::FakeTrackingSink>()), server(sink->server()) {}
  std::unique_ptr<Tracker> Start(const RunInfo& run = RunOf()) {
    Result<std::unique_ptr<Tracker>> t = Tracker::Start(
        sink != nullptr ? std::move(sink) : std::make_unique<fakes::FakeTrackingSink>(), pipeline,
        run, progress);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? std::move(*t) : nullptr;
  }
  std::unique_ptr<fakes::FakeTrackingSink> sink;
  std::shared_ptr<fakes::FakeTrackingSink::Server> server;
  Pipeline pipeline = TwoSteps();
  WarningRecorder progress;
};

StepRecord Record(const std::string& state, int exit_code = 0) {
  StepRecord r;
  r.state = state;
  r.exit_code = exit_code;
  return r;
}

// The runs on the server that are children of `parent`, by step id.
std::map<std::string, fakes::FakeRun> ChildRuns(const std::map<std::string, fakes::FakeRun>& runs,
                                                const std::string& parent) {
  std::map<std::string, fakes::FakeRun> out;
  for (const auto& [id, run] : runs) {
    auto it = run.tags.find("mlflow.parentRunId");
    if (it != run.tags.end() && it->second == parent) out[run.tags.at("cairn.step.id")] = run;
  }
  return out;
}

TEST(TrackerTest, APipelineRunIsOneParentRunWithAChildPerStep) {
  fakes::TempDir dir("tracker");
  const std::string log = (dir / "train.log").string();
  std::ofstream(log) << "epoch 1\nepoch 2\n";
  Fixture f;
  f.pipeline.steps[1].outputs = {"model.bin"};
  std::unique_ptr<Tracker> tracker = f.Start();
  ASSERT_NE(tracker, nullptr);
  EXPECT_EQ(tracker->tracking_uri(), "fake://tracking");
  const std::string prepare_run = tracker->StepRun(f.pipeline.steps[0]);
  EXPECT_EQ(tracker->StepRun(f.pipeline.steps[0]), prepare_run) << "one run per step";
  EXPECT_THAT(f.server->Runs(), SizeIs(3)) << "every step's run exists before the first starts";

  tracker->StepEnded(f.pipeline.steps[0], Record("done"));
  tracker->StepRun(f.pipeline.steps[1]);
  StepRecord trained = Record("done");
  trained.cache_key = "k1";
  trained.log_path = log;
  trained.outputs_json = "[]";
  tracker->StepEnded(f.pipeline.steps[1], trained);
  tracker->Finish(/*ok=*/true, /*interrupted=*/false);

  const std::map<std::string, fakes::FakeRun> runs = f.server->Runs();
  ASSERT_THAT(runs, SizeIs(3));
  const fakes::FakeRun& parent = runs.at(RunOf().id);
  EXPECT_EQ(parent.experiment, "demo");
  EXPECT_EQ(tracker->ExperimentId(), parent.experiment_id);
  EXPECT_EQ(parent.tags.at("cairn.pipeline.state"), "complete");
  EXPECT_EQ(parent.tags.at("cairn.pipeline.steps"), "2");
  EXPECT_EQ(parent.params.at("lr"), "0.1");
  EXPECT_EQ(parent.status, core::RunStatus::kFinished);

  std::map<std::string, fakes::FakeRun> children = ChildRuns(runs, RunOf().id);
  ASSERT_THAT(children, SizeIs(2));
  EXPECT_EQ(children.at("prepare").run_id, prepare_run);
  const fakes::FakeRun& train = children.at("train");
  EXPECT_EQ(train.experiment_id, parent.experiment_id);
  EXPECT_EQ(train.run_name, "train");
  EXPECT_EQ(train.tags.at("cairn.step.state"), "done");
  EXPECT_EQ(train.tags.at("cairn.step.exit_code"), "0");
  EXPECT_EQ(train.tags.at("cairn.step.cache_key"), "k1");
  EXPECT_EQ(train.tags.at("cairn.step.command"), "python train.py --lr 0.1");
  EXPECT_EQ(train.tags.at("cairn.step.needs"), "[\"prepare\"]");
  EXPECT_EQ(train.params.at("lr"), "0.1");
  EXPECT_EQ(train.console, "epoch 1\nepoch 2\n");
  EXPECT_EQ(train.artifacts.at("cairn/outputs.json"), "[]");
  EXPECT_EQ(train.tags.at("cairn.step.outputs"), "[\"model.bin\"]");
  EXPECT_EQ(children.at("prepare").tags.count("cairn.step.outputs"), 0u);
  EXPECT_THAT(children.at("prepare").artifacts, IsEmpty()) << "a step without outputs lists none";
  EXPECT_EQ(train.status, core::RunStatus::kFinished);
  EXPECT_EQ(f.server->Pending(), 0u);
  EXPECT_TRUE(f.server->Removed()) << "delivered records are not kept";
  EXPECT_THAT(f.progress.warnings, IsEmpty());
}

TEST(TrackerTest, ACachedStepNamesTheRunThatProducedItsOutputs) {
  Fixture f;
  std::unique_ptr<Tracker> tracker = f.Start();
  // A cached step never starts: its run is created when it ends, and nothing waits for the
  // server meanwhile.
  StepRecord cached = Record("cached");
  cached.cached_from_run = "feedbeef";
  tracker->StepEnded(f.pipeline.steps[0], cached);
  cached.cached_from_run = "beeffeed";
  tracker->StepEnded(f.pipeline.steps[1], cached);
  EXPECT_EQ(tracker->StepRunId(f.pipeline.steps[0]).size(), 32u);
  tracker->Finish(true, false);
  EXPECT_THAT(ChildRuns(f.server->Runs(), RunOf().id), SizeIs(2));
  const fakes::FakeRun prepare = ChildRuns(f.server->Runs(), RunOf().id).at("prepare");
  EXPECT_EQ(prepare.run_id, tracker->StepRunId(f.pipeline.steps[0]));
  EXPECT_EQ(prepare.tags.at("cairn.step.state"), "cached");
  EXPECT_EQ(prepare.tags.at("cairn.step.cached_from_run"), "feedbeef");
  EXPECT_EQ(prepare.tags.count("cairn.step.exit_code"), 0u) << "a cached step did not run";
  EXPECT_EQ(prepare.status, core::RunStatus::kFinished);
}

TEST(TrackerTest, FailedAndCancelledStepsAndTheirPipelineRun) {
  Fixture f;
  std::unique_ptr<Tracker> tracker = f.Start();
  tracker->StepRun(f.pipeline.steps[0]);
  StepRecord failed = Record("failed", 3);
  failed.reason = "exit code 3";
  tracker->StepEnded(f.pipeline.steps[0], failed);
  tracker->Finish(/*ok=*/false, /*interrupted=*/true);  // before train was reached
  const std::map<std::string, fakes::FakeRun> runs = f.server->Runs();
  std::map<std::string, fakes::FakeRun> children = ChildRuns(runs, RunOf().id);
  EXPECT_EQ(children.at("prepare").status, core::RunStatus::kFailed);
  EXPECT_EQ(children.at("prepare").tags.at("cairn.step.exit_code"), "3");
  EXPECT_EQ(children.at("prepare").tags.at("cairn.step.reason"), "exit code 3");
  EXPECT_EQ(children.at("train").status, core::RunStatus::kKilled);
  EXPECT_EQ(children.at("train").tags.at("cairn.step.state"), "cancelled");
  EXPECT_EQ(children.at("train").tags.at("cairn.step.reason"), "the pipeline run was interrupted");
  EXPECT_EQ(runs.at(RunOf().id).tags.at("cairn.pipeline.state"), "interrupted");
  EXPECT_EQ(runs.at(RunOf().id).status, core::RunStatus::kKilled);
}

TEST(TrackerTest, AFailedPipelineRunFails) {
  Fixture f;
  f.Start()->Finish(/*ok=*/false, /*interrupted=*/false);
  const fakes::FakeRun parent = f.server->Runs().at(RunOf().id);
  EXPECT_EQ(parent.tags.at("cairn.pipeline.state"), "failed");
  EXPECT_EQ(parent.status, core::RunStatus::kFailed);
}

TEST(TrackerTest, AResumedRunContinuesItsParentRun) {
  Fixture f;
  std::shared_ptr<fakes::FakeTrackingSink::Server> server = f.server;
  f.Start()->Finish(false, true);
  // The second session: a new sink over the same server.
  auto sink = std::make_unique<fakes::FakeTrackingSink>();
  sink->server()->runs = server->Runs();
  auto second = sink->server();
  // The resume keeps prepare, whose run the first session made.
  const std::string prepare_run = ChildRuns(server->Runs(), RunOf().id).at("prepare").run_id;
  std::map<std::string, StepEvent> kept;
  kept["prepare"].run_id = prepare_run;
  Result<std::unique_ptr<Tracker>> resumed =
      Tracker::Start(std::move(sink), f.pipeline, RunOf(), f.progress, &kept);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ((*resumed)->StepRunId(f.pipeline.steps[0]), prepare_run);
  const std::string train_run = (*resumed)->StepRun(f.pipeline.steps[1]);
  EXPECT_EQ((*resumed)->ExperimentId(), server->Runs().at(RunOf().id).experiment_id);
  EXPECT_EQ(second->Runs().at(RunOf().id).tags.at("cairn.pipeline.state"), "resumed");
  (*resumed)->StepEnded(f.pipeline.steps[1], Record("done"));
  (*resumed)->Finish(true, false);
  const std::map<std::string, fakes::FakeRun> runs = second->Runs();
  EXPECT_EQ(
      std::count_if(runs.begin(), runs.end(),
                    [](const auto& r) { return r.second.tags.count("mlflow.parentRunId") == 0; }),
      1)
      << "no second parent run";
  EXPECT_EQ(runs.at(RunOf().id).tags.at("cairn.pipeline.state"), "complete");
  EXPECT_EQ(runs.at(train_run).status, core::RunStatus::kFinished);
  EXPECT_EQ(runs.at(prepare_run).status, core::RunStatus::kKilled)
      << "as the first session left it";
}

TEST(TrackerTest, AServerThatIsDownKeepsTheRecordsAndWarnsOnce) {
  Fixture f;
  f.server->SetUp(false);
  std::unique_ptr<Tracker> tracker = f.Start();
  ASSERT_NE(tracker, nullptr) << "an unreachable server is a warning, not an error";
  EXPECT_EQ(tracker->ExperimentId(), "");
  tracker->StepRun(f.pipeline.steps[0]);
  tracker->StepEnded(f.pipeline.steps[0], Record("done"));
  tracker->Finish(true, false);
  EXPECT_THAT(f.server->Runs(), IsEmpty());
  EXPECT_GT(f.server->Pending(), 0u);
  EXPECT_FALSE(f.server->Removed()) << "kept for `cairn sync`";
  ASSERT_THAT(f.progress.warnings, SizeIs(2));
  EXPECT_THAT(f.progress.warnings[0], HasSubstr("the tracking server at fake://tracking"));
  EXPECT_THAT(f.progress.warnings[1],
              HasSubstr(std::to_string(f.server->Pending()) +
                        " record(s) of this pipeline run are not on the tracking server"));
}

// Each step of `p` starts and ends done.
void RunEveryStep(Tracker& tracker, const Pipeline& p) {
  for (const Step& s : p.steps) {
    tracker.StepRun(s);
    tracker.StepEnded(s, Record("done"));
  }
}

TEST(TrackerTest, ADownServerIsNotTriedOncePerStep) {
  // Each try of an unreachable server costs the client's retries: a long pipeline must not pay
  // them step by step, during the run or at its end.
  Fixture f;
  for (int i = 0; i < 200; ++i) {
    Step s;
    s.id = "s" + std::to_string(i);
    s.command = "true";
    f.pipeline.steps.push_back(s);
  }
  f.server->SetUp(false);
  std::unique_ptr<Tracker> tracker = f.Start();
  ASSERT_NE(tracker, nullptr);
  RunEveryStep(*tracker, f.pipeline);
  tracker->Finish(true, false);
  EXPECT_LE(f.server->deliveries, 4u) << "the start, a probe or two, and one try at the end";
  EXPECT_FALSE(f.server->Removed()) << "every record kept for `cairn sync`";
  EXPECT_GE(f.server->kept, 1u) << "the records left to wait are made durable without a try";
  ASSERT_THAT(f.progress.warnings, SizeIs(2));
  // For the parent and each of the 202 steps: its creation, state and end; a start for each
  // step; train's and the pipeline's parameters.
  EXPECT_THAT(f.progress.warnings[1], HasSubstr("813 record(s) of this pipeline run"));
}

TEST(TrackerTest, AServerBackBeforeTheEndGetsTheRecordsPassedOver) {
  Fixture f;
  f.server->SetUp(false);
  std::unique_ptr<Tracker> tracker = f.Start();
  ASSERT_NE(tracker, nullptr);
  RunEveryStep(*tracker, f.pipeline);
  f.server->SetUp(true);
  tracker->Finish(true, false);
  EXPECT_EQ(f.server->Pending(), 0u);
  EXPECT_THAT(ChildRuns(f.server->Runs(), RunOf().id), SizeIs(2));
  EXPECT_TRUE(f.server->Removed());
  EXPECT_THAT(f.progress.warnings, SizeIs(1)) << "the warning that the server was away, only";
}

TEST(TrackerTest, AStepThatRanRegistersItsOutputFromItsOwnRun) {
  fakes::TempDir dir("tracker-register");
  std::filesystem::create_directories(dir / "model" / "sub");
  std::ofstream(dir / "model" / "weights.bin") << "w1";
  std::ofstream(dir / "model" / "sub" / "config.json") << "{}";
  std::ofstream(dir / "secret.txt") << "not the step's";
  std::filesystem::create_symlink("../secret.txt", dir / "model" / "leak");
  std::filesystem::create_symlink("sub/config.json", dir / "model" / "config.json");
  Fixture f;
  f.pipeline.steps[1].registration = Registration{"clf", "model", "candidate"};
  std::unique_ptr<Tracker> tracker = f.Start();
  ASSERT_NE(tracker, nullptr);
  const std::string train_run = tracker->StepRun(f.pipeline.steps[1]);
  StepRecord trained = Record("done");
  trained.registered_output = (dir / "model").string();
  tracker->StepEnded(f.pipeline.steps[1], trained);
  tracker->Finish(true, false);

  const fakes::FakeRun run = f.server->Runs().at(train_run);
  EXPECT_EQ(run.artifacts.at("outputs/model/weights.bin"), "w1");
  EXPECT_EQ(run.artifacts.at("outputs/model/sub/config.json"), "{}");
  EXPECT_EQ(run.artifacts.at("outputs/model/config.json"), "{}") << "a link inside the output";
  EXPECT_EQ(run.artifacts.count("outputs/model/leak"), 0u) << "a link leading out of it";
  ASSERT_THAT(f.progress.warnings, SizeIs(1));
  EXPECT_THAT(f.progress.warnings[0],
              HasSubstr("links that lead outside it are not registered: leak"));
  ASSERT_THAT(run.registered, SizeIs(1));
  EXPECT_EQ(run.registered[0].model, "clf");
  EXPECT_EQ(run.registered[0].source, "runs:/" + train_run + "/outputs/model");
  EXPECT_EQ(run.registered[0].alias, "candidate");
  ASSERT_THAT(run.registered[0].files, SizeIs(3));
  EXPECT_EQ(run.registered[0].files[2].path, "outputs/model/weights.bin");
  EXPECT_EQ(run.registered[0].files[2].size, 2);
}

TEST(TrackerTest, ACachedStepOrAnEmptyOutputRegistersNothing) {
  fakes::TempDir dir("tracker-register-none");
  std::filesystem::create_directories(dir / "empty");
  Fixture f;
  f.pipeline.steps[0].registration = Registration{"clf", "model", ""};
  f.pipeline.steps[1].registration = Registration{"clf", "empty", ""};
  std::unique_ptr<Tracker> tracker = f.Start();
  ASSERT_NE(tracker, nullptr);
  StepRecord cached = Record("cached");  // the session gives no registered_output
  tracker->StepEnded(f.pipeline.steps[0], cached);
  StepRecord empty = Record("done");
  empty.registered_output = (dir / "empty").string();
  tracker->StepEnded(f.pipeline.steps[1], empty);
  tracker->Finish(true, false);
  for (const auto& [id, run] : f.server->Runs()) EXPECT_THAT(run.registered, IsEmpty()) << id;
  ASSERT_THAT(f.progress.warnings, SizeIs(1));
  EXPECT_THAT(f.progress.warnings[0], HasSubstr("step output empty holds no files"));
}

TEST(TrackerTest, TheCodeGoesOnEveryRunAndItsPatchOnThoseThatRan) {
  Fixture f;
  std::unique_ptr<Tracker> tracker = f.Start();
  ASSERT_NE(tracker, nullptr);
  capture::CodeState code;
  code.in_repository = true;
  code.root = "/project";
  code.branch = "main";
  code.commit = std::string(40, 'e');
  code.dirty = true;
  code.patch = "diff --git a/train.py b/train.py\n+lr = 0.2\n";
  tracker->SetCode(code);
  StepRecord cached = Record("cached");
  tracker->StepEnded(f.pipeline.steps[0], cached);
  const std::string train_run = tracker->StepRun(f.pipeline.steps[1]);
  tracker->StepEnded(f.pipeline.steps[1], Record("done"));
  tracker->Finish(true, false);
  const std::map<std::string, fakes::FakeRun> runs = f.server->Runs();
  std::map<std::string, fakes::FakeRun> children = ChildRuns(runs, RunOf().id);
  for (const fakes::FakeRun& run :
       {runs.at(RunOf().id), children.at("prepare"), children.at("train")}) {
    EXPECT_EQ(run.tags.at("mlflow.source.git.commit"), code.commit) << run.run_name;
    EXPECT_EQ(run.tags.at("mlflow.source.git.branch"), "main") << run.run_name;
    EXPECT_EQ(run.tags.at("cairn.git.dirty"), "true") << run.run_name;
  }
  for (const fakes::FakeRun& run : {runs.at(RunOf().id), children.at("train")}) {
    EXPECT_EQ(run.artifacts.at("cairn/code.diff"), code.patch) << run.run_name;
    EXPECT_THAT(run.artifacts.at("cairn/code.json"), HasSubstr("\"commit\":\"eeee"))
        << run.run_name;
  }
  EXPECT_THAT(children.at("prepare").artifacts, IsEmpty()) << "a cached step ran no code";
}

TEST(TrackerTest, ALargePatchIsCutAtAFileBoundary) {
  Fixture f;
  std::unique_ptr<Tracker> tracker = f.Start();
  ASSERT_NE(tracker, nullptr);
  capture::CodeState code;
  code.in_repository = true;
  code.commit = std::string(40, 'e');
  code.dirty = true;
  const std::string first = "diff --git a/a b/a\n+" + std::string(10 << 20, 'a') + "\n";
  code.patch = first + "diff --git a/b b/b\n+" + std::string(10 << 20, 'b') + "\n";
  tracker->SetCode(code);
  tracker->Finish(true, false);
  const std::string diff = f.server->Runs().at(RunOf().id).artifacts.at("cairn/code.diff");
  EXPECT_TRUE(diff.starts_with(first));
  EXPECT_THAT(diff.substr(first.size()), HasSubstr("# cairn: the patch was cut here"));
  EXPECT_THAT(f.server->Runs().at(RunOf().id).artifacts.at("cairn/code.json"),
              HasSubstr("\"patch_truncated\":true"));
}

TEST(TrackerTest, AStepThatWaitedForApprovalKeepsItsRunOnResume) {
  Fixture f;
  f.pipeline.steps[1].approval = Approval{"alice"};
  const std::string waited = std::string(32, 'c');
  fakes::FakeRun decided;
  decided.run_id = waited;
  decided.tags = {{"cairn.approval.by", "alice"},
                  {"cairn.approval.decision", "approved"},
                  {"cairn.approval.decided_by", "alice"}};
  f.server->runs[waited] = decided;
  std::map<std::string, StepEvent> resumed;
  resumed["prepare"].run_id = std::string(32, 'a');
  resumed["prepare"].state = "done";
  resumed["train"].run_id = waited;
  resumed["train"].state = "waiting";
  Result<std::unique_ptr<Tracker>> t =
      Tracker::Start(std::move(f.sink), f.pipeline, RunOf(), f.progress, &resumed);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ((*t)->StepRunId(f.pipeline.steps[1]), waited);
  std::optional<ApprovalDecision> d = (*t)->ApprovalOf(f.pipeline.steps[1]);
  ASSERT_TRUE(d.has_value());
  EXPECT_TRUE(d->approved);
  EXPECT_EQ(d->by, "alice");
  EXPECT_EQ((*t)->StepRun(f.pipeline.steps[1]), waited) << "started in the run approved";
  (*t)->StepEnded(f.pipeline.steps[1], Record("done"));
  (*t)->Finish(true, false);
  const std::map<std::string, fakes::FakeRun> runs = f.server->Runs();
  EXPECT_EQ(runs.at(waited).status, core::RunStatus::kFinished);
  EXPECT_EQ(runs.count(std::string(32, 'a')), 0u) << "a kept step gets no records";
  EXPECT_EQ(runs.size(), 2u) << "the parent and the approved step's run, no new one";
}

}  // namespace
}  // namespace cairn::pipeline
