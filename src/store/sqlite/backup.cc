#include "store/sqlite/backup.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "util/file.h"

namespace cairn::store::sqlite {
namespace {

struct Handle {
  sqlite3* db = nullptr;
  ~Handle() {
    if (db != nullptr) sqlite3_close_v2(db);
  }
};

Status SqliteError(sqlite3* db, const std::string& what) {
  return Unavailable(what + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
}

}  // namespace

Status BackupDatabase(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (!std::filesystem::exists(from, ec)) return NotFound("no database at " + from);
  std::filesystem::remove(to, ec);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    std::filesystem::remove(to + suffix, ec);
  }
  Handle src, dst;
  if (sqlite3_open_v2(from.c_str(), &src.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    return SqliteError(src.db, "opening " + from);
  }
  // A writer holds the database for the length of a commit at most.
  sqlite3_busy_timeout(src.db, 30'000);
  if (sqlite3_open_v2(to.c_str(), &dst.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    return SqliteError(dst.db, "creating " + to);
  }
  sqlite3_backup* backup = sqlite3_backup_init(dst.db, "main", src.db, "main");
  if (backup == nullptr) return SqliteError(dst.db, "backing up " + from);
  int rc;
  do {
    // All pages in one step: one read transaction, so one consistent snapshot.
    rc = sqlite3_backup_step(backup, -1);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) sqlite3_sleep(50);
  } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) return SqliteError(dst.db, "backing up " + from);
  // The copy keeps the source's WAL mode; fold everything into the one file.
  if (sqlite3_exec(dst.db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr) !=
      SQLITE_OK) {
    return SqliteError(dst.db, "checkpointing " + to);
  }
  sqlite3_close_v2(dst.db);
  dst.db = nullptr;
  const int fd = ::open(to.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", to);
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return ErrnoStatus("fsync", to);
  return SyncDir(std::filesystem::path(to).parent_path());
}

}  // namespace cairn::store::sqlite
