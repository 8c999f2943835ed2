// `cairn env check`: an installed environment against its lock (packages missing, extra or at
// another version; installed files changed since install, by the hashes in each RECORD), the
// packages it shadows in its base environment, and the host against the lock's demands.
#pragma once

#include <string>
#include <vector>

#include "env/host_check.h"
#include "env/host_facts.h"
#include "env/lock.h"
#include "env/standards/pep508.h"
#include "util/status.h"

namespace cairn::env {

struct PackageFinding {
  enum class Kind { kMissing, kExtra, kOtherVersion, kFilesChanged, kFilesMissing };
  Kind kind = Kind::kMissing;
  std::string name;
  std::string locked_version;
  std::string installed_version;
  std::vector<std::string> files;  // changed or missing files (RECORD paths), the first 20
  size_t file_count = 0;           // how many in all
};

// A package the environment installs at another version than its base has.
struct ShadowedPackage {
  std::string name;
  std::string version;       // this environment's
  std::string base_version;  // the base's, which it hides
};

struct EnvCheckReport {
  std::vector<PackageFinding> packages;  // sorted by name
  std::vector<ShadowedPackage> shadowed;
  std::vector<HostFinding> host;
  size_t packages_checked = 0;
  size_t files_checked = 0;
  // No package finding and no violated host demand ("unknown" does not fail; shadowing is
  // what a base layer is for, so it is listed, not failed).
  bool ok() const;
};

struct EnvCheckOptions {
  bool verify_files = true;
  // The target's markers: lock packages whose marker does not hold are not expected. Null: all.
  const MarkerEnvironment* markers = nullptr;
  // The base environment's site-packages and lock, for a layered environment.
  std::string base_site_packages;
  const Lock* base_lock = nullptr;
};

// `site_packages` is the environment's site-packages directory.
Result<EnvCheckReport> CheckEnvironment(const Lock& lock, const std::string& site_packages,
                                        const HostFacts& host, const EnvCheckOptions& options);

// One line per finding and a summary line, for people.
std::string FormatCheckReport(const EnvCheckReport& report);
// {"ok", "packages": [...], "shadowed": [...], "host": [...], "packages_checked",
// "files_checked"}.
std::string CheckReportJson(const EnvCheckReport& report);

}  // namespace cairn::env
