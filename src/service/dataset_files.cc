#include "service/dataset_files.h"

#include <algorithm>

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
  {
    std::lock_guard lock(mu_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->first != digest) continue;
      Files files = it->second;
      std::rotate(it, it + 1, kept_.end());
      return files;
    }
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::FileEntry> read, ReadDatasetManifest(blobs, digest));
  Files files = std::make_shared<const std::vector<core::FileEntry>>(std::move(read));
  std::lock_guard lock(mu_);
  std::erase_if(kept_, [&](const auto& k) { return k.first == digest; });
  if (kept_.size() >= kKept) kept_.erase(kept_.begin());
  kept_.emplace_back(digest, files);
  return files;
}

const core::FileEntry* FindManifestFile(const std::vector<core::FileEntry>& files,
                                        std::string_view path) {
  auto it =
      std::lower_bound(files.begin(), files.end(), path,
                       [](const core::FileEntry& f, std::string_view p) { return f.path < p; });
  return it != files.end() && it->path == path ? &*it : nullptr;
}

}  // namespace cairn::service
