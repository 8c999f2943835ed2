// IdentityStore: where accounts, teams, tokens, permissions and the audit log live.
//
// Every MetadataStore backend holds one, in the same database as the runs it guards
// (MetadataStore::identity()), and passes one conformance suite
// (identity_store_conformance_test.cc). The contracts of MetadataStore hold here too: every
// method may be called from many threads at once, and one that returns OK has committed.
// Errors: kNotFound when a named user, team, token or grant does not exist, kAlreadyExists on
// a duplicate name. Validation (name syntax, who may do what) belongs to the access service;
// the store keeps the values consistent: deleting a user or a team takes its memberships,
// tokens and grants with it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/identity.h"
#include "util/status.h"

namespace cairn::store {

class IdentityStore {
 public:
  virtual ~IdentityStore() = default;

  // --- Users -------------------------------------------------------------------------------
  // Assigns and returns the user's id.
  virtual Result<int64_t> CreateUser(const core::User& user) = 0;
  virtual Result<core::User> GetUser(std::string_view username) = 0;
  // Every user, by username.
  virtual Result<std::vector<core::User>> ListUsers() = 0;
  virtual Status SetPassword(std::string_view username, std::string_view password_hash) = 0;
  virtual Status SetAdmin(std::string_view username, bool is_admin) = 0;
  // Also removes the user's tokens, team memberships and grants.
  virtual Status DeleteUser(std::string_view username) = 0;

  // --- Teams -------------------------------------------------------------------------------
  // team.members is ignored: members are added one by one.
  virtual Status CreateTeam(const core::Team& team) = 0;
  virtual Result<core::Team> GetTeam(std::string_view name) = 0;
  // Every team with its members, by name.
  virtual Result<std::vector<core::Team>> ListTeams() = 0;
  // Also removes the team's grants.
  virtual Status DeleteTeam(std::string_view name) = 0;
  // kNotFound when the team or the user does not exist; adding a member twice is not an error.
  virtual Status AddTeamMember(std::string_view team, std::string_view username) = 0;
  // kNotFound when the user is not a member.
  virtual Status RemoveTeamMember(std::string_view team, std::string_view username) = 0;
  // The names of the teams the user belongs to, sorted.
  virtual Result<std::vector<std::string>> TeamsOf(std::string_view username) = 0;

  // --- Tokens ------------------------------------------------------------------------------
  // kNotFound when the owner does not exist; kAlreadyExists when the id, the secret hash, or
  // the owner's token name is taken (revoked tokens keep their names).
  virtual Status CreateToken(const core::Token& token) = 0;
  virtual Result<core::Token> GetToken(std::string_view id) = 0;
  virtual Result<core::Token> GetTokenBySecretHash(std::string_view secret_hash) = 0;
  // The owner's tokens ("" for everyone's), newest first, revoked ones included.
  virtual Result<std::vector<core::Token>> ListTokens(std::string_view owner) = 0;
  // Sets the revocation time; revoking a revoked token keeps the first time.
  virtual Status RevokeToken(std::string_view id, int64_t now) = 0;
  // Records a use of the token.
  virtual Status TouchToken(std::string_view id, int64_t now) = 0;

  // --- Grants ------------------------------------------------------------------------------
  // Creates the principal's grant on the object, or replaces its level. kNotFound when the
  // user or team does not exist.
  virtual Status PutGrant(const core::Grant& grant) = 0;
  virtual Status DeleteGrant(core::ResourceKind kind, std::string_view resource_id,
                             core::PrincipalKind principal_kind, std::string_view principal) = 0;
  // Every grant on the object, users first, then by name.
  virtual Result<std::vector<core::Grant>> GrantsOn(core::ResourceKind kind,
                                                    std::string_view resource_id) = 0;
  // Every grant the principal holds, by object kind and id.
  virtual Result<std::vector<core::Grant>> GrantsOf(core::PrincipalKind principal_kind,
                                                    std::string_view principal) = 0;
  // Removes every grant on the object (it was deleted for good, or renamed away).
  virtual Status DeleteGrantsOn(core::ResourceKind kind, std::string_view resource_id) = 0;

  // --- Audit log ---------------------------------------------------------------------------
  // Appends an entry; entry.id is assigned. Entries are never changed or removed.
  virtual Status AppendAudit(const core::AuditEntry& entry) = 0;
  // AppendAudit without waiting: `done` gets the outcome once committed, on any thread, and
  // must neither block nor call into the store. The default appends and calls `done` at once.
  // It may be called from the `done` of the store's own asynchronous writes (LogBatchAsync), so
  // it must not wait for the writer itself.
  virtual void AppendAuditAsync(core::AuditEntry entry, std::function<void(Status)> done) {
    done(AppendAudit(entry));
  }
  // Entries matching the query, newest first.
  virtual Result<std::vector<core::AuditEntry>> ReadAudit(const core::AuditQuery& query) = 0;
};

}  // namespace cairn::store
