// The blobs of a backup (`cairn backup`, `cairn restore`): every blob a metadata snapshot names
// in its artifact index (runs' artifacts, model versions' files, datasets' manifests and the
// files they list) or among its dataset blobs, copied from one content store to another unless
// the other has it already. Blobs never change, so a copy is incremental: what an earlier
// backup copied is not copied again.
// Each blob is hashed on its way, so a damaged source blob is found rather than copied.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "blob/content_store.h"
#include "store/metadata_store.h"

namespace cairn::service {

struct BlobCopyProgress {
  int64_t done = 0;
  int64_t total = 0;
  int64_t bytes = 0;
};

struct BlobCopyOptions {
  int threads = 4;
  std::function<void(const BlobCopyProgress&)> progress;  // from any thread, serialised
};

struct BlobCopy {
  int64_t files = 0;   // files the snapshot names (datasets' read from their manifests)
  int64_t blobs = 0;   // distinct blobs they name
  int64_t copied = 0;  // of those, copied now (the rest were there)
  int64_t bytes_copied = 0;
  int64_t bytes = 0;                 // of all the blobs named
  std::vector<std::string> lost;     // named, but gone from the source (removed meanwhile)
  std::vector<std::string> corrupt;  // "DIGEST: its bytes hash to OTHER"
  bool ok() const { return lost.empty() && corrupt.empty(); }
};

// Copies into `to` the blobs `snapshot` names that `to` lacks, reading them from `from`.
// Fails only when a store cannot be read or written at all.
Result<BlobCopy> CopyNamedBlobs(store::MetadataStore& snapshot, blob::ContentStore& from,
                                blob::ContentStore& to, const BlobCopyOptions& options = {});

}  // namespace cairn::service
