// What `cairn data` does with a dataset on this machine: add a directory as a new version,
// materialise a version into a directory, check a directory against a version.
//
// Files are hashed with the pipeline's tree hasher and its stat cache (a file unchanged since
// it was last hashed is not read again), and sent or fetched on several connections at once.
// Sending is resumable: the server remembers what each account sent, so a `data add` run again
// after being killed sends only what it had not sent.
//
// A version is materialised from a local cache of blobs (DataCacheDir()), each named by its
// SHA-256: files are hard-linked from it where the file system allows, else copied, so a
// second checkout of the same data costs no space and no transfer. Linked files are read-only,
// as the cache they share bytes with must not change. Every file is checked against the
// manifest once in place; a file that does not match (a cached blob damaged since) is fetched
// again. A directory remembers which version it holds, so that materialising another one there
// removes the files the old version had and the new one lacks, and nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dataset.h"
#include "core/tree_manifest.h"
#include "data/dataset_client.h"
#include "util/status.h"

namespace cairn::data {

// $CAIRN_DATA_CACHE, else $XDG_CACHE_HOME/cairn/data, else ~/.cache/cairn/data.
std::string DataCacheDir();

// Where a long operation stands, for a progress line.
struct Progress {
  const char* phase = "";  // "hashing", "sending", "fetching", "checking"
  int64_t done = 0;
  int64_t total = 0;
  int64_t bytes = 0;  // moved so far in this phase
};
using ProgressFn = std::function<void(const Progress&)>;

struct AddOptions {
  std::string message;
  std::string metadata = "{}";  // a JSON object's text
  std::string run_id;           // the run that made the version, if any
  int threads = 0;              // hashing; 0: the machine's cores
  int transfers = 16;           // blobs in flight at once
  std::string cache_dir;        // "" : DataCacheDir()
  ProgressFn progress;
};

struct AddResult {
  CreatedVersion created;
  int64_t files = 0;
  int64_t bytes = 0;
  int64_t files_read = 0;  // files whose bytes were hashed (not answered by the stat cache)
  int64_t blobs = 0;       // distinct blobs of the version, its manifest included
  int64_t blobs_sent = 0;
  int64_t bytes_sent = 0;
};

// Called with a file's path and size (pipeline::HashOptions::on_read).
using ReadHook = std::function<void(const std::string& path, int64_t size)>;

// The files `paths` name, as a version holds them: a single directory's files at the root;
// otherwise each file under its base name and each directory's files under its base name.
// Symbolic links inside a directory are refused (a dataset holds regular files), as are two
// paths with the same base name. `on_read`, when set, is called on a hashing thread just before
// a file's bytes are read, largest files first.
Result<std::vector<core::FileEntry>> CollectFiles(const std::vector<std::string>& paths,
                                                  int threads, const std::string& cache_dir,
                                                  std::vector<std::string>* local_paths,
                                                  int64_t* files_read,
                                                  const ReadHook& on_read = {});

// Adds the files of `paths` as a new version of dataset `name` (created if it has none).
Result<AddResult> AddVersion(DatasetClient& client, const std::string& name,
                             const std::vector<std::string>& paths, const AddOptions& options);

struct GetOptions {
  int threads = 0;
  int transfers = 16;
  std::string cache_dir;  // "": DataCacheDir()
  // Copy files rather than link them from the cache (files that may then be changed).
  bool copy = false;
  ProgressFn progress;
};

struct GetResult {
  core::DataVersion version;
  int64_t files = 0;
  int64_t fetched = 0;  // blobs fetched from the server
  int64_t bytes_fetched = 0;
  int64_t placed = 0;              // files written or linked into the directory
  int64_t removed = 0;             // files of the version the directory held before, gone now
  int64_t refetched = 0;           // cached blobs that did not match and were fetched again
  std::vector<std::string> extra;  // files in the directory that no version put there
};

// Makes `dir` hold version `version` of `name` (0: the latest), as the header says.
Result<GetResult> GetVersion(DatasetClient& client, const std::string& name, int64_t version,
                             const std::string& dir, const GetOptions& options);

// How a directory differs from a version.
struct VerifyResult {
  core::DataVersion version;
  core::ManifestDiff diff;  // from the version to the directory: added are extra files
  bool ok() const { return diff.empty(); }
};
Result<VerifyResult> VerifyVersion(DatasetClient& client, const std::string& name, int64_t version,
                                   const std::string& dir, int threads,
                                   const std::string& cache_dir);

}  // namespace cairn::data
