#include "store/metadata_store.h"

#include "store/memory/memory_store.h"
#include "store/sqlite/sqlite_store.h"
#include "util/file.h"

namespace cairn::store {

Result<std::unique_ptr<MetadataStore>> OpenMetadataStore(std::string_view uri,
                                                         const StoreOptions& options) {
  if (uri == "memory:" || uri == "memory://") return NewMemoryMetadataStore(options);
  constexpr std::string_view kSqlite = "sqlite:///";
  if (uri.starts_with(kSqlite)) {
    // sqlite:///relative/path and sqlite:////absolute/path, as SQLAlchemy spells them.
    std::string path(uri.substr(kSqlite.size()));
    if (path.empty()) return InvalidArgument("sqlite URI names no file: " + std::string(uri));
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) CAIRN_RETURN_IF_ERROR(MakeDirs(parent));
    return OpenSqliteMetadataStore(path, options);
  }
  return InvalidArgument("unsupported backend store URI '" + std::string(uri) +
                         "': expected sqlite:///PATH or memory:");
}

}  // namespace cairn::store
