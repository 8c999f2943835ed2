// The environments runs recorded, compared on the server. `cairn run` uploads two records
// with every run (env/env_diff.h: the snapshot of its Python environment and the facts of its
// host); this reads them from the artifact store and diffs them with the same code as
// `cairn runs diff-env`, so the web UI's compare page shows what the terminal shows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "env/env_diff.h"
#include "service/artifact_service.h"
#include "service/tracking_service.h"

namespace cairn::service {

// The largest record read: a snapshot of thousands of packages is well under a megabyte.
inline constexpr int64_t kMaxEnvironmentRecordBytes = 16 << 20;

// A run's recorded environment; nullopt when the run has no snapshot (it was not recorded by
// `cairn run`, or its artifacts are kept elsewhere). kNotFound when there is no such run,
// InvalidArgument when a record cannot be read.
Result<std::optional<env::EnvDescription>> ReadRunEnvironment(TrackingService& tracking,
                                                              ArtifactService& artifacts,
                                                              const std::string& run_id);

struct RunEnvironmentDiff {
  std::string run_id;
  env::EnvDiff diff;  // from the baseline to this run
};

struct RunEnvironmentRecord {
  std::string run_id;
  bool recorded = false;  // it has a readable environment snapshot
  std::string error;      // why its snapshot could not be read, when it has one
};

struct EnvironmentComparison {
  std::vector<RunEnvironmentRecord> runs;  // in the order asked
  // The first run with a recorded environment; empty when none has one.
  std::string baseline;
  // Every other run with a recorded environment, against the baseline.
  std::vector<RunEnvironmentDiff> diffs;
};

// Compares the recorded environments of 2 to 10 runs with the first of them that has one. A
// run whose snapshot cannot be read is left out of the comparison, with the reason. kNotFound
// for a run that does not exist; InvalidArgument for fewer than 2 or more than 10 runs.
Result<EnvironmentComparison> CompareRunEnvironments(TrackingService& tracking,
                                                     ArtifactService& artifacts,
                                                     const std::vector<std::string>& run_ids);

}  // namespace cairn::service
