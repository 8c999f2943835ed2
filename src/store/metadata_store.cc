#include "store/metadata_store.h"

#include "store/memory/memory_store.h"
#include "store/sqlite/sqlite_store.h"
#include "util/file.h"

namespace cairn::store {

Result<std::vector<core::Metric>> MetadataStore::GetMetricHistory(
    const MetricHistoryQuery& query) {
  std::vector<core::Metric> points;
  CAIRN_RETURN_IF_ERROR(ScanMetricHistory(query, [&](const core::Metric& m) {
    points.push_back(m);
    return true;
  }));
  return points;
}

Status MetadataStore::ForEachArtifactFile(const std::function<Status(ArtifactFile&)>& visit) {
  std::string after;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<ArtifactFile> page, ListArtifactFiles(after, 10'000));
    if (page.empty()) return Status::Ok();
    after = page.back().path;
    for (ArtifactFile& f : page) CAIRN_RETURN_IF_ERROR(visit(f));
  }
}

Status DatasetStore::ForEachDataBlob(const std::function<Status(const std::string&)>& visit) {
  std::string after;
  for (;;) {
    CAIRN_ASSIGN_OR_RETURN(std::vector<std::string> page, ListDataBlobs(after, 10'000));
    if (page.empty()) return Status::Ok();
    after = page.back();
    for (const std::string& d : page) CAIRN_RETURN_IF_ERROR(visit(d));
  }
}

Result<std::unique_ptr<MetadataStore>> OpenMetadataStore(std::string_view uri,
                                                         const StoreOptions& options) {
  if (uri == "memory:" || uri == "memory://") return NewMemoryMetadataStore(options);
  constexpr std::string_view kSqlite = "sqlite:///";
  if (uri.starts_with(kSqlite)) {
    // sqlite:///relative/path and sqlite:////absolute/path, as SQLAlchemy spells them.
    std::string path(uri.substr(kSqlite.size()));
    StoreOptions opts = options;
    if (size_t q = path.find('?'); q != std::string::npos) {
      std::string query = path.substr(q + 1);
      path.resize(q);
      if (query == "synchronous=full" || query == "synchronous=FULL") {
        opts.sync_every_commit = true;
      } else if (query != "synchronous=normal" && query != "synchronous=NORMAL") {
        return InvalidArgument("unsupported option '" + query + "' in sqlite URI; expected "
                               "synchronous=full or synchronous=normal");
      }
    }
    if (path.empty()) return InvalidArgument("sqlite URI names no file: " + std::string(uri));
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) CAIRN_RETURN_IF_ERROR(MakeDirs(parent));
    return OpenSqliteMetadataStore(path, opts);
  }
  return InvalidArgument("unsupported backend store URI '" + std::string(uri) +
                         "': expected sqlite:///PATH or memory:");
}

}  // namespace cairn::store
