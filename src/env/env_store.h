// The environment store: environments built from lock files, immutable, side by side, each in
// a directory named by its lock's hash, and the pointer that makes one of them a project's
// active environment.
//
// Store layout (root: $CAIRN_ENV_STORE, else $XDG_DATA_HOME/cairn/envs, else
// ~/.local/share/cairn/envs):
//   <id>/                  a virtual environment (bin/python, lib/pythonX.Y/site-packages, ...);
//                          id is the first 16 hex digits of the lock's SHA-256
//   <id>/.cairn/lock.toml  the lock it was built from, byte for byte
//   <id>/.cairn/info.json  when, from which interpreter, for which target, how many files
//   <id>/.cairn/runs       run ids of `cairn run`s that used it, one a line (appended)
//   .build-<id>-<random>/  a build in progress; renamed to <id> when complete, so a build
//                          killed halfway leaves no environment behind (and is swept later)
//   projects               project directories that used the store, one a line
//
// Building never re-resolves: every wheel is the one the lock names, fetched into the wheel
// cache (size and SHA-256 verified), unpacked once into the unpacked cache, and linked into the
// environment (wheel_install.h). An environment whose lock names a base environment gets a
// .pth file putting the base's site-packages after its own, and does not install again the
// packages the base has at the same version (a package at another version shadows the base's).
//
// A project's active environment is <project>/.cairn/env/current, a symlink into the store
// switched atomically (rename of a new symlink over the old); <project>/.cairn/env/history
// lists every switch, newest last, for rollback.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "env/lock.h"
#include "env/project_env.h"
#include "env/install/wheel_install.h"
#include "util/status.h"

namespace cairn::env {

struct BuildOptions {
  std::string python;  // the base interpreter; empty: pythonX.Y on PATH for the lock's X.Y
  std::string cache_root;  // wheel and unpacked caches; empty: DefaultCacheRoot()
  LinkMode link = LinkMode::kAuto;
  int jobs = 8;  // parallel downloads; unpacking and linking use the machine's cores
  // Progress for people ("fetching 12/40 wheels (8.1 of 23.0 MB)"), called often; the caller
  // decides how to show it.
  std::function<void(const std::string& line)> progress;
};

struct BuiltEnvironment {
  std::string id;
  std::string path;  // the environment's prefix
  std::string lock_hash;
  bool already_built = false;  // it was in the store; nothing was done
  size_t packages = 0;         // installed in this environment (not counting the base's)
  size_t files = 0;
  size_t downloaded = 0;  // wheels not in the cache before
  double seconds = 0;
};


class EnvStore {
 public:
  explicit EnvStore(std::string root);
  static std::string DefaultRoot();
  const std::string& root() const { return root_; }

  // Builds the environment `lock_path` describes (see the top of this file). Errors: the
  // lock's ParseLock errors; FailedPrecondition when the interpreter does not match the lock
  // or a package has no wheel for this host; kFailedPrecondition for a wheel whose size or hash is not
  // the lock's (naming the package); the fetcher's and installer's errors. Nothing is left in
  // the store on failure.
  Result<BuiltEnvironment> Build(const std::string& lock_path, const BuildOptions& options);

  // The environment with this id, or the only one whose id starts with it.
  Result<StoredEnvironment> Find(const std::string& id_or_prefix) const;
  // Every environment in the store, newest first.
  Result<std::vector<StoredEnvironment>> List() const;
  // Removes an environment (not an active one: the caller checks).
  Status Remove(const std::string& id);
  // Records that `run_id` used the environment.
  Status RecordRun(const std::string& id, const std::string& run_id);
  // Remembers a project directory (for gc).
  Status RegisterProject(const std::string& project_dir);
  std::vector<std::string> Projects() const;

  std::string PathOf(const std::string& id) const;

 private:
  Result<StoredEnvironment> Load(const std::string& id) const;
  std::string root_;
};

}  // namespace cairn::env
