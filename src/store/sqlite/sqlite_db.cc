#include "store/sqlite/sqlite_db.h"

#include <chrono>
#include <mutex>
#include <thread>
#include <string>

#include "core/search.h"

namespace cairn::store::sqlite {

Status SqliteError(sqlite3* db, std::string_view what) {
  int code = db == nullptr ? SQLITE_ERROR : sqlite3_extended_errcode(db);
  std::string m = "sqlite: " + std::string(what) + ": " +
                  (db == nullptr ? std::string("out of memory") : sqlite3_errmsg(db));
  int primary = code & 0xff;
  if (primary == SQLITE_CONSTRAINT) return {StatusCode::kAlreadyExists, m};
  if (primary == SQLITE_FULL || primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN ||
      primary == SQLITE_BUSY || primary == SQLITE_LOCKED || primary == SQLITE_READONLY) {
    return Unavailable(m);
  }
  return Internal(m);
}

bool Stmt::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) status_ = SqliteError(db_, sqlite3_sql(stmt_));
  return false;
}

Status Stmt::Exec() {
  while (Step()) {
  }
  return status_;
}

namespace {

// Waits for a lock another connection holds, for up to 10 s in all. SQLite's own busy timeout
// sleeps 1 ms, then 2, 5, 10 and up to 100 ms between tries, so a writer held back for a moment
// by a checkpoint slept on long after the lock was free; here the first 10 ms are tried every
// 100 us.
int WaitForLock(void*, int tries) {
  constexpr int kFineTries = 100;  // 100 us apart: the first 10 ms
  constexpr int kCoarseTries = 9990;  // 1 ms apart: the rest of 10 s
  if (tries >= kFineTries + kCoarseTries) return 0;
  std::this_thread::sleep_for(std::chrono::microseconds(tries < kFineTries ? 100 : 1000));
  return 1;
}

void LikeFunction(sqlite3_context* ctx, int, sqlite3_value** args) {
  const auto text_of = [](sqlite3_value* v) {
    const unsigned char* p = sqlite3_value_text(v);
    return p == nullptr ? std::string_view()
                        : std::string_view(reinterpret_cast<const char*>(p),
                                           static_cast<size_t>(sqlite3_value_bytes(v)));
  };
  if (sqlite3_value_type(args[0]) == SQLITE_NULL) return sqlite3_result_int(ctx, 0);
  sqlite3_result_int(ctx, core::LikeMatch(text_of(args[0]), text_of(args[1]),
                                          sqlite3_value_int(args[2]) != 0)
                              ? 1
                              : 0);
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& path, bool create,
                                                     bool sync_every_commit) {
  // SQLite counts every allocation under a global mutex unless told not to; nothing here reads
  // those counts, and under small-batch ingest the mutex was a few percent of the writer's time.
  // The setting must come before SQLite initialises, which the first open does.
  static std::once_flag configured;
  std::call_once(configured, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    Status s = SqliteError(db, "open " + path);
    sqlite3_close(db);
    return s;
  }
  std::unique_ptr<Connection> conn(new Connection(db));
  sqlite3_busy_handler(db, &WaitForLock, nullptr);
  // WAL lets readers run beside the single writer. With synchronous=NORMAL a commit is in the
  // WAL (the OS page cache) when it returns, so a killed process loses nothing; fsync happens at
  // checkpoints. FULL adds an fsync per commit (per group of writes) for power-loss safety.
  CAIRN_RETURN_IF_ERROR(conn->Exec(
      std::string("PRAGMA journal_mode=WAL; PRAGMA synchronous=") +
      (sync_every_commit ? "FULL" : "NORMAL") +
      "; PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-16000; "
      "PRAGMA journal_size_limit=67108864;"));
  if (sqlite3_create_function_v2(db, "cairn_like", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                 nullptr, &LikeFunction, nullptr, nullptr,
                                 nullptr) != SQLITE_OK) {
    return SqliteError(db, "register cairn_like");
  }
  return conn;
}

Connection::~Connection() {
  cache_.clear();
  sqlite3_close_v2(db_);
}

Result<Stmt*> Connection::Prepare(const char* sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) {
    it->second->Reset();
    in_use_.push_back(it->second.get());
    return it->second.get();
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
    return SqliteError(db_, std::string("prepare ") + sql);
  }
  auto owned = std::make_unique<Stmt>(db_, stmt);
  Stmt* out = owned.get();
  cache_[sql] = std::move(owned);
  in_use_.push_back(out);
  return out;
}

Result<std::unique_ptr<Stmt>> Connection::PrepareOnce(const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    return SqliteError(db_, "prepare " + sql);
  }
  return std::make_unique<Stmt>(db_, stmt);
}

void Connection::ResetAll() {
  for (Stmt* stmt : in_use_) stmt->Reset();
  in_use_.clear();
}

Status Connection::Exec(std::string_view sql) {
  std::string text(sql);
  char* err = nullptr;
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    Status s = SqliteError(db_, text);
    return Status(s.code(), "sqlite: " + m + " (in: " + text.substr(0, 80) + ")");
  }
  return Status::Ok();
}

}  // namespace cairn::store::sqlite
