// Thin RAII wrappers over the SQLite C API: a connection that caches prepared statements, and
// a statement with typed binds and column reads. Every failure becomes a Status that carries
// SQLite's message.
#pragma once

#include <sqlite3.h>

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/status.h"

namespace cairn::store::sqlite {

class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  template <std::integral T>
  Stmt& Bind(int i, T v) {
    sqlite3_bind_int64(stmt_, i, static_cast<sqlite3_int64>(v));
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Stmt& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  // Binds bytes as a BLOB: length() counts bytes, whatever the text encoding.
  Stmt& BindBlob(int i, std::string_view v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& BindNull(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Stmt& Bind(int i, std::optional<int64_t> v) { return v ? Bind(i, *v) : BindNull(i); }

  // Advances to the next row: true when a row is available, false when done. A failure sets
  // status() and returns false.
  bool Step();
  // Runs to completion, for statements that return no rows.
  Status Exec();
  const Status& status() const { return status_; }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string_view Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p == nullptr ? std::string_view()
                        : std::string_view(reinterpret_cast<const char*>(p),
                                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  std::string Str(int col) const { return std::string(Text(col)); }

  // Clears bindings and state so the cached statement can be reused.
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    status_ = Status::Ok();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  Status status_;
};

class Connection {
 public:
  // Opens (creating when `create`) the database at path with the pragmas cairn relies on, and
  // the SQL function cairn_like(text, pattern, fold_case): MLflow's LIKE (case-sensitive) and
  // ILIKE, where SQLite's own LIKE folds ASCII case.
  // `sync_every_commit` selects synchronous=FULL over NORMAL.
  static Result<std::unique_ptr<Connection>> Open(const std::string& path, bool create,
                                                  bool sync_every_commit = false);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // A cached statement for `sql`, reset and ready to bind. `sql` must be a string literal: the
  // cache is keyed by its address.
  Result<Stmt*> Prepare(const char* sql);
  Status Exec(std::string_view sql);
  // A statement built at run time (a search's WHERE clause), not cached: the caller owns it.
  Result<std::unique_ptr<Stmt>> PrepareOnce(const std::string& sql);
  // Resets every statement handed out since the last call. A statement left mid-iteration
  // holds its read snapshot open, so each unit of work ends with this.
  void ResetAll();
  sqlite3* raw() { return db_; }

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::unordered_map<const char*, std::unique_ptr<Stmt>> cache_;
  std::vector<Stmt*> in_use_;
};

Status SqliteError(sqlite3* db, std::string_view what);

// Runs a statement with no result rows, taking it from the connection's cache.
template <typename... Args>
Status ExecStmt(Connection& c, const char* sql, const Args&... args) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare(sql));
  int i = 0;
  (s->Bind(++i, args), ...);
  return s->Exec();
}

}  // namespace cairn::store::sqlite
