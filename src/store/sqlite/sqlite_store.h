// The embedded MetadataStore on SQLite.
//
// One database file in WAL mode. All writes go through a single writer thread that takes every
// write waiting in its queue and commits them in one transaction (group commit): concurrent
// clients never see "database is locked", and the cost of a durable commit is shared by the
// batch. Each write runs inside its own savepoint, so one failing write does not undo the
// others. Reads use a pool of connections and run in parallel with the writer.
// The schema is versioned; Open applies pending migrations in order (schema.md in docs/formats).
// The parts: database.h (the writer, the readers, checkpoints), schema.h (migrations), and the
// SQL of runs (run_rows.h), of what they log (run_values.h) and of their search (run_search.h).
#pragma once

#include <memory>
#include <string>

#include "store/metadata_store.h"

namespace cairn::store {

Result<std::unique_ptr<MetadataStore>> OpenSqliteMetadataStore(const std::string& path,
                                                               const StoreOptions& options);

}  // namespace cairn::store
