// A consistent copy of a SQLite store taken while its server keeps writing: SQLite's online
// backup reads every page inside one read transaction, which in WAL mode does not hold the
// writer back, so the copy is the database as one commit left it.
#pragma once

#include <string>

#include "util/status.h"

namespace cairn::store::sqlite {

// Copies the database at `from` into the file `to`, which is replaced; made durable (fsynced)
// before this returns. kNotFound when `from` does not exist.
Status BackupDatabase(const std::string& from, const std::string& to);

}  // namespace cairn::store::sqlite
