#include "store/sqlite/queue_tables.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "store/queue_rules.h"

namespace cairn::store::sqlite {
namespace {

using core::Agent;
using core::Queue;
using core::Task;
using core::TaskState;
using nlohmann::json;

#define CAIRN_TASK_COLUMNS                                                                \
  "seq, id, queue, priority, state, need_gpus, need_cpus, need_memory_mib, spec, "        \
  "requirements, owner, team, run_id, attempt, max_attempts, agent, lease_expiry, gpus, " \
  "cancel_requested, reason, created_time, start_time, end_time"
#define CAIRN_AGENT_COLUMNS \
  "id, name, owner, queues, host, gpus, slots, started_time, heartbeat_time"

Task TaskRow(const Stmt& s) {
  Task t;
  t.seq = s.Int(0);
  t.id = s.Str(1);
  t.queue = s.Str(2);
  t.priority = s.Int(3);
  core::ParseTaskState(s.Text(4), &t.state);
  t.needs.gpus = s.Int(5);
  t.needs.cpus = s.Double(6);
  t.needs.memory_mib = s.Int(7);
  t.spec = s.Str(8);
  t.requirements = s.Str(9);
  t.owner = s.Str(10);
  t.team = s.Str(11);
  t.run_id = s.Str(12);
  t.attempt = s.Int(13);
  t.max_attempts = s.Int(14);
  t.agent = s.Str(15);
  t.lease_expiry = s.Int(16);
  t.gpus = s.Str(17);
  t.cancel_requested = s.Int(18) != 0;
  t.reason = s.Str(19);
  t.created_time = s.Int(20);
  t.start_time = s.Int(21);
  t.end_time = s.Int(22);
  return t;
}

// Every column but seq and id, which never change.
Status WriteTask(Connection& c, const Task& t) {
  return ExecStmt(c,
                  "UPDATE tasks SET queue = ?, priority = ?, state = ?, need_gpus = ?, "
                  "need_cpus = ?, need_memory_mib = ?, spec = ?, requirements = ?, owner = ?, "
                  "team = ?, run_id = ?, attempt = ?, max_attempts = ?, agent = ?, "
                  "lease_expiry = ?, gpus = ?, cancel_requested = ?, reason = ?, "
                  "created_time = ?, start_time = ?, end_time = ? WHERE seq = ?",
                  t.queue, t.priority, core::TaskStateName(t.state), t.needs.gpus, t.needs.cpus,
                  t.needs.memory_mib, t.spec, t.requirements, t.owner, t.team, t.run_id, t.attempt,
                  t.max_attempts, t.agent, t.lease_expiry, t.gpus, t.cancel_requested ? 1 : 0,
                  t.reason, t.created_time, t.start_time, t.end_time, t.seq);
}

Result<Task> ReadTask(Connection& c, std::string_view id) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                         c.Prepare("SELECT " CAIRN_TASK_COLUMNS " FROM tasks WHERE id = ?"));
  s->Bind(1, id);
  if (!s->Step()) {
    CAIRN_RETURN_IF_ERROR(s->status());
    return TaskNotFound(id);
  }
  return TaskRow(*s);
}

Result<Queue> ReadQueue(Connection& c, std::string_view name) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT name, description, default_priority, "
                                             "created_time FROM queues WHERE name = ?"));
  s->Bind(1, name);
  if (!s->Step()) {
    CAIRN_RETURN_IF_ERROR(s->status());
    return QueueNotFound(name);
  }
  return Queue{s->Str(0), s->Str(1), s->Int(2), s->Int(3)};
}

std::string JoinJson(const std::vector<std::string>& items) { return json(items).dump(); }

std::vector<std::string> SplitJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const json& item : j) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

Agent AgentRow(const Stmt& s) {
  Agent a;
  a.id = s.Str(0);
  a.name = s.Str(1);
  a.owner = s.Str(2);
  a.queues = SplitJson(s.Text(3));
  a.host = s.Str(4);
  a.gpus = SplitJson(s.Text(5));
  a.slots = s.Int(6);
  a.started_time = s.Int(7);
  a.heartbeat_time = s.Int(8);
  return a;
}

class SqliteQueueStore : public QueueStore {
 public:
  explicit SqliteQueueStore(Database* db) : db_(db) {}

  Result<Queue> EnsureQueue(std::string_view name, int64_t now) override {
    Queue out;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                     "INSERT OR IGNORE INTO queues (name, description, "
                                     "default_priority, created_time) VALUES (?, '', 0, ?)",
                                     name, now));
      CAIRN_ASSIGN_OR_RETURN(out, ReadQueue(c, name));
      return Status::Ok();
    }));
    return out;
  }

  Result<Queue> GetQueue(std::string_view name) override {
    return db_->Read<Queue>([&](Connection& c) { return ReadQueue(c, name); });
  }

  Status UpdateQueue(std::string_view name, std::string_view description,
                     int64_t default_priority) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_RETURN_IF_ERROR(ReadQueue(c, name).status());
      return ExecStmt(c, "UPDATE queues SET description = ?, default_priority = ? WHERE name = ?",
                      description, default_priority, name);
    });
  }

  Result<std::vector<Queue>> ListQueues() override {
    using List = std::vector<Queue>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT name, description, default_priority, "
                                                 "created_time FROM queues ORDER BY name"));
      List out;
      while (s->Step()) out.push_back({s->Str(0), s->Str(1), s->Int(2), s->Int(3)});
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Result<Task> EnqueueTask(const Task& task) override {
    Task out;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      CAIRN_RETURN_IF_ERROR(ReadQueue(c, task.queue).status());
      if (ReadTask(c, task.id).ok()) return AlreadyExists("A task with id " + task.id + " exists");
      out = task;
      out.state = TaskState::kQueued;
      CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                     "INSERT INTO tasks (id, queue, priority, state, "
                                     "need_gpus, need_cpus, need_memory_mib, spec, "
                                     "requirements, owner, team, run_id, attempt, "
                                     "max_attempts, agent, lease_expiry, gpus, "
                                     "cancel_requested, reason, created_time, start_time, "
                                     "end_time) VALUES (?, '', 0, '', 0, 0, 0, '', '', '', "
                                     "'', '', 0, 0, '', 0, '', 0, '', 0, 0, 0)",
                                     out.id));
      out.seq = sqlite3_last_insert_rowid(c.raw());
      return WriteTask(c, out);
    }));
    return out;
  }

  Result<Task> GetTask(std::string_view id) override {
    return db_->Read<Task>([&](Connection& c) { return ReadTask(c, id); });
  }

  Result<std::vector<Task>> ListTasks(const TaskQuery& query) override {
    using List = std::vector<Task>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      std::string sql = "SELECT " CAIRN_TASK_COLUMNS " FROM tasks WHERE 1";
      std::vector<std::string> args;
      if (!query.queue.empty()) {
        sql += " AND queue = ?";
        args.push_back(query.queue);
      }
      if (!query.agent.empty()) {
        sql += " AND agent = ?";
        args.push_back(query.agent);
      }
      if (!query.states.empty()) {
        sql += " AND state IN (";
        for (size_t i = 0; i < query.states.size(); ++i) {
          sql += i == 0 ? "?" : ", ?";
          args.push_back(std::string(core::TaskStateName(query.states[i])));
        }
        sql += ")";
      }
      sql += " ORDER BY priority DESC, seq LIMIT ?";
      CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Stmt> s, c.PrepareOnce(sql));
      int i = 0;
      for (const std::string& a : args) s->Bind(++i, a);
      s->Bind(++i, std::max<int64_t>(query.max_results, 0));
      List out;
      while (s->Step()) out.push_back(TaskRow(*s));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Result<std::optional<Task>> LeaseTask(const LeaseRequest& request) override {
    std::optional<Task> out;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      out.reset();
      std::string sql =
          "SELECT " CAIRN_TASK_COLUMNS " FROM tasks WHERE state = 'queued' AND queue IN (";
      for (size_t i = 0; i < request.queues.size(); ++i) sql += i == 0 ? "?" : ", ?";
      sql += ") ORDER BY priority DESC, seq";
      CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Stmt> s, c.PrepareOnce(sql));
      int i = 0;
      for (const std::string& q : request.queues) s->Bind(++i, q);
      CAIRN_ASSIGN_OR_RETURN(std::vector<core::TeamQuota> quotas, ReadQuotas(c));
      std::map<std::string, core::TeamUsage> usage;  // of the teams seen, computed once
      std::vector<std::pair<std::string, std::string>> over;  // (task id, reason)
      while (s->Step()) {
        Task t = TaskRow(*s);
        auto q = std::find_if(quotas.begin(), quotas.end(),
                              [&](const core::TeamQuota& q) { return q.team == t.team; });
        if (q != quotas.end() && t.needs.gpus > 0) {
          auto u = usage.find(t.team);
          if (u == usage.end()) {
            CAIRN_ASSIGN_OR_RETURN(core::TeamUsage used, Usage(c, t.team, request.now));
            u = usage.emplace(t.team, used).first;
          }
          if (std::string why = QuotaShortfall(t, *q, u->second); !why.empty()) {
            if (why != t.reason) over.emplace_back(t.id, std::move(why));
            continue;
          }
        }
        std::optional<std::string> gpus = request.place(t);
        if (!gpus) continue;
        ApplyLease(&t, request.agent, *gpus, request.now, request.lease_expiry);
        out = std::move(t);
        break;
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      s.reset();
      for (const auto& [id, why] : over) {
        CAIRN_RETURN_IF_ERROR(
            ExecStmt(c, "UPDATE tasks SET reason = ? WHERE id = ? AND state = 'queued'", why, id));
      }
      return out ? WriteTask(c, *out) : Status::Ok();
    }));
    return out;
  }

  Result<Task> RenewLease(std::string_view id, std::string_view agent, int64_t attempt,
                          int64_t lease_expiry) override {
    return Change(id, [&](Task* t) { return ApplyRenew(t, agent, attempt, lease_expiry); });
  }

  Result<Task> FinishTask(std::string_view id, std::string_view agent, int64_t attempt,
                          TaskState state, std::string_view reason, int64_t now) override {
    return Change(
        id, [&](Task* t) { return ApplyFinish(t, agent, attempt, state, reason, now); }, {}, now);
  }

  Result<std::vector<Task>> ExpiredLeases(int64_t now) override {
    using List = std::vector<Task>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT " CAIRN_TASK_COLUMNS " FROM tasks "
                                                 "WHERE state = 'running' AND lease_expiry < ? "
                                                 "ORDER BY priority DESC, seq"));
      s->Bind(1, now);
      List out;
      while (s->Step()) out.push_back(TaskRow(*s));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Result<Task> ExpireLease(std::string_view id, int64_t attempt, std::string_view next_run_id,
                           std::string_view reason, int64_t now) override {
    return Change(
        id, [&](Task* t) { return ApplyExpire(t, attempt, next_run_id, reason, now); }, {}, now);
  }

  Result<Task> CancelTask(std::string_view id, std::string_view reason, int64_t now) override {
    return Change(id, [&](Task* t) { return ApplyCancel(t, reason, now); });
  }

  Result<Task> MoveTask(std::string_view id, std::string_view queue, int64_t priority) override {
    return Change(
        id, [&](Task* t) { return ApplyMove(t, queue, priority); }, queue);
  }

  Status SetTaskReason(std::string_view id, std::string_view reason) override {
    return Change(id, [&](Task* t) { return ApplyReason(t, reason); }).status();
  }

  Status PutTeamQuota(const core::TeamQuota& q) override {
    return db_->Write([&](Connection& c) -> Status {
      if (q.gpus <= 0 && q.gpu_hours <= 0) {
        return ExecStmt(c, "DELETE FROM team_quotas WHERE team = ?", q.team);
      }
      return ExecStmt(c,
                      "INSERT OR REPLACE INTO team_quotas (team, gpus, gpu_hours) VALUES (?, ?, ?)",
                      q.team, q.gpus, q.gpu_hours);
    });
  }

  Result<std::vector<core::TeamQuota>> ListTeamQuotas() override {
    using List = std::vector<core::TeamQuota>;
    return db_->Read<List>([&](Connection& c) -> Result<List> { return ReadQuotas(c); });
  }

  Result<core::TeamUsage> GetTeamUsage(std::string_view team, int64_t now) override {
    return db_->Read<core::TeamUsage>(
        [&](Connection& c) -> Result<core::TeamUsage> { return Usage(c, team, now); });
  }

  Status PutAgent(const Agent& a) override {
    return db_->Write([&](Connection& c) -> Status {
      return ExecStmt(c,
                      "INSERT OR REPLACE INTO agents (" CAIRN_AGENT_COLUMNS
                      ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      a.id, a.name, a.owner, JoinJson(a.queues), a.host, JoinJson(a.gpus), a.slots,
                      a.started_time, a.heartbeat_time);
    });
  }

  Result<Agent> GetAgent(std::string_view id) override {
    return db_->Read<Agent>([&](Connection& c) -> Result<Agent> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                             c.Prepare("SELECT " CAIRN_AGENT_COLUMNS " FROM agents WHERE id = ?"));
      s->Bind(1, id);
      if (!s->Step()) {
        CAIRN_RETURN_IF_ERROR(s->status());
        return AgentNotFound(id);
      }
      return AgentRow(*s);
    });
  }

  Status AgentHeartbeat(std::string_view id, int64_t now) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_RETURN_IF_ERROR(
          ExecStmt(c, "UPDATE agents SET heartbeat_time = ? WHERE id = ?", now, id));
      return sqlite3_changes(c.raw()) == 0 ? AgentNotFound(id) : Status::Ok();
    });
  }

  Result<std::vector<Agent>> ListAgents() override {
    using List = std::vector<Agent>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                             c.Prepare("SELECT " CAIRN_AGENT_COLUMNS " FROM agents ORDER BY id"));
      List out;
      while (s->Step()) out.push_back(AgentRow(*s));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

 private:
  // Reads the task, applies `apply` and writes it back, in one write transaction. With
  // `queue`, that queue must exist.
  template <typename Apply>
  Result<Task> Change(std::string_view id, Apply apply, std::string_view queue = {},
                      int64_t now = 0) {
    Task out;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      if (!queue.empty()) CAIRN_RETURN_IF_ERROR(ReadQueue(c, queue).status());
      CAIRN_ASSIGN_OR_RETURN(out, ReadTask(c, id));
      const Task before = out;
      CAIRN_RETURN_IF_ERROR(apply(&out));
      if (EndsGpuAttempt(before, out)) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "INSERT OR REPLACE INTO gpu_usage (task_id, attempt, team, "
                                       "gpus, start_time, end_time) VALUES (?, ?, ?, ?, ?, ?)",
                                       before.id, before.attempt, before.team, before.needs.gpus,
                                       before.start_time, now));
      }
      return WriteTask(c, out);
    }));
    return out;
  }

  static Result<std::vector<core::TeamQuota>> ReadQuotas(Connection& c) {
    CAIRN_ASSIGN_OR_RETURN(
        Stmt * s, c.Prepare("SELECT team, gpus, gpu_hours FROM team_quotas ORDER BY team"));
    std::vector<core::TeamQuota> out;
    while (s->Step()) out.push_back(core::TeamQuota{s->Str(0), s->Int(1), s->Double(2)});
    CAIRN_RETURN_IF_ERROR(s->status());
    return out;
  }

  static Result<core::TeamUsage> Usage(Connection& c, std::string_view team, int64_t now) {
    core::TeamUsage u;
    {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT need_gpus, start_time FROM tasks "
                                                 "WHERE team = ? AND state = 'running'"));
      s->Bind(1, team);
      while (s->Step()) {
        u.gpus += s->Int(0);
        u.gpu_hours += GpuHoursInWindow(s->Int(0), s->Int(1), now, now);
      }
      CAIRN_RETURN_IF_ERROR(s->status());
    }
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT gpus, start_time, end_time FROM gpu_usage "
                                               "WHERE team = ? AND end_time > ?"));
    s->Bind(1, team);
    s->Bind(2, now - kQuotaWindowMs);
    while (s->Step()) u.gpu_hours += GpuHoursInWindow(s->Int(0), s->Int(1), s->Int(2), now);
    CAIRN_RETURN_IF_ERROR(s->status());
    return u;
  }

  Database* db_;
};

}  // namespace

std::unique_ptr<QueueStore> NewSqliteQueueStore(Database* db) {
  return std::make_unique<SqliteQueueStore>(db);
}

}  // namespace cairn::store::sqlite
