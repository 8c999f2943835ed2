#include "env/lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cairn::env {
namespace {

using ::testing::HasSubstr;

Lock SampleLock() {
  Lock lock;
  lock.requires_python = "==3.11.*";
  lock.environments = {"sys_platform == \"linux\""};
  LockedPackage b;
  b.name = "beta";
  b.version = "2.0";
  b.index = "http://127.0.0.1:8000/simple/";
  b.wheels = {{"beta-2.0-py3-none-any.whl", "http://127.0.0.1:8000/files/beta-2.0-py3-none-any.whl",
               "", 1234, std::string(64, 'b')}};
  LockedPackage a;
  a.name = "alpha";
  a.version = "1.0";
  a.requires_python = ">=3.8";
  a.dependencies = {"beta"};
  a.requested = true;
  a.wheels = {{"alpha-1.0-py3-none-any.whl", "", "wheels/alpha-1.0-py3-none-any.whl", 99,
               std::string(64, 'a')}};
  lock.packages = {b, a};
  lock.target = "cp311-manylinux_2_36_x86_64";
  lock.python = "3.11.2";
  lock.requirements = {"alpha>=1"};
  lock.sources = {"find-links:wheels"};
  lock.inputs_hash = std::string(64, 'c');
  lock.host.cuda = "12";
  lock.host.driver = ">=535";
  lock.conda = {{"openssl", "3.0.12", "h7f8727e_0", "defaults",
                 "https://repo.anaconda.com/pkgs/main/linux-64/openssl-3.0.12-h7f8727e_0.conda",
                 "", std::string(64, 'd')}};
  return lock;
}

TEST(LockTest, FormatIsDeterministicAndSortedAndRoundTrips) {
  const Lock lock = SampleLock();
  const std::string text = FormatLock(lock);
  EXPECT_EQ(text, FormatLock(lock));
  EXPECT_LT(text.find("name = \"alpha\""), text.find("name = \"beta\""));
  EXPECT_THAT(text, HasSubstr("dependencies = [{name = \"beta\"}]\n"));
  EXPECT_THAT(text, HasSubstr("[tool.cairn.host]\ncuda = \"12\"\ndriver = \">=535\"\n"));

  Result<Lock> parsed = ParseLock(text, "pylock.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(FormatLock(*parsed), text);  // nothing lost on the way
  ASSERT_EQ(parsed->packages.size(), 2u);
  const LockedPackage* alpha = parsed->Find("alpha");
  ASSERT_NE(alpha, nullptr);
  EXPECT_TRUE(alpha->requested);
  EXPECT_EQ(alpha->wheels[0].path, "wheels/alpha-1.0-py3-none-any.whl");
  EXPECT_EQ(alpha->wheels[0].size, 99);
  EXPECT_FALSE(parsed->Find("beta")->requested);
  EXPECT_EQ(parsed->conda.size(), 1u);
  EXPECT_EQ(LockHash(text), LockHash(FormatLock(*parsed)));
}

TEST(LockTest, ReadsPep751FilesOfOtherTools) {
  // The example shape of PEP 751, with a name derived from the URL and upper-case hex.
  Result<Lock> lock = ParseLock(R"(lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.9"

[[packages]]
name = "attrs"
version = "25.1.0"
index = "https://pypi.org/simple"

[[packages.wheels]]
url = "https://files.pythonhosted.org/packages/attrs-25.1.0-py3-none-any.whl"
upload-time = 2025-01-25T11:30:10Z
size = 63152
hashes = {sha256 = "C75A69E28A550A7E93789579C22AA26B0F5B83B75DC4E08FE092980051E1090A"}
)",
                                "uv.toml");
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  ASSERT_EQ(lock->packages.size(), 1u);
  const LockedWheel& w = lock->packages[0].wheels[0];
  EXPECT_EQ(w.name, "attrs-25.1.0-py3-none-any.whl");
  EXPECT_EQ(w.sha256, "c75a69e28a550a7e93789579c22aa26b0f5b83b75dc4e08fe092980051e1090a");
  EXPECT_EQ(w.size, 63152);
}

TEST(LockTest, ErrorsNameTheFileAndTheField) {
  EXPECT_THAT(ParseLock("x = [", "a.toml").status().message(),
              HasSubstr("a.toml: not valid TOML at line 1"));
  EXPECT_THAT(ParseLock("created-by = \"x\"\n", "a.toml").status().message(),
              HasSubstr("lock-version is missing"));
  EXPECT_THAT(ParseLock("lock-version = \"2.0\"\n", "a.toml").status().message(),
              HasSubstr("lock-version 2.0 is not supported"));
  EXPECT_THAT(ParseLock("lock-version = \"1.0\"\n[[packages]]\nname = \"x\"\n"
                        "sdist = {url = \"https://x/x.tar.gz\", hashes = {sha256 = \"00\"}}\n",
                        "a.toml")
                  .status()
                  .message(),
              HasSubstr("packages[0] (x) is installed from sdist"));
  EXPECT_THAT(ParseLock("lock-version = \"1.0\"\n[[packages]]\nname = \"x\"\n"
                        "wheels = [{name = \"x-1-py3-none-any.whl\", hashes = {sha256 = \"ab\"}}]\n",
                        "a.toml")
                  .status()
                  .message(),
              HasSubstr("needs a sha256 hash of 64 hex digits"));
  EXPECT_THAT(ParseLock("lock-version = \"1.0\"\n[tool.cairn]\nkind = \"environment-snapshot\"\n",
                        "run.toml")
                  .status()
                  .message(),
              HasSubstr("cannot be built"));
}

}  // namespace
}  // namespace cairn::env
