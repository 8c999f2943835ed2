// The `environment` section of a project's cairn.yaml: what `cairn env lock` resolves.
//
//   environment:
//     python: "3.11"                  # the interpreter version to lock for (default: python3's)
//     requirements:                   # PEP 508, with extras and markers
//       - numpy>=1.24
//       - torch==2.1.*; sys_platform == "linux"
//     sources:                        # searched in this order, all of them
//       - find-links: wheels/         # a directory of wheels, relative to cairn.yaml
//       - index: https://pypi.org/simple   # a PEP 503/691 simple index
//     platforms: [cp311-manylinux_2_17_x86_64]   # targets (default: this host)
//     prereleases: false
//     host:                           # what the host must offer
//       cuda: "12"
//       driver: ">=535"
//       compute-capability: "7.5"
//     base: ../base/pylock.toml       # a base environment's lock, relative to cairn.yaml
//
// docs/formats/cairn-yaml.md describes the section.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "env/lock.h"
#include "util/status.h"

namespace cairn::env {

struct PackageSourceSpec {
  enum class Kind { kFindLinks, kIndex };
  Kind kind = Kind::kFindLinks;
  std::string location;  // a directory (as written: relative to cairn.yaml) or a URL
  // "find-links:DIR" or "index:URL", the form locks record.
  std::string ToString() const;
  static Result<PackageSourceSpec> FromString(std::string_view text);
};

struct EnvironmentSpec {
  std::string python;  // "3.11" or "3.11.4"; empty: the version of python3 on PATH
  std::vector<std::string> requirements;
  std::vector<PackageSourceSpec> sources;
  std::vector<std::string> platforms;  // TargetPlatform texts; empty: this host
  bool prereleases = false;
  HostRequirements host;
  std::string base;  // a base environment's lock file, as written (relative to cairn.yaml)
  std::string dir;   // the directory of cairn.yaml: relative paths start there

  // `path` (a find-links directory, the base) made absolute against `dir`.
  std::string Resolve(const std::string& path) const;

  // SHA-256 over everything above in a canonical form: a lock whose inputs-hash differs was
  // made from other inputs (stale).
  std::string InputsHash() const;
};

// Parses cairn.yaml text found in directory `dir`. InvalidArgument naming
// `source` and the field for anything malformed or unknown (a misspelt key is an error, not
// silently ignored). NotFound when the file has no `environment` section.
Result<EnvironmentSpec> ParseEnvironmentSpec(std::string_view yaml, std::string_view source,
                                             const std::string& dir);

// Reads <project_dir>/cairn.yaml.
Result<EnvironmentSpec> ReadEnvironmentSpec(const std::string& project_dir);

}  // namespace cairn::env
