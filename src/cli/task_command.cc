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
}

}  // namespace cairn::cli
