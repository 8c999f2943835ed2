// The SQLite database under a store, as it runs: one writer thread, a pool of readers and a
// checkpointer.
//
// All writes go through the writer thread, which takes every write waiting in its queue and
// commits them in one transaction (group commit): concurrent clients never see "database is
// locked", and the cost of a durable commit is shared by the group. When a write of a group
// fails, the group runs again with a savepoint around each write, so that only the failing
// write is undone. Reads use pooled connections, each read inside one transaction (a consistent
// snapshot), and run in parallel with the writer. Checkpoints copy the WAL into the database
// file on a thread and connection of their own, so that this I/O stays off the writer's path.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/metadata_store.h"
#include "store/sqlite/sqlite_db.h"

namespace cairn::store::sqlite {

class Database {
 public:
  // Work for the writer thread outside any group's transaction: called after each group has
  // committed, and once more (`stopping`) after the last one. It must not call Write.
  using Upkeep = std::function<void(Connection& writer, bool stopping)>;

  // Opens (creating) the database at `path`, applies pending migrations and starts the writer
  // and checkpointer threads.
  static Result<std::unique_ptr<Database>> Open(const std::string& path,
                                                const StoreOptions& options, Upkeep upkeep);
  // Open's first step; a Database is usable only once Open has returned it.
  Database(std::string path, Upkeep upkeep) : path_(std::move(path)), upkeep_(std::move(upkeep)) {}
  // Commits what is queued, stops the threads and closes every connection, which checkpoints
  // the WAL into the database file.
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }

  // Queues `fn` for the writer thread and waits until its transaction has committed. A failing
  // `fn` leaves no trace of its own writes and none on the other writes of its group.
  Status Write(std::function<Status(Connection&)> fn);
  // Queues `fn` for the writer thread; `done` gets its outcome once its group has committed, on
  // the writer thread (at once, on this thread, when the database is closing).
  void WriteAsync(std::function<Status(Connection&)> fn, std::function<void(Status)> done);

  // Runs `fn` on a pooled read connection inside one read transaction.
  template <typename T, typename F>
  Result<T> Read(F&& fn) {
    CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn, BeginRead());
    Result<T> out = fn(*conn);
    EndRead(std::move(conn));
    return out;
  }

 private:
  struct WriteOp {
    std::function<Status(Connection&)> fn;
    std::function<void(Status)> done;  // called on the writer thread once committed
  };

  Status Init(const StoreOptions& options);

  void WriterLoop();
  // Runs the writes of a group in one transaction and fills `results`. Returns false when a
  // write failed without isolation: the transaction was rolled back and nothing was written.
  bool CommitGroup(const std::vector<std::unique_ptr<WriteOp>>& batch, bool isolate,
                   std::vector<Status>* results);
  Status RunStmt(const char* sql);

  static int OnWalCommit(void* self, sqlite3*, const char*, int pages);
  void CheckpointLoop();

  // A pooled (or new) read connection with its transaction begun; EndRead ends the transaction
  // and returns the connection to the pool.
  Result<std::unique_ptr<Connection>> BeginRead();
  void EndRead(std::unique_ptr<Connection> conn);

  // A passive checkpoint once the WAL holds 32 MiB, and again every 16 MiB it grows by while
  // writes go on: each one syncs the WAL and the database.
  static constexpr int kCheckpointPages = 8000;

  std::string path_;
  Upkeep upkeep_;
  std::unique_ptr<Connection> writer_;
  std::thread writer_thread_;
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::unique_ptr<WriteOp>> queue_;
  bool stop_ = false;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Connection>> pool_;
  std::unique_ptr<Connection> checkpointer_;
  std::thread checkpoint_thread_;
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  bool checkpoint_wanted_ = false;
  bool checkpoint_stop_ = false;
  std::atomic<bool> wal_dirty_{false};  // commits since the last complete checkpoint
  std::atomic<int> wal_pages_{0};       // pages in the WAL at the last commit
  std::atomic<int> checkpoint_due_pages_{kCheckpointPages};  // WAL size that asks for one
};

}  // namespace cairn::store::sqlite
