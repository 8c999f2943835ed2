// The QueueStore of a SQLite store: its tables (schema versions 6 and 7) in the store's database,
// written through the same group-committing writer as runs. Every change to a task reads its
// row, applies queue_rules.h and writes the row back inside one write transaction, so that a
// lease is atomic among threads and among processes sharing the database.
#pragma once

#include <memory>

#include "store/queue_store.h"
#include "store/sqlite/database.h"

namespace cairn::store::sqlite {

// `db` must outlive the store returned.
std::unique_ptr<QueueStore> NewSqliteQueueStore(Database* db);

}  // namespace cairn::store::sqlite
