#include "service/backup.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "service/dataset_files.h"
#include "util/parallel.h"

namespace cairn::service {

Result<BlobCopy> CopyNamedBlobs(store::MetadataStore& snapshot, blob::ContentStore& from,
                                blob::ContentStore& to, const BlobCopyOptions& options) {
  BlobCopy out;
  std::unordered_map<std::string, int64_t> sizes;
  CAIRN_RETURN_IF_ERROR(ForEachIndexedFile(snapshot, from, [&](store::ArtifactFile& f) {
    ++out.files;
    sizes.emplace(std::move(f.digest), f.size);
    return Status::Ok();
  }));
  // A blob a dataset notes is kept too, also when no manifest the copy can read names it.
  CAIRN_RETURN_IF_ERROR(snapshot.datasets().ForEachDataBlob([&](const std::string& d) {
    sizes.emplace(d, 0);
    return Status::Ok();
  }));
  std::vector<std::string> named;
  named.reserve(sizes.size());
  for (const auto& [digest, size] : sizes) {
    out.bytes += size;
    named.push_back(digest);
  }
  std::vector<std::string> wanted;
  constexpr size_t kLookBatch = 8192;
  for (size_t start = 0; start < named.size(); start += kLookBatch) {
    const std::vector<std::string> batch(
        named.begin() + static_cast<std::ptrdiff_t>(start),
        named.begin() + static_cast<std::ptrdiff_t>(std::min(named.size(), start + kLookBatch)));
    CAIRN_ASSIGN_OR_RETURN(std::vector<bool> have, to.HasMany(batch));
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!have[i]) wanted.push_back(batch[i]);
    }
  }
  std::sort(wanted.begin(), wanted.end());
  out.blobs = static_cast<int64_t>(sizes.size());

  std::mutex mu;
  BlobCopyProgress progress;
  progress.total = static_cast<int64_t>(wanted.size());
  CAIRN_RETURN_IF_ERROR(
      ParallelFor(wanted.size(), std::max(1, options.threads), [&](size_t i) -> Status {
        const std::string& digest = wanted[i];
        Result<std::unique_ptr<blob::BlobReader>> reader = from.Open(digest);
        if (!reader.ok()) {
          if (reader.status().code() != StatusCode::kNotFound) return reader.status();
          std::lock_guard lock(mu);
          out.lost.push_back(digest);
          return Status::Ok();
        }
        CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<blob::BlobWriter> writer, to.NewWriter());
        std::string buf(static_cast<size_t>(std::clamp<int64_t>((*reader)->size(), 1, 1 << 20)),
                        '\0');
        int64_t offset = 0;
        for (;;) {
          CAIRN_ASSIGN_OR_RETURN(size_t n, (*reader)->ReadAt(offset, buf.data(), buf.size()));
          if (n == 0) break;
          CAIRN_RETURN_IF_ERROR(writer->Write(std::string_view(buf.data(), n)));
          offset += static_cast<int64_t>(n);
        }
        CAIRN_ASSIGN_OR_RETURN(blob::BlobInfo info, writer->Commit());
        std::lock_guard lock(mu);
        if (info.digest != digest) {
          // The copy is named by what it holds: a stray blob the index never names, left for
          // the collector (deleting it could take a blob of the same bytes the index does name).
          out.corrupt.push_back(digest + ": its bytes hash to " + info.digest);
          return Status::Ok();
        }
        ++out.copied;
        out.bytes_copied += info.size;
        ++progress.done;
        progress.bytes += info.size;
        if (options.progress) options.progress(progress);
        return Status::Ok();
      }));
  std::sort(out.lost.begin(), out.lost.end());
  std::sort(out.corrupt.begin(), out.corrupt.end());
  return out;
}

}  // namespace cairn::service
