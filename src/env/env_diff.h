// `cairn env diff`: two environments compared, each described by a lock (cairn's or another
// tool's PEP 751 file) or by the snapshot `cairn run` records (lock-shaped, see python_env.h).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "env/lock.h"
#include "util/status.h"

namespace cairn::env {

struct PackageInfo {
  std::string version;
  std::string wheel;   // the wheel's file name, when a lock names one
  std::string digest;  // the wheel's sha256, or a snapshot's RECORD digest
};

struct EnvDescription {
  std::string label;
  std::map<std::string, PackageInfo> packages;  // by normalised name
  std::string python;
  std::string target;  // a lock's target, or a snapshot's platform and tags
  HostRequirements host;
  // ComparedHostFacts of the host a snapshot was taken on (or a run ran on); empty for locks.
  std::vector<std::pair<std::string, std::string>> host_facts;
  std::map<std::string, CondaPackage> conda;
};

// Reads a lock or a snapshot (with its [tool.cairn.host-facts]). InvalidArgument naming `source`
// when the text is neither.
Result<EnvDescription> DescribeLockText(std::string_view toml, std::string_view source);

struct EnvDiff {
  struct Change {
    std::string name;
    std::string from, to;  // versions (or, for the same version, what else changed)
    std::string what;      // "version", "wheel" or "files"
  };
  std::vector<std::pair<std::string, std::string>> added, removed;  // name, version
  std::vector<Change> changed;
  std::vector<Change> interpreter;  // "python", "target"
  std::vector<Change> host;         // "cuda", "driver", "compute-capability", "glibc"
  std::vector<Change> host_facts;   // ComparedHostFacts names; only when both sides have facts
  std::vector<std::pair<std::string, std::string>> conda_added, conda_removed;
  std::vector<Change> conda_changed;
  bool empty() const;
};

EnvDiff DiffEnvironments(const EnvDescription& a, const EnvDescription& b);
// "+ name 1.0", "- name 2.0", "~ name 1.0 -> 1.1" under headings; "no differences" when empty.
std::string FormatEnvDiff(const EnvDiff& diff, const std::string& label_a,
                          const std::string& label_b, bool color);
std::string EnvDiffJson(const EnvDiff& diff);

}  // namespace cairn::env
