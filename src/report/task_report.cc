#include "report/task_report.h"

#include <cstdio>

#include "core/mlflow_json.h"
#include "report/run_report_internal.h"
#include "util/json_writer.h"

namespace cairn::report {
namespace {

std::string Cpus(double cpus) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", cpus);
  return buf;
}

std::string Doing(const core::Task& t, int64_t now) {
  switch (t.state) {
    case core::TaskState::kQueued: {
      std::string s = "waiting " + FormatDuration(now - t.created_time);
      if (!t.reason.empty()) s += " (" + t.reason + ")";
      return s;
    }
    case core::TaskState::kRunning: {
      std::string s = "on " + t.agent + " for " + FormatDuration(now - t.start_time);
      if (t.cancel_requested) s += " (cancelling)";
      return s;
    }
    default: {
      std::string s =
          std::string(core::TaskStateName(t.state)) + " " + FormatCompactTime(t.end_time, now);
      if (!t.reason.empty()) s += " (" + t.reason + ")";
      return s;
    }
  }
}

}  // namespace

std::string FormatTaskTable(std::span<const core::Task> tasks, const OutputStyle& style,
                            int64_t now_millis) {
  Table table;
  table.columns = {{"TASK", false, false},
                   {"QUEUE"},
                   {"STATE", false, false},
                   {"PRIO", true, false},
                   {"ATTEMPT", true, false},
                   {"GPUS", true, false},
                   {"OWNER"},
                   {"STATUS"}};
  for (const core::Task& t : tasks) {
    table.rows.push_back({t.id.substr(0, 8), t.queue, std::string(core::TaskStateName(t.state)),
                          std::to_string(t.priority),
                          std::to_string(t.attempt) + "/" + std::to_string(t.max_attempts),
                          std::to_string(t.needs.gpus), t.owner.empty() ? "-" : t.owner,
                          Doing(t, now_millis)});
  }
  if (table.rows.empty()) return "no tasks\n";
  return RenderTable(table, style);
}

std::string TasksJsonLines(std::span<const core::Task> tasks) {
  std::string out;
  for (const core::Task& t : tasks) {
    JsonWriter w;
    core::WriteTask(w, t);
    out += w.Take() + "\n";
  }
  return out;
}

std::string FormatTaskDetails(const core::Task& t, int64_t now_millis) {
  std::vector<std::pair<std::string, std::string>> items = {
      {"task", t.id},
      {"queue", t.queue},
      {"state", std::string(core::TaskStateName(t.state)) +
                    (t.cancel_requested ? " (cancel requested)" : "")},
      {"doing", Doing(t, now_millis)},
      {"priority", std::to_string(t.priority)},
      {"attempt", std::to_string(t.attempt) + " of " + std::to_string(t.max_attempts)},
      {"run", t.run_id},
      {"needs",
       std::to_string(t.needs.gpus) + " GPU(s), " + Cpus(t.needs.cpus) + " CPU(s)" +
           (t.needs.memory_mib > 0 ? ", " + std::to_string(t.needs.memory_mib) + " MiB" : "")},
  };
  if (!t.requirements.empty()) items.push_back({"host needs", t.requirements});
  if (!t.owner.empty()) items.push_back({"owner", t.owner});
  if (!t.team.empty()) items.push_back({"team", t.team});
  if (!t.agent.empty()) items.push_back({"agent", t.agent});
  if (!t.gpus.empty()) items.push_back({"gpus given", t.gpus});
  if (!t.reason.empty()) items.push_back({"reason", t.reason});
  items.push_back({"queued", FormatFullTime(t.created_time)});
  if (t.start_time > 0) items.push_back({"started", FormatFullTime(t.start_time)});
  if (t.end_time > 0) items.push_back({"ended", FormatFullTime(t.end_time)});
  items.push_back({"spec", t.spec.empty() ? "{}" : t.spec});
  return internal::KeyValueBlock(items, "");
}

std::string FormatQueueTable(std::span<const client::QueueSummary> queues,
                             const OutputStyle& style) {
  Table table;
  table.columns = {{"QUEUE"},
                   {"WAITING", true, false},
                   {"RUNNING", true, false},
                   {"PRIORITY", true, false},
                   {"DESCRIPTION"}};
  for (const client::QueueSummary& q : queues) {
    table.rows.push_back({q.queue.name, std::to_string(q.queued), std::to_string(q.running),
                          std::to_string(q.queue.default_priority),
                          q.queue.description.empty() ? "-" : q.queue.description});
  }
  if (table.rows.empty()) return "no queues\n";
  return RenderTable(table, style);
}

}  // namespace cairn::report
