// Whether a host offers what a lock's [tool.cairn.host] demands: the NVIDIA driver a CUDA
// build needs, a driver version range, the GPUs' compute capability, and glibc.
//
// The CUDA rules are NVIDIA's minor version compatibility: a build with any CUDA 11.x toolkit
// runs on a driver >= 450.80.02, 12.x on >= 525.60.13, 13.x on >= 580 (newer features may
// need newer drivers; those are not modelled). A GPU must have at least the compute
// capability the build needs; glibc must be at least the highest manylinux floor of the wheels.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "env/host_facts.h"
#include "env/lock.h"
#include "util/status.h"

namespace cairn::env {

struct HostFinding {
  enum class State { kOk, kViolated, kUnknown };  // kUnknown: the host does not tell
  State state = State::kOk;
  std::string requirement;  // "cuda 12", "driver >=535", "compute capability >= 7.5", "glibc >= 2.28"
  std::string have;         // what the host has: "470.199.02 (CUDA 11.4)", "no NVIDIA driver"
  std::string detail;       // why it falls short, for people
};

// The lowest driver version for a CUDA major version; empty for majors the rules do not cover.
std::string MinimumDriverForCuda(std::string_view cuda_version);

// Compares dotted numeric versions ("535.104.05" < "535.129"); missing parts count as 0.
int CompareDottedVersions(std::string_view a, std::string_view b);

// Whether a dotted version satisfies a comma-separated range such as ">=535", ">=525,<560",
// "==535.*" (operators >=, >, <=, <, ==, !=, and == with a trailing .* for a prefix).
// InvalidArgument for a range it cannot read.
Result<bool> DottedVersionInRange(std::string_view version, std::string_view range);

// One finding per demand of `required` (none when it demands nothing). InvalidArgument when a
// demand cannot be read.
Result<std::vector<HostFinding>> CheckHost(const HostRequirements& required,
                                           const HostFacts& host);

}  // namespace cairn::env
