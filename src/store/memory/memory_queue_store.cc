#include "store/memory/memory_queue_store.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "store/queue_rules.h"

namespace cairn::store {
namespace {

using core::Agent;
using core::Queue;
using core::Task;
using core::TaskState;

class MemoryQueueStore : public QueueStore {
 public:
  Result<Queue> EnsureQueue(std::string_view name, int64_t now) override {
    std::lock_guard lock(mu_);
    auto it = queues_.find(name);
    if (it == queues_.end()) {
      Queue q;
      q.name = std::string(name);
      q.created_time = now;
      it = queues_.emplace(q.name, q).first;
    }
    return it->second;
  }

  Result<Queue> GetQueue(std::string_view name) override {
    std::lock_guard lock(mu_);
    auto it = queues_.find(name);
    if (it == queues_.end()) return QueueNotFound(name);
    return it->second;
  }

  Status UpdateQueue(std::string_view name, std::string_view description,
                     int64_t default_priority) override {
    std::lock_guard lock(mu_);
    auto it = queues_.find(name);
    if (it == queues_.end()) return QueueNotFound(name);
    it->second.description = std::string(description);
    it->second.default_priority = default_priority;
    return Status::Ok();
  }

  Result<std::vector<Queue>> ListQueues() override {
    std::lock_guard lock(mu_);
    std::vector<Queue> out;
    for (const auto& [name, q] : queues_) out.push_back(q);
    return out;
  }

  Result<Task> EnqueueTask(const Task& task) override {
    std::lock_guard lock(mu_);
    if (queues_.count(task.queue) == 0) return QueueNotFound(task.queue);
    if (tasks_.count(task.id) != 0) return AlreadyExists("A task with id " + task.id + " exists");
    Task t = task;
    t.seq = ++last_seq_;
    t.state = TaskState::kQueued;
    tasks_[t.id] = t;
    return t;
  }

  Result<Task> GetTask(std::string_view id) override {
    std::lock_guard lock(mu_);
    CAIRN_ASSIGN_OR_RETURN(Task * t, Find(id));
    return *t;
  }

  Result<std::vector<Task>> ListTasks(const TaskQuery& query) override {
    std::lock_guard lock(mu_);
    std::vector<Task> out;
    for (const auto& [id, t] : tasks_) {
      if (!query.queue.empty() && t.queue != query.queue) continue;
      if (!query.agent.empty() && t.agent != query.agent) continue;
      if (!query.states.empty() &&
          std::find(query.states.begin(), query.states.end(), t.state) == query.states.end()) {
        continue;
      }
      out.push_back(t);
    }
    std::sort(out.begin(), out.end(), StartsBefore);
    if (static_cast<int64_t>(out.size()) > query.max_results) {
      out.resize(static_cast<size_t>(std::max<int64_t>(query.max_results, 0)));
    }
    return out;
  }

  Result<std::optional<Task>> LeaseTask(const LeaseRequest& request) override {
    std::lock_guard lock(mu_);
    std::vector<Task*> waiting;
    for (auto& [id, t] : tasks_) {
      if (t.state == TaskState::kQueued && std::find(request.queues.begin(), request.queues.end(),
                                                     t.queue) != request.queues.end()) {
        waiting.push_back(&t);
      }
    }
    std::sort(waiting.begin(), waiting.end(),
              [](const Task* a, const Task* b) { return StartsBefore(*a, *b); });
    std::map<std::string, core::TeamUsage> usage;  // of the teams seen, computed once
    for (Task* t : waiting) {
      if (auto q = quotas_.find(t->team); q != quotas_.end() && t->needs.gpus > 0) {
        auto u = usage.find(t->team);
        if (u == usage.end()) u = usage.emplace(t->team, UsageLocked(t->team, request.now)).first;
        if (std::string why = QuotaShortfall(*t, q->second, u->second); !why.empty()) {
          t->reason = why;
          continue;
        }
      }
      std::optional<std::string> gpus = request.place(*t);
      if (!gpus) continue;
      ApplyLease(t, request.agent, *gpus, request.now, request.lease_expiry);
      return std::optional<Task>(*t);
    }
    return std::optional<Task>();
  }

  Result<Task> RenewLease(std::string_view id, std::string_view agent, int64_t attempt,
                          int64_t lease_expiry) override {
    return Change(id, [&](Task* t) { return ApplyRenew(t, agent, attempt, lease_expiry); });
  }

  Result<Task> FinishTask(std::string_view id, std::string_view agent, int64_t attempt,
                          TaskState state, std::string_view reason, int64_t now) override {
    return Change(
        id, [&](Task* t) { return ApplyFinish(t, agent, attempt, state, reason, now); }, now);
  }

  Result<std::vector<Task>> ExpiredLeases(int64_t now) override {
    std::lock_guard lock(mu_);
    std::vector<Task> out;
    for (const auto& [id, t] : tasks_) {
      if (t.state == TaskState::kRunning && t.lease_expiry < now) out.push_back(t);
    }
    std::sort(out.begin(), out.end(), StartsBefore);
    return out;
  }

  Result<Task> ExpireLease(std::string_view id, int64_t attempt, std::string_view next_run_id,
                           std::string_view reason, int64_t now) override {
    return Change(
        id, [&](Task* t) { return ApplyExpire(t, attempt, next_run_id, reason, now); }, now);
  }

  Result<Task> CancelTask(std::string_view id, std::string_view reason, int64_t now) override {
    return Change(id, [&](Task* t) { return ApplyCancel(t, reason, now); });
  }

  Result<Task> MoveTask(std::string_view id, std::string_view queue, int64_t priority) override {
    std::lock_guard lock(mu_);
    if (queues_.count(queue) == 0) return QueueNotFound(queue);
    return ChangeLocked(id, [&](Task* t) { return ApplyMove(t, queue, priority); });
  }

  Status SetTaskReason(std::string_view id, std::string_view reason) override {
    return Change(id, [&](Task* t) { return ApplyReason(t, reason); }).status();
  }

  Status PutTeamQuota(const core::TeamQuota& quota) override {
    std::lock_guard lock(mu_);
    if (quota.gpus <= 0 && quota.gpu_hours <= 0) {
      quotas_.erase(quota.team);
    } else {
      quotas_[quota.team] = quota;
    }
    return Status::Ok();
  }

  Result<std::vector<core::TeamQuota>> ListTeamQuotas() override {
    std::lock_guard lock(mu_);
    std::vector<core::TeamQuota> out;
    for (const auto& [team, q] : quotas_) out.push_back(q);
    return out;
  }

  Result<core::TeamUsage> GetTeamUsage(std::string_view team, int64_t now) override {
    std::lock_guard lock(mu_);
    return UsageLocked(team, now);
  }

  Status PutAgent(const Agent& agent) override {
    std::lock_guard lock(mu_);
    agents_[agent.id] = agent;
    return Status::Ok();
  }

  Result<Agent> GetAgent(std::string_view id) override {
    std::lock_guard lock(mu_);
    auto it = agents_.find(id);
    if (it == agents_.end()) return AgentNotFound(id);
    return it->second;
  }

  Status AgentHeartbeat(std::string_view id, int64_t now) override {
    std::lock_guard lock(mu_);
    auto it = agents_.find(id);
    if (it == agents_.end()) return AgentNotFound(id);
    it->second.heartbeat_time = now;
    return Status::Ok();
  }

  Result<std::vector<Agent>> ListAgents() override {
    std::lock_guard lock(mu_);
    std::vector<Agent> out;
    for (const auto& [id, a] : agents_) out.push_back(a);
    return out;
  }

 private:
  Result<Task*> Find(std::string_view id) {
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return TaskNotFound(id);
    return &it->second;
  }

  core::TeamUsage UsageLocked(std::string_view team, int64_t now) const {
    core::TeamUsage u;
    for (const auto& [id, t] : tasks_) {
      if (t.team != team || t.state != TaskState::kRunning) continue;
      u.gpus += t.needs.gpus;
      u.gpu_hours += GpuHoursInWindow(t.needs.gpus, t.start_time, now, now);
    }
    for (const GpuSpan& s : ledger_) {
      if (s.team == team) u.gpu_hours += GpuHoursInWindow(s.gpus, s.start, s.end, now);
    }
    return u;
  }

  // Applies `apply` to a copy, keeping it only when it succeeds; an attempt that held GPUs and
  // ends (at `now`) goes into the ledger.
  template <typename Apply>
  Result<Task> ChangeLocked(std::string_view id, Apply apply, int64_t now = 0) {
    CAIRN_ASSIGN_OR_RETURN(Task * t, Find(id));
    Task changed = *t;
    CAIRN_RETURN_IF_ERROR(apply(&changed));
    if (EndsGpuAttempt(*t, changed)) ledger_.push_back({t->team, t->needs.gpus, t->start_time, now});
    *t = changed;
    return changed;
  }

  template <typename Apply>
  Result<Task> Change(std::string_view id, Apply apply, int64_t now = 0) {
    std::lock_guard lock(mu_);
    return ChangeLocked(id, apply, now);
  }

  std::mutex mu_;
  std::map<std::string, Queue, std::less<>> queues_;
  std::map<std::string, Task, std::less<>> tasks_;
  std::map<std::string, Agent, std::less<>> agents_;
  std::map<std::string, core::TeamQuota, std::less<>> quotas_;
  // Ended attempts that held GPUs (all of them: a memory store does not live for weeks).
  struct GpuSpan {
    std::string team;
    int64_t gpus;
    int64_t start;
    int64_t end;
  };
  std::vector<GpuSpan> ledger_;
  int64_t last_seq_ = 0;
};

}  // namespace

std::unique_ptr<QueueStore> NewMemoryQueueStore() { return std::make_unique<MemoryQueueStore>(); }

}  // namespace cairn::store
