// The RegistryStore of a SQLite store: its tables (schema version 5) in the store's database,
// written through the same group-committing writer as runs. Searches become SQL: every clause
// of search.h's registry grammar has an exact translation (LIKE through cairn_like), so the
// database filters, orders and pages, and a page of versions costs the same among a hundred
// versions or a hundred thousand.
#pragma once

#include <memory>

#include "store/registry_store.h"
#include "store/sqlite/database.h"

namespace cairn::store::sqlite {

// `db` must outlive the store returned.
std::unique_ptr<RegistryStore> NewSqliteRegistryStore(Database* db);

}  // namespace cairn::store::sqlite
