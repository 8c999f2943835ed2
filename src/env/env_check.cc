#include "env/env_check.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "env/standards/pep440.h"
#include "env/python_env.h"
#include "env/install/wheel_archive.h"
#include "util/file.h"
#include "util/json_writer.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

constexpr size_t kListedFiles = 20;

std::map<std::string, InstalledDistribution> Installed(
    const std::vector<InstalledDistribution>& dists) {
  std::map<std::string, InstalledDistribution> out;
  for (const InstalledDistribution& d : dists) out[d.normalized_name] = d;
  return out;
}

bool SameVersion(const std::string& a, const std::string& b) {
  Result<Version> x = Version::Parse(a), y = Version::Parse(b);
  if (x.ok() && y.ok()) return *x == *y;
  return a == b;
}

// Verifies the files a distribution's RECORD lists; adds findings for changed and missing ones.
Status VerifyFiles(const InstalledDistribution& d, const std::string& site,
                   EnvCheckReport* report) {
  CAIRN_ASSIGN_OR_RETURN(std::string text, ReadFile(fs::path(d.location) / "RECORD"));
  CAIRN_ASSIGN_OR_RETURN(std::vector<RecordEntry> rows, ParseRecord(text));
  PackageFinding changed{PackageFinding::Kind::kFilesChanged, d.normalized_name, "", d.version,
                         {}, 0};
  PackageFinding missing{PackageFinding::Kind::kFilesMissing, d.normalized_name, "", d.version,
                         {}, 0};
  for (const RecordEntry& row : rows) {
    if (row.hash.empty() || !row.hash.starts_with("sha256=")) continue;
    if (row.path.find("__pycache__/") != std::string::npos || row.path.ends_with(".pyc")) {
      continue;
    }
    const fs::path file = (fs::path(site) / row.path).lexically_normal();
    Result<std::string> content = ReadFile(file);
    ++report->files_checked;
    if (!content.ok()) {
      if (missing.files.size() < kListedFiles) missing.files.push_back(row.path);
      ++missing.file_count;
      continue;
    }
    const bool same = RecordSha256(*content) == row.hash &&
                      (row.size < 0 || static_cast<int64_t>(content->size()) == row.size);
    if (!same) {
      if (changed.files.size() < kListedFiles) changed.files.push_back(row.path);
      ++changed.file_count;
    }
  }
  if (changed.file_count > 0) report->packages.push_back(std::move(changed));
  if (missing.file_count > 0) report->packages.push_back(std::move(missing));
  return Status::Ok();
}

void HostJson(JsonWriter& w, const HostFinding& f) {
  w.BeginObject();
  w.Key("state").String(f.state == HostFinding::State::kOk         ? "ok"
                        : f.state == HostFinding::State::kViolated ? "violated"
                                                                   : "unknown");
  w.Key("requirement").String(f.requirement);
  w.Key("have").String(f.have);
  w.Key("detail").String(f.detail);
  w.EndObject();
}

std::string KindName(PackageFinding::Kind kind) {
  switch (kind) {
    case PackageFinding::Kind::kMissing:
      return "missing";
    case PackageFinding::Kind::kExtra:
      return "extra";
    case PackageFinding::Kind::kOtherVersion:
      return "other-version";
    case PackageFinding::Kind::kFilesChanged:
      return "files-changed";
    case PackageFinding::Kind::kFilesMissing:
      return "files-missing";
  }
  return "?";
}

}  // namespace

bool EnvCheckReport::ok() const {
  return packages.empty() &&
         std::none_of(host.begin(), host.end(), [](const HostFinding& f) {
           return f.state == HostFinding::State::kViolated;
         });
}

Result<EnvCheckReport> CheckEnvironment(const Lock& lock, const std::string& site_packages,
                                        const HostFacts& host, const EnvCheckOptions& options) {
  EnvCheckReport report;
  CAIRN_ASSIGN_OR_RETURN(std::vector<InstalledDistribution> scanned,
                         ScanDistributions({site_packages}));
  const std::map<std::string, InstalledDistribution> installed = Installed(scanned);
  std::map<std::string, InstalledDistribution> base;
  if (!options.base_site_packages.empty()) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<InstalledDistribution> base_scanned,
                           ScanDistributions({options.base_site_packages}));
    base = Installed(base_scanned);
  }
  std::map<std::string, const LockedPackage*> expected;
  for (const LockedPackage& p : lock.packages) {
    if (!p.marker.empty() && options.markers != nullptr) {
      Result<Marker> m = Marker::Parse(p.marker);
      if (m.ok() && !m->Evaluate(*options.markers)) continue;
    }
    expected[p.name] = &p;
  }
  for (const auto& [name, p] : expected) {
    ++report.packages_checked;
    auto it = installed.find(name);
    if (it == installed.end()) {
      // A layered environment leaves to its base what the base has at the same version.
      auto b = base.find(name);
      if (b != base.end() && SameVersion(b->second.version, p->version)) continue;
      report.packages.push_back({PackageFinding::Kind::kMissing, name, p->version, "", {}, 0});
      continue;
    }
    const InstalledDistribution& d = it->second;
    if (!SameVersion(d.version, p->version)) {
      report.packages.push_back(
          {PackageFinding::Kind::kOtherVersion, name, p->version, d.version, {}, 0});
      continue;
    }
    if (options.verify_files) CAIRN_RETURN_IF_ERROR(VerifyFiles(d, site_packages, &report));
    if (auto b = base.find(name); b != base.end() && !SameVersion(b->second.version, d.version)) {
      report.shadowed.push_back({name, d.version, b->second.version});
    }
  }
  for (const auto& [name, d] : installed) {
    if (expected.count(name) == 0) {
      report.packages.push_back({PackageFinding::Kind::kExtra, name, "", d.version, {}, 0});
    }
  }
  std::stable_sort(report.packages.begin(), report.packages.end(),
                   [](const PackageFinding& a, const PackageFinding& b) { return a.name < b.name; });
  CAIRN_ASSIGN_OR_RETURN(report.host, CheckHost(lock.host, host));
  return report;
}

std::string FormatCheckReport(const EnvCheckReport& report) {
  std::string out;
  for (const PackageFinding& f : report.packages) {
    switch (f.kind) {
      case PackageFinding::Kind::kMissing:
        out += "missing        " + f.name + " " + f.locked_version + " is locked but not installed\n";
        break;
      case PackageFinding::Kind::kExtra:
        out += "extra          " + f.name + " " + f.installed_version + " is installed but not locked\n";
        break;
      case PackageFinding::Kind::kOtherVersion:
        out += "other version  " + f.name + ": locked " + f.locked_version + ", installed " +
               f.installed_version + "\n";
        break;
      case PackageFinding::Kind::kFilesChanged:
      case PackageFinding::Kind::kFilesMissing: {
        const bool changed = f.kind == PackageFinding::Kind::kFilesChanged;
        out += std::string(changed ? "files changed  " : "files missing  ") + f.name + " " +
               f.installed_version + ": " + std::to_string(f.file_count) + " file(s) " +
               (changed ? "differ from" : "listed in") + " its RECORD" +
               (changed ? "" : " are gone") + "\n";
        for (const std::string& file : f.files) out += "                 " + file + "\n";
        if (f.file_count > f.files.size()) {
          out += "                 ... and " + std::to_string(f.file_count - f.files.size()) +
                 " more\n";
        }
        break;
      }
    }
  }
  for (const ShadowedPackage& s : report.shadowed) {
    out += "shadows base   " + s.name + " " + s.version + " hides the base environment's " +
           s.base_version + "\n";
  }
  size_t violated = 0;
  for (const HostFinding& f : report.host) {
    const char* state = f.state == HostFinding::State::kOk         ? "ok       "
                        : f.state == HostFinding::State::kViolated ? "VIOLATED "
                                                                   : "unknown  ";
    out += std::string("host ") + state + " " + f.requirement + ": " + f.have +
           (f.detail.empty() ? "" : " (" + f.detail + ")") + "\n";
    if (f.state == HostFinding::State::kViolated) ++violated;
  }
  const size_t problems = report.packages.size() + violated;
  if (problems == 0) {
    out += "environment matches its lock: " + std::to_string(report.packages_checked) +
           " packages, " + std::to_string(report.files_checked) + " files verified" +
           (report.host.empty() ? "" : "; the host meets its demands") + "\n";
  } else {
    out += std::to_string(problems) + " problem(s): " + std::to_string(report.packages.size()) +
           " with packages, " + std::to_string(violated) + " with the host\n";
  }
  return out;
}

std::string CheckReportJson(const EnvCheckReport& report) {
  JsonWriter w;
  w.BeginObject();
  w.Key("ok").Bool(report.ok());
  w.Key("packages").BeginArray();
  for (const PackageFinding& f : report.packages) {
    w.BeginObject();
    w.Key("kind").String(KindName(f.kind));
    w.Key("name").String(f.name);
    w.Key("locked_version").String(f.locked_version);
    w.Key("installed_version").String(f.installed_version);
    w.Key("files").BeginArray();
    for (const std::string& file : f.files) w.String(file);
    w.EndArray();
    w.Key("file_count").Int(static_cast<int64_t>(f.file_count));
    w.EndObject();
  }
  w.EndArray();
  w.Key("shadowed").BeginArray();
  for (const ShadowedPackage& s : report.shadowed) {
    w.BeginObject().Key("name").String(s.name).Key("version").String(s.version);
    w.Key("base_version").String(s.base_version).EndObject();
  }
  w.EndArray();
  w.Key("host").BeginArray();
  for (const HostFinding& f : report.host) HostJson(w, f);
  w.EndArray();
  w.Key("packages_checked").Int(static_cast<int64_t>(report.packages_checked));
  w.Key("files_checked").Int(static_cast<int64_t>(report.files_checked));
  w.EndObject();
  return w.Take();
}

}  // namespace cairn::env
