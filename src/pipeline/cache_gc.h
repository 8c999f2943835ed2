// Garbage collection of the step cache (step_cache.h): which entries are still wanted, and
// removing the others with the objects only they named.
//
// An entry's last use is its file's modification time: Store writes it and a Lookup that hits
// touches it. An entry goes when it was last used longer ago than `max_age_ms`, and then, while
// the objects the remaining entries name hold more than `max_bytes`, the least recently used
// entries go too. An entry whose objects are gone (a hit would be a miss anyway) goes as well.
// Objects no remaining entry names are removed, except those entered within `grace_ms`: a
// runner stores a step's objects before it writes the step's entry. Entries used within
// `grace_ms` are never removed, so a runner that has just found one can still restore it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "util/status.h"

namespace cairn::pipeline {

struct CacheGcOptions {
  int64_t max_age_ms = 30LL * 24 * 3600 * 1000;  // <= 0: no age limit
  int64_t max_bytes = 0;                         // <= 0: no size limit
  int64_t grace_ms = 3600LL * 1000;
  int64_t now_ms = 0;  // 0: the clock's
  bool dry_run = false;
  // Called for each entry removed (in a dry run: that would be), oldest first, with its step,
  // its pipeline run and its last use.
  std::function<void(const std::string& step, const std::string& pipeline_run,
                     int64_t last_used_ms)>
      on_remove;
};

struct CacheGcReport {
  int64_t entries_removed = 0;  // in a dry run: to remove
  int64_t entries_kept = 0;
  int64_t objects_removed = 0;
  int64_t bytes_freed = 0;  // the removed objects' sizes (a hard-linked one may free less)
  int64_t bytes_kept = 0;   // the kept entries' objects
};

// Collects the cache under `root`. A file that cannot be removed is an error naming it; what
// was removed before it stays removed.
Result<CacheGcReport> CollectStepCache(const std::string& root, const CacheGcOptions& options);

}  // namespace cairn::pipeline
