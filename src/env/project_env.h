// A project's active environment and the records of a built environment that do not need the
// store's builder: which environment is active (<project>/.cairn/env/current, a symlink into
// the store, switched atomically) and its history, an environment's info.json, and the runs
// that used it. env_store.h builds environments; `cairn run` only reads these.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "util/status.h"

namespace cairn::env {

struct StoredEnvironment {
  std::string id;
  std::string path;
  std::string lock_hash;
  std::string created;  // ISO 8601 UTC
  std::string python;
  std::string target;
  size_t packages = 0;
  std::vector<std::string> runs;  // runs that used it
};

// Reads the records of the built environment at `path` (<path>/.cairn/info.json and runs).
Result<StoredEnvironment> LoadStoredEnvironment(const std::string& path);
// Records that `run_id` used the environment at `path`.
Status RecordEnvironmentRun(const std::string& path, const std::string& run_id);

// The environment pointers of one project.
class ProjectEnv {
 public:
  explicit ProjectEnv(std::string project_dir);

  // The active environment's store path, or nullopt when the project has none (or its target
  // is gone from the store).
  std::optional<std::string> ActivePath() const;
  // Makes the environment at `env_path` active (atomic) and appends it to the history.
  Status Use(const std::string& env_path);
  // Switches back to the environment active before the current one; FailedPrecondition when
  // there is none. Returns its path.
  Result<std::string> Rollback();
  // Environment paths in the order they were made active, oldest first.
  std::vector<std::string> History() const;

 private:
  std::string dir_;  // <project>/.cairn/env
};

// The project directory for `start`: the nearest directory upwards holding cairn.yaml or a
// .cairn/env directory; `start` itself when there is none.
std::string FindProjectDir(const std::string& start);

}  // namespace cairn::env
