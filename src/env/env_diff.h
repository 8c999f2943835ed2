// Environment diff: two environments compared, each described by a lock (cairn's or another
// tool's PEP 751 file), by the snapshot `cairn run` records with a run (lock-shaped, see
// python_env.h, with the host it ran on beside it in host.json) or by a snapshot carrying its
// host facts in [tool.cairn.host-facts]. `cairn env diff`, `cairn runs diff-env` and the
// server's environment diff endpoint (which the web UI's compare page reads) all use this one
// model, text form and JSON form.
//
// Paths (interpreter, prefix, sys.path), the hostname, GPU UUIDs and CPU flags are not
// compared: the same environment in another place or on another machine is the same
// environment.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "env/lock.h"
#include "util/status.h"

namespace cairn::env {

struct PackageInfo {
  std::string version;
  // Where it came from when not from an index: "git https://…@<commit>", "directory /src/x
  // (editable)", "archive https://…/x.whl sha256:…", "url …"; "" for index installs.
  std::string source;
  std::string wheel;          // the wheel's file name, when a lock names one
  std::string wheel_sha256;   // that wheel's sha256
  std::string record_sha256;  // a snapshot's digest of the installed files (RECORD)
};

using FieldValues = std::vector<std::pair<std::string, std::string>>;

struct EnvDescription {
  std::string label;
  // A snapshot of an installed environment (`kind = "environment-snapshot"`), not a lock.
  bool snapshot = false;
  std::map<std::string, PackageInfo> packages;  // by normalised name
  // The interpreter by pylock key. A lock: python-version and target. A snapshot:
  // implementation, python-version, sys-platform, platform, python-tag, abi-tag, platform-tags
  // (joined with ", "), soabi, venv.
  FieldValues interpreter;
  HostRequirements host;  // a lock's requirements of the host that runs it
  // ComparedHostFacts of the host a snapshot was taken on (or a run ran on); empty when unknown.
  FieldValues host_facts;
  std::map<std::string, CondaPackage> conda;

  // The interpreter's Python version, "" when unknown.
  std::string python_version() const;
};

// The records `cairn run` uploads with a run, relative to its artifact root: the snapshot of
// its Python environment and the facts of the host it ran on.
inline constexpr std::string_view kRunPylockArtifact = "cairn/environment/pylock.toml";
inline constexpr std::string_view kRunHostArtifact = "cairn/host.json";

// Reads a lock or a snapshot (with its [tool.cairn.host-facts]). InvalidArgument naming `source`
// when the text is neither, or a package has no name.
Result<EnvDescription> DescribeLockText(std::string_view toml, std::string_view source);
// Sets the host facts of `description` from a host.json (host_facts.h); InvalidArgument when it
// is not a JSON object of host facts.
Status AddHostFactsJson(std::string_view json, EnvDescription* description);
// A run's environment from its two records (`host_json` empty when the run has none), labelled
// `label`. Errors name the record that could not be read.
Result<EnvDescription> DescribeRunRecords(std::string_view pylock, std::string_view host_json,
                                          std::string_view label);

struct EnvDiff {
  enum class Kind { kAdded, kRemoved, kChanged };
  struct PackageChange {
    Kind kind = Kind::kChanged;
    std::string name;
    std::string from, to;  // versions; "" on the side that lacks the package
    // Beyond the version: "source git …@a -> git …@b", "wheel x-1-py3-none-any.whl ->
    // x-1-cp311-…whl", "wheel file differs (sha256 1234abcd5678 -> …)", "installed files differ
    // (RECORD sha256 1234abcd5678 -> 5678ef901234)".
    std::vector<std::string> details;
  };
  struct FieldChange {
    std::string name;
    std::string from, to;  // "" when absent
  };
  std::vector<PackageChange> packages;  // by name
  std::vector<FieldChange> interpreter;
  std::vector<FieldChange> host;        // host requirements: cuda, driver, compute-capability, glibc
  std::vector<FieldChange> host_facts;  // ComparedHostFacts names; only when both sides have facts
  std::vector<PackageChange> conda;     // by name; details unused
  // What the "no differences" line says about side A.
  size_t packages_before = 0;
  std::string python_before;
  bool host_facts_compared = false;

  bool empty() const;
};

EnvDiff DiffEnvironments(const EnvDescription& a, const EnvDescription& b);

// The diff for a reader, in the manner of diff(1): "--- label_a" / "+++ label_b", then the
// sections that have changes: "packages: 1 added, 2 changed" with one "  + name 1.0",
// "  - name 2.0" or "  ~ name 1.0 -> 1.1: details" line per package; "interpreter:",
// "host requirements:" and "host:" with "  ~ field: from -> to" lines; "conda packages:".
// When nothing differs: "no differences (N packages, Python X, same host facts)". Control
// characters in values (the records come from a server) print as spaces; `color` paints
// added, removed and changed lines green, red and yellow.
std::string FormatEnvDiff(const EnvDiff& diff, std::string_view label_a, std::string_view label_b,
                          bool color);

// {"same": bool, "packages": [{"name", "change": "added"|"removed"|"changed", "from", "to",
// "details": []}], "interpreter": [{"name", "from", "to"}], "host_requirements": [...],
// "host": [...], "conda": [{"name", "change", "from", "to"}], "packages_before": N,
// "python_before": "3.11.2"}.
std::string EnvDiffJson(const EnvDiff& diff);

}  // namespace cairn::env
