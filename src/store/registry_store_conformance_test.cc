// The RegistryStore contract, run against the registry of every MetadataStore backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/search.h"
#include "fakes/store_backends.h"
#include "store/metadata_store.h"
#include "util/hash.h"

namespace cairn::store {
namespace {

using core::AliasMoveKind;
using core::ModelStage;
using core::ModelVersion;
using core::RegisteredModel;

using fakes::MemoryBackend;
using fakes::SqliteBackend;

template <typename Backend>
class RegistryStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cairn-registry-" + RandomHex(8));
    std::filesystem::create_directories(dir_);
    store_ = Backend::Open(dir_.string());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  RegistryStore& reg() { return store_->registry(); }

  void AddModel(const std::string& name, int64_t time = 100, std::vector<core::Tag> tags = {}) {
    RegisteredModel m;
    m.name = name;
    m.creation_timestamp = time;
    m.last_updated_timestamp = time;
    m.user_id = "alice";
    m.tags = std::move(tags);
    ASSERT_TRUE(reg().CreateRegisteredModel(m).ok());
  }

  int64_t AddVersion(const std::string& name, int64_t time, const std::string& run_id = "r1",
                     std::vector<core::Tag> tags = {}) {
    ModelVersion v;
    v.name = name;
    v.creation_timestamp = time;
    v.last_updated_timestamp = time;
    v.source = "runs:/" + run_id + "/model";
    v.run_id = run_id;
    v.storage_location = "models/" + name + "-" + std::to_string(time);
    v.tags = std::move(tags);
    auto created = reg().CreateModelVersion(v);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? created->version : -1;
  }

  std::vector<std::string> VersionKeys(const std::string& filter,
                                       const std::vector<std::string>& order = {},
                                       int64_t offset = 0, int64_t max_results = 1000) {
    RegistrySearchQuery q;
    auto clauses = core::ParseModelVersionFilter(filter);
    EXPECT_TRUE(clauses.ok()) << clauses.status().ToString();
    q.filter = *clauses;
    auto keys = core::ParseModelVersionOrderBy(order);
    EXPECT_TRUE(keys.ok()) << keys.status().ToString();
    q.order = *keys;
    q.offset = offset;
    q.max_results = max_results;
    auto found = reg().SearchModelVersions(q);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    std::vector<std::string> out;
    for (const ModelVersion& v : *found) out.push_back(v.name + "/" + std::to_string(v.version));
    return out;
  }

  std::vector<std::string> ModelNames(const std::string& filter,
                                      const std::vector<std::string>& order = {},
                                      std::function<bool(std::string_view)> visible = {}) {
    RegistrySearchQuery q;
    q.filter = *core::ParseRegisteredModelFilter(filter);
    q.order = *core::ParseRegisteredModelOrderBy(order);
    q.visible = std::move(visible);
    auto found = reg().SearchRegisteredModels(q);
    EXPECT_TRUE(found.ok()) << found.status().ToString();
    std::vector<std::string> out;
    for (const RegisteredModel& m : *found) out.push_back(m.name);
    return out;
  }

  std::filesystem::path dir_;
  std::unique_ptr<MetadataStore> store_;
};

using Backends = ::testing::Types<MemoryBackend, SqliteBackend>;
TYPED_TEST_SUITE(RegistryStoreTest, Backends);

TYPED_TEST(RegistryStoreTest, ModelsAreCreatedOnceAndNamedInErrors) {
  this->AddModel("churn", 100, {{"team", "ml"}});
  RegisteredModel again;
  again.name = "churn";
  Status dup = this->reg().CreateRegisteredModel(again);
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(dup.message(), "Registered Model (name=churn) already exists.");
  auto got = this->reg().GetRegisteredModel("churn");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->user_id, "alice");
  EXPECT_EQ(got->tags, (std::vector<core::Tag>{{"team", "ml"}}));
  auto missing = this->reg().GetRegisteredModel("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "Registered Model with name=nope not found");
}

TYPED_TEST(RegistryStoreTest, VersionNumbersAreNeverGivenTwice) {
  this->AddModel("m");
  EXPECT_EQ(this->AddVersion("m", 200), 1);
  EXPECT_EQ(this->AddVersion("m", 300), 2);
  ASSERT_TRUE(this->reg().DeleteModelVersion("m", 2, "alice", 400).ok());
  EXPECT_EQ(this->AddVersion("m", 500), 3);
  EXPECT_EQ(this->reg().GetRegisteredModel("m")->last_updated_timestamp, 500);
  auto gone = this->reg().GetModelVersion("m", 2);
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(gone.status().message(), "Model Version (name=m, version=2) not found");
  ModelVersion orphan;
  orphan.name = "nope";
  EXPECT_EQ(this->reg().CreateModelVersion(orphan).status().code(), StatusCode::kNotFound);
}

TYPED_TEST(RegistryStoreTest, RenameCarriesVersionsTagsAndAliases) {
  this->AddModel("old", 100, {{"k", "v"}});
  this->AddModel("other");
  this->AddVersion("old", 200, "r1", {{"vk", "vv"}});
  ASSERT_TRUE(this->reg().SetAlias("old", "champion", 1, "alice", 300).ok());
  EXPECT_EQ(this->reg().RenameRegisteredModel("old", "other", 400).code(),
            StatusCode::kAlreadyExists);
  ASSERT_TRUE(this->reg().RenameRegisteredModel("old", "new", 400).ok());
  EXPECT_EQ(this->reg().GetRegisteredModel("old").status().code(), StatusCode::kNotFound);
  auto m = this->reg().GetRegisteredModel("new");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->tags, (std::vector<core::Tag>{{"k", "v"}}));
  EXPECT_EQ(m->aliases, (std::vector<core::ModelAlias>{{"champion", 1}}));
  EXPECT_EQ(m->last_updated_timestamp, 400);
  EXPECT_EQ(this->reg().GetModelVersion("new", 1)->last_updated_timestamp, 400);
  auto v = this->reg().GetModelVersionByAlias("new", "champion");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->name, "new");
  EXPECT_EQ(v->tags, (std::vector<core::Tag>{{"vk", "vv"}}));
  EXPECT_EQ(this->reg().AliasHistory("new", "champion")->size(), 1u);
}

TYPED_TEST(RegistryStoreTest, TagsOfModelsAndVersions) {
  this->AddModel("m");
  this->AddVersion("m", 200);
  ASSERT_TRUE(this->reg().SetRegisteredModelTag("m", {"a", "1"}).ok());
  ASSERT_TRUE(this->reg().SetRegisteredModelTag("m", {"a", "2"}).ok());
  EXPECT_EQ(this->reg().GetRegisteredModel("m")->tags, (std::vector<core::Tag>{{"a", "2"}}));
  ASSERT_TRUE(this->reg().DeleteRegisteredModelTag("m", "a").ok());
  EXPECT_TRUE(this->reg().GetRegisteredModel("m")->tags.empty());
  // As in MLflow, a tag that is not there is no error; a model that is not there is.
  EXPECT_TRUE(this->reg().DeleteRegisteredModelTag("m", "a").ok());
  EXPECT_EQ(this->reg().DeleteRegisteredModelTag("x", "a").code(), StatusCode::kNotFound);
  ASSERT_TRUE(this->reg().SetModelVersionTag("m", 1, {"b", "x"}).ok());
  EXPECT_EQ(this->reg().GetModelVersion("m", 1)->tags, (std::vector<core::Tag>{{"b", "x"}}));
  ASSERT_TRUE(this->reg().DeleteModelVersionTag("m", 1, "b").ok());
  EXPECT_TRUE(this->reg().GetModelVersion("m", 1)->tags.empty());
  EXPECT_TRUE(this->reg().DeleteModelVersionTag("m", 1, "b").ok());
  EXPECT_EQ(this->reg().DeleteModelVersionTag("m", 2, "b").code(), StatusCode::kNotFound);
  EXPECT_EQ(this->reg().SetModelVersionTag("m", 9, {"b", "x"}).code(), StatusCode::kNotFound);
}

TYPED_TEST(RegistryStoreTest, StagesArchiveExistingAndLatestVersions) {
  this->AddModel("m");
  for (int i = 0; i < 4; ++i) this->AddVersion("m", 200 + i);
  ASSERT_TRUE(
      this->reg().TransitionModelVersionStage("m", 1, ModelStage::kProduction, false, 300).ok());
  ASSERT_TRUE(
      this->reg().TransitionModelVersionStage("m", 2, ModelStage::kProduction, false, 301).ok());
  ASSERT_TRUE(
      this->reg().TransitionModelVersionStage("m", 3, ModelStage::kProduction, true, 302).ok());
  EXPECT_EQ(this->reg().GetModelVersion("m", 1)->current_stage, ModelStage::kArchived);
  EXPECT_EQ(this->reg().GetModelVersion("m", 2)->current_stage, ModelStage::kArchived);
  EXPECT_EQ(this->reg().GetModelVersion("m", 2)->last_updated_timestamp, 302);
  EXPECT_EQ(this->reg().GetModelVersion("m", 3)->current_stage, ModelStage::kProduction);
  auto latest = this->reg().LatestVersions("m");
  ASSERT_TRUE(latest.ok());
  std::vector<std::pair<ModelStage, int64_t>> seen;
  for (const ModelVersion& v : *latest) seen.emplace_back(v.current_stage, v.version);
  // Stages in the order of their lowest version, as MLflow lists them.
  EXPECT_EQ(seen,
            (std::vector<std::pair<ModelStage, int64_t>>{
                {ModelStage::kArchived, 2}, {ModelStage::kProduction, 3}, {ModelStage::kNone, 4}}));
  EXPECT_EQ(this->reg().GetRegisteredModel("m")->last_updated_timestamp, 302);
}

TYPED_TEST(RegistryStoreTest, UpdateVersionChangesOnlyWhatIsGiven) {
  this->AddModel("m");
  this->AddVersion("m", 200);
  ASSERT_TRUE(
      this->reg()
          .UpdateModelVersion("m", 1, std::string("better"), std::nullopt, std::nullopt, 250)
          .ok());
  ASSERT_TRUE(this->reg()
                  .UpdateModelVersion("m", 1, std::nullopt,
                                      core::ModelVersionStatus::kFailedRegistration,
                                      std::string("copy failed"), 260)
                  .ok());
  auto v = this->reg().GetModelVersion("m", 1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->description, "better");
  EXPECT_EQ(v->status, core::ModelVersionStatus::kFailedRegistration);
  EXPECT_EQ(v->status_message, "copy failed");
  EXPECT_EQ(v->last_updated_timestamp, 260);
  EXPECT_EQ(v->source, "runs:/r1/model");
}

TYPED_TEST(RegistryStoreTest, AliasesMoveAndRollBackThroughTheirHistory) {
  this->AddModel("m");
  for (int i = 0; i < 3; ++i) this->AddVersion("m", 200 + i);
  RegistryStore& reg = this->reg();
  EXPECT_EQ(reg.SetAlias("m", "champion", 7, "alice", 300).code(), StatusCode::kNotFound);
  ASSERT_TRUE(reg.SetAlias("m", "champion", 1, "alice", 301).ok());
  EXPECT_EQ(reg.RollbackAlias("m", "champion", "alice", 302).status().code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(reg.SetAlias("m", "champion", 2, "bob", 303).ok());
  ASSERT_TRUE(reg.SetAlias("m", "champion", 3, "bob", 304).ok());
  ASSERT_TRUE(reg.SetAlias("m", "candidate", 3, "bob", 305).ok());
  EXPECT_EQ(reg.GetModelVersion("m", 3)->aliases,
            (std::vector<std::string>{"candidate", "champion"}));

  auto back = reg.RollbackAlias("m", "champion", "carol", 306);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, std::optional<int64_t>(2));
  EXPECT_EQ(reg.GetModelVersionByAlias("m", "champion")->version, 2);
  back = reg.RollbackAlias("m", "champion", "carol", 307);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, std::optional<int64_t>(1));
  EXPECT_EQ(reg.RollbackAlias("m", "champion", "carol", 308).status().code(),
            StatusCode::kFailedPrecondition);

  auto history = reg.AliasHistory("m", "champion");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 5u);
  EXPECT_EQ((*history)[3].kind, AliasMoveKind::kRollback);
  EXPECT_EQ((*history)[3].actor, "carol");
  EXPECT_EQ((*history)[3].version, std::optional<int64_t>(2));
  EXPECT_LT((*history)[0].id, (*history)[4].id);
  EXPECT_EQ(reg.AliasHistory("m", "")->size(), 6u);

  // Deleting a version takes the aliases naming it, and says so in their history.
  ASSERT_TRUE(reg.DeleteModelVersion("m", 3, "dave", 309).ok());
  auto gone = reg.GetModelVersionByAlias("m", "candidate");
  EXPECT_EQ(gone.status().code(), StatusCode::kInvalidArgument);  // MLflow's 400
  EXPECT_EQ(gone.status().message(), "Registered model alias candidate not found.");
  auto candidate = reg.AliasHistory("m", "candidate");
  ASSERT_EQ(candidate->size(), 2u);
  EXPECT_EQ(candidate->back().kind, AliasMoveKind::kDelete);
  EXPECT_EQ(candidate->back().actor, "dave");
  EXPECT_FALSE(candidate->back().version.has_value());
  // A deleted version is passed over: here nothing else lies below.
  Status refused = reg.RollbackAlias("m", "candidate", "dave", 310).status();
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("no earlier version"), std::string::npos) << refused.message();

  ASSERT_TRUE(reg.DeleteAlias("m", "champion", "alice", 311).ok());
  EXPECT_TRUE(reg.DeleteAlias("m", "champion", "alice", 312).ok());  // nothing to remove, no move
  EXPECT_EQ(reg.AliasHistory("m", "champion")->size(), 6u);
  EXPECT_EQ(reg.DeleteAlias("x", "champion", "alice", 312).code(), StatusCode::kNotFound);
  // A delete is undone by a rollback too.
  auto restored = reg.RollbackAlias("m", "champion", "alice", 313);
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(*restored, std::optional<int64_t>(1));
}

TYPED_TEST(RegistryStoreTest, RollbackPassesOverDeletedVersionsAndRepeatedSets) {
  this->AddModel("m");
  for (int i = 0; i < 3; ++i) this->AddVersion("m", 200 + i);
  RegistryStore& reg = this->reg();
  for (int64_t v : {1, 2, 2, 3}) ASSERT_TRUE(reg.SetAlias("m", "prod", v, "ci", 300 + v).ok());
  ASSERT_TRUE(reg.DeleteModelVersion("m", 2, "alice", 310).ok());
  auto back = reg.RollbackAlias("m", "prod", "alice", 311);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, std::optional<int64_t>(1));
  EXPECT_EQ(reg.GetModelVersionByAlias("m", "prod")->version, 1);
}

TYPED_TEST(RegistryStoreTest, DeletingAModelTakesEverythingAndReturnsItsVersions) {
  this->AddModel("m", 100, {{"k", "v"}});
  this->AddVersion("m", 200);
  this->AddVersion("m", 201);
  ASSERT_TRUE(this->reg().SetAlias("m", "a", 2, "alice", 300).ok());
  auto removed = this->reg().DeleteRegisteredModel("m");
  ASSERT_TRUE(removed.ok());
  ASSERT_EQ(removed->size(), 2u);
  EXPECT_EQ((*removed)[1].storage_location, "models/m-201");
  EXPECT_EQ(this->reg().GetRegisteredModel("m").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(this->VersionKeys("").empty());
  // The name is free again, and numbering starts over with the new model.
  this->AddModel("m");
  EXPECT_EQ(this->AddVersion("m", 400), 1);
  EXPECT_TRUE(this->reg().GetRegisteredModel("m")->aliases.empty());
  EXPECT_TRUE(this->reg().AliasHistory("m", "")->empty());
}

TYPED_TEST(RegistryStoreTest, SearchVersionsFiltersOrdersAndPages) {
  this->AddModel("Fraud");
  this->AddModel("fraud-v2");
  this->AddModel("churn");
  this->AddVersion("Fraud", 100, "run-a", {{"env", "prod"}});
  this->AddVersion("Fraud", 300, "run-b");
  this->AddVersion("fraud-v2", 200, "run-a", {{"env", "dev"}});
  this->AddVersion("churn", 300, "run-c");

  // Default: last updated first, then name, then the highest version.
  EXPECT_EQ(this->VersionKeys(""),
            (std::vector<std::string>{"Fraud/2", "churn/1", "fraud-v2/1", "Fraud/1"}));
  EXPECT_EQ(this->VersionKeys("name = 'Fraud'"), (std::vector<std::string>{"Fraud/2", "Fraud/1"}));
  EXPECT_EQ(this->VersionKeys("name LIKE 'fraud%'"), (std::vector<std::string>{"fraud-v2/1"}));
  EXPECT_EQ(this->VersionKeys("name ILIKE 'fraud%'", {"name ASC", "version_number ASC"}),
            (std::vector<std::string>{"Fraud/1", "Fraud/2", "fraud-v2/1"}));
  EXPECT_EQ(this->VersionKeys("run_id IN ('run-a', 'run-c')", {"name ASC"}),
            (std::vector<std::string>{"Fraud/1", "churn/1", "fraud-v2/1"}));
  EXPECT_EQ(this->VersionKeys("run_id NOT IN ('run-a')", {"name DESC"}),
            (std::vector<std::string>{"churn/1", "Fraud/2"}));
  EXPECT_EQ(this->VersionKeys("version_number > 1"), (std::vector<std::string>{"Fraud/2"}));
  EXPECT_EQ(this->VersionKeys("tags.env = 'prod'"), (std::vector<std::string>{"Fraud/1"}));
  // A version without the tag never matches, not even !=.
  EXPECT_EQ(this->VersionKeys("tags.env != 'prod'"), (std::vector<std::string>{"fraud-v2/1"}));
  EXPECT_EQ(this->VersionKeys("source_path = 'runs:/run-c/model'"),
            (std::vector<std::string>{"churn/1"}));
  EXPECT_EQ(this->VersionKeys("name = 'Fraud' AND version_number = 1"),
            (std::vector<std::string>{"Fraud/1"}));
  EXPECT_EQ(this->VersionKeys("", {"creation_timestamp ASC"}, 1, 2),
            (std::vector<std::string>{"fraud-v2/1", "Fraud/2"}));
  EXPECT_TRUE(this->VersionKeys("", {}, 4, 10).empty());
}

TYPED_TEST(RegistryStoreTest, SearchModelsFiltersOrdersAndHidesWhatCallerMayNotRead) {
  this->AddModel("b-model", 200, {{"team", "x"}});
  this->AddModel("a-model", 300);
  this->AddModel("C-model", 100, {{"team", "y"}});
  EXPECT_EQ(this->ModelNames(""), (std::vector<std::string>{"C-model", "a-model", "b-model"}));
  EXPECT_EQ(this->ModelNames("name ILIKE 'c-%'"), (std::vector<std::string>{"C-model"}));
  EXPECT_EQ(this->ModelNames("name LIKE 'c-%'"), (std::vector<std::string>{}));
  EXPECT_EQ(this->ModelNames("tags.team != 'x'"), (std::vector<std::string>{"C-model"}));
  EXPECT_EQ(this->ModelNames("", {"timestamp DESC"}),
            (std::vector<std::string>{"a-model", "b-model", "C-model"}));
  EXPECT_EQ(
      this->ModelNames("", {"name DESC"}, [](std::string_view name) { return name != "a-model"; }),
      (std::vector<std::string>{"b-model", "C-model"}));
  auto with_tags = this->reg().SearchRegisteredModels(RegistrySearchQuery{});
  ASSERT_TRUE(with_tags.ok());
  EXPECT_EQ(with_tags->front().tags, (std::vector<core::Tag>{{"team", "y"}}));
}

TYPED_TEST(RegistryStoreTest, SearchPagesCountOnlyVisibleModels) {
  for (int i = 0; i < 6; ++i) this->AddModel("m" + std::to_string(i));
  RegistrySearchQuery q;
  q.visible = [](std::string_view name) { return name != "m1" && name != "m3"; };
  q.offset = 1;
  q.max_results = 2;
  auto page = this->reg().SearchRegisteredModels(q);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].name, "m2");
  EXPECT_EQ((*page)[1].name, "m4");
}

TYPED_TEST(RegistryStoreTest, EverythingSurvivesReopening) {
  if (!TypeParam::kPersistent) GTEST_SKIP() << "nothing to reopen";
  this->AddModel("m", 100, {{"k", "v"}});
  this->AddVersion("m", 200, "r1", {{"vk", "vv"}});
  ASSERT_TRUE(this->reg().SetAlias("m", "prod", 1, "alice", 300).ok());
  this->store_.reset();
  this->store_ = TypeParam::Open(this->dir_.string());
  auto v = this->reg().GetModelVersionByAlias("m", "prod");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->tags, (std::vector<core::Tag>{{"vk", "vv"}}));
  EXPECT_EQ(v->storage_location, "models/m-200");
  EXPECT_EQ(this->AddVersion("m", 400), 2);
  EXPECT_EQ(*this->reg().ModelOfStorage("models/m-200"), "m");
  EXPECT_EQ(this->reg().ModelOfStorage("models/x").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cairn::store
