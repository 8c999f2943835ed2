#include "env/project_env.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "util/hash.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

class ProjectEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("cairn-project-env-" + RandomHex(8));
    fs::create_directories(root_ / "project" / "src");
    std::ofstream(root_ / "project" / "cairn.yaml") << "environment: {}\n";
    for (const char* id : {"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"}) {
      fs::create_directories(root_ / "store" / id / ".cairn");
      std::ofstream(root_ / "store" / id / ".cairn" / "info.json")
          << R"({"lock_hash": ")" << id << R"(ff", "created": "2026-12-02T10:00:00Z",
                 "python": "3.11.2", "packages": 3})";
    }
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Env(const char* id) const { return (root_ / "store" / id).string(); }
  fs::path root_;
};

TEST_F(ProjectEnvTest, UseSwitchesRollbackGoesBack) {
  ProjectEnv project((root_ / "project").string());
  EXPECT_FALSE(project.ActivePath().has_value());
  EXPECT_EQ(project.Rollback().status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(project.Use(Env("aaaaaaaaaaaaaaaa")).ok());
  ASSERT_TRUE(project.Use(Env("bbbbbbbbbbbbbbbb")).ok());
  EXPECT_EQ(project.ActivePath(), Env("bbbbbbbbbbbbbbbb"));
  Result<std::string> back = project.Rollback();
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, Env("aaaaaaaaaaaaaaaa"));
  EXPECT_EQ(project.ActivePath(), Env("aaaaaaaaaaaaaaaa"));
  EXPECT_EQ(project.History().size(), 3u);
  // An environment removed from the store is not rolled back to.
  fs::remove_all(Env("bbbbbbbbbbbbbbbb"));
  EXPECT_EQ(project.Rollback().status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(ProjectEnvTest, RecordsRunsAndReadsInfo) {
  ASSERT_TRUE(RecordEnvironmentRun(Env("aaaaaaaaaaaaaaaa"), "run1").ok());
  ASSERT_TRUE(RecordEnvironmentRun(Env("aaaaaaaaaaaaaaaa"), "run2").ok());
  Result<StoredEnvironment> e = LoadStoredEnvironment(Env("aaaaaaaaaaaaaaaa"));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->id, "aaaaaaaaaaaaaaaa");
  EXPECT_EQ(e->lock_hash, "aaaaaaaaaaaaaaaaff");
  EXPECT_EQ(e->python, "3.11.2");
  EXPECT_EQ(e->packages, 3u);
  EXPECT_EQ(e->runs, (std::vector<std::string>{"run1", "run2"}));
}

TEST_F(ProjectEnvTest, TheProjectIsTheNearestDirectoryWithCairnYaml) {
  EXPECT_EQ(FindProjectDir((root_ / "project" / "src").string()), (root_ / "project").string());
  EXPECT_EQ(FindProjectDir((root_ / "store").string()), (root_ / "store").string());
}

}  // namespace
}  // namespace cairn::env
