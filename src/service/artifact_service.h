// ArtifactService: files logged to runs, kept as blobs in the ContentStore and indexed by path
// in the MetadataStore.
//
// Artifact paths come from requests, so each one is checked before use: relative, '/'-separated,
// no '.', '..' or empty segments, no backslashes, NUL or control characters. Paths are keys,
// never joined onto a file system path, so a valid path cannot reach outside its root either.
// Uploads stream into the ContentStore and become visible only once complete.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "blob/content_store.h"
#include "service/dataset_files.h"
#include "store/metadata_store.h"

namespace cairn::service {

// Where the model registry keeps versions' files ("models/<id>/..."): clients read them, and
// only the registry writes or removes them.
inline constexpr std::string_view kRegistryArtifactRoot = "models";
// Where datasets keep their versions' manifests ("datasets/<name>/<version digest>.json", rows
// of the index) and files ("datasets/<name>/<version digest>/<path>", read through the manifest:
// service/dataset_files.h): read through the dataset's permission, written only by the dataset
// service.
inline constexpr std::string_view kDatasetArtifactRoot = "datasets";

// Checks and normalises an artifact path (a trailing '/' is dropped). An empty path is the
// root, allowed only when `allow_root`.
Result<std::string> NormalizeArtifactPath(std::string_view path, bool allow_root);

// "mlflow-artifacts:/1/R/artifacts" -> "1/R/artifacts"; kUnimplemented for other schemes,
// whose artifacts clients write elsewhere.
Result<std::string> ProxyPathOfUri(std::string_view artifact_uri);

struct Download {
  std::unique_ptr<blob::BlobReader> reader;
  std::string file_name;
  int64_t size = 0;
};

// How long a blob no artifact names is kept by a collection: an upload commits its blob a
// moment before the index names it.
inline constexpr int64_t kDefaultGcGraceSeconds = 3600;
// How long the upload ledger (store/dataset_store.h) remembers a blob sent for a dataset: a
// `cairn data add` killed within it continues without sending those blobs again. A collection
// forgets older records.
inline constexpr int64_t kUploadLedgerMs = 24LL * 3600 * 1000;

class ArtifactService {
 public:
  ArtifactService(store::MetadataStore* store, blob::ContentStore* blobs)
      : store_(store), blobs_(blobs) {}

  // Streaming upload: write chunks into the returned writer, then Commit.
  Result<std::unique_ptr<blob::BlobWriter>> NewUpload();
  Status CommitUpload(const std::string& path, blob::BlobWriter& writer);
  // Convenience for small files.
  Status PutBytes(const std::string& path, std::string_view bytes);
  // Names the stored blob `digest` as the file at `path`, its size the blob's; a collection
  // running meanwhile does not take the blob away between the check and the naming.
  Status LinkBlob(const std::string& path, const std::string& digest);

  Result<Download> Open(const std::string& path);
  // The whole file at `rel` (checked like any artifact path) of the run whose artifact URI is
  // `artifact_uri`. kNotFound when there is none, or the run's artifacts are not on this
  // server; kResourceExhausted when it is over `max_bytes`.
  Result<std::string> ReadRunFile(std::string_view artifact_uri, std::string_view rel,
                                  int64_t max_bytes);
  // Children of a directory; a path naming a file, or nothing, lists as empty.
  Result<std::vector<store::ArtifactEntry>> List(const std::string& path);
  // The children of directory `rel` (checked like any artifact path; "" is the root) of the run
  // whose artifact URI is `artifact_uri`, named relative to that root. Empty for runs whose
  // artifacts this server does not hold (another artifact_location).
  Result<std::vector<store::ArtifactEntry>> ListRunArtifacts(std::string_view artifact_uri,
                                                             std::string_view rel);
  // Every file of the run whose artifact URI is `artifact_uri`, its path relative to the run's
  // artifact root, in no set order. Empty for runs whose artifacts this server does not hold;
  // kResourceExhausted past `max_files`; InvalidArgument for a URI of the whole store.
  Result<std::vector<store::ArtifactFile>> ListRunFiles(std::string_view artifact_uri,
                                                        int64_t max_files);
  // Deletes a file or a whole directory and collects blobs nothing references any more.
  // Uploads and deletes under kRegistryArtifactRoot and kDatasetArtifactRoot are
  // kPermissionDenied.
  Status Delete(const std::string& path);
  // Delete, saying how many blobs it collected and their bytes.
  struct Freed {
    int64_t files = 0;
    int64_t blobs = 0;
    int64_t bytes = 0;
  };
  Result<Freed> DeleteCounting(const std::string& path);
  // Records every file at or under `source` (a file or a directory) again under `dest`, by
  // reference to the same blobs: a copy that costs no space. Blobs cannot be collected while
  // it runs, so a delete of the source at the same time leaves the copies whole. Returns how
  // many files were copied (0 when nothing is at `source`); kResourceExhausted past
  // `max_files`, with nothing copied.
  Result<int64_t> CopyTree(const std::string& source, const std::string& dest, int64_t max_files);
  // Commits a blob no file names yet and runs `keep` (which makes it referenced, e.g. records
  // it in the upload ledger) before a collection can see it.
  Result<blob::BlobInfo> CommitKept(blob::BlobWriter& writer,
                                    const std::function<Status(const blob::BlobInfo&)>& keep);
  // Records a dataset's new version: notes `blobs` (its files' blobs, sent before) among the
  // dataset blobs and names `manifest` (datasets/<name>/<digest>.json) in the index, with no
  // collection in between. kFailedPrecondition naming the first blob the store lacks, with
  // nothing recorded.
  Status KeepDatasetVersion(const store::ArtifactFile& manifest,
                            const std::vector<std::string>& blobs);
  // Removes the blobs no artifact file names and no dataset notes (mark and sweep), but those
  // written in the last `grace_ms` (uploads still on their way to the index), and forgets the
  // upload ledger's records older than kUploadLedgerMs. With `dry_run`, only counts the blobs.
  struct Collection {
    int64_t blobs = 0;       // seen
    int64_t collected = 0;   // removed (or, in a dry run, that would be)
    int64_t bytes_freed = 0;
    int64_t in_grace = 0;    // unreferenced but too new to remove
  };
  Result<Collection> CollectGarbage(int64_t grace_ms, bool dry_run, int64_t now_ms);

  // Where the bytes are: the files of the index by the first part of their path (an
  // experiment's id, or kRegistryArtifactRoot), with their sizes as listed (a blob that several
  // files share counts in each); each dataset's files (all its versions, manifests included),
  // counting each distinct blob once; the blobs themselves, each once, with those no file
  // names; and the metadata store's own bytes.
  struct Usage {
    struct Part {
      int64_t files = 0;
      int64_t bytes = 0;
    };
    std::map<std::string, Part> by_root;
    std::map<std::string, Part> by_dataset;  // distinct blobs and their bytes
    Part blobs;
    Part unreferenced;
    int64_t metadata_bytes = -1;  // MetadataStore::StoredBytes
  };
  Result<Usage> MeasureUsage();
  // Deletes the files of a model version (its storage location under kRegistryArtifactRoot);
  // nothing there is no error.
  Status DeleteRegistryFiles(const std::string& storage);

 private:
  // Every digest the index names or the datasets note, sorted and without repeats.
  Result<std::vector<std::string>> NamedDigests();
  // A dataset version's file (`path` is "datasets/<name>/<digest>/<file>"), read through the
  // manifest the index names for that version.
  Result<store::ArtifactFile> DatasetFile(const DatasetFileRef& ref, std::string_view path);
  // The files of the version `ref` names, when the index names its manifest under that
  // dataset (kNotFound otherwise).
  Result<ManifestCache::Files> VersionFiles(const DatasetFileRef& ref);
  // The listing of a directory under kDatasetArtifactRoot.
  Result<std::vector<store::ArtifactEntry>> ListDatasets(const std::string& path);
  // Every file under directory `dir`, with full paths; kResourceExhausted past `max_files`.
  Result<std::vector<store::ArtifactFile>> FilesUnder(const std::string& dir, int64_t max_files);
  Result<Freed> DeleteFiles(const std::string& path);
  // Deletes the blobs among `digests` that no artifact refers to any more; counts them in
  // `freed` (their sizes from `sizes`, when given).
  Status CollectBlobs(const std::vector<std::string>& digests, Freed* freed = nullptr,
                      const std::vector<int64_t>* sizes = nullptr);

  store::MetadataStore* store_;
  blob::ContentStore* blobs_;
  // Held shared from a blob's commit until it is indexed, exclusively while collecting blobs,
  // so a blob is never deleted between an upload's commit and its index entry.
  std::shared_mutex gc_mu_;
  ManifestCache manifests_;
};

}  // namespace cairn::service
