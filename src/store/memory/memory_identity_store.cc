#include "store/memory/memory_identity_store.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "store/store_util.h"

namespace cairn::store {
namespace {

using core::Grant;
using core::PrincipalKind;
using core::ResourceKind;

class MemoryIdentityStore : public IdentityStore {
 public:
  Result<int64_t> CreateUser(const core::User& user) override {
    std::lock_guard lock(mu_);
    if (users_.count(user.username) != 0) {
      return UserTaken(user.username);
    }
    core::User u = user;
    u.id = ++last_user_id_;
    users_[u.username] = u;
    return u.id;
  }

  Result<core::User> GetUser(std::string_view username) override {
    std::lock_guard lock(mu_);
    auto it = users_.find(username);
    if (it == users_.end()) return UserNotFound(username);
    return it->second;
  }

  Result<std::vector<core::User>> ListUsers() override {
    std::lock_guard lock(mu_);
    std::vector<core::User> out;
    for (const auto& [name, u] : users_) out.push_back(u);
    return out;
  }

  Status SetPassword(std::string_view username, std::string_view password_hash) override {
    std::lock_guard lock(mu_);
    auto it = users_.find(username);
    if (it == users_.end()) return UserNotFound(username);
    it->second.password_hash = std::string(password_hash);
    return Status::Ok();
  }

  Status SetAdmin(std::string_view username, bool is_admin) override {
    std::lock_guard lock(mu_);
    auto it = users_.find(username);
    if (it == users_.end()) return UserNotFound(username);
    it->second.is_admin = is_admin;
    return Status::Ok();
  }

  Status DeleteUser(std::string_view username) override {
    std::lock_guard lock(mu_);
    auto it = users_.find(username);
    if (it == users_.end()) return UserNotFound(username);
    users_.erase(it);
    for (auto& [name, members] : teams_) members.members.erase(std::string(username));
    std::erase_if(tokens_, [&](const auto& t) { return t.second.owner == username; });
    std::erase_if(grants_, [&](const Grant& g) {
      return g.principal_kind == PrincipalKind::kUser && g.principal == username;
    });
    return Status::Ok();
  }

  Status CreateTeam(const core::Team& team) override {
    std::lock_guard lock(mu_);
    if (teams_.count(team.name) != 0) {
      return TeamTaken(team.name);
    }
    teams_[team.name] = TeamRecord{team.created_time, {}};
    return Status::Ok();
  }

  Result<core::Team> GetTeam(std::string_view name) override {
    std::lock_guard lock(mu_);
    auto it = teams_.find(name);
    if (it == teams_.end()) return TeamNotFound(name);
    return ToTeam(it->first, it->second);
  }

  Result<std::vector<core::Team>> ListTeams() override {
    std::lock_guard lock(mu_);
    std::vector<core::Team> out;
    for (const auto& [name, t] : teams_) out.push_back(ToTeam(name, t));
    return out;
  }

  Status DeleteTeam(std::string_view name) override {
    std::lock_guard lock(mu_);
    auto it = teams_.find(name);
    if (it == teams_.end()) return TeamNotFound(name);
    teams_.erase(it);
    std::erase_if(grants_, [&](const Grant& g) {
      return g.principal_kind == PrincipalKind::kTeam && g.principal == name;
    });
    return Status::Ok();
  }

  Status AddTeamMember(std::string_view team, std::string_view username) override {
    std::lock_guard lock(mu_);
    auto it = teams_.find(team);
    if (it == teams_.end()) return TeamNotFound(team);
    if (users_.find(username) == users_.end()) return UserNotFound(username);
    it->second.members.insert(std::string(username));
    return Status::Ok();
  }

  Status RemoveTeamMember(std::string_view team, std::string_view username) override {
    std::lock_guard lock(mu_);
    auto it = teams_.find(team);
    if (it == teams_.end()) return TeamNotFound(team);
    if (it->second.members.erase(std::string(username)) == 0) {
      return NotATeamMember(team, username);
    }
    return Status::Ok();
  }

  Result<std::vector<std::string>> TeamsOf(std::string_view username) override {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const auto& [name, t] : teams_) {
      if (t.members.count(std::string(username)) != 0) out.push_back(name);
    }
    return out;
  }

  Status CreateToken(const core::Token& token) override {
    std::lock_guard lock(mu_);
    if (users_.find(token.owner) == users_.end()) return UserNotFound(token.owner);
    for (const auto& [id, t] : tokens_) {
      if (id == token.id || t.secret_hash == token.secret_hash) {
        return AlreadyExists("Token id already exists");
      }
      if (t.owner == token.owner && t.name == token.name) {
        return TokenNameTaken(token.owner, token.name);
      }
    }
    tokens_[token.id] = token;
    token_order_[token.id] = ++token_seq_;
    return Status::Ok();
  }

  Result<core::Token> GetToken(std::string_view id) override {
    std::lock_guard lock(mu_);
    auto it = tokens_.find(id);
    if (it == tokens_.end()) return TokenNotFound(id);
    return it->second;
  }

  Result<core::Token> GetTokenBySecretHash(std::string_view secret_hash) override {
    std::lock_guard lock(mu_);
    for (const auto& [id, t] : tokens_) {
      if (t.secret_hash == secret_hash) return t;
    }
    return NotFound("No token with that value");
  }

  Result<std::vector<core::Token>> ListTokens(std::string_view owner) override {
    std::lock_guard lock(mu_);
    std::vector<core::Token> out;
    for (const auto& [id, t] : tokens_) {
      if (owner.empty() || t.owner == owner) out.push_back(t);
    }
    std::sort(out.begin(), out.end(), [&](const core::Token& a, const core::Token& b) {
      if (a.created_time != b.created_time) return a.created_time > b.created_time;
      return token_order_.at(a.id) > token_order_.at(b.id);
    });
    return out;
  }

  Status RevokeToken(std::string_view id, int64_t now) override {
    std::lock_guard lock(mu_);
    auto it = tokens_.find(id);
    if (it == tokens_.end()) return TokenNotFound(id);
    if (it->second.revoked_time == 0) it->second.revoked_time = now;
    return Status::Ok();
  }

  Status TouchToken(std::string_view id, int64_t now) override {
    std::lock_guard lock(mu_);
    auto it = tokens_.find(id);
    if (it == tokens_.end()) return TokenNotFound(id);
    it->second.last_used_time = now;
    return Status::Ok();
  }

  Status PutGrant(const Grant& grant) override {
    std::lock_guard lock(mu_);
    if (grant.principal_kind == PrincipalKind::kUser &&
        users_.find(grant.principal) == users_.end()) {
      return UserNotFound(grant.principal);
    }
    if (grant.principal_kind == PrincipalKind::kTeam &&
        teams_.find(grant.principal) == teams_.end()) {
      return TeamNotFound(grant.principal);
    }
    for (Grant& g : grants_) {
      if (SameHolding(g, grant.resource_kind, grant.resource_id, grant.principal_kind,
                      grant.principal)) {
        g.permission = grant.permission;
        return Status::Ok();
      }
    }
    grants_.push_back(grant);
    return Status::Ok();
  }

  Status DeleteGrant(ResourceKind kind, std::string_view resource_id,
                     PrincipalKind principal_kind, std::string_view principal) override {
    std::lock_guard lock(mu_);
    const size_t erased = std::erase_if(grants_, [&](const Grant& g) {
      return SameHolding(g, kind, resource_id, principal_kind, principal);
    });
    if (erased == 0) return GrantNotFound(kind, resource_id, principal_kind, principal);
    return Status::Ok();
  }

  Result<std::vector<Grant>> GrantsOn(ResourceKind kind, std::string_view resource_id) override {
    std::lock_guard lock(mu_);
    std::vector<Grant> out;
    for (const Grant& g : grants_) {
      if (g.resource_kind == kind && g.resource_id == resource_id) out.push_back(g);
    }
    std::sort(out.begin(), out.end(), [](const Grant& a, const Grant& b) {
      return std::tie(a.principal_kind, a.principal) < std::tie(b.principal_kind, b.principal);
    });
    return out;
  }

  Result<std::vector<Grant>> GrantsOf(PrincipalKind principal_kind,
                                      std::string_view principal) override {
    std::lock_guard lock(mu_);
    std::vector<Grant> out;
    for (const Grant& g : grants_) {
      if (g.principal_kind == principal_kind && g.principal == principal) out.push_back(g);
    }
    std::sort(out.begin(), out.end(), [](const Grant& a, const Grant& b) {
      return std::tie(a.resource_kind, a.resource_id) < std::tie(b.resource_kind, b.resource_id);
    });
    return out;
  }

  Status DeleteGrantsOn(ResourceKind kind, std::string_view resource_id) override {
    std::lock_guard lock(mu_);
    std::erase_if(grants_, [&](const Grant& g) {
      return g.resource_kind == kind && g.resource_id == resource_id;
    });
    return Status::Ok();
  }

  Status AppendAudit(const core::AuditEntry& entry) override {
    std::lock_guard lock(mu_);
    core::AuditEntry e = entry;
    e.id = static_cast<int64_t>(audit_.size()) + 1;
    audit_.push_back(std::move(e));
    return Status::Ok();
  }

  Result<std::vector<core::AuditEntry>> ReadAudit(const core::AuditQuery& q) override {
    std::lock_guard lock(mu_);
    std::vector<core::AuditEntry> out;
    for (auto it = audit_.rbegin(); it != audit_.rend(); ++it) {
      if (static_cast<int64_t>(out.size()) >= q.max_results) break;
      if (q.before_id > 0 && it->id >= q.before_id) continue;
      if (!q.actor.empty() && it->actor != q.actor) continue;
      if (!q.object.empty() && !core::AuditObjectMatches(it->object, q.object)) continue;
      if (it->time < q.since) continue;
      out.push_back(*it);
    }
    return out;
  }

 private:
  struct TeamRecord {
    int64_t created_time = 0;
    std::set<std::string> members;
  };

  static core::Team ToTeam(const std::string& name, const TeamRecord& t) {
    return core::Team{name, std::vector<std::string>(t.members.begin(), t.members.end()),
                      t.created_time};
  }
  static bool SameHolding(const Grant& g, ResourceKind kind, std::string_view resource_id,
                          PrincipalKind principal_kind, std::string_view principal) {
    return g.resource_kind == kind && g.resource_id == resource_id &&
           g.principal_kind == principal_kind && g.principal == principal;
  }

  std::mutex mu_;
  std::map<std::string, core::User, std::less<>> users_;
  int64_t last_user_id_ = 0;
  std::map<std::string, TeamRecord, std::less<>> teams_;
  std::map<std::string, core::Token, std::less<>> tokens_;
  std::map<std::string, int64_t, std::less<>> token_order_;
  int64_t token_seq_ = 0;
  std::vector<Grant> grants_;
  std::vector<core::AuditEntry> audit_;
};

}  // namespace

std::unique_ptr<IdentityStore> NewMemoryIdentityStore() {
  return std::make_unique<MemoryIdentityStore>();
}

}  // namespace cairn::store
