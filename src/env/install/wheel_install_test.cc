#include "env/install/wheel_install.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "env/install/venv_layout.h"
#include "env/install/wheel_archive.h"
#include "fakes/shell.h"
#include "fakes/temp_dir.h"
#include "fakes/wheels.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/process.h"
#include "fakes/files.h"

namespace cairn::env {
namespace {
using fakes::kSystemPython;

namespace fs = std::filesystem;
using fakes::RunShell;
using fakes::ShellRun;
using fakes::Slurp;
using ::testing::HasSubstr;
using ::testing::Not;

using fakes::BuildWheel;
using fakes::TestRecordHash;
using fakes::WheelSpec;
using fakes::ZipEntry;

// demo 1.0: a package, a console script, a `#!python` script, a data file and a header.
WheelSpec DemoSpec() {
  WheelSpec s;
  s.files = {
      {"demo/__init__.py", "__version__ = \"1.0\"\n"},
      {"demo/cli.py",
       "import sys\n"
       "def main():\n"
       "    print('cli says hello', sys.argv[1:])\n"
       "    return 3\n"
       "class Tools:\n"
       "    @staticmethod\n"
       "    def run():\n"
       "        print('nested attribute')\n"},
      {"demo-1.0.data/scripts/demo-script",
       "#!python\nimport sys, demo\nprint('script', demo.__version__, sys.prefix)\n", 0755},
      {"demo-1.0.data/scripts/plain-tool", "#!/bin/sh\necho plain tool\n", 0644},
      {"demo-1.0.data/data/share/demo/readme.txt", "read me\n"},
      {"demo-1.0.data/headers/demo.h", "#define DEMO 1\n"},
  };
  s.entry_points =
      "[console_scripts]\n"
      "demo-cli = demo.cli:main\n"
      "demo-nested = demo.cli:Tools.run [extra]\n"
      "\n"
      "[gui_scripts]\n"
      "demo-gui = demo.cli:main\n"
      "\n"
      "[demo.plugins]\n"
      "anything = demo:__version__\n";
  return s;
}

struct stat Stat(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st;
}

class WheelInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kSystemPython)) GTEST_SKIP() << kSystemPython << " is not installed";
    fs::create_directories(root_.path() / "wheels");
    fs::create_directories(root_.path() / "cache");
    layout_ = MakeEnv(root_.path() / "env");
  }

  VenvLayout MakeEnv(const fs::path& prefix) {
    Result<VenvLayout> l = VenvLayoutFor(prefix.string(), kSystemPython);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    if (!l.ok()) return {};
    Status s = CreateVenvLayout(*l);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return *l;
  }

  // Builds and unpacks a wheel; returns the unpacked directory.
  std::string Unpacked(const WheelSpec& spec) {
    fs::path whl = BuildWheel(root_.path() / "wheels", spec);
    fs::path dest = root_.path() / "cache" / (spec.name + "-" + spec.version);
    Result<UnpackedWheel> u = UnpackWheel(whl.string(), dest.string());
    EXPECT_TRUE(u.ok()) << u.status().ToString();
    return dest.string();
  }

  fs::path Site() const { return layout_.purelib(); }
  fs::path Bin() const { return layout_.scripts(); }

  fakes::TempDir root_;
  VenvLayout layout_;
};

TEST_F(WheelInstallTest, InstalledPackageScriptsAndLaunchersRun) {
  std::string cache = Unpacked(DemoSpec());
  Result<InstallReport> r = InstallWheel(cache, layout_, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->dist_info, (Site() / "demo-1.0.dist-info").string());
  EXPECT_EQ(r->scripts_written, 4u);  // 3 launchers + the #!python script

  ShellRun import =
      RunShell(ShellQuote(layout_.env_python()) + " -c 'import demo; print(demo.__version__)'");
  EXPECT_EQ(import.code, 0) << import.out;
  EXPECT_EQ(import.out, "1.0\n");

  // The console launcher calls the function and exits with what it returned.
  ShellRun cli = RunShell(ShellQuote((Bin() / "demo-cli").string()) + " a b");
  EXPECT_EQ(cli.code, 3) << cli.out;
  EXPECT_EQ(cli.out, "cli says hello ['a', 'b']\n");
  ShellRun nested = RunShell(ShellQuote((Bin() / "demo-nested").string()));
  EXPECT_EQ(nested.code, 0) << nested.out;
  EXPECT_EQ(nested.out, "nested attribute\n");
  EXPECT_EQ(RunShell(ShellQuote((Bin() / "demo-gui").string())).code, 3);
  EXPECT_EQ(Slurp(Bin() / "demo-cli").rfind("#!" + layout_.env_python() + "\n", 0), 0u);

  // The #!python script runs on the environment's interpreter.
  ShellRun script = RunShell(ShellQuote((Bin() / "demo-script").string()));
  EXPECT_EQ(script.code, 0) << script.out;
  EXPECT_EQ(script.out, "script 1.0 " + layout_.prefix + "\n");
  EXPECT_EQ(Slurp(Bin() / "demo-script"),
            "#!" + layout_.env_python() +
                "\nimport sys, demo\nprint('script', demo.__version__, "
                "sys.prefix)\n");
  // A script archived without execute bits is made executable, by a copy.
  ShellRun plain = RunShell(ShellQuote((Bin() / "plain-tool").string()));
  EXPECT_EQ(plain.out, "plain tool\n");
  EXPECT_EQ(Stat(fs::path(cache) / "demo-1.0.data/scripts/plain-tool").st_mode & 0111, 0u)
      << "the cache is never modified";

  // Other schemes.
  EXPECT_EQ(Slurp(fs::path(layout_.prefix) / "share/demo/readme.txt"), "read me\n");
  EXPECT_EQ(Slurp(fs::path(layout_.headers("demo")) / "demo.h"), "#define DEMO 1\n");
  EXPECT_FALSE(fs::exists(Site() / "demo-1.0.data"));
  EXPECT_FALSE(fs::exists(Bin() / "anything")) << "only script groups get launchers";
}

TEST_F(WheelInstallTest, RecordListsEveryInstalledFileWithCorrectHashes) {
  std::string cache = Unpacked(DemoSpec());
  InstallOptions options;
  options.requested = true;
  options.direct_url_json =
      R"({"url": "file:///wheels/demo-1.0-py3-none-any.whl", "archive_info": {}})";
  ASSERT_TRUE(InstallWheel(cache, layout_, options).ok());

  Result<std::string> text = ReadFile(Site() / "demo-1.0.dist-info/RECORD");
  ASSERT_TRUE(text.ok());
  Result<std::vector<RecordEntry>> rows = ParseRecord(*text);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::set<fs::path> listed;
  std::vector<std::string> paths;
  for (const RecordEntry& row : *rows) {
    paths.push_back(row.path);
    fs::path file = (Site() / row.path).lexically_normal();
    listed.insert(file);
    if (row.path == "demo-1.0.dist-info/RECORD") {
      EXPECT_EQ(row.hash, "");
      EXPECT_EQ(row.size, -1);
      continue;
    }
    std::string content = Slurp(file);
    EXPECT_TRUE(fs::is_regular_file(file)) << row.path;
    EXPECT_EQ(row.hash, TestRecordHash(content)) << row.path;
    EXPECT_EQ(row.size, static_cast<int64_t>(content.size())) << row.path;
  }
  EXPECT_TRUE(std::is_sorted(paths.begin(), paths.end()));
  for (const char* expected :
       {"../../../bin/demo-cli", "../../../bin/demo-script", "../../../bin/plain-tool",
        "../../../share/demo/readme.txt", "demo/__init__.py", "demo-1.0.dist-info/INSTALLER",
        "demo-1.0.dist-info/REQUESTED", "demo-1.0.dist-info/direct_url.json"}) {
    EXPECT_THAT(paths, ::testing::Contains(expected));
  }
  // Every file in the environment that is not part of the venv itself is listed.
  std::set<fs::path> skeleton = {fs::path(layout_.prefix) / "pyvenv.cfg", Bin() / "activate"};
  for (const auto& e : fs::recursive_directory_iterator(layout_.prefix)) {
    if (!e.is_regular_file() || e.is_symlink() || skeleton.count(e.path()) != 0) continue;
    if (e.path().string().find("__pycache__") != std::string::npos) continue;
    EXPECT_EQ(listed.count(e.path().lexically_normal()), 1u) << e.path() << " is not in RECORD";
  }
  // Python's own reader agrees.
  ShellRun meta = RunShell(ShellQuote(layout_.env_python()) +
                            " -c 'import importlib.metadata as m; d = m.distribution(\"demo\"); "
                            "print(d.version, d.read_text(\"INSTALLER\").strip(), "
                            "sum(1 for f in d.files if f.locate().exists()), len(d.files))'");
  EXPECT_EQ(meta.out, "1.0 cairn " + std::to_string(rows->size()) + " " +
                          std::to_string(rows->size()) + "\n");
}

TEST_F(WheelInstallTest, InstallerRequestedAndDirectUrlAreWritten) {
  std::string cache = Unpacked(DemoSpec());
  InstallOptions options;
  options.installer = "cairn-test";
  options.requested = true;
  options.direct_url_json = R"({"url": "https://example.org/demo.whl", "archive_info": {}})";
  ASSERT_TRUE(InstallWheel(cache, layout_, options).ok());
  fs::path di = Site() / "demo-1.0.dist-info";
  EXPECT_EQ(Slurp(di / "INSTALLER"), "cairn-test\n");
  EXPECT_TRUE(fs::exists(di / "REQUESTED"));
  EXPECT_EQ(Slurp(di / "REQUESTED"), "");
  EXPECT_EQ(Slurp(di / "direct_url.json"), options.direct_url_json);

  VenvLayout second = MakeEnv(root_.path() / "env2");
  ASSERT_TRUE(InstallWheel(cache, second, {}).ok());
  fs::path di2 = fs::path(second.purelib()) / "demo-1.0.dist-info";
  EXPECT_EQ(Slurp(di2 / "INSTALLER"), "cairn\n");
  EXPECT_FALSE(fs::exists(di2 / "REQUESTED"));
  EXPECT_FALSE(fs::exists(di2 / "direct_url.json"));
}

TEST_F(WheelInstallTest, HardLinksFromTheCacheOnOneFilesystem) {
  std::string cache = Unpacked(DemoSpec());
  Result<InstallReport> r = InstallWheel(cache, layout_, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->files_linked, 0u);
  EXPECT_EQ(r->files_copied, 1u);  // plain-tool, to make it executable
  struct stat cached = Stat(fs::path(cache) / "demo/__init__.py");
  struct stat installed = Stat(Site() / "demo/__init__.py");
  if (r->used == LinkMode::kReflink) {
    EXPECT_NE(cached.st_ino, installed.st_ino);  // a clone is a file of its own
  } else {
    ASSERT_EQ(r->used, LinkMode::kHardlink);
    EXPECT_EQ(cached.st_ino, installed.st_ino);
    EXPECT_EQ(cached.st_dev, installed.st_dev);
    EXPECT_GE(installed.st_nlink, 2u);
  }
  // Per-environment files are new files, and the cache keeps its own content.
  EXPECT_NE(Stat(fs::path(cache) / "demo-1.0.data/scripts/demo-script").st_ino,
            Stat(Bin() / "demo-script").st_ino);
  EXPECT_EQ(Slurp(fs::path(cache) / "demo-1.0.data/scripts/demo-script").rfind("#!python\n", 0),
            0u);
  EXPECT_NE(Slurp(fs::path(cache) / "demo-1.0.dist-info/RECORD"),
            Slurp(Site() / "demo-1.0.dist-info/RECORD"));
  EXPECT_EQ(Stat(Site() / "demo-1.0.dist-info/RECORD").st_nlink, 1u);

  InstallOptions hard;
  hard.link = LinkMode::kHardlink;
  VenvLayout second = MakeEnv(root_.path() / "env2");
  Result<InstallReport> h = InstallWheel(cache, second, hard);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->used, LinkMode::kHardlink);
  EXPECT_EQ(Stat(fs::path(second.purelib()) / "demo/__init__.py").st_ino, cached.st_ino);
}

TEST_F(WheelInstallTest, CopyModeCopies) {
  std::string cache = Unpacked(DemoSpec());
  InstallOptions options;
  options.link = LinkMode::kCopy;
  Result<InstallReport> r = InstallWheel(cache, layout_, options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->used, LinkMode::kCopy);
  EXPECT_EQ(r->files_linked, 0u);
  EXPECT_GT(r->files_copied, 0u);
  struct stat installed = Stat(Site() / "demo/__init__.py");
  EXPECT_NE(Stat(fs::path(cache) / "demo/__init__.py").st_ino, installed.st_ino);
  EXPECT_EQ(installed.st_nlink, 1u);
  EXPECT_EQ(Slurp(Site() / "demo/__init__.py"), "__version__ = \"1.0\"\n");
  ShellRun import =
      RunShell(ShellQuote(layout_.env_python()) + " -c 'import demo; print(demo.__version__)'");
  EXPECT_EQ(import.out, "1.0\n");
}

TEST_F(WheelInstallTest, AFileOfAnotherDistributionIsNotOverwritten) {
  ASSERT_TRUE(InstallWheel(Unpacked(DemoSpec()), layout_, {}).ok());
  WheelSpec other;
  other.name = "other";
  other.version = "2.0";
  other.files = {{"other/__init__.py", ""}, {"demo/__init__.py", "__version__ = 'hijacked'\n"}};
  Result<InstallReport> r = InstallWheel(Unpacked(other), layout_, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(r.status().message(), HasSubstr("other-2.0"));
  EXPECT_THAT(r.status().message(), HasSubstr("demo/__init__.py"));
  EXPECT_THAT(r.status().message(), HasSubstr("belongs to demo-1.0"));
  EXPECT_EQ(Slurp(Site() / "demo/__init__.py"), "__version__ = \"1.0\"\n");
  EXPECT_FALSE(fs::exists(Site() / "other-2.0.dist-info"));
  EXPECT_FALSE(fs::exists(Site() / "other/__init__.py"));

  // A launcher that would replace another distribution's script is refused the same way.
  WheelSpec clash;
  clash.name = "clash";
  clash.files = {{"clash/__init__.py", "def main():\n    pass\n"}};
  clash.entry_points = "[console_scripts]\ndemo-cli = clash:main\n";
  Result<InstallReport> c = InstallWheel(Unpacked(clash), layout_, {});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("bin/demo-cli, which belongs to demo-1.0"));
}

TEST_F(WheelInstallTest, InstallingTheSameDistributionTwiceIsRefused) {
  std::string cache = Unpacked(DemoSpec());
  ASSERT_TRUE(InstallWheel(cache, layout_, {}).ok());
  Result<InstallReport> again = InstallWheel(cache, layout_, {});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr("already installed"));
  EXPECT_TRUE(fs::exists(Site() / "demo-1.0.dist-info/RECORD"));
}

TEST_F(WheelInstallTest, UnknownDataSchemeIsRejected) {
  WheelSpec s;
  s.name = "odd";
  s.files = {{"odd/__init__.py", ""}, {"odd-1.0.data/config/odd.cfg", "x\n"}};
  Result<InstallReport> r = InstallWheel(Unpacked(s), layout_, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("\"config\" is not an install scheme"));
  EXPECT_FALSE(fs::exists(Site() / "odd"));
  EXPECT_FALSE(fs::exists(Site() / "odd-1.0.dist-info"));
}

TEST_F(WheelInstallTest, PlatlibWheelLandsInSitePackages) {
  WheelSpec s;
  s.name = "native";
  s.purelib = false;
  s.files = {{"native/__init__.py", "KIND = 'platlib'\n"},
             {"native-1.0.data/purelib/native_pure.py", "KIND = 'purelib'\n"}};
  ASSERT_TRUE(InstallWheel(Unpacked(s), layout_, {}).ok());
  ShellRun r = RunShell(ShellQuote(layout_.env_python()) +
                         " -c 'import native, native_pure; print(native.KIND, native_pure.KIND)'");
  EXPECT_EQ(r.out, "platlib purelib\n");
}

TEST_F(WheelInstallTest, LaunchersUseTheShellTrampolineForPathsWithSpaces) {
  fakes::TempDir spaced("wheel install with spaces");
  VenvLayout layout = MakeEnv(spaced.path() / "my env");
  ASSERT_TRUE(InstallWheel(Unpacked(DemoSpec()), layout, {}).ok());
  fs::path cli = fs::path(layout.scripts()) / "demo-cli";
  EXPECT_EQ(Slurp(cli).rfind("#!/bin/sh\n", 0), 0u);
  ShellRun r = RunShell(ShellQuote(cli.string()) + " x");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_EQ(r.out, "cli says hello ['x']\n");
  ShellRun s = RunShell(ShellQuote((fs::path(layout.scripts()) / "demo-script").string()));
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_EQ(s.out, "script 1.0 " + layout.prefix + "\n");
}

TEST_F(WheelInstallTest, TwoWheelsFromTwoThreadsIntoOneEnvironment) {
  // Both wheels write into the same fresh directories (a namespace package, bin/, share/), so
  // their directory creation races.
  auto spec = [](const std::string& name) {
    WheelSpec s;
    s.name = name;
    for (int i = 0; i < 40; ++i) {
      s.files.push_back({"ns/shared/deep/" + name + "/m" + std::to_string(i) + ".py",
                         "VALUE = " + std::to_string(i) + "\n"});
    }
    s.files.push_back({"ns/shared/deep/" + name + "/__init__.py", "NAME = '" + name + "'\n"});
    s.files.push_back({name + "-1.0.data/data/share/common/" + name + ".txt", name + "\n"});
    s.entry_points =
        "[console_scripts]\n" + name + "-cmd = ns.shared.deep." + name + ":NAME.upper\n";
    return s;
  };
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE(round);
    VenvLayout env = MakeEnv(root_.path() / ("par" + std::to_string(round)));
    std::string alpha = Unpacked(spec("alpha" + std::to_string(round)));
    std::string beta = Unpacked(spec("beta" + std::to_string(round)));
    Result<InstallReport> ra = Status(StatusCode::kInternal, "not run");
    Result<InstallReport> rb = ra;
    std::thread ta([&] { ra = InstallWheel(alpha, env, {}); });
    std::thread tb([&] { rb = InstallWheel(beta, env, {}); });
    ta.join();
    tb.join();
    ASSERT_TRUE(ra.ok()) << ra.status().ToString();
    ASSERT_TRUE(rb.ok()) << rb.status().ToString();
    std::string a = "alpha" + std::to_string(round), b = "beta" + std::to_string(round);
    ShellRun r = RunShell(ShellQuote(env.env_python()) + " -c 'import ns.shared.deep." + a +
                           " as x, ns.shared.deep." + b + " as y; print(x.NAME, y.NAME)'");
    EXPECT_EQ(r.out, a + " " + b + "\n");
    // The launcher calls NAME.upper and exits with its result: sys.exit("BETA0") prints the
    // string and exits with 1.
    ShellRun cmd = RunShell(ShellQuote(env.scripts() + "/" + b + "-cmd"));
    EXPECT_EQ(cmd.code, 1);
    EXPECT_EQ(cmd.out, "BETA" + std::to_string(round) + "\n");
  }
}

TEST(ShebangTest, ShortPathsAreDirectLongOrSpacedOnesUseTheTrampoline) {
  Result<std::string> plain = ShebangFor("/env/bin/python");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, "#!/env/bin/python\n");
  EXPECT_EQ(*ShebangFor("/env/bin/python", " -u"), "#!/env/bin/python -u\n");
  std::string long_path = "/" + std::string(130, 'x') + "/bin/python";
  EXPECT_EQ(ShebangFor(long_path)->rfind("#!/bin/sh\n'''exec' '" + long_path + "' \"$0\"", 0), 0u);
  Result<std::string> spaced = ShebangFor("/my env/bin/python");
  ASSERT_TRUE(spaced.ok());
  EXPECT_EQ(*spaced, "#!/bin/sh\n'''exec' '/my env/bin/python' \"$0\" \"$@\"\n' '''\n");
  EXPECT_FALSE(ShebangFor("/a\nb/python").ok());
}

TEST(EntryPointsTest, ParsesScriptGroupsAndRejectsUnsafeNames) {
  Result<std::vector<ScriptEntryPoint>> eps = ParseScriptEntryPoints(
      "# comment\n[console_scripts]\nTool = pkg.mod:main\nother=pkg : obj.attr  [x, y]\n"
      "; another comment\n[gui_scripts]\nwin = pkg:gui\n[other.group]\nnot a script\n");
  ASSERT_TRUE(eps.ok()) << eps.status().ToString();
  ASSERT_EQ(eps->size(), 3u);
  EXPECT_EQ((*eps)[0].name, "Tool");
  EXPECT_EQ((*eps)[0].module, "pkg.mod");
  EXPECT_EQ((*eps)[0].attr, "main");
  EXPECT_EQ((*eps)[1].name, "other");
  EXPECT_EQ((*eps)[1].attr, "obj.attr");
  EXPECT_TRUE((*eps)[2].gui);

  for (const char* bad :
       {"[console_scripts]\n../evil = a:b\n", "[console_scripts]\nx = a\n",
        "[console_scripts]\nx = a:b()\n", "[console_scripts]\nx = 1a:b\n",
        "[console_scripts]\nx = a:b\nx = a:c\n", "[console_scripts]\nx = a;import os:b\n",
        // configparser would read this as a continuation of x's value
        "[console_scripts]\nx = a:b\n  y = c:d\n"}) {
    EXPECT_FALSE(ParseScriptEntryPoints(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace cairn::env
