#include "service/access_service.h"

#include <algorithm>

#include "service/password.h"
#include "util/hash.h"
#include "util/log.h"

namespace cairn::service {
namespace {

using core::Permission;
using core::Principal;
using core::ResourceKind;

// Caches are dropped whole when they grow past this: a bound on what a flood of distinct
// credentials or run ids can make the server hold.
constexpr size_t kMaxCacheEntries = 100'000;
// A token's last use is written at most this often.
constexpr int64_t kTouchPeriodMs = 60'000;

template <typename Map>
void Bound(Map& map) {
  if (map.size() >= kMaxCacheEntries) map.clear();
}

// The grants among `grants` on one object. Experiment ids are compared canonically: the
// stores take "03" for experiment 3, and so must the grants.
std::vector<core::Grant> GrantsOnObject(const std::vector<core::Grant>& grants, ResourceKind kind,
                                        std::string_view id) {
  const std::string key =
      kind == ResourceKind::kExperiment ? core::CanonicalExperimentId(id) : std::string(id);
  std::vector<core::Grant> out;
  for (const core::Grant& g : grants) {
    if (g.resource_kind == kind && g.resource_id == key) out.push_back(g);
  }
  return out;
}

}  // namespace

bool Visibility::MayRead(ResourceKind kind, std::string_view id) const {
  return core::MayAccess(who_, GrantsOnObject(grants_, kind, id), fallback_, core::Access::kRead);
}

std::string NewTokenValue() { return "cairn_" + RandomHex(20); }

std::string TokenSecretHash(std::string_view value) { return Sha256Hex(value); }

AccessService::AccessService(store::MetadataStore* store, Clock* clock, AccessOptions options)
    : store_(store), clock_(clock), options_(options), password_key_secret_(RandomHex(32)) {}

Principal AccessService::Anonymous() {
  return Principal{"", true, {}, core::kAllScopes, "", "", 0};
}

bool AccessService::Fresh(int64_t checked, uint64_t generation, int64_t now) const {
  return generation == generation_ && now - checked < options_.recheck_ms;
}

std::string AccessService::PasswordKey(std::string_view username, std::string_view password) const {
  std::string key = password_key_secret_;
  key.push_back('\0');
  key.append(username);
  key.push_back('\0');
  key.append(password);
  return Sha256Hex(key);
}

Principal AccessService::PrincipalOf(const UserEntry& entry, core::TokenScopes scopes,
                                     const core::Token* token) const {
  return Principal{entry.user.username,
                   entry.user.is_admin,
                   entry.teams,
                   scopes,
                   token != nullptr ? token->name : "",
                   token != nullptr ? token->id : "",
                   token != nullptr ? token->expiry_time : 0,
                   entry.user.is_service};
}

const AccessService::UserEntry* AccessService::CachedUser(const std::string& username,
                                                          int64_t now) const {
  auto it = users_.find(username);
  if (it == users_.end() || !Fresh(it->second.checked, it->second.generation, now)) {
    return nullptr;
  }
  return &it->second;
}

Result<AccessService::UserEntry> AccessService::LoadUser(const std::string& username) {
  const int64_t now = clock_->NowMillis();
  {
    std::shared_lock lock(mu_);
    if (const UserEntry* e = CachedUser(username, now)) return *e;
  }
  uint64_t generation;
  {
    std::shared_lock lock(mu_);
    generation = generation_;
  }
  store::IdentityStore& ids = store_->identity();
  Result<core::User> user = ids.GetUser(username);
  if (!user.ok()) {
    if (user.status().code() != StatusCode::kNotFound) return user.status();
    std::unique_lock lock(mu_);
    users_.erase(username);
    return Unauthenticated("no such user");
  }
  UserEntry entry;
  entry.user = std::move(user).value();
  CAIRN_ASSIGN_OR_RETURN(entry.teams, ids.TeamsOf(username));
  CAIRN_ASSIGN_OR_RETURN(entry.grants, ids.GrantsOf(core::PrincipalKind::kUser, username));
  for (const std::string& team : entry.teams) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<core::Grant> of_team,
                           ids.GrantsOf(core::PrincipalKind::kTeam, team));
    entry.grants.insert(entry.grants.end(), of_team.begin(), of_team.end());
  }
  entry.checked = now;
  entry.generation = generation;
  std::unique_lock lock(mu_);
  Bound(users_);
  users_[username] = entry;
  return entry;
}

std::optional<Principal> AccessService::AuthenticateCached(const Credentials& c) {
  if (!options_.enabled) return Anonymous();
  const int64_t now = clock_->NowMillis();
  if (c.kind == Credentials::Kind::kSession) {
    std::optional<Session> session = FindSession(c.secret);
    if (!session) return std::nullopt;
    std::shared_lock lock(mu_);
    const UserEntry* user = CachedUser(session->username, now);
    if (!user || user->user.password_hash != session->password_hash) return std::nullopt;
    return PrincipalOf(*user, core::kAllScopes, nullptr);
  }
  std::shared_lock lock(mu_);
  if (c.kind == Credentials::Kind::kBasic) {
    auto pw = passwords_.find(PasswordKey(c.username, c.secret));
    if (pw == passwords_.end()) return std::nullopt;
    const UserEntry* user = CachedUser(pw->second.first, now);
    if (!user || user->user.password_hash != pw->second.second) return std::nullopt;
    return PrincipalOf(*user, core::kAllScopes, nullptr);
  }
  if (c.kind == Credentials::Kind::kBearer) {
    auto t = tokens_.find(TokenSecretHash(c.secret));
    if (t == tokens_.end() || now - t->second.checked >= options_.recheck_ms ||
        !t->second.token.Usable(now)) {
      return std::nullopt;
    }
    const UserEntry* user = CachedUser(t->second.token.owner, now);
    if (!user) return std::nullopt;
    return PrincipalOf(*user, t->second.token.scopes, &t->second.token);
  }
  return std::nullopt;
}

Result<Principal> AccessService::Authenticate(const Credentials& c, std::string_view source) {
  if (!options_.enabled) return Anonymous();
  if (std::optional<Principal> cached = AuthenticateCached(c)) return *cached;
  switch (c.kind) {
    case Credentials::Kind::kNone:
      return Unauthenticated("no credentials");
    case Credentials::Kind::kBasic:
      return CheckPassword(c.username, c.secret, source);
    case Credentials::Kind::kBearer:
      return CheckToken(c.secret, source);
    case Credentials::Kind::kSession: {
      std::optional<Session> session = FindSession(c.secret);
      if (!session) return Unauthenticated("the session has ended");
      Result<UserEntry> user = LoadUser(session->username);
      if (user.ok() && user->user.password_hash != session->password_hash) {
        user = Unauthenticated("the password changed since the session began");
      }
      if (!user.ok()) {
        if (user.status().code() == StatusCode::kUnauthenticated) Logout(c.secret);
        return user.status();
      }
      return PrincipalOf(*user, core::kAllScopes, nullptr);
    }
  }
  return Unauthenticated("no credentials");
}

Result<Principal> AccessService::CheckPassword(const std::string& username,
                                               const std::string& password,
                                               std::string_view source) {
  Result<UserEntry> user = LoadUser(username);
  if (!user.ok() && user.status().code() != StatusCode::kUnauthenticated) return user.status();
  // A password proven right before is not held back by others' failures from its address.
  const std::string key = PasswordKey(username, password);
  if (user.ok()) {
    std::shared_lock lock(mu_);
    auto it = passwords_.find(key);
    if (it != passwords_.end() && it->second.second == user->user.password_hash) {
      return PrincipalOf(*user, core::kAllScopes, nullptr);
    }
  }
  if (int64_t wait = ThrottledFor(source, username); wait > 0) return Throttled(source, wait);
  // An unknown account (or a service account, which has no password) costs a hash too, so
  // that the time of an answer does not tell which accounts exist.
  const std::string& hash = user.ok() && !user->user.password_hash.empty()
                                ? user->user.password_hash
                                : DecoyPasswordHash();
  Result<bool> right = VerifyPassword(hash, password);
  if (!right.ok()) return right.status();
  if (!user.ok()) return Refuse(source, username, username, "no such user");
  if (!*right || user->user.password_hash.empty()) {
    return Refuse(source, username, username, "wrong password");
  }
  std::unique_lock lock(mu_);
  Bound(passwords_);
  passwords_[key] = {username, user->user.password_hash};
  return PrincipalOf(*user, core::kAllScopes, nullptr);
}

// Tokens are 160 random bits: guessing them is hopeless, so a token is looked up before any
// throttle, and a valid one is never held back by others' failures from its address.
Result<Principal> AccessService::CheckToken(const std::string& value, std::string_view source) {
  const int64_t now = clock_->NowMillis();
  const std::string hash = TokenSecretHash(value);
  Result<core::Token> token = store_->identity().GetTokenBySecretHash(hash);
  if (!token.ok() && token.status().code() != StatusCode::kNotFound) return token.status();
  if (token.ok() && token->Usable(now)) {
    Result<UserEntry> user = LoadUser(token->owner);
    if (user.ok()) {
      if (now - token->last_used_time >= kTouchPeriodMs) {
        Status touched = store_->identity().TouchToken(token->id, now);
        if (!touched.ok()) LogWarning("recording a token's use failed: " + touched.ToString());
        token->last_used_time = now;
      }
      std::unique_lock lock(mu_);
      Bound(tokens_);
      tokens_[hash] = TokenEntry{*token, now};
      return PrincipalOf(*user, token->scopes, &*token);
    }
    if (user.status().code() != StatusCode::kUnauthenticated) return user.status();
  }
  {
    std::unique_lock lock(mu_);
    tokens_.erase(hash);
  }
  // A flood of bad tokens from one address is refused without an audit line for each; a
  // revoked or expired token counts against its owner's account, an unknown one against none.
  const std::string account = token.ok() ? token->owner : "";
  if (int64_t wait = ThrottledFor(source, account); wait > 0) return Throttled(source, wait);
  if (!token.ok()) return Refuse(source, "", "", "unknown token");
  const std::string who = token->owner + "/" + token->name;
  if (token->Usable(now)) {
    return Refuse(source, token->owner, who, "the token's owner no longer exists");
  }
  return Refuse(source, token->owner, who,
                token->revoked_time != 0 ? "revoked token" : "expired token");
}

// Failures are counted per address and account (guessing one account's password) and per
// address alone, with a higher limit (trying many accounts, or tokens), so that one person's
// typos do not lock out everyone behind the same address.
namespace {
std::string FailureKey(std::string_view source, std::string_view account) {
  std::string key(source);
  key.push_back('\0');
  key.append(account);
  return key;
}
}  // namespace

Status AccessService::Refuse(std::string_view source, std::string_view account,
                             std::string_view who, std::string_view why) {
  const int64_t now = clock_->NowMillis();
  {
    std::lock_guard lock(throttle_mu_);
    // Full: forget the windows that are over; clearing all would let a flood from many
    // addresses reset everyone's count.
    if (failures_.size() >= kMaxCacheEntries) {
      std::erase_if(failures_, [&](const auto& e) {
        return now - e.second.start >= options_.failed_login_window_ms;
      });
    }
    if (failures_.size() >= kMaxCacheEntries) failures_.clear();
    for (const std::string& key : {std::string(source), FailureKey(source, account)}) {
      FailureWindow& w = failures_[key];
      if (now - w.start >= options_.failed_login_window_ms) w = FailureWindow{now, 0};
      ++w.failures;
    }
  }
  Audit(core::AuditEntry{0, now, std::string(who), std::string(source), "sign-in",
                         account.empty() ? "" : "user " + std::string(account),
                         "refused: " + std::string(why)});
  return Unauthenticated(std::string(why));
}

Status AccessService::Throttled(std::string_view source, int64_t wait_ms) {
  return ResourceExhausted("Too many failed sign-ins from " + std::string(source) +
                           "; try again in " + std::to_string((wait_ms + 999) / 1000) + " s.");
}

int64_t AccessService::ThrottledFor(std::string_view source, std::string_view account) {
  const int64_t now = clock_->NowMillis();
  std::lock_guard lock(throttle_mu_);
  int64_t wait = 0;
  const std::pair<std::string, int> limits[] = {
      {FailureKey(source, account), options_.max_failed_logins},
      {std::string(source), options_.max_failed_logins * 10}};
  for (const auto& [key, limit] : limits) {
    auto it = failures_.find(key);
    if (it == failures_.end()) continue;
    const int64_t left = it->second.start + options_.failed_login_window_ms - now;
    if (left <= 0) {
      failures_.erase(it);
    } else if (it->second.failures >= limit) {
      wait = std::max(wait, left);
    }
  }
  return wait;
}

std::optional<Permission> AccessService::PermissionOnCached(const Principal& who, ResourceKind kind,
                                                            std::string_view id) {
  if (who.ActsAsAdmin() || who.username.empty()) {
    return core::EffectivePermission(who, {}, options_.default_permission);
  }
  std::shared_lock lock(mu_);
  const UserEntry* user = CachedUser(who.username, clock_->NowMillis());
  if (!user) return std::nullopt;
  return core::EffectivePermission(who, GrantsOnObject(user->grants, kind, id),
                                   options_.default_permission);
}

Result<Permission> AccessService::PermissionOn(const Principal& who, ResourceKind kind,
                                               std::string_view id) {
  if (std::optional<Permission> p = PermissionOnCached(who, kind, id)) return *p;
  CAIRN_ASSIGN_OR_RETURN(UserEntry user, LoadUser(who.username));
  return core::EffectivePermission(who, GrantsOnObject(user.grants, kind, id),
                                   options_.default_permission);
}

Result<Visibility> AccessService::VisibilityOf(const Principal& who) {
  if (who.ActsAsAdmin() || who.username.empty()) {
    return Visibility(who, {}, options_.default_permission);
  }
  CAIRN_ASSIGN_OR_RETURN(UserEntry user, LoadUser(who.username));
  return Visibility(who, user.grants, options_.default_permission);
}

std::optional<std::string> AccessService::ExperimentOfRunCached(std::string_view run_id) {
  std::shared_lock lock(mu_);
  auto it = run_experiments_.find(std::string(run_id));
  if (it == run_experiments_.end()) return std::nullopt;
  return it->second;
}

Result<std::string> AccessService::ExperimentOfRun(std::string_view run_id) {
  if (std::optional<std::string> e = ExperimentOfRunCached(run_id)) return *e;
  CAIRN_ASSIGN_OR_RETURN(core::RunInfo info, store_->GetRunInfo(run_id));
  std::unique_lock lock(mu_);
  Bound(run_experiments_);
  run_experiments_[std::string(run_id)] = info.experiment_id;
  return info.experiment_id;
}

Result<std::string> AccessService::RunOfTask(std::string_view task_id) {
  CAIRN_ASSIGN_OR_RETURN(core::Task task, store_->queue().GetTask(task_id));
  return task.run_id;
}

Result<std::string> AccessService::ModelOfArtifactPath(std::string_view path) {
  const size_t first = path.find('/');
  if (first == std::string_view::npos) return NotFound("not a model version's file");
  const size_t second = path.find('/', first + 1);
  return store_->registry().ModelOfStorage(path.substr(0, second));
}

Result<std::string> AccessService::ExperimentIdOfName(std::string_view name) {
  CAIRN_ASSIGN_OR_RETURN(core::Experiment e, store_->GetExperimentByName(name));
  return e.experiment_id;
}

void AccessService::Invalidate() {
  std::unique_lock lock(mu_);
  ++generation_;
  tokens_.clear();
}

Result<Session> AccessService::Login(const std::string& username, const std::string& password,
                                     std::string_view source) {
  CAIRN_ASSIGN_OR_RETURN(Principal who, CheckPassword(username, password, source));
  CAIRN_ASSIGN_OR_RETURN(UserEntry user, LoadUser(username));
  const int64_t now = clock_->NowMillis();
  Session s{RandomHex(32), RandomHex(32), who.username, now, now, user.user.password_hash};
  {
    std::lock_guard lock(sessions_mu_);
    if (sessions_.size() >= kMaxCacheEntries) {
      std::erase_if(sessions_, [&](const auto& e) { return Expired(e.second, now); });
    }
    if (sessions_.size() >= kMaxCacheEntries) {
      return ResourceExhausted("Too many browser sessions are open; try again later.");
    }
    sessions_[s.id] = s;
  }
  Audit(core::AuditEntry{0, now, username, std::string(source), "sign-in", "user " + username,
                         "ok: browser session"});
  return s;
}

std::optional<Session> AccessService::FindSession(std::string_view id) {
  const int64_t now = clock_->NowMillis();
  std::lock_guard lock(sessions_mu_);
  auto it = sessions_.find(std::string(id));
  if (it == sessions_.end()) return std::nullopt;
  Session& s = it->second;
  if (Expired(s, now)) {
    sessions_.erase(it);
    return std::nullopt;
  }
  s.last_seen = now;
  return s;
}

bool AccessService::Expired(const Session& s, int64_t now) const {
  return now - s.last_seen >= options_.session_idle_ms ||
         now - s.created >= options_.session_max_ms;
}

void AccessService::Logout(std::string_view id) {
  std::lock_guard lock(sessions_mu_);
  sessions_.erase(std::string(id));
}

void AccessService::EndSessionsOf(std::string_view username) {
  std::lock_guard lock(sessions_mu_);
  std::erase_if(sessions_, [&](const auto& s) { return s.second.username == username; });
}

void AccessService::Audit(core::AuditEntry entry, bool wait) {
  if (entry.time == 0) entry.time = clock_->NowMillis();
  auto report = [](const Status& s) {
    if (!s.ok()) LogError("appending to the audit log failed: " + s.ToString());
  };
  if (wait) {
    report(store_->identity().AppendAudit(entry));
  } else {
    store_->identity().AppendAuditAsync(std::move(entry), report);
  }
}

bool AccessService::AuditDue(std::string_view key, int64_t period_ms) {
  const int64_t now = clock_->NowMillis();
  std::lock_guard lock(throttle_mu_);
  auto it = audited_.find(std::string(key));
  if (it != audited_.end() && now - it->second < period_ms) return false;
  Bound(audited_);
  audited_[std::string(key)] = now;
  return true;
}

}  // namespace cairn::service
