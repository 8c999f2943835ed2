// Garbage collection of the environment store: which built environments are still wanted, and
// removing the others. An environment is wanted when some project known to the store
// (EnvStore::Projects) has it active, or it is among the last `keep` distinct environments of
// that project's history, so that `cairn env rollback` keeps working after a gc. Every other
// environment goes, whoever built it: the store keeps no other record of use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "env/env_store.h"
#include "env/project_env.h"
#include "util/status.h"

namespace cairn::env {

// One project's environment pointers, as ProjectEnv reads them.
struct ProjectPointers {
  std::optional<std::string> active;  // the active environment's store path
  std::vector<std::string> history;   // store paths made active, oldest first
};

// The store paths the rule keeps: each project's active environment and the `keep` most recent
// distinct environments of its history (none when keep <= 0).
std::set<std::string> EnvironmentsKept(const std::vector<ProjectPointers>& projects, int keep);

struct GcOptions {
  int keep = 3;          // recent environments kept per project
  bool dry_run = false;  // decide, but remove nothing
  // The wheel cache (index/wheel_cache.h) to collect too; empty: none. A wheel goes, with its
  // unpacked tree, when no kept environment's lock names it and it was not used (fetched,
  // found or unpacked) for `wheel_max_age_ms` (<= 0: no wheel goes).
  std::string wheel_cache;
  int64_t wheel_max_age_ms = 30LL * 24 * 3600 * 1000;
  int64_t now_ms = 0;  // 0: the clock's
  // Called with each environment about to be removed (in a dry run: that would be), in the
  // store's order (newest first), before it is removed.
  std::function<void(const StoredEnvironment&)> on_remove;
};

struct GcReport {
  size_t removed = 0;  // in a dry run: to remove
  size_t kept = 0;
  size_t wheels_removed = 0;      // in a dry run: to remove
  int64_t wheel_bytes_freed = 0;  // the wheels' and their unpacked trees' sizes
};

// Removes from `store` every environment EnvironmentsKept does not keep, reading the pointers
// of every project the store knows, then the wheels options.wheel_cache no longer needs. Stops at
// the first removal that fails and returns its error; the environments removed before it stay
// removed.
Result<GcReport> CollectGarbage(EnvStore& store, const GcOptions& options);

}  // namespace cairn::env
