#include "service/artifact_service.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "store/listing.h"
#include "util/log.h"
#include "util/utf8.h"

namespace cairn::service {

Result<std::string> NormalizeArtifactPath(std::string_view path, bool allow_root) {
  auto invalid = [&](std::string_view why) {
    std::string shown;
    for (char c : path) shown += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
    return InvalidArgument("Invalid artifact path '" + shown + "': " + std::string(why));
  };
  if (path.starts_with('/')) return invalid("absolute paths are not allowed");
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) {
    if (allow_root) return std::string();
    return invalid("a path is required");
  }
  if (path.size() > 4096) return invalid("longer than 4096 bytes");
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) return invalid("control characters are not allowed");
    if (c == '\\') return invalid("backslashes are not allowed");
  }
  if (!IsValidUtf8(path)) return invalid("it is not valid UTF-8");
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    size_t end = slash == std::string_view::npos ? path.size() : slash;
    std::string_view seg = path.substr(start, end - start);
    if (seg.empty()) return invalid("empty path segments are not allowed");
    if (seg == "." || seg == "..") return invalid("'.' and '..' segments are not allowed");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return std::string(path);
}

Result<std::string> ProxyPathOfUri(std::string_view artifact_uri) {
  constexpr std::string_view kScheme = "mlflow-artifacts:";
  if (!artifact_uri.starts_with(kScheme)) {
    return Unimplemented("artifacts at '" + std::string(artifact_uri) +
                         "' are not served by this server");
  }
  std::string_view rest = artifact_uri.substr(kScheme.size());
  // mlflow-artifacts:/path and mlflow-artifacts://host/path
  if (rest.starts_with("//")) {
    rest.remove_prefix(2);
    size_t slash = rest.find('/');
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  }
  while (rest.starts_with("/")) rest.remove_prefix(1);
  return NormalizeArtifactPath(rest, /*allow_root=*/true);
}

Result<std::unique_ptr<blob::BlobWriter>> ArtifactService::NewUpload() {
  return blobs_->NewWriter();
}

namespace {

bool IsUnder(std::string_view path, std::string_view root) {
  return path == root ||
         (path.starts_with(root) && path.size() > root.size() && path[root.size()] == '/');
}

// The registry's files are written and removed by the registry alone, datasets' by the
// dataset service.
Status RefuseReservedPath(std::string_view path) {
  if (IsUnder(path, kRegistryArtifactRoot)) {
    return PermissionDenied("Artifact path '" + std::string(path) +
                            "' holds model registry files, which only the registry changes");
  }
  if (IsUnder(path, kDatasetArtifactRoot)) {
    return PermissionDenied("Artifact path '" + std::string(path) +
                            "' holds dataset files, which only `cairn data` changes");
  }
  return Status::Ok();
}

}  // namespace

Status ArtifactService::CommitUpload(const std::string& path, blob::BlobWriter& writer) {
  CAIRN_RETURN_IF_ERROR(RefuseReservedPath(path));
  Result<std::optional<store::ArtifactFile>> replaced = std::optional<store::ArtifactFile>();
  std::string digest;
  {
    std::shared_lock lock(gc_mu_);
    CAIRN_ASSIGN_OR_RETURN(blob::BlobInfo info, writer.Commit());
    digest = info.digest;
    replaced = store_->PutArtifact({path, info.digest, info.size});
  }
  // A refused upload leaves no blob behind; an accepted one collects the blob it replaced.
  if (!replaced.ok()) {
    CAIRN_RETURN_IF_ERROR(CollectBlobs({digest}));
    return replaced.status();
  }
  if (*replaced && (*replaced)->digest != digest) return CollectBlobs({(*replaced)->digest});
  return Status::Ok();
}

Result<blob::BlobInfo> ArtifactService::CommitKept(
    blob::BlobWriter& writer, const std::function<Status(const blob::BlobInfo&)>& keep) {
  std::shared_lock lock(gc_mu_);
  CAIRN_ASSIGN_OR_RETURN(blob::BlobInfo info, writer.Commit());
  CAIRN_RETURN_IF_ERROR(keep(info));
  return info;
}

Status ArtifactService::KeepDatasetVersion(const store::ArtifactFile& manifest,
                                           const std::vector<std::string>& blobs) {
  std::shared_lock lock(gc_mu_);
  std::vector<std::string> look = blobs;
  look.push_back(manifest.digest);
  CAIRN_ASSIGN_OR_RETURN(std::vector<bool> have, blobs_->HasMany(look));
  for (size_t i = 0; i < look.size(); ++i) {
    if (!have[i]) {
      return FailedPrecondition("the server does not hold blob " + look[i] + ": send it again");
    }
  }
  CAIRN_RETURN_IF_ERROR(store_->datasets().NoteDataBlobs(blobs));
  return store_->PutArtifact(manifest).status();
}

Status ArtifactService::LinkBlob(const std::string& path, const std::string& digest) {
  std::shared_lock lock(gc_mu_);
  Result<std::unique_ptr<blob::BlobReader>> reader = blobs_->Open(digest);
  if (!reader.ok()) {
    if (reader.status().code() != StatusCode::kNotFound) return reader.status();
    return FailedPrecondition("the server does not hold blob " + digest + ": send it again");
  }
  return store_->PutArtifact(store::ArtifactFile{path, digest, (*reader)->size()}).status();
}

Status ArtifactService::PutBytes(const std::string& path, std::string_view bytes) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<blob::BlobWriter> w, NewUpload());
  CAIRN_RETURN_IF_ERROR(w->Write(bytes));
  return CommitUpload(path, *w);
}

Result<ManifestCache::Files> ArtifactService::VersionFiles(const DatasetFileRef& ref) {
  CAIRN_RETURN_IF_ERROR(store_->GetArtifact(DatasetManifestPath(ref.name, ref.digest)).status());
  return manifests_.Get(*blobs_, std::string(ref.digest));
}

Result<store::ArtifactFile> ArtifactService::DatasetFile(const DatasetFileRef& ref,
                                                         std::string_view path) {
  auto not_found = [&] { return NotFound("Artifact '" + std::string(path) + "' not found"); };
  Result<ManifestCache::Files> files = VersionFiles(ref);
  if (!files.ok()) {
    return files.status().code() == StatusCode::kNotFound ? not_found() : files.status();
  }
  const core::FileEntry* f = FindManifestFile(**files, ref.file);
  if (f == nullptr) return not_found();
  return store::ArtifactFile{std::string(path), f->sha256, f->size};
}

Result<Download> ArtifactService::Open(const std::string& path) {
  std::optional<DatasetFileRef> in_dataset = DatasetFileOf(path);
  CAIRN_ASSIGN_OR_RETURN(store::ArtifactFile file,
                         in_dataset ? DatasetFile(*in_dataset, path) : store_->GetArtifact(path));
  Download d;
  CAIRN_ASSIGN_OR_RETURN(d.reader, blobs_->Open(file.digest));
  d.size = d.reader->size();
  size_t slash = path.rfind('/');
  d.file_name = slash == std::string::npos ? path : path.substr(slash + 1);
  return d;
}

Result<std::string> ArtifactService::ReadRunFile(std::string_view artifact_uri,
                                                 std::string_view rel_path, int64_t max_bytes) {
  CAIRN_ASSIGN_OR_RETURN(std::string rel, NormalizeArtifactPath(rel_path, /*allow_root=*/false));
  Result<std::string> root = ProxyPathOfUri(artifact_uri);
  if (!root.ok()) {
    return NotFound("the artifacts of " + std::string(artifact_uri) + " are not on this server");
  }
  CAIRN_ASSIGN_OR_RETURN(Download d, Open(root->empty() ? rel : *root + "/" + rel));
  if (d.size > max_bytes) {
    return ResourceExhausted(rel + " is " + std::to_string(d.size) + " bytes, over the limit of " +
                             std::to_string(max_bytes));
  }
  std::string out(static_cast<size_t>(d.size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    CAIRN_ASSIGN_OR_RETURN(size_t n, d.reader->ReadAt(static_cast<int64_t>(done),
                                                      out.data() + done, out.size() - done));
    if (n == 0) return Internal(rel + " is shorter than its size");
    done += n;
  }
  return out;
}

Result<std::vector<store::ArtifactEntry>> ArtifactService::List(const std::string& path) {
  if (IsUnder(path, kDatasetArtifactRoot) && path != kDatasetArtifactRoot) {
    return ListDatasets(path);
  }
  return store_->ListArtifacts(path);
}

Result<std::vector<store::ArtifactEntry>> ArtifactService::ListDatasets(const std::string& path) {
  if (std::optional<DatasetFileRef> ref = DatasetFileOf(path)) {
    // Inside a version: its manifest's files under the directory.
    Result<ManifestCache::Files> read = VersionFiles(*ref);
    if (!read.ok()) {
      if (read.status().code() == StatusCode::kNotFound) return std::vector<store::ArtifactEntry>();
      return read.status();
    }
    const ManifestCache::Files& files = *read;
    const std::string top =
        path.substr(0, path.size() - ref->file.size()) + (ref->file.empty() ? "/" : "");
    const std::string under = ref->file.empty() ? "" : std::string(ref->file) + "/";
    store::ListingBuilder builder(path);
    auto it =
        std::lower_bound(files->begin(), files->end(), under,
                         [](const core::FileEntry& f, const std::string& p) { return f.path < p; });
    for (; it != files->end() && it->path.starts_with(under); ++it) {
      builder.Add({top + it->path, it->sha256, it->size});
    }
    return builder.Take();
  }
  // A dataset's directory: its manifests, and beside each the directory of its version.
  CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactEntry> entries, store_->ListArtifacts(path));
  std::vector<store::ArtifactEntry> out;
  out.reserve(entries.size() * 2);
  for (store::ArtifactEntry& e : entries) {
    if (!e.is_dir && DatasetManifestOf(path + "/" + e.name)) {
      out.push_back({e.name.substr(0, e.name.size() - std::string_view(".json").size()), true, 0});
    }
    out.push_back(std::move(e));
  }
  std::sort(
      out.begin(), out.end(),
      [](const store::ArtifactEntry& a, const store::ArtifactEntry& b) { return a.name < b.name; });
  return out;
}

Result<std::vector<store::ArtifactEntry>> ArtifactService::ListRunArtifacts(
    std::string_view artifact_uri, std::string_view rel_path) {
  CAIRN_ASSIGN_OR_RETURN(std::string rel, NormalizeArtifactPath(rel_path, /*allow_root=*/true));
  Result<std::string> root = ProxyPathOfUri(artifact_uri);
  if (!root.ok()) return std::vector<store::ArtifactEntry>();
  std::string dir = rel.empty() ? *root : (root->empty() ? rel : *root + "/" + rel);
  CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactEntry> entries, store_->ListArtifacts(dir));
  if (!rel.empty()) {
    for (store::ArtifactEntry& e : entries) e.name = rel + "/" + e.name;
  }
  return entries;
}

Status ArtifactService::Delete(const std::string& path) { return DeleteCounting(path).status(); }

Result<ArtifactService::Freed> ArtifactService::DeleteCounting(const std::string& path) {
  CAIRN_RETURN_IF_ERROR(RefuseReservedPath(path));
  return DeleteFiles(path);
}

Status ArtifactService::DeleteRegistryFiles(const std::string& storage) {
  if (!storage.starts_with(std::string(kRegistryArtifactRoot) + "/")) {
    return InvalidArgument("not a registry path: " + storage);
  }
  Status s = DeleteFiles(storage).status();
  return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
}

Result<ArtifactService::Freed> ArtifactService::DeleteFiles(const std::string& path) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactFile> removed, store_->DeleteArtifacts(path));
  std::vector<std::string> digests;
  std::vector<int64_t> sizes;
  for (const store::ArtifactFile& f : removed) {
    digests.push_back(f.digest);
    sizes.push_back(f.size);
  }
  Freed freed;
  freed.files = static_cast<int64_t>(removed.size());
  CAIRN_RETURN_IF_ERROR(CollectBlobs(digests, &freed, &sizes));
  return freed;
}

Result<int64_t> ArtifactService::CopyTree(const std::string& source, const std::string& dest,
                                          int64_t max_files) {
  std::shared_lock lock(gc_mu_);
  std::vector<store::ArtifactFile> files;
  std::string prefix = source;
  if (Result<store::ArtifactFile> single = store_->GetArtifact(source); single.ok()) {
    files.push_back(*std::move(single));
    const size_t slash = source.rfind('/');
    prefix = slash == std::string::npos ? std::string() : source.substr(0, slash);
  } else {
    CAIRN_ASSIGN_OR_RETURN(files, FilesUnder(source, max_files));
  }
  for (const store::ArtifactFile& f : files) {
    store::ArtifactFile copy = f;
    copy.path = dest + (prefix.empty() ? "/" + f.path : f.path.substr(prefix.size()));
    CAIRN_RETURN_IF_ERROR(store_->PutArtifact(copy).status());
  }
  return static_cast<int64_t>(files.size());
}

Result<std::vector<store::ArtifactFile>> ArtifactService::FilesUnder(const std::string& top,
                                                                     int64_t max_files) {
  std::vector<store::ArtifactFile> files;
  std::deque<std::string> dirs = {top};
  while (!dirs.empty()) {
    const std::string dir = std::move(dirs.front());
    dirs.pop_front();
    CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactEntry> entries, store_->ListArtifacts(dir));
    for (const store::ArtifactEntry& e : entries) {
      const std::string child = dir.empty() ? e.name : dir + "/" + e.name;
      if (e.is_dir) {
        dirs.push_back(child);
        continue;
      }
      if (static_cast<int64_t>(files.size()) >= max_files) {
        return ResourceExhausted("more than " + std::to_string(max_files) + " files lie under " +
                                 top);
      }
      CAIRN_ASSIGN_OR_RETURN(store::ArtifactFile f, store_->GetArtifact(child));
      files.push_back(std::move(f));
    }
  }
  return files;
}

Result<std::vector<store::ArtifactFile>> ArtifactService::ListRunFiles(
    std::string_view artifact_uri, int64_t max_files) {
  Result<std::string> root = ProxyPathOfUri(artifact_uri);
  if (!root.ok()) return std::vector<store::ArtifactFile>();
  // A run's root is never the store's: the whole store is nobody's run.
  if (root->empty()) return InvalidArgument("the artifact URI " + std::string(artifact_uri) +
                                            " names the whole artifact store");
  CAIRN_ASSIGN_OR_RETURN(std::vector<store::ArtifactFile> files, FilesUnder(*root, max_files));
  const size_t cut = root->empty() ? 0 : root->size() + 1;
  for (store::ArtifactFile& f : files) f.path = f.path.substr(cut);
  return files;
}

Result<std::vector<std::string>> ArtifactService::NamedDigests() {
  std::vector<std::string> named;
  CAIRN_RETURN_IF_ERROR(store_->ForEachArtifactFile([&](store::ArtifactFile& f) {
    named.push_back(std::move(f.digest));
    return Status::Ok();
  }));
  CAIRN_RETURN_IF_ERROR(store_->datasets().ForEachDataBlob([&](const std::string& d) {
    named.push_back(d);
    return Status::Ok();
  }));
  std::sort(named.begin(), named.end());
  named.erase(std::unique(named.begin(), named.end()), named.end());
  return named;
}

Result<ArtifactService::Collection> ArtifactService::CollectGarbage(int64_t grace_ms,
                                                                   bool dry_run, int64_t now_ms) {
  using Steady = std::chrono::steady_clock;
  const Steady::time_point t0 = Steady::now();
  auto seconds_since = [](Steady::time_point t) {
    return std::chrono::duration<double>(Steady::now() - t).count();
  };
  if (!dry_run) {
    CAIRN_RETURN_IF_ERROR(store_->datasets().PruneDataUploads(now_ms - kUploadLedgerMs).status());
  }
  // Mark: every digest the index names, read a page at a time without holding the lock.
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> marked, NamedDigests());
  const double mark_s = seconds_since(t0);

  // Sweep, beside the listing: the listing hands the blobs nothing named over a chunk at a
  // time, and a sweeper checks each batch of them again under the lock uploads take to commit
  // (so that a blob an upload made referenced after the mark is kept), then removes them, a
  // batch at a time.
  constexpr size_t kChunk = 8192;
  constexpr size_t kSweepBatch = 1024;
  Collection out;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<blob::BlobInfo>> chunks;
  bool listed = false;
  Status swept;  // the sweeper's error, which ends the listing too
  size_t candidates = 0;
  double check_s = 0;
  auto sweep = [&](std::vector<blob::BlobInfo>& chunk) -> Status {
    for (size_t start = 0; start < chunk.size(); start += kSweepBatch) {
      const size_t end = std::min(chunk.size(), start + kSweepBatch);
      std::vector<std::string> digests;
      digests.reserve(end - start);
      for (size_t i = start; i < end; ++i) digests.push_back(chunk[i].digest);
      std::unique_lock lock(gc_mu_);
      const Steady::time_point check_start = Steady::now();
      CAIRN_ASSIGN_OR_RETURN(std::vector<bool> referenced, store_->BlobsReferenced(digests));
      check_s += seconds_since(check_start);
      std::vector<std::string> doomed;
      for (size_t i = start; i < end; ++i) {
        if (referenced[i - start]) continue;
        doomed.push_back(std::move(digests[i - start]));
        ++out.collected;
        out.bytes_freed += chunk[i].size;
      }
      if (!dry_run) CAIRN_RETURN_IF_ERROR(blobs_->DeleteMany(doomed));
    }
    return Status::Ok();
  };
  std::thread sweeper([&] {
    for (;;) {
      std::vector<blob::BlobInfo> chunk;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !chunks.empty() || listed; });
        if (chunks.empty()) return;
        chunk = std::move(chunks.front());
        chunks.pop_front();
      }
      Status s = sweep(chunk);
      if (!s.ok()) {
        std::lock_guard lock(mu);
        swept = s;
        chunks.clear();
        return;
      }
    }
  });
  std::vector<blob::BlobInfo> chunk;
  auto hand_over = [&] {
    std::lock_guard lock(mu);
    if (swept.ok() && !chunk.empty()) chunks.push_back(std::move(chunk));
    chunk.clear();
    cv.notify_one();
    return swept;
  };
  Status listing = blobs_->ForEach([&](const blob::BlobInfo& b) {
    ++out.blobs;
    if (std::binary_search(marked.begin(), marked.end(), b.digest)) return Status::Ok();
    if (b.modified_ms > now_ms - grace_ms) {
      ++out.in_grace;
      return Status::Ok();
    }
    ++candidates;
    chunk.push_back(b);
    return chunk.size() < kChunk ? Status::Ok() : hand_over();
  });
  const double list_s = seconds_since(t0) - mark_s;
  if (listing.ok()) (void)hand_over();
  {
    std::lock_guard lock(mu);
    listed = true;
    if (!listing.ok()) chunks.clear();
  }
  cv.notify_one();
  sweeper.join();
  if (!swept.ok()) return swept;
  CAIRN_RETURN_IF_ERROR(listing);
  // A slow collection says where its time went.
  if (seconds_since(t0) < 1.0) return out;
  char line[256];
  std::snprintf(line, sizeof line,
                "collection%s in %.1f s: %zu named digests read in %.1f s, %lld blobs listed in "
                "%.1f s, %zu candidates checked in %.1f s, %lld %s",
                dry_run ? " (dry run)" : "", seconds_since(t0), marked.size(), mark_s,
                static_cast<long long>(out.blobs), list_s, candidates, check_s,
                static_cast<long long>(out.collected), dry_run ? "to remove" : "removed");
  LogInfo(line);
  return out;
}

Result<ArtifactService::Usage> ArtifactService::MeasureUsage() {
  Usage out;
  const std::string dataset_prefix = std::string(kDatasetArtifactRoot) + "/";
  std::map<std::string, std::unordered_set<std::string>> dataset_blobs;
  CAIRN_RETURN_IF_ERROR(ForEachIndexedFile(*store_, *blobs_, [&](store::ArtifactFile& f) {
    if (f.path.starts_with(dataset_prefix)) {
      const size_t end = f.path.find('/', dataset_prefix.size());
      const std::string name = f.path.substr(dataset_prefix.size(), end - dataset_prefix.size());
      if (dataset_blobs[name].insert(f.digest).second) {
        Usage::Part& part = out.by_dataset[name];
        ++part.files;
        part.bytes += f.size;
      }
      return Status::Ok();
    }
    Usage::Part& part = out.by_root[f.path.substr(0, f.path.find('/'))];
    ++part.files;
    part.bytes += f.size;
    return Status::Ok();
  }));
  CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> named, NamedDigests());
  CAIRN_RETURN_IF_ERROR(blobs_->ForEach([&](const blob::BlobInfo& b) {
    ++out.blobs.files;
    out.blobs.bytes += b.size;
    if (!std::binary_search(named.begin(), named.end(), b.digest)) {
      ++out.unreferenced.files;
      out.unreferenced.bytes += b.size;
    }
    return Status::Ok();
  }));
  out.metadata_bytes = store_->StoredBytes();
  return out;
}

Status ArtifactService::CollectBlobs(const std::vector<std::string>& digests, Freed* freed,
                                     const std::vector<int64_t>* sizes) {
  std::unique_lock lock(gc_mu_);
  std::unordered_set<std::string> done;
  std::vector<std::string> doomed;
  for (size_t i = 0; i < digests.size(); ++i) {
    const std::string& digest = digests[i];
    if (!done.insert(digest).second) continue;
    CAIRN_ASSIGN_OR_RETURN(bool referenced, store_->BlobReferenced(digest));
    if (referenced) continue;
    CAIRN_ASSIGN_OR_RETURN(bool present, blobs_->Has(digest));
    if (!present) continue;
    doomed.push_back(digest);
    if (freed != nullptr) {
      ++freed->blobs;
      if (sizes != nullptr) freed->bytes += (*sizes)[i];
    }
  }
  return blobs_->DeleteMany(doomed);
}

}  // namespace cairn::service
