// cairn's task, queue and agent calls under /api/cairn/v1/ (docs/api/cairn.md), over the
// TaskService.
#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/mlflow_json.h"
#include "core/task_spec.h"
#include "env/host_facts.h"
#include "server/cairn_api.h"
#include "service/task_service.h"
#include "util/json_writer.h"

namespace cairn::server {
namespace {

using core::Task;
using core::TaskState;

CairnResponse TaskAnswer(const Task& t) {
  JsonWriter w;
  w.BeginObject().Key("task");
  core::WriteTask(w, t);
  w.EndObject();
  return CairnResponse{w.Take()};
}

CairnResponse TasksAnswer(const std::vector<Task>& tasks) {
  JsonWriter w;
  w.BeginObject().Key("tasks").BeginArray();
  for (const Task& t : tasks) core::WriteTask(w, t);
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

Result<TaskState> StateField(const Fields& f, std::string_view name) {
  CAIRN_ASSIGN_OR_RETURN(std::string text, f.RequiredStr(name));
  TaskState state = TaskState::kQueued;
  if (!core::ParseTaskState(text, &state)) {
    return InvalidArgument("Invalid value '" + text + "' for '" + std::string(name) +
                           "': expected queued, running, done, failed or cancelled");
  }
  return state;
}

Result<CairnResponse> Enqueue(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  service::EnqueueRequest r;
  CAIRN_ASSIGN_OR_RETURN(r.queue, f.RequiredStr("queue"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> experiment, f.Str("experiment_id"));
  r.experiment_id = experiment.value_or("0");
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> run_id, f.Str("run_id"));
  r.run_id = run_id.value_or("");
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> name, f.Str("run_name"));
  r.run_name = name.value_or("");
  CAIRN_ASSIGN_OR_RETURN(r.priority, f.Int("priority"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<Fields> needs, f.Object("needs"));
  if (needs) {
    CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> gpus, needs->Int("gpus"));
    r.needs.gpus = gpus.value_or(0);
    if (needs->Has("cpus")) {
      CAIRN_ASSIGN_OR_RETURN(r.needs.cpus, needs->RequiredDouble("cpus"));
    }
    CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> memory, needs->Int("memory_mib"));
    r.needs.memory_mib = memory.value_or(0);
  }
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> spec, f.ObjectJson("spec"));
  if (!spec) return InvalidArgument("Missing value for required parameter 'spec'.");
  r.spec = *spec;
  // An agent reads the code and lock of the runs the spec names, and a reproduction's verdict
  // shows its original's values: only a reader of those runs may name them.
  for (const std::string& named : core::TaskSpecRuns(r.spec)) {
    CAIRN_RETURN_IF_ERROR(RequireRunRead(ctx, named));
  }
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> requirements, f.ObjectJson("requirements"));
  r.requirements = requirements.value_or("");
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> attempts, f.Int("max_attempts"));
  if (attempts) r.max_attempts = *attempts;
  CAIRN_ASSIGN_OR_RETURN(r.tags, DecodeTags(f, "tags"));
  if (ctx.caller != nullptr) {
    r.user_id = ctx.caller->username;
    r.team = ctx.caller->teams.empty() ? "" : ctx.caller->teams.front();
  }
  CAIRN_ASSIGN_OR_RETURN(Task task, ctx.tasks->Enqueue(r));
  return TaskAnswer(task);
}

// Whether the caller may see the task: it may read the experiment of the task's run.
bool Visible(ApiContext& ctx, const Task& t) {
  if (!ctx.may_read_experiment) return true;
  Result<core::RunInfo> run = ctx.tracking->GetRunInfo(t.run_id);
  return run.ok() && ctx.may_read_experiment(run->experiment_id);
}

Result<CairnResponse> ListTasks(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  store::TaskQuery q;
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> queue, f.Str("queue"));
  q.queue = queue.value_or("");
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> agent, f.Str("agent"));
  q.agent = agent.value_or("");
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> states, f.StrList("state"));
  for (const std::string& s : states) {
    TaskState state = TaskState::kQueued;
    if (!core::ParseTaskState(s, &state)) {
      return InvalidArgument("Invalid value '" + s +
                             "' for 'state': expected queued, running, done, failed or cancelled");
    }
    q.states.push_back(state);
  }
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> max, f.Int("max_results"));
  q.max_results = std::clamp<int64_t>(max.value_or(1000), 1, 10000);
  CAIRN_ASSIGN_OR_RETURN(std::vector<Task> tasks, ctx.tasks->ListTasks(q));
  std::erase_if(tasks, [&](const Task& t) { return !Visible(ctx, t); });
  return TasksAnswer(tasks);
}

Result<CairnResponse> GetTask(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(Task task, ctx.tasks->GetTask(std::string(call.wildcard)));
  return TaskAnswer(task);
}

Result<CairnResponse> CancelTask(ApiContext& ctx, const CairnCall& call) {
  const std::string actor = ctx.caller != nullptr ? ctx.caller->username : "";
  CAIRN_ASSIGN_OR_RETURN(Task task, ctx.tasks->Cancel(std::string(call.wildcard), actor));
  return TaskAnswer(task);
}

Result<CairnResponse> MoveTask(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(Task task, ctx.tasks->GetTask(std::string(call.wildcard)));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> queue, f.Str("queue"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> priority, f.Int("priority"));
  CAIRN_ASSIGN_OR_RETURN(Task moved,
                         ctx.tasks->Move(task.id, queue.value_or(task.queue), priority));
  return TaskAnswer(moved);
}

Result<CairnResponse> ListQueues(ApiContext& ctx, const CairnCall&) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Queue> queues, ctx.tasks->ListQueues());
  CAIRN_ASSIGN_OR_RETURN(std::vector<Task> waiting,
                         ctx.tasks->ListTasks({.queue = "",
                                               .states = {TaskState::kQueued, TaskState::kRunning},
                                               .agent = "",
                                               .max_results = 100000}));
  JsonWriter w;
  w.BeginObject().Key("queues").BeginArray();
  for (const core::Queue& q : queues) {
    int64_t queued = 0, running = 0;
    for (const Task& t : waiting) {
      if (t.queue != q.name) continue;
      (t.state == TaskState::kQueued ? queued : running) += 1;
    }
    w.BeginObject().Key("name").String(q.name).Key("description").String(q.description);
    w.Key("default_priority").Int(q.default_priority).Key("created_time").Int(q.created_time);
    w.Key("queued").Int(queued).Key("running").Int(running).EndObject();
  }
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

Result<CairnResponse> UpdateQueue(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> description, f.Str("description"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> priority, f.Int("default_priority"));
  // What the request leaves out stays as it was.
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Queue> queues, ctx.tasks->ListQueues());
  core::Queue before{name, "", 0, 0};
  for (const core::Queue& q : queues) {
    if (q.name == name) before = q;
  }
  CAIRN_ASSIGN_OR_RETURN(core::Queue q,
                         ctx.tasks->UpdateQueue(name, description.value_or(before.description),
                                                priority.value_or(before.default_priority)));
  JsonWriter w;
  w.BeginObject().Key("queue").BeginObject().Key("name").String(q.name);
  w.Key("description").String(q.description).Key("default_priority").Int(q.default_priority);
  w.Key("created_time").Int(q.created_time).EndObject().EndObject();
  return CairnResponse{w.Take()};
}

Result<CairnResponse> CloneTask(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  service::CloneRequest r;
  CAIRN_ASSIGN_OR_RETURN(r.run_id, f.RequiredStr("run_id"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Tag> params, DecodeTags(f, "params"));
  for (core::Tag& p : params) r.params[p.key] = std::move(p.value);
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> queue, f.Str("queue"));
  r.queue = queue.value_or("");
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> name, f.Str("run_name"));
  r.run_name = name.value_or("");
  CAIRN_ASSIGN_OR_RETURN(r.priority, f.Int("priority"));
  CAIRN_ASSIGN_OR_RETURN(r.gpus, f.Int("gpus"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<bool> reproduce, f.Bool("reproduce"));
  r.reproduce = reproduce.value_or(false);
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> options, f.ObjectJson("reproduce_options"));
  if (options) {
    if (!r.reproduce) {
      return InvalidArgument(
          "'reproduce_options' is only for a reproduction (\"reproduce\": true).");
    }
    Result<core::ReproduceOptions> parsed = core::ParseReproduceOptions(*options);
    if (!parsed.ok())
      return InvalidArgument("Invalid 'reproduce_options': " + parsed.status().message());
    r.reproduce_options = *std::move(parsed);
  }
  if (ctx.caller != nullptr) {
    r.user_id = ctx.caller->username;
    r.team = ctx.caller->teams.empty() ? "" : ctx.caller->teams.front();
  }
  CAIRN_ASSIGN_OR_RETURN(Task task, ctx.tasks->Clone(r));
  return TaskAnswer(task);
}

Result<CairnResponse> ListQuotas(ApiContext& ctx, const CairnCall&) {
  CAIRN_ASSIGN_OR_RETURN(auto quotas, ctx.tasks->ListQuotas());
  JsonWriter w;
  w.BeginObject().Key("quotas").BeginArray();
  for (const auto& [q, used] : quotas) {
    w.BeginObject().Key("team").String(q.team).Key("gpus").Int(q.gpus);
    w.Key("gpu_hours").Double(q.gpu_hours).Key("used_gpus").Int(used.gpus);
    w.Key("used_gpu_hours").Double(used.gpu_hours).EndObject();
  }
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

Result<CairnResponse> SetQuota(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  core::TeamQuota q;
  CAIRN_ASSIGN_OR_RETURN(q.team, f.RequiredStr("team"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> gpus, f.Int("gpus"));
  q.gpus = gpus.value_or(0);
  if (f.Has("gpu_hours")) {
    CAIRN_ASSIGN_OR_RETURN(q.gpu_hours, f.RequiredDouble("gpu_hours"));
  }
  CAIRN_RETURN_IF_ERROR(ctx.tasks->SetQuota(q));
  return CairnResponse{"{}"};
}

Result<CairnResponse> ListAgents(ApiContext& ctx, const CairnCall&) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Agent> agents, ctx.tasks->ListAgents());
  JsonWriter w;
  w.BeginObject().Key("agents").BeginArray();
  for (const core::Agent& a : agents) core::WriteAgent(w, a);
  w.EndArray().EndObject();
  return CairnResponse{w.Take()};
}

// The agent's host facts as it sent them (an object), checked to read as HostFacts.
Result<std::pair<std::string, env::HostFacts>> HostField(const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> host, f.ObjectJson("host"));
  if (!host) return std::make_pair(std::string("{}"), env::HostFacts{});
  Result<env::HostFacts> facts = env::ParseHostFactsJson(*host);
  if (!facts.ok()) return InvalidArgument("Invalid value for 'host': " + facts.status().message());
  return std::make_pair(*host, *facts);
}

// Whether the caller may act as `agent`: the account that registered it (or an admin). With
// `queues`, the agent must have registered for each of them.
Status MayActAs(ApiContext& ctx, const std::string& agent,
                const std::vector<std::string>* queues = nullptr) {
  if (ctx.caller == nullptr || ctx.caller->ActsAsAdmin()) return Status::Ok();
  Result<core::Agent> a = ctx.tasks->GetAgent(agent);
  if (a.status().code() == StatusCode::kNotFound) {
    return PermissionDenied("Agent " + agent + " is not registered: register it first");
  }
  CAIRN_RETURN_IF_ERROR(a.status());
  if (a->owner != ctx.caller->username) {
    return PermissionDenied("Agent " + agent + " belongs to another account");
  }
  if (queues != nullptr) {
    for (const std::string& q : *queues) {
      if (std::find(a->queues.begin(), a->queues.end(), q) == a->queues.end()) {
        return PermissionDenied("Agent " + agent + " did not register for queue " + q);
      }
    }
  }
  return Status::Ok();
}

Result<CairnResponse> RegisterAgent(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  core::Agent a;
  CAIRN_ASSIGN_OR_RETURN(a.id, f.RequiredStr("id"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> name, f.Str("name"));
  a.name = name.value_or(a.id);
  if (ctx.caller != nullptr) a.owner = ctx.caller->username;
  CAIRN_ASSIGN_OR_RETURN(a.queues, f.StrList("queues"));
  CAIRN_ASSIGN_OR_RETURN(a.gpus, f.StrList("gpus"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> slots, f.Int("slots"));
  a.slots = std::max<int64_t>(slots.value_or(1), 1);
  CAIRN_ASSIGN_OR_RETURN(auto host, HostField(f));
  a.host = host.first;
  // An agent already registered by another account stays that account's.
  if (ctx.tasks->GetAgent(a.id).ok()) CAIRN_RETURN_IF_ERROR(MayActAs(ctx, a.id));
  CAIRN_RETURN_IF_ERROR(ctx.tasks->RegisterAgent(a));
  JsonWriter w;
  w.BeginObject().Key("agent");
  core::WriteAgent(w, a);
  w.EndObject();
  return CairnResponse{w.Take()};
}

Result<CairnResponse> Lease(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  service::LeaseAsk ask;
  CAIRN_ASSIGN_OR_RETURN(ask.agent, f.RequiredStr("agent"));
  CAIRN_ASSIGN_OR_RETURN(ask.queues, f.StrList("queues"));
  CAIRN_ASSIGN_OR_RETURN(ask.free_gpus, f.StrList("free_gpus"));
  if (f.Has("free_cpus")) {
    CAIRN_ASSIGN_OR_RETURN(ask.free_cpus, f.RequiredDouble("free_cpus"));
  }
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> memory, f.Int("free_memory_mib"));
  ask.free_memory_mib = memory.value_or(0);
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> lease_ms, f.Int("lease_ms"));
  ask.lease_ms = std::clamp<int64_t>(lease_ms.value_or(service::kDefaultLeaseMs), 1000, 3'600'000);
  CAIRN_ASSIGN_OR_RETURN(auto host, HostField(f));
  ask.host = host.second;
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> wait, f.Int("wait_ms"));
  CAIRN_RETURN_IF_ERROR(MayActAs(ctx, ask.agent, &ask.queues));

  // The answer is known at once (a task, an error, no wait asked) or comes from the service's
  // waiting thread; it may come before or after this handler returns.
  struct Pending {
    std::mutex mu;
    std::optional<Result<CairnResponse>> early;
    std::function<void(Result<CairnResponse>)> respond;
  };
  auto pending = std::make_shared<Pending>();
  ctx.tasks->LeaseOrWait(
      ask, std::clamp<int64_t>(wait.value_or(0), 0, service::kMaxLeaseWaitMs),
      [pending](Result<std::optional<Task>> leased) {
        Result<CairnResponse> answer = CairnResponse{"{}"};
        if (!leased.ok()) {
          answer = leased.status();
        } else if (leased->has_value()) {
          answer = TaskAnswer(**leased);
        }
        std::function<void(Result<CairnResponse>)> respond;
        {
          std::lock_guard<std::mutex> lock(pending->mu);
          if (!pending->respond) {
            pending->early = std::move(answer);
            return;
          }
          respond = pending->respond;
        }
        respond(std::move(answer));
      });
  {
    std::lock_guard<std::mutex> lock(pending->mu);
    if (pending->early) return std::move(*pending->early);
  }
  CairnResponse later;
  later.deferred = [pending](std::function<void(Result<CairnResponse>)> respond) {
    std::optional<Result<CairnResponse>> ready;
    {
      std::lock_guard<std::mutex> lock(pending->mu);
      if (pending->early) {
        ready = std::move(pending->early);
      } else {
        pending->respond = respond;
      }
    }
    if (ready) respond(std::move(*ready));
  };
  return later;
}

Result<CairnResponse> Renew(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::string id, f.RequiredStr("task_id"));
  CAIRN_ASSIGN_OR_RETURN(std::string agent, f.RequiredStr("agent"));
  CAIRN_ASSIGN_OR_RETURN(int64_t attempt, f.RequiredInt("attempt"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> lease_ms, f.Int("lease_ms"));
  CAIRN_RETURN_IF_ERROR(MayActAs(ctx, agent));
  CAIRN_ASSIGN_OR_RETURN(
      Task task, ctx.tasks->Renew(id, agent, attempt,
                                  std::clamp<int64_t>(lease_ms.value_or(service::kDefaultLeaseMs),
                                                      1000, 3'600'000)));
  return TaskAnswer(task);
}

Result<CairnResponse> Finish(ApiContext& ctx, const CairnCall& call) {
  const Fields& f = call.fields;
  CAIRN_ASSIGN_OR_RETURN(std::string id, f.RequiredStr("task_id"));
  CAIRN_ASSIGN_OR_RETURN(std::string agent, f.RequiredStr("agent"));
  CAIRN_ASSIGN_OR_RETURN(int64_t attempt, f.RequiredInt("attempt"));
  CAIRN_ASSIGN_OR_RETURN(TaskState state, StateField(f, "state"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> reason, f.Str("reason"));
  CAIRN_RETURN_IF_ERROR(MayActAs(ctx, agent));
  CAIRN_ASSIGN_OR_RETURN(Task task,
                         ctx.tasks->Finish(id, agent, attempt, state, reason.value_or("")));
  return TaskAnswer(task);
}

constexpr CairnRoute kTaskRoutes[] = {
    {"POST", "tasks", Enqueue},         {"GET", "tasks", ListTasks},
    {"GET", "tasks/*", GetTask},        {"POST", "tasks/*/cancel", CancelTask},
    {"POST", "tasks/*/move", MoveTask}, {"GET", "queues", ListQueues},
    {"POST", "queues", UpdateQueue},    {"GET", "agents", ListAgents},
    {"GET", "quotas", ListQuotas},      {"POST", "quotas", SetQuota},
    {"POST", "tasks/clone", CloneTask},
    {"POST", "agents", RegisterAgent},  {"POST", "agents/lease", Lease},
    {"POST", "agents/renew", Renew},    {"POST", "agents/finish", Finish},
};

}  // namespace

std::span<const CairnRoute> CairnTaskRoutes() { return kTaskRoutes; }

}  // namespace cairn::server
