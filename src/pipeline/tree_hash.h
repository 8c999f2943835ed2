// Content hashes of a pipeline step's inputs and outputs. A regular file is named by the SHA-256
// of its bytes; a directory by the SHA-256 of its manifest, a deterministic JSON list of every
// regular file and symlink under it (path, size, mode, sha256; docs/formats/manifest.md), so two
// trees with the same files, modes and link targets hash alike wherever and whenever they were
// written, and any change to a byte, a name, the executable bit or a link target changes it
// (tree_manifest.h).
//
// Files are hashed in parallel. A StatCache (stat_cache.h) remembers the hash of each file by
// its stat, so re-hashing a tree reads only the files that changed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tree_manifest.h"
#include "pipeline/stat_cache.h"
#include "util/status.h"

namespace cairn::pipeline {

// The manifest's format is core's (core/tree_manifest.h): the server reads the manifests of
// datasets too. The pipeline names its parts as its own.
using core::FileEntry;
using core::kModeExecutable;
using core::kModeFile;
using core::kModeSymlink;
using core::ManifestJson;
using core::ParseManifestJson;
using core::PrintablePath;

struct TreeHash {
  // A file: the SHA-256 of its bytes. A directory: the SHA-256 of ManifestJson(files), unless
  // HashOptions::name_directory was false (then empty).
  std::string digest;
  bool is_directory = false;
  // A directory: every regular file and symlink under it, sorted by path. A file: one entry.
  std::vector<FileEntry> files;
  int64_t bytes = 0;       // the sum of the entries' sizes
  int64_t files_read = 0;  // regular files whose bytes were read (not answered by the cache)
};

// How file bytes are read. Both give the same digests; kRead is the default because it was
// faster with warm pages and no slower cold (docs/benchmarks.md), and because a file truncated
// while mapped kills the process with SIGBUS, where read(2) just returns fewer bytes.
enum class ReadMethod { kRead, kMmap };

struct HashOptions {
  // Threads walking the tree and hashing files; 0: std::thread::hardware_concurrency().
  int threads = 0;
  StatCache* cache = nullptr;  // optional; looked up and updated, not saved
  ReadMethod read_method = ReadMethod::kRead;
  // Optional: called on a hashing thread just before a file's bytes are read, with its path
  // and its size at the walk (files the cache answers are not read). Larger files come first.
  std::function<void(const std::string& path, int64_t size)> on_read = nullptr;
  // Whether a directory's digest is computed; a caller that names the files its own way (a
  // dataset's manifest) saves building and hashing a manifest it would not use.
  bool name_directory = true;
};

// Hashes a file or a directory tree. `path` itself is followed when it is a symlink (an input
// named "data" that links to a dataset elsewhere means the dataset); inside a directory,
// symlinks are recorded as links and never followed.
//
// Errors: kNotFound when `path` does not exist; kInvalidArgument naming the path for a socket,
// fifo or device (as `path` or inside the tree), for a name that is not valid UTF-8, and for a
// negative thread count; kUnavailable when a file changes while it is being hashed (retrying
// may help) or cannot be read, with the errno text and path.
Result<TreeHash> HashPath(const std::string& path, const HashOptions& options);

// Hashes the chosen files under directory `root` (`paths` relative to it, '/'-separated) as
// HashPath would hash them inside a directory: a regular file by its bytes, a symlink by its
// target, never followed. A path that is gone or names a directory is left out, as is a
// duplicate; a path with a `.` or `..` component, or leading out of `root` through a symlinked
// directory, is kInvalidArgument. The result is a directory of the files hashed.
Result<TreeHash> HashFiles(const std::string& root, const std::vector<std::string>& paths,
                           const HashOptions& options);

}  // namespace cairn::pipeline