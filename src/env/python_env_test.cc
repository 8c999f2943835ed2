#include "env/python_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "fakes/fixed_interpreter.h"
#include "util/hash.h"
#include "util/process.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// tests/data/python_env, found from this file's path: src/env/ -> repository root.
fs::path FixtureDir() {
  return fs::path(__FILE__).parent_path().parent_path().parent_path() / "tests" / "data" /
         "python_env";
}
std::string SiteA() { return (FixtureDir() / "site-a").string(); }
std::string SiteB() { return (FixtureDir() / "site-b").string(); }

const InstalledDistribution* Find(const std::vector<InstalledDistribution>& dists,
                                  const std::string& normalized_name) {
  for (const InstalledDistribution& d : dists) {
    if (d.normalized_name == normalized_name) return &d;
  }
  return nullptr;
}

std::vector<std::string> Names(const std::vector<InstalledDistribution>& dists) {
  std::vector<std::string> names;
  for (const InstalledDistribution& d : dists) names.push_back(d.normalized_name);
  return names;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// Parses a TOML file with Python's tomllib and prints what the tests check: every package as
// "name version", then the top-level keys, then repr(tool.cairn.interpreter). Exit code 3
// means there is no tomllib (Python before 3.11).
constexpr char kTomlDump[] = R"PY(
import sys
try:
    import tomllib
except ImportError:
    sys.exit(3)
with open(sys.argv[1], "rb") as f:
    d = tomllib.load(f)
for p in d.get("packages", []):
    print(p["name"], p.get("version", "-"))
print(",".join(sorted(d.keys())))
print(repr(d["tool"]["cairn"]["interpreter"]))
)PY";

// What kTomlDump prints for `toml`; nullopt when /usr/bin/python3 or its tomllib is missing.
// A parse error fails the calling test.
std::optional<std::string> DumpTomlWithPython(const std::string& toml) {
  if (access("/usr/bin/python3", X_OK) != 0) return std::nullopt;
  fs::path file = fs::temp_directory_path() / ("cairn-pylock-" + RandomHex(6) + ".toml");
  std::ofstream(file, std::ios::binary) << toml;
  SpawnOptions o;
  o.argv = {"/usr/bin/python3", "-c", kTomlDump, file.string()};
  o.capture_output = true;
  auto p = Process::Spawn(o);
  if (!p.ok()) {
    fs::remove(file);
    ADD_FAILURE() << p.status().ToString();
    return "";
  }
  std::string out = ReadAll(p->stdout_fd());
  std::string err = ReadAll(p->stderr_fd());
  auto exit = p->Wait();
  fs::remove(file);
  if (exit.ok() && !exit->signaled && exit->code == 3) return std::nullopt;
  if (!exit.ok() || exit->signaled || exit->code != 0) {
    ADD_FAILURE() << "tomllib rejected the snapshot: " << err;
    return "";
  }
  return out;
}

TEST(PythonEnvTest, ScanReadsFixtureDistributions) {
  auto dists = ScanDistributions({SiteA(), SiteB()});
  ASSERT_TRUE(dists.ok()) << dists.status().ToString();
  // Sorted by normalized name; the "requests" folder without .dist-info and the .dist-info
  // that is a file are not distributions.
  EXPECT_EQ(Names(*dists),
            (std::vector<std::string>{"archived", "broken-url", "cryptolib", "legacy-thing",
                                      "localpkg", "mylib", "nometa", "onlyinb", "requests",
                                      "single-file", "zope-interface-extra"}));

  const InstalledDistribution* requests = Find(*dists, "requests");
  ASSERT_NE(requests, nullptr);
  EXPECT_EQ(requests->name, "requests");
  EXPECT_EQ(requests->version, "2.31.0");  // the header, not "Version: 9.9.9" in the body
  EXPECT_EQ(requests->installer, "pip");
  EXPECT_FALSE(requests->egg_info);
  EXPECT_FALSE(requests->direct_url.has_value());
  // sha256sum of the fixture's RECORD; 5 rows, one a quoted path holding a comma.
  EXPECT_EQ(requests->record_sha256,
            "bd5eb80dba9a22e101f9bf6d19f17a4bbc9d2f4a052a25b0934c62e7adf46388");
  EXPECT_EQ(requests->record_files, 5);
  EXPECT_EQ(requests->location, SiteA() + "/requests-2.31.0.dist-info");

  const InstalledDistribution* mylib = Find(*dists, "mylib");
  ASSERT_NE(mylib, nullptr);
  ASSERT_TRUE(mylib->direct_url.has_value());
  EXPECT_EQ(mylib->direct_url->kind, DirectUrl::Kind::kVcs);
  EXPECT_EQ(mylib->direct_url->url, "https://github.com/example/mylib.git");
  EXPECT_EQ(mylib->direct_url->vcs, "git");
  EXPECT_EQ(mylib->direct_url->commit_id, "4f0c2c1e9b7a3d5e6f8a9b0c1d2e3f4a5b6c7d8e");
  EXPECT_EQ(mylib->direct_url->requested_revision, "main");
  EXPECT_EQ(mylib->direct_url->subdirectory, "python");
  EXPECT_EQ(mylib->record_files, 2);
  EXPECT_EQ(mylib->record_sha256,
            "07248f2f4ed22b01fc510bc20275d011c3c3078e28dac9928598a3ac5a74dc2a");

  const InstalledDistribution* local = Find(*dists, "localpkg");
  ASSERT_NE(local, nullptr);
  ASSERT_TRUE(local->direct_url.has_value());
  EXPECT_EQ(local->direct_url->kind, DirectUrl::Kind::kDirectory);
  EXPECT_TRUE(local->direct_url->editable);
  EXPECT_EQ(local->direct_url->url, "file:///home/dev/src/local%20pkg");
  EXPECT_EQ(local->version, "1.0.0.dev0");  // METADATA wins over the folder name

  const InstalledDistribution* archived = Find(*dists, "archived");
  ASSERT_NE(archived, nullptr);
  ASSERT_TRUE(archived->direct_url.has_value());
  EXPECT_EQ(archived->direct_url->kind, DirectUrl::Kind::kArchive);
  EXPECT_EQ(archived->direct_url->archive_hashes.size(), 1u);
  EXPECT_EQ(archived->direct_url->archive_hashes.at("sha256"),
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  EXPECT_EQ(archived->installer, "uv");
  EXPECT_TRUE(archived->record_sha256.empty());
  EXPECT_EQ(archived->record_files, 0);

  const InstalledDistribution* broken = Find(*dists, "broken-url");
  ASSERT_NE(broken, nullptr);
  EXPECT_FALSE(broken->direct_url.has_value());
  EXPECT_THAT(broken->direct_url_error, HasSubstr("not a JSON object"));

  const InstalledDistribution* legacy = Find(*dists, "legacy-thing");
  ASSERT_NE(legacy, nullptr);
  EXPECT_TRUE(legacy->egg_info);
  EXPECT_EQ(legacy->name, "legacy-thing");
  EXPECT_EQ(legacy->version, "0.9");
  const InstalledDistribution* single = Find(*dists, "single-file");
  ASSERT_NE(single, nullptr);
  EXPECT_TRUE(single->egg_info);
  EXPECT_EQ(single->version, "1.2");

  // CRLF lines, padded value, lowercase "version:" header, a folded Summary.
  const InstalledDistribution* zope = Find(*dists, "zope-interface-extra");
  ASSERT_NE(zope, nullptr);
  EXPECT_EQ(zope->name, "Zope.Interface__Extra");
  EXPECT_EQ(zope->version, "5.0");
  EXPECT_EQ(zope->installer, "pip");
  EXPECT_EQ(zope->record_files, 1);

  // The METADATA headers have no Version; the "Version: 6.6.6" after the blank line is the
  // description, so the version comes from the folder name.
  const InstalledDistribution* onlyinb = Find(*dists, "onlyinb");
  ASSERT_NE(onlyinb, nullptr);
  EXPECT_EQ(onlyinb->version, "1.0");

  // No METADATA: name and version from the folder.
  const InstalledDistribution* nometa = Find(*dists, "nometa");
  ASSERT_NE(nometa, nullptr);
  EXPECT_EQ(nometa->version, "4.5");
  EXPECT_EQ(nometa->installer, "conda");
}

TEST(PythonEnvTest, FirstDistributionAlongThePathWins) {
  auto ab = ScanDistributions({SiteA(), SiteB()});
  ASSERT_TRUE(ab.ok()) << ab.status().ToString();
  ASSERT_NE(Find(*ab, "requests"), nullptr);
  EXPECT_EQ(Find(*ab, "requests")->version, "2.31.0");
  EXPECT_EQ(Find(*ab, "requests")->installer, "pip");

  // The same two directories the other way round: site-b's "Requests" now shadows.
  auto ba = ScanDistributions({SiteB(), SiteA()});
  ASSERT_TRUE(ba.ok()) << ba.status().ToString();
  ASSERT_NE(Find(*ba, "requests"), nullptr);
  EXPECT_EQ(Find(*ba, "requests")->version, "2.0.0");
  EXPECT_EQ(Find(*ba, "requests")->name, "Requests");
  EXPECT_EQ(Find(*ba, "requests")->installer, "debian");
  EXPECT_EQ(ba->size(), ab->size());

  // Within one directory the .dist-info beats an .egg-info of the same name, even though
  // "Cryptolib.egg-info" sorts first.
  const InstalledDistribution* crypto = Find(*ab, "cryptolib");
  ASSERT_NE(crypto, nullptr);
  EXPECT_EQ(crypto->version, "1.0");
  EXPECT_FALSE(crypto->egg_info);
}

TEST(PythonEnvTest, MissingDirectoriesAreSkipped) {
  auto dists = ScanDistributions({"/no/such/dir", SiteB(), SiteB()});
  ASSERT_TRUE(dists.ok()) << dists.status().ToString();
  EXPECT_EQ(Names(*dists), (std::vector<std::string>{"cryptolib", "onlyinb", "requests"}));
  auto none = ScanDistributions({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(PythonEnvTest, UnreadableMetadataIsAnError) {
  // A METADATA that cannot be read (here a folder, which even root cannot read as a file)
  // must not turn into a distribution without a version.
  fs::path dir = fs::temp_directory_path() / ("cairn-pyenv-" + RandomHex(6));
  fs::create_directories(dir / "secret-1.0.dist-info" / "METADATA");
  auto dists = ScanDistributions({dir.string()});
  fs::remove_all(dir);
  ASSERT_FALSE(dists.ok());
  EXPECT_EQ(dists.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(dists.status().message(), HasSubstr("secret-1.0.dist-info"));
}

// The whole snapshot of the fixtures, byte for byte.
constexpr char kExpectedToml[] = R"(lock-version = "1.0"
requires-python = "==3.11.2"
created-by = "cairn"

[[packages]]
name = "archived"
version = "2.0"

[packages.archive]
url = "https://files.example.com/archived-2.0-py3-none-any.whl"
hashes = {sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}

[packages.tool.cairn]
installer = "uv"

[[packages]]
name = "broken-url"
version = "1.0"

[packages.tool.cairn]
direct-url-error = "direct_url.json is not a JSON object"

[[packages]]
name = "cryptolib"
version = "1.0"

[packages.tool.cairn]
installer = "debian"

[[packages]]
name = "legacy-thing"
version = "0.9"

[packages.tool.cairn]
egg-info = true

[[packages]]
name = "localpkg"

[packages.directory]
path = "/home/dev/src/local pkg"
editable = true

[packages.tool.cairn]
version = "1.0.0.dev0"
installer = "pip"
record-sha256 = "da5798a0e218d60af7fc01aeace6de6719d3e23863fdac8a8a884969cc1308a2"
record-files = 2

[[packages]]
name = "mylib"

[packages.vcs]
type = "git"
url = "https://github.com/example/mylib.git"
requested-revision = "main"
commit-id = "4f0c2c1e9b7a3d5e6f8a9b0c1d2e3f4a5b6c7d8e"
subdirectory = "python"

[packages.tool.cairn]
version = "0.3.0"
installer = "pip"
record-sha256 = "07248f2f4ed22b01fc510bc20275d011c3c3078e28dac9928598a3ac5a74dc2a"
record-files = 2

[[packages]]
name = "nometa"
version = "4.5"

[packages.tool.cairn]
installer = "conda"

[[packages]]
name = "onlyinb"
version = "1.0"

[[packages]]
name = "requests"
version = "2.31.0"

[packages.tool.cairn]
installer = "pip"
record-sha256 = "bd5eb80dba9a22e101f9bf6d19f17a4bbc9d2f4a052a25b0934c62e7adf46388"
record-files = 5

[[packages]]
name = "single-file"
version = "1.2"

[packages.tool.cairn]
egg-info = true

[[packages]]
name = "zope-interface-extra"
version = "5.0"

[packages.tool.cairn]
metadata-name = "Zope.Interface__Extra"
installer = "pip"
record-sha256 = "d2e61f61a27cd23ff6f4334823d084202e8fb94fab37604532b2a59ede494b9b"
record-files = 1

[tool.cairn]
kind = "environment-snapshot"
interpreter = "/opt/venv/bin/python"
interpreter-realpath = "/usr/bin/python3.11"
implementation = "cpython"
python-version = "3.11.2"
sys-platform = "linux"
platform = "linux-x86_64"
python-tag = "cp311"
abi-tag = "cp311"
platform-tags = ["manylinux_2_36_x86_64", "linux_x86_64"]
soabi = "cpython-311-x86_64-linux-gnu"
ext-suffix = ".cpython-311-x86_64-linux-gnu.so"
prefix = "/opt/venv"
base-prefix = "/usr"
venv = true
sys-path = [
  "/usr/lib/python3.11",
  "/opt/venv/lib/python3.11/site-packages",
]
)";

TEST(PythonEnvTest, SnapshotTomlOfFixturesIsExactAndDeterministic) {
  auto first = ScanDistributions({SiteA(), SiteB()});
  auto second = ScanDistributions({SiteA(), SiteB()});
  ASSERT_TRUE(first.ok() && second.ok());
  std::string toml = SnapshotToml(fakes::FixedInterpreter(), *first);
  EXPECT_EQ(toml, kExpectedToml);
  EXPECT_EQ(SnapshotToml(fakes::FixedInterpreter(), *second), toml);

  // The order the caller lists distributions in does not matter.
  std::vector<InstalledDistribution> reversed(first->rbegin(), first->rend());
  EXPECT_EQ(SnapshotToml(fakes::FixedInterpreter(), reversed), toml);

  EXPECT_EQ(SnapshotHash(toml), Sha256Hex(toml));
  EXPECT_TRUE(IsSha256Hex(SnapshotHash(toml)));
  EXPECT_EQ(SnapshotHash(toml), SnapshotHash(SnapshotToml(fakes::FixedInterpreter(), *second)));

  // A real TOML parser reads it as intended (skipped without Python 3.11's tomllib).
  std::optional<std::string> dump = DumpTomlWithPython(toml);
  if (dump) {
    EXPECT_EQ(*dump,
              "archived 2.0\nbroken-url 1.0\ncryptolib 1.0\nlegacy-thing 0.9\nlocalpkg -\n"
              "mylib -\nnometa 4.5\nonlyinb 1.0\nrequests 2.31.0\nsingle-file 1.2\n"
              "zope-interface-extra 5.0\n"
              "created-by,lock-version,packages,requires-python,tool\n"
              "'/opt/venv/bin/python'\n");
  }
}

TEST(PythonEnvTest, HashChangesWhenAVersionChanges) {
  auto dists = ScanDistributions({SiteA(), SiteB()});
  ASSERT_TRUE(dists.ok());
  std::string before = SnapshotHash(SnapshotToml(fakes::FixedInterpreter(), *dists));
  for (InstalledDistribution& d : *dists) {
    if (d.normalized_name == "requests") d.version = "2.32.0";
  }
  std::string toml = SnapshotToml(fakes::FixedInterpreter(), *dists);
  EXPECT_THAT(toml, HasSubstr("name = \"requests\"\nversion = \"2.32.0\"\n"));
  EXPECT_NE(SnapshotHash(toml), before);

  // So does the interpreter.
  InterpreterInfo newer = fakes::FixedInterpreter();
  newer.version = "3.11.3";
  std::string toml2 = SnapshotToml(newer, *dists);
  EXPECT_THAT(toml2, HasSubstr("requires-python = \"==3.11.3\"\n"));
  EXPECT_NE(SnapshotHash(toml2), SnapshotHash(toml));
}

TEST(PythonEnvTest, TomlStringsAreEscaped) {
  InterpreterInfo i = fakes::FixedInterpreter();
  i.executable = std::string("/we\"ird\\dir\n\ttab\x01\x7f/\xC3\xA9/\xFF/python");
  std::string toml = SnapshotToml(i, {});
  EXPECT_THAT(toml, HasSubstr("interpreter = \"/we\\\"ird\\\\dir\\u000A\\u0009tab\\u0001\\u007F/"
                              "\xC3\xA9/\\uFFFD/python\"\n"));
  EXPECT_THAT(toml, Not(HasSubstr("[[packages]]")));
  std::optional<std::string> dump = DumpTomlWithPython(toml);
  if (dump) {
    EXPECT_THAT(*dump,
                HasSubstr("'/we\"ird\\\\dir\\n\\ttab\\x01\\x7f/\xC3\xA9/\xEF\xBF\xBD/python'"));
  }
}

TEST(PythonEnvTest, ParsesInterpreterReportAndRejectsMalformedOnes) {
  auto info = ParseInterpreterReport(
      R"({"executable": "/usr/bin/python3", "version": "3.12.1", "implementation": "cpython",
          "prefix": "/v", "base_prefix": "/usr", "path_dirs": ["/a", "/b"],
          "platform_tags": ["linux_x86_64"], "abi_tag": "cp312"})");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->version, "3.12.1");
  EXPECT_TRUE(info->in_venv);  // derived from prefix != base_prefix when not reported
  EXPECT_EQ(info->path_dirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(info->abi_tag, "cp312");

  EXPECT_EQ(ParseInterpreterReport("not json").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseInterpreterReport("[1]").status().code(), StatusCode::kInvalidArgument);
  auto no_version =
      ParseInterpreterReport(R"({"implementation": "cpython", "prefix": "/usr", "path_dirs": []})");
  EXPECT_EQ(no_version.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(no_version.status().message(), HasSubstr("version"));
  auto bad_paths = ParseInterpreterReport(
      R"({"version": "3.11.0", "implementation": "cpython", "prefix": "/", "path_dirs": [1]})");
  EXPECT_EQ(bad_paths.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_paths.status().message(), HasSubstr("path_dirs"));
}

TEST(PythonEnvTest, MissingInterpreterIsNotFound) {
  auto on_path = ProbeInterpreter("cairn-no-such-python3");
  EXPECT_EQ(on_path.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(on_path.status().message(), HasSubstr("cairn-no-such-python3"));
  auto by_path = ProbeInterpreter("/no/such/bin/python3");
  EXPECT_EQ(by_path.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(SnapshotPythonEnvironment("/no/such/bin/python3").status().code(),
            StatusCode::kNotFound);
}

// A stand-in interpreter (a shell script in a temporary directory) shows how the probe reads
// what an interpreter prints.
class FakePython {
 public:
  explicit FakePython(const std::string& body)
      : dir_(fs::temp_directory_path() / ("cairn-fakepy-" + RandomHex(6))) {
    fs::create_directories(dir_);
    std::ofstream(path()) << "#!/bin/sh\n" << body;
    chmod(path().c_str(), 0755);
  }
  ~FakePython() { fs::remove_all(dir_); }
  std::string path() const { return (dir_ / "python").string(); }

 private:
  fs::path dir_;
};

TEST(PythonEnvTest, ProbeFindsTheReportAmongOtherOutput) {
  FakePython python(
      "printf 'sitecustomize says hi'\n"
      "echo\n"
      "echo 'cairn-python-env: {\"version\": \"3.9.18\", \"implementation\": \"pypy\", "
      "\"prefix\": \"/p\", \"path_dirs\": [\"/p/lib\"]}'\n"
      "echo 'at exit'\n");
  auto info = ProbeInterpreter(python.path());
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->version, "3.9.18");
  EXPECT_EQ(info->implementation, "pypy");
  EXPECT_EQ(info->path_dirs, (std::vector<std::string>{"/p/lib"}));
  EXPECT_FALSE(info->in_venv);
}

TEST(PythonEnvTest, ProbeFailuresCarryTheErrorOutput) {
  FakePython failing("echo 'SyntaxError: invalid syntax' >&2\nexit 1\n");
  auto failed = ProbeInterpreter(failing.path());
  EXPECT_EQ(failed.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(failed.status().message(), HasSubstr("SyntaxError: invalid syntax"));

  FakePython missing_version("echo 'pyenv: python3.8: command not found' >&2\nexit 127\n");
  auto shim = ProbeInterpreter(missing_version.path());
  EXPECT_EQ(shim.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(shim.status().message(), HasSubstr("command not found"));

  FakePython silent_python("echo hello\n");
  auto silent = ProbeInterpreter(silent_python.path());
  EXPECT_EQ(silent.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(silent.status().message(), HasSubstr("no report"));
}

TEST(PythonEnvTest, ProbesThePython3OnPath) {
  auto info = ProbeInterpreter("python3");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->version.substr(0, 2), "3.");
  EXPECT_EQ(info->implementation, "cpython");
  EXPECT_EQ(info->python_tag.substr(0, 3), "cp3");
  EXPECT_EQ(info->abi_tag.substr(0, 3), "cp3");
  EXPECT_TRUE(fs::path(info->executable).is_absolute()) << info->executable;
  EXPECT_TRUE(fs::exists(info->executable)) << info->executable;
  ASSERT_FALSE(info->platform_tags.empty());
  EXPECT_FALSE(info->prefix.empty());
  EXPECT_FALSE(info->base_prefix.empty());
  ASSERT_FALSE(info->path_dirs.empty());
  for (const std::string& dir : info->path_dirs) {
    EXPECT_TRUE(fs::path(dir).is_absolute()) << dir;
    EXPECT_TRUE(fs::is_directory(dir)) << dir;
  }
}

TEST(PythonEnvTest, SnapshotsTheDebianPython) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  auto snap = SnapshotPythonEnvironment("/usr/bin/python3");
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ(snap->interpreter.executable, "/usr/bin/python3");
  EXPECT_FALSE(snap->interpreter.in_venv);
  EXPECT_EQ(snap->interpreter.prefix, snap->interpreter.base_prefix);
  ASSERT_FALSE(snap->distributions.empty());
  EXPECT_TRUE(std::is_sorted(
      snap->distributions.begin(), snap->distributions.end(),
      [](const auto& a, const auto& b) { return a.normalized_name < b.normalized_name; }));
  EXPECT_EQ(snap->toml.rfind("lock-version = \"1.0\"\nrequires-python = \"==3.", 0), 0u);
  EXPECT_THAT(snap->toml, HasSubstr("name = \"" + snap->distributions[0].normalized_name + "\""));
  EXPECT_EQ(snap->hash, SnapshotHash(snap->toml));
  EXPECT_EQ(snap->toml, SnapshotToml(snap->interpreter, snap->distributions));

  // The same environment snapshotted again: byte-identical.
  auto again = SnapshotPythonEnvironment("/usr/bin/python3");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->toml, snap->toml);
  EXPECT_EQ(again->hash, snap->hash);

  // Every distribution comes out of a TOML parser again.
  std::optional<std::string> dump = DumpTomlWithPython(snap->toml);
  if (dump) {
    size_t lines = std::count(dump->begin(), dump->end(), '\n');
    EXPECT_EQ(lines, snap->distributions.size() + 2);
    EXPECT_THAT(*dump, HasSubstr("'/usr/bin/python3'"));
  }
}

}  // namespace
}  // namespace cairn::env
