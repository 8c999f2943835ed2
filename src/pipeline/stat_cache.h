// The stat cache (docs/formats/stat-cache.md): the SHA-256 of files remembered by their stat
// (device, inode, size, mtime, ctime), so that re-hashing a tree reads only the files that
// changed.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "util/clock.h"
#include "util/status.h"

namespace cairn::pipeline {

// A stat timestamp, and a clock reading, in nanoseconds since the epoch.
inline int64_t TimespecNanos(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
inline int64_t NowNanos(Clock* clock) { return clock->NowMillis() * 1'000'000; }

// Remembers the SHA-256 of files by their stat, in one file that Save() rewrites.
//
// An entry is keyed by (device, inode) and answers only a stat with the same size, mtime and
// ctime (to the nanosecond). ctime cannot be set by users and changes on every write, chmod and
// rename, so a file edited in place, replaced, or restored with its old mtime (tar, cp -p,
// touch -d) no longer matches.
//
// The "racy" rule. Timestamps have a granularity: the kernel stamps files from a clock that
// ticks every few milliseconds, and some filesystems store whole or even-numbered seconds. A
// file written twice within one tick keeps the same mtime and ctime, so if its hash had been
// recorded between the two writes, the stale hash would match forever. Hence a stat is racy,
// and is neither recorded nor answered, when its mtime or ctime is not older than the racy
// window before the time the stat was taken: 2 s when both timestamps have zero nanoseconds
// (a filesystem with whole-second or 2-second timestamps, such as FAT or ext4 with small
// inodes), else 100 ms (many ticks on every Linux configuration). Any write after the stat
// then gets a later timestamp than the recorded one. A racy file is simply read again the next
// time, when it is no longer recent. A stat from a clock skewed against the filesystem's (a
// network filesystem) is only safe when the filesystem has fine timestamps.
//
// Several processes may share a file: each Save() replaces it whole, so the last one wins and
// the others' new entries are lost (a cache miss, never a wrong answer).
class StatCache {
 public:
  static constexpr int64_t kFineRacyWindowNanos = 100'000'000;
  static constexpr int64_t kCoarseRacyWindowNanos = 2'000'000'000;
  // Save() drops the entries not used since Open() once the cache holds more than this.
  static constexpr size_t kMaxEntries = 1'000'000;

  // Reads the cache file at `path`. A missing file is an empty cache; so is one that is
  // corrupt, truncated, of another version or of another byte order (it is replaced by the
  // next Save()). Fails only when the file exists but cannot be read. The clock (default: the
  // system's) is what "now" means for the racy rule; it must outlive the cache.
  static Result<std::unique_ptr<StatCache>> Open(std::string path, Clock* clock = nullptr);

  StatCache(const StatCache&) = delete;
  StatCache& operator=(const StatCache&) = delete;

  Clock* clock() const { return clock_; }
  const std::string& path() const { return path_; }
  size_t size() const;

  // Whether `st`, taken at or after `stat_time_nanos` (ns since the epoch), is too recent to be
  // trusted; see the class comment.
  static bool IsRacy(const struct stat& st, int64_t stat_time_nanos);

  // The SHA-256 recorded for the file with this stat, if any entry matches it exactly and the
  // stat is not racy now. Thread safe.
  std::optional<std::string> Lookup(const struct stat& st);

  // Records `sha256` for the file whose stat is `st`. `st` must have been taken before the
  // file's bytes were read (so that any later write changes it), and `stat_time_nanos` is a
  // clock reading taken before `st` was: a stat that is racy as of that time is not recorded.
  // Thread safe.
  void Update(const struct stat& st, std::string sha256, int64_t stat_time_nanos);

  // Writes the cache to its file atomically (temporary file, fsync, rename); does nothing when
  // nothing changed since Open() or the last Save(). When the cache holds more than kMaxEntries,
  // the entries neither looked up nor updated since Open() are dropped first (the file can
  // exceed the bound only when one process used more than kMaxEntries files). Thread safe.
  Status Save();

  // Lowers kMaxEntries for a test.
  void TEST_SetMaxEntries(size_t n) { max_entries_ = n; }

 private:
  struct Key {
    uint64_t dev;
    uint64_t ino;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Entry {
    int64_t size;
    int64_t mtime_nanos;
    int64_t ctime_nanos;
    unsigned char sha256[32];
    bool used;
  };

  // Lookups from several threads contend less on several locks.
  struct Shard {
    std::mutex mu;
    std::unordered_map<Key, Entry, KeyHash> entries;
  };
  static constexpr size_t kShards = 16;

  StatCache(std::string path, Clock* clock) : path_(std::move(path)), clock_(clock) {}
  void Load(std::string_view bytes);
  Shard& ShardOf(const Key& key) { return shards_[KeyHash()(key) % kShards]; }

  const std::string path_;
  Clock* const clock_;
  mutable Shard shards_[kShards];
  std::mutex save_mu_;              // one Save() at a time
  std::atomic<bool> dirty_{false};  // changed since Open() or the last Save()
  size_t max_entries_ = kMaxEntries;
};

}  // namespace cairn::pipeline
