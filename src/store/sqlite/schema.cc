#include "store/sqlite/schema.h"

#include <cstdint>
#include <string>

#include "util/clock.h"

namespace cairn::store::sqlite {
namespace {

// Runs are referenced by an integer key internally so that the large tables (metrics) do not
// repeat 32-character run ids. NaN metric values are stored as value 0 with is_nan = 1, since
// SQLite turns NaN into NULL; infinities are stored as they are.
// New metric points are appended to metric_log, which touches a page or two per commit however
// many runs and keys a batch spans; the store moves them into metrics, clustered by
// (run, key, step), in large batches. Readers see the union of both tables.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE experiments (
  experiment_id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  artifact_location TEXT NOT NULL,
  lifecycle_stage TEXT NOT NULL,
  creation_time INTEGER NOT NULL,
  last_update_time INTEGER NOT NULL
);
CREATE TABLE experiment_tags (
  experiment_id INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (experiment_id, key)
) WITHOUT ROWID;
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  run_uuid TEXT NOT NULL UNIQUE,
  experiment_id INTEGER NOT NULL,
  name TEXT NOT NULL,
  user_id TEXT NOT NULL,
  status TEXT NOT NULL,
  start_time INTEGER NOT NULL,
  end_time INTEGER,
  artifact_uri TEXT NOT NULL,
  lifecycle_stage TEXT NOT NULL
);
CREATE INDEX runs_by_experiment ON runs (experiment_id);
CREATE TABLE params (
  run INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run, key)
) WITHOUT ROWID;
CREATE INDEX params_by_key ON params (key, run, value);
CREATE TABLE tags (
  run INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run, key)
) WITHOUT ROWID;
CREATE INDEX tags_by_key ON tags (key, run, value);
CREATE TABLE metrics (
  run INTEGER NOT NULL,
  key TEXT NOT NULL,
  step INTEGER NOT NULL,
  timestamp INTEGER NOT NULL,
  is_nan INTEGER NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (run, key, step, timestamp, is_nan, value)
) WITHOUT ROWID;
CREATE TABLE metric_log (
  id INTEGER PRIMARY KEY,
  run INTEGER NOT NULL,
  key TEXT NOT NULL,
  step INTEGER NOT NULL,
  timestamp INTEGER NOT NULL,
  is_nan INTEGER NOT NULL,
  value REAL NOT NULL
);
CREATE TABLE latest_metrics (
  run INTEGER NOT NULL,
  key TEXT NOT NULL,
  step INTEGER NOT NULL,
  timestamp INTEGER NOT NULL,
  is_nan INTEGER NOT NULL,
  value REAL NOT NULL,
  PRIMARY KEY (run, key)
) WITHOUT ROWID;
CREATE INDEX latest_metrics_by_key ON latest_metrics (key, run, step, timestamp, is_nan, value);
CREATE TABLE datasets (
  id INTEGER PRIMARY KEY,
  experiment_id INTEGER NOT NULL,
  name TEXT NOT NULL,
  digest TEXT NOT NULL,
  source_type TEXT NOT NULL,
  source TEXT NOT NULL,
  schema TEXT NOT NULL,
  profile TEXT NOT NULL,
  UNIQUE (experiment_id, name, digest)
);
CREATE TABLE inputs (
  run INTEGER NOT NULL,
  dataset INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (run, dataset)
) WITHOUT ROWID;
CREATE TABLE input_tags (
  run INTEGER NOT NULL,
  dataset INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run, dataset, key)
) WITHOUT ROWID;
CREATE TABLE artifacts (
  path TEXT PRIMARY KEY,
  digest TEXT NOT NULL,
  size INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX artifacts_by_digest ON artifacts (digest);
)sql",
    // Version 2: search reads the runs of an experiment (key, id, stage, start time) from the
    // index alone, without visiting the wider rows, and seeks straight to the params, tags and
    // metric values a filter compares with.
    R"sql(
DROP INDEX runs_by_experiment;
CREATE INDEX runs_by_experiment ON runs (experiment_id, lifecycle_stage, start_time, run_uuid);
DROP INDEX params_by_key;
CREATE INDEX params_by_key ON params (key, value, run);
DROP INDEX tags_by_key;
CREATE INDEX tags_by_key ON tags (key, value, run);
DROP INDEX latest_metrics_by_key;
CREATE INDEX latest_metrics_by_key ON latest_metrics (key, is_nan, value, run, step, timestamp);
)sql",
    // Version 3: runs' console logs, as chunks keyed by the byte offset they start at.
    R"sql(
CREATE TABLE run_logs (
  run INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  timestamp INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (run, offset)
) WITHOUT ROWID;
)sql",
    // Version 4: identity. Accounts, teams and their members, tokens (only a hash of each
    // token's value), permissions held on experiments and registered models, and the audit log,
    // which no statement may change or shorten.
    R"sql(
CREATE TABLE users (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  username TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  is_admin INTEGER NOT NULL,
  is_service INTEGER NOT NULL,
  created_time INTEGER NOT NULL
);
CREATE TABLE teams (
  name TEXT PRIMARY KEY,
  created_time INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE team_members (
  team TEXT NOT NULL,
  username TEXT NOT NULL,
  PRIMARY KEY (team, username)
) WITHOUT ROWID;
CREATE INDEX team_members_by_user ON team_members (username, team);
CREATE TABLE tokens (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  owner TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  scopes TEXT NOT NULL,
  created_time INTEGER NOT NULL,
  expiry_time INTEGER NOT NULL,
  last_used_time INTEGER NOT NULL,
  revoked_time INTEGER NOT NULL,
  UNIQUE (owner, name)
);
CREATE TABLE grants (
  resource_kind TEXT NOT NULL,
  resource_id TEXT NOT NULL,
  principal_kind TEXT NOT NULL,
  principal TEXT NOT NULL,
  permission TEXT NOT NULL,
  PRIMARY KEY (resource_kind, resource_id, principal_kind, principal)
) WITHOUT ROWID;
CREATE INDEX grants_by_principal ON grants (principal_kind, principal, resource_kind, resource_id);
CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY,
  time INTEGER NOT NULL,
  actor TEXT NOT NULL,
  source TEXT NOT NULL,
  action TEXT NOT NULL,
  object TEXT NOT NULL,
  outcome TEXT NOT NULL
);
CREATE INDEX audit_log_by_actor ON audit_log (actor, id);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
)sql",
    // Version 5: the model registry. Models are keyed by an integer so that a rename touches
    // one row; last_version keeps version numbers from being given twice after deletes.
    // alias_moves is the history of every alias, from which a rollback finds its target.
    R"sql(
CREATE TABLE registered_models (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  creation_time INTEGER NOT NULL,
  last_updated_time INTEGER NOT NULL,
  user_id TEXT NOT NULL,
  description TEXT NOT NULL,
  last_version INTEGER NOT NULL
);
CREATE TABLE registered_model_tags (
  model INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (model, key)
) WITHOUT ROWID;
CREATE TABLE model_versions (
  model INTEGER NOT NULL,
  version INTEGER NOT NULL,
  creation_time INTEGER NOT NULL,
  last_updated_time INTEGER NOT NULL,
  user_id TEXT NOT NULL,
  stage TEXT NOT NULL,
  description TEXT NOT NULL,
  source TEXT NOT NULL,
  run_id TEXT NOT NULL,
  run_link TEXT NOT NULL,
  status TEXT NOT NULL,
  status_message TEXT NOT NULL,
  storage_location TEXT NOT NULL,
  PRIMARY KEY (model, version)
);
CREATE INDEX model_versions_by_update ON model_versions (last_updated_time, model, version);
CREATE INDEX model_versions_by_run ON model_versions (run_id);
CREATE INDEX model_versions_by_storage ON model_versions (storage_location);
CREATE TABLE model_version_tags (
  model INTEGER NOT NULL,
  version INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (model, version, key)
) WITHOUT ROWID;
CREATE TABLE model_aliases (
  model INTEGER NOT NULL,
  alias TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (model, alias)
) WITHOUT ROWID;
CREATE INDEX model_aliases_by_version ON model_aliases (model, version);
CREATE TABLE alias_moves (
  id INTEGER PRIMARY KEY,
  model INTEGER NOT NULL,
  alias TEXT NOT NULL,
  kind TEXT NOT NULL,
  version INTEGER,
  time INTEGER NOT NULL,
  actor TEXT NOT NULL
);
CREATE INDEX alias_moves_by_alias ON alias_moves (model, alias, id);
)sql",
    // Version 6: queues, tasks and agents. A task's seq is its rowid, never given twice
    // (AUTOINCREMENT), so that the order tasks were queued in survives deletes; tasks_waiting
    // (waiting tasks only) serves a lease, which reads a queue's waiting tasks in the order
    // they start however many have finished, tasks_by_lease the search for leases that ran
    // out, tasks_by_queue listings.
    R"sql(
CREATE TABLE queues (
  name TEXT PRIMARY KEY,
  description TEXT NOT NULL,
  default_priority INTEGER NOT NULL,
  created_time INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE tasks (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  queue TEXT NOT NULL,
  priority INTEGER NOT NULL,
  state TEXT NOT NULL,
  need_gpus INTEGER NOT NULL,
  need_cpus REAL NOT NULL,
  need_memory_mib INTEGER NOT NULL,
  spec TEXT NOT NULL,
  requirements TEXT NOT NULL,
  owner TEXT NOT NULL,
  team TEXT NOT NULL,
  run_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  agent TEXT NOT NULL,
  lease_expiry INTEGER NOT NULL,
  gpus TEXT NOT NULL,
  cancel_requested INTEGER NOT NULL,
  reason TEXT NOT NULL,
  created_time INTEGER NOT NULL,
  start_time INTEGER NOT NULL,
  end_time INTEGER NOT NULL
);
CREATE INDEX tasks_waiting ON tasks (queue, priority DESC, seq) WHERE state = 'queued';
CREATE INDEX tasks_by_lease ON tasks (state, lease_expiry);
CREATE INDEX tasks_by_queue ON tasks (queue, priority DESC, seq);
CREATE TABLE agents (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  owner TEXT NOT NULL,
  queues TEXT NOT NULL,
  host TEXT NOT NULL,
  gpus TEXT NOT NULL,
  slots INTEGER NOT NULL,
  started_time INTEGER NOT NULL,
  heartbeat_time INTEGER NOT NULL
) WITHOUT ROWID;
)sql",
    // 7: team quotas, and the ledger of ended attempts that held GPUs.
    R"sql(
CREATE TABLE team_quotas (
  team TEXT PRIMARY KEY,
  gpus INTEGER NOT NULL,
  gpu_hours REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE gpu_usage (
  task_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  team TEXT NOT NULL,
  gpus INTEGER NOT NULL,
  start_time INTEGER NOT NULL,
  end_time INTEGER NOT NULL,
  PRIMARY KEY (task_id, attempt)
) WITHOUT ROWID;
CREATE INDEX gpu_usage_by_team ON gpu_usage (team, end_time);
CREATE INDEX tasks_running_by_team ON tasks (team) WHERE state = 'running';
)sql",
    // 8: datasets, their versions, and the ledger of the blobs each account uploaded for them.
    R"sql(
CREATE TABLE data_sets (
  name TEXT PRIMARY KEY,
  created_time INTEGER NOT NULL,
  last_version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE data_versions (
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  digest TEXT NOT NULL,
  parent INTEGER NOT NULL,
  message TEXT NOT NULL,
  creator TEXT NOT NULL,
  created_time INTEGER NOT NULL,
  metadata TEXT NOT NULL,
  files INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  run_id TEXT NOT NULL,
  PRIMARY KEY (name, version)
) WITHOUT ROWID;
CREATE INDEX data_versions_by_digest ON data_versions (digest);
CREATE INDEX data_versions_by_run ON data_versions (run_id) WHERE run_id != '';
-- Datasets' files are many, and a version repeats most of the last one's: they stay out of
-- the index by digest, and the digests they name are kept once in data_blobs instead.
DROP INDEX artifacts_by_digest;
CREATE INDEX artifacts_by_digest ON artifacts (digest) WHERE substr(path, 1, 9) != 'datasets/';
CREATE TABLE data_blobs (digest TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT OR IGNORE INTO data_blobs SELECT DISTINCT digest FROM artifacts
  WHERE substr(path, 1, 9) = 'datasets/';
CREATE INDEX datasets_by_name ON datasets (name, digest);
CREATE TABLE data_uploads (
  username TEXT NOT NULL,
  digest TEXT NOT NULL,
  time INTEGER NOT NULL,
  PRIMARY KEY (username, digest)
) WITHOUT ROWID;
CREATE INDEX data_uploads_by_time ON data_uploads (time);
-- A blob sent for a dataset is kept while the ledger remembers it, so that a long upload's
-- first blobs are there when its version is named.
CREATE INDEX data_uploads_by_digest ON data_uploads (digest);
)sql",
    // 9: a dataset version's files are read from its manifest, not listed in the artifact index:
    // only the manifest keeps a row (datasets/NAME/DIGEST.json), and data_blobs the files' blobs.
    // A version's file rows are those under datasets/NAME/DIGEST/ ('0' follows '/').
    R"sql(
CREATE TEMP TABLE version_files AS SELECT a.path, a.digest FROM data_versions v
  JOIN artifacts a ON a.path >= 'datasets/' || v.name || '/' || v.digest || '/'
                  AND a.path < 'datasets/' || v.name || '/' || v.digest || '0';
INSERT OR IGNORE INTO data_blobs SELECT digest FROM version_files;
DELETE FROM artifacts WHERE path IN (SELECT path FROM version_files);
DROP TABLE version_files;
)sql",
};

}  // namespace

std::span<const char* const> Migrations() { return kMigrations; }

Status Migrate(Connection& c, const std::string& path, const std::string& default_artifact_root) {
  CAIRN_RETURN_IF_ERROR(
      c.Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
  int64_t version = 0;
  {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT MAX(version) FROM schema_version"));
    if (s->Step() && !s->IsNull(0)) version = s->Int(0);
    CAIRN_RETURN_IF_ERROR(s->status());
    c.ResetAll();  // a statement left open would lock the tables a migration drops
  }
  auto migrations = Migrations();
  if (version > static_cast<int64_t>(migrations.size())) {
    return FailedPrecondition("database " + path + " has schema version " +
                              std::to_string(version) + ", newer than this cairn (" +
                              std::to_string(migrations.size()) + "); upgrade cairn");
  }
  for (size_t v = static_cast<size_t>(version); v < migrations.size(); ++v) {
    CAIRN_RETURN_IF_ERROR(c.Exec("BEGIN IMMEDIATE"));
    Status s = c.Exec(migrations[v]);
    if (s.ok()) {
      s = c.Exec("INSERT INTO schema_version (version) VALUES (" + std::to_string(v + 1) + ")");
    }
    if (s.ok() && v == 0) {
      s = ExecStmt(c,
                   "INSERT INTO experiments (experiment_id, name, artifact_location, "
                   "lifecycle_stage, creation_time, last_update_time) VALUES (0, 'Default', ?, "
                   "'active', ?2, ?2)",
                   default_artifact_root + "/0", SystemClock()->NowMillis());
    }
    if (!s.ok()) {
      (void)c.Exec("ROLLBACK");
      return s.WithContext("migrating " + path + " to schema version " + std::to_string(v + 1));
    }
    CAIRN_RETURN_IF_ERROR(c.Exec("COMMIT"));
  }
  return Status::Ok();
}

}  // namespace cairn::store::sqlite
