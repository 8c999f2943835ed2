// The SQLite schema as an ordered list of migrations. Migration i brings a database from
// version i to i+1; a new database runs them all. Never edit a released migration: append one.
#pragma once

#include <span>

namespace cairn::store::sqlite {

std::span<const char* const> Migrations();

}  // namespace cairn::store::sqlite
