#include "env/env_diff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "env/python_env.h"

namespace cairn::env {
namespace {

using ::testing::HasSubstr;

Lock TwoPackages(const std::string& beta_version) {
  Lock lock;
  lock.python = "3.11";
  lock.target = "cp311-manylinux_2_36_x86_64";
  for (const auto& [name, version] :
       std::vector<std::pair<std::string, std::string>>{{"alpha", "2.0"}, {"beta", beta_version}}) {
    LockedPackage p;
    p.name = name;
    p.version = version;
    p.wheels = {{name + "-" + version + "-py3-none-any.whl", "", "w/x.whl", 1,
                 std::string(64, name[0])}};
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

}  // namespace
}  // namespace cairn::env
