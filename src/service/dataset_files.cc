#include "service/dataset_files.h"

#include <algorithm>
#include <optional>

#include "service/artifact_service.h"
#include "util/hash.h"

namespace cairn::service {
namespace {

constexpr std::string_view kManifestSuffix = ".json";

// "datasets/<name>/" stripped from `path`: the name and the rest, or nullopt.
std::optional<std::pair<std::string_view, std::string_view>> SplitDataset(std::string_view path) {
  if (!path.starts_with(kDatasetArtifactRoot) || path.size() <= kDatasetArtifactRoot.size() ||
      path[kDatasetArtifactRoot.size()] != '/') {
    return std::nullopt;
  }
  path.remove_prefix(kDatasetArtifactRoot.size() + 1);
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  return std::make_pair(path.substr(0, slash), path.substr(slash + 1));
}

}  // namespace

std::optional<DatasetManifestRef> DatasetManifestOf(std::string_view path) {
  auto parts = SplitDataset(path);
  if (!parts || !parts->second.ends_with(kManifestSuffix)) return std::nullopt;
  std::string_view digest = parts->second;
  digest.remove_suffix(kManifestSuffix.size());
  if (!IsSha256Hex(digest)) return std::nullopt;
  return DatasetManifestRef{std::string(parts->first), std::string(digest)};
}

std::string DatasetManifestPath(std::string_view name, std::string_view digest) {
  return std::string(kDatasetArtifactRoot) + "/" + std::string(name) + "/" + std::string(digest) +
         std::string(kManifestSuffix);
}

std::optional<DatasetFileRef> DatasetFileOf(std::string_view path) {
  auto parts = SplitDataset(path);
  if (!parts) return std::nullopt;
  const std::string_view rest = parts->second;
  const size_t slash = rest.find('/');
  const std::string_view digest = rest.substr(0, slash);
  if (!IsSha256Hex(digest)) return std::nullopt;
  return DatasetFileRef{
      parts->first, digest,
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1)};
}

Result<std::vector<core::FileEntry>> ReadDatasetManifest(blob::ContentStore& blobs,
                                                         std::string_view digest) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<blob::BlobReader> r, blobs.Open(digest));
  if (r->size() > kMaxManifestBytes) {
    return InvalidArgument("the manifest " + std::string(digest) + " is " +
                           std::to_string(r->size()) + " bytes, over the limit of " +
                           std::to_string(kMaxManifestBytes));
  }
  CAIRN_ASSIGN_OR_RETURN(std::string bytes, blob::ReadAllBytes(*r, digest));
  Result<std::vector<core::FileEntry>> files = core::ParseManifestJson(bytes);
  if (!files.ok()) {
    return InvalidArgument("blob " + std::string(digest) +
                           " is not a dataset manifest: " + files.status().message());
  }
  return files;
}

Status ForEachIndexedFile(
    store::MetadataStore& metadata, blob::ContentStore& blobs, const VisitFile& visit,
    const std::function<Status(const store::ArtifactFile&, const Status&)>& unreadable) {
  return metadata.ForEachArtifactFile([&](store::ArtifactFile& row) -> Status {
    std::optional<DatasetManifestRef> manifest = DatasetManifestOf(row.path);
    const store::ArtifactFile seen = manifest ? row : store::ArtifactFile{};
    CAIRN_RETURN_IF_ERROR(visit(row));
    if (!manifest) return Status::Ok();
    Result<std::vector<core::FileEntry>> files = ReadDatasetManifest(blobs, manifest->digest);
    if (!files.ok()) {
      const StatusCode code = files.status().code();
      if (code != StatusCode::kNotFound && code != StatusCode::kInvalidArgument) {
        return files.status();
      }
      return unreadable ? unreadable(seen, files.status()) : Status::Ok();
    }
    const std::string dir =
        std::string(kDatasetArtifactRoot) + "/" + manifest->name + "/" + manifest->digest + "/";
    for (core::FileEntry& f : *files) {
      store::ArtifactFile file{dir + f.path, std::move(f.sha256), f.size};
      CAIRN_RETURN_IF_ERROR(visit(file));
    }
    return Status::Ok();
  });
}

Result<ManifestCache::Files> ManifestCache::Get(blob::ContentStore& blobs,
                                                const std::string& digest) {
  std::promise<Result<Files>> reading;
  std::optional<std::shared_future<Result<Files>>> pending;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(kept_.begin(), kept_.end(),
                           [&](const Entry& e) { return e.digest == digest; });
    if (it != kept_.end()) {
      pending = it->files;
      std::rotate(it, it + 1, kept_.end());
    } else {
      kept_.push_back({digest, reading.get_future().share(), 0});
    }
  }
  if (pending) return pending->get();  // read by the request that first wanted it
  Result<std::vector<core::FileEntry>> read = ReadDatasetManifest(blobs, digest);
  Result<Files> out =
      read.ok()
          ? Result<Files>(std::make_shared<const std::vector<core::FileEntry>>(std::move(*read)))
          : Result<Files>(read.status());
  reading.set_value(out);
  std::lock_guard lock(mu_);
  auto mine =
      std::find_if(kept_.begin(), kept_.end(), [&](const Entry& e) { return e.digest == digest; });
  if (mine != kept_.end()) {
    if (!out.ok()) {
      kept_.erase(mine);  // the next request tries again
    } else {
      mine->count = (*out)->size();
    }
  }
  // The oldest go while there are too many, or too many files past the newest.
  size_t files = 0;
  for (const Entry& e : kept_) files += e.count;
  while (kept_.size() > 1 && (kept_.size() > kKept || files - kept_.back().count > kKeptFiles)) {
    files -= kept_.front().count;
    kept_.erase(kept_.begin());
  }
  return out;
}

const core::FileEntry* FindManifestFile(const std::vector<core::FileEntry>& files,
                                        std::string_view path) {
  auto it =
      std::lower_bound(files.begin(), files.end(), path,
                       [](const core::FileEntry& f, std::string_view p) { return f.path < p; });
  return it != files.end() && it->path == path ? &*it : nullptr;
}

}  // namespace cairn::service
