// The DatasetStore of a SQLite store: its tables (schema version 8) in the store's database,
// written through the same group-committing writer as runs.
#pragma once

#include <memory>

#include "store/dataset_store.h"
#include "store/sqlite/database.h"

namespace cairn::store::sqlite {

// `db` must outlive the store returned.
std::unique_ptr<DatasetStore> NewSqliteDatasetStore(Database* db);

}  // namespace cairn::store::sqlite
