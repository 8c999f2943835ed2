#include "service/identity_service.h"

#include <algorithm>

#include "service/password.h"
#include "util/hash.h"

namespace cairn::service {
namespace {

using core::Grant;
using core::Permission;
using core::PrincipalKind;
using core::ResourceKind;

Status CheckName(std::string_view what, const std::string& name) {
  if (name.empty()) return InvalidArgument(std::string(what) + " cannot be empty.");
  if (!core::ValidAccountName(name)) {
    return InvalidArgument("Invalid " + std::string(what) + " '" + name.substr(0, 100) +
                           "': use 1 to 64 letters, digits and '._-@', starting with a letter "
                           "or digit.");
  }
  return Status::Ok();
}

// How MLflow names a permission in its messages: "Experiment permission (experiment_id=3,
// username=bob)" / "... with experiment_id=3 and username=bob".
std::string PermissionSubject(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kExperiment:
      return "Experiment permission";
    case ResourceKind::kRegisteredModel:
      return "Registered model permission";
    case ResourceKind::kDataset:
      return "Dataset permission";
  }
  return "Permission";
}

std::string KeyName(ResourceKind kind) {
  return kind == ResourceKind::kExperiment ? "experiment_id" : "name";
}

std::string HolderName(PrincipalKind kind) {
  return kind == PrincipalKind::kUser ? "username" : "team";
}

Status PermissionExists(const Grant& g) {
  return AlreadyExists(PermissionSubject(g.resource_kind) + " (" + KeyName(g.resource_kind) +
                       "=" + g.resource_id + ", " + HolderName(g.principal_kind) + "=" +
                       g.principal + ") already exists.");
}

Status NoPermission(ResourceKind kind, const std::string& id, PrincipalKind principal_kind,
                    const std::string& principal) {
  return NotFound(PermissionSubject(kind) + " with " + KeyName(kind) + "=" + id + " and " +
                  HolderName(principal_kind) + "=" + principal + " not found");
}

// Grants on experiments name them canonically ("03" is experiment 3).
Grant Canonical(Grant g) {
  if (g.resource_kind == ResourceKind::kExperiment) {
    g.resource_id = core::CanonicalExperimentId(g.resource_id);
  }
  return g;
}

std::string CanonicalId(ResourceKind kind, const std::string& id) {
  return kind == ResourceKind::kExperiment ? core::CanonicalExperimentId(id) : id;
}

}  // namespace

Status IdentityService::Changed(Status s) {
  if (s.ok()) access_->Invalidate();
  return s;
}

Result<core::User> IdentityService::CreateUser(const std::string& username,
                                               const std::string& password, bool is_admin,
                                               bool is_service) {
  if (username.empty()) return InvalidArgument("Username cannot be empty.");
  CAIRN_RETURN_IF_ERROR(CheckName("username", username));
  core::User u;
  u.username = username;
  u.is_admin = is_admin;
  u.is_service = is_service;
  u.created_time = clock_->NowMillis();
  if (is_service) {
    if (!password.empty()) {
      return InvalidArgument("A service account has no password: it signs in with tokens.");
    }
  } else {
    if (password.empty()) return InvalidArgument("Password cannot be empty.");
    CAIRN_ASSIGN_OR_RETURN(u.password_hash, HashPassword(password));
  }
  Result<int64_t> id = store_->identity().CreateUser(u);
  if (!id.ok()) {
    if (id.status().code() == StatusCode::kAlreadyExists) {
      return AlreadyExists("User (username=" + username + ") already exists.");
    }
    return id.status();
  }
  u.id = *id;
  access_->Invalidate();
  return u;
}

Result<UserDetails> IdentityService::GetUser(const std::string& username) {
  UserDetails d;
  CAIRN_ASSIGN_OR_RETURN(d.user, store_->identity().GetUser(username));
  CAIRN_ASSIGN_OR_RETURN(d.grants, store_->identity().GrantsOf(PrincipalKind::kUser, username));
  return d;
}

Result<std::vector<core::User>> IdentityService::ListUsers() {
  return store_->identity().ListUsers();
}

Status IdentityService::UpdatePassword(const std::string& username, const std::string& password) {
  CAIRN_ASSIGN_OR_RETURN(core::User user, store_->identity().GetUser(username));
  if (user.is_service) {
    return InvalidArgument("User " + username + " is a service account: it signs in with tokens.");
  }
  CAIRN_ASSIGN_OR_RETURN(std::string hash, HashPassword(password));
  CAIRN_RETURN_IF_ERROR(Changed(store_->identity().SetPassword(username, hash)));
  access_->EndSessionsOf(username);
  return Status::Ok();
}

Status IdentityService::UpdateAdmin(const std::string& username, bool is_admin) {
  return Changed(store_->identity().SetAdmin(username, is_admin));
}

Status IdentityService::DeleteUser(const std::string& username) {
  CAIRN_RETURN_IF_ERROR(Changed(store_->identity().DeleteUser(username)));
  access_->EndSessionsOf(username);
  return Status::Ok();
}

Status IdentityService::CreateTeam(const std::string& name) {
  CAIRN_RETURN_IF_ERROR(CheckName("team name", name));
  return Changed(store_->identity().CreateTeam(core::Team{name, {}, clock_->NowMillis()}));
}

Status IdentityService::DeleteTeam(const std::string& name) {
  return Changed(store_->identity().DeleteTeam(name));
}

Status IdentityService::AddTeamMember(const std::string& team, const std::string& username) {
  return Changed(store_->identity().AddTeamMember(team, username));
}

Status IdentityService::RemoveTeamMember(const std::string& team, const std::string& username) {
  return Changed(store_->identity().RemoveTeamMember(team, username));
}

Result<std::vector<core::Team>> IdentityService::ListTeams() {
  return store_->identity().ListTeams();
}

Result<Permission> IdentityService::ParsePermissionName(const std::string& name) {
  Permission p;
  if (!core::ParsePermission(name, &p)) {
    return InvalidArgument("Invalid permission '" + name +
                           "'. Valid permissions are: ('READ', 'EDIT', 'MANAGE', "
                           "'NO_PERMISSIONS')");
  }
  return p;
}

Status IdentityService::PrincipalExists(PrincipalKind kind, const std::string& name) {
  if (kind == PrincipalKind::kUser) return store_->identity().GetUser(name).status();
  return store_->identity().GetTeam(name).status();
}

Result<std::optional<Grant>> IdentityService::FindGrant(ResourceKind kind,
                                                        const std::string& resource_id,
                                                        PrincipalKind principal_kind,
                                                        const std::string& principal) {
  CAIRN_RETURN_IF_ERROR(PrincipalExists(principal_kind, principal));
  CAIRN_ASSIGN_OR_RETURN(std::vector<Grant> on,
                         store_->identity().GrantsOn(kind, CanonicalId(kind, resource_id)));
  for (const Grant& g : on) {
    if (g.principal_kind == principal_kind && g.principal == principal) return {g};
  }
  return std::optional<Grant>();
}

Result<Grant> IdentityService::GetPermission(ResourceKind kind, const std::string& resource_id,
                                             PrincipalKind principal_kind,
                                             const std::string& principal) {
  CAIRN_ASSIGN_OR_RETURN(std::optional<Grant> g,
                         FindGrant(kind, resource_id, principal_kind, principal));
  if (!g) return NoPermission(kind, resource_id, principal_kind, principal);
  return *g;
}

Status IdentityService::CreatePermission(const Grant& grant) {
  CAIRN_ASSIGN_OR_RETURN(std::optional<Grant> existing,
                         FindGrant(grant.resource_kind, grant.resource_id, grant.principal_kind,
                                   grant.principal));
  if (existing) return PermissionExists(grant);
  return Changed(store_->identity().PutGrant(Canonical(grant)));
}

Status IdentityService::UpdatePermission(const Grant& grant) {
  CAIRN_RETURN_IF_ERROR(
      GetPermission(grant.resource_kind, grant.resource_id, grant.principal_kind, grant.principal)
          .status());
  return Changed(store_->identity().PutGrant(Canonical(grant)));
}

Status IdentityService::DeletePermission(ResourceKind kind, const std::string& resource_id,
                                         PrincipalKind principal_kind,
                                         const std::string& principal) {
  CAIRN_RETURN_IF_ERROR(GetPermission(kind, resource_id, principal_kind, principal).status());
  return Changed(store_->identity().DeleteGrant(kind, CanonicalId(kind, resource_id),
                                                principal_kind, principal));
}

Status IdentityService::PutPermission(const Grant& grant) {
  return Changed(store_->identity().PutGrant(Canonical(grant)));
}

Result<std::vector<Grant>> IdentityService::PermissionsOn(ResourceKind kind,
                                                          const std::string& resource_id) {
  return store_->identity().GrantsOn(kind, CanonicalId(kind, resource_id));
}

Status IdentityService::GrantCreator(const core::Principal& creator, ResourceKind kind,
                                     const std::string& resource_id) {
  if (creator.username.empty()) return Status::Ok();
  return PutPermission(
      Grant{kind, resource_id, PrincipalKind::kUser, creator.username, Permission::kManage});
}

Status IdentityService::MovePermissions(ResourceKind kind, const std::string& from,
                                        const std::string& to) {
  if (from == to) return Status::Ok();
  CAIRN_ASSIGN_OR_RETURN(std::vector<Grant> grants, PermissionsOn(kind, from));
  for (Grant g : grants) {
    g.resource_id = to;
    CAIRN_RETURN_IF_ERROR(store_->identity().PutGrant(Canonical(g)));
  }
  return DeletePermissionsOn(kind, from);
}

Status IdentityService::DeletePermissionsOn(ResourceKind kind, const std::string& resource_id) {
  return Changed(store_->identity().DeleteGrantsOn(kind, CanonicalId(kind, resource_id)));
}

Result<CreatedToken> IdentityService::CreateToken(const core::Principal& caller,
                                                  const TokenRequest& request) {
  const std::string owner = request.owner.empty() ? caller.username : request.owner;
  if (owner.empty()) {
    return InvalidArgument("Name the account the token is for: authentication is off, so the "
                           "request acts as nobody in particular.");
  }
  if (owner != caller.username && !caller.ActsAsAdmin()) {
    return PermissionDenied("Only an admin may create tokens for another account.");
  }
  CAIRN_RETURN_IF_ERROR(CheckName("token name", request.name));
  CAIRN_ASSIGN_OR_RETURN(core::User user, store_->identity().GetUser(owner));
  CreatedToken out;
  core::Token& t = out.token;
  t.scopes = request.scopes.value_or(core::TokenScopes{true, true, false});
  if ((t.scopes.write && !caller.scopes.write) || (t.scopes.admin && !caller.scopes.admin)) {
    return PermissionDenied("A token cannot make a token with scopes it does not have itself.");
  }
  if (t.scopes.admin && !user.is_admin) {
    return InvalidArgument("Only an admin's token may have the admin scope; " + owner +
                           " is not an admin.");
  }
  const int64_t days =
      request.expires_in_days.value_or(user.is_service ? kServiceTokenDays : 0);
  if (days < 0 || days > kMaxTokenDays) {
    return InvalidArgument("Invalid value " + std::to_string(days) +
                           " for 'expires_in_days': expected 0 (never) to " +
                           std::to_string(kMaxTokenDays) + " days.");
  }
  out.value = NewTokenValue();
  t.id = RandomHex(6);
  t.name = request.name;
  t.owner = owner;
  t.secret_hash = TokenSecretHash(out.value);
  t.created_time = clock_->NowMillis();
  t.expiry_time = days == 0 ? 0 : t.created_time + days * 24 * 3600 * 1000;
  // A token made by a token lasts no longer than its maker.
  if (caller.token_expiry != 0 && (t.expiry_time == 0 || t.expiry_time > caller.token_expiry)) {
    t.expiry_time = caller.token_expiry;
  }
  CAIRN_RETURN_IF_ERROR(store_->identity().CreateToken(t));
  return out;
}

Result<std::vector<core::Token>> IdentityService::ListTokens(const core::Principal& caller,
                                                             const std::string& owner, bool all) {
  if ((all || (!owner.empty() && owner != caller.username)) && !caller.ActsAsAdmin()) {
    return PermissionDenied("Only an admin may list the tokens of other accounts.");
  }
  if (all) return store_->identity().ListTokens("");
  const std::string whose = owner.empty() ? caller.username : owner;
  if (whose.empty()) return store_->identity().ListTokens("");
  return store_->identity().ListTokens(whose);
}

Result<core::Token> IdentityService::FindToken(const core::Principal& caller,
                                               const std::string& id_or_name) {
  Result<core::Token> by_id = store_->identity().GetToken(id_or_name);
  if (by_id.ok()) {
    if (by_id->owner != caller.username && !caller.ActsAsAdmin()) {
      return NotFound("Token " + id_or_name + " not found");
    }
    return by_id;
  }
  if (by_id.status().code() != StatusCode::kNotFound) return by_id.status();
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::Token> own,
                         store_->identity().ListTokens(caller.username));
  for (const core::Token& t : own) {
    if (t.name == id_or_name) return t;
  }
  return NotFound("Token " + id_or_name + " not found");
}

Result<core::Token> IdentityService::RevokeToken(const core::Principal& caller,
                                                 const std::string& id_or_name) {
  CAIRN_ASSIGN_OR_RETURN(core::Token t, FindToken(caller, id_or_name));
  const int64_t now = clock_->NowMillis();
  CAIRN_RETURN_IF_ERROR(Changed(store_->identity().RevokeToken(t.id, now)));
  if (t.revoked_time == 0) t.revoked_time = now;
  return t;
}

Result<std::vector<core::AuditEntry>> IdentityService::ReadAudit(const core::AuditQuery& query) {
  core::AuditQuery q = query;
  if (q.max_results <= 0 || q.max_results > 10000) {
    return InvalidArgument("Invalid value " + std::to_string(q.max_results) +
                           " for 'max_results': expected 1 to 10000.");
  }
  return store_->identity().ReadAudit(q);
}

}  // namespace cairn::service
