#include "env/env_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "env/install/venv_layout.h"
#include "env/lock.h"
#include "env/project_env.h"
#include "fakes/files.h"
#include "fakes/shell.h"
#include "fakes/temp_dir.h"
#include "fakes/wheels.h"
#include "util/file.h"
#include "util/hash.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;
using fakes::BuildWheel;
using fakes::RunShell;
using fakes::ShellRun;
using fakes::Slurp;
using fakes::WheelSpec;
using ::testing::HasSubstr;

using fakes::kSystemPython;

WheelSpec Distribution(const std::string& name, const std::string& version) {
  WheelSpec s;
  s.name = name;
  s.version = version;
  s.files = {{name + "/__init__.py", "__version__ = \"" + version + "\"\n"}};
  return s;
}

// Environments built from locks written here, of wheels built here, into a store and a wheel
// cache of the test's own.
class EnvStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kSystemPython)) GTEST_SKIP() << kSystemPython << " is not installed";
    Result<VenvLayout> probe = VenvLayoutFor((dir_ / "probe").string(), kSystemPython);
    ASSERT_TRUE(probe.ok()) << probe.status().message();
    python_xy_ = std::to_string(probe->python_major) + "." + std::to_string(probe->python_minor);
    fs::create_directories(dir_ / "wheels");
    options_.python = kSystemPython;
    options_.cache_root = (dir_ / "cache").string();
    options_.progress = [this](const std::string& line) { progress_.push_back(line); };
  }

  // The lock entry of `spec`'s wheel, built into wheels/ and named relative to the lock.
  LockedPackage Package(const WheelSpec& spec) {
    const fs::path wheel = BuildWheel(dir_ / "wheels", spec);
    const std::string bytes = Slurp(wheel);
    LockedPackage p;
    p.name = spec.name;
    p.version = spec.version;
    p.requested = true;
    LockedWheel w;
    w.name = wheel.filename().string();
    w.path = "wheels/" + w.name;
    w.size = static_cast<int64_t>(bytes.size());
    w.sha256 = Sha256Hex(bytes);
    p.wheels.push_back(w);
    return p;
  }

  std::string WriteLock(const std::string& file, std::vector<LockedPackage> packages,
                        const std::string& base = "") {
    Lock lock;
    lock.python = python_xy_;
    lock.requires_python = "==" + python_xy_ + ".*";
    lock.packages = std::move(packages);
    lock.base = base;
    const fs::path path = dir_ / file;
    EXPECT_TRUE(WriteFileAtomic(path, FormatLock(lock)).ok());
    return path.string();
  }

  std::string SitePackages(const std::string& prefix) const {
    return prefix + "/lib/python" + python_xy_ + "/site-packages";
  }

  // What `code` prints when the environment's interpreter runs it.
  std::string RunPython(const std::string& prefix, const std::string& code) {
    ShellRun run = RunShell("'" + prefix + "/bin/python' -c '" + code + "'");
    EXPECT_EQ(run.code, 0) << run.out;
    return run.out;
  }

  fakes::TempDir dir_{"env-store"};
  EnvStore store_{(dir_ / "store").string()};
  BuildOptions options_;
  std::string python_xy_;
  std::vector<std::string> progress_;
};

TEST_F(EnvStoreTest, BuildsTheLockedPackagesIntoAnEnvironmentNamedByTheLock) {
  const std::string lock = WriteLock("pylock.toml", {Package(Distribution("demo", "1.0"))});
  Result<BuiltEnvironment> built = store_.Build(lock, options_);
  ASSERT_TRUE(built.ok()) << built.status().message();
  const std::string text = Slurp(lock);
  EXPECT_FALSE(built->already_built);
  EXPECT_EQ(built->lock_hash, LockHash(text));
  EXPECT_EQ(built->id, LockHash(text).substr(0, 16));
  EXPECT_EQ(built->path, store_.PathOf(built->id));
  EXPECT_EQ(built->packages, 1u);
  EXPECT_GE(built->files, 1u);
  EXPECT_EQ(built->downloaded, 1u);
  EXPECT_EQ(RunPython(built->path, "import demo; print(demo.__version__)"), "1.0\n");
  EXPECT_EQ(Slurp(fs::path(built->path) / ".cairn" / "lock.toml"), text);
  EXPECT_NE(std::find(progress_.begin(), progress_.end(), "installing 1/1 packages"),
            progress_.end());

  Result<std::vector<StoredEnvironment>> listed = store_.List();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].id, built->id);
  EXPECT_EQ((*listed)[0].packages, 1u);
  EXPECT_THAT((*listed)[0].python, ::testing::StartsWith(python_xy_ + "."));
}

TEST_F(EnvStoreTest, ALockBuiltBeforeIsReusedAsItIs) {
  const std::string lock = WriteLock("pylock.toml", {Package(Distribution("demo", "1.0"))});
  Result<BuiltEnvironment> first = store_.Build(lock, options_);
  ASSERT_TRUE(first.ok()) << first.status().message();
  Result<BuiltEnvironment> again = store_.Build(lock, options_);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->already_built);
  EXPECT_EQ(again->path, first->path);
  EXPECT_EQ(again->packages, 1u);
  EXPECT_EQ(store_.List()->size(), 1u);

  // Another store on the same wheel cache downloads nothing.
  EnvStore other((dir_ / "other-store").string());
  Result<BuiltEnvironment> elsewhere = other.Build(lock, options_);
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status().message();
  EXPECT_FALSE(elsewhere->already_built);
  EXPECT_EQ(elsewhere->downloaded, 0u);
  EXPECT_EQ(elsewhere->id, first->id);
}

TEST_F(EnvStoreTest, AWheelWhoseHashIsNotTheLocksFailsTheBuildAndLeavesNothing) {
  LockedPackage demo = Package(Distribution("demo", "1.0"));
  demo.wheels[0].sha256 = Sha256Hex("other bytes");
  const std::string lock = WriteLock("pylock.toml", {demo});
  Result<BuiltEnvironment> built = store_.Build(lock, options_);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(built.status().message(), HasSubstr("demo 1.0"));
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(store_.root())) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_TRUE(left.empty()) << left.front();
}

TEST_F(EnvStoreTest, ALockForAnotherPythonIsRefused) {
  Lock lock;
  lock.python = "2.7";
  lock.packages = {Package(Distribution("demo", "1.0"))};
  ASSERT_TRUE(WriteFileAtomic(dir_ / "pylock.toml", FormatLock(lock)).ok());
  Result<BuiltEnvironment> built = store_.Build((dir_ / "pylock.toml").string(), options_);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(built.status().message(), HasSubstr("the lock is for Python 2.7"));
  EXPECT_TRUE(store_.List()->empty());
}

TEST_F(EnvStoreTest, EveryPackageWithoutAWheelForThisHostIsNamed) {
  LockedPackage windows = Package(Distribution("demo", "1.0"));
  windows.wheels[0].name = "demo-1.0-cp27-cp27m-win32.whl";
  LockedPackage mac = Package(Distribution("other", "2.0"));
  mac.wheels[0].name = "other-2.0-cp311-cp311-macosx_11_0_arm64.whl";
  const std::string lock = WriteLock("pylock.toml", {windows, mac});
  Result<BuiltEnvironment> built = store_.Build(lock, options_);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(built.status().message(), HasSubstr("for: demo 1.0, other 2.0; lock it for"));
}

TEST_F(EnvStoreTest, APackageWhoseMarkerDoesNotHoldHereIsLeftOut) {
  LockedPackage windows_only = Package(Distribution("winonly", "1.0"));
  windows_only.marker = "sys_platform == \"win32\"";
  const std::string lock =
      WriteLock("pylock.toml", {Package(Distribution("demo", "1.0")), windows_only});
  Result<BuiltEnvironment> built = store_.Build(lock, options_);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built->packages, 1u);
  EXPECT_TRUE(fs::exists(SitePackages(built->path) + "/demo/__init__.py"));
  EXPECT_FALSE(fs::exists(SitePackages(built->path) + "/winonly"));
}

TEST_F(EnvStoreTest, ABaseEnvironmentIsBuiltFirstAndItsPackagesAreNotInstalledAgain) {
  WriteLock("base.toml",
            {Package(Distribution("shared", "1.0")), Package(Distribution("basic", "1.0"))});
  const std::string lock = WriteLock(
      "pylock.toml", {Package(Distribution("shared", "1.0")), Package(Distribution("app", "1.0"))},
      "base.toml");
  Result<BuiltEnvironment> built = store_.Build(lock, options_);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built->packages, 1u);  // app; shared 1.0 comes from the base
  EXPECT_FALSE(fs::exists(SitePackages(built->path) + "/shared"));
  ASSERT_EQ(store_.List()->size(), 2u);
  EXPECT_EQ(RunPython(built->path, "import app, basic, shared; print(shared.__version__)"),
            "1.0\n");
  EXPECT_THAT(progress_, ::testing::Contains(HasSubstr("building the base environment")));
}

TEST_F(EnvStoreTest, APackageAtAnotherVersionShadowsTheBases) {
  WriteLock("base.toml", {Package(Distribution("shared", "1.0"))});
  const std::string lock =
      WriteLock("pylock.toml", {Package(Distribution("shared", "2.0"))}, "base.toml");
  Result<BuiltEnvironment> built = store_.Build(lock, options_);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built->packages, 1u);
  EXPECT_EQ(RunPython(built->path, "import shared; print(shared.__version__)"), "2.0\n");
}

TEST_F(EnvStoreTest, TwoLocksGiveTwoEnvironmentsAProjectSwitchesBetween) {
  Result<BuiltEnvironment> one =
      store_.Build(WriteLock("one.toml", {Package(Distribution("demo", "1.0"))}), options_);
  Result<BuiltEnvironment> two =
      store_.Build(WriteLock("two.toml", {Package(Distribution("demo", "2.0"))}), options_);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_TRUE(two.ok()) << two.status().message();
  EXPECT_NE(one->id, two->id);
  ProjectEnv project((dir_ / "project").string());
  ASSERT_TRUE(project.Use(one->path).ok());
  ASSERT_TRUE(project.Use(two->path).ok());
  EXPECT_EQ(RunPython(*project.ActivePath(), "import demo; print(demo.__version__)"), "2.0\n");
  Result<std::string> back = project.Rollback();
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, one->path);
  EXPECT_EQ(RunPython(*project.ActivePath(), "import demo; print(demo.__version__)"), "1.0\n");
}

TEST_F(EnvStoreTest, ABuildKilledHalfwayIsSweptLaterButALiveOneIsNot) {
  const fs::path stale = dir_ / "store" / ".build-0123456789abcdef-aaaaaa";
  const fs::path live = dir_ / "store" / ".build-fedcba9876543210-bbbbbb";
  fs::create_directories(stale);
  fs::create_directories(live);
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(2));
  ASSERT_TRUE(
      store_.Build(WriteLock("pylock.toml", {Package(Distribution("demo", "1.0"))}), options_)
          .ok());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
}

// Finding, removing and registering need no interpreter: environments as the store reads them.
class EnvStoreRecordsTest : public ::testing::Test {
 protected:
  void AddEnvironment(const std::string& id, const std::string& created) {
    const fs::path dir = dir_ / "store" / id;
    fs::create_directories(dir / ".cairn");
    std::ofstream(dir / ".cairn" / "info.json")
        << R"({"lock_hash": ")" << id << R"(", "created": ")" << created << R"("})";
  }
  fakes::TempDir dir_{"env-store-records"};
  EnvStore store_{(dir_ / "store").string()};
};

TEST_F(EnvStoreRecordsTest, FindTakesAnIdOrAUniquePrefix) {
  AddEnvironment("abc0000000000000", "2026-01-01T00:00:00Z");
  AddEnvironment("abd0000000000000", "2026-01-02T00:00:00Z");
  EXPECT_EQ(store_.Find("abc0000000000000")->id, "abc0000000000000");
  EXPECT_EQ(store_.Find("abd")->id, "abd0000000000000");
  EXPECT_EQ(store_.Find("ab").status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(store_.Find("ab").status().message(), HasSubstr("ambiguous"));
  EXPECT_EQ(store_.Find("ff").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_.Find("").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(EnvStoreRecordsTest, ListIsNewestFirstAndRemoveTakesOneOut) {
  AddEnvironment("aaaaaaaaaaaaaaaa", "2026-01-01T00:00:00Z");
  AddEnvironment("bbbbbbbbbbbbbbbb", "2026-01-03T00:00:00Z");
  AddEnvironment("cccccccccccccccc", "2026-01-02T00:00:00Z");
  fs::create_directories(dir_ / "store" / "not-an-environment");
  std::vector<std::string> ids;
  const std::vector<StoredEnvironment> listed = store_.List().value();
  for (const StoredEnvironment& e : listed) ids.push_back(e.id);
  EXPECT_EQ(ids,
            (std::vector<std::string>{"bbbbbbbbbbbbbbbb", "cccccccccccccccc", "aaaaaaaaaaaaaaaa"}));
  ASSERT_TRUE(store_.Remove("cccccccccccccccc").ok());
  EXPECT_EQ(store_.List()->size(), 2u);
  EXPECT_FALSE(fs::exists(dir_ / "store" / "cccccccccccccccc"));
  EXPECT_FALSE(store_.Remove("cccccccccccccccc").ok());
}

TEST_F(EnvStoreRecordsTest, RunsAndProjectsAreRecordedOnce) {
  AddEnvironment("aaaaaaaaaaaaaaaa", "2026-01-01T00:00:00Z");
  ASSERT_TRUE(store_.RecordRun("aaaaaaaaaaaaaaaa", "run1").ok());
  ASSERT_TRUE(store_.RecordRun("aaaaaaaaaaaaaaaa", "run2").ok());
  EXPECT_EQ(store_.Find("aaaa")->runs, (std::vector<std::string>{"run1", "run2"}));
  ASSERT_TRUE(store_.RegisterProject("/p/one").ok());
  ASSERT_TRUE(store_.RegisterProject("/p/two").ok());
  ASSERT_TRUE(store_.RegisterProject("/p/one").ok());
  EXPECT_EQ(store_.Projects(), (std::vector<std::string>{"/p/one", "/p/two"}));
}

}  // namespace
}  // namespace cairn::env
