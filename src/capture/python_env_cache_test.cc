#include "capture/python_env_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "util/hash.h"

namespace cairn::capture {
namespace {

namespace fs = std::filesystem;

TEST(PythonEnvCacheTest, OnlyAShimScriptIsKeyedByTheWorkingDirectory) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3";
  const fs::path root = fs::temp_directory_path() / ("cairn-pyenv-cwd-" + RandomHex(8));
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  const fs::path shim = root / "python3-shim";
  std::ofstream(shim) << "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n";
  fs::permissions(shim, fs::perms::owner_all);
  const std::string cache = (root / "cache").string();
  const fs::path before = fs::current_path();
  auto in = [&](const fs::path& dir, const std::string& python) {
    fs::current_path(dir);
    auto got = SnapshotPythonEnvironmentCached(python, cache);
    fs::current_path(before);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    return got.ok() && got->from_cache;
  };
  // Filled (twice: a snapshot of a directory changed within the last second is not kept).
  for (int i = 0; i < 3 && !in(root / "a", "/usr/bin/python3"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  }
  EXPECT_TRUE(in(root / "b", "/usr/bin/python3")) << "a compiled interpreter: any directory";
  for (int i = 0; i < 3 && !in(root / "a", shim.string()); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  }
  EXPECT_TRUE(in(root / "a", shim.string()));
  EXPECT_FALSE(in(root / "b", shim.string())) << "a shim chooses by the directory";
  fs::remove_all(root);
}

TEST(PythonEnvCacheTest, SecondSnapshotComesFromTheCacheUntilAPackageDirectoryChanges) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3";
  const fs::path root = fs::temp_directory_path() / ("cairn-pyenv-cache-" + RandomHex(8));
  const fs::path site = root / "site";
  fs::create_directories(site / "demo_pkg-1.0.dist-info");
  std::ofstream(site / "demo_pkg-1.0.dist-info" / "METADATA") << "Name: demo-pkg\nVersion: 1.0\n";
  const char* old = std::getenv("PYTHONPATH");
  const std::string saved = old != nullptr ? old : "";
  setenv("PYTHONPATH", site.c_str(), 1);

  const std::string cache = (root / "cache").string();
  auto first = SnapshotPythonEnvironmentCached("/usr/bin/python3", cache);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->from_cache);
  EXPECT_NE(first->snapshot.toml.find("demo-pkg"), std::string::npos);
  // A directory that changed within the last second may have changed during the scan: that
  // snapshot is not kept.
  auto again = SnapshotPythonEnvironmentCached("/usr/bin/python3", cache);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->from_cache);

  const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(site, an_hour_ago);
  auto settled = SnapshotPythonEnvironmentCached("/usr/bin/python3", cache);
  ASSERT_TRUE(settled.ok());
  EXPECT_FALSE(settled->from_cache);
  auto second = SnapshotPythonEnvironmentCached("/usr/bin/python3", cache);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->from_cache);
  EXPECT_EQ(second->snapshot.toml, first->snapshot.toml);
  EXPECT_EQ(second->snapshot.hash, first->snapshot.hash);
  EXPECT_EQ(second->package_count, first->package_count);
  EXPECT_EQ(second->snapshot.interpreter.version, first->snapshot.interpreter.version);

  // Installing a distribution changes its directory: the cache is not used.
  fs::create_directories(site / "other-2.0.dist-info");
  std::ofstream(site / "other-2.0.dist-info" / "METADATA") << "Name: other\nVersion: 2.0\n";
  auto third = SnapshotPythonEnvironmentCached("/usr/bin/python3", cache);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->from_cache);
  EXPECT_NE(third->snapshot.hash, first->snapshot.hash);
  EXPECT_EQ(third->package_count, first->package_count + 1);

  // Another PYTHONPATH is another entry.
  setenv("PYTHONPATH", (root / "elsewhere").c_str(), 1);
  auto fourth = SnapshotPythonEnvironmentCached("/usr/bin/python3", cache);
  ASSERT_TRUE(fourth.ok());
  EXPECT_FALSE(fourth->from_cache);

  if (old != nullptr) {
    setenv("PYTHONPATH", saved.c_str(), 1);
  } else {
    unsetenv("PYTHONPATH");
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace cairn::capture
