// The global content-addressed cache of wheel files, and where their unpacked trees go:
//   <root>/wheels/<sha256[0:2]>/<sha256>.whl
//   <root>/unpacked/<sha256[0:2]>/<sha256>/
// A wheel is named by the SHA-256 of its bytes, so environments and projects share one copy.
// Files are written to a temporary name beside their final one, verified, fsynced and renamed
// into place, so a cached path always holds complete, verified bytes. Any number of threads
// and processes may use one cache at once: racing writers of a hash rename identical bytes
// over each other, and readers see one whole file or the other.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>

#include "env/index/http_fetch.h"
#include "util/status.h"

namespace cairn::env {

// $CAIRN_CACHE_DIR, else $XDG_CACHE_HOME/cairn (when absolute), else ~/.cache/cairn.
std::string DefaultCacheRoot();

class WheelCache {
 public:
  // Nothing is created until a wheel is added.
  explicit WheelCache(std::string root);
  const std::string& root() const { return root_; }

  // The cached file with this SHA-256 (hex, either case), if present. When size >= 0, a cached
  // file of another size is removed and reported absent. The content is not re-hashed: only
  // this class writes there, and it verifies before it renames.
  std::optional<std::string> Find(const std::string& sha256, int64_t size = -1) const;

  // Makes the wheel with this SHA-256 present and returns its cached path: from the cache, else
  // copied from the local `path` when set, else downloaded from `url` (progress as in
  // HttpDownload). The bytes must have the SHA-256 and, when size >= 0, the size. Errors:
  // kInvalidArgument for a malformed sha256 or neither source given; a mismatch is
  // kFailedPrecondition naming `what` (e.g. "numpy 1.26.4 (numpy-1.26.4-...whl)"), the source,
  // and the expected and actual hash and size, and nothing is kept; download and copy errors
  // carry `what` as context.
  Result<std::string> Fetch(const std::string& sha256, int64_t size, const std::string& url,
                            const std::string& path, const std::string& what,
                            const FetchOptions& options = {},
                            std::function<void(int64_t, int64_t)> progress = {});

  // Where the unpacked tree of the wheel with this hash goes (it may not exist yet).
  std::string UnpackedDir(const std::string& sha256) const;

  // Copies a local file into the cache under its computed hash (find-links wheels during
  // `lock`): {sha256, size, cached path}.
  Result<std::tuple<std::string, int64_t, std::string>> AddLocal(const std::string& path);

 private:
  std::string PathOf(const std::string& sha256) const;
  std::string root_;
};

}  // namespace cairn::env
