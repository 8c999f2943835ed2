// The SQLite schema as an ordered list of migrations. Migration i brings a database from
// version i to i+1; a new database runs them all. Never edit a released migration: append one.
#pragma once

#include <span>
#include <string>

#include "store/sqlite/sqlite_db.h"

namespace cairn::store::sqlite {

std::span<const char* const> Migrations();

// Brings the database on `c` to the latest version, each migration in its own transaction. A new
// database also gets experiment 0, "Default", as MLflow's stores have, its artifacts under
// `default_artifact_root`. kFailedPrecondition when the database is newer than this cairn;
// `path` names the database in messages.
Status Migrate(Connection& c, const std::string& path, const std::string& default_artifact_root);

}  // namespace cairn::store::sqlite
