#include "blob/local/small_blobs.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <utility>

#include "util/file.h"

namespace cairn::blob {
namespace {

// The listing of blobs is one table and their bytes another, so that a walk over a million
// blobs reads their names, not their contents.
constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS blobs (digest TEXT PRIMARY KEY, size INTEGER NOT NULL, "
    "modified_ms INTEGER NOT NULL, content INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS contents (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL);";

constexpr int kBusyMs = 30'000;
constexpr int kListPage = 4096;

Status Failed(sqlite3* db, std::string_view what) {
  return Unavailable("small blobs: " + std::string(what) + ": " +
                     (db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
}

}  // namespace

// One SQLite connection and the statements it runs, prepared once.
struct SmallBlobs::Connection {
  sqlite3* db = nullptr;
  sqlite3_stmt* find = nullptr;    // content of a digest
  sqlite3_stmt* get = nullptr;     // bytes of a digest
  sqlite3_stmt* touch = nullptr;   // a new modified time
  sqlite3_stmt* rewrite = nullptr;  // bytes written again
  sqlite3_stmt* add = nullptr;     // bytes
  sqlite3_stmt* name = nullptr;    // a listing row
  sqlite3_stmt* unname = nullptr;  // a listing row removed, its content returned
  sqlite3_stmt* drop = nullptr;    // bytes removed
  sqlite3_stmt* list = nullptr;    // a page of the listing

  ~Connection() {
    for (sqlite3_stmt* s : {find, get, touch, rewrite, add, name, unname, drop, list}) {
      sqlite3_finalize(s);
    }
    sqlite3_close_v2(db);
  }

  static Result<std::unique_ptr<Connection>> Open(const std::string& path, bool create) {
    auto c = std::make_unique<Connection>();
    const int flags =
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path.c_str(), &c->db, flags, nullptr) != SQLITE_OK) {
      return Failed(c->db, "open " + path);
    }
    sqlite3_busy_timeout(c->db, kBusyMs);
    sqlite3_extended_result_codes(c->db, 1);
    // WAL: readers run beside the one writer. synchronous=FULL: a commit is on the disk when
    // it returns, as a blob file is once fsynced, so nothing acknowledged is lost even to a
    // power cut.
    std::string mode;
    auto read_mode = [](void* out, int, char** values, char**) {
      *static_cast<std::string*>(out) = values[0] != nullptr ? values[0] : "";
      return 0;
    };
    if (sqlite3_exec(c->db, "PRAGMA journal_mode=WAL", read_mode, &mode, nullptr) != SQLITE_OK ||
        sqlite3_exec(c->db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr) != SQLITE_OK ||
        (create && sqlite3_exec(c->db, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK)) {
      return Failed(c->db, "set up " + path);
    }
    if (mode != "wal") {
      return Unavailable("small blobs: " + path + " cannot be put in WAL mode (it is in " + mode +
                         " mode): is its file system one that shares memory between processes?");
    }
    const std::pair<sqlite3_stmt**, const char*> statements[] = {
        {&c->find, "SELECT content FROM blobs WHERE digest = ?1"},
        {&c->get,
         "SELECT c.bytes FROM blobs b JOIN contents c ON c.id = b.content WHERE b.digest = ?1"},
        {&c->touch, "UPDATE blobs SET modified_ms = ?2 WHERE digest = ?1"},
        {&c->rewrite, "UPDATE contents SET bytes = ?2 WHERE id = ?1"},
        {&c->add, "INSERT INTO contents (id, bytes) VALUES (?1, ?2)"},
        {&c->name,
         "INSERT INTO blobs (digest, size, modified_ms, content) VALUES (?1, ?2, ?3, ?4)"},
        {&c->unname, "DELETE FROM blobs WHERE digest = ?1 RETURNING content"},
        {&c->drop, "DELETE FROM contents WHERE id = ?1"},
        {&c->list,
         "SELECT digest, size, modified_ms FROM blobs WHERE digest > ?1 ORDER BY digest LIMIT ?2"},
    };
    for (const auto& [stmt, sql] : statements) {
      if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, stmt, nullptr) !=
          SQLITE_OK) {
        return Failed(c->db, "prepare");
      }
    }
    return c;
  }

  bool Exec(const char* sql) {
    return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  }
};

// A reader connection taken from the pool and given back when done with.
struct SmallBlobs::Lease {
  SmallBlobs* owner;
  std::unique_ptr<Connection> conn;
  ~Lease() {
    if (conn == nullptr) return;  // dropped: it could not end its transaction
    std::lock_guard lock(owner->mu_);
    owner->idle_readers_.push_back(std::move(conn));
  }
};

// One caller's change, waiting to be committed with the others queued beside it.
struct SmallBlobs::Write {
  std::string_view digest;  // a put
  std::string_view bytes;
  int64_t now_ms = 0;
  const std::vector<std::string>* doomed = nullptr;  // or a removal
  Status status;
  bool done = false;
};

namespace {

// The first 15 hex digits of a digest as a number.
int64_t ContentId(std::string_view digest) {
  int64_t id = 0;
  for (char ch : digest.substr(0, 15)) id = id * 16 + (ch <= '9' ? ch - '0' : ch - 'a' + 10);
  return id;
}

void BindText(sqlite3_stmt* s, int i, std::string_view text) {
  sqlite3_bind_text(s, i, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

// Bytes as a BLOB: an empty one too, which a null pointer would make NULL.
void BindBytes(sqlite3_stmt* s, int i, std::string_view bytes) {
  if (bytes.empty()) {
    sqlite3_bind_zeroblob(s, i, 0);
  } else {
    sqlite3_bind_blob(s, i, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
  }
}

// How many numbers past the digest's own a blob's bytes may take before the write fails: two
// digests share their first 60 bits about once in 2^30 for a billion blobs.
constexpr int kIdTries = 64;

}  // namespace

Result<std::unique_ptr<SmallBlobs>> SmallBlobs::Open(std::string path) {
  std::unique_ptr<SmallBlobs> out(new SmallBlobs(std::move(path)));
  struct stat st {};
  const bool made = ::stat(out->path_.c_str(), &st) != 0;
  CAIRN_ASSIGN_OR_RETURN(out->writer_, Connection::Open(out->path_, /*create=*/true));
  // A new database's name is made durable as a blob file's is.
  if (made) CAIRN_RETURN_IF_ERROR(SyncDir(std::filesystem::path(out->path_).parent_path()));
  return out;
}

SmallBlobs::SmallBlobs(std::string path) : path_(std::move(path)) {}

SmallBlobs::~SmallBlobs() = default;

Result<std::unique_ptr<SmallBlobs::Lease>> SmallBlobs::Reader() {
  auto lease = std::make_unique<Lease>();
  lease->owner = this;
  {
    std::lock_guard lock(mu_);
    if (!idle_readers_.empty()) {
      lease->conn = std::move(idle_readers_.back());
      idle_readers_.pop_back();
    }
  }
  if (lease->conn == nullptr) {
    CAIRN_ASSIGN_OR_RETURN(lease->conn, Connection::Open(path_, /*create=*/false));
  }
  return lease;
}

// Group commit: a caller queues its change; the first caller to find no commit under way
// commits everything queued in one transaction, while the rest wait for theirs to be done.
Status SmallBlobs::Apply(Write& write) {
  std::unique_lock lock(mu_);
  queue_.push_back(&write);
  while (!write.done) {
    if (writing_) {
      written_.wait(lock);
      continue;
    }
    writing_ = true;
    std::vector<Write*> batch;
    batch.swap(queue_);
    lock.unlock();
    // Whatever happens, every write of the batch is answered and the next commit may start.
    Status s;
    try {
      s = Commit(batch);
    } catch (const std::exception& e) {
      s = Internal(std::string("small blobs: a commit failed: ") + e.what());
    }
    lock.lock();
    for (Write* w : batch) {
      w->status = s;
      w->done = true;
    }
    writing_ = false;
    written_.notify_all();
  }
  return write.status;
}

namespace {

// Runs a statement that returns no row, and makes it ready to run again.
bool RunOnce(sqlite3_stmt* s) {
  const int rc = sqlite3_step(s);
  return sqlite3_reset(s) == SQLITE_OK && rc == SQLITE_DONE;
}

}  // namespace

// Stores one blob's bytes; the name of the step that failed, or nullptr.
const char* SmallBlobs::PutRow(Connection& c, const Write& w) {
  BindText(c.find, 1, w.digest);
  const int found = sqlite3_step(c.find);
  const int64_t content = found == SQLITE_ROW ? sqlite3_column_int64(c.find, 0) : -1;
  sqlite3_reset(c.find);
  if (found != SQLITE_ROW && found != SQLITE_DONE) return "find";
  if (found == SQLITE_ROW) {
    // Written again: the bytes go back in (mending a damaged row, as writing a file again
    // replaces it) and the time is renewed.
    sqlite3_bind_int64(c.rewrite, 1, content);
    BindBytes(c.rewrite, 2, w.bytes);
    if (!RunOnce(c.rewrite)) return "rewrite";
    BindText(c.touch, 1, w.digest);
    sqlite3_bind_int64(c.touch, 2, w.now_ms);
    return RunOnce(c.touch) ? nullptr : "touch";
  }
  // The bytes' row id is the digest's first 60 bits (the next free one in the vanishingly rare
  // case of two digests sharing them), so that both tables keep blobs in digest order and a
  // collection's removals, which come in that order, touch a few neighbouring pages rather than
  // one page per blob.
  int added = SQLITE_CONSTRAINT_PRIMARYKEY;
  int64_t id = ContentId(w.digest);
  for (int tries = 0; added == SQLITE_CONSTRAINT_PRIMARYKEY && tries < kIdTries; ++tries) {
    sqlite3_bind_int64(c.add, 1, id++);
    BindBytes(c.add, 2, w.bytes);
    added = sqlite3_step(c.add);
    sqlite3_reset(c.add);
  }
  if (added != SQLITE_DONE) return "add";
  BindText(c.name, 1, w.digest);
  sqlite3_bind_int64(c.name, 2, static_cast<int64_t>(w.bytes.size()));
  sqlite3_bind_int64(c.name, 3, w.now_ms);
  sqlite3_bind_int64(c.name, 4, sqlite3_last_insert_rowid(c.db));
  return RunOnce(c.name) ? nullptr : "name";
}

// Removes the blobs of `digests` that are here; the name of the step that failed, or nullptr.
const char* SmallBlobs::RemoveRows(Connection& c, const std::vector<std::string>& digests) {
  for (const std::string& digest : digests) {
    BindText(c.unname, 1, digest);
    const int rc = sqlite3_step(c.unname);
    const int64_t content = rc == SQLITE_ROW ? sqlite3_column_int64(c.unname, 0) : -1;
    if (rc == SQLITE_ROW) (void)sqlite3_step(c.unname);
    if (sqlite3_reset(c.unname) != SQLITE_OK || (rc != SQLITE_ROW && rc != SQLITE_DONE)) {
      return "remove";
    }
    if (content < 0) continue;
    sqlite3_bind_int64(c.drop, 1, content);
    if (!RunOnce(c.drop)) return "remove bytes";
  }
  return nullptr;
}

Status SmallBlobs::Commit(const std::vector<Write*>& batch) {
  if (writer_ == nullptr) {  // the last one could not end its transaction
    CAIRN_ASSIGN_OR_RETURN(writer_, Connection::Open(path_, /*create=*/true));
  }
  Connection& c = *writer_;
  if (!c.Exec("BEGIN IMMEDIATE")) return Failed(c.db, "begin");
  const char* failed = nullptr;
  for (const Write* w : batch) {
    failed = w->doomed != nullptr ? RemoveRows(c, *w->doomed) : PutRow(c, *w);
    if (failed != nullptr) break;
  }
  if (failed == nullptr && c.Exec("COMMIT")) return Status::Ok();
  Status s = Failed(c.db, failed != nullptr ? failed : "commit");
  c.Exec("ROLLBACK");
  if (sqlite3_get_autocommit(c.db) == 0) writer_.reset();  // the next commit opens anew
  return s;
}

Status SmallBlobs::Put(std::string_view digest, std::string_view bytes, int64_t now_ms) {
  Write w;
  w.digest = digest;
  w.bytes = bytes;
  w.now_ms = now_ms;
  return Apply(w);
}

Status SmallBlobs::Delete(const std::vector<std::string>& digests) {
  if (digests.empty()) return Status::Ok();
  Write w;
  w.doomed = &digests;
  return Apply(w);
}

Result<std::shared_ptr<const std::string>> SmallBlobs::Get(std::string_view digest) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Lease> lease, Reader());
  sqlite3_stmt* s = lease->conn->get;
  BindText(s, 1, digest);
  const int rc = sqlite3_step(s);
  std::shared_ptr<const std::string> out;
  if (rc == SQLITE_ROW) {
    const void* p = sqlite3_column_blob(s, 0);
    const int n = sqlite3_column_bytes(s, 0);
    out = std::make_shared<const std::string>(static_cast<const char*>(p), static_cast<size_t>(n));
  }
  sqlite3_reset(s);
  if (rc == SQLITE_ROW) return out;
  if (rc == SQLITE_DONE) return NotFound("no blob " + std::string(digest));
  return Failed(lease->conn->db, "read");
}

Result<bool> SmallBlobs::Has(std::string_view digest) {
  CAIRN_ASSIGN_OR_RETURN(std::vector<bool> found, HasMany({std::string(digest)}));
  return static_cast<bool>(found[0]);
}

Result<std::vector<bool>> SmallBlobs::HasMany(const std::vector<std::string>& digests) {
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Lease> lease, Reader());
  Connection& c = *lease->conn;
  // One read transaction: each statement would otherwise take and drop the file's locks.
  const bool batch = digests.size() > 1;
  if (batch && !c.Exec("BEGIN")) return Failed(c.db, "begin");
  std::vector<bool> out;
  out.reserve(digests.size());
  int rc = SQLITE_DONE;
  for (const std::string& digest : digests) {
    BindText(c.find, 1, digest);
    rc = sqlite3_step(c.find);
    sqlite3_reset(c.find);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) break;
    out.push_back(rc == SQLITE_ROW);
  }
  Status s = rc == SQLITE_ROW || rc == SQLITE_DONE ? Status::Ok() : Failed(c.db, "look up");
  if (batch && !c.Exec("COMMIT")) c.Exec("ROLLBACK");
  // A connection still inside its transaction would read an old snapshot from then on.
  if (sqlite3_get_autocommit(c.db) == 0) lease->conn.reset();
  CAIRN_RETURN_IF_ERROR(s);
  return out;
}

Status SmallBlobs::ForEach(const std::function<Status(const BlobInfo&)>& visit) {
  std::string after;
  std::vector<BlobInfo> page;
  for (;;) {
    page.clear();
    {
      CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Lease> lease, Reader());
      sqlite3_stmt* s = lease->conn->list;
      BindText(s, 1, after);
      sqlite3_bind_int(s, 2, kListPage);
      int rc;
      while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        BlobInfo info;
        info.digest.assign(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)),
                           static_cast<size_t>(sqlite3_column_bytes(s, 0)));
        info.size = sqlite3_column_int64(s, 1);
        info.modified_ms = sqlite3_column_int64(s, 2);
        page.push_back(std::move(info));
      }
      sqlite3_reset(s);
      if (rc != SQLITE_DONE) return Failed(lease->conn->db, "list");
    }
    for (const BlobInfo& b : page) CAIRN_RETURN_IF_ERROR(visit(b));
    if (page.size() < static_cast<size_t>(kListPage)) return Status::Ok();
    after = page.back().digest;
  }
}

}  // namespace cairn::blob
