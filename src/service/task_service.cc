#include "service/task_service.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/identity.h"
#include "core/task_spec.h"
#include "env/host_check.h"
#include "service/reproduction.h"
#include "service/validation.h"
#include "util/hash.h"
#include "util/log.h"

namespace cairn::service {
namespace {

using core::Task;
using core::TaskState;
using nlohmann::json;

constexpr size_t kMaxQueueName = 64;
constexpr size_t kMaxRequirementsBytes = 4096;
constexpr size_t kMaxAgentText = 128;
constexpr size_t kMaxAgentHostBytes = 64 * 1024;
constexpr size_t kMaxAgentList = 256;
constexpr size_t kMaxReason = 2000;

Status ValidateQueueName(const std::string& name) {
  if (name.empty()) return InvalidArgument("A queue needs a name.");
  if (name.size() > kMaxQueueName || !std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '-' || c == '.';
      })) {
    return InvalidArgument("Invalid queue name '" + name.substr(0, kMaxQueueName) +
                           "': up to 64 letters, digits, '_', '-' and '.'.");
  }
  return Status::Ok();
}

// The requirements JSON as HostRequirements; InvalidArgument naming what is wrong.
Result<env::HostRequirements> ParseRequirements(const std::string& text) {
  env::HostRequirements r;
  if (text.empty()) return r;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("A task's requirements must be a JSON object.");
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string* field = it.key() == "cuda"                 ? &r.cuda
                         : it.key() == "driver"             ? &r.driver
                         : it.key() == "compute_capability" ? &r.compute_capability
                         : it.key() == "glibc"              ? &r.glibc
                                                            : nullptr;
    if (field == nullptr) {
      return InvalidArgument("Unknown task requirement '" + it.key() +
                             "' (known: cuda, driver, compute_capability, glibc).");
    }
    if (!it.value().is_string()) {
      return InvalidArgument("Task requirement '" + it.key() + "' must be a string.");
    }
    *field = it.value().get<std::string>();
  }
  return r;
}

std::string JoinFirst(const std::vector<std::string>& items, size_t n) {
  std::string out;
  for (size_t i = 0; i < n && i < items.size(); ++i) out += (i == 0 ? "" : ",") + items[i];
  return out;
}

std::string NewRunId() { return RandomHex(16); }

}  // namespace

std::string TaskService::HostShortfall(const std::string& requirements,
                                       const env::HostFacts& host) {
  Result<env::HostRequirements> required = ParseRequirements(requirements);
  if (!required.ok()) return required.status().message();
  if (required->empty()) return "";
  Result<std::vector<env::HostFinding>> findings = env::CheckHost(*required, host);
  if (!findings.ok()) return findings.status().message();
  for (const env::HostFinding& f : *findings) {
    if (f.state == env::HostFinding::State::kOk) continue;
    // A host that does not tell cannot be trusted to run it either.
    return f.requirement + ": " + (f.detail.empty() ? "the host has " + f.have : f.detail);
  }
  return "";
}

Status TaskService::ScheduleRun(const Task& task, const std::string& run_id, int64_t attempt) {
  CreateRunRequest r;
  r.run_id = run_id;
  r.start_time = clock_->NowMillis();
  r.user_id = task.owner;
  r.experiment_id = "0";
  Result<core::Run> previous = tracking_->GetRun(task.run_id);
  if (previous.ok() && previous->info.run_id != run_id) {
    r.experiment_id = previous->info.experiment_id;
    r.run_name = previous->info.run_name;
    // The tags the task was queued with; what the last attempt recorded (its host, its code,
    // its heartbeat) is that attempt's own.
    for (const core::Tag& t : previous->data.tags) {
      const bool own = t.key.starts_with("cairn.") || t.key.starts_with("mlflow.");
      if (!own || t.key == kReproduceOfTag || t.key == "cairn.clone.of") r.tags.push_back(t);
    }
    r.tags.push_back({"cairn.task.previous_run", task.run_id});
  }
  r.tags.push_back({std::string(kTaskIdTag), task.id});
  r.tags.push_back({std::string(kTaskQueueTag), task.queue});
  r.tags.push_back({std::string(kTaskAttemptTag), std::to_string(attempt)});
  r.scheduled = true;
  return tracking_->CreateRun(r).status();
}

void TaskService::EndRun(const Task& task, core::RunStatus status, const std::string& reason) {
  (void)tracking_->UpdateRun(task.run_id, status, clock_->NowMillis(), std::nullopt);
  // After the status: a status update clears an earlier failure reason.
  if (!reason.empty() && status != core::RunStatus::kFinished) {
    (void)tracking_->SetTag(task.run_id, {std::string(TrackingService::kFailureReasonTag), reason});
  }
}

void TaskService::Ended(const Task& task) {
  if (artifacts_ == nullptr) return;
  Result<core::TaskSpec> spec = core::ParseTaskSpec(task.spec);
  if (!spec.ok() || spec->reproduce.of.empty()) return;
  Result<std::string> recorded = RecordReproduction(*tracking_, *artifacts_, spec->reproduce.of,
                                                    task.run_id, spec->reproduce.options);
  if (!recorded.ok()) {
    LogWarning("the verdict of reproduction " + task.run_id +
               " was not recorded: " + recorded.status().message());
  }
}

namespace {

int64_t SteadyMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

TaskService::~TaskService() { StopWaiting(); }

void TaskService::StopWaiting() {
  std::deque<Waiter> ended;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    stop_waiting_ = true;
    ended.swap(waiters_);
  }
  wait_cv_.notify_all();
  for (Waiter& w : ended) w.done(std::optional<Task>());
  // The waiting thread answers those it was serving and ends; after this, nothing of the
  // service runs on it (the store may go).
  if (wait_thread_.joinable() && wait_thread_.get_id() != std::this_thread::get_id()) {
    wait_thread_.join();
  }
}

void TaskService::WorkChanged() {
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    ++work_generation_;
  }
  wait_cv_.notify_all();
}

void TaskService::LeaseOrWait(const LeaseAsk& ask, int64_t wait_ms, LeaseDone done) {
  Result<std::optional<Task>> now = Lease(ask);
  if (!now.ok() || now->has_value() || wait_ms <= 0) {
    done(std::move(now));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    if (!stop_waiting_) {
      waiters_.push_back({ask, SteadyMillis() + std::min(wait_ms, kMaxLeaseWaitMs), done});
      if (!wait_thread_.joinable()) wait_thread_ = std::thread([this] { ServeWaiters(); });
      done = nullptr;
    }
  }
  wait_cv_.notify_all();
  if (done) done(std::optional<Task>());
}

void TaskService::ServeWaiters() {
  uint64_t served = 0;
  std::unique_lock<std::mutex> lock(wait_mu_);
  while (!stop_waiting_) {
    int64_t next = SteadyMillis() + 1000;  // tries again every second in any case
    for (const Waiter& w : waiters_) next = std::min(next, w.deadline);
    wait_cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(next - SteadyMillis(), 1)),
                      [&] { return stop_waiting_ || work_generation_ != served; });
    if (stop_waiting_) break;
    served = work_generation_;
    std::deque<Waiter> pending;
    pending.swap(waiters_);
    lock.unlock();
    // In the order they asked, so that the agent that waited longest gets the task.
    std::deque<Waiter> still;
    for (Waiter& w : pending) {
      Result<std::optional<Task>> got = Lease(w.ask);
      if (!got.ok() || got->has_value() || SteadyMillis() >= w.deadline) {
        w.done(std::move(got));
      } else {
        still.push_back(std::move(w));
      }
    }
    lock.lock();
    // Those that asked meanwhile go after those that waited.
    for (Waiter& w : waiters_) still.push_back(std::move(w));
    waiters_.swap(still);
  }
  // Stopping: whoever still waits is answered, with no task.
  std::deque<Waiter> ended;
  ended.swap(waiters_);
  lock.unlock();
  for (Waiter& w : ended) w.done(std::optional<Task>());
}

Result<Task> TaskService::Enqueue(const EnqueueRequest& request) {
  CAIRN_RETURN_IF_ERROR(ValidateQueueName(request.queue));
  if (request.needs.gpus < 0 || request.needs.cpus < 0 || request.needs.memory_mib < 0) {
    return InvalidArgument("A task's GPUs, CPUs and memory cannot be negative.");
  }
  if (request.max_attempts < 1 || request.max_attempts > kMaxTaskAttempts) {
    return InvalidArgument("max_attempts must be between 1 and " +
                           std::to_string(kMaxTaskAttempts) + ".");
  }
  if (static_cast<int64_t>(request.spec.size()) > kMaxTaskSpecBytes) {
    return InvalidArgument("A task's spec may hold at most 1 MiB.");
  }
  if (!json::parse(request.spec, nullptr, false).is_object()) {
    return InvalidArgument("A task's spec must be a JSON object.");
  }
  if (request.requirements.size() > kMaxRequirementsBytes) {
    return InvalidArgument("A task's requirements may hold at most 4 KiB.");
  }
  CAIRN_RETURN_IF_ERROR(ParseRequirements(request.requirements).status());
  const int64_t now = clock_->NowMillis();
  CAIRN_ASSIGN_OR_RETURN(core::Queue queue, store_->queue().EnsureQueue(request.queue, now));

  Task task;
  task.id = RandomHex(16);
  task.queue = request.queue;
  task.priority = request.priority.value_or(queue.default_priority);
  task.needs = request.needs;
  task.spec = request.spec;
  task.requirements = request.requirements;
  task.owner = request.user_id;
  task.team = request.team;
  task.max_attempts = request.max_attempts;
  task.created_time = now;

  std::vector<core::Tag> task_tags = {{std::string(kTaskIdTag), task.id},
                                      {std::string(kTaskQueueTag), task.queue},
                                      {std::string(kTaskAttemptTag), "1"}};
  if (!request.run_id.empty()) {
    CAIRN_RETURN_IF_ERROR(AdoptRun(request, task_tags));
    task.run_id = request.run_id;
    Result<Task> stored = store_->queue().EnqueueTask(task);
    if (stored.ok()) WorkChanged();
    return stored;
  }
  CreateRunRequest r;
  r.experiment_id = request.experiment_id;
  r.user_id = request.user_id;
  r.run_name = request.run_name;
  r.start_time = now;
  r.tags = request.tags;
  r.tags.insert(r.tags.end(), task_tags.begin(), task_tags.end());
  r.scheduled = true;
  CAIRN_ASSIGN_OR_RETURN(core::Run run, tracking_->CreateRun(r));
  task.run_id = run.info.run_id;
  Result<Task> stored = store_->queue().EnqueueTask(task);
  if (!stored.ok()) (void)tracking_->DeleteRun(task.run_id);  // no run without its task
  if (stored.ok()) WorkChanged();
  return stored;
}

Status TaskService::AdoptRun(const EnqueueRequest& request, const std::vector<core::Tag>& tags) {
  Result<core::Run> run = tracking_->GetRun(request.run_id);
  if (!run.ok() && run.status().code() == StatusCode::kNotFound) {
    return InvalidArgument("Run '" + request.run_id + "' not found.");
  }
  CAIRN_RETURN_IF_ERROR(run.status());
  if (run->info.experiment_id != core::CanonicalExperimentId(request.experiment_id)) {
    return InvalidArgument("Run '" + request.run_id + "' is not in experiment " +
                           core::CanonicalExperimentId(request.experiment_id) + ".");
  }
  if (run->info.status != core::RunStatus::kScheduled ||
      run->info.lifecycle_stage != core::LifecycleStage::kActive) {
    return InvalidArgument("Run '" + request.run_id +
                           "' cannot start a task: it must be active and SCHEDULED.");
  }
  for (const core::Tag& t : run->data.tags) {
    if (t.key == kTaskIdTag) {
      return InvalidArgument("Run '" + request.run_id + "' belongs to task " + t.value + ".");
    }
  }
  std::vector<core::Tag> all = request.tags;
  all.insert(all.end(), tags.begin(), tags.end());
  return tracking_->LogBatch(request.run_id, {}, {}, all);
}

Result<Task> TaskService::GetTask(const std::string& id) { return store_->queue().GetTask(id); }

Result<Task> TaskService::Clone(const CloneRequest& request) {
  CAIRN_ASSIGN_OR_RETURN(core::Run original, tracking_->GetRun(request.run_id));
  const core::Tag* task_tag = original.FindTag(kTaskIdTag);
  if (task_tag == nullptr) {
    return FailedPrecondition("Run " + request.run_id +
                              " was not run from a queue, so it has no code snapshot to run "
                              "again; queue work with `cairn run --queue`.");
  }
  CAIRN_ASSIGN_OR_RETURN(Task task, store_->queue().GetTask(task_tag->value));
  CAIRN_ASSIGN_OR_RETURN(core::TaskSpec spec, core::ParseTaskSpec(task.spec));
  for (const auto& [name, value] : request.params) spec.params[name] = value;
  spec.reproduce = request.reproduce
                       ? core::TaskReproduction{request.run_id, request.reproduce_options}
                       : core::TaskReproduction{};

  CreateRunRequest run;
  run.experiment_id = original.info.experiment_id;
  run.user_id = request.user_id;
  run.run_name = !request.run_name.empty()
                     ? request.run_name
                     : original.info.run_name + (request.reproduce ? "-reproduced" : "-clone");
  run.tags = {
      {request.reproduce ? std::string(kReproduceOfTag) : "cairn.clone.of", request.run_id}};
  if (!request.user_id.empty()) run.tags.push_back({"mlflow.user", request.user_id});
  run.scheduled = true;
  CAIRN_ASSIGN_OR_RETURN(core::Run made, tracking_->CreateRun(run));
  std::vector<core::Param> params;
  for (const auto& [name, value] : spec.params) params.push_back({name, value});
  Status logged = params.empty() ? Status::Ok() : tracking_->LogBatch(made.info.run_id, {}, params, {});

  EnqueueRequest r;
  r.queue = request.queue.empty() ? task.queue : request.queue;
  r.experiment_id = made.info.experiment_id;
  r.run_id = made.info.run_id;
  r.user_id = request.user_id;
  r.team = request.team;
  r.priority = request.priority;
  r.needs = task.needs;
  if (request.gpus) r.needs.gpus = *request.gpus;
  r.spec = core::TaskSpecJson(spec);
  r.requirements = task.requirements;
  r.max_attempts = task.max_attempts;
  Result<Task> queued = logged.ok() ? Enqueue(r) : Result<Task>(logged);
  if (!queued.ok()) (void)tracking_->DeleteRun(made.info.run_id);  // no run without its task
  return queued;
}

Status TaskService::SetQuota(const core::TeamQuota& quota) {
  if (!core::ValidAccountName(quota.team)) {
    return InvalidArgument("Invalid team name '" + quota.team.substr(0, 64) + "'.");
  }
  if (quota.gpus < 0 || !(quota.gpu_hours >= 0) || !std::isfinite(quota.gpu_hours)) {
    return InvalidArgument("A quota's GPUs and GPU-hours cannot be negative.");
  }
  CAIRN_RETURN_IF_ERROR(store_->queue().PutTeamQuota(quota));
  WorkChanged();  // a raised quota may let a waiting task start
  return Status::Ok();
}

Result<std::vector<std::pair<core::TeamQuota, core::TeamUsage>>> TaskService::ListQuotas() {
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::TeamQuota> quotas, store_->queue().ListTeamQuotas());
  std::vector<std::pair<core::TeamQuota, core::TeamUsage>> out;
  for (const core::TeamQuota& q : quotas) {
    CAIRN_ASSIGN_OR_RETURN(core::TeamUsage used,
                           store_->queue().GetTeamUsage(q.team, clock_->NowMillis()));
    out.emplace_back(q, used);
  }
  return out;
}

Result<std::vector<Task>> TaskService::ListTasks(const store::TaskQuery& query) {
  return store_->queue().ListTasks(query);
}

Result<Task> TaskService::Cancel(const std::string& id, const std::string& actor) {
  const std::string reason = actor.empty() ? "cancelled" : "cancelled by " + actor;
  CAIRN_ASSIGN_OR_RETURN(Task task, store_->queue().CancelTask(id, reason, clock_->NowMillis()));
  if (task.state == TaskState::kCancelled) {
    EndRun(task, core::RunStatus::kKilled, reason);
    Ended(task);
  }
  return task;
}

Result<Task> TaskService::Move(const std::string& id, const std::string& queue,
                               std::optional<int64_t> priority) {
  CAIRN_RETURN_IF_ERROR(ValidateQueueName(queue));
  CAIRN_ASSIGN_OR_RETURN(Task task, store_->queue().GetTask(id));
  CAIRN_RETURN_IF_ERROR(store_->queue().EnsureQueue(queue, clock_->NowMillis()).status());
  CAIRN_ASSIGN_OR_RETURN(Task moved,
                         store_->queue().MoveTask(id, queue, priority.value_or(task.priority)));
  (void)tracking_->SetTag(moved.run_id, {std::string(kTaskQueueTag), queue});
  WorkChanged();
  return moved;
}

Result<std::vector<core::Queue>> TaskService::ListQueues() { return store_->queue().ListQueues(); }

Result<core::Queue> TaskService::UpdateQueue(const std::string& name,
                                             const std::string& description,
                                             int64_t default_priority) {
  CAIRN_RETURN_IF_ERROR(ValidateQueueName(name));
  CAIRN_RETURN_IF_ERROR(store_->queue().EnsureQueue(name, clock_->NowMillis()).status());
  CAIRN_RETURN_IF_ERROR(store_->queue().UpdateQueue(name, description, default_priority));
  return store_->queue().GetQueue(name);
}

Status TaskService::RegisterAgent(core::Agent agent) {
  if (agent.id.empty()) return InvalidArgument("An agent needs an id.");
  if (agent.id.size() > kMaxAgentText || agent.name.size() > kMaxAgentText) {
    return InvalidArgument("An agent's id and name may hold at most 128 characters.");
  }
  if (agent.host.size() > kMaxAgentHostBytes || agent.queues.size() > kMaxAgentList ||
      agent.gpus.size() > kMaxAgentList) {
    return InvalidArgument(
        "An agent may describe at most 64 KiB of host facts and 256 queues "
        "and GPUs.");
  }
  for (const std::string& q : agent.queues) CAIRN_RETURN_IF_ERROR(ValidateQueueName(q));
  agent.heartbeat_time = clock_->NowMillis();
  if (agent.started_time == 0) agent.started_time = agent.heartbeat_time;
  return store_->queue().PutAgent(agent);
}

Result<std::vector<core::Agent>> TaskService::ListAgents() { return store_->queue().ListAgents(); }

Result<core::Agent> TaskService::GetAgent(const std::string& id) {
  return store_->queue().GetAgent(id);
}

Result<std::optional<Task>> TaskService::Lease(const LeaseAsk& ask) {
  if (ask.agent.empty()) return InvalidArgument("A lease needs the agent's id.");
  if (ask.queues.empty()) return InvalidArgument("A lease needs at least one queue.");
  for (const std::string& q : ask.queues) CAIRN_RETURN_IF_ERROR(ValidateQueueName(q));
  const int64_t now = clock_->NowMillis();
  store::LeaseRequest r;
  r.queues = ask.queues;
  r.agent = ask.agent;
  r.now = now;
  r.lease_expiry = now + std::max<int64_t>(ask.lease_ms, 1000);
  r.place = [&ask](const Task& t) -> std::optional<std::string> {
    if (t.needs.gpus > static_cast<int64_t>(ask.free_gpus.size())) return std::nullopt;
    if (ask.free_cpus > 0 && t.needs.cpus > ask.free_cpus) return std::nullopt;
    if (ask.free_memory_mib > 0 && t.needs.memory_mib > ask.free_memory_mib) return std::nullopt;
    if (!HostShortfall(t.requirements, ask.host).empty()) return std::nullopt;
    return JoinFirst(ask.free_gpus, static_cast<size_t>(t.needs.gpus));
  };
  (void)store_->queue().AgentHeartbeat(ask.agent, now);
  CAIRN_ASSIGN_OR_RETURN(std::optional<Task> leased, store_->queue().LeaseTask(r));
  if (!leased) return leased;
  // The attempt's run is made before its task names it; one deleted since is made again (in
  // the Default experiment, the old one being unknown).
  if (!tracking_->GetRunInfo(leased->run_id).ok()) {
    CAIRN_RETURN_IF_ERROR(ScheduleRun(*leased, leased->run_id, leased->attempt));
  }
  (void)tracking_->SetTag(leased->run_id, {std::string(kTaskAgentTag), ask.agent});
  (void)tracking_->SetTag(leased->run_id,
                          {std::string(kTaskAttemptTag), std::to_string(leased->attempt)});
  CAIRN_RETURN_IF_ERROR(
      tracking_->UpdateRun(leased->run_id, core::RunStatus::kRunning, std::nullopt, std::nullopt)
          .status());
  return leased;
}

Result<Task> TaskService::Renew(const std::string& id, const std::string& agent, int64_t attempt,
                                int64_t lease_ms) {
  const int64_t now = clock_->NowMillis();
  (void)store_->queue().AgentHeartbeat(agent, now);
  return store_->queue().RenewLease(id, agent, attempt, now + std::max<int64_t>(lease_ms, 1000));
}

Result<Task> TaskService::Finish(const std::string& id, const std::string& agent, int64_t attempt,
                                 TaskState state, const std::string& reason) {
  const std::string cut =
      reason.size() > kMaxReason ? reason.substr(0, kMaxReason) + "..." : reason;
  CAIRN_ASSIGN_OR_RETURN(
      Task task, store_->queue().FinishTask(id, agent, attempt, state, cut, clock_->NowMillis()));
  EndRun(task,
         state == TaskState::kDone        ? core::RunStatus::kFinished
         : state == TaskState::kCancelled ? core::RunStatus::kKilled
                                          : core::RunStatus::kFailed,
         cut);
  Ended(task);
  return task;
}

Result<int> TaskService::ExpireLeases() {
  const int64_t now = clock_->NowMillis();
  CAIRN_ASSIGN_OR_RETURN(std::vector<Task> expired, store_->queue().ExpiredLeases(now));
  int ended = 0;
  for (const Task& lost : expired) {
    const std::string reason = "agent lost: " + lost.agent + " stopped renewing its lease";
    // The next attempt's run exists before the task names it, so that a waiting task always
    // has its run.
    const bool again = !lost.cancel_requested && lost.attempt < lost.max_attempts;
    const std::string next_run = again ? NewRunId() : "";
    if (again && !ScheduleRun(lost, next_run, lost.attempt + 1).ok()) continue;
    Result<Task> after = store_->queue().ExpireLease(lost.id, lost.attempt, next_run, reason, now);
    if (!after.ok()) {  // renewed or ended meanwhile
      if (again) (void)tracking_->DeleteRun(next_run);
      continue;
    }
    ++ended;
    if (after->state == TaskState::kCancelled) {
      EndRun(lost, core::RunStatus::kKilled, after->reason);
    } else {
      EndRun(lost, core::RunStatus::kFailed, reason);
    }
    // Ended for good: also when a cancel came in after the lease was read, which leaves the
    // run made for a next attempt unused.
    if (core::TaskStateFinal(after->state)) {
      if (again) (void)tracking_->DeleteRun(next_run);
      Ended(lost);
    }
  }
  if (ended > 0) WorkChanged();
  return ended;
}

}  // namespace cairn::service
