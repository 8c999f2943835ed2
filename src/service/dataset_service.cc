#include "service/dataset_service.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>
#include <utility>

#include "util/hash.h"

namespace cairn::service {
namespace {

constexpr size_t kCachedDatasets = 8;

Status CheckDigest(std::string_view digest) {
  if (IsSha256Hex(digest)) return Status::Ok();
  return InvalidArgument("'" + std::string(digest.substr(0, 80)) +
                         "' is not a SHA-256 digest (64 lowercase hex digits)");
}

}  // namespace

DatasetService::DatasetService(store::MetadataStore* store, blob::ContentStore* blobs,
                               ArtifactService* artifacts, IdentityService* identity, Clock* clock)
    : store_(store), blobs_(blobs), artifacts_(artifacts), identity_(identity), clock_(clock) {}

std::string DatasetService::ManifestPath(std::string_view name, std::string_view digest) {
  return DatasetManifestPath(name, digest);
}

Result<std::vector<core::FileEntry>> DatasetService::ReadManifest(std::string_view digest) {
  return ReadDatasetManifest(*blobs_, digest);
}

std::shared_ptr<const DatasetService::VersionBlobs> DatasetService::VersionBlobs::Of(
    std::string manifest, std::vector<core::FileEntry> files) {
  auto out = std::make_shared<VersionBlobs>();
  out->manifest = std::move(manifest);
  out->files = std::move(files);
  out->digests.reserve(out->files.size());
  for (const core::FileEntry& f : out->files) out->digests.push_back(f.sha256);
  std::sort(out->digests.begin(), out->digests.end());
  out->digests.erase(std::unique(out->digests.begin(), out->digests.end()), out->digests.end());
  return out;
}

bool DatasetService::VersionBlobs::Has(std::string_view digest) const {
  return digest == manifest || std::binary_search(digests.begin(), digests.end(), digest);
}

Result<DatasetService::Blobs> DatasetService::LatestBlobs(const std::string& name) {
  Result<core::DataVersion> latest = store_->datasets().GetDataVersion(name, 0);
  if (!latest.ok()) {
    if (latest.status().code() == StatusCode::kNotFound) return Blobs();
    return latest.status();
  }
  {
    std::lock_guard lock(cache_mu_);
    for (const CachedBlobs& c : cache_) {
      if (c.name == name && c.blobs->manifest == latest->digest) return c.blobs;
    }
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::FileEntry> files, ReadManifest(latest->digest));
  Blobs blobs = VersionBlobs::Of(latest->digest, std::move(files));
  RememberLatest(name, blobs);
  return blobs;
}

void DatasetService::RememberLatest(const std::string& name, Blobs blobs) {
  std::lock_guard lock(cache_mu_);
  std::erase_if(cache_, [&](const CachedBlobs& c) { return c.name == name; });
  if (cache_.size() >= kCachedDatasets) cache_.erase(cache_.begin());
  cache_.push_back(CachedBlobs{name, std::move(blobs)});
}

Result<std::vector<std::string>> DatasetService::MissingBlobs(
    const std::string& username, const std::string& name, bool may_read,
    const std::vector<std::string>& digests) {
  CAIRN_RETURN_IF_ERROR(core::ValidateDatasetName(name));
  if (digests.size() > kMaxDigestsPerQuery) {
    return InvalidArgument("at most " + std::to_string(kMaxDigestsPerQuery) +
                           " digests may be asked about at once, not " +
                           std::to_string(digests.size()));
  }
  for (const std::string& d : digests) CAIRN_RETURN_IF_ERROR(CheckDigest(d));
  Blobs known;
  if (may_read) {
    CAIRN_ASSIGN_OR_RETURN(known, LatestBlobs(name));
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> not_shown,
                         NotShown(username, known.get(), digests));
  const std::unordered_set<std::string> unshown(not_shown.begin(), not_shown.end());
  // A blob the latest version names is kept by it; one only sent may have been collected.
  std::vector<std::string> look;
  for (const std::string& d : digests) {
    if (unshown.count(d) == 0 && (known == nullptr || !known->Has(d))) look.push_back(d);
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<bool> have, blobs_->HasMany(look));
  std::unordered_set<std::string> gone;
  for (size_t i = 0; i < look.size(); ++i) {
    if (!have[i]) gone.insert(look[i]);
  }
  std::vector<std::string> missing;
  std::unordered_set<std::string> listed;
  for (const std::string& d : digests) {
    if (listed.count(d) != 0) continue;
    if (unshown.count(d) != 0 || gone.count(d) != 0) {
      missing.push_back(d);
      listed.insert(d);
    }
  }
  return missing;
}

Result<std::vector<std::string>> DatasetService::MissingBlobs(
    const std::string& username, const std::vector<std::string>& digests) {
  if (digests.size() > kMaxDigestsPerQuery) {
    return InvalidArgument("at most " + std::to_string(kMaxDigestsPerQuery) +
                           " digests may be asked about at once, not " +
                           std::to_string(digests.size()));
  }
  for (const std::string& d : digests) CAIRN_RETURN_IF_ERROR(CheckDigest(d));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> not_shown, NotShown(username, nullptr, digests));
  const std::unordered_set<std::string> unshown(not_shown.begin(), not_shown.end());
  std::vector<std::string> look;
  for (const std::string& d : digests) {
    if (unshown.count(d) == 0) look.push_back(d);
  }
  // Sent, but perhaps collected since.
  CAIRN_ASSIGN_OR_RETURN(std::vector<bool> have, blobs_->HasMany(look));
  std::unordered_set<std::string> missing_set(unshown.begin(), unshown.end());
  for (size_t i = 0; i < look.size(); ++i) {
    if (!have[i]) missing_set.insert(look[i]);
  }
  std::vector<std::string> missing;
  for (const std::string& d : digests) {
    if (missing_set.erase(d) != 0) missing.push_back(d);
  }
  return missing;
}

Status DatasetService::LinkBlob(const std::string& username, const std::string& path,
                                const std::string& digest) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> missing, MissingBlobs(username, {digest}));
  if (!missing.empty()) {
    return FailedPrecondition("send the blob " + digest + " before naming it");
  }
  return artifacts_->LinkBlob(path, digest);
}

Result<std::vector<std::string>> DatasetService::NotShown(const std::string& username,
                                                          const VersionBlobs* known,
                                                          const std::vector<std::string>& digests) {
  std::vector<std::string> ask;  // not in the latest version: the ledger decides
  for (const std::string& d : digests) {
    if (known == nullptr || !known->Has(d)) ask.push_back(d);
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<bool> sent, store_->datasets().DataUploaded(username, ask));
  std::vector<std::string> out;
  for (size_t i = 0; i < ask.size(); ++i) {
    if (!sent[i]) out.push_back(std::move(ask[i]));
  }
  return out;
}

Status DatasetService::BlobSent(const std::string& username, const std::string& digest) {
  return store_->datasets().RecordDataUploads(username, {digest}, clock_->NowMillis());
}

Result<CreatedDataVersion> DatasetService::CreateVersion(const core::Principal& creator,
                                                         const NewDataVersion& req, bool may_read,
                                                         bool may_edit) {
  CAIRN_RETURN_IF_ERROR(core::ValidateDatasetName(req.name));
  CAIRN_RETURN_IF_ERROR(CheckDigest(req.digest));
  if (req.message.size() > kMaxDataMessage) {
    return InvalidArgument("a version's message may hold at most " +
                           std::to_string(kMaxDataMessage) + " bytes");
  }
  if (req.metadata.size() > kMaxDataMetadata) {
    return InvalidArgument("a version's metadata may hold at most " +
                           std::to_string(kMaxDataMetadata) + " bytes of JSON");
  }
  std::lock_guard create(create_mu_);
  Result<core::DataVersion> latest = store_->datasets().GetDataVersion(req.name, 0);
  if (!latest.ok() && latest.status().code() != StatusCode::kNotFound) return latest.status();
  const bool exists = latest.ok();
  if (exists && !may_edit) {
    return PermissionDenied("Permission denied: adding a version to dataset " + req.name);
  }
  if (exists && latest->digest == req.digest) return CreatedDataVersion{*latest, true};

  // Every blob named must be one the caller has shown it holds.
  Blobs known;
  if (exists && may_read) {
    CAIRN_ASSIGN_OR_RETURN(known, LatestBlobs(req.name));
  }
  // The first of `digests` the caller has not shown it holds; "" when it has shown them all.
  auto not_shown = [&](const std::vector<std::string>& digests) -> Result<std::string> {
    CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> unshown,
                           NotShown(creator.username, known.get(), digests));
    return unshown.empty() ? std::string() : unshown.front();
  };
  CAIRN_ASSIGN_OR_RETURN(std::string unsent_manifest, not_shown({req.digest}));
  if (!unsent_manifest.empty()) {
    return FailedPrecondition("send the manifest " + req.digest + " before naming it");
  }
  CAIRN_ASSIGN_OR_RETURN(std::vector<core::FileEntry> files, ReadManifest(req.digest));
  if (static_cast<int64_t>(files.size()) > kMaxDataVersionFiles) {
    return InvalidArgument("a version may hold at most " + std::to_string(kMaxDataVersionFiles) +
                           " files, not " + std::to_string(files.size()));
  }
  core::DataVersion v;
  v.name = req.name;
  v.digest = req.digest;
  for (const core::FileEntry& f : files) {
    if (f.mode == core::kModeSymlink) {
      return InvalidArgument("the manifest holds a symbolic link, " + f.path +
                             ": a dataset holds regular files only");
    }
    CAIRN_RETURN_IF_ERROR(NormalizeArtifactPath(f.path, /*allow_root=*/false).status());
    v.bytes += f.size;
  }
  v.files = static_cast<int64_t>(files.size());
  Blobs named = VersionBlobs::Of(req.digest, std::move(files));
  // Those the latest version does not hold (both lists are sorted), in order, so that a
  // refusal names the same blob each time.
  std::vector<std::string> digests;
  if (known == nullptr) {
    digests.assign(named->digests.begin(), named->digests.end());
  } else {
    std::vector<std::string_view> fresh;
    std::set_difference(named->digests.begin(), named->digests.end(), known->digests.begin(),
                        known->digests.end(), std::back_inserter(fresh));
    for (std::string_view d : fresh) {
      if (d != known->manifest) digests.emplace_back(d);
    }
  }
  CAIRN_ASSIGN_OR_RETURN(std::string unsent, not_shown(digests));
  if (!unsent.empty()) {
    return FailedPrecondition("send blob " + unsent + " before naming it in a version");
  }
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<blob::BlobReader> manifest, blobs_->Open(req.digest));
  // The latest version's blobs are noted already: only the others are.
  CAIRN_RETURN_IF_ERROR(artifacts_->KeepDatasetVersion(
      store::ArtifactFile{ManifestPath(v.name, v.digest), v.digest, manifest->size()}, digests));

  v.parent = exists ? latest->version : 0;
  v.message = req.message;
  v.creator = creator.username;
  v.created_time = clock_->NowMillis();
  v.metadata = req.metadata.empty() ? "{}" : req.metadata;
  v.run_id = req.run_id;
  CAIRN_ASSIGN_OR_RETURN(core::DataVersion added,
                         store_->datasets().AddDataVersion(v, /*expect_new=*/!exists));
  // The next version's checks start from this one's blobs.
  RememberLatest(v.name, std::move(named));
  if (!exists && identity_ != nullptr) {
    CAIRN_RETURN_IF_ERROR(identity_->GrantCreator(creator, core::ResourceKind::kDataset, req.name));
  }
  return CreatedDataVersion{std::move(added), false};
}

Result<core::DataVersion> DatasetService::GetVersion(const std::string& name, int64_t version) {
  CAIRN_RETURN_IF_ERROR(core::ValidateDatasetName(name));
  return store_->datasets().GetDataVersion(name, version);
}

Result<std::vector<core::DataVersion>> DatasetService::Versions(const std::string& name) {
  CAIRN_RETURN_IF_ERROR(core::ValidateDatasetName(name));
  return store_->datasets().ListDataVersions(name);
}

Result<std::vector<core::DatasetEntry>> DatasetService::List() {
  return store_->datasets().ListDatasets();
}

Result<std::vector<std::string>> DatasetService::RunsUsing(const core::DataVersion& v,
                                                           int64_t limit) {
  return store_->RunsUsingDataset(v.name, core::DataInputDigest(v.digest), limit);
}

Result<std::vector<core::DataVersion>> DatasetService::MadeBy(const std::string& run_id) {
  return store_->datasets().DataVersionsOfRun(run_id);
}

Result<std::string> DatasetService::ManifestBytes(const core::DataVersion& v) {
  return blob::ReadAllBytes(*blobs_, v.digest);
}

Result<std::vector<core::FileEntry>> DatasetService::Files(const core::DataVersion& v) {
  return ReadManifest(v.digest);
}

}  // namespace cairn::service
