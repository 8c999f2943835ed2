#include "service/task_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "fakes/fake_clock.h"
#include "store/memory/memory_store.h"

namespace cairn::service {
namespace {

using core::Task;
using core::TaskState;
using ::testing::HasSubstr;

constexpr int64_t kTaskNow = 1'700'000'000'000;

env::HostFacts GpuHost(const std::string& driver, const std::string& cuda) {
  env::HostFacts h;
  h.os = "linux";
  h.glibc = "2.36";
  h.driver_version = driver;
  h.cuda_driver_version = cuda;
  env::GpuInfo gpu;
  gpu.name = "NVIDIA A100";
  gpu.compute_capability = "8.0";
  gpu.driver_version = driver;
  h.gpus = {gpu, gpu};
  return h;
}

env::HostFacts CpuHost() {
  env::HostFacts h;
  h.os = "linux";
  h.glibc = "2.36";
  h.gpu_note = "nvidia-smi not found";
  return h;
}

class TaskServiceTest : public ::testing::Test {
 protected:
  Result<Task> Enqueue(const std::string& queue, int64_t gpus = 0,
                       const std::string& requirements = "", int64_t max_attempts = 2) {
    EnqueueRequest r;
    r.queue = queue;
    r.experiment_id = "0";
    r.run_name = "train";
    r.user_id = "alice";
    r.needs.gpus = gpus;
    r.spec = R"({"command": ["python", "train.py"]})";
    r.requirements = requirements;
    r.max_attempts = max_attempts;
    r.tags = {{"team", "vision"}};
    return svc_.Enqueue(r);
  }

  LeaseAsk Ask(const std::string& agent, env::HostFacts host, std::vector<std::string> gpus) {
    LeaseAsk a;
    a.agent = agent;
    a.queues = {"gpu"};
    a.free_gpus = std::move(gpus);
    a.host = std::move(host);
    a.lease_ms = 30'000;
    return a;
  }

  core::Run RunOf(const std::string& run_id) { return *tracking_.GetRun(run_id); }

  std::string Tag(const core::Run& run, std::string_view key) {
    const core::Tag* t = run.FindTag(key);
    return t == nullptr ? "" : t->value;
  }

  std::unique_ptr<store::MetadataStore> store_ = store::NewMemoryMetadataStore({});
  fakes::FakeClock clock_{kTaskNow};
  TrackingService tracking_{store_.get(), &clock_};
  TaskService svc_{store_.get(), &tracking_, &clock_};
};

TEST_F(TaskServiceTest, ATaskStartsInAScheduledRunItsCallerMade) {
  CreateRunRequest made;
  made.experiment_id = "0";
  made.run_name = "uploaded";
  made.scheduled = true;
  Result<core::Run> run = tracking_.CreateRun(made);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->info.status, core::RunStatus::kScheduled);

  EnqueueRequest r;
  r.queue = "gpu";
  r.experiment_id = "0";
  r.run_id = run->info.run_id;
  r.spec = R"({"command": ["true"]})";
  r.tags = {{"team", "vision"}};
  Result<Task> task = svc_.Enqueue(r);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->run_id, run->info.run_id);
  core::Run adopted = RunOf(task->run_id);
  EXPECT_EQ(adopted.info.run_name, "uploaded");
  EXPECT_EQ(Tag(adopted, kTaskIdTag), task->id);
  EXPECT_EQ(Tag(adopted, kTaskAttemptTag), "1");
  EXPECT_EQ(Tag(adopted, "team"), "vision");

  // Not twice, not a running run, not another experiment's, not one that does not exist.
  Result<Task> again = svc_.Enqueue(r);
  EXPECT_EQ(again.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(again.status().message(), HasSubstr("belongs to task " + task->id));
  CreateRunRequest plain;
  plain.experiment_id = "0";
  Result<core::Run> running = tracking_.CreateRun(plain);
  ASSERT_TRUE(running.ok());
  r.run_id = running->info.run_id;
  EXPECT_THAT(svc_.Enqueue(r).status().message(), HasSubstr("must be active and SCHEDULED"));
  Result<std::string> other = tracking_.CreateExperiment("other", "", {});
  ASSERT_TRUE(other.ok());
  made.experiment_id = *other;
  Result<core::Run> elsewhere = tracking_.CreateRun(made);
  ASSERT_TRUE(elsewhere.ok());
  r.run_id = elsewhere->info.run_id;
  EXPECT_THAT(svc_.Enqueue(r).status().message(), HasSubstr("is not in experiment 0"));
  r.run_id = std::string(32, 'a');
  EXPECT_THAT(svc_.Enqueue(r).status().message(), HasSubstr("not found"));
}

TEST_F(TaskServiceTest, AWaitingLeaseIsAnsweredWhenATaskIsQueued) {
  std::promise<Result<std::optional<Task>>> answered;
  auto done = [&answered](Result<std::optional<Task>> r) { answered.set_value(std::move(r)); };
  svc_.LeaseOrWait(Ask("waiter", CpuHost(), {}), 10'000, done);
  std::future<Result<std::optional<Task>>> later = answered.get_future();
  EXPECT_EQ(later.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  Result<Task> queued = Enqueue("gpu");
  ASSERT_TRUE(queued.ok());
  ASSERT_EQ(later.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  Result<std::optional<Task>> got = later.get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->id, queued->id);
  EXPECT_EQ((*got)->agent, "waiter");
}

TEST_F(TaskServiceTest, AWaitingLeaseEndsEmptyAtItsDeadlineOrWhenTheServiceStops) {
  std::promise<Result<std::optional<Task>>> timed_out;
  svc_.LeaseOrWait(Ask("a", CpuHost(), {}), 100,
                   [&](Result<std::optional<Task>> r) { timed_out.set_value(std::move(r)); });
  // A task the agent cannot run does not end the wait.
  ASSERT_TRUE(Enqueue("gpu", 1).ok());
  std::future<Result<std::optional<Task>>> first = timed_out.get_future();
  ASSERT_EQ(first.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  Result<std::optional<Task>> none = first.get();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  std::promise<Result<std::optional<Task>>> stopped;
  svc_.LeaseOrWait(Ask("b", CpuHost(), {}), 30'000,
                   [&](Result<std::optional<Task>> r) { stopped.set_value(std::move(r)); });
  svc_.StopWaiting();
  std::future<Result<std::optional<Task>>> second = stopped.get_future();
  ASSERT_EQ(second.wait_for(std::chrono::seconds(1)), std::future_status::ready);
  EXPECT_FALSE(second.get()->has_value());
}

TEST_F(TaskServiceTest, WhatATaskOrAnAgentSaysIsBounded) {
  EnqueueRequest r;
  r.queue = "gpu";
  r.experiment_id = "0";
  r.spec = R"({"command": ["true"]})";
  r.requirements = R"({"cuda": ")" + std::string(5000, '1') + R"("})";
  EXPECT_THAT(svc_.Enqueue(r).status().message(), HasSubstr("at most 4 KiB"));
  r.requirements = "";
  r.spec = R"({"command": [")" + std::string(kMaxTaskSpecBytes, 'x') + R"("]})";
  EXPECT_THAT(svc_.Enqueue(r).status().message(), HasSubstr("at most 1 MiB"));

  core::Agent agent;
  agent.id = std::string(129, 'a');
  agent.queues = {"gpu"};
  EXPECT_EQ(svc_.RegisterAgent(agent).code(), StatusCode::kInvalidArgument);
  agent.id = "a";
  agent.host = R"({"os": ")" + std::string(64 * 1024, 'l') + R"("})";
  EXPECT_THAT(svc_.RegisterAgent(agent).message(), HasSubstr("64 KiB of host facts"));
  agent.host = "";
  agent.queues.assign(257, "gpu");
  EXPECT_EQ(svc_.RegisterAgent(agent).code(), StatusCode::kInvalidArgument);

  // A finish reason is cut, not refused: the attempt still ends.
  Result<Task> task = Enqueue("gpu");
  ASSERT_TRUE(task.ok());
  Result<std::optional<Task>> leased = svc_.Lease(Ask("a", CpuHost(), {}));
  ASSERT_TRUE(leased.ok() && leased->has_value());
  Result<Task> done =
      svc_.Finish(task->id, "a", 1, TaskState::kFailed, std::string(5000, 'r'));
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->reason.size(), 2003u);
  EXPECT_TRUE(done->reason.ends_with("..."));
}

TEST_F(TaskServiceTest, AClonedTaskRunsTheSameSpecWithItsParametersChanged) {
  EnqueueRequest r;
  r.queue = "gpu";
  r.experiment_id = "0";
  r.run_name = "base";
  r.needs.gpus = 1;
  r.requirements = R"({"cuda":"12"})";
  r.spec = R"({"command":["python","train.py"],"params":{"lr":"0.1"}})";
  Result<Task> original = svc_.Enqueue(r);
  ASSERT_TRUE(original.ok());
  CloneRequest c;
  c.run_id = original->run_id;
  c.params = {{"lr", "0.5"}, {"epochs", "3"}};
  c.user_id = "bob";
  Result<Task> clone = svc_.Clone(c);
  ASSERT_TRUE(clone.ok()) << clone.status().ToString();
  EXPECT_NE(clone->id, original->id);
  EXPECT_EQ(clone->queue, "gpu");
  EXPECT_EQ(clone->needs.gpus, 1);
  EXPECT_EQ(clone->requirements, original->requirements);
  EXPECT_EQ(clone->spec,
            R"({"command":["python","train.py"],"params":{"epochs":"3","lr":"0.5"}})");
  core::Run run = RunOf(clone->run_id);
  EXPECT_EQ(run.info.run_name, "base-clone");
  EXPECT_EQ(run.info.status, core::RunStatus::kScheduled);
  EXPECT_EQ(Tag(run, "cairn.clone.of"), original->run_id);
  ASSERT_NE(run.FindParam("lr"), nullptr);
  EXPECT_EQ(run.FindParam("lr")->value, "0.5");

  c.reproduce = true;
  c.params.clear();
  Result<Task> again = svc_.Clone(c);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(Tag(RunOf(again->run_id), "cairn.reproduce.of"), original->run_id);
  EXPECT_EQ(RunOf(again->run_id).info.run_name, "base-reproduced");

  CreateRunRequest plain;
  plain.experiment_id = "0";
  Result<core::Run> not_queued = tracking_.CreateRun(plain);
  ASSERT_TRUE(not_queued.ok());
  c.run_id = not_queued->info.run_id;
  EXPECT_THAT(svc_.Clone(c).status().message(), HasSubstr("was not run from a queue"));
}

TEST_F(TaskServiceTest, AQueuedTaskIsAScheduledRun) {
  Result<Task> t = Enqueue("gpu", 1);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->state, TaskState::kQueued);
  core::Run run = RunOf(t->run_id);
  EXPECT_EQ(run.info.status, core::RunStatus::kScheduled);
  EXPECT_EQ(run.info.run_name, "train");
  EXPECT_EQ(Tag(run, kTaskIdTag), t->id);
  EXPECT_EQ(Tag(run, kTaskQueueTag), "gpu");
  EXPECT_EQ(Tag(run, "team"), "vision");
  Result<std::vector<core::Queue>> queues = svc_.ListQueues();
  ASSERT_TRUE(queues.ok());
  ASSERT_EQ(queues->size(), 1u) << "made on first use";
}

TEST_F(TaskServiceTest, BadTasksAreRefusedAndLeaveNoRun) {
  EXPECT_THAT(Enqueue("gpu queue").status().message(), HasSubstr("Invalid queue name"));
  EXPECT_THAT(Enqueue("gpu", -1).status().message(), HasSubstr("cannot be negative"));
  EXPECT_THAT(Enqueue("gpu", 0, R"({"cuda": 12})").status().message(),
              HasSubstr("'cuda' must be a string"));
  EXPECT_THAT(Enqueue("gpu", 0, R"({"tpu": "v4"})").status().message(),
              HasSubstr("Unknown task requirement 'tpu'"));
  EXPECT_THAT(Enqueue("gpu", 0, "", 0).status().message(), HasSubstr("max_attempts"));
  store::RunSearchQuery all;
  all.experiment_ids = {"0"};
  all.view = core::ViewType::kAll;
  EXPECT_TRUE(store_->SearchRuns(all)->empty());
}

TEST_F(TaskServiceTest, ATaskLandsOnlyWhereItsEnvironmentCanRun) {
  Result<Task> cuda12 = Enqueue("gpu", 1, R"({"cuda": "12"})");
  ASSERT_TRUE(cuda12.ok());
  // A CUDA 11 driver (470) cannot run a CUDA 12 build; a CPU host has no driver at all.
  Result<std::optional<Task>> none = svc_.Lease(Ask("old", GpuHost("470.199.02", "11.4"), {"0"}));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  none = svc_.Lease(Ask("cpu", CpuHost(), {"0"}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_THAT(TaskService::HostShortfall(R"({"cuda": "12"})", GpuHost("470.199.02", "11.4")),
              HasSubstr("cuda 12"));
  // No free GPU: it waits.
  none = svc_.Lease(Ask("busy", GpuHost("535.104.05", "12.2"), {}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  Result<std::optional<Task>> leased =
      svc_.Lease(Ask("new", GpuHost("535.104.05", "12.2"), {"1", "0"}));
  ASSERT_TRUE(leased.ok() && leased->has_value()) << leased.status().ToString();
  EXPECT_EQ((*leased)->id, cuda12->id);
  EXPECT_EQ((*leased)->gpus, "1");
  EXPECT_EQ((*leased)->lease_expiry, kTaskNow + 30'000);
  core::Run run = RunOf(cuda12->run_id);
  EXPECT_EQ(run.info.status, core::RunStatus::kRunning);
  EXPECT_EQ(Tag(run, kTaskAgentTag), "new");
}

TEST_F(TaskServiceTest, AFinishedAttemptEndsItsRun) {
  ASSERT_TRUE(Enqueue("gpu").ok());
  Result<std::optional<Task>> leased = svc_.Lease(Ask("a1", CpuHost(), {}));
  ASSERT_TRUE(leased.ok() && leased->has_value());
  const Task& t = **leased;
  clock_.Advance(10'000);
  Result<Task> renewed = svc_.Renew(t.id, "a1", 1, 30'000);
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed->lease_expiry, kTaskNow + 40'000);
  Result<Task> failed = svc_.Finish(t.id, "a1", 1, TaskState::kFailed, "exit code 3");
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  core::Run run = RunOf(t.run_id);
  EXPECT_EQ(run.info.status, core::RunStatus::kFailed);
  EXPECT_EQ(Tag(run, TrackingService::kFailureReasonTag), "exit code 3");
  EXPECT_EQ(run.info.end_time, kTaskNow + 10'000);
}

TEST_F(TaskServiceTest, ALostAgentsAttemptFailsAndTheTaskRunsAgainInANewRun) {
  Result<Task> queued = Enqueue("gpu", 0, "", /*max_attempts=*/2);
  ASSERT_TRUE(queued.ok());
  Result<std::optional<Task>> first = svc_.Lease(Ask("lost", CpuHost(), {}));
  ASSERT_TRUE(first.ok() && first->has_value());
  // What the attempt itself recorded stays with its run.
  ASSERT_TRUE(tracking_.SetTag(queued->run_id, {"cairn.heartbeat", "1"}).ok());
  ASSERT_TRUE(tracking_.SetTag(queued->run_id, {"cairn.host.os", "linux"}).ok());
  clock_.Advance(29'000);
  EXPECT_EQ(*svc_.ExpireLeases(), 0) << "its lease has not run out";
  clock_.Advance(2'000);
  EXPECT_EQ(*svc_.ExpireLeases(), 1);
  core::Run dead = RunOf(queued->run_id);
  EXPECT_EQ(dead.info.status, core::RunStatus::kFailed);
  EXPECT_THAT(Tag(dead, TrackingService::kFailureReasonTag), HasSubstr("agent lost"));

  Result<Task> waiting = svc_.GetTask(queued->id);
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->state, TaskState::kQueued);
  ASSERT_NE(waiting->run_id, queued->run_id);
  core::Run next = RunOf(waiting->run_id);
  EXPECT_EQ(next.info.status, core::RunStatus::kScheduled);
  EXPECT_EQ(next.info.run_name, "train");
  EXPECT_EQ(Tag(next, kTaskAttemptTag), "2");
  EXPECT_EQ(Tag(next, "cairn.task.previous_run"), queued->run_id);
  EXPECT_EQ(Tag(next, "team"), "vision");
  EXPECT_EQ(Tag(next, "cairn.heartbeat"), "");
  EXPECT_EQ(Tag(next, "cairn.host.os"), "");

  // The lost agent comes back and cannot finish what is no longer its own.
  EXPECT_EQ(svc_.Finish(queued->id, "lost", 1, TaskState::kDone, "").status().code(),
            StatusCode::kFailedPrecondition);
  Result<std::optional<Task>> second = svc_.Lease(Ask("other", CpuHost(), {}));
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->attempt, 2);
  EXPECT_EQ(RunOf(waiting->run_id).info.status, core::RunStatus::kRunning);
  // Its last attempt lost too: the task fails, and no further run is made.
  clock_.Advance(31'000);
  EXPECT_EQ(*svc_.ExpireLeases(), 1);
  EXPECT_EQ(svc_.GetTask(queued->id)->state, TaskState::kFailed);
  EXPECT_EQ(RunOf(waiting->run_id).info.status, core::RunStatus::kFailed);
}

TEST_F(TaskServiceTest, ACancelledTaskWhoseAgentDiedEndsKilled) {
  Result<Task> queued = Enqueue("gpu", 0, "", /*max_attempts=*/3);
  ASSERT_TRUE(queued.ok());
  ASSERT_TRUE(svc_.Lease(Ask("dies", CpuHost(), {}))->has_value());
  ASSERT_TRUE(svc_.Cancel(queued->id, "bob").ok());
  clock_.Advance(31'000);
  EXPECT_EQ(*svc_.ExpireLeases(), 1);
  Result<Task> ended = svc_.GetTask(queued->id);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(ended->state, TaskState::kCancelled);
  EXPECT_EQ(ended->run_id, queued->run_id) << "no new attempt";
  EXPECT_EQ(RunOf(queued->run_id).info.status, core::RunStatus::kKilled);
  store::RunSearchQuery all;
  all.experiment_ids = {"0"};
  EXPECT_EQ(store_->SearchRuns(all)->size(), 1u);
}

TEST_F(TaskServiceTest, CancelAndMove) {
  Result<Task> a = Enqueue("gpu");
  Result<Task> b = Enqueue("gpu");
  ASSERT_TRUE(a.ok() && b.ok());
  Result<Task> cancelled = svc_.Cancel(a->id, "bob");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state, TaskState::kCancelled);
  EXPECT_EQ(cancelled->reason, "cancelled by bob");
  EXPECT_EQ(RunOf(a->run_id).info.status, core::RunStatus::kKilled);
  Result<Task> moved = svc_.Move(b->id, "cpu", 5);
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->queue, "cpu");
  EXPECT_EQ(moved->priority, 5);
  EXPECT_EQ(Tag(RunOf(b->run_id), kTaskQueueTag), "cpu");
  LeaseAsk ask = Ask("a1", CpuHost(), {});
  ask.queues = {"cpu"};
  Result<std::optional<Task>> leased = svc_.Lease(ask);
  ASSERT_TRUE(leased.ok() && leased->has_value());
  Result<Task> asked = svc_.Cancel(b->id, "bob");
  ASSERT_TRUE(asked.ok());
  EXPECT_TRUE(asked->cancel_requested);
  EXPECT_TRUE(svc_.Renew(b->id, "a1", 1)->cancel_requested);
  ASSERT_TRUE(svc_.Finish(b->id, "a1", 1, TaskState::kCancelled, "cancelled by bob").ok());
  EXPECT_EQ(RunOf(b->run_id).info.status, core::RunStatus::kKilled);
}

}  // namespace
}  // namespace cairn::service
