#include "env/install/venv_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "fakes/shell.h"
#include "fakes/temp_dir.h"
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

class VenvLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kSystemPython)) GTEST_SKIP() << kSystemPython << " is not installed";
  }
  VenvLayout Make(const fs::path& prefix) {
    Result<VenvLayout> layout = VenvLayoutFor(prefix.string(), kSystemPython);
    EXPECT_TRUE(layout.ok()) << layout.status().ToString();
    if (!layout.ok()) return {};
    Status s = CreateVenvLayout(*layout);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return *layout;
  }
  fakes::TempDir tmp_{"venv"};
};

TEST_F(VenvLayoutTest, ProbesTheBaseInterpreter) {
  Result<VenvLayout> l = VenvLayoutFor((tmp_.path() / "env").string(), kSystemPython);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->prefix, (tmp_.path() / "env").string());
  EXPECT_EQ(l->python, fs::canonical(kSystemPython).string());
  ShellRun v = RunShell(std::string(kSystemPython) +
                         " -c 'import sys; print(\"%d.%d.%d\" % sys.version_info[:3])'");
  ASSERT_EQ(v.code, 0);
  EXPECT_EQ(l->python_version + "\n", v.out);
  EXPECT_EQ(l->python_major, 3);
  EXPECT_EQ(l->purelib(),
            l->prefix + "/lib/python3." + std::to_string(l->python_minor) + "/site-packages");
  EXPECT_EQ(l->scripts(), l->prefix + "/bin");
  EXPECT_EQ(l->headers("demo"),
            l->prefix + "/include/site/python3." + std::to_string(l->python_minor) + "/demo");
}

TEST_F(VenvLayoutTest, AVenvPythonReportsItsBaseInterpreter) {
  VenvLayout outer = Make(tmp_.path() / "outer");
  Result<VenvLayout> inner = VenvLayoutFor((tmp_.path() / "inner").string(), outer.env_python());
  ASSERT_TRUE(inner.ok()) << inner.status().ToString();
  EXPECT_EQ(inner->python, outer.python);
}

TEST_F(VenvLayoutTest, InterpreterRunsInTheEnvironment) {
  VenvLayout l = Make(tmp_.path() / "env");
  ShellRun r = RunShell(ShellQuote(l.prefix + "/bin/python") +
                         " -c 'import sys, site; print(sys.prefix); print(sys.base_prefix); "
                         "print(\"\\n\".join(sys.path))'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, ::testing::StartsWith(l.prefix + "\n"));
  EXPECT_THAT(r.out, HasSubstr("\n" + l.purelib() + "\n"));
  // include-system-site-packages = false: the system's packages are not visible.
  EXPECT_THAT(r.out, Not(HasSubstr("dist-packages")));
  for (const std::string& name :
       std::vector<std::string>{"python3", "python3." + std::to_string(l.python_minor)}) {
    ShellRun alias =
        RunShell(ShellQuote(l.prefix + "/bin/" + name) + " -c 'import sys; print(sys.prefix)'");
    EXPECT_EQ(alias.out, l.prefix + "\n") << name;
  }
}

TEST_F(VenvLayoutTest, WritesTheFilesVenvWrites) {
  VenvLayout l = Make(tmp_.path() / "env");
  fs::path p(l.prefix);
  std::string cfg = Slurp(p / "pyvenv.cfg");
  EXPECT_THAT(cfg, HasSubstr("home = " + fs::path(l.python).parent_path().string() + "\n"));
  EXPECT_THAT(cfg, HasSubstr("include-system-site-packages = false\n"));
  EXPECT_THAT(cfg, HasSubstr("version = " + l.python_version + "\n"));
  EXPECT_THAT(cfg, HasSubstr("executable = " + l.python + "\n"));
  EXPECT_THAT(cfg, HasSubstr("command = " + l.python + " -m venv --without-pip " + l.prefix));
  EXPECT_EQ(fs::read_symlink(p / "lib64"), "lib");
  EXPECT_EQ(fs::read_symlink(p / "bin/python"), l.python);
  EXPECT_EQ(fs::read_symlink(p / "bin/python3"), "python");
  EXPECT_TRUE(fs::is_directory(l.purelib()));
  EXPECT_TRUE(fs::exists(p / "bin/activate"));
}

TEST_F(VenvLayoutTest, BuiltInOnePlaceAndMovedToItsLocation) {
  VenvLayout l = Make(tmp_.path() / "building");
  l.location = (tmp_.path() / "final").string();
  ASSERT_TRUE(CreateVenvLayout(l).ok());
  EXPECT_EQ(l.env_python(), l.location + "/bin/python");
  EXPECT_THAT(Slurp(fs::path(l.prefix) / "bin/activate"), HasSubstr(l.location));
  EXPECT_THAT(Slurp(fs::path(l.prefix) / "bin/activate"), Not(HasSubstr("building")));
  fs::rename(l.prefix, l.location);
  ShellRun r = RunShell(ShellQuote(l.location + "/bin/python") + " -c 'import sys; print(sys.prefix)'");
  EXPECT_EQ(r.out, l.location + "\n");
}

TEST_F(VenvLayoutTest, ActivateAndDeactivateInPosixSh) {
  VenvLayout l = Make(tmp_.path() / "env");
  std::string script =
      "PATH=/usr/bin:/bin; export PATH; "
      ". " +
      ShellQuote(l.prefix + "/bin/activate") +
      " && "
      "echo \"venv=$VIRTUAL_ENV\" && command -v python && "
      "python -c 'import sys; print(\"prefix=\" + sys.prefix)' && "
      "deactivate && echo \"path=$PATH\" && echo \"venv=${VIRTUAL_ENV:-unset}\" && "
      "(command -v deactivate >/dev/null && echo still-there || echo deactivate-gone)";
  ShellRun r = RunShell("/bin/sh -c " + ShellQuote(script));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("venv=" + l.prefix + "\n"));
  EXPECT_THAT(r.out, HasSubstr(l.prefix + "/bin/python\n"));
  EXPECT_THAT(r.out, HasSubstr("prefix=" + l.prefix + "\n"));
  EXPECT_THAT(r.out, HasSubstr("path=/usr/bin:/bin\n"));
  EXPECT_THAT(r.out, HasSubstr("venv=unset\n"));
  EXPECT_THAT(r.out, HasSubstr("deactivate-gone"));
}

TEST_F(VenvLayoutTest, PrefixWithSpacesAndQuotes) {
  VenvLayout l = Make(tmp_.path() / "my env's dir");
  ShellRun r =
      RunShell(ShellQuote(l.prefix + "/bin/python") + " -c 'import sys; print(sys.prefix)'");
  EXPECT_EQ(r.out, l.prefix + "\n");
  ShellRun a = RunShell("/bin/sh -c " + ShellQuote(". " + ShellQuote(l.prefix + "/bin/activate") +
                                                    " && echo \"$VIRTUAL_ENV\""));
  EXPECT_EQ(a.out, l.prefix + "\n");
}

TEST_F(VenvLayoutTest, CreatingTwiceIsHarmlessButConflictsAreNot) {
  VenvLayout l = Make(tmp_.path() / "env");
  EXPECT_TRUE(CreateVenvLayout(l).ok());
  VenvLayout other = l;
  other.python = "/bin/sh";  // exists, but bin/python already points elsewhere
  Status s = CreateVenvLayout(other);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("bin/python"));
}

TEST_F(VenvLayoutTest, RejectsBadInputs) {
  VenvLayout l;
  l.python = kSystemPython;
  l.prefix = "relative/env";
  EXPECT_EQ(CreateVenvLayout(l).code(), StatusCode::kInvalidArgument);
  l.prefix = (tmp_.path() / "a:b").string();
  EXPECT_EQ(CreateVenvLayout(l).code(), StatusCode::kInvalidArgument);
  l.prefix = (tmp_.path() / "env").string();
  l.python = "/no/such/python3";
  EXPECT_EQ(CreateVenvLayout(l).code(), StatusCode::kNotFound);
  EXPECT_EQ(VenvLayoutFor(l.prefix, "/no/such/python3").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(VenvLayoutFor(l.prefix, "/bin/false").status().code(), StatusCode::kFailedPrecondition);
}

TEST(ActivationTest, PutsTheEnvironmentFirst) {
  const char* path = std::getenv("PATH");
  const std::string expected_path = "/envs/e1/bin" + (path ? ":" + std::string(path) : "");
  auto vars = ActivationVariables("/envs/e1");
  std::map<std::string, std::string> m(vars.begin(), vars.end());
  EXPECT_EQ(m["PATH"], expected_path);
  EXPECT_EQ(m["VIRTUAL_ENV"], "/envs/e1");
  ASSERT_EQ(m.count("PYTHONHOME"), 1u);
  EXPECT_EQ(m["PYTHONHOME"], "");
}

}  // namespace
}  // namespace cairn::env
