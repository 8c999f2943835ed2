// IdentityService: the rules of managing accounts, teams, tokens and permissions, behind MLflow's
// auth API (users/*, experiments/permissions/*) and cairn's (tokens, teams, audit).
//
// Who may call what is decided at the edge from the route table; this service checks what a
// request says: names, passwords, permission names, that a grant names an account that exists,
// and that a token's scopes do not exceed its owner's. Every change is made through the
// IdentityStore and then made visible to the AccessService at once. Messages follow MLflow's
// where MLflow has the call.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/identity.h"
#include "service/access_service.h"
#include "store/metadata_store.h"
#include "util/clock.h"

namespace cairn::service {

// A user with the permissions it holds directly, as MLflow's users/get answers.
struct UserDetails {
  core::User user;
  std::vector<core::Grant> grants;
};

struct TokenRequest {
  std::string owner;  // empty: the caller
  std::string name;
  std::optional<core::TokenScopes> scopes;  // default: read,write
  // Days until it expires; 0 for never. Default: 90 for a service account's token, never
  // for a personal one.
  std::optional<int64_t> expires_in_days;
};

struct CreatedToken {
  core::Token token;
  std::string value;  // shown once, never stored
};

inline constexpr int64_t kServiceTokenDays = 90;
inline constexpr int64_t kMaxTokenDays = 3650;

class IdentityService {
 public:
  // None of the pointers is owned; all must outlive the service.
  IdentityService(store::MetadataStore* store, AccessService* access, Clock* clock)
      : store_(store), access_(access), clock_(clock) {}

  // --- Users ---------------------------------------------------------------------------------
  // A service account has no password and signs in with tokens only.
  Result<core::User> CreateUser(const std::string& username, const std::string& password,
                                bool is_admin, bool is_service);
  Result<UserDetails> GetUser(const std::string& username);
  Result<std::vector<core::User>> ListUsers();
  // Also ends the user's browser sessions.
  Status UpdatePassword(const std::string& username, const std::string& password);
  Status UpdateAdmin(const std::string& username, bool is_admin);
  Status DeleteUser(const std::string& username);

  // --- Teams ---------------------------------------------------------------------------------
  Status CreateTeam(const std::string& name);
  Status DeleteTeam(const std::string& name);
  Status AddTeamMember(const std::string& team, const std::string& username);
  Status RemoveTeamMember(const std::string& team, const std::string& username);
  Result<std::vector<core::Team>> ListTeams();

  // --- Permissions on experiments and registered models --------------------------------------
  // MLflow's create: kAlreadyExists when the user holds one already.
  Status CreatePermission(const core::Grant& grant);
  // MLflow's update and delete: kNotFound when the user holds none.
  Status UpdatePermission(const core::Grant& grant);
  Status DeletePermission(core::ResourceKind kind, const std::string& resource_id,
                          core::PrincipalKind principal_kind, const std::string& principal);
  Result<core::Grant> GetPermission(core::ResourceKind kind, const std::string& resource_id,
                                    core::PrincipalKind principal_kind,
                                    const std::string& principal);
  // Creates or replaces (cairn's API and the web UI's permissions panel).
  Status PutPermission(const core::Grant& grant);
  Result<std::vector<core::Grant>> PermissionsOn(core::ResourceKind kind,
                                                 const std::string& resource_id);
  // What the creator of an object holds on it: MANAGE. Not for the anonymous principal.
  Status GrantCreator(const core::Principal& creator, core::ResourceKind kind,
                      const std::string& resource_id);
  // Every permission on an object follows it to its new id (a renamed model).
  Status MovePermissions(core::ResourceKind kind, const std::string& from, const std::string& to);
  // Removes every permission on an object that is gone, so that a new object of the same name
  // starts with none.
  Status DeletePermissionsOn(core::ResourceKind kind, const std::string& resource_id);
  // kInvalidArgument with MLflow's message for an unknown level.
  static Result<core::Permission> ParsePermissionName(const std::string& name);

  // --- Tokens --------------------------------------------------------------------------------
  // `caller` creates a token for itself, or, as an admin, for any account.
  Result<CreatedToken> CreateToken(const core::Principal& caller, const TokenRequest& request);
  // The caller's tokens; an admin may name another owner, or "" with `all` for everyone's.
  Result<std::vector<core::Token>> ListTokens(const core::Principal& caller,
                                              const std::string& owner, bool all);
  // A token of the caller's, or any token for an admin; named by id, or by name among the
  // caller's own.
  Result<core::Token> RevokeToken(const core::Principal& caller, const std::string& id_or_name);

  // --- Audit ---------------------------------------------------------------------------------
  Result<std::vector<core::AuditEntry>> ReadAudit(const core::AuditQuery& query);

 private:
  Status Changed(Status s);
  Status PrincipalExists(core::PrincipalKind kind, const std::string& name);
  Result<std::optional<core::Grant>> FindGrant(core::ResourceKind kind,
                                               const std::string& resource_id,
                                               core::PrincipalKind principal_kind,
                                               const std::string& principal);
  Result<core::Token> FindToken(const core::Principal& caller, const std::string& id_or_name);

  store::MetadataStore* store_;
  AccessService* access_;
  Clock* clock_;
};

}  // namespace cairn::service
