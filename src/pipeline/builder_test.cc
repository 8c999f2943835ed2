#include "pipeline/builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "fakes/fake_executor.h"

namespace cairn::pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::IsSupersetOf;

using fakes::FakeExecutor;

// Records what the builder tells its hooks.
class RecordingHooks : public StepHooks {
 public:
  std::set<std::string> reusable;
  std::set<std::string> missing_outputs;
  std::vector<std::string> events;
  const Pipeline* pipeline = nullptr;

  Result<bool> Reuse(size_t step) override { return reusable.count(pipeline->steps[step].id) != 0; }
  Status Succeeded(const StepJob& job) override {
    if (missing_outputs.count(job.id) != 0) return FailedPrecondition("output out.txt is missing");
    return Status::Ok();
  }
  void AttemptEnded(const StepJob& job, const JobResult&, const std::string& reason,
                    int64_t retry_in_ms) override {
    if (!reason.empty()) {
      events.push_back(job.id + "#" + std::to_string(job.attempt) + ": " + reason +
                       (retry_in_ms >= 0 ? ", retry in " + std::to_string(retry_in_ms) : ""));
    }
  }
  void StepEnded(size_t step, StepState state, const std::string& reason) override {
    events.push_back(pipeline->steps[step].id + " " + StepStateName(state) +
                     (reason.empty() ? "" : " (" + reason + ")"));
  }
};

Pipeline Parse(const std::string& yaml) {
  std::vector<std::string> problems;
  Result<PipelineSpec> spec = ParsePipelineSpec(yaml, "p.yaml", &problems);
  EXPECT_TRUE(spec.ok());
  Pipeline p = ExpandPipeline(
      *spec, {}, "/p", [](const std::string&, const std::string&) { return true; }, &problems);
  EXPECT_THAT(problems, IsEmpty());
  return p;
}

struct Outcome {
  BuildResult result;
  std::vector<std::string> events;
};

Outcome Drive(const Pipeline& p, FakeExecutor& executor, Budget budget = {4, 4, 0, 0},
              RecordingHooks* hooks_in = nullptr, const std::atomic<bool>* interrupted = nullptr) {
  RecordingHooks local;
  RecordingHooks& hooks = hooks_in != nullptr ? *hooks_in : local;
  hooks.pipeline = &p;
  BuildOptions options;
  options.budget = budget;
  options.cwd = "/p";
  options.log_dir = "/p/logs";
  options.interrupted = interrupted;
  Result<BuildResult> r = RunPipeline(p, executor, hooks, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return {r.ok() ? *r : BuildResult{}, hooks.events};
}

std::vector<std::string> StartTimes(const FakeExecutor& e) {
  std::vector<std::string> out;
  for (const auto& s : e.starts) out.push_back(s.id + "@" + std::to_string(s.at));
  return out;
}

constexpr const char* kChain = R"(
name: chain
steps:
  a: {run: a, outputs: [a.out]}
  b: {run: b, inputs: [a.out], outputs: [b.out]}
  c: {run: c, inputs: [b.out]}
)";

TEST(BuilderTest, AChainRunsInOrder) {
  Pipeline p = Parse(kChain);
  FakeExecutor e;
  Outcome o = Drive(p, e);
  EXPECT_TRUE(o.result.ok());
  EXPECT_THAT(StartTimes(e), ElementsAre("a@0", "b@1000", "c@2000"));
  EXPECT_THAT(o.events, ElementsAre("a done", "b done", "c done"));
}

TEST(BuilderTest, ReadyStepsRunInParallelUpToJobsAndCpus) {
  Pipeline p = Parse(R"(
name: fan
steps:
  w: {foreach: [1, 2, 3, 4, 5], run: work}
  big: {run: big, resources: {cpus: 2}}
)");
  FakeExecutor jobs;
  Outcome o = Drive(p, jobs, {2, 8, 0, 0});
  EXPECT_TRUE(o.result.ok());
  EXPECT_EQ(jobs.max_parallel, 2u);
  EXPECT_EQ(jobs.clock_.NowMillis(), 3000) << "six one-second steps, two at a time";

  // Two cpus: the 2-cpu step runs alone.
  FakeExecutor cpus;
  Drive(p, cpus, {8, 2, 0, 0});
  EXPECT_THAT(StartTimes(cpus),
              ElementsAre("w[1]@0", "w[2]@0", "w[3]@1000", "w[4]@1000", "w[5]@2000", "big@3000"));

  // A step asking for more cpus than the budget gets the whole budget, not a deadlock.
  FakeExecutor one;
  EXPECT_TRUE(Drive(p, one, {8, 1, 0, 0}).result.ok());
  EXPECT_EQ(one.max_parallel, 1u);
}

TEST(BuilderTest, FailedAttemptsAreRetriedWithDoublingBackoff) {
  Pipeline p = Parse(R"(
name: r
steps:
  flaky: {run: x, retries: {limit: 3, backoff: 10s}}
  after: {run: y, needs: [flaky]}
)");
  FakeExecutor e;
  e.script["flaky"] = {{1000, 1}, {1000, 2}, {1000, 0}};
  Outcome o = Drive(p, e);
  EXPECT_TRUE(o.result.ok());
  // Fails at 1 s, retried at 11 s; fails at 12 s, retried at 32 s; done at 33 s.
  EXPECT_THAT(StartTimes(e), ElementsAre("flaky@0", "flaky@11000", "flaky@32000", "after@33000"));
  EXPECT_THAT(o.events,
              ElementsAre("flaky#1: exit code 1, retry in 10000",
                          "flaky#2: exit code 2, retry in 20000", "flaky done", "after done"));
}

TEST(BuilderTest, AStepOutOfAttemptsFailsAndSkipsWhatNeedsIt) {
  Pipeline p = Parse(R"(
name: f
steps:
  bad: {run: x, retries: 1}
  child: {run: y, needs: [bad]}
  grandchild: {run: z, needs: [child]}
  other: {run: w}
)");
  FakeExecutor e;
  e.script["bad"] = {{1000, 3}};
  e.script["other"] = {{5000, 0}};
  Outcome o = Drive(p, e);
  EXPECT_FALSE(o.result.ok());
  EXPECT_EQ(o.result.states[p.Find("bad")], StepState::kFailed);
  EXPECT_EQ(o.result.states[p.Find("child")], StepState::kSkipped);
  EXPECT_EQ(o.result.states[p.Find("grandchild")], StepState::kSkipped);
  EXPECT_EQ(o.result.states[p.Find("other")], StepState::kDone) << "independent work goes on";
  EXPECT_THAT(o.events,
              ElementsAre("bad#1: exit code 3, retry in 0", "bad#2: exit code 3",
                          "bad failed (exit code 3)", "child skipped (needs bad, which failed)",
                          "grandchild skipped (needs bad, which failed)", "other done"));
}

TEST(BuilderTest, ATimeoutKillsTheStep) {
  Pipeline p = Parse(R"(
name: t
steps:
  slow: {run: sleep 100, timeout: 5s, retries: {limit: 1, backoff: 1s}}
)");
  FakeExecutor e;
  e.script["slow"] = {{100'000, 0}, {2'000, 0}};
  Outcome o = Drive(p, e);
  EXPECT_TRUE(o.result.ok());
  EXPECT_THAT(StartTimes(e), ElementsAre("slow@0", "slow@6000"));
  EXPECT_THAT(o.events, ElementsAre("slow#1: timed out after 5 s, retry in 1000", "slow done"));

  FakeExecutor never;
  never.script["slow"] = {{100'000, 0}};
  Outcome o2 = Drive(p, never);
  EXPECT_EQ(o2.result.states[0], StepState::kFailed);
  EXPECT_EQ(never.clock_.NowMillis(), 11'000);
}

TEST(BuilderTest, ReusedStepsDoNotRunAndUnblockTheirUsers) {
  Pipeline p = Parse(kChain);
  FakeExecutor e;
  RecordingHooks hooks;
  hooks.reusable = {"a", "b"};
  Outcome o = Drive(p, e, {4, 4, 0, 0}, &hooks);
  EXPECT_TRUE(o.result.ok());
  EXPECT_THAT(StartTimes(e), ElementsAre("c@0"));
  EXPECT_EQ(o.result.states[0], StepState::kCached);
}

TEST(BuilderTest, AMissingOutputFailsTheStepAndAStartErrorIsAFailedAttempt) {
  Pipeline p = Parse(kChain);
  FakeExecutor e;
  RecordingHooks hooks;
  hooks.missing_outputs = {"a"};
  Outcome o = Drive(p, e, {4, 4, 0, 0}, &hooks);
  EXPECT_EQ(o.result.states[0], StepState::kFailed);
  EXPECT_EQ(o.events.front(), "a#1: output out.txt is missing");

  FakeExecutor refusing;
  refusing.script["a"] = {{0, -1}};
  Outcome o2 = Drive(p, refusing);
  EXPECT_EQ(o2.result.states[0], StepState::kFailed);
  EXPECT_EQ(o2.events.front(), "a#1: the fake refuses a");
}

TEST(BuilderTest, AnInterruptKillsWhatRunsAndCancelsTheRest) {
  Pipeline p = Parse(R"(
name: i
steps:
  a: {run: a}
  b: {run: b}
  c: {run: c, needs: [a]}
  d: {run: d, retries: {limit: 5, backoff: 1m}}
  e: {run: e, needs: [d]}
)");
  FakeExecutor e;
  e.script["a"] = {{10'000, 0}};
  e.script["b"] = {{1'000, 0}};
  e.script["d"] = {{500, 1}};
  std::atomic<bool> interrupted = false;
  e.on_wait = [&](int64_t now) {
    if (now >= 3'000) interrupted = true;
  };
  Outcome o = Drive(p, e, {4, 4, 0, 0}, nullptr, &interrupted);
  EXPECT_TRUE(o.result.interrupted);
  EXPECT_EQ(o.result.states[p.Find("a")], StepState::kCancelled);
  EXPECT_EQ(o.result.states[p.Find("b")], StepState::kDone);
  EXPECT_EQ(o.result.states[p.Find("c")], StepState::kCancelled);
  EXPECT_EQ(o.result.states[p.Find("d")], StepState::kCancelled);
  EXPECT_EQ(o.result.states[p.Find("e")], StepState::kCancelled);
  EXPECT_LT(e.clock_.NowMillis(), 4'000) << "nothing waits for the retry or for a";
  // Every step that did not complete is reported, e after d's cancelled retry too.
  EXPECT_THAT(o.events, IsSupersetOf({"a cancelled (interrupted)", "c cancelled (interrupted)",
                                      "d cancelled (interrupted before its retry)",
                                      "e cancelled (interrupted)"}));
}

TEST(BuilderTest, AStepWaitingToBeRetriedLeavesItsSlotToOthers) {
  Pipeline p = Parse(R"(
name: r
steps:
  flaky: {run: x, retries: {limit: 1, backoff: 10s}}
  other: {run: y}
  late: {run: z, needs: [other]}
)");
  FakeExecutor e;
  e.script["flaky"] = {{1000, 1}, {1000, 0}};
  e.script["other"] = {{20'000, 0}};
  Outcome o = Drive(p, e, {1, 4, 0, 0});
  EXPECT_TRUE(o.result.ok());
  EXPECT_EQ(e.max_parallel, 1u);
  // other runs during flaky's backoff; flaky's retry, due at 11 s, waits for the slot.
  EXPECT_THAT(StartTimes(e), ElementsAre("flaky@0", "other@1000", "flaky@21000", "late@22000"));
}

// Approves steps once the fake clock reaches a time, and rejects others.
class ApprovingHooks : public RecordingHooks {
 public:
  explicit ApprovingHooks(FakeExecutor& e) : executor(e) {}
  ApprovalState Approve(size_t step) override {
    const std::string& id = pipeline->steps[step].id;
    if (reject.count(id) != 0) return {ApprovalState::kRejected, "rejected by bob"};
    auto it = approve_at.find(id);
    if (it == approve_at.end()) return {};
    return executor.clock_.NowMillis() >= it->second ? ApprovalState{}
                                                     : ApprovalState{ApprovalState::kWaiting, ""};
  }
  FakeExecutor& executor;
  std::map<std::string, int64_t> approve_at;
  std::set<std::string> reject;
};

TEST(BuilderTest, AStepWaitingForApprovalLeavesItsSlotAndARejectedOneFails) {
  Pipeline p = Parse(R"(
name: gate
steps:
  build: {run: b}
  publish: {run: p, needs: [build]}
  other: {run: o, needs: [build]}
  late: {run: l, needs: [other]}
  bad: {run: x}
  after_bad: {run: y, needs: [bad]}
)");
  FakeExecutor e;
  e.script["other"] = {{3000, 0}};
  ApprovingHooks hooks(e);
  hooks.approve_at["publish"] = 2500;
  hooks.reject.insert("bad");
  Outcome o = Drive(p, e, {1, 4, 0, 0}, &hooks);
  EXPECT_FALSE(o.result.ok());
  EXPECT_EQ(e.max_parallel, 1u);
  // publish waits from 1 s, holding nothing: other takes the one slot; publish, approved at
  // 2.5 s, starts when other is done.
  EXPECT_THAT(StartTimes(e), ElementsAre("build@0", "other@1000", "publish@4000", "late@5000"));
  EXPECT_THAT(o.events,
              IsSupersetOf({"bad failed (rejected by bob)",
                            "after_bad skipped (needs bad, which failed)", "publish done"}));
}

TEST(BuilderTest, AnInterruptCancelsAStepWaitingForApproval) {
  Pipeline p = Parse("name: g\nsteps:\n  publish: {run: p}\n");
  FakeExecutor e;
  ApprovingHooks hooks(e);
  hooks.approve_at["publish"] = 1'000'000;
  std::atomic<bool> interrupted{false};
  e.on_wait = [&](int64_t now) {
    if (now >= 500) interrupted = true;
  };
  Outcome o = Drive(p, e, {1, 4, 0, 0}, &hooks, &interrupted);
  EXPECT_TRUE(o.result.interrupted);
  EXPECT_THAT(o.events, ElementsAre("publish cancelled (interrupted while waiting for approval)"));
  EXPECT_THAT(e.starts, IsEmpty());
}

TEST(BuilderTest, ADueRetryIsNotOvertakenByStepsThatFitBetter) {
  Pipeline p = Parse(R"(
name: r
steps:
  big: {run: x, retries: {limit: 1, backoff: 1s}, resources: {cpus: 2}}
  small: {run: y, foreach: [1, 2, 3, 4]}
)");
  FakeExecutor e;
  e.script["big"] = {{500, 1}, {500, 0}};
  Outcome o = Drive(p, e, {2, 2, 0, 0});
  EXPECT_TRUE(o.result.ok());
  // big fails at 0.5 s; the small items fill the cpus; its retry, due at 1.5 s, starts when
  // the two running at that time have ended, before the other two.
  EXPECT_THAT(StartTimes(e), ElementsAre("big@0", "small[1]@500", "small[2]@500", "big@1500",
                                         "small[3]@2000", "small[4]@2000"));
}

TEST(BuilderTest, StepFileNamesAreDistinctForDistinctIds) {
  EXPECT_EQ(StepFileName("train[1]"), "train[1]");
  EXPECT_EQ(StepFileName("train[a/b]"), "train[a%2Fb]");
  EXPECT_NE(StepFileName("train[a/b]"), StepFileName("train[a_b]"));
  EXPECT_NE(StepFileName("train[a%2Fb]"), StepFileName("train[a/b]"));
  EXPECT_EQ(LogFileName("x/y"), "x%2Fy.log");
}

}  // namespace
}  // namespace cairn::pipeline
