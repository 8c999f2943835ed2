// Checkpoints of steps: the files a step keeps in its checkpoint directory (`checkpoint: DIR`
// in pipeline.yaml), stored while the step runs so that a retried or resumed attempt continues
// from them instead of starting over.
//
// A checkpoint is a manifest under the run's directory, checkpoints/<step>.json, naming each
// file's path, size, mode, modification time and SHA-256; the bytes are copies in the step
// cache's object store (objects/ab/cdef...), by content, so a file that did not change is
// stored once however often the checkpoint is saved. Files are copied, never linked: training
// code overwrites its checkpoint files in place, which must not reach the stored copy. Each
// save also writes a step cache entry naming those files, so that `cairn pipeline gc` keeps
// them as it keeps outputs used as recently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/step_cache.h"
#include "util/status.h"

namespace cairn::pipeline {

struct CheckpointFile {
  FileEntry entry;       // path relative to the directory, size, mode, sha256
  int64_t mtime_ns = 0;  // when it was last written, as stored
};

class CheckpointStore {
 public:
  // The checkpoints of the run whose directory is `run_dir`, their bytes in `cache`'s objects.
  CheckpointStore(std::string run_dir, StepCache* cache)
      : run_dir_(std::move(run_dir)), cache_(cache) {}

  // Stores the files of `dir` (an absolute path) as the checkpoint of `step`: those that
  // changed since its last one, but, unless `settle_ms` is 0, none written in the last
  // `settle_ms` (a file being written keeps its earlier copy, if any). Returns how many files
  // the checkpoint holds. A missing `dir` is an empty checkpoint.
  Result<size_t> Save(const std::string& step, const std::string& dir, int64_t settle_ms);
  // The last checkpoint of `step`; nullopt when none was saved.
  Result<std::optional<std::vector<CheckpointFile>>> Load(const std::string& step) const;
  // Makes `dir` hold exactly the last checkpoint of `step`, as copies (a step may write into
  // them); an empty directory when none was saved. Returns how many files it restored, or
  // nullopt when there was no checkpoint.
  Result<std::optional<size_t>> Restore(const std::string& step, const std::string& dir);

 private:
  std::string ManifestPath(const std::string& step) const;
  // Writes an entry into the step cache that names the checkpoint's files, so that the cache's
  // collection (cache_gc.h) keeps them as long as it keeps an entry used then.
  Status KeepInCache(const std::string& step, const std::vector<CheckpointFile>& files);

  std::string run_dir_;
  StepCache* cache_;
};

}  // namespace cairn::pipeline
