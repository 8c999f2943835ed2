// A task's code snapshot: the files of the project a task was queued from, so that an agent
// runs exactly that code without access to the repository (docs/agents.md, "Code snapshots").
//
// In a git repository the snapshot holds what the working tree holds now: the tracked files
// with their uncommitted changes and the untracked files git does not ignore
// (capture::ListWorkingFiles). Outside one, every file under the directory. The files are
// hashed into a directory manifest (docs/formats/manifest.md) and uploaded as artifacts of the
// task's first run:
//   cairn/task/snapshot.json   the manifest; its SHA-256 names the snapshot
//   cairn/task/code/PATH       each file (for a symlink, its target text)
// Artifacts are blobs named by their content, so a file that is in many snapshots is stored
// once.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "pipeline/tree_hash.h"
#include "util/status.h"

namespace cairn::client {
class TrackingClient;
}

namespace cairn::cli {

inline constexpr std::string_view kSnapshotManifestArtifact = "cairn/task/snapshot.json";
inline constexpr std::string_view kSnapshotFilesArtifact = "cairn/task/code";

struct SnapshotLimits {
  int64_t max_files = 20000;
  int64_t max_file_bytes = 100ll << 20;
  int64_t max_total_bytes = 1ll << 30;
};

struct CodeSnapshot {
  std::string root;  // the repository's working directory, else the directory itself
  std::string cwd;   // the directory the command runs in, relative to root ("" for root)
  bool in_repository = false;
  pipeline::TreeHash tree;  // the files, sorted; tree.digest names the snapshot
};

// Takes the snapshot of the code around `cwd`; with `root`, of every file under it (`cwd` is
// within it), whatever repository may hold it. Over a limit is kFailedPrecondition, naming the largest file and what to do
// about it.
Result<CodeSnapshot> TakeCodeSnapshot(const std::string& cwd, const SnapshotLimits& limits = {},
                                      const std::string& root = "");

// Uploads the snapshot's files and manifest as artifacts of the run at `artifact_uri`;
// `progress(done, total)` after each file.
Status UploadCodeSnapshot(client::TrackingClient& client, const std::string& artifact_uri,
                          const CodeSnapshot& snapshot,
                          const std::function<void(size_t, size_t)>& progress = nullptr);

// Writes the snapshot `digest` kept with the run at `artifact_uri` into `dir` (made when
// missing; it should be empty). The manifest must hash to `digest` and every file to its
// entry, else kInternal naming the file. Returns the number of files written.
Result<int64_t> MaterialiseCodeSnapshot(client::TrackingClient& client,
                                        const std::string& artifact_uri,
                                        const std::string& digest, const std::string& dir);

}  // namespace cairn::cli
