// `cairn env lock`: from the environment section of cairn.yaml to a lock. The requirements are
// resolved (resolver.h) against the package sources, in order: find-links directories (every
// *.whl in them) and PEP 503/691 simple indexes (project pages; PEP 658 metadata when the
// index offers it, else the wheel itself, fetched into the wheel cache). The lock pins, per
// package, the one wheel chosen for each target platform with its size and SHA-256.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "env/lock.h"
#include "env/manifest.h"
#include "env/resolve/resolver.h"
#include "env/standards/wheel_tags.h"
#include "util/status.h"

namespace cairn::env {

struct LockOptions {
  // The interpreter whose version is used when the spec names none (and whose full version is
  // used for markers when the spec's X.Y matches it).
  std::string python = "python3";
  std::string cache_root;  // the wheel cache; empty: DefaultCacheRoot()
  std::string lock_dir;    // where the lock will be written: wheel paths are relative to it
  std::function<void(const std::string& line)> progress;
};

// The wheels the sources offer, for one target. Exposed for tests.
class SourceProvider : public CandidateProvider {
 public:
  static Result<std::unique_ptr<SourceProvider>> Create(const EnvironmentSpec& spec,
                                                        const TargetPlatform& target,
                                                        const std::string& cache_root);
  ~SourceProvider() override;
  Result<std::vector<Candidate>> Candidates(const std::string& project) override;
  Result<CoreMetadata> Metadata(const Candidate& candidate) override;
  // The SHA-256 and size of a candidate's file (from the index, else by hashing the file,
  // fetching it into the cache first when it is remote).
  Result<std::pair<std::string, int64_t>> Digest(const Candidate& candidate);

 private:
  struct Impl;
  explicit SourceProvider(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Resolves `spec` and returns the lock (not yet written). The resolver's explanation when the
// requirements cannot all be met; InvalidArgument for malformed requirements or platforms.
Result<Lock> LockEnvironment(const EnvironmentSpec& spec, const LockOptions& options);

}  // namespace cairn::env
