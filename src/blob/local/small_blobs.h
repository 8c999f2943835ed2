// The small blobs of a local content store, kept together in one SQLite database
// (<root>/small.db) rather than a file each. A file costs a block, an inode, a create, an fsync
// and a rename to write, and an unlink to remove (which on a disk mounted with online discard
// waits for the device); rows in one database cost a few bytes and one shared WAL write, and a
// collection removes thousands of them in one transaction. Format:
// docs/formats/content-store.md.
//
// Thread safety: every method may be called concurrently. Writes from several threads are
// committed together (one transaction, one fsync); reads use connections of their own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "blob/content_store.h"
#include "util/status.h"

namespace cairn::blob {

class SmallBlobs {
 public:
  // A blob of at most this many bytes is kept in the database.
  static constexpr int64_t kMaxBytes = 64 << 10;

  // Opens the database at `path`, making it when it does not exist.
  static Result<std::unique_ptr<SmallBlobs>> Open(std::string path);
  ~SmallBlobs();
  SmallBlobs(const SmallBlobs&) = delete;
  SmallBlobs& operator=(const SmallBlobs&) = delete;

  // Stores `bytes` under `digest` durably; a blob already stored gets `now_ms` as its
  // modification time, as a file written again would.
  Status Put(std::string_view digest, std::string_view bytes, int64_t now_ms);
  // kNotFound when no blob has that digest.
  Result<std::shared_ptr<const std::string>> Get(std::string_view digest);
  Result<bool> Has(std::string_view digest);
  // For each of `digests`, whether it is here: one read transaction for all of them.
  Result<std::vector<bool>> HasMany(const std::vector<std::string>& digests);
  // Removes those of `digests` that are here, in one transaction.
  Status Delete(const std::vector<std::string>& digests);
  // Every blob here, a page at a time in digest order: no transaction stays open while `visit`
  // runs, so it may write to the store.
  Status ForEach(const std::function<Status(const BlobInfo&)>& visit);

 private:
  struct Connection;
  struct Lease;
  struct Write;

  explicit SmallBlobs(std::string path);
  Result<std::unique_ptr<Lease>> Reader();
  Status Apply(Write& write);
  Status Commit(const std::vector<Write*>& batch);  // on writer_, by one caller at a time
  static const char* PutRow(Connection& c, const Write& w);
  static const char* RemoveRows(Connection& c, const std::vector<std::string>& digests);

  const std::string path_;
  std::mutex mu_;  // guards everything below
  std::condition_variable written_;
  std::vector<Write*> queue_;
  bool writing_ = false;
  std::unique_ptr<Connection> writer_;  // used by the caller that set writing_
  std::vector<std::unique_ptr<Connection>> idle_readers_;
};

}  // namespace cairn::blob
