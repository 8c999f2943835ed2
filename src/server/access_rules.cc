#include "server/access_rules.h"

namespace cairn::server {
namespace {

using core::Access;

constexpr Access kRead = Access::kRead;
constexpr Access kUpdate = Access::kUpdate;
constexpr Access kDelete = Access::kDelete;
constexpr Access kManage = Access::kManage;

// MLflow's own checks (mlflow/server/auth), extended where MLflow leaves a call unchecked:
// searches are filtered, get-history-bulk-interval and log-inputs check their runs.
constexpr AccessRule kRules[] = {
    // --- MLflow tracking -------------------------------------------------------------------
    {Api::kMlflow, "POST", "experiments/create", Target::kSignedIn, kUpdate, nullptr},
    {Api::kMlflow, "GET", "experiments/get", Target::kExperiment, kRead, "experiment_id"},
    {Api::kMlflow, "GET", "experiments/get-by-name", Target::kExperimentName, kRead,
     "experiment_name"},
    {Api::kMlflow, "POST", "experiments/search", Target::kSignedIn, kRead, nullptr},
    {Api::kMlflow, "GET", "experiments/search", Target::kSignedIn, kRead, nullptr},
    {Api::kMlflow, "POST", "experiments/update", Target::kExperiment, kUpdate, "experiment_id"},
    {Api::kMlflow, "POST", "experiments/delete", Target::kExperiment, kDelete, "experiment_id"},
    {Api::kMlflow, "POST", "experiments/restore", Target::kExperiment, kDelete, "experiment_id"},
    {Api::kMlflow, "POST", "experiments/set-experiment-tag", Target::kExperiment, kUpdate,
     "experiment_id"},
    {Api::kMlflow, "POST", "experiments/delete-experiment-tag", Target::kExperiment, kUpdate,
     "experiment_id"},
    {Api::kMlflow, "POST", "runs/create", Target::kExperimentOr0, kUpdate, "experiment_id"},
    {Api::kMlflow, "POST", "runs/update", Target::kRun, kUpdate, "run_id"},
    {Api::kMlflow, "POST", "runs/delete", Target::kRun, kDelete, "run_id"},
    {Api::kMlflow, "POST", "runs/restore", Target::kRun, kDelete, "run_id"},
    {Api::kMlflow, "GET", "runs/get", Target::kRun, kRead, "run_id"},
    {Api::kMlflow, "POST", "runs/search", Target::kSignedIn, kRead, nullptr},
    {Api::kMlflow, "POST", "runs/delete-tag", Target::kRun, kUpdate, "run_id"},
    {Api::kMlflow, "POST", "runs/log-inputs", Target::kRun, kUpdate, "run_id"},
    {Api::kMlflow, "POST", "runs/log-model", Target::kRun, kUpdate, "run_id"},
    {Api::kMlflow, "POST", "runs/log-metric", Target::kRun, kUpdate, "run_id"},
    {Api::kMlflow, "POST", "runs/log-parameter", Target::kRun, kUpdate, "run_id"},
    {Api::kMlflow, "POST", "runs/set-tag", Target::kRun, kUpdate, "run_id"},
    {Api::kMlflow, "POST", "runs/log-batch", Target::kRun, kUpdate, "run_id"},
    {Api::kMlflow, "GET", "metrics/get-history", Target::kRun, kRead, "run_id"},
    {Api::kMlflow, "GET", "metrics/get-history-bulk-interval", Target::kRuns, kRead, "run_ids"},
    {Api::kMlflow, "GET", "metrics/get-history-bulk", Target::kRuns, kRead, "run_id"},
    {Api::kMlflow, "POST", "experiments/search-datasets", Target::kSignedIn, kRead, nullptr},
    {Api::kMlflow, "GET", "artifacts/list", Target::kRun, kRead, "run_id"},
    {Api::kMlflow, "POST", "logged-models/search", Target::kSignedIn, kRead, nullptr},
    // --- MLflow's model registry: MLflow's levels, searches filtered --------------------------
    {Api::kMlflow, "POST", "registered-models/create", Target::kSignedIn, kUpdate, nullptr},
    {Api::kMlflow, "GET", "registered-models/get", Target::kModel, kRead, "name"},
    {Api::kMlflow, "POST", "registered-models/rename", Target::kModel, kUpdate, "name"},
    {Api::kMlflow, "PATCH", "registered-models/update", Target::kModel, kUpdate, "name"},
    {Api::kMlflow, "DELETE", "registered-models/delete", Target::kModel, kDelete, "name"},
    {Api::kMlflow, "GET", "registered-models/search", Target::kSignedIn, kRead, nullptr},
    {Api::kMlflow, "POST", "registered-models/get-latest-versions", Target::kModel, kRead, "name"},
    {Api::kMlflow, "GET", "registered-models/get-latest-versions", Target::kModel, kRead, "name"},
    {Api::kMlflow, "POST", "registered-models/set-tag", Target::kModel, kUpdate, "name"},
    {Api::kMlflow, "DELETE", "registered-models/delete-tag", Target::kModel, kUpdate, "name"},
    {Api::kMlflow, "POST", "registered-models/alias", Target::kModel, kUpdate, "name"},
    {Api::kMlflow, "DELETE", "registered-models/alias", Target::kModel, kDelete, "name"},
    {Api::kMlflow, "GET", "registered-models/alias", Target::kModel, kRead, "name"},
    {Api::kMlflow, "POST", "model-versions/create", Target::kModel, kUpdate, "name"},
    {Api::kMlflow, "GET", "model-versions/get", Target::kModel, kRead, "name"},
    {Api::kMlflow, "PATCH", "model-versions/update", Target::kModel, kUpdate, "name"},
    {Api::kMlflow, "POST", "model-versions/transition-stage", Target::kModel, kUpdate, "name"},
    {Api::kMlflow, "DELETE", "model-versions/delete", Target::kModel, kDelete, "name"},
    {Api::kMlflow, "GET", "model-versions/search", Target::kSignedIn, kRead, nullptr},
    {Api::kMlflow, "GET", "model-versions/get-download-uri", Target::kModel, kRead, "name"},
    {Api::kMlflow, "POST", "model-versions/set-tag", Target::kModel, kUpdate, "name"},
    {Api::kMlflow, "DELETE", "model-versions/delete-tag", Target::kModel, kDelete, "name"},
    // --- MLflow's auth API (mlflow server --app-name basic-auth) -----------------------------
    {Api::kMlflow, "POST", "users/create", Target::kAdmin, kManage, nullptr},
    {Api::kMlflow, "GET", "users/get", Target::kSelfOrAdmin, kRead, "username"},
    {Api::kMlflow, "PATCH", "users/update-password", Target::kSelfOrAdmin, kUpdate, "username"},
    {Api::kMlflow, "PATCH", "users/update-admin", Target::kAdmin, kManage, nullptr},
    {Api::kMlflow, "DELETE", "users/delete", Target::kAdmin, kManage, nullptr},
    {Api::kMlflow, "POST", "experiments/permissions/create", Target::kExperiment, kManage,
     "experiment_id"},
    {Api::kMlflow, "GET", "experiments/permissions/get", Target::kExperiment, kManage,
     "experiment_id"},
    {Api::kMlflow, "PATCH", "experiments/permissions/update", Target::kExperiment, kManage,
     "experiment_id"},
    {Api::kMlflow, "DELETE", "experiments/permissions/delete", Target::kExperiment, kManage,
     "experiment_id"},
    {Api::kMlflow, "POST", "registered-models/permissions/create", Target::kModel, kManage, "name"},
    {Api::kMlflow, "GET", "registered-models/permissions/get", Target::kModel, kManage, "name"},
    {Api::kMlflow, "PATCH", "registered-models/permissions/update", Target::kModel, kManage,
     "name"},
    {Api::kMlflow, "DELETE", "registered-models/permissions/delete", Target::kModel, kManage,
     "name"},
    // --- The artifact proxy: the experiment is the path's first segment ----------------------
    {Api::kArtifacts, "GET", "artifacts", Target::kArtifactPath, kRead, "path"},
    {Api::kArtifacts, "GET", "artifacts/**", Target::kArtifactPath, kRead, nullptr},
    {Api::kArtifacts, "PUT", "artifacts/**", Target::kArtifactPath, kUpdate, nullptr},
    {Api::kArtifacts, "DELETE", "artifacts/**", Target::kArtifactPath, kDelete, nullptr},
    // --- MLflow's plain routes: a run's file, a version's file, the UI's upload -----------------
    {Api::kPlain, "GET", "get-artifact", Target::kRun, kRead, "run_id"},
    {Api::kPlain, "GET", "model-versions/get-artifact", Target::kModel, kRead, "name"},
    {Api::kPlain, "POST", "upload-artifact", Target::kRun, kUpdate, "run_uuid"},
    // --- cairn's API -------------------------------------------------------------------------
    {Api::kCairn, "GET", "metrics/series", Target::kRun, kRead, "run_id"},
    {Api::kCairn, "GET", "experiments/stats", Target::kSignedIn, kRead, nullptr},
    {Api::kCairn, "GET", "runs/environment-diff", Target::kRuns, kRead, "run_id"},
    // Records the verdict in run_id; the handler checks READ on the original.
    {Api::kCairn, "POST", "runs/reproduction", Target::kRun, kUpdate, "run_id"},
    {Api::kCairn, "POST", "runs", Target::kNewRun, kUpdate, nullptr},
    // Whoever may read the run; the handler checks the caller is the approver it names.
    {Api::kCairn, "POST", "runs/approval", Target::kRun, kRead, "run_id"},
    // Many runs' records: the handler checks each record's experiment or run.
    {Api::kCairn, "POST", "runs/records", Target::kSignedIn, kUpdate, nullptr},
    {Api::kCairn, "GET", "runs/*/log", Target::kRunInPath, kRead, nullptr},
    {Api::kCairn, "POST", "runs/*/log", Target::kRunInPath, kUpdate, nullptr},
    {Api::kCairn, "POST", "auth/login", Target::kPublic, kRead, nullptr},
    {Api::kCairn, "POST", "auth/logout", Target::kPublic, kRead, nullptr},
    {Api::kCairn, "GET", "auth/session", Target::kPublic, kRead, nullptr},
    {Api::kCairn, "GET", "tokens", Target::kSignedIn, kRead, nullptr},
    {Api::kCairn, "POST", "tokens", Target::kSignedIn, kUpdate, nullptr},
    {Api::kCairn, "POST", "tokens/revoke", Target::kSignedIn, kUpdate, nullptr},
    {Api::kCairn, "GET", "users", Target::kAdmin, kRead, nullptr},
    {Api::kCairn, "POST", "gc", Target::kAdmin, kManage, nullptr},
    {Api::kCairn, "GET", "storage", Target::kAdmin, kRead, nullptr},
    {Api::kCairn, "POST", "users", Target::kAdmin, kManage, nullptr},
    {Api::kCairn, "GET", "teams", Target::kAdmin, kRead, nullptr},
    {Api::kCairn, "POST", "teams", Target::kAdmin, kManage, nullptr},
    {Api::kCairn, "POST", "teams/delete", Target::kAdmin, kManage, nullptr},
    {Api::kCairn, "POST", "teams/members", Target::kAdmin, kManage, nullptr},
    {Api::kCairn, "POST", "teams/members/remove", Target::kAdmin, kManage, nullptr},
    {Api::kCairn, "GET", "experiments/access", Target::kSignedIn, kRead, nullptr},
    {Api::kCairn, "GET", "experiments/permissions", Target::kExperiment, kManage, "experiment_id"},
    {Api::kCairn, "POST", "experiments/permissions", Target::kExperiment, kManage, "experiment_id"},
    {Api::kCairn, "POST", "experiments/permissions/delete", Target::kExperiment, kManage,
     "experiment_id"},
    {Api::kCairn, "GET", "audit", Target::kAdmin, kRead, nullptr},
    {Api::kCairn, "GET", "models/alias-history", Target::kModel, kRead, "name"},
    {Api::kCairn, "POST", "tasks", Target::kExperimentOr0, kUpdate, "experiment_id"},
    {Api::kCairn, "GET", "tasks", Target::kSignedIn, kRead, nullptr},
    {Api::kCairn, "GET", "tasks/*", Target::kTaskInPath, kRead, nullptr},
    {Api::kCairn, "POST", "tasks/*/cancel", Target::kTaskInPath, kUpdate, nullptr},
    {Api::kCairn, "POST", "tasks/*/move", Target::kTaskInPath, kUpdate, nullptr},
    {Api::kCairn, "GET", "queues", Target::kSignedIn, kRead, nullptr},
    {Api::kCairn, "POST", "queues", Target::kAdmin, kManage, nullptr},
    {Api::kCairn, "POST", "tasks/clone", Target::kRun, kUpdate, "run_id"},
    {Api::kCairn, "GET", "quotas", Target::kSignedIn, kRead, nullptr},
    {Api::kCairn, "POST", "quotas", Target::kAdmin, kManage, nullptr},
    {Api::kCairn, "GET", "agents", Target::kSignedIn, kRead, nullptr},
    {Api::kCairn, "POST", "agents", Target::kAgent, kUpdate, nullptr},
    {Api::kCairn, "POST", "agents/lease", Target::kAgent, kUpdate, nullptr},
    {Api::kCairn, "POST", "agents/renew", Target::kAgent, kUpdate, nullptr},
    {Api::kCairn, "POST", "agents/finish", Target::kAgent, kUpdate, nullptr},
    {Api::kCairn, "POST", "models/rollback", Target::kModel, kUpdate, "name"},
    {Api::kCairn, "GET", "datasets", Target::kSignedIn, kRead, nullptr},
    {Api::kCairn, "GET", "datasets/get", Target::kDataset, kRead, "name"},
    {Api::kCairn, "GET", "datasets/versions", Target::kDataset, kRead, "name"},
    {Api::kCairn, "GET", "datasets/manifest", Target::kDataset, kRead, "name"},
    {Api::kCairn, "GET", "datasets/files", Target::kDataset, kRead, "name"},
    {Api::kCairn, "GET", "datasets/diff", Target::kDataset, kRead, "name"},
    {Api::kCairn, "GET", "datasets/lineage", Target::kDataset, kRead, "name"},
    {Api::kCairn, "GET", "datasets/produced", Target::kRun, kRead, "run_id"},
    // Sending blobs and adding versions: the handler checks the dataset, which a new version may
    // create.
    {Api::kCairn, "POST", "datasets/missing", Target::kSignedIn, kUpdate, nullptr},
    {Api::kCairn, "POST", "blobs/missing", Target::kSignedIn, kUpdate, nullptr},
    {Api::kCairn, "PUT", "datasets/blobs/*", Target::kSignedIn, kUpdate, nullptr},
    {Api::kCairn, "POST", "datasets/blobs", Target::kSignedIn, kUpdate, nullptr},
    {Api::kCairn, "POST", "datasets/versions", Target::kSignedIn, kUpdate, nullptr},
    {Api::kCairn, "GET", "datasets/permissions", Target::kDataset, kManage, "name"},
    {Api::kCairn, "POST", "datasets/permissions", Target::kDataset, kManage, "name"},
    {Api::kCairn, "POST", "datasets/permissions/delete", Target::kDataset, kManage, "name"},
};

}  // namespace

bool PathMatches(std::string_view pattern, std::string_view path, std::string_view* wildcard) {
  while (!pattern.empty()) {
    if (pattern == "**") return !path.empty();
    if (pattern.front() == '*') {
      const size_t end = path.find('/');
      const std::string_view segment = path.substr(0, end);
      if (segment.empty()) return false;
      if (wildcard != nullptr) *wildcard = segment;
      pattern.remove_prefix(1);
      path.remove_prefix(segment.size());
      continue;
    }
    if (path.empty() || path.front() != pattern.front()) return false;
    pattern.remove_prefix(1);
    path.remove_prefix(1);
  }
  return path.empty();
}

std::span<const AccessRule> AccessRules() { return kRules; }

const AccessRule* FindAccessRule(Api api, std::string_view method, std::string_view path,
                                 std::string_view* wildcard) {
  for (const AccessRule& rule : kRules) {
    if (rule.api == api && method == rule.method && PathMatches(rule.path, path, wildcard)) {
      return &rule;
    }
  }
  return nullptr;
}

}  // namespace cairn::server
