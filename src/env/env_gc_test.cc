#include "env/env_gc.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "env/lock.h"
#include "env/project_env.h"
#include "fakes/temp_dir.h"
#include "util/clock.h"

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

TEST_F(CollectGarbageTest, RemovesCachedWheelsNoKeptLockNamesOnceUnusedLongEnough) {
  constexpr int64_t kDay = 24LL * 3600 * 1000;
  const int64_t now = SystemClock()->NowMillis();
  const std::string needed(64, '1'), stale(64, '2'), recent(64, '3'), gone_env(64, '4');
  const fs::path cache = dir_ / "cache";
  // A wheel file and its unpacked tree (read-only, as unpacking leaves it), last used
  // `age_days` ago.
  auto cache_wheel = [&](const std::string& hash, int64_t age_days) {
    const fs::path wheel = cache / "wheels" / hash.substr(0, 2) / (hash + ".whl");
    const fs::path tree = cache / "unpacked" / hash.substr(0, 2) / hash;
    fs::create_directories(wheel.parent_path());
    fs::create_directories(tree / "pkg");
    std::ofstream(wheel) << std::string(100, 'w');
    std::ofstream(tree / "pkg" / "mod.py") << std::string(10, 'm');
    const int64_t when = (now - age_days * kDay) / 1000;
    struct timespec times[2] = {{when, 0}, {when, 0}};
    for (const fs::path& p : {wheel, tree}) utimensat(AT_FDCWD, p.c_str(), times, 0);
    fs::permissions(tree / "pkg", fs::perms::owner_read | fs::perms::owner_exec);
    fs::permissions(tree, fs::perms::owner_read | fs::perms::owner_exec);
  };
  cache_wheel(needed, 90);
  cache_wheel(stale, 90);
  cache_wheel(recent, 2);
  cache_wheel(gone_env, 90);
  // The kept environment's lock names `needed`; the removed one's names `gone_env`.
  auto lock_naming = [](const std::string& hash) {
    Lock lock;
    LockedPackage p;
    p.name = "demo";
    p.version = "1.0";
    p.wheels.push_back({"demo-1.0-py3-none-any.whl", "https://x/demo.whl", "", 100, hash});
    lock.packages.push_back(p);
    return FormatLock(lock);
  };
  const std::string kept = AddEnvironment("aaaaaaaaaaaaaaaa", "2026-01-01T00:00:00Z");
  std::ofstream(fs::path(kept) / ".cairn" / "lock.toml") << lock_naming(needed);
  const std::string dropped = AddEnvironment("bbbbbbbbbbbbbbbb", "2026-01-02T00:00:00Z");
  std::ofstream(fs::path(dropped) / ".cairn" / "lock.toml") << lock_naming(gone_env);
  const std::string project = (dir_ / "project").string();
  ASSERT_TRUE(ProjectEnv(project).Use(kept).ok());
  ASSERT_TRUE(store_.RegisterProject(project).ok());

  GcOptions options;
  options.keep = 0;
  options.wheel_cache = cache.string();
  options.dry_run = true;
  Result<GcReport> report = CollectGarbage(store_, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->wheels_removed, 2u);
  EXPECT_EQ(report->wheel_bytes_freed, 2 * 110);
  EXPECT_TRUE(fs::exists(cache / "wheels" / "22" / (stale + ".whl")));

  options.dry_run = false;
  report = CollectGarbage(store_, options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->removed, 1u);
  EXPECT_EQ(report->wheels_removed, 2u);
  for (const std::string& hash : {stale, gone_env}) {
    EXPECT_FALSE(fs::exists(cache / "wheels" / hash.substr(0, 2) / (hash + ".whl")));
    EXPECT_FALSE(fs::exists(cache / "unpacked" / hash.substr(0, 2) / hash));
  }
  for (const std::string& hash : {needed, recent}) {
    EXPECT_TRUE(fs::exists(cache / "wheels" / hash.substr(0, 2) / (hash + ".whl")));
    EXPECT_TRUE(fs::exists(cache / "unpacked" / hash.substr(0, 2) / hash / "pkg" / "mod.py"));
  }
  for (auto& e : fs::recursive_directory_iterator(cache)) {
    fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add);
  }
}

TEST_F(CollectGarbageTest, AnEmptyStoreHasNothingToRemove) {
  Result<GcReport> report = CollectGarbage(store_, GcOptions{});
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->removed, 0u);
  EXPECT_EQ(report->kept, 0u);
}

}  // namespace
}  // namespace cairn::env
