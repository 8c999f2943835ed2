// A cache of Python environment snapshots, so that `cairn run` does not start the interpreter
// (tens of milliseconds) when nothing changed since the last run. An entry is found by what
// decides which interpreter runs and what its sys.path holds, without running it: the
// interpreter as named and the file it resolves to on PATH (path, size, modification time),
// the working directory when the interpreter is a script (pyenv's shims choose by it; a
// compiled interpreter does not) and the environment variables
// that steer Python (PYTHONPATH, PYTHONHOME, VIRTUAL_ENV, ...). An entry is used only while
// the interpreter and every directory on its sys.path keep their modification times:
// installing, upgrading or removing a distribution changes its directory's.
#pragma once

#include <string>

#include "env/python_env.h"
#include "util/status.h"

namespace cairn::capture {

// $XDG_CACHE_HOME/cairn/python-env, else ~/.cache/cairn/python-env.
std::string DefaultPythonEnvCacheDir();

// SnapshotPythonEnvironment(python), answered from `cache_dir` when a valid entry is there
// (then `distributions` is empty and `package_count` says how many there were), and stored
// there otherwise. A cache that cannot be read or written is ignored.
struct CachedSnapshot {
  env::EnvSnapshot snapshot;
  size_t package_count = 0;
  bool from_cache = false;
};
Result<CachedSnapshot> SnapshotPythonEnvironmentCached(const std::string& python,
                                                       const std::string& cache_dir);

}  // namespace cairn::capture
