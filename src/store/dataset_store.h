// DatasetStore: where datasets' versions and the upload ledger live.
//
// Every MetadataStore backend holds one, in the same database (MetadataStore::datasets()), and
// passes one conformance suite (dataset_store_conformance_test.cc). The contracts of
// MetadataStore hold here too: every method may be called from many threads at once, and one
// that returns OK has committed. Versions are rows only: their manifests and files are blobs.
// The dataset service names each manifest in the artifact index under kDatasetArtifactRoot and
// notes every file's blob once in the set of dataset blobs, which keeps it from collection.
//
// The upload ledger records which blobs each account has sent: a client may name in a new
// version only blobs it has shown it holds (by sending them, or through a version of the same
// dataset), never a blob it merely knows the digest of.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dataset.h"
#include "util/status.h"

namespace cairn::store {

class DatasetStore {
 public:
  virtual ~DatasetStore() = default;

  // Adds `v` as the dataset's next version (v.version is ignored; numbers are never given
  // twice within a dataset) and returns it as stored. The first version creates the dataset.
  // With `expect_new`, kAlreadyExists when the dataset exists already (a caller allowed to
  // create a dataset is not thereby allowed to add to one someone else created meanwhile).
  virtual Result<core::DataVersion> AddDataVersion(core::DataVersion v, bool expect_new) = 0;
  // Version `version` of the dataset, or its latest for 0. kNotFound naming what is missing.
  virtual Result<core::DataVersion> GetDataVersion(std::string_view name, int64_t version) = 0;
  // Every version of the dataset, newest first; kNotFound for an unknown dataset.
  virtual Result<std::vector<core::DataVersion>> ListDataVersions(std::string_view name) = 0;
  // Every dataset, by name.
  virtual Result<std::vector<core::DatasetEntry>> ListDatasets() = 0;
  // The versions run `run_id` made, by dataset and version.
  virtual Result<std::vector<core::DataVersion>> DataVersionsOfRun(std::string_view run_id) = 0;
  // Every distinct version digest of every dataset, in no set order.
  virtual Result<std::vector<std::string>> DataVersionDigests() = 0;

  // --- Dataset blobs ---------------------------------------------------------------------------
  // Every blob a version names, once: datasets' versions are never removed, so a digest stays
  // once noted. Notes `digests` (each may be noted already).
  virtual Status NoteDataBlobs(const std::vector<std::string>& digests) = 0;
  // Whether `digest` is noted.
  virtual Result<bool> DataBlobNoted(std::string_view digest) = 0;
  // A page of the noted digests: up to `limit` that sort after `after` ("" for the first page),
  // in order.
  virtual Result<std::vector<std::string>> ListDataBlobs(std::string_view after, int64_t limit) = 0;
  // Calls `visit` with every noted digest, a page at a time, holding no lock between pages,
  // until it returns an error, which this returns.
  Status ForEachDataBlob(const std::function<Status(const std::string&)>& visit);

  // --- The upload ledger ---------------------------------------------------------------------
  // Records that `username` sent these blobs at `now` (ms); a digest recorded before gets the
  // new time.
  virtual Status RecordDataUploads(std::string_view username,
                                   const std::vector<std::string>& digests, int64_t now) = 0;
  // For each of `digests`, whether `username` has sent it (and the record was not pruned).
  virtual Result<std::vector<bool>> DataUploaded(std::string_view username,
                                                 const std::vector<std::string>& digests) = 0;
  // Whether any account's sending of the blob is remembered.
  virtual Result<bool> AnyUploaded(std::string_view digest) = 0;
  // Forgets the records older than `before` (ms); returns how many.
  virtual Result<int64_t> PruneDataUploads(int64_t before) = 0;
};

}  // namespace cairn::store
