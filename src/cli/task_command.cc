// `cairn task ls|show|cancel|move` and `cairn queue ls`: queued work from the command line
// (report/task_report.h formats it). A task is named by its id or a unique prefix of it.
#include <cstdio>
#include <optional>

#include "cli/commands.h"
#include "client/task_client.h"
#include "report/task_report.h"
#include "util/clock.h"

namespace cairn::cli {
namespace {

struct TaskFlags {
  std::string tracking_uri;
  std::string id;
  std::string queue;
  std::vector<std::string> states;
  std::optional<int64_t> priority;
  std::string description;
  int64_t max = 1000;
  bool all = false;
  bool json = false;
  // queue quota
  std::string team;
  std::optional<int64_t> quota_gpus;
  std::optional<double> quota_hours;
};

int FailWith(const Status& s) {
  PrintError(s);
  return 1;
}

// The task whose id is `id` or starts with it (at least 4 characters).
Result<core::Task> FindTask(client::TrackingClient& client, const std::string& id) {
  Result<core::Task> exact = client::GetTask(client, id);
  if (exact.ok() || exact.status().code() != StatusCode::kNotFound || id.size() < 4) return exact;
  CAIRN_ASSIGN_OR_RETURN(
      std::vector<core::Task> all,
      client::ListTasks(client, {.queue = "", .states = {}, .max_results = 10000}));
  std::vector<core::Task> found;
  for (const core::Task& t : all) {
    if (t.id.starts_with(id)) found.push_back(t);
  }
  if (found.size() == 1) return found[0];
  if (found.empty()) return exact.status();
  return InvalidArgument(std::to_string(found.size()) + " tasks start with " + id +
                         ": give more of the id");
}

int ListTasks(const TaskFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  client::TaskFilter filter;
  filter.queue = flags.queue;
  filter.states = flags.states;
  if (filter.states.empty() && !flags.all) filter.states = {"queued", "running"};
  filter.max_results = flags.max;
  auto tasks = client::ListTasks(*client, filter);
  if (!tasks.ok()) return FailWith(tasks.status());
  PrintText(flags.json ? report::TasksJsonLines(*tasks)
                       : report::FormatTaskTable(*tasks, report::DetectOutputStyle(),
                                                 SystemClock()->NowMillis()));
  return 0;
}

int ShowTask(const TaskFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  auto task = FindTask(*client, flags.id);
  if (!task.ok()) return FailWith(task.status());
  PrintText(flags.json ? report::TasksJsonLines(std::span(&*task, 1))
                       : report::FormatTaskDetails(*task, SystemClock()->NowMillis()));
  return 0;
}

int CancelTask(const TaskFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  auto task = FindTask(*client, flags.id);
  if (!task.ok()) return FailWith(task.status());
  auto cancelled = client::CancelTask(*client, task->id);
  if (!cancelled.ok()) return FailWith(cancelled.status());
  std::printf("%s: %s\n", cancelled->id.c_str(),
              cancelled->state == core::TaskState::kCancelled
                  ? "cancelled"
                  : ("its agent " + cancelled->agent + " stops it").c_str());
  return 0;
}

int MoveTask(const TaskFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  if (flags.queue.empty() && !flags.priority) {
    return FailWith(InvalidArgument("say where to: --queue NAME, --priority N or both"));
  }
  auto task = FindTask(*client, flags.id);
  if (!task.ok()) return FailWith(task.status());
  auto moved = client::MoveTask(*client, task->id, flags.queue, flags.priority);
  if (!moved.ok()) return FailWith(moved.status());
  std::printf("%s: queue %s, priority %lld\n", moved->id.c_str(), moved->queue.c_str(),
              static_cast<long long>(moved->priority));
  return 0;
}

int ListQueues(const TaskFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  auto queues = client::ListQueues(*client);
  if (!queues.ok()) return FailWith(queues.status());
  PrintText(report::FormatQueueTable(*queues, report::DetectOutputStyle()));
  return 0;
}

// `cairn queue quota [TEAM --gpus N --gpu-hours H]`: lists the quotas, or sets one.
int Quota(const TaskFlags& flags) {
  auto client = ConnectOrExplain(flags.tracking_uri);
  if (client == nullptr) return 2;
  if (!flags.team.empty()) {
    if (!flags.quota_gpus && !flags.quota_hours) {
      PrintError(InvalidArgument("say the quota: --gpus N and/or --gpu-hours H (0 for no cap)"));
      return 2;
    }
    auto now = client::ListQuotas(*client);
    if (!now.ok()) return FailWith(now.status());
    core::TeamQuota q{flags.team, 0, 0};
    for (const auto& [have, used] : *now) {
      if (have.team == flags.team) q = have;
    }
    if (flags.quota_gpus) q.gpus = *flags.quota_gpus;
    if (flags.quota_hours) q.gpu_hours = *flags.quota_hours;
    if (Status s = client::SetQuota(*client, q); !s.ok()) return FailWith(s);
  }
  auto quotas = client::ListQuotas(*client);
  if (!quotas.ok()) return FailWith(quotas.status());
  report::Table table;
  table.columns = {{"TEAM"}, {"GPUS", true, false}, {"IN USE", true, false},
                   {"GPU-HOURS / 7 DAYS", true, false}, {"USED", true, false}};
  auto hours = [](double h) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f", h);
    return std::string(text);
  };
  for (const auto& [q, used] : *quotas) {
    table.rows.push_back({q.team, q.gpus > 0 ? std::to_string(q.gpus) : "-",
                          std::to_string(used.gpus), q.gpu_hours > 0 ? hours(q.gpu_hours) : "-",
                          hours(used.gpu_hours)});
  }
  PrintText(table.rows.empty() ? "no quotas\n"
                               : report::RenderTable(table, report::DetectOutputStyle()));
  return 0;
}

CLI::App* AddTaskCommand(CLI::App* group, Action* action, const char* name, const char* help,
                         int (*run)(const TaskFlags&), std::shared_ptr<TaskFlags>* flags) {
  auto [cmd, added] = AddSubcommand<TaskFlags>(group, action, name, help, run);
  AddTrackingUriOption(cmd, &added->tracking_uri);
  *flags = added;
  return cmd;
}

}  // namespace

void RegisterTask(CLI::App& app, Action* action) {
  CLI::App* group = app.add_subcommand(
      "task",
      "Work queued for agents: list tasks, show one, cancel it, or move it to another queue or\n"
      "priority. Each attempt of a task is a run (SCHEDULED while it waits).");
  group->require_subcommand(1);
  std::shared_ptr<TaskFlags> f;

  CLI::App* ls =
      AddTaskCommand(group, action, "ls", "List waiting and running tasks, in the order they start",
                     ListTasks, &f);
  ls->add_option("--queue", f->queue, "Only this queue");
  ls->add_option("--state", f->states,
                 "Only tasks in these states: queued, running, done, failed, cancelled")
      ->check(CLI::IsMember({"queued", "running", "done", "failed", "cancelled"}));
  ls->add_flag("--all", f->all, "Finished tasks too");
  ls->add_option("--max", f->max, "Show at most N tasks (default 1000)");
  ls->add_flag("--json", f->json, "One JSON object per task, as the API gives it");

  CLI::App* show = AddTaskCommand(
      group, action, "show", "Show a task: its state, attempts, run, needs and spec", ShowTask, &f);
  show->add_option("task", f->id, "Task id (or a unique prefix of 4 or more characters)")
      ->required();
  show->add_flag("--json", f->json, "As JSON");

  CLI::App* cancel = AddTaskCommand(
      group, action, "cancel",
      "Cancel a task: a waiting one ends now (its run KILLED); a running one is stopped by its\n"
      "agent, which kills its process group",
      CancelTask, &f);
  cancel->add_option("task", f->id, "Task id (or a unique prefix)")->required();

  CLI::App* move = AddTaskCommand(group, action, "move",
                                  "Move a waiting task to another queue or priority", MoveTask, &f);
  move->add_option("task", f->id, "Task id (or a unique prefix)")->required();
  move->add_option("--queue", f->queue, "The queue it waits in from now on");
  move->add_option("--priority", f->priority, "Its priority (higher starts first)");
}

void RegisterQueue(CLI::App& app, Action* action) {
  CLI::App* group = app.add_subcommand("queue", "The task queues and how much waits in each");
  group->require_subcommand(1);
  std::shared_ptr<TaskFlags> f;
  AddTaskCommand(group, action, "ls", "List queues: tasks waiting and running, default priority",
                 ListQueues, &f);
  CLI::App* quota = AddTaskCommand(
      group, action, "quota",
      "List the teams' GPU quotas with what each uses; with TEAM, set its quota (admins). A\n"
      "task that needs GPUs waits while its team is over quota, and says so.\n\n"
      "  cairn queue quota vision --gpus 8 --gpu-hours 500",
      Quota, &f);
  quota->add_option("TEAM", f->team, "The team whose quota to set");
  quota->add_option("--gpus", f->quota_gpus, "GPUs the team may hold at once (0: no cap)")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}));
  quota->add_option("--gpu-hours", f->quota_hours,
                    "GPU-hours the team may use in any 7 days (0: no cap)")
      ->check(CLI::Range(0.0, 1e9));
}

}  // namespace cairn::cli
