#include "store/sqlite/identity_tables.h"

#include <utility>

#include "store/store_util.h"

namespace cairn::store::sqlite {
namespace {

using core::Grant;
using core::PrincipalKind;
using core::ResourceKind;

// Whether a statement that selects one row found it; kNotFound-worthy when not.
Result<bool> Exists(Connection& c, const char* sql, std::string_view key) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare(sql));
  s->Bind(1, key);
  const bool found = s->Step();
  CAIRN_RETURN_IF_ERROR(s->status());
  return found;
}

Status MustChange(Connection& c, Status s, Status if_none) {
  CAIRN_RETURN_IF_ERROR(s);
  return sqlite3_changes(c.raw()) > 0 ? Status::Ok() : if_none;
}

constexpr const char* kUserColumns =
    "SELECT id, username, password_hash, is_admin, is_service, created_time FROM users ";

core::User UserRow(const Stmt& s) {
  core::User u;
  u.id = s.Int(0);
  u.username = s.Str(1);
  u.password_hash = s.Str(2);
  u.is_admin = s.Int(3) != 0;
  u.is_service = s.Int(4) != 0;
  u.created_time = s.Int(5);
  return u;
}

core::Token TokenRow(const Stmt& s) {
  core::Token t;
  t.id = s.Str(0);
  t.name = s.Str(1);
  t.owner = s.Str(2);
  t.secret_hash = s.Str(3);
  core::ParseScopes(s.Text(4), &t.scopes);
  t.created_time = s.Int(5);
  t.expiry_time = s.Int(6);
  t.last_used_time = s.Int(7);
  t.revoked_time = s.Int(8);
  return t;
}

Result<std::vector<Grant>> GrantRows(Stmt* s) {
  std::vector<Grant> out;
  while (s->Step()) {
    Grant g;
    core::ParseResourceKind(s->Text(0), &g.resource_kind);
    g.resource_id = s->Str(1);
    core::ParsePrincipalKind(s->Text(2), &g.principal_kind);
    g.principal = s->Str(3);
    core::ParsePermission(s->Text(4), &g.permission);
    out.push_back(std::move(g));
  }
  CAIRN_RETURN_IF_ERROR(s->status());
  return out;
}

class SqliteIdentityStore : public IdentityStore {
 public:
  explicit SqliteIdentityStore(Database* db) : db_(db) {}

  Result<int64_t> CreateUser(const core::User& user) override {
    int64_t id = 0;
    CAIRN_RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(bool taken,
                             Exists(c, "SELECT 1 FROM users WHERE username = ?", user.username));
      if (taken) return UserTaken(user.username);
      CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                     "INSERT INTO users (username, password_hash, is_admin, "
                                     "is_service, created_time) VALUES (?, ?, ?, ?, ?)",
                                     user.username, user.password_hash, user.is_admin ? 1 : 0,
                                     user.is_service ? 1 : 0, user.created_time));
      id = sqlite3_last_insert_rowid(c.raw());
      return Status::Ok();
    }));
    return id;
  }

  Result<core::User> GetUser(std::string_view username) override {
    return db_->Read<core::User>([&](Connection& c) -> Result<core::User> {
      static const std::string sql = std::string(kUserColumns) + "WHERE username = ?";
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare(sql.c_str()));
      s->Bind(1, username);
      if (!s->Step()) {
        CAIRN_RETURN_IF_ERROR(s->status());
        return UserNotFound(username);
      }
      return UserRow(*s);
    });
  }

  Result<std::vector<core::User>> ListUsers() override {
    using List = std::vector<core::User>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      static const std::string sql = std::string(kUserColumns) + "ORDER BY username";
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare(sql.c_str()));
      List out;
      while (s->Step()) out.push_back(UserRow(*s));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Status SetPassword(std::string_view username, std::string_view password_hash) override {
    return db_->Write([&](Connection& c) {
      return MustChange(c,
                        ExecStmt(c, "UPDATE users SET password_hash = ? WHERE username = ?",
                                 password_hash, username),
                        UserNotFound(username));
    });
  }

  Status SetAdmin(std::string_view username, bool is_admin) override {
    return db_->Write([&](Connection& c) {
      return MustChange(c,
                        ExecStmt(c, "UPDATE users SET is_admin = ? WHERE username = ?",
                                 is_admin ? 1 : 0, username),
                        UserNotFound(username));
    });
  }

  Status DeleteUser(std::string_view username) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_RETURN_IF_ERROR(MustChange(
          c, ExecStmt(c, "DELETE FROM users WHERE username = ?", username), UserNotFound(username)));
      CAIRN_RETURN_IF_ERROR(ExecStmt(c, "DELETE FROM team_members WHERE username = ?", username));
      CAIRN_RETURN_IF_ERROR(ExecStmt(c, "DELETE FROM tokens WHERE owner = ?", username));
      return ExecStmt(c, "DELETE FROM grants WHERE principal_kind = 'user' AND principal = ?",
                      username);
    });
  }

  Status CreateTeam(const core::Team& team) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(bool taken,
                             Exists(c, "SELECT 1 FROM teams WHERE name = ?", team.name));
      if (taken) return TeamTaken(team.name);
      return ExecStmt(c, "INSERT INTO teams (name, created_time) VALUES (?, ?)", team.name,
                      team.created_time);
    });
  }

  Result<core::Team> GetTeam(std::string_view name) override {
    return db_->Read<core::Team>([&](Connection& c) -> Result<core::Team> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT created_time FROM teams WHERE name = ?"));
      s->Bind(1, name);
      if (!s->Step()) {
        CAIRN_RETURN_IF_ERROR(s->status());
        return TeamNotFound(name);
      }
      core::Team t{std::string(name), {}, s->Int(0)};
      CAIRN_ASSIGN_OR_RETURN(t.members, MembersOf(c, name));
      return t;
    });
  }

  Result<std::vector<core::Team>> ListTeams() override {
    using List = std::vector<core::Team>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      List out;
      {
        CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                               c.Prepare("SELECT name, created_time FROM teams ORDER BY name"));
        while (s->Step()) out.push_back(core::Team{s->Str(0), {}, s->Int(1)});
        CAIRN_RETURN_IF_ERROR(s->status());
      }
      for (core::Team& t : out) {
        CAIRN_ASSIGN_OR_RETURN(t.members, MembersOf(c, t.name));
      }
      return out;
    });
  }

  Status DeleteTeam(std::string_view name) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_RETURN_IF_ERROR(
          MustChange(c, ExecStmt(c, "DELETE FROM teams WHERE name = ?", name), TeamNotFound(name)));
      CAIRN_RETURN_IF_ERROR(ExecStmt(c, "DELETE FROM team_members WHERE team = ?", name));
      return ExecStmt(c, "DELETE FROM grants WHERE principal_kind = 'team' AND principal = ?",
                      name);
    });
  }

  Status AddTeamMember(std::string_view team, std::string_view username) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(bool team_exists,
                             Exists(c, "SELECT 1 FROM teams WHERE name = ?", team));
      if (!team_exists) return TeamNotFound(team);
      CAIRN_ASSIGN_OR_RETURN(bool user_exists,
                             Exists(c, "SELECT 1 FROM users WHERE username = ?", username));
      if (!user_exists) return UserNotFound(username);
      return ExecStmt(c, "INSERT OR IGNORE INTO team_members (team, username) VALUES (?, ?)",
                      team, username);
    });
  }

  Status RemoveTeamMember(std::string_view team, std::string_view username) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(bool team_exists,
                             Exists(c, "SELECT 1 FROM teams WHERE name = ?", team));
      if (!team_exists) return TeamNotFound(team);
      return MustChange(
          c, ExecStmt(c, "DELETE FROM team_members WHERE team = ? AND username = ?", team,
                      username),
          NotATeamMember(team, username));
    });
  }

  Result<std::vector<std::string>> TeamsOf(std::string_view username) override {
    using List = std::vector<std::string>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT team FROM team_members WHERE "
                                                 "username = ? ORDER BY team"));
      s->Bind(1, username);
      List out;
      while (s->Step()) out.push_back(s->Str(0));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Status CreateToken(const core::Token& t) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(bool owner_exists,
                             Exists(c, "SELECT 1 FROM users WHERE username = ?", t.owner));
      if (!owner_exists) return UserNotFound(t.owner);
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT 1 FROM tokens WHERE owner = ? AND "
                                                 "name = ?"));
      s->Bind(1, t.owner).Bind(2, t.name);
      if (s->Step()) {
        return TokenNameTaken(t.owner, t.name);
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      CAIRN_ASSIGN_OR_RETURN(Stmt * dup, c.Prepare("SELECT 1 FROM tokens WHERE id = ? OR "
                                                   "secret_hash = ?"));
      dup->Bind(1, t.id).Bind(2, t.secret_hash);
      if (dup->Step()) return AlreadyExists("Token id already exists");
      CAIRN_RETURN_IF_ERROR(dup->status());
      return ExecStmt(c,
                      "INSERT INTO tokens (id, name, owner, secret_hash, scopes, created_time, "
                      "expiry_time, last_used_time, revoked_time) VALUES (?, ?, ?, ?, ?, ?, ?, "
                      "?, ?)",
                      t.id, t.name, t.owner, t.secret_hash, core::ScopesText(t.scopes),
                      t.created_time, t.expiry_time, t.last_used_time, t.revoked_time);
    });
  }

  Result<core::Token> GetToken(std::string_view id) override {
    return OneToken("SELECT id, name, owner, secret_hash, scopes, created_time, expiry_time, "
                    "last_used_time, revoked_time FROM tokens WHERE id = ?",
                    id, TokenNotFound(id));
  }

  Result<core::Token> GetTokenBySecretHash(std::string_view secret_hash) override {
    return OneToken("SELECT id, name, owner, secret_hash, scopes, created_time, expiry_time, "
                    "last_used_time, revoked_time FROM tokens WHERE secret_hash = ?",
                    secret_hash, NotFound("No token with that value"));
  }

  Result<std::vector<core::Token>> ListTokens(std::string_view owner) override {
    using List = std::vector<core::Token>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT id, name, owner, secret_hash, scopes, created_time, "
                              "expiry_time, last_used_time, revoked_time FROM tokens WHERE ? OR "
                              "owner = ? ORDER BY created_time DESC, seq DESC"));
      s->Bind(1, owner.empty() ? 1 : 0).Bind(2, owner);
      List out;
      while (s->Step()) out.push_back(TokenRow(*s));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Status RevokeToken(std::string_view id, int64_t now) override {
    return db_->Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(bool exists, Exists(c, "SELECT 1 FROM tokens WHERE id = ?", id));
      if (!exists) return TokenNotFound(id);
      return ExecStmt(c, "UPDATE tokens SET revoked_time = ? WHERE id = ? AND revoked_time = 0",
                      now, id);
    });
  }

  Status TouchToken(std::string_view id, int64_t now) override {
    return db_->Write([&](Connection& c) {
      return MustChange(
          c, ExecStmt(c, "UPDATE tokens SET last_used_time = ? WHERE id = ?", now, id),
          TokenNotFound(id));
    });
  }

  Status PutGrant(const Grant& g) override {
    return db_->Write([&](Connection& c) -> Status {
      if (g.principal_kind == PrincipalKind::kUser) {
        CAIRN_ASSIGN_OR_RETURN(bool exists,
                               Exists(c, "SELECT 1 FROM users WHERE username = ?", g.principal));
        if (!exists) return UserNotFound(g.principal);
      } else {
        CAIRN_ASSIGN_OR_RETURN(bool exists,
                               Exists(c, "SELECT 1 FROM teams WHERE name = ?", g.principal));
        if (!exists) return TeamNotFound(g.principal);
      }
      return ExecStmt(c,
                      "INSERT INTO grants (resource_kind, resource_id, principal_kind, "
                      "principal, permission) VALUES (?, ?, ?, ?, ?) ON CONFLICT (resource_kind, "
                      "resource_id, principal_kind, principal) DO UPDATE SET permission = "
                      "excluded.permission",
                      core::ResourceKindName(g.resource_kind), g.resource_id,
                      core::PrincipalKindName(g.principal_kind), g.principal,
                      core::PermissionName(g.permission));
    });
  }

  Status DeleteGrant(ResourceKind kind, std::string_view resource_id,
                     PrincipalKind principal_kind, std::string_view principal) override {
    return db_->Write([&](Connection& c) {
      return MustChange(
          c,
          ExecStmt(c,
                   "DELETE FROM grants WHERE resource_kind = ? AND resource_id = ? AND "
                   "principal_kind = ? AND principal = ?",
                   core::ResourceKindName(kind), resource_id,
                   core::PrincipalKindName(principal_kind), principal),
          GrantNotFound(kind, resource_id, principal_kind, principal));
    });
  }

  Result<std::vector<Grant>> GrantsOn(ResourceKind kind, std::string_view resource_id) override {
    return db_->Read<std::vector<Grant>>([&](Connection& c) -> Result<std::vector<Grant>> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT resource_kind, resource_id, principal_kind, principal, "
                              "permission FROM grants WHERE resource_kind = ? AND resource_id = "
                              "? ORDER BY principal_kind = 'team', principal"));
      s->Bind(1, core::ResourceKindName(kind)).Bind(2, resource_id);
      return GrantRows(s);
    });
  }

  Result<std::vector<Grant>> GrantsOf(PrincipalKind principal_kind,
                                      std::string_view principal) override {
    return db_->Read<std::vector<Grant>>([&](Connection& c) -> Result<std::vector<Grant>> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT resource_kind, resource_id, principal_kind, principal, "
                              "permission FROM grants WHERE principal_kind = ? AND principal = ? "
                              "ORDER BY resource_kind, resource_id"));
      s->Bind(1, core::PrincipalKindName(principal_kind)).Bind(2, principal);
      return GrantRows(s);
    });
  }

  Status DeleteGrantsOn(ResourceKind kind, std::string_view resource_id) override {
    return db_->Write([&](Connection& c) {
      return ExecStmt(c, "DELETE FROM grants WHERE resource_kind = ? AND resource_id = ?",
                      core::ResourceKindName(kind), resource_id);
    });
  }

  Status AppendAudit(const core::AuditEntry& e) override {
    return db_->Write([&](Connection& c) { return InsertAudit(c, e); });
  }

  void AppendAuditAsync(core::AuditEntry e, std::function<void(Status)> done) override {
    db_->WriteAsync([e = std::move(e)](Connection& c) { return InsertAudit(c, e); },
                    std::move(done));
  }

  Result<std::vector<core::AuditEntry>> ReadAudit(const core::AuditQuery& q) override {
    using List = std::vector<core::AuditEntry>;
    return db_->Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s,
          c.Prepare("SELECT id, time, actor, source, action, object, outcome FROM audit_log "
                    "WHERE (?1 = 0 OR id < ?1) AND (?2 = '' OR actor = ?2) AND (?3 = '' OR "
                    "object = ?3 OR (substr(?3, -1) IN (' ', '/') AND substr(object, 1, "
                    "length(?3)) = ?3)) AND time >= ?4 ORDER BY id DESC LIMIT ?5"));
      s->Bind(1, q.before_id).Bind(2, q.actor).Bind(3, q.object).Bind(4, q.since);
      s->Bind(5, q.max_results);
      List out;
      while (s->Step()) {
        out.push_back(core::AuditEntry{s->Int(0), s->Int(1), s->Str(2), s->Str(3), s->Str(4),
                                       s->Str(5), s->Str(6)});
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

 private:
  static Status InsertAudit(Connection& c, const core::AuditEntry& e) {
    return ExecStmt(c,
                    "INSERT INTO audit_log (time, actor, source, action, object, outcome) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    e.time, e.actor, e.source, e.action, e.object, e.outcome);
  }

  static Result<std::vector<std::string>> MembersOf(Connection& c, std::string_view team) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT username FROM team_members WHERE team = "
                                               "? ORDER BY username"));
    s->Bind(1, team);
    std::vector<std::string> out;
    while (s->Step()) out.push_back(s->Str(0));
    CAIRN_RETURN_IF_ERROR(s->status());
    return out;
  }

  Result<core::Token> OneToken(const char* sql, std::string_view key, Status if_none) {
    return db_->Read<core::Token>([&](Connection& c) -> Result<core::Token> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare(sql));
      s->Bind(1, key);
      if (!s->Step()) {
        CAIRN_RETURN_IF_ERROR(s->status());
        return if_none;
      }
      return TokenRow(*s);
    });
  }

  Database* db_;
};

}  // namespace

std::unique_ptr<IdentityStore> NewSqliteIdentityStore(Database* db) {
  return std::make_unique<SqliteIdentityStore>(db);
}

}  // namespace cairn::store::sqlite
