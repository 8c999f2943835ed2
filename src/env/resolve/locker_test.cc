#include "env/resolve/locker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "env/lock.h"
#include "env/manifest.h"
#include "fakes/shell.h"
#include "fakes/temp_dir.h"
#include "fakes/wheels.h"
#include "util/hash.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;
using fakes::Slurp;
using fakes::WriteZip;
using ::testing::HasSubstr;

constexpr char kX86[] = "cp311-manylinux_2_17_x86_64";
constexpr char kArm[] = "cp311-manylinux_2_17_aarch64";

// Locks of a project whose only package source is a find-links directory of wheels written
// here. The spec names its Python and platforms and the interpreter probed is missing, so the
// locks depend on nothing of this host.
class LockerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "wheels");
    spec_.dir = dir_.str();
    spec_.python = "3.11";
    spec_.platforms = {kX86};
    spec_.sources = {{PackageSourceSpec::Kind::kFindLinks, "wheels"}};
    options_.python = (dir_ / "no-such-python").string();
    options_.cache_root = (dir_ / "cache").string();
    options_.lock_dir = dir_.str();
  }

  // Writes wheels/<file> for `name` `version`, whose METADATA has a Requires-Dist line for each
  // of `requires_dist`; `file` defaults to the py3-none-any wheel name.
  fs::path AddWheel(const std::string& name, const std::string& version,
                    const std::vector<std::string>& requires_dist = {}, std::string file = "") {
    if (file.empty()) file = name + "-" + version + "-py3-none-any.whl";
    const std::string dist_info = name + "-" + version + ".dist-info";
    std::string metadata = "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n";
    for (const std::string& r : requires_dist) metadata += "Requires-Dist: " + r + "\n";
    const fs::path path = dir_ / "wheels" / file;
    WriteZip(path, {{name + "/__init__.py", ""},
                    {dist_info + "/METADATA", metadata},
                    {dist_info + "/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"},
                    {dist_info + "/RECORD", ""}});
    return path;
  }

  Result<Lock> LockIt() { return LockEnvironment(spec_, options_); }

  fakes::TempDir dir_{"locker"};
  EnvironmentSpec spec_;
  LockOptions options_;
};

TEST_F(LockerTest, PinsTheNewestVersionToOneWheelWithItsSizeAndHash) {
  AddWheel("demo", "1.0");
  const fs::path newest = AddWheel("demo", "2.0");
  spec_.requirements = {"Demo"};
  Result<Lock> lock = LockIt();
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  ASSERT_EQ(lock->packages.size(), 1u);
  const LockedPackage& demo = lock->packages[0];
  EXPECT_EQ(demo.name, "demo");
  EXPECT_EQ(demo.version, "2.0");
  EXPECT_TRUE(demo.requested);
  ASSERT_EQ(demo.wheels.size(), 1u);
  EXPECT_EQ(demo.wheels[0].name, "demo-2.0-py3-none-any.whl");
  EXPECT_EQ(demo.wheels[0].path, "wheels/demo-2.0-py3-none-any.whl");
  EXPECT_EQ(demo.wheels[0].sha256, Sha256Hex(Slurp(newest)));
  EXPECT_EQ(demo.wheels[0].size, static_cast<int64_t>(fs::file_size(newest)));

  EXPECT_EQ(lock->python, "3.11");
  EXPECT_EQ(lock->requires_python, "==3.11.*");
  EXPECT_EQ(lock->target, kX86);
  ASSERT_EQ(lock->environments.size(), 1u);
  EXPECT_THAT(lock->environments[0], HasSubstr("platform_machine == \"x86_64\""));
  EXPECT_EQ(lock->requirements, spec_.requirements);
  EXPECT_EQ(lock->sources, (std::vector<std::string>{"find-links:wheels"}));
  EXPECT_EQ(lock->inputs_hash, spec_.InputsHash());
  EXPECT_TRUE(lock->host.glibc.empty());  // a pure-Python wheel needs no particular glibc
}

TEST_F(LockerTest, DependenciesAreLockedAndNamed) {
  AddWheel("app", "1.0", {"lib<2"});
  AddWheel("lib", "1.0");
  AddWheel("lib", "2.0");
  spec_.requirements = {"app"};
  Result<Lock> lock = LockIt();
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  ASSERT_EQ(lock->packages.size(), 2u);
  EXPECT_EQ(lock->packages[0].name, "app");
  EXPECT_TRUE(lock->packages[0].requested);
  EXPECT_EQ(lock->packages[0].dependencies, (std::vector<std::string>{"lib"}));
  EXPECT_EQ(lock->packages[1].name, "lib");
  EXPECT_EQ(lock->packages[1].version, "1.0");
  EXPECT_FALSE(lock->packages[1].requested);
}

TEST_F(LockerTest, TheSameInputsGiveTheSameLock) {
  AddWheel("app", "1.0", {"lib"});
  AddWheel("lib", "1.0");
  spec_.requirements = {"app"};
  Result<Lock> first = LockIt();
  Result<Lock> second = LockIt();
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(FormatLock(*first), FormatLock(*second));
}

TEST_F(LockerTest, AConflictIsExplainedAsChainsOfRequirements) {
  AddWheel("app", "1.0", {"lib<2"});
  AddWheel("lib", "1.0");
  AddWheel("lib", "2.0");
  spec_.requirements = {"app", "lib>=2"};
  Result<Lock> lock = LockIt();
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(lock.status().message(), HasSubstr("no version of lib fits"));
  EXPECT_THAT(lock.status().message(), HasSubstr("required by app 1.0"));
}

TEST_F(LockerTest, APackageNoSourceHasIsNamed) {
  spec_.requirements = {"nothing-here"};
  Result<Lock> lock = LockIt();
  ASSERT_FALSE(lock.ok());
  EXPECT_THAT(lock.status().message(), HasSubstr("nothing-here"));
}

TEST_F(LockerTest, TheGlibcOfTheChosenWheelsBecomesTheHostsFloor) {
  AddWheel("fast", "1.0", {}, "fast-1.0-cp311-cp311-manylinux_2_28_x86_64.whl");
  AddWheel("old", "1.0", {}, "old-1.0-cp311-cp311-manylinux2014_x86_64.whl");
  spec_.platforms = {"cp311-manylinux_2_36_x86_64"};
  spec_.requirements = {"fast", "old"};
  Result<Lock> lock = LockIt();
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  EXPECT_EQ(lock->host.glibc, "2.28");

  spec_.host.glibc = "2.31";  // what the spec says wins
  lock = LockIt();
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  EXPECT_EQ(lock->host.glibc, "2.31");
}

TEST_F(LockerTest, ALockForTwoPlatformsHoldsTheWheelOfEach) {
  AddWheel("fast", "1.0", {}, "fast-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
  AddWheel("fast", "1.0", {}, "fast-1.0-cp311-cp311-manylinux_2_17_aarch64.whl");
  AddWheel("demo", "1.0");
  spec_.platforms = {kX86, kArm};
  spec_.requirements = {"fast", "demo"};
  Result<Lock> lock = LockIt();
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  EXPECT_EQ(lock->target, std::string(kX86) + " " + kArm);
  EXPECT_EQ(lock->environments.size(), 2u);
  ASSERT_EQ(lock->packages.size(), 2u);
  EXPECT_EQ(lock->packages[0].name, "demo");
  EXPECT_EQ(lock->packages[0].wheels.size(), 1u);  // one wheel serves both
  ASSERT_EQ(lock->packages[1].wheels.size(), 2u);
  EXPECT_EQ(lock->packages[1].wheels[0].name, "fast-1.0-cp311-cp311-manylinux_2_17_aarch64.whl");
  EXPECT_EQ(lock->packages[1].wheels[1].name, "fast-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
}

TEST_F(LockerTest, PlatformsThatResolveToOtherVersionsAreRefused) {
  AddWheel("fast", "1.0", {}, "fast-1.0-cp311-cp311-manylinux_2_17_aarch64.whl");
  AddWheel("fast", "1.0", {}, "fast-1.0-cp311-cp311-manylinux_2_17_x86_64.whl");
  AddWheel("fast", "2.0", {}, "fast-2.0-cp311-cp311-manylinux_2_17_x86_64.whl");
  spec_.platforms = {kX86, kArm};
  spec_.requirements = {"fast"};
  Result<Lock> lock = LockIt();
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(lock.status().message(),
              HasSubstr("package fast resolves to 2.0 for " + std::string(kX86) + " but to 1.0"));
}

TEST_F(LockerTest, PlatformsThatNeedOtherPackagesAreRefused) {
  AddWheel("app", "1.0", {"extra; platform_machine == \"x86_64\""});
  AddWheel("extra", "1.0");
  spec_.platforms = {kX86, kArm};
  spec_.requirements = {"app"};
  Result<Lock> lock = LockIt();
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(lock.status().message(), HasSubstr("need different sets of packages"));
}

TEST_F(LockerTest, InputsThatCannotBeLockedAreInvalidArguments) {
  AddWheel("demo", "1.0");
  EXPECT_EQ(LockIt().status().code(), StatusCode::kInvalidArgument);  // no requirements

  spec_.requirements = {"demo >"};
  Result<Lock> malformed = LockIt();
  EXPECT_EQ(malformed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(malformed.status().message(), HasSubstr("environment.requirements"));

  spec_.requirements = {"demo"};
  spec_.platforms = {"cp312-manylinux_2_17_x86_64"};
  Result<Lock> other_python = LockIt();
  EXPECT_EQ(other_python.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(other_python.status().message(), HasSubstr("is not for Python 3.11"));

  spec_.platforms = {kX86};
  spec_.sources.clear();
  EXPECT_EQ(LockIt().status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LockerTest, WithoutAPythonVersionTheInterpreterMustAnswer) {
  AddWheel("demo", "1.0");
  spec_.requirements = {"demo"};
  spec_.python.clear();
  Result<Lock> lock = LockIt();
  ASSERT_FALSE(lock.ok());
  EXPECT_THAT(lock.status().message(), HasSubstr("no Python version in cairn.yaml"));
}

TEST_F(LockerTest, AMissingFindLinksDirectoryIsNotFound) {
  spec_.requirements = {"demo"};
  spec_.sources = {{PackageSourceSpec::Kind::kFindLinks, "nowhere"}};
  Result<Lock> lock = LockIt();
  EXPECT_EQ(lock.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(lock.status().message(), HasSubstr("nowhere"));
}

}  // namespace
}  // namespace cairn::env
