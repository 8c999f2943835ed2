#include "store/sqlite/database.h"

#include <chrono>
#include <future>
#include <iterator>

#include "store/sqlite/schema.h"
#include "util/log.h"
#include "util/process.h"

namespace cairn::store::sqlite {
namespace {

constexpr int kRestartPages = 16384;  // 64 MiB of 4 KiB pages
constexpr std::chrono::milliseconds kIdleCheckpoint{200};

}  // namespace

Result<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                 const StoreOptions& options, Upkeep upkeep) {
  auto db = std::make_unique<Database>(path, std::move(upkeep));
  CAIRN_RETURN_IF_ERROR(db->Init(options));
  return db;
}

Database::~Database() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stop_ = true;
  }
  queue_cv_.notify_all();
  if (writer_thread_.joinable()) writer_thread_.join();
  {
    std::lock_guard<std::mutex> lock(checkpoint_mu_);
    checkpoint_stop_ = true;
  }
  checkpoint_cv_.notify_all();
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
  // Closing the last connection checkpoints the WAL into the database file.
  checkpointer_.reset();
  pool_.clear();
  writer_.reset();
}

Status Database::Init(const StoreOptions& options) {
  CAIRN_ASSIGN_OR_RETURN(writer_,
                         Connection::Open(path_, /*create=*/true, options.sync_every_commit));
  CAIRN_RETURN_IF_ERROR(Migrate(*writer_, path_, options.default_artifact_root));
  // The writer only signals when the WAL has grown past kCheckpointPages; the checkpointer
  // thread does the copying.
  CAIRN_ASSIGN_OR_RETURN(checkpointer_, Connection::Open(path_, /*create=*/false));
  CAIRN_RETURN_IF_ERROR(writer_->Exec("PRAGMA wal_autocheckpoint=0"));
  sqlite3_wal_hook(writer_->raw(), &Database::OnWalCommit, this);
  checkpoint_thread_ = std::thread([this] {
    NameThisThread("cairn-checkpoint");
    CheckpointLoop();
  });
  writer_thread_ = std::thread([this] {
    NameThisThread("cairn-writer");
    WriterLoop();
  });
  return Status::Ok();
}

Status Database::Write(std::function<Status(Connection&)> fn) {
  std::promise<Status> committed;
  std::future<Status> done = committed.get_future();
  WriteAsync(std::move(fn), [&committed](Status s) { committed.set_value(std::move(s)); });
  return done.get();
}

void Database::WriteAsync(std::function<Status(Connection&)> fn, std::function<void(Status)> done) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (!stop_) {
      queue_.push_back(std::make_unique<WriteOp>(WriteOp{std::move(fn), std::move(done)}));
      done = nullptr;
    }
  }
  if (done) return done(Unavailable("store is closing"));
  queue_cv_.notify_one();
}

void Database::WriterLoop() {
  std::vector<std::unique_ptr<WriteOp>> batch;
  std::vector<Status> results;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(queue_mu_);
      queue_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stop_ with nothing left to write
      batch.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
    }
    // Most groups succeed whole, so they run without per-write savepoints. When a write
    // fails, the group is rolled back and run again with a savepoint around each write, so
    // that only the failing write is undone.
    if (!CommitGroup(batch, /*isolate=*/false, &results)) {
      CommitGroup(batch, /*isolate=*/true, &results);
    }
    for (size_t i = 0; i < batch.size(); ++i) batch[i]->done(std::move(results[i]));
    batch.clear();
    if (upkeep_) upkeep_(*writer_, /*stopping=*/false);
  }
  if (upkeep_) upkeep_(*writer_, /*stopping=*/true);
}

bool Database::CommitGroup(const std::vector<std::unique_ptr<WriteOp>>& batch, bool isolate,
                           std::vector<Status>* results) {
  results->clear();
  Status begin = RunStmt("BEGIN IMMEDIATE");
  if (!begin.ok()) {
    results->assign(batch.size(), begin);
    return true;
  }
  for (const std::unique_ptr<WriteOp>& op : batch) {
    Status s = isolate ? RunStmt("SAVEPOINT write_op") : Status::Ok();
    if (s.ok()) s = op->fn(*writer_);
    writer_->ResetAll();
    if (!s.ok() && sqlite3_get_autocommit(writer_->raw()) != 0) {
      // SQLite rolled the whole transaction back (disk full, I/O error, out of memory):
      // nothing of this group was written, so no write in it may report success.
      results->assign(batch.size(), s);
      return true;
    }
    if (!s.ok() && !isolate) {
      (void)RunStmt("ROLLBACK");
      return false;
    }
    if (isolate) {
      if (!s.ok()) (void)RunStmt("ROLLBACK TO write_op");
      (void)RunStmt("RELEASE write_op");
    }
    results->push_back(std::move(s));
  }
  Status commit = RunStmt("COMMIT");
  if (!commit.ok()) {
    (void)RunStmt("ROLLBACK");
    for (Status& s : *results) {
      if (s.ok()) s = commit;
    }
  }
  return true;
}

Status Database::RunStmt(const char* sql) { return ExecStmt(*writer_, sql); }

int Database::OnWalCommit(void* self, sqlite3*, const char*, int pages) {
  auto* db = static_cast<Database*>(self);
  db->wal_dirty_.store(true, std::memory_order_relaxed);
  const int before = db->wal_pages_.exchange(pages, std::memory_order_relaxed);
  // A passive checkpoint under steady writes copies most of the WAL but cannot start it
  // over, so the WAL stays past kCheckpointPages; the next one is due once it has grown by
  // half as much again (each one syncs the WAL, and asking at every commit made them run
  // back to back). A WAL that started over is due at kCheckpointPages again.
  if (pages < before) {
    db->checkpoint_due_pages_.store(kCheckpointPages, std::memory_order_relaxed);
  }
  if (pages >= db->checkpoint_due_pages_.load(std::memory_order_relaxed)) {
    db->checkpoint_due_pages_.store(pages + kCheckpointPages / 2, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(db->checkpoint_mu_);
      db->checkpoint_wanted_ = true;
    }
    db->checkpoint_cv_.notify_one();
  }
  return SQLITE_OK;
}

// Checkpoints when the WAL has grown past kCheckpointPages, and also once writes pause for
// kIdleCheckpoint: readers of a fully checkpointed WAL read the database file directly, which
// makes large reads (search over many runs) markedly faster than looking up every page in
// the WAL index.
void Database::CheckpointLoop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(checkpoint_mu_);
      bool wanted = checkpoint_cv_.wait_for(lock, kIdleCheckpoint,
                                            [&] { return checkpoint_stop_ || checkpoint_wanted_; });
      if (checkpoint_stop_) return;
      checkpoint_wanted_ = false;
      if (!wanted && !wal_dirty_.load(std::memory_order_relaxed)) continue;
    }
    wal_dirty_.store(false, std::memory_order_relaxed);
    // PASSIVE never blocks the writer or readers; what it cannot copy now is copied next time.
    // Under writes that never pause, though, a passive checkpoint never catches up with the
    // end of the WAL, and SQLite only starts the WAL over once one has: the file would grow
    // without bound. Past kRestartPages the checkpoint is RESTART, which holds new writes
    // back for the moment it takes to copy the rest, so that the next write starts the WAL
    // over (and journal_size_limit shrinks the file).
    const int mode = wal_pages_.load(std::memory_order_relaxed) >= kRestartPages
                         ? SQLITE_CHECKPOINT_RESTART
                         : SQLITE_CHECKPOINT_PASSIVE;
    int log = 0, copied = 0;
    int rc = sqlite3_wal_checkpoint_v2(checkpointer_->raw(), nullptr, mode, &log, &copied);
    if (rc == SQLITE_BUSY || (rc == SQLITE_OK && copied < log)) {
      wal_dirty_.store(true, std::memory_order_relaxed);  // try again when idle
    } else if (rc != SQLITE_OK) {
      LogWarning("sqlite checkpoint of " + path_ +
                 " failed: " + sqlite3_errmsg(checkpointer_->raw()));
    }
  }
}

Result<std::unique_ptr<Connection>> Database::BeginRead() {
  std::unique_ptr<Connection> conn;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      conn = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!conn) {
    CAIRN_ASSIGN_OR_RETURN(conn, Connection::Open(path_, /*create=*/false));
  }
  CAIRN_RETURN_IF_ERROR(ExecStmt(*conn, "BEGIN"));
  return conn;
}

void Database::EndRead(std::unique_ptr<Connection> conn) {
  conn->ResetAll();
  (void)ExecStmt(*conn, "COMMIT");
  std::lock_guard<std::mutex> lock(pool_mu_);
  pool_.push_back(std::move(conn));
}

}  // namespace cairn::store::sqlite
