// Who may do what: accounts, teams, tokens, permissions on experiments and registered models,
// and the audit log, as plain values, with the one rule that turns them into an answer.
//
// Permissions are MLflow's: READ reads, EDIT also changes (logs to runs, renames), MANAGE also
// deletes and grants. A permission is held on one object by a user or a team. Where a user
// holds none directly, the best of their teams' applies, and where no team holds one either,
// the server's default. Admins may do everything. A token narrows what its owner may do to its
// scopes: without `write` it only reads, and only an `admin`-scoped token of an admin acts as
// an admin. No I/O here: the stores keep these values, the access service applies the rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cairn::core {

// Ordered: each level allows everything the one before it allows.
enum class Permission { kNoPermissions, kRead, kEdit, kManage };
std::string_view PermissionName(Permission p);  // "NO_PERMISSIONS", "READ", "EDIT", "MANAGE"
bool ParsePermission(std::string_view text, Permission* out);

// What a request does to the object it names.
enum class Access { kRead, kUpdate, kDelete, kManage };
std::string_view AccessName(Access a);  // "read", "update", "delete", "manage"
// MLflow's can_read / can_update / can_delete / can_manage of each level.
bool Allows(Permission p, Access a);

struct TokenScopes {
  bool read = false;
  bool write = false;
  bool admin = false;
  bool operator==(const TokenScopes&) const = default;
};
// Everything: what a password or a browser session grants.
inline constexpr TokenScopes kAllScopes{true, true, true};
// "read", "read,write", "read,write,admin": write implies read, admin implies both.
std::string ScopesText(TokenScopes s);
// A comma-separated list of read, write and admin, widened as ScopesText says. False on an
// unknown or empty list.
bool ParseScopes(std::string_view text, TokenScopes* out);

struct User {
  int64_t id = 0;
  std::string username;
  // Argon2id in libsodium's encoded form; empty for a service account, which signs in with
  // tokens only.
  std::string password_hash;
  bool is_admin = false;
  bool is_service = false;
  int64_t created_time = 0;
};

struct Team {
  std::string name;
  std::vector<std::string> members;  // usernames, sorted
  int64_t created_time = 0;
};

struct Token {
  std::string id;  // public: shown in listings, named to revoke
  std::string name;
  std::string owner;        // username
  std::string secret_hash;  // SHA-256 hex of the token's value; the value itself is never kept
  TokenScopes scopes;
  int64_t created_time = 0;
  int64_t expiry_time = 0;     // ms; 0: never expires
  int64_t last_used_time = 0;  // ms; 0: never used
  int64_t revoked_time = 0;    // ms; 0: not revoked
  bool Usable(int64_t now) const {
    return revoked_time == 0 && (expiry_time == 0 || now < expiry_time);
  }
};

enum class ResourceKind { kExperiment, kRegisteredModel, kDataset };
// "experiment", "registered_model", "dataset"
std::string_view ResourceKindName(ResourceKind k);
bool ParseResourceKind(std::string_view text, ResourceKind* out);

enum class PrincipalKind { kUser, kTeam };
std::string_view PrincipalKindName(PrincipalKind k);  // "user", "team"
bool ParsePrincipalKind(std::string_view text, PrincipalKind* out);

// A permission held on one object (an experiment id, a registered model or dataset name).
struct Grant {
  ResourceKind resource_kind = ResourceKind::kExperiment;
  std::string resource_id;
  PrincipalKind principal_kind = PrincipalKind::kUser;
  std::string principal;  // username or team name
  Permission permission = Permission::kRead;
  bool operator==(const Grant&) const = default;
};

// The one asking, once authenticated.
struct Principal {
  std::string username;
  bool is_admin = false;            // the account's flag
  std::vector<std::string> teams;   // the teams it belongs to
  TokenScopes scopes = kAllScopes;  // the token's, or all for a password or session
  std::string token_name;           // set when a token authenticated the request
  std::string token_id;
  int64_t token_expiry = 0;  // ms; 0: the token never expires (or no token)
  bool is_service = false;   // a service account (agents, CI)
  // Acts as an admin: an admin account, through a password, a session or an admin token.
  bool ActsAsAdmin() const { return is_admin && scopes.admin; }
};

// What `who` may do to an object that holds `grants` (all of them, for any principal):
// the rule of this header's opening paragraph.
Permission EffectivePermission(const Principal& who, const std::vector<Grant>& grants,
                               Permission default_permission);
// Whether `who` may `access` the object.
bool MayAccess(const Principal& who, const std::vector<Grant>& grants,
               Permission default_permission, Access access);

// One line of the audit log.
struct AuditEntry {
  int64_t id = 0;       // assigned by the store, increasing
  int64_t time = 0;     // ms
  std::string actor;    // username, "user/token-name" for a token, "" when unauthenticated
  std::string source;   // the client's address
  std::string action;   // "POST experiments/delete", "login", ...
  std::string object;   // "experiment 3", "run 1f2e…", "user alice", ...
  std::string outcome;  // "ok", or the error code and message of a refusal or failure
};

struct AuditQuery {
  std::string actor;  // exact, "" for any
  // Exact ("experiment 3"), or a prefix when it ends in ' ' or '/' ("run ", "artifact 3/");
  // "" for any.
  std::string object;
  int64_t since = 0;      // ms, inclusive
  int64_t before_id = 0;  // only entries older than this id (paging); 0 for the newest
  int64_t max_results = 1000;
};

// Whether an audit entry's object matches AuditQuery::object.
bool AuditObjectMatches(std::string_view object, std::string_view wanted);

// An experiment id as grants name it: "03" and "3" are the same experiment to the stores, so
// a decimal id loses its leading zeros; anything else is returned as it is.
std::string CanonicalExperimentId(std::string_view id);

// Whether a username or team name is acceptable: 1 to 64 characters of letters, digits and
// "._-@", starting with a letter or digit.
bool ValidAccountName(std::string_view name);

}  // namespace cairn::core
