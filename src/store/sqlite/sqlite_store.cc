#include "store/sqlite/sqlite_store.h"

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "store/listing.h"
#include "store/sqlite/database.h"
#include "store/sqlite/dataset_tables.h"
#include "store/sqlite/identity_tables.h"
#include "store/sqlite/queue_tables.h"
#include "store/sqlite/registry_tables.h"
#include "store/sqlite/run_rows.h"
#include "store/sqlite/run_search.h"
#include "store/sqlite/run_values.h"
#include "store/store_util.h"
#include "util/log.h"

namespace cairn::store {
namespace {

using core::Experiment;
using core::LifecycleStage;
using core::Metric;
using core::Run;
using sqlite::Connection;
using sqlite::Database;
using sqlite::ExecStmt;
using sqlite::ExperimentKey;
using sqlite::FindRun;
using sqlite::LoadRun;
using sqlite::LoadRunInfo;
using sqlite::RunKey;
using sqlite::RunRow;
using sqlite::ScanHistoryIn;
using sqlite::Stmt;
using sqlite::UpsertRunTag;

// Points that accumulate in metric_log before they are moved into metrics.
constexpr int64_t kCompactPoints = 20000;

Status UpsertExperimentTag(Connection& c, int64_t id, const core::Tag& tag) {
  return ExecStmt(c,
                  "INSERT INTO experiment_tags (experiment_id, key, value) VALUES (?, ?, ?) "
                  "ON CONFLICT (experiment_id, key) DO UPDATE SET value = excluded.value",
                  id, tag.key, tag.value);
}

Result<Experiment> LoadExperimentRow(Connection& c, const Stmt& s) {
  Experiment e;
  int64_t id = s.Int(0);
  e.experiment_id = std::to_string(id);
  e.name = s.Str(1);
  e.artifact_location = s.Str(2);
  core::ParseLifecycleStage(s.Text(3), &e.lifecycle_stage);
  e.creation_time = s.Int(4);
  e.last_update_time = s.Int(5);
  CAIRN_ASSIGN_OR_RETURN(Stmt * t, c.Prepare("SELECT key, value FROM experiment_tags WHERE "
                                             "experiment_id = ? ORDER BY key"));
  t->Bind(1, id);
  while (t->Step()) e.tags.push_back({t->Str(0), t->Str(1)});
  CAIRN_RETURN_IF_ERROR(t->status());
  return e;
}

Result<int64_t> RunLogLength(Connection& c, int64_t run) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT offset + length(data) FROM run_logs WHERE "
                                             "run = ? ORDER BY offset DESC LIMIT 1"));
  s->Bind(1, run);
  int64_t length = s->Step() ? s->Int(0) : 0;
  CAIRN_RETURN_IF_ERROR(s->status());
  return length;
}

// Artifact files whose path starts with `prefix` ("" selects all), in path order.
// Both bounds are plain comparisons so that SQLite seeks the range in the primary key: an
// upper bound behind an OR would read every path after the prefix.
Result<Stmt*> SelectUnder(Connection& c, const std::string& prefix) {
  if (prefix.empty()) {
    return c.Prepare("SELECT path, digest, size FROM artifacts ORDER BY path");
  }
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT path, digest, size FROM artifacts WHERE "
                                             "path >= ? AND path < ? ORDER BY path"));
  std::string upper = prefix;
  upper.back() = static_cast<char>(upper.back() + 1);
  s->Bind(1, prefix).Bind(2, upper);
  return s;
}

// A dataset's file names its blob in data_blobs (schema version 8), not in the index by
// digest. A digest stays there once named: datasets' versions are never removed.
Status NoteDatasetBlob(Connection& c, const ArtifactFile& file) {
  if (!file.path.starts_with("datasets/")) return Status::Ok();
  return ExecStmt(c, "INSERT OR IGNORE INTO data_blobs (digest) VALUES (?)", file.digest);
}

// Records `file` as PutArtifact does, inside the caller's transaction.
Status PutArtifactRow(Connection& c, const ArtifactFile& file,
                      std::optional<ArtifactFile>* replaced) {
  replaced->reset();
  for (std::string_view dir : ParentDirs(file.path)) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * f, c.Prepare("SELECT 1 FROM artifacts WHERE path = ?"));
    f->Bind(1, dir);
    if (f->Step()) return ArtifactPathTaken(file.path, dir);
    CAIRN_RETURN_IF_ERROR(f->status());
  }
  CAIRN_ASSIGN_OR_RETURN(Stmt * under, SelectUnder(c, DirPrefix(file.path)));
  if (under->Step()) return ArtifactPathTaken(file.path, file.path);
  CAIRN_RETURN_IF_ERROR(under->status());
  CAIRN_ASSIGN_OR_RETURN(Stmt * old,
                         c.Prepare("SELECT digest, size FROM artifacts WHERE path = ?"));
  old->Bind(1, file.path);
  if (old->Step()) *replaced = ArtifactFile{file.path, old->Str(0), old->Int(1)};
  CAIRN_RETURN_IF_ERROR(old->status());
  CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                 "INSERT OR REPLACE INTO artifacts (path, digest, size) VALUES "
                                 "(?, ?, ?)",
                                 file.path, file.digest, file.size));
  return NoteDatasetBlob(c, file);
}

class SqliteStore : public MetadataStore {
 public:
  explicit SqliteStore(StoreOptions options) : options_(std::move(options)) {}

  Status Init(const std::string& path) {
    CAIRN_ASSIGN_OR_RETURN(
        db_, Database::Open(path, options_, [this](Connection& writer, bool stopping) {
          CompactWhenDue(writer, stopping);
        }));
    identity_ = sqlite::NewSqliteIdentityStore(db_.get());
    registry_ = sqlite::NewSqliteRegistryStore(db_.get());
    queue_ = sqlite::NewSqliteQueueStore(db_.get());
    datasets_ = sqlite::NewSqliteDatasetStore(db_.get());
    return Status::Ok();
  }

  // --- Experiments -------------------------------------------------------------------------

  Result<std::string> CreateExperiment(const Experiment& experiment) override {
    std::string id;
    CAIRN_RETURN_IF_ERROR(Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(Stmt * find, c.Prepare("SELECT 1 FROM experiments WHERE name = ?"));
      find->Bind(1, experiment.name);
      if (find->Step()) return ExperimentNameTaken(experiment.name);
      CAIRN_RETURN_IF_ERROR(find->status());
      CAIRN_ASSIGN_OR_RETURN(Stmt * next,
                             c.Prepare("SELECT COALESCE(MAX(experiment_id), -1) + 1 FROM "
                                       "experiments"));
      if (!next->Step()) return next->status();
      id = std::to_string(next->Int(0));
      std::string location = experiment.artifact_location.empty()
                                 ? options_.default_artifact_root + "/" + id
                                 : experiment.artifact_location;
      CAIRN_RETURN_IF_ERROR(ExecStmt(
          c,
          "INSERT INTO experiments (experiment_id, name, artifact_location, lifecycle_stage, "
          "creation_time, last_update_time) VALUES (?, ?, ?, ?, ?, ?)",
          std::stoll(id), experiment.name, location,
          core::LifecycleStageName(experiment.lifecycle_stage), experiment.creation_time,
          experiment.last_update_time));
      for (const core::Tag& t : experiment.tags) {
        CAIRN_RETURN_IF_ERROR(UpsertExperimentTag(c, std::stoll(id), t));
      }
      return Status::Ok();
    }));
    return id;
  }

  Result<Experiment> GetExperiment(std::string_view experiment_id) override {
    int64_t id = 0;
    if (!ParseExperimentId(experiment_id, &id)) return ExperimentNotFound(experiment_id);
    return Read<Experiment>([&](Connection& c) -> Result<Experiment> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT experiment_id, name, artifact_location, "
                                                 "lifecycle_stage, creation_time, "
                                                 "last_update_time FROM experiments WHERE "
                                                 "experiment_id = ?"));
      s->Bind(1, id);
      if (!s->Step()) {
        CAIRN_RETURN_IF_ERROR(s->status());
        return ExperimentNotFound(experiment_id);
      }
      return LoadExperimentRow(c, *s);
    });
  }

  Result<Experiment> GetExperimentByName(std::string_view name) override {
    return Read<Experiment>([&](Connection& c) -> Result<Experiment> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT experiment_id, name, artifact_location, "
                                                 "lifecycle_stage, creation_time, "
                                                 "last_update_time FROM experiments WHERE "
                                                 "name = ?"));
      s->Bind(1, name);
      if (!s->Step()) {
        CAIRN_RETURN_IF_ERROR(s->status());
        return NotFound("Could not find experiment with name '" + std::string(name) + "'");
      }
      return LoadExperimentRow(c, *s);
    });
  }

  Result<std::vector<Experiment>> ListExperiments(core::ViewType view) override {
    using List = std::vector<Experiment>;
    return Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT experiment_id, name, artifact_location, "
                                                 "lifecycle_stage, creation_time, "
                                                 "last_update_time FROM experiments ORDER BY "
                                                 "experiment_id"));
      List rows;
      while (s->Step()) {
        Experiment e;
        e.experiment_id = std::to_string(s->Int(0));
        e.name = s->Str(1);
        e.artifact_location = s->Str(2);
        core::ParseLifecycleStage(s->Text(3), &e.lifecycle_stage);
        e.creation_time = s->Int(4);
        e.last_update_time = s->Int(5);
        if (core::StageVisible(e.lifecycle_stage, view)) rows.push_back(std::move(e));
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      CAIRN_ASSIGN_OR_RETURN(Stmt * t, c.Prepare("SELECT experiment_id, key, value FROM "
                                                 "experiment_tags ORDER BY experiment_id"));
      std::unordered_map<std::string, Experiment*> by_id;
      for (Experiment& e : rows) by_id[e.experiment_id] = &e;
      while (t->Step()) {
        auto it = by_id.find(std::to_string(t->Int(0)));
        if (it != by_id.end()) it->second->tags.push_back({t->Str(1), t->Str(2)});
      }
      CAIRN_RETURN_IF_ERROR(t->status());
      return rows;
    });
  }

  Status RenameExperiment(std::string_view experiment_id, std::string_view new_name,
                          int64_t now) override {
    return Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ExperimentKey(c, experiment_id));
      CAIRN_ASSIGN_OR_RETURN(Stmt * find, c.Prepare("SELECT experiment_id FROM experiments "
                                                    "WHERE name = ?"));
      find->Bind(1, new_name);
      if (find->Step() && find->Int(0) != id) return ExperimentNameTaken(new_name);
      CAIRN_RETURN_IF_ERROR(find->status());
      return ExecStmt(c,
                      "UPDATE experiments SET name = ?, last_update_time = ? WHERE "
                      "experiment_id = ?",
                      new_name, now, id);
    });
  }

  Status SetExperimentStage(std::string_view experiment_id, LifecycleStage stage,
                            int64_t now) override {
    return Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ExperimentKey(c, experiment_id));
      std::string_view name = core::LifecycleStageName(stage);
      CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                     "UPDATE experiments SET lifecycle_stage = ?, "
                                     "last_update_time = ? WHERE experiment_id = ?",
                                     name, now, id));
      return ExecStmt(c, "UPDATE runs SET lifecycle_stage = ? WHERE experiment_id = ?", name, id);
    });
  }

  Status SetExperimentTag(std::string_view experiment_id, const core::Tag& tag) override {
    return Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ExperimentKey(c, experiment_id));
      return UpsertExperimentTag(c, id, tag);
    });
  }

  Status DeleteExperimentTag(std::string_view experiment_id, std::string_view key) override {
    return Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t id, ExperimentKey(c, experiment_id));
      CAIRN_RETURN_IF_ERROR(
          ExecStmt(c, "DELETE FROM experiment_tags WHERE experiment_id = ? AND key = ?", id, key));
      if (sqlite3_changes(c.raw()) == 0) {
        return NotFound("No tag with name: " + std::string(key) + " in experiment with id " +
                        std::string(experiment_id));
      }
      return Status::Ok();
    });
  }

  // --- Runs --------------------------------------------------------------------------------

  Status CreateRun(const Run& run) override {
    return Write([&](Connection& c) -> Status { return InsertRun(c, run); });
  }

  void CreateRunAsync(Run run, std::function<void(Status)> done) override {
    WriteAsync([this, run = std::move(run)](Connection& c) { return InsertRun(c, run); },
               std::move(done));
  }

  void UpdateRunAsync(std::string run_id, RunUpdate update,
                      std::function<void(Status)> done) override {
    WriteAsync(
        [run_id = std::move(run_id), update = std::move(update)](Connection& c) -> Status {
          CAIRN_ASSIGN_OR_RETURN(int64_t run, RunKey(c, run_id));
          if (update.status) {
            CAIRN_RETURN_IF_ERROR(ExecStmt(c, "UPDATE runs SET status = ? WHERE id = ?",
                                           core::RunStatusName(*update.status), run));
          }
          if (update.start_time) {
            CAIRN_RETURN_IF_ERROR(ExecStmt(c, "UPDATE runs SET start_time = ? WHERE id = ?",
                                           *update.start_time, run));
          }
          if (update.end_time) {
            CAIRN_RETURN_IF_ERROR(
                ExecStmt(c, "UPDATE runs SET end_time = ? WHERE id = ?", *update.end_time, run));
          }
          if (!update.drop_tag.empty()) {
            CAIRN_RETURN_IF_ERROR(
                ExecStmt(c, "DELETE FROM tags WHERE run = ? AND key = ?", run, update.drop_tag));
          }
          return Status::Ok();
        },
        std::move(done));
  }

  void AppendRunLogAsync(std::string run_id, std::vector<core::ConsoleChunk> chunks,
                         std::function<void(Status)> done) override {
    WriteAsync([run_id = std::move(run_id), chunks = std::move(chunks)](
                   Connection& c) -> Status { return AppendLogIn(c, run_id, chunks).status(); },
               std::move(done));
  }

  // Inserts the run, inside the caller's transaction.
  Status InsertRun(Connection& c, const Run& run) {
    CAIRN_ASSIGN_OR_RETURN(int64_t exp, ExperimentKey(c, run.info.experiment_id));
    const core::RunInfo& i = run.info;
    Status s =
        ExecStmt(c,
                 "INSERT INTO runs (run_uuid, experiment_id, name, user_id, status, "
                 "start_time, end_time, artifact_uri, lifecycle_stage) VALUES (?, ?, ?, "
                 "?, ?, ?, ?, ?, ?)",
                 i.run_id, exp, i.run_name, i.user_id, core::RunStatusName(i.status), i.start_time,
                 i.end_time, i.artifact_uri, core::LifecycleStageName(i.lifecycle_stage));
    if (s.code() == StatusCode::kAlreadyExists) {
      return AlreadyExists("Run with id " + i.run_id + " already exists");
    }
    CAIRN_RETURN_IF_ERROR(s);
    return sqlite::LogBatchIn(c, sqlite3_last_insert_rowid(c.raw()), i.run_id, run.data.metrics,
                              run.data.params, run.data.tags, &logged_points_);
  }

  Result<Run> GetRun(std::string_view run_id) override {
    return Read<Run>([&](Connection& c) { return LoadRun(c, run_id); });
  }

  Result<core::RunInfo> GetRunInfo(std::string_view run_id) override {
    return Read<core::RunInfo>([&](Connection& c) -> Result<core::RunInfo> {
      core::RunInfo info;
      CAIRN_RETURN_IF_ERROR(LoadRunInfo(c, run_id, &info).status());
      return info;
    });
  }

  Status UpdateRun(std::string_view run_id, std::optional<core::RunStatus> status,
                   std::optional<int64_t> end_time, std::optional<std::string> run_name) override {
    return Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t run, RunKey(c, run_id));
      if (status) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c, "UPDATE runs SET status = ? WHERE id = ?",
                                       core::RunStatusName(*status), run));
      }
      if (end_time) {
        CAIRN_RETURN_IF_ERROR(
            ExecStmt(c, "UPDATE runs SET end_time = ? WHERE id = ?", *end_time, run));
      }
      if (run_name) {
        CAIRN_RETURN_IF_ERROR(UpsertRunTag(c, run, {std::string(core::kRunNameTag), *run_name}));
      }
      return Status::Ok();
    });
  }

  Status SetRunStage(std::string_view run_id, LifecycleStage stage) override {
    return Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t run, RunKey(c, run_id));
      return ExecStmt(c, "UPDATE runs SET lifecycle_stage = ? WHERE id = ?",
                      core::LifecycleStageName(stage), run);
    });
  }

  Status LogBatch(std::string_view run_id, const std::vector<Metric>& metrics,
                  const std::vector<core::Param>& params,
                  const std::vector<core::Tag>& tags) override {
    return Write([&](Connection& c) -> Status {
      return LogBatchToActiveRun(c, run_id, metrics, params, tags);
    });
  }

  void LogBatchAsync(std::string run_id, std::vector<Metric> metrics,
                     std::vector<core::Param> params, std::vector<core::Tag> tags,
                     std::function<void(Status)> done) override {
    WriteAsync(
        [this, run_id = std::move(run_id), metrics = std::move(metrics), params = std::move(params),
         tags = std::move(tags)](Connection& c) -> Status {
          return LogBatchToActiveRun(c, run_id, metrics, params, tags);
        },
        std::move(done));
  }

  Status DeleteRunTag(std::string_view run_id, std::string_view key) override {
    return Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t run, RunKey(c, run_id));
      CAIRN_RETURN_IF_ERROR(ExecStmt(c, "DELETE FROM tags WHERE run = ? AND key = ?", run, key));
      if (sqlite3_changes(c.raw()) == 0) return RunTagNotFound(run_id, key);
      return Status::Ok();
    });
  }

  Status LogInputs(std::string_view run_id,
                   const std::vector<core::DatasetInput>& inputs) override {
    return Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(RunRow row, FindRun(c, run_id));
      int64_t run = row.key, exp = row.experiment;
      for (const core::DatasetInput& in : inputs) {
        const core::Dataset& d = in.dataset;
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "INSERT OR IGNORE INTO datasets (experiment_id, name, "
                                       "digest, source_type, source, schema, profile) VALUES "
                                       "(?, ?, ?, ?, ?, ?, ?)",
                                       exp, d.name, d.digest, d.source_type, d.source, d.schema,
                                       d.profile));
        CAIRN_ASSIGN_OR_RETURN(Stmt * q, c.Prepare("SELECT id FROM datasets WHERE "
                                                   "experiment_id = ? AND name = ? AND digest = "
                                                   "?"));
        q->Bind(1, exp).Bind(2, d.name).Bind(3, d.digest);
        if (!q->Step()) return q->status().ok() ? Internal("dataset vanished") : q->status();
        int64_t dataset = q->Int(0);
        CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                       "INSERT OR IGNORE INTO inputs (run, dataset, seq) "
                                       "VALUES (?, ?, (SELECT COUNT(*) FROM inputs WHERE run = "
                                       "?))",
                                       run, dataset, run));
        if (sqlite3_changes(c.raw()) == 0) continue;
        for (const core::Tag& t : in.tags) {
          CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                         "INSERT OR REPLACE INTO input_tags (run, dataset, key, "
                                         "value) VALUES (?, ?, ?, ?)",
                                         run, dataset, t.key, t.value));
        }
      }
      return Status::Ok();
    });
  }

  Result<std::vector<DatasetSummary>> SearchDatasets(const std::vector<std::string>& experiment_ids,
                                                     int64_t limit) override {
    using List = std::vector<DatasetSummary>;
    return Read<List>([&](Connection& c) -> Result<List> {
      std::set<std::tuple<int64_t, std::string, std::string, std::string>> found;
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT DISTINCT d.name, d.digest, coalesce(t.value, '') FROM "
                              "datasets d JOIN inputs i ON i.dataset = d.id LEFT JOIN "
                              "input_tags t ON t.run = i.run AND t.dataset = d.id AND t.key = "
                              "'mlflow.data.context' WHERE d.experiment_id = ?"));
      for (const std::string& id : experiment_ids) {
        int64_t exp = 0;
        if (!ParseExperimentId(id, &exp)) continue;
        s->Reset();
        s->Bind(1, exp);
        while (s->Step()) found.emplace(exp, s->Str(0), s->Str(1), s->Str(2));
        CAIRN_RETURN_IF_ERROR(s->status());
      }
      List out;
      for (const auto& [exp, name, digest, context] : found) {
        if (static_cast<int64_t>(out.size()) >= limit) break;
        out.push_back({std::to_string(exp), name, digest, context});
      }
      return out;
    });
  }

  Result<std::vector<std::string>> RunsUsingDataset(std::string_view name, std::string_view digest,
                                                    int64_t limit) override {
    using Ids = std::vector<std::string>;
    return Read<Ids>([&](Connection& c) -> Result<Ids> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT DISTINCT r.run_uuid FROM datasets d JOIN inputs i ON "
                              "i.dataset = d.id JOIN runs r ON r.id = i.run WHERE d.name = ? AND "
                              "d.digest = ? LIMIT ?"));
      s->Bind(1, name).Bind(2, digest).Bind(3, limit);
      Ids out;
      while (s->Step()) out.push_back(s->Str(0));
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Status ScanMetricHistory(const MetricHistoryQuery& query,
                           const std::function<bool(const Metric&)>& visit) override {
    return Read<bool>([&](Connection& c) -> Result<bool> {
             CAIRN_RETURN_IF_ERROR(ScanHistoryIn(c, query, visit));
             return true;
           })
        .status();
  }

  Result<std::vector<ExperimentRunStats>> RunStatsByExperiment() override {
    using List = std::vector<ExperimentRunStats>;
    return Read<List>([&](Connection& c) -> Result<List> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT experiment_id, count(*), sum(status = 'RUNNING'), "
                              "max(max(start_time, coalesce(end_time, 0))) FROM runs WHERE "
                              "lifecycle_stage = 'active' GROUP BY experiment_id ORDER BY "
                              "experiment_id"));
      List out;
      while (s->Step()) {
        out.push_back({std::to_string(s->Int(0)), s->Int(1), s->Int(2), s->Int(3)});
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  Result<std::vector<Run>> SearchRuns(const RunSearchQuery& query) override {
    using Runs = std::vector<Run>;
    return Read<Runs>([&](Connection& c) { return sqlite::SearchRunsIn(c, query); });
  }

  // --- Artifact index ----------------------------------------------------------------------

  Result<std::optional<ArtifactFile>> PutArtifact(const ArtifactFile& file) override {
    std::optional<ArtifactFile> replaced;
    CAIRN_RETURN_IF_ERROR(
        Write([&](Connection& c) -> Status { return PutArtifactRow(c, file, &replaced); }));
    return replaced;
  }

  Result<std::vector<ArtifactFile>> PutArtifacts(const std::vector<ArtifactFile>& files) override {
    std::vector<ArtifactFile> replaced;
    CAIRN_RETURN_IF_ERROR(Write([&](Connection& c) -> Status {
      replaced.clear();
      for (const ArtifactFile& f : files) {
        std::optional<ArtifactFile> old;
        CAIRN_RETURN_IF_ERROR(PutArtifactRow(c, f, &old));
        if (old) replaced.push_back(std::move(*old));
      }
      return Status::Ok();
    }));
    return replaced;
  }

  Result<ArtifactFile> GetArtifact(std::string_view path) override {
    return Read<ArtifactFile>([&](Connection& c) -> Result<ArtifactFile> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                             c.Prepare("SELECT digest, size FROM artifacts WHERE path = ?"));
      s->Bind(1, path);
      if (!s->Step()) {
        CAIRN_RETURN_IF_ERROR(s->status());
        return ArtifactNotFound(path);
      }
      return ArtifactFile{std::string(path), s->Str(0), s->Int(1)};
    });
  }

  Result<std::vector<ArtifactEntry>> ListArtifacts(std::string_view dir) override {
    using Entries = std::vector<ArtifactEntry>;
    return Read<Entries>([&](Connection& c) -> Result<Entries> {
      ListingBuilder builder(dir);
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, SelectUnder(c, builder.prefix()));
      while (s->Step()) builder.Add({s->Str(0), s->Str(1), s->Int(2)});
      CAIRN_RETURN_IF_ERROR(s->status());
      return builder.Take();
    });
  }

  Result<std::vector<ArtifactFile>> DeleteArtifacts(std::string_view path) override {
    std::vector<ArtifactFile> removed;
    CAIRN_RETURN_IF_ERROR(Write([&](Connection& c) -> Status {
      removed.clear();
      CAIRN_ASSIGN_OR_RETURN(Stmt * one,
                             c.Prepare("SELECT digest, size FROM artifacts WHERE path = ?"));
      one->Bind(1, path);
      if (one->Step()) {
        removed.push_back({std::string(path), one->Str(0), one->Int(1)});
      } else {
        CAIRN_RETURN_IF_ERROR(one->status());
        std::string prefix = DirPrefix(path);
        CAIRN_ASSIGN_OR_RETURN(Stmt * s, SelectUnder(c, prefix));
        while (s->Step()) removed.push_back({s->Str(0), s->Str(1), s->Int(2)});
        CAIRN_RETURN_IF_ERROR(s->status());
      }
      if (removed.empty()) return ArtifactNotFound(path);
      for (const ArtifactFile& f : removed) {
        CAIRN_RETURN_IF_ERROR(ExecStmt(c, "DELETE FROM artifacts WHERE path = ?", f.path));
      }
      return Status::Ok();
    }));
    return removed;
  }

  Result<int64_t> AppendRunLog(std::string_view run_id,
                               const std::vector<core::ConsoleChunk>& chunks) override {
    int64_t length = 0;
    CAIRN_RETURN_IF_ERROR(Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(length, AppendLogIn(c, run_id, chunks));
      return Status::Ok();
    }));
    return length;
  }

  // Appends to the run's log inside the caller's transaction; returns the log's length.
  static Result<int64_t> AppendLogIn(Connection& c, std::string_view run_id,
                                     const std::vector<core::ConsoleChunk>& chunks) {
    CAIRN_ASSIGN_OR_RETURN(int64_t run, RunKey(c, run_id));
    CAIRN_ASSIGN_OR_RETURN(int64_t length, RunLogLength(c, run));
    CAIRN_ASSIGN_OR_RETURN(std::vector<core::ConsoleChunk> add, ChunksToAppend(length, chunks));
    for (const core::ConsoleChunk& chunk : add) {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("INSERT INTO run_logs (run, offset, stream, "
                                                 "timestamp, data) VALUES (?, ?, ?, ?, ?)"));
      s->Bind(1, run).Bind(2, chunk.offset).Bind(3, static_cast<int>(chunk.stream));
      s->Bind(4, chunk.timestamp).BindBlob(5, chunk.data);
      CAIRN_RETURN_IF_ERROR(s->Exec());
      length = chunk.offset + static_cast<int64_t>(chunk.data.size());
    }
    return length;
  }

  Result<std::vector<core::ConsoleChunk>> ReadRunLog(std::string_view run_id, int64_t offset,
                                                     int64_t max_bytes) override {
    using Chunks = std::vector<core::ConsoleChunk>;
    return Read<Chunks>([&](Connection& c) -> Result<Chunks> {
      CAIRN_ASSIGN_OR_RETURN(int64_t run, RunKey(c, run_id));
      // From the chunk holding `offset`: the last one starting at or before it.
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT offset, stream, timestamp, data FROM "
                                                 "run_logs WHERE run = ?1 AND offset >= "
                                                 "IFNULL((SELECT MAX(offset) FROM run_logs "
                                                 "WHERE run = ?1 AND offset <= ?2), 0) ORDER "
                                                 "BY offset"));
      s->Bind(1, run).Bind(2, offset);
      Chunks out;
      int64_t bytes = 0;
      while (bytes < max_bytes && s->Step()) {
        core::ConsoleChunk chunk;
        chunk.offset = s->Int(0);
        chunk.stream = s->Int(1) == 1 ? core::ConsoleStream::kStderr : core::ConsoleStream::kStdout;
        chunk.timestamp = s->Int(2);
        chunk.data = s->Str(3);
        if (chunk.offset + static_cast<int64_t>(chunk.data.size()) <= offset) continue;
        bytes += static_cast<int64_t>(chunk.data.size());
        out.push_back(std::move(chunk));
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  int64_t StoredBytes() override {
    int64_t bytes = 0;
    for (const char* suffix : {"", "-wal", "-shm"}) {
      struct stat st {};
      if (stat((db_->path() + suffix).c_str(), &st) == 0) bytes += st.st_size;
    }
    return bytes;
  }

  Result<bool> BlobReferenced(std::string_view digest) override {
    CAIRN_ASSIGN_OR_RETURN(std::vector<bool> found, BlobsReferenced({std::string(digest)}));
    return static_cast<bool>(found[0]);
  }

  Result<std::vector<bool>> BlobsReferenced(const std::vector<std::string>& digests) override {
    using Found = std::vector<bool>;
    return Read<Found>([&](Connection& c) -> Result<Found> {
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare("SELECT 1 FROM artifacts WHERE digest = ?1 AND substr(path, 1, 9) "
                              "!= 'datasets/' UNION ALL SELECT 1 FROM data_blobs WHERE digest = "
                              "?1 UNION ALL SELECT 1 FROM data_uploads WHERE digest = ?1 LIMIT 1"));
      Found out;
      out.reserve(digests.size());
      for (const std::string& d : digests) {
        s->Reset();
        s->Bind(1, d);
        out.push_back(s->Step());
        CAIRN_RETURN_IF_ERROR(s->status());
      }
      return out;
    });
  }

  Result<std::vector<ArtifactFile>> ListArtifactFiles(std::string_view after,
                                                      int64_t limit) override {
    using Files = std::vector<ArtifactFile>;
    return Read<Files>([&](Connection& c) -> Result<Files> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT path, digest, size FROM artifacts "
                                                 "WHERE path > ? ORDER BY path LIMIT ?"));
      s->Bind(1, after).Bind(2, limit);
      Files out;
      while (s->Step()) out.push_back({s->Str(0), s->Str(1), s->Int(2)});
      CAIRN_RETURN_IF_ERROR(s->status());
      return out;
    });
  }

  IdentityStore& identity() override { return *identity_; }
  RegistryStore& registry() override { return *registry_; }
  QueueStore& queue() override { return *queue_; }
  DatasetStore& datasets() override { return *datasets_; }

 private:
  Status LogBatchToActiveRun(Connection& c, std::string_view run_id,
                             const std::vector<Metric>& metrics,
                             const std::vector<core::Param>& params,
                             const std::vector<core::Tag>& tags) {
    CAIRN_ASSIGN_OR_RETURN(RunRow run, FindRun(c, run_id));
    if (run.stage != LifecycleStage::kActive) return RunNotActive(run_id, run.stage);
    return sqlite::LogBatchIn(c, run.key, run_id, metrics, params, tags, &logged_points_);
  }

  // On the writer thread, between groups: moves the metric log into place once enough points
  // have accumulated, and as the store closes.
  void CompactWhenDue(Connection& writer, bool stopping) {
    if (!stopping && logged_points_ < kCompactPoints) return;
    Status s = sqlite::CompactMetricLog(writer);
    if (!s.ok()) {
      LogWarning("moving metric points into place failed (will retry): " + s.ToString());
      return;
    }
    logged_points_ = 0;
  }

  Status Write(std::function<Status(Connection&)> fn) { return db_->Write(std::move(fn)); }
  void WriteAsync(std::function<Status(Connection&)> fn, std::function<void(Status)> done) {
    db_->WriteAsync(std::move(fn), std::move(done));
  }
  template <typename T, typename F>
  Result<T> Read(F&& fn) {
    return db_->Read<T>(std::forward<F>(fn));
  }

  StoreOptions options_;
  int64_t logged_points_ = kCompactPoints;   // writer thread only; compact once at start
  std::unique_ptr<IdentityStore> identity_;  // on db_
  std::unique_ptr<RegistryStore> registry_;  // on db_
  std::unique_ptr<QueueStore> queue_;        // on db_
  std::unique_ptr<DatasetStore> datasets_;   // on db_
  // Last, so that it stops first: its writer thread uses the members above until then.
  std::unique_ptr<Database> db_;
};

}  // namespace

Result<std::unique_ptr<MetadataStore>> OpenSqliteMetadataStore(const std::string& path,
                                                               const StoreOptions& options) {
  auto store = std::make_unique<SqliteStore>(options);
  CAIRN_RETURN_IF_ERROR(store->Init(path).WithContext("opening " + path));
  return std::unique_ptr<MetadataStore>(std::move(store));
}

}  // namespace cairn::store
