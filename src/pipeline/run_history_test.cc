#include "pipeline/run_history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fakes/temp_dir.h"

namespace cairn::pipeline {
namespace {

using ::testing::SizeIs;

TEST(RunHistoryTest, AStepInFlightWithoutARunnerWasInterrupted) {
  EXPECT_EQ(ShownState("started", /*has_runner=*/true), "running");
  EXPECT_EQ(ShownState("retrying", true), "retrying");
  EXPECT_EQ(ShownState("started", false), "interrupted");
  EXPECT_EQ(ShownState("retrying", false), "interrupted");
  EXPECT_EQ(ShownState("done", false), "done");
  EXPECT_EQ(ShownState("failed", true), "failed");
}

StepEvent Event(const std::string& step, const std::string& state) {
  StepEvent e;
  e.step = step;
  e.state = state;
  return e;
}

TEST(RunHistoryTest, StatusAndListAgreeOnAnInterruptedRun) {
  fakes::TempDir dir("run-history");
  const std::string root = RunState::RootOf(dir.str());
  RunInfo info;
  info.id = "0123456789abcdef0123456789abcdef";
  info.name = "demo";
  info.spec_file = (dir / "pipeline.yaml").string();
  info.executor = "local";
  info.started_ms = 1'700'000'000'000;
  const std::string spec =
      "name: demo\nsteps:\n  a: {run: 'true'}\n  b: {run: 'true', needs: [a]}\n"
      "  c: {run: 'true', needs: [b]}\n";
  {
    Result<std::unique_ptr<RunState>> state = RunState::Create(root, info, spec);
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    ASSERT_TRUE((*state)->Append(Event("a", "done")).ok());
    ASSERT_TRUE((*state)->Append(Event("b", "started")).ok());
  }  // no runner holds the run any more

  Result<RunStatus> status = ReadRunStatus(root, "01234567");
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->runner, 0);
  ASSERT_THAT(status->steps, SizeIs(3));
  EXPECT_EQ(status->steps[0].state, "done");
  EXPECT_EQ(status->steps[1].state, "interrupted");
  EXPECT_EQ(status->steps[2].state, "waiting") << "in the spec's order, with no event yet";
  EXPECT_EQ(status->incomplete, 2);

  std::vector<RunSummary> runs = SummariseRuns(root);
  ASSERT_THAT(runs, SizeIs(1));
  EXPECT_EQ(runs[0].counts, (std::map<std::string, int>{{"done", 1}, {"interrupted", 1}}));

  Result<StepExplanation> e = ExplainStep(root, info.id, "b");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->event.state, "started");
  EXPECT_FALSE(e->key.has_value()) << "no key was computed";
  EXPECT_EQ(ExplainStep(root, info.id, "zzz").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cairn::pipeline
