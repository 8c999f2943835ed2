// The step cache: a step that has run before with the same inputs is not run again.
//
// A step's key is the SHA-256 over its parts: its canonical definition (command, the
// parameters it uses, its environment variables, its declared outputs), the content hash of
// each input (tree_hash.h; upstream outputs included), the code it runs (its declared code
// paths, else the git commit and the uncommitted changes of the repository) and the hash of
// its environment's lock. The parts are kept beside the key so that `cairn pipeline explain`
// can say which of them changed.
//
// Under the cache root (default: $CAIRN_CACHE_DIR, else ~/.cache/cairn):
//   objects/ab/cdef…[.x]   every output file once, by the SHA-256 of its bytes (".x" for an
//                          executable one: a hard link shares the mode); read-only
//   objects/ab/cdef….json  the manifest of an output directory
//   steps/ab/<key>.json    an entry: the key's parts, the outputs (path, digest, directory or
//                          not) and the run that produced them
// Every file is written under a temporary name and renamed into place: runners sharing a
// cache root (on one host or over a network filesystem) never read a half-written one.
// Outputs enter the store by hard link where the filesystem allows (else by copy), and are
// restored into the working directory by hard link too: nothing is copied twice. A step must
// therefore not modify its inputs in place; cairn removes a step's declared outputs before
// the step runs, so that it writes new files rather than into the store's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/tree_hash.h"
#include "util/status.h"

namespace cairn::pipeline {

struct KeyParts {
  std::string definition;                     // canonical JSON of the definition
  std::map<std::string, std::string> inputs;  // path -> digest
  // path -> digest; or, for a step without code paths, "git commit" -> the commit and
  // "git uncommitted changes" -> the digest of the changes (untracked files included)
  std::map<std::string, std::string> code;
  std::string env;                            // the lock's hash, or "none"
  // The key: SHA-256 over every part in a fixed order.
  std::string Key() const;
  std::string ToJson() const;
  static Result<KeyParts> FromJson(std::string_view json);
};

// What differs from `before` to `now`, for a person: "input data/train.csv changed",
// "command changed: python train.py --lr 0.01 -> python train.py --lr 0.1", ... Empty when the
// keys are the same.
std::vector<std::string> ExplainChanges(const KeyParts& before, const KeyParts& now);

struct CachedOutput {
  std::string path;    // relative to the working directory
  std::string digest;  // TreeHash::digest
  bool is_directory = false;
  int64_t bytes = 0;
  uint32_t mode = 0;  // a file's FileEntry mode
};

struct CacheEntry {
  std::string key;
  KeyParts parts;
  std::vector<CachedOutput> outputs;
  std::string pipeline_run;  // the pipeline run that produced it
  std::string step;          // the step id there
  std::string tracking_run;  // the step's tracking run, when tracked
  int64_t time_ms = 0;
};

class StepCache {
 public:
  // `root` is created when missing. `stat_cache` (optional) speeds up hashing.
  StepCache(std::string root, StatCache* stat_cache);
  // Writes what Flush has not written yet.
  ~StepCache();
  StepCache(const StepCache&) = delete;
  StepCache& operator=(const StepCache&) = delete;

  static std::string DefaultRoot();
  const std::string& root() const { return root_; }

  // The content hash of a path under `workdir` (a file's or a directory's digest).
  Result<std::string> Hash(const std::string& workdir, const std::string& path);

  // The entry for `key` when there is one whose objects are all present.
  Result<std::optional<CacheEntry>> Lookup(const std::string& key);

  // Hashes the step's outputs (each must exist: FailedPrecondition naming the first missing),
  // puts their files into the object store and records the entry. The entry's file is
  // written by the next Flush, so that a caller can start the next step first and create
  // the file while that step's process starts; Lookup sees the entry at once.
  Result<CacheEntry> Store(const std::string& workdir, const std::string& key,
                           const KeyParts& parts, const std::vector<std::string>& outputs,
                           CacheEntry meta);

  // Writes the entries stored since the last Flush; returns the first failure, if any (a lost
  // entry costs a re-run later, never a wrong result).
  Status Flush();

  // Makes the entry's outputs present in `workdir`: outputs that already hold the cached
  // content are left alone; others are removed and re-created from the store by hard links
  // (copies across filesystems). Returns how many outputs were restored.
  Result<int> Restore(const std::string& workdir, const CacheEntry& entry);

  // Removes `paths` under `workdir` (files or directories) so that a step writes them anew.
  static Status RemoveOutputs(const std::string& workdir, const std::vector<std::string>& paths);

  // Where the store keeps the file whose bytes hash to `digest` (objects/ab/cdef...[.x]).
  std::string ObjectPath(const std::string& digest, bool executable) const;
  // The files of a stored output: the output itself when it is a file, else its directory's
  // manifest as stored.
  Result<std::vector<FileEntry>> OutputFiles(const CachedOutput& output) const;

 private:
  std::optional<CacheEntry> ParseEntry(const std::string& key, const std::string& text) const;
  // Enters a file into the object store: by hard link, or copied when `copy` is set.
  Status PutFile(const std::string& source, const FileEntry& entry, bool copy);
  Status Materialise(const std::string& target, const FileEntry& entry);

  std::string root_;
  StatCache* stat_cache_;
  std::map<std::string, std::string> pending_;  // key -> entry, not yet written
};

}  // namespace cairn::pipeline
