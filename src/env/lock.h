// The lock file: a PEP 751 `pylock.toml` that pins every package of an environment to one wheel
// (file name, URL or path, size and SHA-256), with what PEP 751 cannot say under [tool.cairn]:
// the target platform the set was resolved for, the requirements and sources it came from,
// the host it needs (CUDA, driver, compute capability, glibc), a base environment, and
// imported conda packages. docs/formats/lock.md describes the file.
//
// FormatLock writes deterministic text (fixed key order, packages sorted by name, no
// timestamps), so the same lock gives byte-identical files and its SHA-256 names the
// environment built from it. ParseLock reads any PEP 751 file whose packages each name one
// wheel for the target (files written by other tools may list several; the build then picks by
// tag).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace cairn::env {

struct LockedWheel {
  std::string name;  // the wheel's file name
  std::string url;   // where it is downloaded from; or
  std::string path;  // a local file, relative to the lock file's directory unless absolute
  int64_t size = -1;  // bytes; -1 when the lock does not say
  std::string sha256;  // lowercase hex
};

struct LockedPackage {
  std::string name;     // normalised (PEP 503)
  std::string version;  // normalised (PEP 440)
  std::string marker;   // PEP 508 marker limiting where it is installed; empty: everywhere
  std::string requires_python;
  std::string index;  // the simple index it was found on; empty for find-links files
  // Names of the packages it depends on (for people and audits: PEP 751 forbids installers to
  // act on them).
  std::vector<std::string> dependencies;
  std::vector<LockedWheel> wheels;  // cairn writes exactly one: the wheel for the target
  bool requested = false;  // named by a top-level requirement ([packages.tool.cairn])
};

// What the host must offer for the environment to work ([tool.cairn.host]). Empty: no demand.
struct HostRequirements {
  std::string cuda;                // CUDA major (or major.minor) the build needs: "12"
  std::string driver;              // a PEP 440 specifier on the driver version: ">=535"
  std::string compute_capability;  // the lowest GPU compute capability: "7.5"
  std::string glibc;               // the lowest glibc: the highest manylinux floor of the wheels
  bool empty() const {
    return cuda.empty() && driver.empty() && compute_capability.empty() && glibc.empty();
  }
};

// A conda package imported from an explicit spec (`conda list --explicit`) or conda-meta.
struct CondaPackage {
  std::string name;
  std::string version;
  std::string build;
  std::string channel;
  std::string url;
  std::string md5;
  std::string sha256;
};

struct Lock {
  std::string requires_python;  // e.g. "==3.11.*"
  std::vector<std::string> environments;  // PEP 751 markers the lock is valid for
  std::string created_by = "cairn";
  std::vector<LockedPackage> packages;

  // [tool.cairn]
  std::string target;        // TargetPlatform text, e.g. "cp311-manylinux_2_36_x86_64"
  std::string python;        // the interpreter version resolved for: "3.11.2"
  std::vector<std::string> requirements;  // the top-level requirements as given
  std::vector<std::string> sources;       // "find-links:DIR" or "index:URL", in order
  std::string inputs_hash;  // SHA-256 of the inputs (manifest section), to tell a stale lock
  std::string base;         // the base environment: a lock file path or an environment id
  HostRequirements host;
  std::vector<CondaPackage> conda;

  const LockedPackage* Find(std::string_view name) const;
};

// The lock as pylock.toml text; deterministic. Packages are written sorted by name.
std::string FormatLock(const Lock& lock);

// Parses pylock.toml text. InvalidArgument, naming `source` (a file name for messages) and the
// field, when it is not a lock cairn can install from: no lock-version or a major other than 1,
// a package without a name, a wheel without a name or without a sha256 hash.
Result<Lock> ParseLock(std::string_view text, std::string_view source);

// Reads and parses a lock file.
Result<Lock> ReadLockFile(const std::string& path);

// Lowercase hex SHA-256 of the lock's text: the identity of the environment it describes.
std::string LockHash(std::string_view text);

}  // namespace cairn::env
