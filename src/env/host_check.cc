#include "env/host_check.h"
#include "util/strings.h"

#include <cctype>
#include <cstdlib>

namespace cairn::env {
namespace {

std::vector<long> Parts(std::string_view v) {
  std::vector<long> parts;
  size_t i = 0;
  while (i < v.size()) {
    size_t dot = v.find('.', i);
    std::string_view part = v.substr(i, dot == std::string_view::npos ? dot : dot - i);
    parts.push_back(std::strtol(std::string(part).c_str(), nullptr, 10));
    if (dot == std::string_view::npos) break;
    i = dot + 1;
  }
  return parts;
}

bool Numeric(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0 && c != '.') return false;
  }
  return v.front() != '.' && v.back() != '.';
}

std::string DriverOf(const HostFacts& host) {
  if (!host.driver_version.empty()) return host.driver_version;
  for (const GpuInfo& gpu : host.gpus) {
    if (!gpu.driver_version.empty()) return gpu.driver_version;
  }
  return "";
}

std::string DriverText(const HostFacts& host) {
  const std::string driver = DriverOf(host);
  if (driver.empty()) {
    return "no NVIDIA driver" + (host.gpu_note.empty() ? "" : " (" + host.gpu_note + ")");
  }
  return driver + (host.cuda_driver_version.empty()
                       ? ""
                       : " (supports CUDA " + host.cuda_driver_version + ")");
}

}  // namespace

std::string MinimumDriverForCuda(std::string_view cuda_version) {
  const long major = std::strtol(std::string(cuda_version).c_str(), nullptr, 10);
  switch (major) {
    case 11:
      return "450.80.02";
    case 12:
      return "525.60.13";
    case 13:
      return "580";
    default:
      return "";
  }
}

int CompareDottedVersions(std::string_view a, std::string_view b) {
  std::vector<long> x = Parts(a), y = Parts(b);
  const size_t n = std::max(x.size(), y.size());
  x.resize(n, 0);
  y.resize(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}

Result<bool> DottedVersionInRange(std::string_view version, std::string_view range) {
  bool in = true;
  size_t start = 0;
  while (start <= range.size()) {
    size_t comma = range.find(',', start);
    std::string_view clause =
        Trim(range.substr(start, comma == std::string_view::npos ? comma : comma - start));
    start = comma == std::string_view::npos ? range.size() + 1 : comma + 1;
    if (clause.empty()) return InvalidArgument("empty clause in version range '" + std::string(range) + "'");
    std::string_view op;
    for (std::string_view candidate : {">=", "<=", "==", "!=", ">", "<"}) {
      if (clause.starts_with(candidate)) {
        op = candidate;
        break;
      }
    }
    if (op.empty()) op = "==";  // a bare version means exactly it
    std::string_view bound = Trim(clause.substr(clause.starts_with(op) ? op.size() : 0));
    const bool prefix = bound.ends_with(".*");
    if (prefix) bound.remove_suffix(2);
    if (!Numeric(bound) || (prefix && op != "==" && op != "!=")) {
      return InvalidArgument("cannot read version range '" + std::string(range) +
                             "': expected clauses like >=535, <560 or ==535.*");
    }
    bool holds;
    if (prefix) {
      const std::vector<long> want = Parts(bound), have = Parts(version);
      holds = have.size() >= want.size() &&
              std::equal(want.begin(), want.end(), have.begin());
      if (op == "!=") holds = !holds;
    } else {
      const int c = CompareDottedVersions(version, bound);
      holds = op == ">=" ? c >= 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : op == "<" ? c < 0
              : op == "==" ? c == 0 : c != 0;
    }
    in = in && holds;
  }
  return in;
}

Result<std::vector<HostFinding>> CheckHost(const HostRequirements& required,
                                           const HostFacts& host) {
  std::vector<HostFinding> out;
  const std::string driver = DriverOf(host);
  if (!required.cuda.empty()) {
    HostFinding f;
    f.requirement = "cuda " + required.cuda;
    f.have = DriverText(host);
    const std::string floor = MinimumDriverForCuda(required.cuda);
    if (floor.empty()) {
      return InvalidArgument("host requirement cuda = \"" + required.cuda +
                             "\": CUDA majors 11, 12 and 13 are known");
    }
    if (driver.empty()) {
      f.state = HostFinding::State::kViolated;
      f.detail = "CUDA " + required.cuda + " builds need an NVIDIA driver >= " + floor;
    } else if (CompareDottedVersions(driver, floor) < 0) {
      f.state = HostFinding::State::kViolated;
      f.detail = "CUDA " + required.cuda + " builds need driver >= " + floor + "; this host has " +
                 driver;
    }
    out.push_back(std::move(f));
  }
  if (!required.driver.empty()) {
    HostFinding f;
    f.requirement = "driver " + required.driver;
    f.have = DriverText(host);
    if (driver.empty()) {
      f.state = HostFinding::State::kViolated;
      f.detail = "no NVIDIA driver";
    } else {
      CAIRN_ASSIGN_OR_RETURN(bool in, DottedVersionInRange(driver, required.driver));
      if (!in) {
        f.state = HostFinding::State::kViolated;
        f.detail = "driver " + driver + " is not " + required.driver;
      }
    }
    out.push_back(std::move(f));
  }
  if (!required.compute_capability.empty()) {
    HostFinding f;
    f.requirement = "compute capability >= " + required.compute_capability;
    if (!Numeric(required.compute_capability)) {
      return InvalidArgument("host requirement compute-capability = \"" +
                             required.compute_capability + "\": expected a number like 7.5");
    }
    if (host.gpus.empty()) {
      f.state = HostFinding::State::kViolated;
      f.have = "no GPU" + (host.gpu_note.empty() ? "" : " (" + host.gpu_note + ")");
      f.detail = "no GPU to run on";
    }
    for (const GpuInfo& gpu : host.gpus) {
      const std::string name = "GPU " + std::to_string(gpu.index) + " " + gpu.name;
      if (!f.have.empty()) f.have += ", ";
      if (gpu.compute_capability.empty()) {
        f.have += name + " (compute capability not reported)";
        if (f.state == HostFinding::State::kOk) {
          f.state = HostFinding::State::kUnknown;
          f.detail = "the driver does not report compute capabilities (drivers before 510)";
        }
        continue;
      }
      f.have += name + " " + gpu.compute_capability;
      if (CompareDottedVersions(gpu.compute_capability, required.compute_capability) < 0) {
        f.state = HostFinding::State::kViolated;
        f.detail = name + " has compute capability " + gpu.compute_capability + ", below " +
                   required.compute_capability;
      }
    }
    out.push_back(std::move(f));
  }
  if (!required.glibc.empty()) {
    HostFinding f;
    f.requirement = "glibc >= " + required.glibc;
    f.have = host.glibc.empty() ? "unknown" : host.glibc;
    if (host.glibc.empty()) {
      f.state = HostFinding::State::kUnknown;
      f.detail = "the host's glibc version is not known (musl, or not recorded)";
    } else if (CompareDottedVersions(host.glibc, required.glibc) < 0) {
      f.state = HostFinding::State::kViolated;
      f.detail = "wheels built for manylinux glibc " + required.glibc + " need glibc >= " +
                 required.glibc + "; this host has " + host.glibc;
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace cairn::env
