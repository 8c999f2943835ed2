// Datasets' files in the artifact namespace. A dataset version's files are not rows of the
// artifact index: its manifest is (kDatasetArtifactRoot/<name>/<digest>.json), every file's
// blob is noted once among the dataset blobs (store/dataset_store.h), and a path
// kDatasetArtifactRoot/<name>/<digest>/<file> is read through the manifest. A version of 100,000
// files so costs one row, not 100,000.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "blob/content_store.h"
#include "core/tree_manifest.h"
#include "store/metadata_store.h"

namespace cairn::service {

// A version's manifest: at most this many bytes.
inline constexpr int64_t kMaxManifestBytes = 512LL << 20;

// "datasets/<name>/<digest>.json", the row naming a version's manifest, as its parts.
struct DatasetManifestRef {
  std::string name;
  std::string digest;
};
std::optional<DatasetManifestRef> DatasetManifestOf(std::string_view path);
// The other way: the path of the row naming version `digest`'s manifest of dataset `name`.
std::string DatasetManifestPath(std::string_view name, std::string_view digest);

// "datasets/<name>/<digest>/<file>" as its parts (file may be "" for the version's top
// directory); nullopt for any other path.
struct DatasetFileRef {
  std::string_view name;
  std::string_view digest;
  std::string_view file;
};
std::optional<DatasetFileRef> DatasetFileOf(std::string_view path);

// The manifest blob `digest`, parsed and checked. kNotFound when the store lacks it;
// kInvalidArgument when it is too large or not a manifest.
Result<std::vector<core::FileEntry>> ReadDatasetManifest(blob::ContentStore& blobs,
                                                         std::string_view digest);

// Calls `visit` with every file the artifact index names and, after each version's manifest,
// with each file of that version as "datasets/<name>/<digest>/<file>". A manifest that cannot
// be read goes to `unreadable` (when given) with the reason, and its files are skipped.
using VisitFile = std::function<Status(store::ArtifactFile&)>;
Status ForEachIndexedFile(
    store::MetadataStore& metadata, blob::ContentStore& blobs, const VisitFile& visit,
    const std::function<Status(const store::ArtifactFile&, const Status&)>& unreadable = nullptr);

// The manifests read last, parsed, by digest: a `data get` of many files reads one manifest,
// not one per file, and requests that want the same manifest at once wait for one read of it.
// Keeps at most kKept manifests and, past the newest one, kKeptFiles files in all.
class ManifestCache {
 public:
  using Files = std::shared_ptr<const std::vector<core::FileEntry>>;
  Result<Files> Get(blob::ContentStore& blobs, const std::string& digest);

 private:
  static constexpr size_t kKept = 16;
  static constexpr size_t kKeptFiles = 4'000'000;
  struct Entry {
    std::string digest;
    std::shared_future<Result<Files>> files;  // ready once read
    size_t count = 0;                         // files, once read
  };
  std::mutex mu_;
  std::vector<Entry> kept_;  // most recently used last
};

// The entry of `files` (sorted by path, as a manifest is) at `path`, or nullptr.
const core::FileEntry* FindManifestFile(const std::vector<core::FileEntry>& files,
                                        std::string_view path);

}  // namespace cairn::service
