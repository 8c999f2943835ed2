// DatasetService: versioned datasets (core/dataset.h) on the server.
//
// A client adds a version in three steps: it asks which of its files' blobs it must send
// (MissingBlobs), sends those (each recorded in the upload ledger as it lands), then names the
// version by its manifest's digest (CreateVersion). The server reads the manifest from the
// content store, checks it, names it in the artifact index (kDatasetArtifactRoot/<name>/
// <digest>.json) and notes its files' blobs among the dataset blobs, which the collector keeps.
// The files are read through the manifest (service/dataset_files.h): a version costs one row
// of the index, however many files it holds.
//
// A client may name only blobs it has shown it holds: ones it sent (the ledger of its account)
// or ones in the dataset's latest version when it may read that dataset. Knowing a digest is
// not enough, so a digest seen in one place cannot be used to read the file elsewhere.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "blob/content_store.h"
#include "core/dataset.h"
#include "core/identity.h"
#include "core/tree_manifest.h"
#include "service/artifact_service.h"
#include "service/identity_service.h"
#include "store/metadata_store.h"
#include "util/clock.h"

namespace cairn::service {

// How many digests one MissingBlobs call takes.
inline constexpr size_t kMaxDigestsPerQuery = 100'000;
// A version's manifest: at most kMaxManifestBytes (service/dataset_files.h) and this many files.
inline constexpr int64_t kMaxDataVersionFiles = 2'000'000;
// A version's message and metadata (a JSON object's text), in bytes.
inline constexpr size_t kMaxDataMessage = 5000;
inline constexpr size_t kMaxDataMetadata = 64 << 10;

struct NewDataVersion {
  std::string name;
  std::string digest;  // the manifest's SHA-256; the manifest is a blob sent before
  std::string message;
  std::string metadata = "{}";  // JSON object text, checked by the caller
  std::string run_id;           // the run that made it (checked by the caller), or ""
};

struct CreatedDataVersion {
  core::DataVersion version;
  // The latest version had this content already: it is answered and nothing is added.
  bool unchanged = false;
};

class DatasetService {
 public:
  // None of the pointers is owned; all must outlive the service. `identity` gives the creator
  // of a dataset MANAGE on it (nullptr: no permissions).
  DatasetService(store::MetadataStore* store, blob::ContentStore* blobs, ArtifactService* artifacts,
                 IdentityService* identity, Clock* clock);

  // Of `digests`, the ones `username` must send before naming them in a version of dataset
  // `name`: those the server lacks, and those it holds but the caller has not shown it holds.
  // `may_read` says whether the caller may read the dataset (its latest version's blobs then
  // count as shown). kInvalidArgument for a malformed digest or more than kMaxDigestsPerQuery.
  Result<std::vector<std::string>> MissingBlobs(const std::string& username,
                                                const std::string& name, bool may_read,
                                                const std::vector<std::string>& digests);
  // The same outside any dataset: of `digests`, those `username` must send before naming them
  // elsewhere (a run's output files, LinkRunBlob).
  Result<std::vector<std::string>> MissingBlobs(const std::string& username,
                                                const std::vector<std::string>& digests);
  // Records that `username` sent the blob `digest` (stored already).
  Status BlobSent(const std::string& username, const std::string& digest);
  // Names the blob `digest` as the artifact at `path` (an artifact proxy path) when `username`
  // has shown it holds it (sent it within the ledger's window), else kFailedPrecondition. The
  // artifact's size is the blob's.
  Status LinkBlob(const std::string& username, const std::string& path, const std::string& digest);

  // Adds a version to dataset `req.name`, creating the dataset when it has none (`creator`
  // then manages it). `may_edit`: whether the caller may add to the dataset if it exists
  // (kPermissionDenied otherwise), and `may_read` whether it may read it. Errors:
  // kInvalidArgument for a malformed name, digest, message or manifest;
  // kFailedPrecondition naming a blob the caller has not sent (send it, then retry).
  Result<CreatedDataVersion> CreateVersion(const core::Principal& creator,
                                           const NewDataVersion& req, bool may_read, bool may_edit);

  // Version `version` of dataset `name`, its latest for 0.
  Result<core::DataVersion> GetVersion(const std::string& name, int64_t version);
  Result<std::vector<core::DataVersion>> Versions(const std::string& name);
  Result<std::vector<core::DatasetEntry>> List();
  // The runs that recorded the version as an input (at most `limit`), and the versions a run
  // made.
  Result<std::vector<std::string>> RunsUsing(const core::DataVersion& v, int64_t limit);
  Result<std::vector<core::DataVersion>> MadeBy(const std::string& run_id);
  // The version's manifest, as its bytes and parsed.
  Result<std::string> ManifestBytes(const core::DataVersion& v);
  Result<std::vector<core::FileEntry>> Files(const core::DataVersion& v);
  // Where a version's manifest is in the artifact index.
  static std::string ManifestPath(std::string_view name, std::string_view digest);

 private:
  // The blobs a version names: its manifest and its files' blobs, these sorted and distinct
  // (views into `files`, which it keeps).
  struct VersionBlobs {
    VersionBlobs() = default;
    VersionBlobs(const VersionBlobs&) = delete;  // `digests` views into this one's `files`
    VersionBlobs& operator=(const VersionBlobs&) = delete;
    std::string manifest;
    std::vector<core::FileEntry> files;
    std::vector<std::string_view> digests;
    static std::shared_ptr<const VersionBlobs> Of(std::string manifest,
                                                  std::vector<core::FileEntry> files);
    bool Has(std::string_view digest) const;
  };
  using Blobs = std::shared_ptr<const VersionBlobs>;
  // The blobs of the dataset's latest version, from a small cache; null when the dataset has
  // none.
  Result<Blobs> LatestBlobs(const std::string& name);
  Result<std::vector<core::FileEntry>> ReadManifest(std::string_view digest);
  // Of `digests`, in their order, those `username` has not shown it holds: neither in `known`
  // (the latest version's blobs, which a reader of the dataset may name; null: none) nor sent
  // by that account within the upload ledger's window. Knowing a digest never gives its bytes.
  Result<std::vector<std::string>> NotShown(const std::string& username, const VersionBlobs* known,
                                            const std::vector<std::string>& digests);
  // Keeps `blobs` as the blobs of `name`'s latest version.
  void RememberLatest(const std::string& name, Blobs blobs);

  store::MetadataStore* store_;
  blob::ContentStore* blobs_;
  ArtifactService* artifacts_;
  IdentityService* identity_;
  Clock* clock_;
  // One version created at a time, so that a new dataset and its creator's grant appear
  // together.
  std::mutex create_mu_;
  std::mutex cache_mu_;
  struct CachedBlobs {
    std::string name;
    Blobs blobs;
  };
  std::vector<CachedBlobs> cache_;  // the latest few, newest last
};

}  // namespace cairn::service
