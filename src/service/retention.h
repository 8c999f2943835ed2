// Applying retention rules (core/retention.h) to a server's runs: the artifacts each rule lets
// go are deleted from the index (their blobs collected when nothing else names them), or, in a
// dry run, counted. Server-wide rules apply to every experiment, an experiment's own (its tag
// cairn.retention) to its runs after them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/retention.h"
#include "service/artifact_service.h"
#include "store/metadata_store.h"

namespace cairn::service {

// What one rule removed (or would remove) in one scope.
struct RuleOutcome {
  std::string scope;  // "server", or the experiment's id
  std::string rule;   // RetentionRule::Text()
  int64_t runs = 0;   // runs it removed files of
  int64_t files = 0;
  int64_t bytes = 0;        // as the index lists them (blobs other files share are not freed)
  int64_t blobs_freed = 0;  // blobs removed because nothing names them any more (not in a
  int64_t bytes_freed = 0;  // dry run)
};

struct RetentionOutcome {
  std::vector<RuleOutcome> rules;
  int64_t files = 0;
  int64_t bytes = 0;
  int64_t blobs_freed = 0;
  int64_t bytes_freed = 0;
  // Experiments whose cairn.retention tag cannot be read: "experiment 3: ...".
  std::vector<std::string> problems;
};

// Applies `server_rules` and each experiment's own rules at time `now` (ms). With `dry_run`,
// changes nothing, and each rule is counted as if it ran alone.
Result<RetentionOutcome> ApplyRetention(store::MetadataStore& store, ArtifactService& artifacts,
                                        const std::vector<core::RetentionRule>& server_rules,
                                        int64_t now, bool dry_run);

// One collection, as `cairn gc` and the server's --gc-interval run it: the retention rules,
// then the blobs nothing names any more (ArtifactService::CollectGarbage).
struct StorageCollection {
  RetentionOutcome retention;
  ArtifactService::Collection blobs;
};
Result<StorageCollection> CollectStorage(store::MetadataStore& store, ArtifactService& artifacts,
                                         const std::vector<core::RetentionRule>& server_rules,
                                         int64_t grace_ms, bool dry_run, int64_t now);

// The server's collections, with its server-wide rules. The pointers are not owned.
class RetentionService {
 public:
  RetentionService(store::MetadataStore* store, ArtifactService* artifacts,
                   std::vector<core::RetentionRule> server_rules)
      : store_(store), artifacts_(artifacts), rules_(std::move(server_rules)) {}
  Result<StorageCollection> Collect(int64_t grace_ms, bool dry_run, int64_t now) {
    return CollectStorage(*store_, *artifacts_, rules_, grace_ms, dry_run, now);
  }
  // What the rules would remove now.
  Result<RetentionOutcome> Preview(int64_t now) {
    return ApplyRetention(*store_, *artifacts_, rules_, now, /*dry_run=*/true);
  }

 private:
  store::MetadataStore* store_;
  ArtifactService* artifacts_;
  std::vector<core::RetentionRule> rules_;
};

}  // namespace cairn::service
