// A check of a server's stores against each other (`cairn verify-store`): every blob of the
// content store read and hashed against its name, and every file of the artifact index found
// among the blobs with its recorded size. Nothing is changed. A server may keep serving while
// it runs: blobs written meanwhile may be seen or not, and a blob collected meanwhile is
// counted as gone, not as corrupt.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "blob/content_store.h"
#include "store/metadata_store.h"

namespace cairn::service {

struct StoreCheckProgress {
  std::string phase;  // "blobs" or "references"
  int64_t done = 0;
  int64_t total = 0;  // 0: not known
  int64_t bytes = 0;  // hashed so far
};

struct StoreCheckOptions {
  // Called every few hundred milliseconds of work, and at the end of each phase.
  std::function<void(const StoreCheckProgress&)> progress;
};

struct BlobProblem {
  std::string digest;
  std::string what;  // "its bytes hash to 1a2b…", "cannot be read: …"
};

struct MissingBlob {
  store::ArtifactFile file;  // the index's entry
  std::string what;          // "no such blob", "the blob holds 12 bytes, the index says 13"
};

struct StoreCheck {
  int64_t blobs = 0;
  int64_t bytes = 0;
  std::vector<BlobProblem> corrupt;  // blobs whose bytes are not what their name says
  int64_t references = 0;            // files in the artifact index
  std::vector<MissingBlob> missing;  // index entries without their blob (or of another size)
  int64_t unreferenced = 0;          // blobs no artifact names (a collection would remove)
  int64_t unreferenced_bytes = 0;
  bool ok() const { return corrupt.empty() && missing.empty(); }
};

// Fails only when a store cannot be read at all; what it finds wrong is in the answer.
Result<StoreCheck> CheckStores(store::MetadataStore& metadata, blob::ContentStore& blobs,
                               const StoreCheckOptions& options = {});

}  // namespace cairn::service
