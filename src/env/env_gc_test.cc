#include "env/env_gc.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "env/project_env.h"
#include "fakes/temp_dir.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;
using Paths = std::set<std::string>;

TEST(EnvironmentsKeptTest, KeepsTheActiveEnvironmentAndTheLastOnesOfTheHistory) {
  ProjectPointers p;
  p.active = "/s/e";
  p.history = {"/s/a", "/s/b", "/s/c", "/s/d", "/s/e"};
  EXPECT_EQ(EnvironmentsKept({p}, 3), (Paths{"/s/c", "/s/d", "/s/e"}));
  EXPECT_EQ(EnvironmentsKept({p}, 1), (Paths{"/s/e"}));
}

TEST(EnvironmentsKeptTest, AnActiveEnvironmentIsKeptEvenWhenOlderThanTheLastOnes) {
  ProjectPointers p;
  p.active = "/s/a";  // after a rollback
  p.history = {"/s/a", "/s/b", "/s/c", "/s/d"};
  EXPECT_EQ(EnvironmentsKept({p}, 2), (Paths{"/s/a", "/s/c", "/s/d"}));
}

TEST(EnvironmentsKeptTest, CountsDistinctEnvironmentsNotSwitches) {
  ProjectPointers p;
  p.history = {"/s/a", "/s/b", "/s/a", "/s/b", "/s/a"};
  EXPECT_EQ(EnvironmentsKept({p}, 2), (Paths{"/s/a", "/s/b"}));
  p.history = {"/s/c", "/s/b", "/s/a", "/s/b", "/s/a"};
  EXPECT_EQ(EnvironmentsKept({p}, 3), (Paths{"/s/a", "/s/b", "/s/c"}));
}

TEST(EnvironmentsKeptTest, KeepZeroKeepsOnlyTheActiveOnes) {
  ProjectPointers p;
  p.active = "/s/b";
  p.history = {"/s/a", "/s/b"};
  EXPECT_EQ(EnvironmentsKept({p}, 0), (Paths{"/s/b"}));
  EXPECT_EQ(EnvironmentsKept({p}, -1), (Paths{"/s/b"}));
  EXPECT_TRUE(EnvironmentsKept({}, 3).empty());
}

TEST(EnvironmentsKeptTest, EveryProjectKeepsItsOwn) {
  ProjectPointers one;
  one.active = "/s/a";
  one.history = {"/s/x", "/s/a"};
  ProjectPointers two;
  two.history = {"/s/y", "/s/b", "/s/c"};
  EXPECT_EQ(EnvironmentsKept({one, two}, 1), (Paths{"/s/a", "/s/c"}));
}

class CollectGarbageTest : public ::testing::Test {
 protected:
  // An environment in the store as a build leaves it, as far as the store reads it.
  std::string AddEnvironment(const std::string& id, const std::string& created) {
    const fs::path dir = dir_ / "store" / id;
    fs::create_directories(dir / ".cairn");
    std::ofstream(dir / ".cairn" / "info.json")
        << R"({"lock_hash": ")" << id << R"(", "created": ")" << created << R"(", "packages": 1})";
    return dir.string();
  }
  std::vector<std::string> Ids() {
    std::vector<std::string> ids;
    const std::vector<StoredEnvironment> listed = store_.List().value();
    for (const StoredEnvironment& e : listed) ids.push_back(e.id);
    return ids;
  }

  fakes::TempDir dir_{"env-gc"};
  EnvStore store_{(dir_ / "store").string()};
};

TEST_F(CollectGarbageTest, RemovesWhatNoKnownProjectKeeps) {
  const std::string a = AddEnvironment("aaaaaaaaaaaaaaaa", "2026-01-01T00:00:00Z");
  const std::string b = AddEnvironment("bbbbbbbbbbbbbbbb", "2026-01-02T00:00:00Z");
  const std::string c = AddEnvironment("cccccccccccccccc", "2026-01-03T00:00:00Z");
  AddEnvironment("dddddddddddddddd", "2026-01-04T00:00:00Z");  // no project used it
  const std::string project = (dir_ / "project").string();
  ProjectEnv pointers(project);
  for (const std::string& path : {a, b, c}) ASSERT_TRUE(pointers.Use(path).ok());
  ASSERT_TRUE(store_.RegisterProject(project).ok());

  std::vector<std::string> announced;
  GcOptions options;
  options.keep = 2;
  options.on_remove = [&](const StoredEnvironment& e) { announced.push_back(e.id); };
  Result<GcReport> report = CollectGarbage(store_, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->removed, 2u);
  EXPECT_EQ(report->kept, 2u);
  EXPECT_EQ(announced, (std::vector<std::string>{"dddddddddddddddd", "aaaaaaaaaaaaaaaa"}));
  EXPECT_EQ(Ids(), (std::vector<std::string>{"cccccccccccccccc", "bbbbbbbbbbbbbbbb"}));
  EXPECT_EQ(pointers.ActivePath(), c);
  EXPECT_EQ(pointers.Rollback().value(), b);  // rollback still works after a gc
}

TEST_F(CollectGarbageTest, ADryRunRemovesNothing) {
  AddEnvironment("aaaaaaaaaaaaaaaa", "2026-01-01T00:00:00Z");
  AddEnvironment("bbbbbbbbbbbbbbbb", "2026-01-02T00:00:00Z");
  size_t announced = 0;
  GcOptions options;
  options.dry_run = true;
  options.on_remove = [&](const StoredEnvironment&) { ++announced; };
  Result<GcReport> report = CollectGarbage(store_, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->removed, 2u);
  EXPECT_EQ(report->kept, 0u);
  EXPECT_EQ(announced, 2u);
  EXPECT_EQ(Ids().size(), 2u);
}

TEST_F(CollectGarbageTest, AnEmptyStoreHasNothingToRemove) {
  Result<GcReport> report = CollectGarbage(store_, GcOptions{});
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->removed, 0u);
  EXPECT_EQ(report->kept, 0u);
}

}  // namespace
}  // namespace cairn::env
