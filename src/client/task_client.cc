#include "client/task_client.h"

#include <nlohmann/json.hpp>

#include "client/json_fields.h"

namespace cairn::client {
namespace {

using nlohmann::json;

const std::string kApi = "/api/cairn/v1/";

core::Task TaskOf(const json& j) {
  core::Task t;
  t.id = JsonStr(j, "id");
  t.queue = JsonStr(j, "queue");
  t.priority = JsonInt(j, "priority");
  core::ParseTaskState(JsonStr(j, "state"), &t.state);
  if (auto n = j.find("needs"); n != j.end() && n->is_object()) {
    t.needs.gpus = JsonInt(*n, "gpus");
    if (auto c = n->find("cpus"); c != n->end() && c->is_number()) t.needs.cpus = c->get<double>();
    t.needs.memory_mib = JsonInt(*n, "memory_mib");
  }
  t.spec = JsonObjectText(j, "spec");
  t.requirements = JsonObjectText(j, "requirements");
  t.owner = JsonStr(j, "owner");
  t.team = JsonStr(j, "team");
  t.run_id = JsonStr(j, "run_id");
  t.attempt = JsonInt(j, "attempt");
  t.max_attempts = JsonInt(j, "max_attempts");
  t.agent = JsonStr(j, "agent");
  t.lease_expiry = JsonInt(j, "lease_expiry");
  t.gpus = JsonStr(j, "gpus");
  auto cancel = j.find("cancel_requested");
  t.cancel_requested = cancel != j.end() && cancel->is_boolean() && cancel->get<bool>();
  t.reason = JsonStr(j, "reason");
  t.created_time = JsonInt(j, "created_time");
  t.start_time = JsonInt(j, "start_time");
  t.end_time = JsonInt(j, "end_time");
  return t;
}

core::Agent AgentOf(const json& j) {
  core::Agent a;
  a.id = JsonStr(j, "id");
  a.name = JsonStr(j, "name");
  a.owner = JsonStr(j, "owner");
  a.queues = JsonStrings(j, "queues");
  a.host = JsonObjectText(j, "host");
  a.gpus = JsonStrings(j, "gpus");
  a.slots = JsonInt(j, "slots");
  a.started_time = JsonInt(j, "started_time");
  a.heartbeat_time = JsonInt(j, "heartbeat_time");
  return a;
}

Result<json> Call(TrackingClient& client, const std::string& method, const std::string& path,
                  const std::string& body) {
  CAIRN_ASSIGN_OR_RETURN(std::string text, client.CallJson(method, kApi + path, body));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    return Unavailable("unreadable answer from " + path + ": " + text.substr(0, 200));
  return j;
}

Result<core::Task> TaskAnswer(const Result<json>& answer) {
  CAIRN_RETURN_IF_ERROR(answer.status());
  auto it = answer->find("task");
  if (it == answer->end() || !it->is_object()) return Unavailable("the answer holds no task");
  return TaskOf(*it);
}

}  // namespace

Result<core::Task> EnqueueTask(TrackingClient& client, const TaskRequest& request) {
  json body = {{"queue", request.queue}, {"max_attempts", request.max_attempts}};
  if (!request.experiment_id.empty()) body["experiment_id"] = request.experiment_id;
  if (!request.run_id.empty()) body["run_id"] = request.run_id;
  if (!request.run_name.empty()) body["run_name"] = request.run_name;
  if (request.priority) body["priority"] = *request.priority;
  body["needs"] = {{"gpus", request.needs.gpus}, {"cpus", request.needs.cpus}};
  if (request.needs.memory_mib > 0) body["needs"]["memory_mib"] = request.needs.memory_mib;
  body["spec"] = json::parse(request.spec, nullptr, /*allow_exceptions=*/false);
  if (!body["spec"].is_object()) return InvalidArgument("a task's spec must be a JSON object");
  if (!request.requirements.empty()) {
    body["requirements"] = json::parse(request.requirements, nullptr, false);
    if (!body["requirements"].is_object()) {
      return InvalidArgument("a task's requirements must be a JSON object");
    }
  }
  json tags = json::array();
  for (const core::Tag& t : request.tags) tags.push_back({{"key", t.key}, {"value", t.value}});
  body["tags"] = tags;
  return TaskAnswer(Call(client, "POST", "tasks", body.dump()));
}

Result<core::Task> CloneTask(TrackingClient& client, const CloneAsk& ask) {
  json body = {{"run_id", ask.run_id}, {"reproduce", ask.reproduce}};
  json params = json::array();
  for (const core::Param& p : ask.params) params.push_back({{"key", p.key}, {"value", p.value}});
  body["params"] = params;
  if (!ask.queue.empty()) body["queue"] = ask.queue;
  if (!ask.run_name.empty()) body["run_name"] = ask.run_name;
  if (ask.priority) body["priority"] = *ask.priority;
  if (ask.gpus) body["gpus"] = *ask.gpus;
  if (ask.reproduce)
    body["reproduce_options"] = json::parse(core::ReproduceOptionsJson(ask.reproduce_options));
  return TaskAnswer(Call(client, "POST", "tasks/clone", body.dump()));
}

Result<std::string> RecordReproduction(TrackingClient& client, const std::string& run_id,
                                       const std::string& original,
                                       const core::ReproduceOptions& options) {
  json body = {{"run_id", run_id}, {"options", json::parse(core::ReproduceOptionsJson(options))}};
  if (!original.empty()) body["original_run_id"] = original;
  CAIRN_ASSIGN_OR_RETURN(json answer, Call(client, "POST", "runs/reproduction", body.dump()));
  if (!answer.contains("reproduction") || !answer["reproduction"].is_object()) {
    return Internal("the server answered no reproduction");
  }
  return answer["reproduction"].dump();
}

Result<std::vector<core::Task>> ListTasks(TrackingClient& client, const TaskFilter& filter) {
  std::string query = "tasks?max_results=" + std::to_string(filter.max_results);
  if (!filter.queue.empty()) query += "&queue=" + PercentEncode(filter.queue);
  for (const std::string& s : filter.states) query += "&state=" + PercentEncode(s);
  CAIRN_ASSIGN_OR_RETURN(json j, Call(client, "GET", query, ""));
  std::vector<core::Task> out;
  for (const json& t : j.value("tasks", json::array())) {
    if (t.is_object()) out.push_back(TaskOf(t));
  }
  return out;
}

Result<core::Task> GetTask(TrackingClient& client, const std::string& id) {
  return TaskAnswer(Call(client, "GET", "tasks/" + PercentEncode(id), ""));
}

Result<core::Task> CancelTask(TrackingClient& client, const std::string& id) {
  return TaskAnswer(Call(client, "POST", "tasks/" + PercentEncode(id) + "/cancel", "{}"));
}

Result<core::Task> MoveTask(TrackingClient& client, const std::string& id, const std::string& queue,
                            std::optional<int64_t> priority) {
  json body = json::object();
  if (!queue.empty()) body["queue"] = queue;
  if (priority) body["priority"] = *priority;
  return TaskAnswer(Call(client, "POST", "tasks/" + PercentEncode(id) + "/move", body.dump()));
}

Result<std::vector<QueueSummary>> ListQueues(TrackingClient& client) {
  CAIRN_ASSIGN_OR_RETURN(json j, Call(client, "GET", "queues", ""));
  std::vector<QueueSummary> out;
  for (const json& q : j.value("queues", json::array())) {
    if (!q.is_object()) continue;
    QueueSummary s;
    s.queue = {JsonStr(q, "name"), JsonStr(q, "description"), JsonInt(q, "default_priority"),
               JsonInt(q, "created_time")};
    s.queued = JsonInt(q, "queued");
    s.running = JsonInt(q, "running");
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<std::pair<core::TeamQuota, core::TeamUsage>>> ListQuotas(
    TrackingClient& client) {
  CAIRN_ASSIGN_OR_RETURN(json j, Call(client, "GET", "quotas", ""));
  std::vector<std::pair<core::TeamQuota, core::TeamUsage>> out;
  for (const json& q : j.value("quotas", json::array())) {
    if (!q.is_object()) continue;
    out.push_back({{JsonStr(q, "team"), JsonInt(q, "gpus"), JsonNumber(q, "gpu_hours")},
                   {JsonInt(q, "used_gpus"), JsonNumber(q, "used_gpu_hours")}});
  }
  return out;
}

Status SetQuota(TrackingClient& client, const core::TeamQuota& quota) {
  json body = {{"team", quota.team}, {"gpus", quota.gpus}, {"gpu_hours", quota.gpu_hours}};
  return Call(client, "POST", "quotas", body.dump()).status();
}

Result<std::vector<core::Agent>> ListAgents(TrackingClient& client) {
  CAIRN_ASSIGN_OR_RETURN(json j, Call(client, "GET", "agents", ""));
  std::vector<core::Agent> out;
  for (const json& a : j.value("agents", json::array())) {
    if (a.is_object()) out.push_back(AgentOf(a));
  }
  return out;
}

Status RegisterAgent(TrackingClient& client, const core::Agent& agent) {
  json body = {{"id", agent.id},
               {"name", agent.name},
               {"queues", agent.queues},
               {"gpus", agent.gpus},
               {"slots", agent.slots}};
  json host = json::parse(agent.host, nullptr, /*allow_exceptions=*/false);
  if (host.is_object()) body["host"] = host;
  return Call(client, "POST", "agents", body.dump()).status();
}

Result<std::optional<core::Task>> LeaseTask(TrackingClient& client, const LeaseAsk& ask) {
  json body = {{"agent", ask.agent},
               {"queues", ask.queues},
               {"free_gpus", ask.free_gpus},
               {"lease_ms", ask.lease_ms}};
  if (ask.wait_ms > 0) body["wait_ms"] = ask.wait_ms;
  if (ask.free_cpus > 0) body["free_cpus"] = ask.free_cpus;
  if (ask.free_memory_mib > 0) body["free_memory_mib"] = ask.free_memory_mib;
  json host = json::parse(ask.host, nullptr, /*allow_exceptions=*/false);
  if (host.is_object()) body["host"] = host;
  CAIRN_ASSIGN_OR_RETURN(json j, Call(client, "POST", "agents/lease", body.dump()));
  auto it = j.find("task");
  if (it == j.end() || !it->is_object()) return std::optional<core::Task>();
  return std::optional<core::Task>(TaskOf(*it));
}

Result<core::Task> RenewLease(TrackingClient& client, const core::Task& task,
                              const std::string& agent, int64_t lease_ms) {
  json body = {
      {"task_id", task.id}, {"agent", agent}, {"attempt", task.attempt}, {"lease_ms", lease_ms}};
  return TaskAnswer(Call(client, "POST", "agents/renew", body.dump()));
}

Result<core::Task> FinishTask(TrackingClient& client, const core::Task& task,
                              const std::string& agent, core::TaskState state,
                              const std::string& reason) {
  json body = {{"task_id", task.id},
               {"agent", agent},
               {"attempt", task.attempt},
               {"state", std::string(core::TaskStateName(state))},
               {"reason", reason}};
  return TaskAnswer(Call(client, "POST", "agents/finish", body.dump()));
}

Result<core::Task> ParseTaskJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("a task is a JSON object");
  return TaskOf(j);
}

Result<core::Agent> ParseAgentJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("an agent is a JSON object");
  return AgentOf(j);
}

}  // namespace cairn::client
