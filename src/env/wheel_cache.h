// The global content-addressed cache of wheel files, and where their unpacked trees go:
//   <root>/wheels/<sha256[0:2]>/<sha256>.whl
//   <root>/unpacked/<sha256[0:2]>/<sha256>/
// Files are written to a temporary name and renamed, so a cached path always holds complete,
// verified bytes; processes and threads may fill the cache at once.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>

#include "env/http_fetch.h"
#include "util/status.h"

namespace cairn::env {

// $CAIRN_CACHE_DIR, else $XDG_CACHE_HOME/cairn, else ~/.cache/cairn.
std::string DefaultCacheRoot();

class WheelCache {
 public:
  explicit WheelCache(std::string root);
  const std::string& root() const { return root_; }

  // The cached file with this SHA-256, if present (and of `size` bytes when size >= 0; a file
  // of another size is removed).
  std::optional<std::string> Find(const std::string& sha256, int64_t size = -1) const;

  // Makes the wheel present: from the cache, else copied from the local `path` or downloaded
  // from `url` (one of them), verifying size (when >= 0) and SHA-256. A mismatch is kFailedPrecondition
  // naming `what`, the source, and the expected and actual values; nothing is kept. Returns the
  // cached path.
  Result<std::string> Fetch(const std::string& sha256, int64_t size, const std::string& url,
                            const std::string& path, const std::string& what,
                            const FetchOptions& options = {},
                            std::function<void(int64_t, int64_t)> progress = {});

  // Where the unpacked tree of the wheel with this hash goes (it may not exist yet).
  std::string UnpackedDir(const std::string& sha256) const;

  // Adds a local file by its hash: {sha256, size, cached path}.
  Result<std::tuple<std::string, int64_t, std::string>> AddLocal(const std::string& path);

 private:
  std::string PathOf(const std::string& sha256) const;
  std::string root_;
};

}  // namespace cairn::env
