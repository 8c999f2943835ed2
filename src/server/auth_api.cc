// Handlers of identity: MLflow's auth API (`mlflow server --app-name basic-auth`: users/*,
// experiments/permissions/*) and cairn's (sign-in, tokens, accounts, teams, permissions held
// by teams, the audit log). Who may call which is the route table's business
// (access_rules.h); each handler decodes, calls the IdentityService and encodes.
#include <optional>

#include "core/identity.h"
#include "server/cairn_api.h"
#include "server/credentials.h"
#include "server/gate.h"
#include "server/routes.h"
#include "util/json_writer.h"

namespace cairn::server {
namespace {

using core::Grant;
using core::PrincipalKind;
using core::ResourceKind;

constexpr std::string_view kEmpty = "{}";

// --- MLflow's JSON shapes -----------------------------------------------------------------

// A permission as MLflow's auth API writes it: {experiment_id | name, user_id, permission}.
void WritePermission(JsonWriter& w, const Grant& g, int64_t user_id) {
  w.BeginObject();
  w.Key(g.resource_kind == ResourceKind::kExperiment ? "experiment_id" : "name")
      .String(g.resource_id);
  w.Key("user_id").Int(user_id);
  w.Key("permission").String(core::PermissionName(g.permission));
  w.EndObject();
}

void WriteUser(JsonWriter& w, const core::User& u, const std::vector<Grant>& grants) {
  w.BeginObject();
  w.Key("id").Int(u.id).Key("username").String(u.username).Key("is_admin").Bool(u.is_admin);
  w.Key("experiment_permissions").BeginArray();
  for (const Grant& g : grants) {
    if (g.resource_kind == ResourceKind::kExperiment) WritePermission(w, g, u.id);
  }
  w.EndArray().Key("registered_model_permissions").BeginArray();
  for (const Grant& g : grants) {
    if (g.resource_kind == ResourceKind::kRegisteredModel) WritePermission(w, g, u.id);
  }
  w.EndArray();
  w.EndObject();
}

std::string UserResponse(const core::User& u, const std::vector<Grant>& grants) {
  JsonWriter w;
  w.BeginObject().Key("user");
  WriteUser(w, u, grants);
  w.EndObject();
  return w.Take();
}

Result<Grant> DecodeUserGrant(const Fields& f, ResourceKind kind, bool with_permission) {
  Grant g;
  g.resource_kind = kind;
  CAIRN_ASSIGN_OR_RETURN(g.resource_id,
                         f.RequiredStr(kind == ResourceKind::kExperiment ? "experiment_id" : "name"));
  g.principal_kind = PrincipalKind::kUser;
  CAIRN_ASSIGN_OR_RETURN(g.principal, f.RequiredStr("username"));
  if (with_permission) {
    CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("permission"));
    CAIRN_ASSIGN_OR_RETURN(g.permission, service::IdentityService::ParsePermissionName(name));
  }
  return g;
}

// --- MLflow's auth API --------------------------------------------------------------------

Result<std::string> CreateUser(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string username, f.RequiredStr("username"));
  CAIRN_ASSIGN_OR_RETURN(std::string password, f.RequiredStr("password"));
  CAIRN_ASSIGN_OR_RETURN(core::User u, ctx.identity->CreateUser(username, password, false, false));
  return UserResponse(u, {});
}

Result<std::string> GetUser(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string username, f.RequiredStr("username"));
  CAIRN_ASSIGN_OR_RETURN(service::UserDetails d, ctx.identity->GetUser(username));
  return UserResponse(d.user, d.grants);
}

Result<std::string> UpdatePassword(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string username, f.RequiredStr("username"));
  CAIRN_ASSIGN_OR_RETURN(std::string password, f.RequiredStr("password"));
  CAIRN_RETURN_IF_ERROR(ctx.identity->UpdatePassword(username, password));
  return std::string(kEmpty);
}

Result<std::string> UpdateAdmin(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string username, f.RequiredStr("username"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<bool> is_admin, f.Bool("is_admin"));
  if (!is_admin) return service::MissingParameter("is_admin");
  CAIRN_RETURN_IF_ERROR(ctx.identity->UpdateAdmin(username, *is_admin));
  return std::string(kEmpty);
}

Result<std::string> DeleteUser(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(std::string username, f.RequiredStr("username"));
  CAIRN_RETURN_IF_ERROR(ctx.identity->DeleteUser(username));
  return std::string(kEmpty);
}

Result<std::string> PermissionResponse(ApiContext& ctx, const Grant& g) {
  CAIRN_ASSIGN_OR_RETURN(service::UserDetails d, ctx.identity->GetUser(g.principal));
  JsonWriter w;
  w.BeginObject().Key(g.resource_kind == ResourceKind::kExperiment ? "experiment_permission"
                                                                   : "registered_model_permission");
  WritePermission(w, g, d.user.id);
  w.EndObject();
  return w.Take();
}

// MLflow's permission calls, alike for experiments and registered models.
template <ResourceKind kKind>
Result<std::string> CreatePermission(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(Grant g, DecodeUserGrant(f, kKind, true));
  CAIRN_RETURN_IF_ERROR(ctx.identity->CreatePermission(g));
  return PermissionResponse(ctx, g);
}

template <ResourceKind kKind>
Result<std::string> GetPermission(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(Grant key, DecodeUserGrant(f, kKind, false));
  CAIRN_ASSIGN_OR_RETURN(Grant g, ctx.identity->GetPermission(key.resource_kind, key.resource_id,
                                                              key.principal_kind, key.principal));
  return PermissionResponse(ctx, g);
}

template <ResourceKind kKind>
Result<std::string> UpdatePermission(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(Grant g, DecodeUserGrant(f, kKind, true));
  CAIRN_RETURN_IF_ERROR(ctx.identity->UpdatePermission(g));
  return std::string(kEmpty);
}

template <ResourceKind kKind>
Result<std::string> DeletePermission(ApiContext& ctx, const Fields& f) {
  CAIRN_ASSIGN_OR_RETURN(Grant g, DecodeUserGrant(f, kKind, false));
  CAIRN_RETURN_IF_ERROR(ctx.identity->DeletePermission(g.resource_kind, g.resource_id,
                                                       g.principal_kind, g.principal));
  return std::string(kEmpty);
}

constexpr ResourceKind kExp = ResourceKind::kExperiment;
constexpr ResourceKind kModel = ResourceKind::kRegisteredModel;
constexpr ResourceKind kDataset = ResourceKind::kDataset;

constexpr Route kMlflowAuthRoutes[] = {
    {"POST", "users/create", CreateUser},
    {"GET", "users/get", GetUser},
    {"PATCH", "users/update-password", UpdatePassword},
    {"PATCH", "users/update-admin", UpdateAdmin},
    {"DELETE", "users/delete", DeleteUser},
    {"POST", "experiments/permissions/create", CreatePermission<kExp>},
    {"GET", "experiments/permissions/get", GetPermission<kExp>},
    {"PATCH", "experiments/permissions/update", UpdatePermission<kExp>},
    {"DELETE", "experiments/permissions/delete", DeletePermission<kExp>},
    {"POST", "registered-models/permissions/create", CreatePermission<kModel>},
    {"GET", "registered-models/permissions/get", GetPermission<kModel>},
    {"PATCH", "registered-models/permissions/update", UpdatePermission<kModel>},
    {"DELETE", "registered-models/permissions/delete", DeletePermission<kModel>},
};

// --- cairn's identity API -----------------------------------------------------------------

CairnResponse Json(std::string body) { return CairnResponse{std::move(body)}; }

// The session cookie: sent back only to this server, never readable by scripts, never sent
// along by another site's page.
std::string SessionCookie(const ApiContext& ctx, std::string_view value, bool clear) {
  std::string c = std::string(kSessionCookie) + "=" + std::string(value) +
                  "; Path=/; HttpOnly; SameSite=Strict";
  if (ctx.tls) c += "; Secure";
  if (clear) c += "; Max-Age=0";
  return c;
}

void WriteSession(JsonWriter& w, const ApiContext& ctx, std::string_view username, bool is_admin,
                  std::string_view csrf_token) {
  w.BeginObject();
  w.Key("auth").Bool(ctx.access->enabled());
  w.Key("signed_in").Bool(!ctx.access->enabled() || !username.empty());
  w.Key("username").String(username).Key("is_admin").Bool(is_admin);
  if (!csrf_token.empty()) w.Key("csrf_token").String(csrf_token);
  w.EndObject();
}

Result<CairnResponse> Login(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string username, call.fields.RequiredStr("username"));
  CAIRN_ASSIGN_OR_RETURN(std::string password, call.fields.RequiredStr("password"));
  if (!ctx.access->enabled()) {
    return FailedPrecondition("Authentication is off on this server: there is nothing to sign "
                              "in to.");
  }
  Result<service::Session> s = ctx.access->Login(username, password, ctx.remote_address);
  if (!s.ok()) {
    if (s.status().code() != StatusCode::kUnauthenticated) return s.status();
    // A wrong password is a 400 for the form, not a 401 that would ask the browser itself.
    return InvalidArgument("Wrong username or password.");
  }
  CAIRN_ASSIGN_OR_RETURN(service::UserDetails d, ctx.identity->GetUser(username));
  JsonWriter w;
  WriteSession(w, ctx, s->username, d.user.is_admin, s->csrf_token);
  CairnResponse out = Json(w.Take());
  out.headers.emplace_back("Set-Cookie", SessionCookie(ctx, s->id, false));
  return out;
}

Result<CairnResponse> Logout(ApiContext& ctx, const CairnCall&) {
  if (!ctx.session_id.empty()) ctx.access->Logout(ctx.session_id);
  CairnResponse out = Json(std::string(kEmpty));
  out.headers.emplace_back("Set-Cookie", SessionCookie(ctx, "", true));
  return out;
}

// Who the browser is signed in as (public: the web UI asks before it shows anything).
Result<CairnResponse> SessionInfo(ApiContext& ctx, const CairnCall&) {
  JsonWriter w;
  if (!ctx.access->enabled()) {
    WriteSession(w, ctx, "", true, "");
  } else if (ctx.session_id.empty()) {
    // A password or token (`cairn login` asks which token it holds), or nothing.
    const core::Principal& who = *ctx.caller;
    w.BeginObject();
    w.Key("auth").Bool(true).Key("signed_in").Bool(!who.username.empty());
    w.Key("username").String(who.username).Key("is_admin").Bool(who.is_admin);
    if (!who.token_id.empty()) {
      w.Key("token").BeginObject().Key("id").String(who.token_id);
      w.Key("name").String(who.token_name).EndObject();
    }
    w.EndObject();
  } else {
    std::optional<service::Session> s = ctx.access->FindSession(ctx.session_id);
    Result<service::UserDetails> d =
        s ? ctx.identity->GetUser(s->username) : Result<service::UserDetails>(NotFound(""));
    if (s && d.ok()) {
      WriteSession(w, ctx, s->username, d->user.is_admin, s->csrf_token);
    } else {
      WriteSession(w, ctx, "", false, "");
    }
  }
  return Json(w.Take());
}

void WriteToken(JsonWriter& w, const core::Token& t) {
  w.BeginObject();
  w.Key("id").String(t.id).Key("name").String(t.name).Key("owner").String(t.owner);
  w.Key("scopes").BeginArray();
  if (t.scopes.read) w.String("read");
  if (t.scopes.write) w.String("write");
  if (t.scopes.admin) w.String("admin");
  w.EndArray();
  w.Key("created_time").Int(t.created_time);
  w.Key("expiry_time");
  if (t.expiry_time == 0) {
    w.Null();
  } else {
    w.Int(t.expiry_time);
  }
  w.Key("last_used_time");
  if (t.last_used_time == 0) {
    w.Null();
  } else {
    w.Int(t.last_used_time);
  }
  w.Key("revoked_time");
  if (t.revoked_time == 0) {
    w.Null();
  } else {
    w.Int(t.revoked_time);
  }
  w.EndObject();
}

Result<CairnResponse> ListTokens(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> owner, call.fields.Str("owner"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<bool> all, call.fields.Bool("all"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Token> tokens,
                         ctx.identity->ListTokens(*ctx.caller, owner.value_or(""),
                                                  all.value_or(false)));
  JsonWriter w;
  w.BeginObject().Key("tokens").BeginArray();
  for (const core::Token& t : tokens) WriteToken(w, t);
  w.EndArray().EndObject();
  return Json(w.Take());
}

Result<CairnResponse> CreateToken(ApiContext& ctx, const CairnCall& call) {
  service::TokenRequest req;
  CAIRN_ASSIGN_OR_RETURN(req.name, call.fields.RequiredStr("name"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> owner, call.fields.Str("owner"));
  req.owner = owner.value_or("");
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> scopes, call.fields.StrList("scopes"));
  if (!scopes.empty()) {
    std::string joined;
    for (const std::string& s : scopes) joined += (joined.empty() ? "" : ",") + s;
    core::TokenScopes parsed;
    if (!core::ParseScopes(joined, &parsed)) {
      return InvalidArgument("Invalid value for parameter 'scopes' supplied: expected read, "
                             "write or admin");
    }
    req.scopes = parsed;
  }
  CAIRN_ASSIGN_OR_RETURN(req.expires_in_days, call.fields.Int("expires_in_days"));
  CAIRN_ASSIGN_OR_RETURN(service::CreatedToken t, ctx.identity->CreateToken(*ctx.caller, req));
  JsonWriter w;
  w.BeginObject().Key("token");
  WriteToken(w, t.token);
  w.Key("value").String(t.value).EndObject();
  return Json(w.Take());
}

Result<CairnResponse> RevokeToken(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string token, call.fields.RequiredStr("token"));
  CAIRN_ASSIGN_OR_RETURN(core::Token t, ctx.identity->RevokeToken(*ctx.caller, token));
  JsonWriter w;
  w.BeginObject().Key("token");
  WriteToken(w, t);
  w.EndObject();
  return Json(w.Take());
}

Result<CairnResponse> ListUsers(ApiContext& ctx, const CairnCall&) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::User> users, ctx.identity->ListUsers());
  JsonWriter w;
  w.BeginObject().Key("users").BeginArray();
  for (const core::User& u : users) {
    w.BeginObject().Key("id").Int(u.id).Key("username").String(u.username);
    w.Key("is_admin").Bool(u.is_admin).Key("service_account").Bool(u.is_service);
    w.Key("created_time").Int(u.created_time).EndObject();
  }
  w.EndArray().EndObject();
  return Json(w.Take());
}

// Accounts of either kind: MLflow's users/create makes people only.
Result<CairnResponse> CreateAccount(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string username, call.fields.RequiredStr("username"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> password, call.fields.Str("password"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<bool> is_admin, call.fields.Bool("is_admin"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<bool> service, call.fields.Bool("service_account"));
  CAIRN_ASSIGN_OR_RETURN(core::User u,
                         ctx.identity->CreateUser(username, password.value_or(""),
                                                  is_admin.value_or(false),
                                                  service.value_or(false)));
  return Json(UserResponse(u, {}));
}

Result<CairnResponse> ListTeams(ApiContext& ctx, const CairnCall&) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Team> teams, ctx.identity->ListTeams());
  JsonWriter w;
  w.BeginObject().Key("teams").BeginArray();
  for (const core::Team& t : teams) {
    w.BeginObject().Key("name").String(t.name).Key("members").BeginArray();
    for (const std::string& m : t.members) w.String(m);
    w.EndArray().Key("created_time").Int(t.created_time).EndObject();
  }
  w.EndArray().EndObject();
  return Json(w.Take());
}

Result<CairnResponse> CreateTeam(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, call.fields.RequiredStr("name"));
  CAIRN_RETURN_IF_ERROR(ctx.identity->CreateTeam(name));
  return Json(std::string(kEmpty));
}

Result<CairnResponse> DeleteTeam(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string name, call.fields.RequiredStr("name"));
  CAIRN_RETURN_IF_ERROR(ctx.identity->DeleteTeam(name));
  return Json(std::string(kEmpty));
}

Result<CairnResponse> AddTeamMember(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string team, call.fields.RequiredStr("team"));
  CAIRN_ASSIGN_OR_RETURN(std::string username, call.fields.RequiredStr("username"));
  CAIRN_RETURN_IF_ERROR(ctx.identity->AddTeamMember(team, username));
  return Json(std::string(kEmpty));
}

Result<CairnResponse> RemoveTeamMember(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string team, call.fields.RequiredStr("team"));
  CAIRN_ASSIGN_OR_RETURN(std::string username, call.fields.RequiredStr("username"));
  CAIRN_RETURN_IF_ERROR(ctx.identity->RemoveTeamMember(team, username));
  return Json(std::string(kEmpty));
}

// A grant named by experiment_id and exactly one of username and team.
// The field that names an object of each kind in cairn's permission calls.
constexpr const char* ObjectField(ResourceKind kind) {
  return kind == ResourceKind::kExperiment ? "experiment_id" : "name";
}

Result<Grant> DecodeGrant(const Fields& f, ResourceKind kind, bool with_permission) {
  Grant g;
  g.resource_kind = kind;
  CAIRN_ASSIGN_OR_RETURN(g.resource_id, f.RequiredStr(ObjectField(kind)));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> user, f.Str("username"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> team, f.Str("team"));
  if (user.has_value() == team.has_value()) {
    return InvalidArgument("Name exactly one of 'username' and 'team'.");
  }
  g.principal_kind = user ? PrincipalKind::kUser : PrincipalKind::kTeam;
  g.principal = user ? *user : *team;
  if (with_permission) {
    CAIRN_ASSIGN_OR_RETURN(std::string name, f.RequiredStr("permission"));
    CAIRN_ASSIGN_OR_RETURN(g.permission, service::IdentityService::ParsePermissionName(name));
  }
  return g;
}

// cairn's permission calls, alike for experiments and datasets: users' and teams' grants.
template <ResourceKind kKind>
Result<CairnResponse> ListCairnPermissions(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::string id, call.fields.RequiredStr(ObjectField(kKind)));
  CAIRN_ASSIGN_OR_RETURN(std::vector<Grant> grants, ctx.identity->PermissionsOn(kKind, id));
  JsonWriter w;
  w.BeginObject().Key(ObjectField(kKind)).String(id);
  w.Key("default_permission")
      .String(core::PermissionName(ctx.access->options().default_permission));
  w.Key("permissions").BeginArray();
  for (const Grant& g : grants) {
    w.BeginObject().Key(g.principal_kind == PrincipalKind::kUser ? "username" : "team");
    w.String(g.principal).Key("permission").String(core::PermissionName(g.permission));
    w.EndObject();
  }
  w.EndArray().EndObject();
  return Json(w.Take());
}

template <ResourceKind kKind>
Result<CairnResponse> PutCairnPermission(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(Grant g, DecodeGrant(call.fields, kKind, true));
  CAIRN_RETURN_IF_ERROR(ctx.identity->PutPermission(g));
  return Json(std::string(kEmpty));
}

template <ResourceKind kKind>
Result<CairnResponse> DeleteCairnPermission(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(Grant g, DecodeGrant(call.fields, kKind, false));
  CAIRN_RETURN_IF_ERROR(ctx.identity->DeletePermission(g.resource_kind, g.resource_id,
                                                       g.principal_kind, g.principal));
  return Json(std::string(kEmpty));
}

// What the caller may do on each experiment named: the web UI shows only the actions allowed.
Result<CairnResponse> ExperimentAccess(ApiContext& ctx, const CairnCall& call) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> ids, call.fields.StrList("experiment_id"));
  if (ids.empty()) return service::MissingParameter("experiment_id");
  if (ids.size() > 1000) {
    return InvalidArgument("At most 1000 values of 'experiment_id' may be asked at once.");
  }
  JsonWriter w;
  w.BeginObject().Key("experiments").BeginArray();
  for (const std::string& id : ids) {
    CAIRN_ASSIGN_OR_RETURN(core::Permission p,
                           ctx.access->PermissionOn(*ctx.caller, ResourceKind::kExperiment, id));
    w.BeginObject().Key("experiment_id").String(id);
    w.Key("permission").String(core::PermissionName(p));
    w.Key("can_read").Bool(core::Allows(p, core::Access::kRead));
    w.Key("can_update").Bool(core::Allows(p, core::Access::kUpdate));
    w.Key("can_delete").Bool(core::Allows(p, core::Access::kDelete));
    w.Key("can_manage").Bool(core::Allows(p, core::Access::kManage));
    w.EndObject();
  }
  w.EndArray().EndObject();
  return Json(w.Take());
}

Result<CairnResponse> ReadAudit(ApiContext& ctx, const CairnCall& call) {
  core::AuditQuery q;
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> actor, call.fields.Str("actor"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<std::string> object, call.fields.Str("object"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> since, call.fields.Int("since"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> before_id, call.fields.Int("before_id"));
  CAIRN_ASSIGN_OR_RETURN(std::optional<int64_t> max_results, call.fields.Int("max_results"));
  q.actor = actor.value_or("");
  q.object = object.value_or("");
  q.since = since.value_or(0);
  q.before_id = before_id.value_or(0);
  q.max_results = max_results.value_or(1000);
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::AuditEntry> entries, ctx.identity->ReadAudit(q));
  JsonWriter w;
  w.BeginObject().Key("entries").BeginArray();
  for (const core::AuditEntry& e : entries) {
    w.BeginObject().Key("id").Int(e.id).Key("time").Int(e.time);
    w.Key("actor").String(e.actor).Key("source").String(e.source);
    w.Key("action").String(e.action).Key("object").String(e.object);
    w.Key("outcome").String(e.outcome).EndObject();
  }
  w.EndArray();
  if (static_cast<int64_t>(entries.size()) == q.max_results && !entries.empty()) {
    w.Key("next_before_id").Int(entries.back().id);
  }
  w.EndObject();
  return Json(w.Take());
}

constexpr CairnRoute kCairnIdentityRoutes[] = {
    {"POST", "auth/login", Login},
    {"POST", "auth/logout", Logout},
    {"GET", "auth/session", SessionInfo},
    {"GET", "tokens", ListTokens},
    {"POST", "tokens", CreateToken},
    {"POST", "tokens/revoke", RevokeToken},
    {"GET", "users", ListUsers},
    {"POST", "users", CreateAccount},
    {"GET", "teams", ListTeams},
    {"POST", "teams", CreateTeam},
    {"POST", "teams/delete", DeleteTeam},
    {"POST", "teams/members", AddTeamMember},
    {"POST", "teams/members/remove", RemoveTeamMember},
    {"GET", "experiments/permissions", ListCairnPermissions<kExp>},
    {"GET", "experiments/access", ExperimentAccess},
    {"POST", "experiments/permissions", PutCairnPermission<kExp>},
    {"POST", "experiments/permissions/delete", DeleteCairnPermission<kExp>},
    {"GET", "datasets/permissions", ListCairnPermissions<kDataset>},
    {"POST", "datasets/permissions", PutCairnPermission<kDataset>},
    {"POST", "datasets/permissions/delete", DeleteCairnPermission<kDataset>},
    {"GET", "audit", ReadAudit},
};

}  // namespace

std::span<const Route> MlflowAuthRoutes() { return kMlflowAuthRoutes; }

std::span<const CairnRoute> CairnIdentityRoutes() { return kCairnIdentityRoutes; }

}  // namespace cairn::server
