#include "service/access_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "fakes/fake_clock.h"
#include "service/identity_service.h"
#include "service/password.h"
#include "store/memory/memory_store.h"

namespace cairn::service {
namespace {

using core::Grant;
using core::Permission;
using core::PrincipalKind;
using core::ResourceKind;
using ::testing::HasSubstr;

constexpr int64_t kAccessNow = 1'700'000'000'000;

Credentials Basic(const std::string& user, const std::string& password) {
  return {Credentials::Kind::kBasic, user, password};
}

Credentials Bearer(const std::string& token) { return {Credentials::Kind::kBearer, "", token}; }

class AccessServiceTest : public ::testing::Test {
 protected:
  AccessServiceTest() : AccessServiceTest(AccessOptions{true}) {}
  explicit AccessServiceTest(AccessOptions options)
      : access_(store_.get(), &clock_, options), identity_(store_.get(), &access_, &clock_) {}

  core::Principal SignIn(const std::string& user, const std::string& password) {
    Result<core::Principal> p = access_.Authenticate(Basic(user, password), "10.0.0.1");
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? *p : core::Principal{};
  }

  fakes::FakeClock clock_{kAccessNow};
  std::unique_ptr<store::MetadataStore> store_ = store::NewMemoryMetadataStore({});
  AccessService access_;
  IdentityService identity_;
};

TEST(AccessServiceOffTest, EveryRequestIsAnAnonymousAdmin) {
  fakes::FakeClock clock(kAccessNow);
  auto store = store::NewMemoryMetadataStore({});
  AccessService access(store.get(), &clock, AccessOptions{});
  Result<core::Principal> p = access.Authenticate(Credentials{}, "10.0.0.1");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->ActsAsAdmin());
  EXPECT_EQ(*access.PermissionOn(*p, ResourceKind::kExperiment, "1"), Permission::kManage);
}

TEST_F(AccessServiceTest, PasswordsAreCheckedThenRecognisedFromMemory) {
  ASSERT_TRUE(identity_.CreateUser("alice", "correct horse", false, false).ok());
  EXPECT_EQ(access_.Authenticate(Credentials{}, "10.0.0.1").status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(access_.Authenticate(Basic("alice", "wrong horse"), "10.0.0.1").status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(access_.Authenticate(Basic("nobody", "correct horse"), "10.0.0.1").status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_FALSE(access_.AuthenticateCached(Basic("alice", "correct horse")));
  EXPECT_EQ(SignIn("alice", "correct horse").username, "alice");
  std::optional<core::Principal> cached = access_.AuthenticateCached(Basic("alice", "correct horse"));
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->username, "alice");
  // Once the recheck period is over the store is asked again.
  clock_.Advance(access_.options().recheck_ms);
  EXPECT_FALSE(access_.AuthenticateCached(Basic("alice", "correct horse")));
  EXPECT_TRUE(access_.Authenticate(Basic("alice", "correct horse"), "10.0.0.1").ok());

  // A changed password takes effect at once.
  ASSERT_TRUE(identity_.UpdatePassword("alice", "battery staple").ok());
  EXPECT_FALSE(access_.AuthenticateCached(Basic("alice", "correct horse")));
  EXPECT_EQ(access_.Authenticate(Basic("alice", "correct horse"), "10.0.0.1").status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_TRUE(access_.Authenticate(Basic("alice", "battery staple"), "10.0.0.1").ok());
}

TEST_F(AccessServiceTest, PasswordsAreHashedWithArgon2id) {
  Result<core::User> u = identity_.CreateUser("alice", "correct horse", false, false);
  ASSERT_TRUE(u.ok());
  EXPECT_THAT(store_->identity().GetUser("alice")->password_hash, HasSubstr("$argon2id$"));
  EXPECT_EQ(identity_.CreateUser("bob", "short", false, false).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(identity_.CreateUser("alice", "another one", false, false).status().message(),
            "User (username=alice) already exists.");
  EXPECT_EQ(identity_.CreateUser("", "another one", false, false).status().message(),
            "Username cannot be empty.");
}

TEST_F(AccessServiceTest, RevokedTokenStopsWorkingWithinTheRecheckPeriod) {
  ASSERT_TRUE(identity_.CreateUser("ci", "", false, true).ok());
  const core::Principal admin = AccessService::Anonymous();
  Result<CreatedToken> t = identity_.CreateToken(admin, {"ci", "runner", {}, {}});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_THAT(t->value, ::testing::StartsWith("cairn_"));
  // A service account's token expires in 90 days unless told otherwise.
  EXPECT_EQ(t->token.expiry_time, kAccessNow + 90LL * 24 * 3600 * 1000);

  Result<core::Principal> p = access_.Authenticate(Bearer(t->value), "10.0.0.2");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->username, "ci");
  EXPECT_EQ(p->token_name, "runner");
  EXPECT_EQ(store_->identity().GetToken(t->token.id)->last_used_time, kAccessNow);

  // Revoked by another process: the cache holds until the recheck period is over.
  ASSERT_TRUE(store_->identity().RevokeToken(t->token.id, kAccessNow + 10).ok());
  const int64_t recheck = access_.options().recheck_ms;
  ASSERT_LT(recheck, 1000);
  clock_.Advance(recheck - 1);
  EXPECT_TRUE(access_.AuthenticateCached(Bearer(t->value)));
  clock_.Advance(1);
  EXPECT_FALSE(access_.AuthenticateCached(Bearer(t->value)));
  Result<core::Principal> after = access_.Authenticate(Bearer(t->value), "10.0.0.2");
  EXPECT_EQ(after.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(after.status().message(), "revoked token");
}

TEST_F(AccessServiceTest, ExpiredTokensAndUnknownOnesAreRefused) {
  ASSERT_TRUE(identity_.CreateUser("bob", "correct horse", false, false).ok());
  const core::Principal bob = SignIn("bob", "correct horse");
  Result<CreatedToken> t = identity_.CreateToken(bob, {"", "laptop", {}, 1});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(access_.Authenticate(Bearer(t->value), "10.0.0.2").ok());
  clock_.Advance(24 * 3600 * 1000);
  EXPECT_EQ(access_.Authenticate(Bearer(t->value), "10.0.0.2").status().message(),
            "expired token");
  EXPECT_EQ(access_.Authenticate(Bearer("cairn_0000"), "10.0.0.2").status().message(),
            "unknown token");
  // Each refusal is in the audit log.
  Result<std::vector<core::AuditEntry>> audit = identity_.ReadAudit({});
  ASSERT_TRUE(audit.ok());
  ASSERT_GE(audit->size(), 2u);
  EXPECT_EQ((*audit)[1].actor, "bob/laptop");
  EXPECT_EQ((*audit)[1].outcome, "refused: expired token");
  EXPECT_EQ((*audit)[1].source, "10.0.0.2");
}

TEST_F(AccessServiceTest, TokenScopesAndOwnersAreChecked) {
  ASSERT_TRUE(identity_.CreateUser("bob", "correct horse", false, false).ok());
  ASSERT_TRUE(identity_.CreateUser("eve", "correct horse", false, false).ok());
  const core::Principal bob = SignIn("bob", "correct horse");
  EXPECT_EQ(identity_.CreateToken(bob, {"eve", "x", {}, {}}).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(identity_.CreateToken(bob, {"", "x", core::kAllScopes, {}}).status().code(),
            StatusCode::kInvalidArgument);
  Result<CreatedToken> reader =
      identity_.CreateToken(bob, {"", "reader", core::TokenScopes{true, false, false}, {}});
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(reader->token.expiry_time, 0);  // personal tokens do not expire by default
  Result<core::Principal> p = access_.Authenticate(Bearer(reader->value), "10.0.0.3");
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(identity_
                  .PutPermission({ResourceKind::kExperiment, "1", PrincipalKind::kUser, "bob",
                                  Permission::kManage})
                  .ok());
  EXPECT_EQ(*access_.PermissionOn(*p, ResourceKind::kExperiment, "1"), Permission::kRead);
  // Eve cannot revoke it, nor see that it exists; bob can, by name.
  const core::Principal eve = SignIn("eve", "correct horse");
  EXPECT_EQ(identity_.RevokeToken(eve, reader->token.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(identity_.ListTokens(eve, "bob", false).status().code(),
            StatusCode::kPermissionDenied);
  ASSERT_TRUE(identity_.RevokeToken(bob, "reader").ok());
  EXPECT_EQ(access_.Authenticate(Bearer(reader->value), "10.0.0.3").status().code(),
            StatusCode::kUnauthenticated);
}

TEST_F(AccessServiceTest, ATokenMadeByATokenLastsNoLongerThanItsMaker) {
  ASSERT_TRUE(identity_.CreateUser("bob", "correct horse", false, false).ok());
  const core::Principal bob = SignIn("bob", "correct horse");
  Result<CreatedToken> parent = identity_.CreateToken(bob, {"", "week", {}, 7});
  ASSERT_TRUE(parent.ok());
  Result<core::Principal> via_token = access_.Authenticate(Bearer(parent->value), "10.0.0.4");
  ASSERT_TRUE(via_token.ok());
  EXPECT_EQ(via_token->token_expiry, parent->token.expiry_time);
  Result<CreatedToken> forever = identity_.CreateToken(*via_token, {"", "forever", {}, 0});
  ASSERT_TRUE(forever.ok());
  EXPECT_EQ(forever->token.expiry_time, parent->token.expiry_time);
  Result<CreatedToken> shorter = identity_.CreateToken(*via_token, {"", "day", {}, 1});
  ASSERT_TRUE(shorter.ok());
  EXPECT_EQ(shorter->token.expiry_time, kAccessNow + 24LL * 3600 * 1000);
}

TEST_F(AccessServiceTest, ProvenPasswordsAndValidTokensAreNotHeldBackByOthersFailures) {
  ASSERT_TRUE(identity_.CreateUser("alice", "correct horse", false, false).ok());
  const core::Principal alice = SignIn("alice", "correct horse");
  Result<CreatedToken> t = identity_.CreateToken(alice, {"", "laptop", {}, {}});
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 120; ++i) {
    (void)access_.Authenticate(Bearer("cairn_guess" + std::to_string(i)), "10.9.9.9");
  }
  EXPECT_EQ(access_.Authenticate(Bearer("cairn_guess"), "10.9.9.9").status().code(),
            StatusCode::kResourceExhausted);
  clock_.Advance(access_.options().recheck_ms);  // past the cache: the store is asked again
  EXPECT_TRUE(access_.Authenticate(Bearer(t->value), "10.9.9.9").ok());
  EXPECT_TRUE(access_.Authenticate(Basic("alice", "correct horse"), "10.9.9.9").ok());
}

TEST_F(AccessServiceTest, RepeatedFailuresFromOneAddressAreThrottled) {
  ASSERT_TRUE(identity_.CreateUser("alice", "correct horse", false, false).ok());
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(access_.Authenticate(Basic("alice", "guess" + std::to_string(i)), "10.9.9.9")
                  .status()
                  .code(),
              StatusCode::kUnauthenticated);
  }
  Result<core::Principal> blocked = access_.Authenticate(Basic("alice", "correct horse"), "10.9.9.9");
  EXPECT_EQ(blocked.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(blocked.status().message(), HasSubstr("try again in 60 s"));
  // Another address is not affected, and the window passes.
  EXPECT_TRUE(access_.Authenticate(Basic("alice", "correct horse"), "10.0.0.1").ok());
  clock_.Advance(60'000);
  EXPECT_TRUE(access_.Authenticate(Basic("alice", "correct horse"), "10.9.9.9").ok());
}

TEST_F(AccessServiceTest, SessionsEndWhenIdleAndWhenThePasswordChanges) {
  ASSERT_TRUE(identity_.CreateUser("alice", "correct horse", false, false).ok());
  EXPECT_EQ(access_.Login("alice", "wrong horse!", "10.0.0.1").status().code(),
            StatusCode::kUnauthenticated);
  Result<Session> s = access_.Login("alice", "correct horse", "10.0.0.1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->id.size(), 64u);
  EXPECT_NE(s->csrf_token, s->id);
  Result<core::Principal> p =
      access_.Authenticate({Credentials::Kind::kSession, "", s->id}, "10.0.0.1");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->username, "alice");
  clock_.Advance(access_.options().session_idle_ms);
  EXPECT_FALSE(access_.FindSession(s->id));

  Result<Session> again = access_.Login("alice", "correct horse", "10.0.0.1");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(identity_.UpdatePassword("alice", "battery staple").ok());
  EXPECT_FALSE(access_.FindSession(again->id));
}

TEST_F(AccessServiceTest, SearchesSeeOnlyWhatTheCallerMayRead) {
  ASSERT_TRUE(identity_.CreateUser("bob", "correct horse", false, false).ok());
  ASSERT_TRUE(identity_.CreateTeam("vision").ok());
  ASSERT_TRUE(identity_.AddTeamMember("vision", "bob").ok());
  ASSERT_TRUE(identity_
                  .PutPermission({ResourceKind::kExperiment, "2", PrincipalKind::kUser, "bob",
                                  Permission::kNoPermissions})
                  .ok());
  ASSERT_TRUE(identity_
                  .PutPermission({ResourceKind::kExperiment, "3", PrincipalKind::kTeam, "vision",
                                  Permission::kNoPermissions})
                  .ok());
  const core::Principal bob = SignIn("bob", "correct horse");
  Result<Visibility> v = access_.VisibilityOf(bob);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->MayReadExperiment("1"));
  EXPECT_FALSE(v->MayReadExperiment("2"));
  EXPECT_FALSE(v->MayReadExperiment("3"));
}

TEST_F(AccessServiceTest, MlflowPermissionCallsKeepMlflowsMessages) {
  ASSERT_TRUE(identity_.CreateUser("bob", "correct horse", false, false).ok());
  const Grant g{ResourceKind::kExperiment, "7", PrincipalKind::kUser, "bob", Permission::kEdit};
  ASSERT_TRUE(identity_.CreatePermission(g).ok());
  EXPECT_EQ(identity_.CreatePermission(g).message(),
            "Experiment permission (experiment_id=7, username=bob) already exists.");
  EXPECT_EQ(identity_.DeletePermission(ResourceKind::kExperiment, "8", PrincipalKind::kUser, "bob")
                .message(),
            "Experiment permission with experiment_id=8 and username=bob not found");
  EXPECT_EQ(identity_.GetPermission(ResourceKind::kExperiment, "7", PrincipalKind::kUser, "carol")
                .status()
                .message(),
            "User with username=carol not found");
  EXPECT_EQ(IdentityService::ParsePermissionName("OWNER").status().message(),
            "Invalid permission 'OWNER'. Valid permissions are: ('READ', 'EDIT', 'MANAGE', "
            "'NO_PERMISSIONS')");
}

// The reference model: the rule of core/identity.h written out plainly, fed the same random
// history of accounts, teams and grants as the service, then asked the same questions.
struct ReferenceModel {
  std::map<std::string, bool> admins;                  // user -> is admin
  std::map<std::string, std::set<std::string>> teams;  // team -> members
  std::map<std::pair<std::string, std::string>, Permission> user_grants;  // (user, exp)
  std::map<std::pair<std::string, std::string>, Permission> team_grants;  // (team, exp)
  Permission fallback = Permission::kRead;

  Permission Of(const std::string& user, const std::string& exp, core::TokenScopes scopes) const {
    Permission level = fallback;
    if (admins.at(user) && scopes.admin) {
      level = Permission::kManage;
    } else if (auto it = user_grants.find({user, exp}); it != user_grants.end()) {
      level = it->second;
    } else {
      bool any = false;
      Permission best = Permission::kNoPermissions;
      for (const auto& [team, members] : teams) {
        auto g = team_grants.find({team, exp});
        if (members.count(user) != 0 && g != team_grants.end()) {
          any = true;
          best = std::max(best, g->second);
        }
      }
      if (any) level = best;
    }
    if (!scopes.write && level > Permission::kRead) level = Permission::kRead;
    return level;
  }
};

class AccessPropertyTest : public ::testing::TestWithParam<int> {};

TEST_P(AccessPropertyTest, ServiceAgreesWithTheReferenceModel) {
  std::mt19937 rng(static_cast<uint32_t>(GetParam()));
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  ReferenceModel model;
  model.fallback = static_cast<Permission>(pick(4));
  fakes::FakeClock clock(kAccessNow);
  auto store = store::NewMemoryMetadataStore({});
  AccessOptions options;
  options.enabled = true;
  options.default_permission = model.fallback;
  AccessService access(store.get(), &clock, options);
  IdentityService identity(store.get(), &access, &clock);

  const std::vector<std::string> users = {"ann", "ben", "cat", "dan"};
  const std::vector<std::string> team_names = {"red", "blue"};
  const std::vector<std::string> exps = {"0", "1", "2"};
  // Each user signs in with one token per scope set: the service finds its teams itself.
  const std::vector<std::string> scope_sets = {"read", "write", "admin"};
  std::map<std::pair<std::string, std::string>, std::string> tokens;  // (user, scopes) -> value
  for (const std::string& u : users) {
    core::User user{0, u, "", false, false, kAccessNow};
    ASSERT_TRUE(store->identity().CreateUser(user).ok());
    model.admins[u] = false;
    for (const std::string& scopes : scope_sets) {
      core::Token t;
      t.id = u + "-" + scopes;
      t.name = scopes;
      t.owner = u;
      const std::string value = NewTokenValue();
      t.secret_hash = TokenSecretHash(value);
      ASSERT_TRUE(core::ParseScopes(scopes, &t.scopes));
      ASSERT_TRUE(store->identity().CreateToken(t).ok());
      tokens[{u, scopes}] = value;
    }
  }
  for (const std::string& t : team_names) {
    ASSERT_TRUE(identity.CreateTeam(t).ok());
    model.teams[t];
  }
  for (int step = 0; step < 300; ++step) {
    const std::string& u = users[pick(4)];
    const std::string& t = team_names[pick(2)];
    const std::string& e = exps[pick(3)];
    const Permission p = static_cast<Permission>(pick(4));
    switch (pick(7)) {
      case 0:
        ASSERT_TRUE(identity.PutPermission({ResourceKind::kExperiment, e, PrincipalKind::kUser, u, p}).ok());
        model.user_grants[{u, e}] = p;
        break;
      case 1:
        ASSERT_TRUE(identity.PutPermission({ResourceKind::kExperiment, e, PrincipalKind::kTeam, t, p}).ok());
        model.team_grants[{t, e}] = p;
        break;
      case 2:
        if (model.user_grants.erase({u, e}) != 0) {
          ASSERT_TRUE(identity.DeletePermission(ResourceKind::kExperiment, e, PrincipalKind::kUser, u).ok());
        }
        break;
      case 3:
        ASSERT_TRUE(identity.AddTeamMember(t, u).ok());
        model.teams[t].insert(u);
        break;
      case 4:
        if (model.teams[t].erase(u) != 0) {
          ASSERT_TRUE(identity.RemoveTeamMember(t, u).ok());
        }
        break;
      case 5: {
        const bool admin = pick(4) == 0;
        ASSERT_TRUE(identity.UpdateAdmin(u, admin).ok());
        model.admins[u] = admin;
        break;
      }
      default: {
        // A question, asked as the edge asks it: authenticate, then ask for the permission.
        const std::string& scope_set = scope_sets[pick(3)];
        core::TokenScopes scopes;
        ASSERT_TRUE(core::ParseScopes(scope_set, &scopes));
        Result<core::Principal> who =
            access.Authenticate(Bearer(tokens[{u, scope_set}]), "127.0.0.1");
        ASSERT_TRUE(who.ok()) << who.status().ToString();
        const core::Principal& principal = *who;
        Result<Permission> got = access.PermissionOn(principal, ResourceKind::kExperiment, e);
        ASSERT_TRUE(got.ok());
        ASSERT_EQ(*got, model.Of(u, e, scopes))
            << "seed " << GetParam() << " step " << step << ": " << u << " on experiment " << e;
        Result<Visibility> v = access.VisibilityOf(principal);
        ASSERT_TRUE(v.ok());
        ASSERT_EQ(v->MayReadExperiment(e), model.Of(u, e, scopes) >= Permission::kRead);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, AccessPropertyTest, ::testing::Range(1, 21));

}  // namespace
}  // namespace cairn::service
