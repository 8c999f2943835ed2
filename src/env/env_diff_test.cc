#include "env/env_diff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "env/host_facts.h"
#include "env/python_env.h"

namespace cairn::env {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Lock TwoPackages(const std::string& beta_version) {
  Lock lock;
  lock.python = "3.11";
  lock.target = "cp311-manylinux_2_36_x86_64";
  for (const auto& [name, version] :
       std::vector<std::pair<std::string, std::string>>{{"alpha", "2.0"}, {"beta", beta_version}}) {
    LockedPackage p;
    p.name = name;
    p.version = version;
    p.wheels = {
        {name + "-" + version + "-py3-none-any.whl", "", "w/x.whl", 1, std::string(64, name[0])}};
    lock.packages.push_back(p);
  }
  return lock;
}

TEST(EnvDiffTest, PackagesInterpreterAndHost) {
  Lock a = TwoPackages("1.5");
  Lock b = TwoPackages("2.1");
  b.packages.erase(b.packages.begin());  // no alpha
  LockedPackage gamma;
  gamma.name = "gamma";
  gamma.version = "2.0";
  gamma.wheels = {{"gamma-2.0-py3-none-any.whl", "", "g.whl", 1, std::string(64, 'c')}};
  b.packages.push_back(gamma);
  b.host.cuda = "12";
  b.python = "3.12";
  auto da = DescribeLockText(FormatLock(a), "a");
  auto db = DescribeLockText(FormatLock(b), "b");
  ASSERT_TRUE(da.ok() && db.ok());
  EnvDiff d = DiffEnvironments(*da, *db);
  EXPECT_FALSE(d.empty());
  const std::string text = FormatEnvDiff(d, "a", "b", false);
  EXPECT_THAT(text, HasSubstr("+ gamma 2.0\n"));
  EXPECT_THAT(text, HasSubstr("- alpha 2.0\n"));
  EXPECT_THAT(text, HasSubstr("~ beta 1.5 -> 2.1\n"));
  EXPECT_THAT(text, HasSubstr("~ python 3.11 -> 3.12\n"));
  EXPECT_THAT(text, HasSubstr("~ cuda (none) -> 12\n"));
  EXPECT_THAT(EnvDiffJson(d), HasSubstr(R"("added":[{"name":"gamma","version":"2.0"}])"));
  EXPECT_TRUE(DiffEnvironments(*da, *da).empty());
  EXPECT_THAT(FormatEnvDiff(DiffEnvironments(*da, *da), "a", "a", false),
              HasSubstr("no differences"));
}

TEST(EnvDiffTest, ALockAgainstASnapshotOfWhatWasInstalled) {
  InterpreterInfo interpreter;
  interpreter.executable = "/env/bin/python";
  interpreter.version = "3.11.2";
  interpreter.implementation = "cpython";
  InstalledDistribution alpha;
  alpha.name = alpha.normalized_name = "alpha";
  alpha.version = "2.0";
  InstalledDistribution beta = alpha;
  beta.name = beta.normalized_name = "beta";
  beta.version = "1.6";
  auto snapshot = DescribeLockText(SnapshotToml(interpreter, {alpha, beta}), "run");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  auto lock = DescribeLockText(FormatLock(TwoPackages("1.5")), "lock");
  ASSERT_TRUE(lock.ok());
  EnvDiff d = DiffEnvironments(*lock, *snapshot);
  ASSERT_EQ(d.changed.size(), 1u);
  EXPECT_EQ(d.changed[0].name, "beta");
  EXPECT_EQ(d.changed[0].to, "1.6");
  EXPECT_TRUE(d.added.empty());
  EXPECT_TRUE(d.removed.empty());
  EXPECT_EQ(DescribeLockText("x = 1\n", "t").status().code(), StatusCode::kInvalidArgument);
}

HostFacts K80Host() {
  HostFacts host;
  host.os = "linux";
  host.glibc = "2.31";
  host.hostname = "old-node";
  host.cpu_cores = 32;
  host.cpu_flags = {"avx2", "fma"};
  host.driver_version = "470.199.02";
  host.cuda_driver_version = "11.4";
  host.gpus = {{0, "Tesla K80", "GPU-a", 11441, "", "470.199.02"}};
  return host;
}

TEST(EnvDiffTest, SnapshotsOfTwoHostsShowHowTheHostsDiffer) {
  InterpreterInfo interpreter;
  interpreter.version = "3.11.2";
  const std::string python = SnapshotToml(interpreter, {}) + "\n";
  HostFacts old_host = K80Host();
  HostFacts new_host = old_host;
  new_host.hostname = "new-node";    // not compared
  new_host.cpu_flags = {"avx512f"};  // not compared
  new_host.gpus[0].uuid = "GPU-b";   // not compared
  new_host.glibc = "2.35";
  new_host.driver_version = new_host.gpus[0].driver_version = "535.104.05";
  new_host.cuda_driver_version = "12.2";
  new_host.gpus[0].name = "NVIDIA A100-SXM4-80GB";
  new_host.gpus[0].compute_capability = "8.0";
  new_host.gpus.push_back(new_host.gpus[0]);
  new_host.gpus[1].index = 1;

  auto a = DescribeLockText(python + HostFactsToml(old_host, "tool.cairn.host-facts"), "a");
  auto b = DescribeLockText(python + HostFactsToml(new_host, "tool.cairn.host-facts"), "b");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->host_facts, ComparedHostFacts(old_host)) << "the TOML table reads back whole";
  EnvDiff d = DiffEnvironments(*a, *b);
  const std::string text = FormatEnvDiff(d, "a", "b", false);
  EXPECT_THAT(text, HasSubstr("host:\n"));
  EXPECT_THAT(text, HasSubstr("~ glibc 2.31 -> 2.35\n"));
  EXPECT_THAT(text, HasSubstr("~ driver_version 470.199.02 -> 535.104.05\n"));
  EXPECT_THAT(text, HasSubstr("~ cuda_driver_version 11.4 -> 12.2\n"));
  EXPECT_THAT(text, HasSubstr("~ gpu_count 1 -> 2\n"));
  EXPECT_THAT(text, HasSubstr("~ gpus[0].name Tesla K80 -> NVIDIA A100-SXM4-80GB\n"));
  EXPECT_THAT(text, HasSubstr("~ gpus[0].compute_capability (none) -> 8.0\n"));
  EXPECT_THAT(text, HasSubstr("~ gpus[1].name (none) -> NVIDIA A100-SXM4-80GB\n"));
  EXPECT_THAT(text, Not(HasSubstr("hostname")));
  EXPECT_THAT(text, Not(HasSubstr("uuid")));
  EXPECT_THAT(text, Not(HasSubstr("avx")));
  EXPECT_THAT(EnvDiffJson(d), HasSubstr(R"({"name":"glibc","from":"2.31","to":"2.35")"));

  // Only the hostname differs: the same environment.
  HostFacts renamed = old_host;
  renamed.hostname = "elsewhere";
  auto c = DescribeLockText(python + HostFactsToml(renamed, "tool.cairn.host-facts"), "c");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(DiffEnvironments(*a, *c).empty());
  // A lock has no host facts: against a snapshot, no host section.
  auto lock = DescribeLockText(FormatLock(TwoPackages("1.5")), "lock");
  ASSERT_TRUE(lock.ok());
  EXPECT_TRUE(DiffEnvironments(*lock, *a).host_facts.empty());
}

}  // namespace
}  // namespace cairn::env
