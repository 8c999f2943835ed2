// The QueueStore contract, run against the queues of every MetadataStore backend.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "fakes/store_backends.h"
#include "store/metadata_store.h"
#include "util/hash.h"

namespace cairn::store {
namespace {

using core::Task;
using core::TaskState;
using fakes::MemoryBackend;
using fakes::SqliteBackend;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TaskQuery Query(std::string queue, std::vector<TaskState> states = {}, std::string agent = "",
                int64_t max_results = 1000) {
  TaskQuery q;
  q.queue = std::move(queue);
  q.states = std::move(states);
  q.agent = std::move(agent);
  q.max_results = max_results;
  return q;
}

template <typename Backend>
class QueueStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cairn-queue-" + RandomHex(8));
    std::filesystem::create_directories(dir_);
    store_ = Backend::Open(dir_.string());
    ASSERT_TRUE(q().EnsureQueue("gpu", 1).ok());
    ASSERT_TRUE(q().EnsureQueue("cpu", 1).ok());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  QueueStore& q() { return store_->queue(); }

  std::string Enqueue(const std::string& queue, int64_t priority = 0, int64_t gpus = 0,
                      int64_t max_attempts = 2) {
    Task t;
    t.id = RandomHex(16);
    t.queue = queue;
    t.priority = priority;
    t.needs.gpus = gpus;
    t.needs.cpus = 2.5;
    t.needs.memory_mib = 4096;
    t.spec = R"({"command":"python train.py"})";
    t.requirements = R"({"cuda_major":12})";
    t.owner = "alice";
    t.team = "vision";
    t.run_id = "run-" + t.id.substr(0, 6);
    t.max_attempts = max_attempts;
    t.created_time = 10;
    Result<Task> stored = q().EnqueueTask(t);
    EXPECT_TRUE(stored.ok()) << stored.status().ToString();
    return t.id;
  }

  // Leases the first task of `queues` for `agent`, taking every task (GPUs "0").
  std::optional<Task> Lease(const std::string& agent, std::vector<std::string> queues = {"gpu"},
                            int64_t now = 100, int64_t expiry = 200) {
    LeaseRequest r;
    r.queues = std::move(queues);
    r.agent = agent;
    r.now = now;
    r.lease_expiry = expiry;
    r.place = [](const Task&) { return std::optional<std::string>("0"); };
    Result<std::optional<Task>> leased = q().LeaseTask(r);
    EXPECT_TRUE(leased.ok()) << leased.status().ToString();
    return leased.ok() ? *leased : std::nullopt;
  }

  std::vector<std::string> Ids(const TaskQuery& query) {
    Result<std::vector<Task>> tasks = q().ListTasks(query);
    EXPECT_TRUE(tasks.ok()) << tasks.status().ToString();
    std::vector<std::string> out;
    if (!tasks.ok()) return out;
    for (const Task& t : *tasks) out.push_back(t.id);
    return out;
  }

  std::filesystem::path dir_;
  std::unique_ptr<MetadataStore> store_;
};

using Backends = ::testing::Types<MemoryBackend, SqliteBackend>;
TYPED_TEST_SUITE(QueueStoreTest, Backends);

TYPED_TEST(QueueStoreTest, QueuesAreMadeOnFirstUseAndKeptAfter) {
  Result<core::Queue> again = this->q().EnsureQueue("gpu", 50);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->created_time, 1) << "made once";
  ASSERT_TRUE(this->q().UpdateQueue("gpu", "the A100s", 5).ok());
  Result<core::Queue> gpu = this->q().GetQueue("gpu");
  ASSERT_TRUE(gpu.ok());
  EXPECT_EQ(*gpu, (core::Queue{"gpu", "the A100s", 5, 1}));
  EXPECT_EQ(this->q().GetQueue("tpu").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->q().UpdateQueue("tpu", "", 0).code(), StatusCode::kNotFound);
  Result<std::vector<core::Queue>> all = this->q().ListQueues();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, "cpu");
  EXPECT_EQ((*all)[1].name, "gpu");
}

TYPED_TEST(QueueStoreTest, ATaskIsStoredWhole) {
  const std::string id = this->Enqueue("gpu", 3, 2);
  Result<Task> t = this->q().GetTask(id);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->state, TaskState::kQueued);
  EXPECT_GT(t->seq, 0);
  EXPECT_EQ(t->priority, 3);
  EXPECT_EQ(t->needs, (core::TaskNeeds{2, 2.5, 4096}));
  EXPECT_EQ(t->spec, R"({"command":"python train.py"})");
  EXPECT_EQ(t->requirements, R"({"cuda_major":12})");
  EXPECT_EQ(t->owner, "alice");
  EXPECT_EQ(t->team, "vision");
  EXPECT_EQ(t->run_id, "run-" + id.substr(0, 6));
  EXPECT_EQ(t->attempt, 0);
  EXPECT_EQ(t->max_attempts, 2);
  EXPECT_EQ(t->created_time, 10);

  Task dup;
  dup.id = id;
  dup.queue = "gpu";
  EXPECT_EQ(this->q().EnqueueTask(dup).status().code(), StatusCode::kAlreadyExists);
  Task lost;
  lost.id = RandomHex(16);
  lost.queue = "tpu";
  EXPECT_EQ(this->q().EnqueueTask(lost).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->q().GetTask("nope").status().code(), StatusCode::kNotFound);
}

TYPED_TEST(QueueStoreTest, HigherPriorityStartsFirstThenFirstQueued) {
  const std::string a = this->Enqueue("gpu", 0);
  const std::string b = this->Enqueue("gpu", 5);
  const std::string c = this->Enqueue("gpu", 0);
  const std::string d = this->Enqueue("cpu", 9);
  EXPECT_THAT(this->Ids(Query("gpu")), ElementsAre(b, a, c));
  EXPECT_THAT(this->Ids(Query("")), ElementsAre(d, b, a, c));
  EXPECT_THAT(this->Ids(Query("", {}, "", 2)), ElementsAre(d, b));
  EXPECT_EQ(this->Lease("agent-1")->id, b);
  EXPECT_EQ(this->Lease("agent-1")->id, a);
  EXPECT_THAT(this->Ids(Query("", {TaskState::kRunning})), ElementsAre(b, a));
  EXPECT_THAT(this->Ids(Query("", {TaskState::kQueued})), ElementsAre(d, c));
  EXPECT_THAT(this->Ids(Query("", {}, "agent-1")), ElementsAre(b, a));
  EXPECT_EQ(this->Lease("agent-2")->id, c) << "only the queues asked for";
  EXPECT_FALSE(this->Lease("agent-2").has_value());
  EXPECT_EQ(this->Lease("agent-2", {"gpu", "cpu"})->id, d);
}

TYPED_TEST(QueueStoreTest, ALeaseSkipsWhatTheAgentCannotPlace) {
  const std::string big = this->Enqueue("gpu", 0, 4);
  const std::string small = this->Enqueue("gpu", 0, 1);
  LeaseRequest r;
  r.queues = {"gpu"};
  r.agent = "two-gpus";
  r.now = 100;
  r.lease_expiry = 130;
  r.place = [](const Task& t) {
    return t.needs.gpus <= 2 ? std::optional<std::string>("1") : std::nullopt;
  };
  Result<std::optional<Task>> leased = this->q().LeaseTask(r);
  ASSERT_TRUE(leased.ok() && leased->has_value());
  const Task& t = **leased;
  EXPECT_EQ(t.id, small);
  EXPECT_EQ(t.state, TaskState::kRunning);
  EXPECT_EQ(t.agent, "two-gpus");
  EXPECT_EQ(t.gpus, "1");
  EXPECT_EQ(t.attempt, 1);
  EXPECT_EQ(t.start_time, 100);
  EXPECT_EQ(t.lease_expiry, 130);
  EXPECT_EQ(this->q().GetTask(small)->state, TaskState::kRunning) << "stored";
  leased = this->q().LeaseTask(r);
  ASSERT_TRUE(leased.ok());
  EXPECT_FALSE(leased->has_value()) << "the big one waits";
  EXPECT_EQ(this->q().GetTask(big)->state, TaskState::kQueued);
}

TYPED_TEST(QueueStoreTest, AgentsLeasingAtOnceNeverShareATask) {
  constexpr int kTasks = 40;
  for (int i = 0; i < kTasks; ++i) this->Enqueue("gpu");
  // A second store on the same database, as a second server process would open it.
  std::unique_ptr<MetadataStore> other =
      TypeParam::kPersistent ? TypeParam::Open(this->dir_.string()) : nullptr;
  std::mutex mu;
  std::map<std::string, int> taken;
  std::vector<std::thread> agents;
  for (int a = 0; a < 6; ++a) {
    agents.emplace_back([&, a] {
      QueueStore& store = (other != nullptr && a % 2 == 1) ? other->queue() : this->q();
      for (;;) {
        LeaseRequest r;
        r.queues = {"gpu"};
        r.agent = "agent-" + std::to_string(a);
        r.now = 100;
        r.lease_expiry = 1000;
        r.place = [](const Task&) { return std::optional<std::string>(""); };
        Result<std::optional<Task>> leased = store.LeaseTask(r);
        ASSERT_TRUE(leased.ok()) << leased.status().ToString();
        if (!leased->has_value()) return;
        std::lock_guard lock(mu);
        ++taken[(*leased)->id];
      }
    });
  }
  for (std::thread& t : agents) t.join();
  EXPECT_EQ(taken.size(), static_cast<size_t>(kTasks));
  for (const auto& [id, n] : taken) EXPECT_EQ(n, 1) << id << " leased twice";
}

TYPED_TEST(QueueStoreTest, OnlyTheHolderOfAnAttemptRenewsOrFinishesIt) {
  const std::string id = this->Enqueue("gpu");
  std::optional<Task> t = this->Lease("agent-1");
  ASSERT_TRUE(t.has_value());
  Result<Task> renewed = this->q().RenewLease(id, "agent-1", 1, 500);
  ASSERT_TRUE(renewed.ok()) << renewed.status().ToString();
  EXPECT_EQ(renewed->lease_expiry, 500);
  EXPECT_EQ(this->q().RenewLease(id, "agent-1", 1, 300)->lease_expiry, 500) << "never shortened";
  EXPECT_EQ(this->q().RenewLease(id, "agent-2", 1, 600).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->q().RenewLease(id, "agent-1", 2, 600).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->q().FinishTask(id, "agent-1", 1, TaskState::kRunning, "", 300).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(this->q().FinishTask(id, "agent-2", 1, TaskState::kDone, "", 300).status().code(),
            StatusCode::kFailedPrecondition);
  Result<Task> done = this->q().FinishTask(id, "agent-1", 1, TaskState::kDone, "exit 0", 300);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state, TaskState::kDone);
  EXPECT_EQ(done->reason, "exit 0");
  EXPECT_EQ(done->end_time, 300);
  EXPECT_EQ(done->agent, "");
  Status again = this->q().RenewLease(id, "agent-1", 1, 900).status();
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("it is done"));
}

TYPED_TEST(QueueStoreTest, ALeaseThatRunsOutStartsANewAttemptInItsPlace) {
  const std::string first = this->Enqueue("gpu", 0, 0, /*max_attempts=*/2);
  const std::string second = this->Enqueue("gpu");
  ASSERT_EQ(this->Lease("lost", {"gpu"}, 100, 200)->id, first);
  Result<std::vector<Task>> expired = this->q().ExpiredLeases(150);
  ASSERT_TRUE(expired.ok());
  EXPECT_TRUE(expired->empty()) << "not yet";
  expired = this->q().ExpiredLeases(201);
  ASSERT_TRUE(expired.ok());
  ASSERT_EQ(expired->size(), 1u);
  EXPECT_EQ((*expired)[0].id, first);
  EXPECT_EQ(this->q().ExpireLease(first, 1, "run-2", "agent lost", 150).status().code(),
            StatusCode::kFailedPrecondition)
      << "its lease has not run out at 150";
  Result<Task> again = this->q().ExpireLease(first, 1, "run-2", "agent lost", 201);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->state, TaskState::kQueued);
  EXPECT_EQ(again->run_id, "run-2");
  EXPECT_EQ(again->reason, "agent lost");
  EXPECT_EQ(again->agent, "");
  EXPECT_EQ(again->attempt, 1);
  EXPECT_EQ(this->q().ExpireLease(first, 1, "run-3", "agent lost", 202).status().code(),
            StatusCode::kFailedPrecondition)
      << "done once";
  // The lost agent comes back: its attempt is gone.
  EXPECT_EQ(this->q().FinishTask(first, "lost", 1, TaskState::kDone, "", 203).status().code(),
            StatusCode::kFailedPrecondition);
  // The new attempt keeps its place before the task queued after it.
  std::optional<Task> retry = this->Lease("other", {"gpu"}, 210, 300);
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(retry->id, first);
  EXPECT_EQ(retry->attempt, 2);
  EXPECT_EQ(retry->run_id, "run-2");
  // The last attempt lost too: the task fails.
  Result<Task> failed = this->q().ExpireLease(first, 2, "run-3", "agent lost", 301);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->state, TaskState::kFailed);
  EXPECT_EQ(failed->reason, "agent lost");
  EXPECT_EQ(failed->end_time, 301);
  EXPECT_EQ(this->Lease("other", {"gpu"}, 310, 400)->id, second);
}

TYPED_TEST(QueueStoreTest, CancellingAWaitingTaskEndsItARunningOneAsksItsAgent) {
  const std::string waiting = this->Enqueue("gpu", 0);
  const std::string running = this->Enqueue("gpu", 9);
  ASSERT_EQ(this->Lease("agent-1")->id, running);
  Result<Task> cancelled = this->q().CancelTask(waiting, "cancelled by alice", 120);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state, TaskState::kCancelled);
  EXPECT_EQ(cancelled->end_time, 120);
  Result<Task> asked = this->q().CancelTask(running, "cancelled by alice", 121);
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->state, TaskState::kRunning);
  EXPECT_TRUE(asked->cancel_requested);
  EXPECT_TRUE(this->q().RenewLease(running, "agent-1", 1, 300)->cancel_requested)
      << "the agent hears of it at its next renewal";
  ASSERT_TRUE(
      this->q().FinishTask(running, "agent-1", 1, TaskState::kCancelled, "killed", 130).ok());
  EXPECT_EQ(this->q().CancelTask(running, "", 140).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_FALSE(this->Lease("agent-2").has_value()) << "a cancelled task never starts";

  // Cancelled while running, and its agent died before it could stop it: it ends cancelled,
  // and is not queued again.
  const std::string orphan = this->Enqueue("gpu", 0, 0, /*max_attempts=*/3);
  ASSERT_EQ(this->Lease("dies", {"gpu"}, 150, 160)->id, orphan);
  ASSERT_TRUE(this->q().CancelTask(orphan, "cancelled by bob", 155).ok());
  Result<Task> ended = this->q().ExpireLease(orphan, 1, "run-next", "agent lost", 170);
  ASSERT_TRUE(ended.ok()) << ended.status().ToString();
  EXPECT_EQ(ended->state, TaskState::kCancelled);
  EXPECT_EQ(ended->reason, "cancelled by bob");
}

TYPED_TEST(QueueStoreTest, AWaitingTaskMovesAndSaysWhyItWaits) {
  const std::string a = this->Enqueue("gpu", 0);
  const std::string b = this->Enqueue("gpu", 0);
  Result<Task> moved = this->q().MoveTask(b, "cpu", 7);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->queue, "cpu");
  EXPECT_EQ(moved->priority, 7);
  EXPECT_EQ(this->q().MoveTask(a, "tpu", 0).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(this->q().SetTaskReason(a, "over the team's GPU quota").ok());
  EXPECT_EQ(this->q().GetTask(a)->reason, "over the team's GPU quota");
  ASSERT_EQ(this->Lease("agent-1")->id, a);
  EXPECT_EQ(this->q().GetTask(a)->reason, "") << "a started task no longer waits";
  EXPECT_EQ(this->q().MoveTask(a, "cpu", 0).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->q().SetTaskReason(a, "x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->Lease("agent-1", {"cpu"})->id, b);
}

TYPED_TEST(QueueStoreTest, ATeamOverItsQuotaWaitsWithTheReasonAndOthersGoAhead) {
  ASSERT_TRUE(this->q().PutTeamQuota({"vision", 2, 0}).ok());
  const std::string first = this->Enqueue("gpu", 0, 2);   // team vision, 2 GPUs
  const std::string second = this->Enqueue("gpu", 0, 1);  // vision again: over 2 GPUs
  Task other;
  other.id = RandomHex(16);
  other.queue = "gpu";
  other.needs.gpus = 1;
  other.team = "speech";
  other.run_id = "run-other";
  other.max_attempts = 1;
  ASSERT_TRUE(this->q().EnqueueTask(other).ok());
  std::optional<Task> a = this->Lease("agent-1");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->id, first);
  std::optional<Task> b = this->Lease("agent-2");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->id, other.id) << "vision is at its 2 GPUs; speech has no quota";
  Result<Task> waiting = this->q().GetTask(second);
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->reason, "over quota: team vision has 2 of its 2 GPUs in use");
  Result<core::TeamUsage> used = this->q().GetTeamUsage("vision", 100);
  ASSERT_TRUE(used.ok());
  EXPECT_EQ(used->gpus, 2);

  // Once the first ends, the second starts; its attempt's GPU time stays in the ledger.
  ASSERT_TRUE(this->q().FinishTask(first, "agent-1", 1, TaskState::kDone, "", 100 + 3'600'000).ok());
  std::optional<Task> c = this->Lease("agent-1", {"gpu"}, 100 + 3'600'000, 200 + 3'600'000);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->id, second);
  EXPECT_EQ(c->reason, "");
  used = this->q().GetTeamUsage("vision", 100 + 2 * 3'600'000);
  ASSERT_TRUE(used.ok());
  EXPECT_EQ(used->gpus, 1);
  EXPECT_DOUBLE_EQ(used->gpu_hours, 2.0 + 1.0) << "2 GPUs for an hour, then 1 for an hour";

  // A GPU-hours cap: over it, nothing that needs a GPU starts; a week later it has rolled off.
  ASSERT_TRUE(this->q().PutTeamQuota({"vision", 0, 2.5}).ok());
  const std::string third = this->Enqueue("gpu", 0, 1);
  EXPECT_FALSE(this->Lease("agent-2", {"gpu"}, 100 + 2 * 3'600'000).has_value());
  EXPECT_THAT(this->q().GetTask(third)->reason,
              HasSubstr("used 3.0 of its 2.5 GPU-hours in the last 7 days"));
  Result<std::vector<core::TeamQuota>> quotas = this->q().ListTeamQuotas();
  ASSERT_TRUE(quotas.ok());
  EXPECT_THAT(*quotas, ElementsAre(core::TeamQuota{"vision", 0, 2.5}));
  ASSERT_TRUE(this->q().PutTeamQuota({"vision", 0, 0}).ok());
  EXPECT_TRUE(this->q().ListTeamQuotas()->empty()) << "no cap: no quota";
}

TYPED_TEST(QueueStoreTest, AgentsDescribeThemselves) {
  core::Agent a;
  a.id = "gpu-host-1";
  a.name = "gpu-host-1.lab";
  a.owner = "svc-agents";
  a.queues = {"gpu", "cpu"};
  a.host = R"({"os":"debian"})";
  a.gpus = {"0", "1"};
  a.slots = 2;
  a.started_time = 5;
  a.heartbeat_time = 5;
  ASSERT_TRUE(this->q().PutAgent(a).ok());
  Result<core::Agent> got = this->q().GetAgent("gpu-host-1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, a);
  ASSERT_TRUE(this->q().AgentHeartbeat("gpu-host-1", 9).ok());
  EXPECT_EQ(this->q().GetAgent("gpu-host-1")->heartbeat_time, 9);
  a.slots = 4;
  ASSERT_TRUE(this->q().PutAgent(a).ok());
  Result<std::vector<core::Agent>> all = this->q().ListAgents();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].slots, 4);
  EXPECT_EQ(this->q().GetAgent("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->q().AgentHeartbeat("nope", 1).code(), StatusCode::kNotFound);
}

TYPED_TEST(QueueStoreTest, TasksSurviveAReopen) {
  if (!TypeParam::kPersistent) GTEST_SKIP() << "nothing to reopen";
  const std::string id = this->Enqueue("gpu", 4, 1);
  ASSERT_TRUE(this->Lease("agent-1").has_value());
  this->store_.reset();
  this->store_ = TypeParam::Open(this->dir_.string());
  Result<Task> t = this->q().GetTask(id);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->state, TaskState::kRunning);
  EXPECT_EQ(t->agent, "agent-1");
  EXPECT_EQ(t->priority, 4);
  // seq is never given twice.
  const std::string later = this->Enqueue("gpu");
  EXPECT_GT(this->q().GetTask(later)->seq, t->seq);
}

}  // namespace
}  // namespace cairn::store
