// AccessService: who is asking (authentication) and whether they may (authorization), answered
// fast enough to sit in front of every logging call.
//
// Credentials are a password (HTTP Basic), a token (Bearer) or a browser session. A password is
// checked against its Argon2id hash once; afterwards the request's credentials are recognised
// from memory. Every cached answer is checked against the store again once it is `recheck` old
// (half a second by default), so a revoked token, a changed password or a removed grant stops
// working within that time even when it was changed by another process; changes made through
// this process take effect at once (Invalidate). The *Cached variants answer from memory alone
// and return nullopt where only the store can say: the edge calls them on its I/O threads and
// moves the request to a handler thread when they cannot answer.
//
// Failed sign-ins are audited and counted per client address and account; an address that fails
// too often is refused (kResourceExhausted) until its window passes. Runs are authorised through
// their experiment, looked up once per run: runs never move between experiments.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/identity.h"
#include "store/metadata_store.h"
#include "util/clock.h"
#include "util/status.h"

namespace cairn::service {

struct AccessOptions {
  bool enabled = false;  // --auth on: every request needs credentials
  core::Permission default_permission = core::Permission::kRead;
  bool audit_reads = false;
  // Cached credentials and grants are read from the store again at least this often: a token
  // revoked by another process stops working within it.
  int64_t recheck_ms = 500;
  int max_failed_logins = 10;  // per client address within the window
  int64_t failed_login_window_ms = 60'000;
  int64_t session_idle_ms = int64_t{12} * 3600 * 1000;
  int64_t session_max_ms = int64_t{7} * 24 * 3600 * 1000;
};

struct Credentials {
  enum class Kind { kNone, kBasic, kBearer, kSession };
  Kind kind = Kind::kNone;
  std::string username;  // kBasic
  std::string secret;    // the password, the token's value or the session id
};

// A signed-in browser.
struct Session {
  std::string id;          // the cookie's value
  std::string csrf_token;  // writes carry it in a header
  std::string username;
  int64_t created = 0;
  int64_t last_seen = 0;
  // The account's password hash at sign-in: a password changed since, by any process, ends
  // the session.
  std::string password_hash;
};

// Which experiments (or models) a principal may read, for filtering searches and listings.
class Visibility {
 public:
  Visibility() = default;
  Visibility(core::Principal who, std::vector<core::Grant> grants, core::Permission fallback)
      : who_(std::move(who)), grants_(std::move(grants)), fallback_(fallback) {}
  bool MayRead(core::ResourceKind kind, std::string_view id) const;
  bool MayReadExperiment(std::string_view id) const {
    return MayRead(core::ResourceKind::kExperiment, id);
  }

 private:
  core::Principal who_ = [] {
    core::Principal admin;
    admin.is_admin = true;
    return admin;
  }();
  std::vector<core::Grant> grants_;  // the principal's and its teams'
  core::Permission fallback_ = core::Permission::kManage;
};

// The value a token is shown as once: "cairn_" and 40 hex digits.
std::string NewTokenValue();
// What the tokens table keeps of a value.
std::string TokenSecretHash(std::string_view value);

class AccessService {
 public:
  // Neither pointer is owned; both must outlive the service.
  AccessService(store::MetadataStore* store, Clock* clock, AccessOptions options);

  const AccessOptions& options() const { return options_; }
  bool enabled() const { return options_.enabled; }

  // Who every request is with authentication off: an administrator without a name.
  static core::Principal Anonymous();

  // Who the credentials identify. kUnauthenticated when there are none or they identify
  // nobody (audited, and counted against `source`); kResourceExhausted when `source` failed too
  // often lately.
  Result<core::Principal> Authenticate(const Credentials& credentials, std::string_view source);
  std::optional<core::Principal> AuthenticateCached(const Credentials& credentials);

  // The principal's permission on an object.
  Result<core::Permission> PermissionOn(const core::Principal& who, core::ResourceKind kind,
                                        std::string_view id);
  std::optional<core::Permission> PermissionOnCached(const core::Principal& who,
                                                     core::ResourceKind kind, std::string_view id);
  // What the principal may read.
  Result<Visibility> VisibilityOf(const core::Principal& who);

  // The experiment of a run; kNotFound as the tracking store says it.
  Result<std::string> ExperimentOfRun(std::string_view run_id);
  std::optional<std::string> ExperimentOfRunCached(std::string_view run_id);

  // The registered model whose version's files lie at artifact path `path` (under
  // kRegistryArtifactRoot, "models/<id>/..."); kNotFound when none does.
  Result<std::string> ModelOfArtifactPath(std::string_view path);
  // The run of a task's current attempt (whose experiment decides who may see the task).
  Result<std::string> RunOfTask(std::string_view task_id);

  // The id of the experiment with this name (kNotFound as the tracking store says it).
  Result<std::string> ExperimentIdOfName(std::string_view name);

  // Forgets every cached account, grant and team: called after a change made through this
  // process, so that it applies to the next request.
  void Invalidate();

  // --- Sessions of the web UI ----------------------------------------------------------------
  // Checks the password as Authenticate does and opens a session.
  Result<Session> Login(const std::string& username, const std::string& password,
                        std::string_view source);
  // The session, if it is open and neither idle nor old past its limits; marks it seen.
  std::optional<Session> FindSession(std::string_view id);
  void Logout(std::string_view id);
  // Closes every session of the user (a changed password, a deleted account).
  void EndSessionsOf(std::string_view username);

  // --- Audit ---------------------------------------------------------------------------------
  // Appends an audit line: committed before it returns with `wait` (a delete is answered only
  // once the log says who did it), else without waiting (logging calls, on I/O threads). A
  // failure to append is logged.
  void Audit(core::AuditEntry entry, bool wait = true);
  // Whether a line for `key` is due: the first time, then once every `period_ms`. Logging
  // calls into a run (every ten minutes per actor and run) and refused calls (every minute per
  // actor, call and object) are audited this way, so that the log says who wrote or tried
  // without a line per request.
  bool AuditDue(std::string_view key, int64_t period_ms);
  static constexpr int64_t kLoggingAuditPeriodMs = 10 * 60 * 1000;
  static constexpr int64_t kRefusalAuditPeriodMs = 60 * 1000;

  // Milliseconds until `source` may try to sign in to `account` again ("" for a token); 0 when
  // it may now. An address is held back after max_failed_logins failures on one account, or ten
  // times as many on any, within the window.
  int64_t ThrottledFor(std::string_view source, std::string_view account);

 private:
  struct UserEntry {
    core::User user;
    std::vector<std::string> teams;
    std::vector<core::Grant> grants;  // the user's and its teams'
    int64_t checked = 0;
    uint64_t generation = 0;
  };
  struct TokenEntry {
    core::Token token;
    int64_t checked = 0;
  };
  struct FailureWindow {
    int64_t start = 0;
    int failures = 0;
  };

  bool Fresh(int64_t checked, uint64_t generation, int64_t now) const;
  // The cached entry of a user, re-read from the store when due. kUnauthenticated when the
  // account is gone.
  Result<UserEntry> LoadUser(const std::string& username);
  // Under mu_ (shared): the entry while it is fresh, else null.
  const UserEntry* CachedUser(const std::string& username, int64_t now) const;
  // `token`: the token that authenticated the request, if one did.
  core::Principal PrincipalOf(const UserEntry& entry, core::TokenScopes scopes,
                              const core::Token* token) const;
  Result<core::Principal> CheckPassword(const std::string& username, const std::string& password,
                                        std::string_view source);
  Result<core::Principal> CheckToken(const std::string& value, std::string_view source);
  Status Refuse(std::string_view source, std::string_view account, std::string_view who,
                std::string_view why);
  static Status Throttled(std::string_view source, int64_t wait_ms);
  std::string PasswordKey(std::string_view username, std::string_view password) const;
  bool Expired(const Session& s, int64_t now) const;

  store::MetadataStore* store_;
  Clock* clock_;
  AccessOptions options_;

  // Keys of proven passwords are hashed with this process's secret, so that the cache in
  // memory is no shortcut to cracking them.
  const std::string password_key_secret_;
  std::shared_mutex mu_;
  uint64_t generation_ = 1;
  std::unordered_map<std::string, UserEntry> users_;
  // Key of a password proven right -> the hash it was proven against.
  std::unordered_map<std::string, std::pair<std::string, std::string>> passwords_;
  std::unordered_map<std::string, TokenEntry> tokens_;  // by secret hash
  std::unordered_map<std::string, std::string> run_experiments_;

  std::mutex sessions_mu_;
  std::unordered_map<std::string, Session> sessions_;

  std::mutex throttle_mu_;
  std::unordered_map<std::string, FailureWindow> failures_;
  std::unordered_map<std::string, int64_t> audited_;  // AuditDue: key -> last line
};

}  // namespace cairn::service
