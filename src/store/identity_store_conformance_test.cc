// The IdentityStore contract, run against the identity store of every MetadataStore backend.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "fakes/store_backends.h"
#include "store/metadata_store.h"
#include "util/hash.h"

namespace cairn::store {
namespace {

using core::Grant;
using core::Permission;
using core::PrincipalKind;
using core::ResourceKind;

using fakes::MemoryBackend;
using fakes::SqliteBackend;

template <typename Backend>
class IdentityStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cairn-identity-" + RandomHex(8));
    std::filesystem::create_directories(dir_);
    store_ = Backend::Open(dir_.string());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  IdentityStore& ids() { return store_->identity(); }

  void AddUser(const std::string& name, bool admin = false) {
    core::User u;
    u.username = name;
    u.password_hash = "hash-of-" + name;
    u.is_admin = admin;
    u.created_time = 100;
    ASSERT_TRUE(ids().CreateUser(u).ok());
  }

  core::Token NewToken(const std::string& owner, const std::string& name, int64_t created) {
    core::Token t;
    t.id = RandomHex(8);
    t.name = name;
    t.owner = owner;
    t.secret_hash = Sha256Hex(t.id);
    t.scopes = {true, true, false};
    t.created_time = created;
    t.expiry_time = created + 1000;
    return t;
  }

  std::filesystem::path dir_;
  std::unique_ptr<MetadataStore> store_;
};

using Backends = ::testing::Types<MemoryBackend, SqliteBackend>;
TYPED_TEST_SUITE(IdentityStoreTest, Backends);

TYPED_TEST(IdentityStoreTest, UsersAreCreatedOnceAndChanged) {
  this->AddUser("bob");
  this->AddUser("alice", true);
  core::User dup;
  dup.username = "bob";
  EXPECT_EQ(this->ids().CreateUser(dup).status().code(), StatusCode::kAlreadyExists);

  Result<std::vector<core::User>> users = this->ids().ListUsers();
  ASSERT_TRUE(users.ok());
  ASSERT_EQ(users->size(), 2u);
  EXPECT_EQ((*users)[0].username, "alice");
  EXPECT_TRUE((*users)[0].is_admin);
  EXPECT_NE((*users)[0].id, (*users)[1].id);

  ASSERT_TRUE(this->ids().SetPassword("bob", "new-hash").ok());
  ASSERT_TRUE(this->ids().SetAdmin("bob", true).ok());
  Result<core::User> bob = this->ids().GetUser("bob");
  ASSERT_TRUE(bob.ok());
  EXPECT_EQ(bob->password_hash, "new-hash");
  EXPECT_TRUE(bob->is_admin);
  EXPECT_EQ(bob->created_time, 100);

  EXPECT_EQ(this->ids().GetUser("carol").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->ids().SetPassword("carol", "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(this->ids().SetAdmin("carol", true).code(), StatusCode::kNotFound);
  EXPECT_EQ(this->ids().DeleteUser("carol").code(), StatusCode::kNotFound);
}

TYPED_TEST(IdentityStoreTest, TeamsHoldMembersThatExist) {
  this->AddUser("bob");
  this->AddUser("alice");
  ASSERT_TRUE(this->ids().CreateTeam({"vision", {}, 5}).ok());
  ASSERT_TRUE(this->ids().CreateTeam({"nlp", {}, 6}).ok());
  EXPECT_EQ(this->ids().CreateTeam({"nlp", {}, 7}).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(this->ids().AddTeamMember("vision", "bob").ok());
  ASSERT_TRUE(this->ids().AddTeamMember("vision", "alice").ok());
  ASSERT_TRUE(this->ids().AddTeamMember("vision", "alice").ok());  // twice is fine
  ASSERT_TRUE(this->ids().AddTeamMember("nlp", "bob").ok());
  EXPECT_EQ(this->ids().AddTeamMember("vision", "carol").code(), StatusCode::kNotFound);
  EXPECT_EQ(this->ids().AddTeamMember("audio", "bob").code(), StatusCode::kNotFound);

  Result<core::Team> vision = this->ids().GetTeam("vision");
  ASSERT_TRUE(vision.ok());
  EXPECT_EQ(vision->members, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_EQ(vision->created_time, 5);
  Result<std::vector<std::string>> of_bob = this->ids().TeamsOf("bob");
  ASSERT_TRUE(of_bob.ok());
  EXPECT_EQ(*of_bob, (std::vector<std::string>{"nlp", "vision"}));

  ASSERT_TRUE(this->ids().RemoveTeamMember("vision", "bob").ok());
  EXPECT_EQ(this->ids().RemoveTeamMember("vision", "bob").code(), StatusCode::kNotFound);
  Result<std::vector<core::Team>> teams = this->ids().ListTeams();
  ASSERT_TRUE(teams.ok());
  ASSERT_EQ(teams->size(), 2u);
  EXPECT_EQ((*teams)[0].name, "nlp");
  EXPECT_EQ((*teams)[1].members, (std::vector<std::string>{"alice"}));
  ASSERT_TRUE(this->ids().DeleteTeam("nlp").ok());
  EXPECT_EQ(this->ids().GetTeam("nlp").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(*this->ids().TeamsOf("bob"), std::vector<std::string>{});
}

TYPED_TEST(IdentityStoreTest, TokensAreFoundByHashListedNewestFirstAndRevoked) {
  this->AddUser("bob");
  this->AddUser("alice");
  core::Token a = this->NewToken("bob", "laptop", 10);
  core::Token b = this->NewToken("bob", "ci", 20);
  core::Token c = this->NewToken("alice", "laptop", 15);
  for (const core::Token& t : {a, b, c}) ASSERT_TRUE(this->ids().CreateToken(t).ok());
  EXPECT_EQ(this->ids().CreateToken(this->NewToken("bob", "laptop", 30)).code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(this->ids().CreateToken(this->NewToken("carol", "x", 30)).code(),
            StatusCode::kNotFound);

  Result<core::Token> found = this->ids().GetTokenBySecretHash(b.secret_hash);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->id, b.id);
  EXPECT_EQ(found->owner, "bob");
  EXPECT_EQ(found->scopes, (core::TokenScopes{true, true, false}));
  EXPECT_EQ(found->expiry_time, 1020);
  EXPECT_EQ(this->ids().GetTokenBySecretHash(Sha256Hex("nope")).status().code(),
            StatusCode::kNotFound);

  Result<std::vector<core::Token>> bobs = this->ids().ListTokens("bob");
  ASSERT_TRUE(bobs.ok());
  ASSERT_EQ(bobs->size(), 2u);
  EXPECT_EQ((*bobs)[0].name, "ci");
  EXPECT_EQ(this->ids().ListTokens("")->size(), 3u);

  ASSERT_TRUE(this->ids().TouchToken(a.id, 50).ok());
  ASSERT_TRUE(this->ids().RevokeToken(a.id, 60).ok());
  ASSERT_TRUE(this->ids().RevokeToken(a.id, 70).ok());  // keeps the first time
  Result<core::Token> revoked = this->ids().GetToken(a.id);
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(revoked->last_used_time, 50);
  EXPECT_EQ(revoked->revoked_time, 60);
  EXPECT_FALSE(revoked->Usable(61));
  EXPECT_TRUE(this->ids().GetToken(b.id)->Usable(1019));
  EXPECT_FALSE(this->ids().GetToken(b.id)->Usable(1020));
  EXPECT_EQ(this->ids().RevokeToken("missing", 1).code(), StatusCode::kNotFound);
}

TYPED_TEST(IdentityStoreTest, GrantsAreReplacedListedAndDeleted) {
  this->AddUser("bob");
  ASSERT_TRUE(this->ids().CreateTeam({"vision", {}, 1}).ok());
  Grant g{ResourceKind::kExperiment, "3", PrincipalKind::kUser, "bob", Permission::kRead};
  ASSERT_TRUE(this->ids().PutGrant(g).ok());
  g.permission = Permission::kManage;
  ASSERT_TRUE(this->ids().PutGrant(g).ok());
  ASSERT_TRUE(this->ids()
                  .PutGrant({ResourceKind::kExperiment, "3", PrincipalKind::kTeam, "vision",
                             Permission::kEdit})
                  .ok());
  ASSERT_TRUE(this->ids()
                  .PutGrant({ResourceKind::kRegisteredModel, "clf", PrincipalKind::kUser, "bob",
                             Permission::kNoPermissions})
                  .ok());
  EXPECT_EQ(this->ids()
                .PutGrant({ResourceKind::kExperiment, "3", PrincipalKind::kUser, "carol",
                           Permission::kRead})
                .code(),
            StatusCode::kNotFound);

  Result<std::vector<Grant>> on = this->ids().GrantsOn(ResourceKind::kExperiment, "3");
  ASSERT_TRUE(on.ok());
  ASSERT_EQ(on->size(), 2u);
  EXPECT_EQ((*on)[0], g);  // users first
  EXPECT_EQ((*on)[1].principal, "vision");
  Result<std::vector<Grant>> of = this->ids().GrantsOf(PrincipalKind::kUser, "bob");
  ASSERT_TRUE(of.ok());
  ASSERT_EQ(of->size(), 2u);
  EXPECT_EQ((*of)[0].resource_kind, ResourceKind::kExperiment);
  EXPECT_EQ((*of)[1].permission, Permission::kNoPermissions);

  ASSERT_TRUE(
      this->ids().DeleteGrant(ResourceKind::kExperiment, "3", PrincipalKind::kTeam, "vision").ok());
  EXPECT_EQ(
      this->ids().DeleteGrant(ResourceKind::kExperiment, "3", PrincipalKind::kTeam, "vision").code(),
      StatusCode::kNotFound);
  ASSERT_TRUE(this->ids().DeleteGrantsOn(ResourceKind::kRegisteredModel, "clf").ok());
  EXPECT_EQ(this->ids().GrantsOf(PrincipalKind::kUser, "bob")->size(), 1u);
}

TYPED_TEST(IdentityStoreTest, DeletingAUserTakesItsTokensMembershipsAndGrants) {
  this->AddUser("bob");
  this->AddUser("alice");
  ASSERT_TRUE(this->ids().CreateTeam({"vision", {}, 1}).ok());
  ASSERT_TRUE(this->ids().AddTeamMember("vision", "bob").ok());
  ASSERT_TRUE(this->ids().AddTeamMember("vision", "alice").ok());
  ASSERT_TRUE(this->ids().CreateToken(this->NewToken("bob", "t", 1)).ok());
  ASSERT_TRUE(this->ids()
                  .PutGrant({ResourceKind::kExperiment, "1", PrincipalKind::kUser, "bob",
                             Permission::kEdit})
                  .ok());
  ASSERT_TRUE(this->ids().DeleteUser("bob").ok());
  EXPECT_TRUE(this->ids().ListTokens("bob")->empty());
  EXPECT_EQ(this->ids().GetTeam("vision")->members, std::vector<std::string>{"alice"});
  EXPECT_TRUE(this->ids().GrantsOn(ResourceKind::kExperiment, "1")->empty());
  // A new account of the same name starts with nothing.
  this->AddUser("bob");
  EXPECT_TRUE(this->ids().TeamsOf("bob")->empty());
}

TYPED_TEST(IdentityStoreTest, AuditLogReadsNewestFirstWithFilters) {
  for (int i = 1; i <= 5; ++i) {
    core::AuditEntry e;
    e.time = i * 10;
    e.actor = i % 2 == 0 ? "alice" : "bob";
    e.source = "127.0.0.1";
    e.action = "POST experiments/delete";
    e.object = "experiment " + std::to_string(i);
    e.outcome = "ok";
    ASSERT_TRUE(this->ids().AppendAudit(e).ok());
  }
  core::AuditEntry async_entry;
  async_entry.time = 60;
  async_entry.actor = "alice";
  async_entry.object = "run abc";
  Status async_status = Internal("not called");
  this->ids().AppendAuditAsync(async_entry, [&](Status s) { async_status = s; });
  // Reading after an async append sees it once its callback ran: wait for it.
  for (int i = 0; i < 1000 && !async_status.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(async_status.ok()) << async_status.ToString();

  core::AuditQuery all;
  Result<std::vector<core::AuditEntry>> entries = this->ids().ReadAudit(all);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 6u);
  EXPECT_EQ((*entries)[0].object, "run abc");
  EXPECT_GT((*entries)[0].id, (*entries)[1].id);

  core::AuditQuery q;
  q.actor = "bob";
  q.since = 20;
  entries = this->ids().ReadAudit(q);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].object, "experiment 5");
  EXPECT_EQ((*entries)[1].object, "experiment 3");

  core::AuditQuery exact;
  exact.object = "experiment 3";
  ASSERT_EQ(this->ids().ReadAudit(exact)->size(), 1u);
  exact.object = "experiment";  // neither exact nor ending in a space: no prefix
  EXPECT_TRUE(this->ids().ReadAudit(exact)->empty());

  core::AuditQuery by_object;
  by_object.object = "experiment ";
  by_object.max_results = 2;
  entries = this->ids().ReadAudit(by_object);
  ASSERT_EQ(entries->size(), 2u);
  by_object.before_id = (*entries)[1].id;
  Result<std::vector<core::AuditEntry>> next = this->ids().ReadAudit(by_object);
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->size(), 2u);
  EXPECT_EQ((*next)[0].object, "experiment 3");
}

TYPED_TEST(IdentityStoreTest, IdentitySurvivesReopening) {
  if (!TypeParam::kPersistent) GTEST_SKIP() << "memory store";
  this->AddUser("bob", true);
  ASSERT_TRUE(this->ids().CreateToken(this->NewToken("bob", "t", 1)).ok());
  this->store_.reset();
  this->store_ = TypeParam::Open(this->dir_.string());
  Result<core::User> bob = this->ids().GetUser("bob");
  ASSERT_TRUE(bob.ok());
  EXPECT_TRUE(bob->is_admin);
  EXPECT_EQ(this->ids().ListTokens("bob")->size(), 1u);
}

}  // namespace
}  // namespace cairn::store
