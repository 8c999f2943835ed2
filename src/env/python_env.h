// Python environment snapshot: which interpreter a run used and which distributions it could
// import. The interpreter is asked about itself (version, implementation, platform, the wheel
// tags it accepts, prefix and base prefix, sys.path); the directories on its sys.path are then
// scanned for installed distributions (`*.dist-info`, and legacy `*.egg-info`) the way
// importlib.metadata finds them: the first distribution of a name along sys.path wins.
//
// The snapshot is written in the shape of a PEP 751 `pylock.toml`, with what PEP 751 cannot say
// (the interpreter, installers, RECORD digests) under `[tool.cairn]` and `[packages.tool.cairn]`.
// It is lock-shaped, not installable: an installed wheel does not keep the hash of the file it
// came from, so index installs carry no `wheels`/`sdist` source. Only direct URL installs
// (PEP 610 `direct_url.json`) get a PEP 751 source table (`vcs`, `directory` or `archive`).
//
// The text is deterministic (no timestamps, fixed key order, packages sorted by normalized
// name), so its SHA-256 identifies the environment: same environment, same hash.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace cairn::env {

// What an interpreter reports about itself. Strings it could not give are empty.
struct InterpreterInfo {
  std::string executable;       // sys.executable, e.g. "/usr/bin/python3" or a venv's bin/python
  std::string real_executable;  // the same with symlinks resolved, e.g. "/usr/bin/python3.11"
  std::string version;          // PEP 440 form of sys.version_info: "3.11.2", "3.13.0rc1"
  std::string implementation;   // sys.implementation.name: "cpython", "pypy"
  std::string sys_platform;     // sys.platform: "linux", "darwin"
  std::string platform;         // sysconfig.get_platform(): "linux-x86_64"
  std::string soabi;            // sysconfig SOABI: "cpython-311-x86_64-linux-gnu"
  std::string ext_suffix;       // sysconfig EXT_SUFFIX: ".cpython-311-x86_64-linux-gnu.so"
  std::string python_tag;       // wheel interpreter tag: "cp311", "pp310"
  std::string abi_tag;          // wheel ABI tag: "cp311", "cp313t", "pypy310_pp73"
  // Wheel platform tags, most specific first: on glibc Linux "manylinux_2_36_x86_64" (which
  // also admits every manylinux_2_N with N <= 36) then "linux_x86_64". Computed from the
  // standard library only, so musllinux and the macOS version ladder are not listed.
  std::vector<std::string> platform_tags;
  std::string prefix;       // sys.prefix
  std::string base_prefix;  // sys.base_prefix; differs from prefix inside a venv
  bool in_venv = false;
  // The sys.path entries that are directories, absolute, in sys.path order, without
  // duplicates. The entry `-c` puts first (the probe's working directory) is left out: the
  // command that runs later puts its own script's directory there instead.
  std::vector<std::string> path_dirs;
};

// Source of a direct URL install, from PEP 610's direct_url.json.
struct DirectUrl {
  enum class Kind { kVcs, kDirectory, kArchive };
  Kind kind = Kind::kArchive;
  std::string url;           // as recorded; for VCS without the "git+" prefix
  std::string subdirectory;  // within the source tree; empty when none
  // kVcs
  std::string vcs;                 // "git", "hg", "bzr", "svn"
  std::string commit_id;           // the exact revision installed
  std::string requested_revision;  // what the user asked for ("main", "v1.2"); may be empty
  // kDirectory
  bool editable = false;
  // kArchive: algorithm ("sha256") to lowercase hex digest.
  std::map<std::string, std::string> archive_hashes;
};

// One distribution found on sys.path.
struct InstalledDistribution {
  std::string name;             // as its metadata spells it, e.g. "Zope.Interface"
  std::string normalized_name;  // PEP 503: "zope-interface"
  std::string version;          // empty when neither the metadata nor the folder name give one
  std::string installer;        // first line of INSTALLER ("pip", "uv", "conda", "debian")
  std::string location;         // the .dist-info / .egg-info path
  bool egg_info = false;        // a legacy .egg-info (folder or file), not a .dist-info
  std::optional<DirectUrl> direct_url;
  // Why direct_url.json was present but not used ("not valid JSON", …); empty otherwise.
  std::string direct_url_error;
  // The SHA-256 of the RECORD file stands for the distribution's content: RECORD lists every
  // installed file with its own hash, so a changed file (that was reinstalled) changes RECORD.
  // Empty without a RECORD (egg-info, some system packages).
  std::string record_sha256;
  int64_t record_files = 0;  // rows of RECORD, i.e. installed files it lists
};

struct EnvSnapshot {
  InterpreterInfo interpreter;
  std::vector<InstalledDistribution> distributions;
  std::string toml;  // SnapshotToml(interpreter, distributions)
  std::string hash;  // SnapshotHash(toml)
};

// How long the interpreter may take to answer. Startup is normally well under a second, but
// .pth files and sitecustomize run arbitrary code.
inline constexpr int kProbeTimeoutSeconds = 60;

// Runs `python` ("python3", looked up on PATH, or a path) with a short `-c` script and reads
// back what it says about itself. The child inherits this process's environment
// (PYTHONPATH, VIRTUAL_ENV, …) because the command that is snapshotted runs with it too.
// NotFound when the interpreter does not exist (or a shim such as pyenv's reports exit code
// 127, "command not found"); FailedPrecondition when it fails or prints no report;
// Unavailable when it does not answer within kProbeTimeoutSeconds (its process group is then
// killed).
Result<InterpreterInfo> ProbeInterpreter(const std::string& python);

// Parses the JSON object the probe script prints. InvalidArgument, naming the field, when the
// text is not that object. Exposed for tests.
Result<InterpreterInfo> ParseInterpreterReport(std::string_view json);

// Scans each directory, in order, for installed distributions. A name found again in a later
// directory is shadowed by the first, as Python's import would do; within one directory a
// .dist-info is preferred over an .egg-info of the same name, then folder names decide, so the
// outcome does not depend on directory listing order. Directories that do not exist are
// skipped (sys.path routinely names some). Unreadable metadata files (other than missing ones)
// are errors, because a snapshot that silently lacks a package would be wrong. Sorted by
// normalized name.
Result<std::vector<InstalledDistribution>> ScanDistributions(
    const std::vector<std::string>& path_dirs);

// A distribution name normalized per PEP 503: lowercase, runs of '-', '_' and '.' become '-'.
std::string NormalizeDistributionName(std::string_view name);

// The snapshot as pylock.toml-shaped text (see the top of this file). Deterministic: the same
// inputs give byte-identical text. Per PEP 751, packages installed from a source tree (VCS or
// directory) carry their installed version under [packages.tool.cairn], not as `version`.
std::string SnapshotToml(const InterpreterInfo& interpreter,
                         const std::vector<InstalledDistribution>& distributions);

// Lowercase hex SHA-256 of the snapshot text.
std::string SnapshotHash(std::string_view toml);

// ProbeInterpreter, ScanDistributions over its path_dirs, SnapshotToml and SnapshotHash.
Result<EnvSnapshot> SnapshotPythonEnvironment(const std::string& python);

}  // namespace cairn::env
