#include "env/env_diff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "env/host_facts.h"
#include "env/standards/pep440.h"
#include "env/python_env.h"
#include "fakes/fixed_interpreter.h"

namespace cairn::env {
namespace {

using ::testing::ElementsAre;
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
  EXPECT_THAT(text, HasSubstr("  + gamma 2.0\n"));
  EXPECT_THAT(text, HasSubstr("  - alpha 2.0\n"));
  EXPECT_THAT(text, HasSubstr("  ~ beta 1.5 -> 2.1\n"));
  EXPECT_THAT(text, HasSubstr("interpreter:\n  ~ python-version: 3.11 -> 3.12\n"));
  EXPECT_THAT(text, HasSubstr("host requirements:\n  ~ cuda: (none) -> 12\n"));
  EXPECT_THAT(EnvDiffJson(d), HasSubstr(R"({"name":"gamma","change":"added","from":"","to":"2.0","details":[]})"));
  EXPECT_TRUE(DiffEnvironments(*da, *da).empty());
  EXPECT_EQ(FormatEnvDiff(DiffEnvironments(*da, *da), "a", "a", false),
            "--- a\n+++ a\nno differences (2 packages, Python 3.11)\n");
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
  ASSERT_EQ(d.packages.size(), 1u);
  EXPECT_EQ(d.packages[0].kind, EnvDiff::Kind::kChanged);
  EXPECT_EQ(d.packages[0].name, "beta");
  EXPECT_EQ(d.packages[0].to, "1.6");
  EXPECT_TRUE(d.packages[0].details.empty()) << "a lock has no RECORD digests to compare";
  // Only the Python version: a lock's target and a snapshot's tags are not comparable.
  ASSERT_EQ(d.interpreter.size(), 1u);
  EXPECT_EQ(d.interpreter[0].name, "python-version");
  EXPECT_EQ(d.interpreter[0].from, "3.11");
  EXPECT_EQ(d.interpreter[0].to, "3.11.2");
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
  EXPECT_THAT(text, HasSubstr("  ~ glibc: 2.31 -> 2.35\n"));
  EXPECT_THAT(text, HasSubstr("  ~ driver_version: 470.199.02 -> 535.104.05\n"));
  EXPECT_THAT(text, HasSubstr("  ~ cuda_driver_version: 11.4 -> 12.2\n"));
  EXPECT_THAT(text, HasSubstr("  ~ gpu_count: 1 -> 2\n"));
  EXPECT_THAT(text, HasSubstr("  ~ gpus[0].name: Tesla K80 -> NVIDIA A100-SXM4-80GB\n"));
  EXPECT_THAT(text, HasSubstr("  ~ gpus[0].compute_capability: (none) -> 8.0\n"));
  EXPECT_THAT(text, HasSubstr("  ~ gpus[1].name: (none) -> NVIDIA A100-SXM4-80GB\n"));
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

// Outside a virtual environment: the tests show it becoming one.
InterpreterInfo Interpreter() {
  InterpreterInfo i = fakes::FixedInterpreter();
  i.in_venv = false;
  return i;
}

InstalledDistribution Dist(std::string name, std::string version, std::string record) {
  InstalledDistribution d;
  d.name = name;
  d.normalized_name = NormalizeName(name);
  d.version = std::move(version);
  d.installer = "pip";
  d.location = "/opt/venv/lib/python3.11/site-packages/" + name + ".dist-info";
  d.record_sha256 = std::move(record);
  d.record_files = 12;
  return d;
}

InstalledDistribution Vcs(std::string name, std::string version, std::string commit) {
  InstalledDistribution d = Dist(std::move(name), std::move(version), "");
  DirectUrl url;
  url.kind = DirectUrl::Kind::kVcs;
  url.vcs = "git";
  url.url = "https://example.com/mypkg.git";
  url.commit_id = std::move(commit);
  url.requested_revision = "main";
  d.direct_url = url;
  return d;
}

TEST(EnvDiffTest, ReadsWhatSnapshotTomlWrites) {
  InterpreterInfo interpreter = Interpreter();
  // Strings that need every kind of escape SnapshotToml writes.
  interpreter.executable = "/opt/we\"ird\\dir/\x01bin/pythön";
  InstalledDistribution archive = Dist("Zope.Interface", "6.0", std::string(64, '1'));
  DirectUrl url;
  url.kind = DirectUrl::Kind::kArchive;
  url.url = "https://example.com/zope.whl";
  url.archive_hashes = {{"sha256", std::string(64, 'f')}};
  archive.direct_url = url;
  InstalledDistribution dir = Dist("local-pkg", "0.3", "");
  DirectUrl dir_url;
  dir_url.kind = DirectUrl::Kind::kDirectory;
  dir_url.url = "file:///src/local%20pkg";
  dir_url.editable = true;
  dir.direct_url = dir_url;
  std::string toml = SnapshotToml(interpreter, {Dist("numpy", "1.26.0", std::string(64, 'a')),
                                                archive, dir, Vcs("mypkg", "0.1", "aaaa")});

  Result<EnvDescription> d = DescribeLockText(toml, "snapshot");
  ASSERT_TRUE(d.ok()) << d.status().ToString() << "\n" << toml;
  EXPECT_TRUE(d->snapshot);
  ASSERT_EQ(d->packages.size(), 4u);
  EXPECT_EQ(d->packages["local-pkg"].source, "directory /src/local pkg (editable)");
  EXPECT_EQ(d->packages["local-pkg"].version, "0.3");  // a source tree's, under tool.cairn
  EXPECT_EQ(d->packages["mypkg"].source, "git https://example.com/mypkg.git@aaaa");
  EXPECT_EQ(d->packages["numpy"].source, "");
  EXPECT_EQ(d->packages["numpy"].record_sha256, std::string(64, 'a'));
  EXPECT_EQ(d->packages["zope-interface"].source,
            "archive https://example.com/zope.whl sha256:" + std::string(64, 'f'));
  EXPECT_THAT(d->interpreter,
              ElementsAre(std::pair<std::string, std::string>("implementation", "cpython"),
                          std::pair<std::string, std::string>("python-version", "3.11.2"),
                          std::pair<std::string, std::string>("sys-platform", "linux"),
                          std::pair<std::string, std::string>("platform", "linux-x86_64"),
                          std::pair<std::string, std::string>("python-tag", "cp311"),
                          std::pair<std::string, std::string>("abi-tag", "cp311"),
                          std::pair<std::string, std::string>(
                              "platform-tags", "manylinux_2_36_x86_64, linux_x86_64"),
                          std::pair<std::string, std::string>("soabi",
                                                              "cpython-311-x86_64-linux-gnu"),
                          std::pair<std::string, std::string>("venv", "false")));
  EXPECT_EQ(d->python_version(), "3.11.2");
}

HostFacts Host() {
  HostFacts h;
  h.os = "linux";
  h.distribution = "Debian GNU/Linux 12 (bookworm)";
  h.kernel = "6.1.0-18-amd64";
  h.machine = "x86_64";
  h.glibc = "2.36";
  h.hostname = "gpu-a";
  h.cpu_model = "AMD EPYC 7763";
  h.cpu_cores = 64;
  h.memory_total_mib = 515000;
  h.gpus = {{0, "NVIDIA A100-SXM4-80GB", "GPU-1", 81920, "8.0", "535.104.05"}};
  h.driver_version = "535.104.05";
  h.cuda_driver_version = "12.2";
  return h;
}

// Two runs' records (pylock.toml and host.json, as `cairn run` uploads them).
TEST(EnvDiffTest, RunRecordsShowPackagesInterpreterAndHost) {
  const std::string r1(64, '1'), r2(64, '2');
  InterpreterInfo before_python = Interpreter();
  InterpreterInfo after_python = Interpreter();
  after_python.version = "3.11.4";
  after_python.in_venv = true;
  after_python.prefix = "/elsewhere/venv";  // a path: not compared
  std::string before_toml =
      SnapshotToml(before_python, {Dist("numpy", "1.26.0", r1), Dist("requests", "2.31.0", r1),
                                   Vcs("mypkg", "0.1", "aaaa"), Dist("torch", "2.1.0", r1),
                                   Dist("six", "1.16.0", r1)});
  std::string after_toml =
      SnapshotToml(after_python, {Dist("numpy", "1.26.0", r1), Vcs("mypkg", "0.1", "bbbb"),
                                  Dist("torch", "2.2.0", r2), Dist("six", "1.16.0", r2),
                                  Dist("urllib3", "2.0.0", r1)});
  HostFacts before_host = Host();
  HostFacts after_host = Host();
  after_host.hostname = "gpu-b";  // not compared
  after_host.glibc = "2.39";
  after_host.gpus.push_back({1, "NVIDIA A100-SXM4-80GB", "GPU-2", 81920, "8.0", "535.104.05"});

  Result<EnvDescription> before = DescribeLockText(before_toml, "a");
  Result<EnvDescription> after = DescribeLockText(after_toml, "b");
  ASSERT_TRUE(before.ok() && after.ok());
  ASSERT_TRUE(AddHostFactsJson(HostFactsJson(before_host), &*before).ok());
  ASSERT_TRUE(AddHostFactsJson(HostFactsJson(after_host), &*after).ok());

  EnvDiff diff = DiffEnvironments(*before, *after);
  ASSERT_FALSE(diff.empty());
  EXPECT_EQ(FormatEnvDiff(diff, "run A", "run B", false),
            "--- run A\n"
            "+++ run B\n"
            "packages: 1 added, 1 removed, 3 changed\n"
            "  ~ mypkg 0.1: source git https://example.com/mypkg.git@aaaa -> "
            "git https://example.com/mypkg.git@bbbb\n"
            "  - requests 2.31.0\n"
            "  ~ six 1.16.0: installed files differ (RECORD sha256 111111111111 -> 222222222222)\n"
            "  ~ torch 2.1.0 -> 2.2.0\n"
            "  + urllib3 2.0.0\n"
            "interpreter:\n"
            "  ~ python-version: 3.11.2 -> 3.11.4\n"
            "  ~ venv: false -> true\n"
            "host:\n"
            "  ~ glibc: 2.36 -> 2.39\n"
            "  ~ gpu_count: 1 -> 2\n"
            "  ~ gpus[1].name: (none) -> NVIDIA A100-SXM4-80GB\n"
            "  ~ gpus[1].memory_total_mib: (none) -> 81920\n"
            "  ~ gpus[1].compute_capability: (none) -> 8.0\n");
  EXPECT_THAT(FormatEnvDiff(diff, "a", "b", true),
              HasSubstr("  \x1b[31m- requests 2.31.0\x1b[0m\n"));
  EXPECT_THAT(EnvDiffJson(diff),
              HasSubstr(R"j({"name":"six","change":"changed","from":"1.16.0","to":"1.16.0",)j"
                        R"j("details":["installed files differ (RECORD sha256 111111111111 -> )j"
                        R"j(222222222222)"]})j"));

  // The same records, read again, are the same environment.
  Result<EnvDescription> again = DescribeLockText(before_toml, "c");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(AddHostFactsJson(HostFactsJson(before_host), &*again).ok());
  EnvDiff none = DiffEnvironments(*before, *again);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(FormatEnvDiff(none, "a", "b", false),
            "--- a\n+++ b\nno differences (5 packages, Python 3.11.2, same host facts)\n");
  EXPECT_THAT(EnvDiffJson(none), HasSubstr(R"("same":true)"));
}

TEST(EnvDiffTest, ValuesFromTheRecordsCannotDriveTheTerminal) {
  InstalledDistribution evil = Dist("evil", "1.0\x1b]0;pwned\x07", "");
  Result<EnvDescription> a = DescribeLockText(SnapshotToml(Interpreter(), {}), "a");
  Result<EnvDescription> b = DescribeLockText(SnapshotToml(Interpreter(), {evil}), "b");
  ASSERT_TRUE(a.ok() && b.ok()) << b.status().ToString();
  const std::string text = FormatEnvDiff(DiffEnvironments(*a, *b), "a\x1b[2J", "b", false);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr("  + evil 1.0 ]0;pwned \n"));
}

TEST(EnvDiffTest, RejectsMalformedRecords) {
  EXPECT_FALSE(DescribeLockText("lock-version = \"1.0\"\n[[packages]]\nversion = \"1\"\n", "x")
                   .ok());  // no name
  EXPECT_FALSE(DescribeLockText("lock-version = \"1.0\"\npackages = 1\n", "x").ok());
  EXPECT_FALSE(DescribeLockText("lock-version = \"1.0\"\npackages = [1]\n", "x").ok());
  EXPECT_FALSE(DescribeLockText("not = [toml\n", "x").ok());
  EnvDescription d;
  EXPECT_FALSE(AddHostFactsJson("[1, 2]", &d).ok());
  EXPECT_FALSE(AddHostFactsJson("{not json", &d).ok());
}

TEST(EnvDiffTest, CondaPackagesAndWheelsOfTheSameVersion) {
  Lock a = TwoPackages("1.5");
  Lock b = TwoPackages("1.5");
  b.packages[0].wheels[0].name = "alpha-2.0-cp311-cp311-manylinux_2_17_x86_64.whl";
  b.packages[1].wheels[0].sha256 = std::string(64, 'e');
  a.conda = {{"cudatoolkit", "11.8.0", "h6a678d5_0", "defaults", "", "", ""},
             {"mkl", "2023.1.0", "h213fc3f_46344", "defaults", "", "", ""}};
  b.conda = {{"cudatoolkit", "12.1.0", "h1234567_0", "defaults", "", "", ""}};
  auto da = DescribeLockText(FormatLock(a), "a");
  auto db = DescribeLockText(FormatLock(b), "b");
  ASSERT_TRUE(da.ok() && db.ok()) << da.status().ToString() << db.status().ToString();
  const std::string text = FormatEnvDiff(DiffEnvironments(*da, *db), "a", "b", false);
  EXPECT_THAT(text, HasSubstr("packages: 2 changed\n"
                              "  ~ alpha 2.0: wheel alpha-2.0-py3-none-any.whl -> "
                              "alpha-2.0-cp311-cp311-manylinux_2_17_x86_64.whl\n"
                              "  ~ beta 1.5: wheel file differs (sha256 bbbbbbbbbbbb -> "
                              "eeeeeeeeeeee)\n"));
  EXPECT_THAT(text, HasSubstr("conda packages: 1 removed, 1 changed\n"
                              "  ~ cudatoolkit 11.8.0 h6a678d5_0 -> 12.1.0 h1234567_0\n"
                              "  - mkl 2023.1.0\n"));
}

}  // namespace
}  // namespace cairn::env
