#include "client/task_client.h"

#include <nlohmann/json.hpp>

namespace cairn::client {
namespace {

using nlohmann::json;

const std::string kApi = "/api/cairn/v1/";

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t Int(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

std::string Object(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_object() && !it->empty() ? it->dump() : "";
}

std::vector<std::string> Strings(const json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const json& s : *it) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

core::Task TaskOf(const json& j) {
  core::Task t;
  t.id = Str(j, "id");
  t.queue = Str(j, "queue");
  t.priority = Int(j, "priority");
  core::ParseTaskState(Str(j, "state"), &t.state);
  if (auto n = j.find("needs"); n != j.end() && n->is_object()) {
    t.needs.gpus = Int(*n, "gpus");
    if (auto c = n->find("cpus"); c != n->end() && c->is_number()) t.needs.cpus = c->get<double>();
    t.needs.memory_mib = Int(*n, "memory_mib");
  }
  t.spec = Object(j, "spec");
  t.requirements = Object(j, "requirements");
  t.owner = Str(j, "owner");
  t.team = Str(j, "team");
  t.run_id = Str(j, "run_id");
  t.attempt = Int(j, "attempt");
  t.max_attempts = Int(j, "max_attempts");
  t.agent = Str(j, "agent");
  t.lease_expiry = Int(j, "lease_expiry");
  t.gpus = Str(j, "gpus");
  auto cancel = j.find("cancel_requested");
  t.cancel_requested = cancel != j.end() && cancel->is_boolean() && cancel->get<bool>();
  t.reason = Str(j, "reason");
  t.created_time = Int(j, "created_time");
  t.start_time = Int(j, "start_time");
  t.end_time = Int(j, "end_time");
  return t;
}

core::Agent AgentOf(const json& j) {
  core::Agent a;
  a.id = Str(j, "id");
  a.name = Str(j, "name");
  a.owner = Str(j, "owner");
  a.queues = Strings(j, "queues");
  a.host = Object(j, "host");
  a.gpus = Strings(j, "gpus");
  a.slots = Int(j, "slots");
  a.started_time = Int(j, "started_time");
  a.heartbeat_time = Int(j, "heartbeat_time");
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
    s.queue = {Str(q, "name"), Str(q, "description"), Int(q, "default_priority"),
               Int(q, "created_time")};
    s.queued = Int(q, "queued");
    s.running = Int(q, "running");
    out.push_back(std::move(s));
  }
  return out;
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
