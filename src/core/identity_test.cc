#include "core/identity.h"

#include <gtest/gtest.h>

namespace cairn::core {
namespace {

Principal Who(std::string name, bool admin, std::vector<std::string> teams,
              TokenScopes scopes = kAllScopes) {
  Principal p;
  p.username = std::move(name);
  p.is_admin = admin;
  p.teams = std::move(teams);
  p.scopes = scopes;
  return p;
}

Grant UserGrant(const std::string& user, Permission p) {
  return {ResourceKind::kExperiment, "1", PrincipalKind::kUser, user, p};
}

Grant TeamGrant(const std::string& team, Permission p) {
  return {ResourceKind::kExperiment, "1", PrincipalKind::kTeam, team, p};
}

TEST(IdentityTest, LevelsAllowWhatMlflowsDo) {
  EXPECT_FALSE(Allows(Permission::kNoPermissions, Access::kRead));
  EXPECT_TRUE(Allows(Permission::kRead, Access::kRead));
  EXPECT_FALSE(Allows(Permission::kRead, Access::kUpdate));
  EXPECT_TRUE(Allows(Permission::kEdit, Access::kUpdate));
  EXPECT_FALSE(Allows(Permission::kEdit, Access::kDelete));
  EXPECT_TRUE(Allows(Permission::kManage, Access::kDelete));
  EXPECT_TRUE(Allows(Permission::kManage, Access::kManage));
  Permission p;
  ASSERT_TRUE(ParsePermission("NO_PERMISSIONS", &p));
  EXPECT_EQ(p, Permission::kNoPermissions);
  EXPECT_FALSE(ParsePermission("read", &p));
}

TEST(IdentityTest, ScopesWidenAndRejectUnknownWords) {
  TokenScopes s;
  ASSERT_TRUE(ParseScopes("write", &s));
  EXPECT_EQ(s, (TokenScopes{true, true, false}));
  ASSERT_TRUE(ParseScopes(" read , admin", &s));
  EXPECT_EQ(ScopesText(s), "read,write,admin");
  EXPECT_FALSE(ParseScopes("", &s));
  EXPECT_FALSE(ParseScopes("read,", &s));
  EXPECT_FALSE(ParseScopes("root", &s));
}

TEST(IdentityTest, OwnGrantBeatsTeamsWhichBeatTheDefault) {
  Principal bob = Who("bob", false, {"vision", "nlp"});
  EXPECT_EQ(EffectivePermission(bob, {}, Permission::kRead), Permission::kRead);
  EXPECT_EQ(EffectivePermission(bob, {TeamGrant("vision", Permission::kEdit),
                                      TeamGrant("nlp", Permission::kManage),
                                      TeamGrant("audio", Permission::kManage)},
                                Permission::kRead),
            Permission::kManage);
  // A team the user is not in does not count.
  EXPECT_EQ(EffectivePermission(bob, {TeamGrant("audio", Permission::kManage)},
                                Permission::kNoPermissions),
            Permission::kNoPermissions);
  // The user's own grant wins, even when it is lower.
  EXPECT_EQ(EffectivePermission(bob, {UserGrant("bob", Permission::kNoPermissions),
                                      TeamGrant("vision", Permission::kManage)},
                                Permission::kRead),
            Permission::kNoPermissions);
  EXPECT_EQ(EffectivePermission(bob, {UserGrant("alice", Permission::kManage)},
                                Permission::kNoPermissions),
            Permission::kNoPermissions);
}

TEST(IdentityTest, AdminsManageEverythingOnlyWithTheAdminScope) {
  Principal root = Who("root", true, {});
  EXPECT_EQ(EffectivePermission(root, {UserGrant("root", Permission::kNoPermissions)},
                                Permission::kNoPermissions),
            Permission::kManage);
  root.scopes = {true, true, false};
  EXPECT_EQ(EffectivePermission(root, {}, Permission::kRead), Permission::kRead);
}

TEST(IdentityTest, ReadScopedTokensOnlyRead) {
  Principal bob = Who("bob", false, {}, {true, false, false});
  EXPECT_EQ(EffectivePermission(bob, {UserGrant("bob", Permission::kManage)}, Permission::kRead),
            Permission::kRead);
  EXPECT_FALSE(MayAccess(bob, {UserGrant("bob", Permission::kManage)}, Permission::kRead,
                         Access::kUpdate));
  EXPECT_EQ(EffectivePermission(bob, {UserGrant("bob", Permission::kNoPermissions)},
                                Permission::kRead),
            Permission::kNoPermissions);
}

TEST(IdentityTest, AccountNames) {
  EXPECT_TRUE(ValidAccountName("alice"));
  EXPECT_TRUE(ValidAccountName("a.b-c_d@example.com"));
  EXPECT_FALSE(ValidAccountName(""));
  EXPECT_FALSE(ValidAccountName("-alice"));
  EXPECT_FALSE(ValidAccountName("al ice"));
  EXPECT_FALSE(ValidAccountName("al/ice"));
  EXPECT_FALSE(ValidAccountName(std::string(65, 'a')));
}

}  // namespace
}  // namespace cairn::core
