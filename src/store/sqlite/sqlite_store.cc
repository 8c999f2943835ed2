#include "store/sqlite/sqlite_store.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "store/listing.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/sqlite_db.h"
#include "store/store_util.h"
#include "util/clock.h"
#include "util/json_writer.h"
#include "util/log.h"
#include "util/process.h"

namespace cairn::store {
namespace {

using core::Experiment;
using core::LifecycleStage;
using core::Metric;
using core::Run;
using sqlite::Connection;
using sqlite::Stmt;

// Reads a row of (id, run_uuid, experiment_id, name, user_id, status, start_time, end_time,
// artifact_uri, lifecycle_stage) from runs. Returns the internal run key.
int64_t ReadRunInfo(const Stmt& s, core::RunInfo* info) {
  info->run_id = s.Str(1);
  info->experiment_id = std::to_string(s.Int(2));
  info->run_name = s.Str(3);
  info->user_id = s.Str(4);
  core::ParseRunStatus(s.Text(5), &info->status);
  info->start_time = s.Int(6);
  if (s.IsNull(7)) {
    info->end_time.reset();
  } else {
    info->end_time = s.Int(7);
  }
  info->artifact_uri = s.Str(8);
  core::ParseLifecycleStage(s.Text(9), &info->lifecycle_stage);
  return s.Int(0);
}

Metric ReadMetricPoint(const Stmt& s, int first_col, std::string key) {
  // Columns: step, timestamp, is_nan, value.
  Metric m;
  m.key = std::move(key);
  m.step = s.Int(first_col);
  m.timestamp = s.Int(first_col + 1);
  m.value = s.Int(first_col + 2) != 0 ? std::nan("") : s.Double(first_col + 3);
  return m;
}

// The narrowing query for a metric comparison, or nullptr for comparators SQL does not decide
// exactly as RunMatches does (!=, on which NaN matches). Literals: statements are cached by
// their address.
const char* MetricNarrowingSql(core::Comparator op) {
#define CAIRN_NARROW(cmp)                                                                   \
  "SELECT run, step, timestamp, is_nan, value FROM latest_metrics WHERE key = ? AND is_nan " \
  "= 0 AND value " cmp " ?"
  switch (op) {
    case core::Comparator::kGt: return CAIRN_NARROW(">");
    case core::Comparator::kGe: return CAIRN_NARROW(">=");
    case core::Comparator::kLt: return CAIRN_NARROW("<");
    case core::Comparator::kLe: return CAIRN_NARROW("<=");
    case core::Comparator::kEq: return CAIRN_NARROW("=");
    default: return nullptr;
  }
#undef CAIRN_NARROW
}

// Runs a statement with no result rows, taking it from the connection's cache.
template <typename... Args>
Status ExecStmt(Connection& c, const char* sql, const Args&... args) {
  CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare(sql));
  int i = 0;
  (s->Bind(++i, args), ...);
  return s->Exec();
}

class SqliteStore : public MetadataStore {
 public:
  SqliteStore(std::string path, StoreOptions options)
      : path_(std::move(path)), options_(std::move(options)) {}

  ~SqliteStore() override {
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

  Status Init() {
    CAIRN_ASSIGN_OR_RETURN(writer_,
                           Connection::Open(path_, /*create=*/true, options_.sync_every_commit));
    CAIRN_RETURN_IF_ERROR(Migrate());
    // Checkpoints copy WAL pages into the database file. They run on their own thread and
    // connection so that this I/O stays off the writer's path; the writer only signals when
    // the WAL has grown past kCheckpointPages.
    CAIRN_ASSIGN_OR_RETURN(checkpointer_, Connection::Open(path_, /*create=*/false));
    CAIRN_RETURN_IF_ERROR(writer_->Exec("PRAGMA wal_autocheckpoint=0"));
    sqlite3_wal_hook(writer_->raw(), &SqliteStore::OnWalCommit, this);
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
      CAIRN_RETURN_IF_ERROR(ExecStmt(
          c, "DELETE FROM experiment_tags WHERE experiment_id = ? AND key = ?", id, key));
      if (sqlite3_changes(c.raw()) == 0) {
        return NotFound("No tag with name: " + std::string(key) + " in experiment with id " +
                        std::string(experiment_id));
      }
      return Status::Ok();
    });
  }

  // --- Runs --------------------------------------------------------------------------------

  Status CreateRun(const Run& run) override {
    return Write([&](Connection& c) -> Status {
      CAIRN_ASSIGN_OR_RETURN(int64_t exp, ExperimentKey(c, run.info.experiment_id));
      const core::RunInfo& i = run.info;
      Status s = ExecStmt(c,
                          "INSERT INTO runs (run_uuid, experiment_id, name, user_id, status, "
                          "start_time, end_time, artifact_uri, lifecycle_stage) VALUES (?, ?, ?, "
                          "?, ?, ?, ?, ?, ?)",
                          i.run_id, exp, i.run_name, i.user_id, core::RunStatusName(i.status),
                          i.start_time, i.end_time, i.artifact_uri,
                          core::LifecycleStageName(i.lifecycle_stage));
      if (s.code() == StatusCode::kAlreadyExists) {
        return AlreadyExists("Run with id " + i.run_id + " already exists");
      }
      CAIRN_RETURN_IF_ERROR(s);
      return LogBatchIn(c, sqlite3_last_insert_rowid(c.raw()), i.run_id, run.data.metrics,
                        run.data.params, run.data.tags);
    });
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
        CAIRN_RETURN_IF_ERROR(ExecStmt(c, "UPDATE runs SET end_time = ? WHERE id = ?",
                                       *end_time, run));
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
        [this, run_id = std::move(run_id), metrics = std::move(metrics),
         params = std::move(params), tags = std::move(tags)](Connection& c) -> Status {
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
    return Read<Runs>([&](Connection& c) -> Result<Runs> {
      CAIRN_ASSIGN_OR_RETURN(std::optional<Runs> candidates, WalkMetricOrder(c, query));
      if (!candidates) {
        CAIRN_ASSIGN_OR_RETURN(candidates, LoadSearchCandidates(c, query));
      }
      std::vector<Run> page = SortAndPage(std::move(*candidates), query);
      CAIRN_RETURN_IF_ERROR(ReloadRuns(c, &page));
      return page;
    });
  }

  // --- Artifact index ----------------------------------------------------------------------

  Result<std::optional<ArtifactFile>> PutArtifact(const ArtifactFile& file) override {
    std::optional<ArtifactFile> replaced;
    CAIRN_RETURN_IF_ERROR(Write([&](Connection& c) -> Status {
      replaced.reset();
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
      if (old->Step()) replaced = ArtifactFile{file.path, old->Str(0), old->Int(1)};
      CAIRN_RETURN_IF_ERROR(old->status());
      return ExecStmt(c, "INSERT OR REPLACE INTO artifacts (path, digest, size) VALUES (?, ?, ?)",
                      file.path, file.digest, file.size);
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
      CAIRN_ASSIGN_OR_RETURN(int64_t run, RunKey(c, run_id));
      CAIRN_ASSIGN_OR_RETURN(length, RunLogLength(c, run));
      CAIRN_ASSIGN_OR_RETURN(std::vector<core::ConsoleChunk> add, ChunksToAppend(length, chunks));
      for (const core::ConsoleChunk& chunk : add) {
        CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("INSERT INTO run_logs (run, offset, stream, "
                                                   "timestamp, data) VALUES (?, ?, ?, ?, ?)"));
        s->Bind(1, run).Bind(2, chunk.offset).Bind(3, static_cast<int>(chunk.stream));
        s->Bind(4, chunk.timestamp).BindBlob(5, chunk.data);
        CAIRN_RETURN_IF_ERROR(s->Exec());
        length = chunk.offset + static_cast<int64_t>(chunk.data.size());
      }
      return Status::Ok();
    }));
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

  Result<bool> BlobReferenced(std::string_view digest) override {
    return Read<bool>([&](Connection& c) -> Result<bool> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT 1 FROM artifacts WHERE digest = ? "
                                                 "LIMIT 1"));
      s->Bind(1, digest);
      bool found = s->Step();
      CAIRN_RETURN_IF_ERROR(s->status());
      return found;
    });
  }

 private:
  struct WriteOp {
    std::function<Status(Connection&)> fn;
    std::function<void(Status)> done;  // called on the writer thread once committed
  };

  Status LogBatchToActiveRun(Connection& c, std::string_view run_id,
                             const std::vector<Metric>& metrics,
                             const std::vector<core::Param>& params,
                             const std::vector<core::Tag>& tags) {
    CAIRN_ASSIGN_OR_RETURN(RunRow run, FindRun(c, run_id));
    if (run.stage != LifecycleStage::kActive) return RunNotActive(run_id, run.stage);
    return LogBatchIn(c, run.key, run_id, metrics, params, tags);
  }

  Status Migrate() {
    Connection& c = *writer_;
    CAIRN_RETURN_IF_ERROR(c.Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER "
                                 "NOT NULL)"));
    int64_t version = 0;
    {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT MAX(version) FROM schema_version"));
      if (s->Step() && !s->IsNull(0)) version = s->Int(0);
      CAIRN_RETURN_IF_ERROR(s->status());
      c.ResetAll();  // a statement left open would lock the tables a migration drops
    }
    auto migrations = sqlite::Migrations();
    if (version > static_cast<int64_t>(migrations.size())) {
      return FailedPrecondition("database " + path_ + " has schema version " +
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
        // A new store holds experiment 0, "Default", as MLflow's stores do.
        s = ExecStmt(c,
                     "INSERT INTO experiments (experiment_id, name, artifact_location, "
                     "lifecycle_stage, creation_time, last_update_time) VALUES (0, 'Default', ?, "
                     "'active', ?2, ?2)",
                     options_.default_artifact_root + "/0", SystemClock()->NowMillis());
      }
      if (!s.ok()) {
        (void)c.Exec("ROLLBACK");
        return s.WithContext("migrating " + path_ + " to schema version " +
                             std::to_string(v + 1));
      }
      CAIRN_RETURN_IF_ERROR(c.Exec("COMMIT"));
    }
    return Status::Ok();
  }

  // Queues `fn` for the writer thread and waits until its transaction has committed.
  Status Write(std::function<Status(Connection&)> fn) {
    std::promise<Status> committed;
    std::future<Status> done = committed.get_future();
    WriteAsync(std::move(fn), [&committed](Status s) { committed.set_value(std::move(s)); });
    return done.get();
  }

  // Queues `fn` for the writer thread; `done` gets its outcome once its group has committed (at
  // once, on this thread, when the store is closing).
  void WriteAsync(std::function<Status(Connection&)> fn, std::function<void(Status)> done) {
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

  void WriterLoop() {
    std::vector<std::unique_ptr<WriteOp>> batch;
    std::vector<Status> results;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(queue_mu_);
        queue_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) break;  // stop_ with nothing left to write
        batch.assign(std::make_move_iterator(queue_.begin()),
                     std::make_move_iterator(queue_.end()));
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
      if (logged_points_ >= kCompactPoints) CompactMetricLog();
    }
    CompactMetricLog();
  }

  // Runs the writes of a group in one transaction and fills `results`. Returns false when a
  // write failed without isolation: the transaction was rolled back and nothing was written.
  bool CommitGroup(const std::vector<std::unique_ptr<WriteOp>>& batch, bool isolate,
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

  // Moves the metric log into the clustered metrics table in one transaction. Runs on the
  // writer thread between groups; a failure leaves the log as it was, to be retried.
  void CompactMetricLog() {
    Status s = RunStmt("BEGIN IMMEDIATE");
    if (s.ok()) {
      s = RunStmt(
          "INSERT OR IGNORE INTO metrics (run, key, step, timestamp, is_nan, value) SELECT run, "
          "key, step, timestamp, is_nan, value FROM metric_log");
    }
    if (s.ok()) s = RunStmt("DELETE FROM metric_log");
    if (s.ok()) s = RunStmt("COMMIT");
    writer_->ResetAll();
    if (!s.ok()) {
      (void)RunStmt("ROLLBACK");
      LogWarning("moving metric points into place failed (will retry): " + s.ToString());
      return;
    }
    logged_points_ = 0;
  }

  // A passive checkpoint once the WAL holds 32 MiB, and again every 16 MiB it grows by while
  // writes go on: each one syncs the WAL and the database.
  static constexpr int kCheckpointPages = 8000;
  static constexpr int kRestartPages = 16384;  // 64 MiB of 4 KiB pages
  static constexpr std::chrono::milliseconds kIdleCheckpoint{200};
  // Points that accumulate in metric_log before they are moved into metrics.
  static constexpr int64_t kCompactPoints = 20000;

  static int OnWalCommit(void* self, sqlite3*, const char*, int pages) {
    auto* store = static_cast<SqliteStore*>(self);
    store->wal_dirty_.store(true, std::memory_order_relaxed);
    const int before = store->wal_pages_.exchange(pages, std::memory_order_relaxed);
    // A passive checkpoint under steady writes copies most of the WAL but cannot start it
    // over, so the WAL stays past kCheckpointPages; the next one is due once it has grown by
    // half as much again (each one syncs the WAL, and asking at every commit made them run
    // back to back). A WAL that started over is due at kCheckpointPages again.
    if (pages < before) {
      store->checkpoint_due_pages_.store(kCheckpointPages, std::memory_order_relaxed);
    }
    if (pages >= store->checkpoint_due_pages_.load(std::memory_order_relaxed)) {
      store->checkpoint_due_pages_.store(pages + kCheckpointPages / 2,
                                         std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> lock(store->checkpoint_mu_);
        store->checkpoint_wanted_ = true;
      }
      store->checkpoint_cv_.notify_one();
    }
    return SQLITE_OK;
  }

  // Checkpoints when the WAL has grown past kCheckpointPages, and also once writes pause for
  // kIdleCheckpoint: readers of a fully checkpointed WAL read the database file directly, which
  // makes large reads (search over many runs) markedly faster than looking up every page in
  // the WAL index.
  void CheckpointLoop() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(checkpoint_mu_);
        bool wanted = checkpoint_cv_.wait_for(lock, kIdleCheckpoint, [&] {
          return checkpoint_stop_ || checkpoint_wanted_;
        });
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
        LogWarning("sqlite checkpoint of " + path_ + " failed: " +
                   sqlite3_errmsg(checkpointer_->raw()));
      }
    }
  }

  Status RunStmt(const char* sql) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, writer_->Prepare(sql));
    return s->Exec();
  }

  // Runs `fn` on a pooled read connection inside one read transaction (a consistent snapshot).
  template <typename T, typename F>
  Result<T> Read(F&& fn) {
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
    Status begin = ExecStmt(*conn, "BEGIN");
    if (!begin.ok()) return begin;
    Result<T> out = fn(*conn);
    conn->ResetAll();
    (void)ExecStmt(*conn, "COMMIT");
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      pool_.push_back(std::move(conn));
    }
    return out;
  }

  Result<int64_t> ExperimentKey(Connection& c, std::string_view experiment_id) {
    int64_t id = 0;
    if (!ParseExperimentId(experiment_id, &id)) return ExperimentNotFound(experiment_id);
    CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                           c.Prepare("SELECT 1 FROM experiments WHERE experiment_id = ?"));
    s->Bind(1, id);
    if (!s->Step()) {
      CAIRN_RETURN_IF_ERROR(s->status());
      return ExperimentNotFound(experiment_id);
    }
    return id;
  }

  // A run's internal key, experiment and lifecycle stage, as writes need them.
  struct RunRow {
    int64_t key = 0;
    int64_t experiment = 0;
    LifecycleStage stage = LifecycleStage::kActive;
  };

  Result<RunRow> FindRun(Connection& c, std::string_view run_id) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT id, experiment_id, lifecycle_stage FROM "
                                               "runs WHERE run_uuid = ?"));
    s->Bind(1, run_id);
    if (!s->Step()) {
      CAIRN_RETURN_IF_ERROR(s->status());
      return RunNotFound(run_id);
    }
    RunRow row{s->Int(0), s->Int(1), LifecycleStage::kActive};
    core::ParseLifecycleStage(s->Text(2), &row.stage);
    return row;
  }

  Result<int64_t> RunKey(Connection& c, std::string_view run_id) {
    CAIRN_ASSIGN_OR_RETURN(RunRow row, FindRun(c, run_id));
    return row.key;
  }

  Status UpsertExperimentTag(Connection& c, int64_t id, const core::Tag& tag) {
    return ExecStmt(c,
                    "INSERT INTO experiment_tags (experiment_id, key, value) VALUES (?, ?, ?) "
                    "ON CONFLICT (experiment_id, key) DO UPDATE SET value = excluded.value",
                    id, tag.key, tag.value);
  }

  // mlflow.runName and the run's name column always agree.
  Status UpsertRunTag(Connection& c, int64_t run, const core::Tag& tag) {
    CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                   "INSERT INTO tags (run, key, value) VALUES (?, ?, ?) ON "
                                   "CONFLICT (run, key) DO UPDATE SET value = excluded.value",
                                   run, tag.key, tag.value));
    if (tag.key == core::kRunNameTag) {
      return ExecStmt(c, "UPDATE runs SET name = ? WHERE id = ?", tag.value, run);
    }
    return Status::Ok();
  }

  Status LogBatchIn(Connection& c, int64_t run, std::string_view run_id,
                    const std::vector<Metric>& metrics, const std::vector<core::Param>& params,
                    const std::vector<core::Tag>& tags) {
    for (const core::Param& p : params) {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s,
                             c.Prepare("SELECT value FROM params WHERE run = ? AND key = ?"));
      s->Bind(1, run).Bind(2, p.key);
      if (s->Step()) {
        if (s->Text(0) != p.value) return ParamChanged(run_id, p.key, s->Text(0), p.value);
        continue;
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      CAIRN_RETURN_IF_ERROR(ExecStmt(c,
                                     "INSERT OR IGNORE INTO params (run, key, value) VALUES "
                                     "(?, ?, ?)",
                                     run, p.key, p.value));
    }
    for (const core::Tag& t : tags) CAIRN_RETURN_IF_ERROR(UpsertRunTag(c, run, t));
    if (metrics.empty()) return Status::Ok();

    std::vector<Metric> latest;
    CAIRN_ASSIGN_OR_RETURN(Stmt * ins, c.Prepare("INSERT INTO metric_log (run, key, step, "
                                                 "timestamp, is_nan, value) VALUES (?, ?, ?, ?, "
                                                 "?, ?)"));
    for (const Metric& m : metrics) {
      bool nan = std::isnan(m.value);
      ins->Reset();
      ins->Bind(1, run).Bind(2, m.key).Bind(3, m.step).Bind(4, m.timestamp).Bind(5, nan ? 1 : 0);
      ins->Bind(6, nan ? 0.0 : m.value);
      CAIRN_RETURN_IF_ERROR(ins->Exec());
      UpdateLatest(&latest, m);
    }
    logged_points_ += static_cast<int64_t>(metrics.size());
    for (const Metric& m : latest) {
      bool nan = std::isnan(m.value);
      CAIRN_RETURN_IF_ERROR(ExecStmt(
          c,
          "INSERT INTO latest_metrics (run, key, step, timestamp, is_nan, value) VALUES (?, ?, "
          "?, ?, ?, ?) ON CONFLICT (run, key) DO UPDATE SET step = excluded.step, timestamp = "
          "excluded.timestamp, is_nan = excluded.is_nan, value = excluded.value WHERE "
          "(excluded.step, excluded.timestamp, excluded.is_nan, excluded.value) > "
          "(latest_metrics.step, latest_metrics.timestamp, latest_metrics.is_nan, "
          "latest_metrics.value)",
          run, m.key, m.step, m.timestamp, nan ? 1 : 0, nan ? 0.0 : m.value));
    }
    return Status::Ok();
  }

  // Merges the clustered table, read in order, with the points still in the log (few, sorted
  // here), drops exact duplicates, and applies the page's offset and size.
  Status ScanHistoryIn(Connection& c, const MetricHistoryQuery& query,
                       const std::function<bool(const Metric&)>& visit) {
    CAIRN_ASSIGN_OR_RETURN(int64_t run, RunKey(c, query.run_id));
    int64_t min_step = query.min_step.value_or(INT64_MIN);
    int64_t max_step = query.max_step.value_or(INT64_MAX);
    CAIRN_ASSIGN_OR_RETURN(Stmt * l, c.Prepare("SELECT step, timestamp, is_nan, value FROM "
                                               "metric_log WHERE run = ? AND key = ? AND step >= "
                                               "? AND step <= ?"));
    l->Bind(1, run).Bind(2, query.key).Bind(3, min_step).Bind(4, max_step);
    std::vector<Metric> pending;
    while (l->Step()) {
      Metric m = ReadMetricPoint(*l, 0, query.key);
      if (!query.after || core::MetricIsNewer(m, *query.after)) pending.push_back(std::move(m));
    }
    CAIRN_RETURN_IF_ERROR(l->status());
    auto older = [](const Metric& a, const Metric& b) { return core::MetricIsNewer(b, a); };
    std::sort(pending.begin(), pending.end(), older);

    // The scan starts at one row-value bound, which SQLite seeks to in the primary key: after
    // query.after, or at min_step, whichever is later. (is_nan is 0 or 1, so -1 places the
    // bound before every row of its step and timestamp.)
    // A whole history (what a chart reads) skips the bound's comparisons, a sixth of the work.
    bool whole = !query.after && !query.min_step && !query.max_step;
    CAIRN_ASSIGN_OR_RETURN(
        Stmt * s,
        c.Prepare(whole ? "SELECT step, timestamp, is_nan, value FROM metrics WHERE run = ?1 AND "
                          "key = ?2 ORDER BY step, timestamp, is_nan, value LIMIT ?5 OFFSET ?6"
                        : "SELECT step, timestamp, is_nan, value FROM metrics WHERE run = ?1 AND "
                          "key = ?2 AND (step, timestamp, is_nan, value) > (?3, ?7, ?8, ?9) AND "
                          "step <= ?4 ORDER BY step, timestamp, is_nan, value LIMIT ?5 OFFSET ?6"));
    s->Bind(1, run).Bind(2, query.key);
    if (!whole) {
      s->Bind(4, max_step);
      if (query.after && query.after->step >= min_step) {
        bool nan = std::isnan(query.after->value);
        s->Bind(3, query.after->step).Bind(7, query.after->timestamp).Bind(8, nan ? 1 : 0);
        s->Bind(9, nan ? 0.0 : query.after->value);
      } else {
        s->Bind(3, min_step).Bind(7, INT64_MIN).Bind(8, -1).Bind(9, 0.0);
      }
    }
    // With nothing pending the database applies the page bounds itself.
    int64_t skip = query.offset;
    if (pending.empty()) {
      s->Bind(5, query.max_results > 0 ? query.max_results : int64_t{-1}).Bind(6, query.offset);
      skip = 0;
    } else {
      s->Bind(5, query.max_results > 0 ? query.offset + query.max_results : int64_t{-1});
      s->Bind(6, int64_t{0});
    }
    int64_t emitted = 0;
    size_t next_pending = 0;
    bool have_last = false;
    Metric last;
    // Emits m unless it repeats the previous point; false once the page is complete or the
    // visitor stops.
    auto emit = [&](Metric m) {
      if (have_last && core::SameMetricPoint(last, m)) return true;
      last = m;
      have_last = true;
      if (skip > 0) {
        --skip;
        return true;
      }
      if (query.max_results > 0 && emitted == query.max_results) return false;
      ++emitted;
      return visit(last);
    };
    bool more = true;
    while (more && s->Step()) {
      Metric m = ReadMetricPoint(*s, 0, query.key);
      while (more && next_pending < pending.size() && older(pending[next_pending], m)) {
        more = emit(std::move(pending[next_pending++]));
      }
      if (more) more = emit(std::move(m));
    }
    CAIRN_RETURN_IF_ERROR(s->status());
    while (more && next_pending < pending.size()) more = emit(std::move(pending[next_pending++]));
    return Status::Ok();
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

  // Reads the run's info; returns its internal key.
  Result<int64_t> LoadRunInfo(Connection& c, std::string_view run_id, core::RunInfo* info) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT id, run_uuid, experiment_id, name, "
                                               "user_id, status, start_time, end_time, "
                                               "artifact_uri, lifecycle_stage FROM runs WHERE "
                                               "run_uuid = ?"));
    s->Bind(1, run_id);
    if (!s->Step()) {
      CAIRN_RETURN_IF_ERROR(s->status());
      return RunNotFound(run_id);
    }
    return ReadRunInfo(*s, info);
  }

  Result<Run> LoadRun(Connection& c, std::string_view run_id) {
    std::vector<Run> one(1);
    CAIRN_ASSIGN_OR_RETURN(int64_t key, LoadRunInfo(c, run_id, &one[0].info));
    CAIRN_RETURN_IF_ERROR(LoadRunData(c, {key}, &one));
    return std::move(one[0]);
  }

  // Replaces each run (as loaded for matching: partial) with the complete run, in place.
  Status ReloadRuns(Connection& c, std::vector<Run>* runs) {
    if (runs->empty()) return Status::Ok();
    std::string ids = "[";
    std::unordered_map<std::string, size_t> position;
    for (size_t i = 0; i < runs->size(); ++i) {
      if (i > 0) ids += ',';
      AppendJsonString(&ids, (*runs)[i].info.run_id);
      position[(*runs)[i].info.run_id] = i;
    }
    ids += ']';
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT id, run_uuid, experiment_id, name, "
                                               "user_id, status, start_time, end_time, "
                                               "artifact_uri, lifecycle_stage FROM runs WHERE "
                                               "run_uuid IN (SELECT value FROM json_each(?))"));
    s->Bind(1, ids);
    std::vector<int64_t> keys(runs->size(), -1);
    while (s->Step()) {
      size_t i = position[std::string(s->Text(1))];
      (*runs)[i] = Run();
      keys[i] = ReadRunInfo(*s, &(*runs)[i].info);
    }
    CAIRN_RETURN_IF_ERROR(s->status());
    return LoadRunData(c, keys, runs);
  }

  // Loads latest metrics, params, tags and inputs of runs whose info is loaded; keys[i] is the
  // internal key of (*runs)[i]. A few queries for any number of runs.
  Status LoadRunData(Connection& c, const std::vector<int64_t>& keys, std::vector<Run>* runs) {
    std::unordered_map<int64_t, size_t> position;
    std::string ids = "[";
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i > 0) ids += ',';
      ids += std::to_string(keys[i]);
      position[keys[i]] = i;
    }
    ids += ']';
    auto run_of = [&](int64_t key) -> Run* {
      auto it = position.find(key);
      return it == position.end() ? nullptr : &(*runs)[it->second];
    };

    CAIRN_ASSIGN_OR_RETURN(Stmt * m, c.Prepare("SELECT run, key, step, timestamp, is_nan, value "
                                               "FROM latest_metrics WHERE run IN (SELECT value "
                                               "FROM json_each(?))"));
    m->Bind(1, ids);
    while (m->Step()) {
      if (Run* r = run_of(m->Int(0))) r->data.metrics.push_back(ReadMetricPoint(*m, 2, m->Str(1)));
    }
    CAIRN_RETURN_IF_ERROR(m->status());

    CAIRN_ASSIGN_OR_RETURN(Stmt * p, c.Prepare("SELECT run, key, value FROM params WHERE run IN "
                                               "(SELECT value FROM json_each(?))"));
    p->Bind(1, ids);
    while (p->Step()) {
      if (Run* r = run_of(p->Int(0))) r->data.params.push_back({p->Str(1), p->Str(2)});
    }
    CAIRN_RETURN_IF_ERROR(p->status());

    CAIRN_ASSIGN_OR_RETURN(Stmt * t, c.Prepare("SELECT run, key, value FROM tags WHERE run IN "
                                               "(SELECT value FROM json_each(?))"));
    t->Bind(1, ids);
    while (t->Step()) {
      if (Run* r = run_of(t->Int(0))) r->data.tags.push_back({t->Str(1), t->Str(2)});
    }
    CAIRN_RETURN_IF_ERROR(t->status());
    // Each run's metrics, params and tags in key order; sorting a few per run is cheaper than
    // having SQLite sort the rows of all runs.
    auto by_key = [](const auto& x, const auto& y) { return x.key < y.key; };
    for (Run& r : *runs) {
      std::sort(r.data.metrics.begin(), r.data.metrics.end(), by_key);
      std::sort(r.data.params.begin(), r.data.params.end(), by_key);
      std::sort(r.data.tags.begin(), r.data.tags.end(), by_key);
    }

    CAIRN_ASSIGN_OR_RETURN(Stmt * in, c.Prepare("SELECT i.run, d.id, d.name, d.digest, "
                                                "d.source_type, d.source, d.schema, d.profile "
                                                "FROM inputs i JOIN datasets d ON d.id = "
                                                "i.dataset WHERE i.run IN (SELECT value FROM "
                                                "json_each(?)) ORDER BY i.run, i.seq"));
    in->Bind(1, ids);
    // (run key, dataset id) -> (run position, input position), for the input tags.
    std::map<std::pair<int64_t, int64_t>, std::pair<size_t, size_t>> where;
    while (in->Step()) {
      auto pos = position.find(in->Int(0));
      if (pos == position.end()) continue;
      Run& r = (*runs)[pos->second];
      core::DatasetInput input;
      input.dataset = {in->Str(2), in->Str(3), in->Str(4), in->Str(5), in->Str(6), in->Str(7)};
      r.inputs.push_back(std::move(input));
      where[{in->Int(0), in->Int(1)}] = {pos->second, r.inputs.size() - 1};
    }
    CAIRN_RETURN_IF_ERROR(in->status());
    if (where.empty()) return Status::Ok();
    CAIRN_ASSIGN_OR_RETURN(Stmt * it, c.Prepare("SELECT run, dataset, key, value FROM input_tags "
                                                "WHERE run IN (SELECT value FROM json_each(?)) "
                                                "ORDER BY key"));
    it->Bind(1, ids);
    while (it->Step()) {
      auto found = where.find({it->Int(0), it->Int(1)});
      if (found == where.end()) continue;
      auto [run_pos, input_pos] = found->second;
      (*runs)[run_pos].inputs[input_pos].tags.push_back({it->Str(2), it->Str(3)});
    }
    return it->status();
  }

  // A set of internal run keys as a bitmap over [first, first + size): keys are dense.
  struct RunSet {
    int64_t first = 0;
    std::vector<uint8_t> bits;
    size_t count = 0;
    bool Has(int64_t key) const {
      return key >= first && key - first < static_cast<int64_t>(bits.size()) &&
             bits[static_cast<size_t>(key - first)] != 0;
    }
    void Add(int64_t key) {
      if (key < first || key - first >= static_cast<int64_t>(bits.size())) return;
      uint8_t& b = bits[static_cast<size_t>(key - first)];
      count += b == 0 ? 1 : 0;
      b = 1;
    }
  };

  // Values of one key read while narrowing: (internal run key, value) for every run that
  // passed the clause. Every run that survives narrowing is among them.
  struct NarrowedKeys {
    std::map<std::string, std::vector<std::pair<int64_t, Metric>>> metrics;
    std::map<std::string, std::vector<std::pair<int64_t, std::string>>> params, tags;
  };

  // Runs that may satisfy the filter, found through the key indexes: the intersection over
  // the clauses SQL can decide exactly as RunMatches does (param and tag equality, numeric
  // metric comparisons on non-NaN values). nullopt when no clause qualifies. This only narrows
  // the runs that are built; RunMatches still decides. The values read are kept in `read`, so
  // that these keys need not be read again.
  Result<std::optional<RunSet>> NarrowRuns(Connection& c, const std::vector<core::Clause>& filter,
                                           NarrowedKeys* read) {
    std::optional<RunSet> allowed;
    RunSet all;  // the range every set spans: all run keys
    bool have_range = false;
    for (const core::Clause& cl : filter) {
      Stmt* s = nullptr;
      bool text = cl.type == core::EntityType::kParam || cl.type == core::EntityType::kTag;
      if (text && cl.op == core::Comparator::kEq) {
        if (cl.type == core::EntityType::kParam) {
          CAIRN_ASSIGN_OR_RETURN(s, c.Prepare("SELECT run, value FROM params WHERE key = ? AND "
                                              "value = ?"));
        } else {
          CAIRN_ASSIGN_OR_RETURN(s, c.Prepare("SELECT run, value FROM tags WHERE key = ? AND "
                                              "value = ?"));
        }
        s->Bind(1, cl.key).Bind(2, cl.text);
      } else if (cl.type == core::EntityType::kMetric) {
        const char* sql = MetricNarrowingSql(cl.op);
        if (sql == nullptr) continue;
        CAIRN_ASSIGN_OR_RETURN(s, c.Prepare(sql));
        s->Bind(1, cl.key).Bind(2, cl.number);
      } else {
        continue;
      }
      if (!have_range) {
        CAIRN_ASSIGN_OR_RETURN(Stmt * r, c.Prepare("SELECT MIN(id), MAX(id) FROM runs"));
        if (r->Step() && !r->IsNull(0)) {
          all.first = r->Int(0);
          all.bits.assign(static_cast<size_t>(r->Int(1) - r->Int(0) + 1), 0);
        }
        CAIRN_RETURN_IF_ERROR(r->status());
        have_range = true;
      }
      RunSet match{all.first, std::vector<uint8_t>(all.bits.size(), 0), 0};
      std::vector<std::pair<int64_t, Metric>> metrics;
      std::vector<std::pair<int64_t, std::string>> texts;
      while (s->Step()) {
        int64_t run = s->Int(0);
        if (allowed && !allowed->Has(run)) continue;
        match.Add(run);
        if (text) {
          texts.emplace_back(run, s->Str(1));
        } else {
          metrics.emplace_back(run, ReadMetricPoint(*s, 1, cl.key));
        }
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      if (cl.type == core::EntityType::kMetric) read->metrics[cl.key] = std::move(metrics);
      if (cl.type == core::EntityType::kParam) read->params[cl.key] = std::move(texts);
      if (cl.type == core::EntityType::kTag) read->tags[cl.key] = std::move(texts);
      allowed = std::move(match);
    }
    return allowed;
  }

  // A search ordered first by a metric can usually stop early. Walking that metric's values in
  // the order asked for (then its NaNs, which sort after every number), the page is settled once
  // offset + max_results runs have matched and every run tied with the last of them is in:
  // whatever comes later sorts after all of those. Each run walked is checked with a few point
  // lookups. Returns the matched runs, loaded as LoadSearchCandidates loads them, or nullopt
  // when the walk does not settle within its budget (a filter few runs pass, or a page that
  // reaches the runs without the metric); the full search answers then.
  Result<std::optional<std::vector<Run>>> WalkMetricOrder(Connection& c,
                                                          const RunSearchQuery& query) {
    using Walked = std::optional<std::vector<Run>>;
    if (query.order.empty() || query.order[0].type != core::EntityType::kMetric) return Walked();
    for (const core::Clause& cl : query.filter) {
      if (cl.type == core::EntityType::kDataset) return Walked();
    }
    for (const core::OrderKey& o : query.order) {
      if (o.type == core::EntityType::kDataset) return Walked();
    }
    std::vector<int64_t> experiments;
    for (const std::string& exp : query.experiment_ids) {
      int64_t id = 0;
      if (ParseExperimentId(exp, &id)) experiments.push_back(id);
    }
    // The keys each walked run needs besides the walked metric.
    const std::string& walked_key = query.order[0].key;
    std::set<std::string> metric_keys, param_keys, tag_keys;
    auto want = [&](core::EntityType type, const std::string& key) {
      if (type == core::EntityType::kMetric && key != walked_key) metric_keys.insert(key);
      if (type == core::EntityType::kParam) param_keys.insert(key);
      if (type == core::EntityType::kTag) tag_keys.insert(key);
      if (type == core::EntityType::kAttribute && key == "run_name") {
        tag_keys.insert(std::string(core::kRunNameTag));
      }
    };
    for (const core::Clause& cl : query.filter) want(cl.type, cl.key);
    for (const core::OrderKey& o : query.order) want(o.type, o.key);

    // Loads run `key` for matching; false when it is outside the query's experiments or view.
    auto load = [&](int64_t key, Run* run) -> Result<bool> {
      CAIRN_ASSIGN_OR_RETURN(Stmt * r, c.Prepare("SELECT id, run_uuid, experiment_id, name, "
                                                 "user_id, status, start_time, end_time, "
                                                 "artifact_uri, lifecycle_stage FROM runs "
                                                 "WHERE id = ?"));
      r->Bind(1, key);
      if (!r->Step()) return r->status().ok() ? Result<bool>(false) : r->status();
      if (std::find(experiments.begin(), experiments.end(), r->Int(2)) == experiments.end()) {
        return false;
      }
      ReadRunInfo(*r, &run->info);
      if (!core::StageVisible(run->info.lifecycle_stage, query.view)) return false;
      for (const std::string& k : metric_keys) {
        CAIRN_ASSIGN_OR_RETURN(Stmt * m, c.Prepare("SELECT step, timestamp, is_nan, value FROM "
                                                   "latest_metrics WHERE run = ? AND key = ?"));
        m->Bind(1, key).Bind(2, k);
        if (m->Step()) run->data.metrics.push_back(ReadMetricPoint(*m, 0, k));
        CAIRN_RETURN_IF_ERROR(m->status());
      }
      // Params and tags: one value per (run, key).
      auto read_values = [&](const char* sql, const std::set<std::string>& keys,
                             auto* out) -> Status {
        for (const std::string& k : keys) {
          CAIRN_ASSIGN_OR_RETURN(Stmt * v, c.Prepare(sql));
          v->Bind(1, key).Bind(2, k);
          if (v->Step()) out->push_back({k, v->Str(0)});
          CAIRN_RETURN_IF_ERROR(v->status());
        }
        return Status::Ok();
      };
      CAIRN_RETURN_IF_ERROR(read_values("SELECT value FROM params WHERE run = ? AND key = ?",
                                        param_keys, &run->data.params));
      CAIRN_RETURN_IF_ERROR(read_values("SELECT value FROM tags WHERE run = ? AND key = ?",
                                        tag_keys, &run->data.tags));
      return true;
    };

    const size_t need = static_cast<size_t>(std::max<int64_t>(0, query.offset) +
                                            query.max_results);
    // A walk longer than this costs more than reading every run once.
    const size_t budget = 4 * need + 2000;
    size_t walked = 0;
    std::vector<Run> matched;
    const char* values_sql = query.order[0].ascending
                                 ? "SELECT run, step, timestamp, is_nan, value FROM "
                                   "latest_metrics WHERE key = ? AND is_nan = 0 ORDER BY value"
                                 : "SELECT run, step, timestamp, is_nan, value FROM "
                                   "latest_metrics WHERE key = ? AND is_nan = 0 ORDER BY value "
                                   "DESC";
    const char* nans_sql = "SELECT run, step, timestamp, is_nan, value FROM latest_metrics "
                           "WHERE key = ? AND is_nan = 1";
    for (const char* sql : {values_sql, nans_sql}) {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare(sql));
      s->Bind(1, walked_key);
      std::optional<double> last;  // the walked value of the last run that matched
      while (s->Step()) {
        Metric point = ReadMetricPoint(*s, 1, walked_key);
        // NaNs all tie with one another, so once reached they are read to the end.
        if (matched.size() >= need && !std::isnan(point.value) && point.value != *last) {
          return Walked(std::move(matched));
        }
        if (++walked > budget) return Walked();
        Run run;
        CAIRN_ASSIGN_OR_RETURN(bool visible, load(s->Int(0), &run));
        if (!visible) continue;
        run.data.metrics.push_back(point);
        if (!core::RunMatches(run, query.filter)) continue;
        last = point.value;
        matched.push_back(std::move(run));
      }
      CAIRN_RETURN_IF_ERROR(s->status());
      if (matched.size() >= need) return Walked(std::move(matched));
    }
    return Walked();  // the page reaches the runs without the metric
  }

  // Loads the runs visible to the query with just the metrics, params, tags and inputs its
  // filter and order refer to, so that matching and sorting need no further queries.
  Result<std::vector<Run>> LoadSearchCandidates(Connection& c, const RunSearchQuery& query) {
    NarrowedKeys narrowed;
    CAIRN_ASSIGN_OR_RETURN(std::optional<RunSet> allowed, NarrowRuns(c, query.filter, &narrowed));
    std::vector<Run> runs;
    std::vector<int64_t> keys;  // keys[i] is the internal key of runs[i]
    if (allowed) {
      runs.reserve(allowed->count);
    } else {
      CAIRN_ASSIGN_OR_RETURN(Stmt * n, c.Prepare("SELECT COUNT(*) FROM runs"));
      if (n->Step()) runs.reserve(static_cast<size_t>(n->Int(0)));
      CAIRN_RETURN_IF_ERROR(n->status());
    }
    // Attributes beyond these are read from the runs' rows.
    auto lean = [](core::EntityType type, const std::string& key) {
      return type != core::EntityType::kAttribute || key == "run_id" || key == "start_time";
    };
    const bool whole_info =
        !std::all_of(query.filter.begin(), query.filter.end(),
                     [&](const core::Clause& cl) { return lean(cl.type, cl.key); }) ||
        !std::all_of(query.order.begin(), query.order.end(),
                     [&](const core::OrderKey& o) { return lean(o.type, o.key); });
    std::vector<int64_t> experiments;
    for (const std::string& exp : query.experiment_ids) {
      int64_t id = 0;
      if (!ParseExperimentId(exp, &id)) continue;
      if (std::find(experiments.begin(), experiments.end(), id) != experiments.end()) continue;
      experiments.push_back(id);
      // Unless the query looks at other attributes, the covering index runs_by_experiment
      // holds all that matching and ordering need: the id, the stage and the start time.
      CAIRN_ASSIGN_OR_RETURN(
          Stmt * s, c.Prepare(whole_info ? "SELECT id, run_uuid, experiment_id, name, user_id, "
                                           "status, start_time, end_time, artifact_uri, "
                                           "lifecycle_stage FROM runs WHERE experiment_id = ?"
                                         : "SELECT id, run_uuid, lifecycle_stage, start_time "
                                           "FROM runs WHERE experiment_id = ?"));
      s->Bind(1, id);
      const int stage_col = whole_info ? 9 : 2;
      while (s->Step()) {
        if (allowed && !allowed->Has(s->Int(0))) continue;
        core::LifecycleStage stage = LifecycleStage::kActive;
        core::ParseLifecycleStage(s->Text(stage_col), &stage);
        if (!core::StageVisible(stage, query.view)) continue;
        Run& run = runs.emplace_back();
        if (whole_info) {
          keys.push_back(ReadRunInfo(*s, &run.info));
          continue;
        }
        keys.push_back(s->Int(0));
        run.info.run_id = s->Str(1);
        run.info.experiment_id = std::to_string(id);
        run.info.lifecycle_stage = stage;
        run.info.start_time = s->Int(3);
      }
      CAIRN_RETURN_IF_ERROR(s->status());
    }
    if (runs.empty()) return runs;
    // Internal keys of runs are dense integers, so a vector maps them back to positions.
    auto [lo, hi] = std::minmax_element(keys.begin(), keys.end());
    int64_t base = *lo;
    std::vector<int32_t> slot(static_cast<size_t>(*hi - base + 1), -1);
    for (size_t i = 0; i < keys.size(); ++i) slot[keys[i] - base] = static_cast<int32_t>(i);
    auto run_at = [&](int64_t key) -> Run* {
      if (key < base || key - base >= static_cast<int64_t>(slot.size())) return nullptr;
      int32_t i = slot[key - base];
      return i < 0 ? nullptr : &runs[static_cast<size_t>(i)];
    };

    std::set<std::string> metric_keys, param_keys, tag_keys;
    bool need_inputs = false;
    auto want = [&](core::EntityType type, const std::string& key) {
      switch (type) {
        case core::EntityType::kMetric: metric_keys.insert(key); break;
        case core::EntityType::kParam: param_keys.insert(key); break;
        case core::EntityType::kTag: tag_keys.insert(key); break;
        case core::EntityType::kDataset: need_inputs = true; break;
        case core::EntityType::kAttribute:
          if (key == "run_name") tag_keys.insert(std::string(core::kRunNameTag));
          break;
      }
    };
    for (const core::Clause& cl : query.filter) want(cl.type, cl.key);
    for (const core::OrderKey& o : query.order) want(o.type, o.key);

    for (const std::string& k : metric_keys) {
      if (auto it = narrowed.metrics.find(k); it != narrowed.metrics.end()) {
        for (auto& [key, m] : it->second) {
          if (Run* r = run_at(key)) r->data.metrics.push_back(std::move(m));
        }
        continue;
      }
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT run, step, timestamp, is_nan, value "
                                                 "FROM latest_metrics WHERE key = ?"));
      s->Bind(1, k);
      while (s->Step()) {
        if (Run* r = run_at(s->Int(0))) r->data.metrics.push_back(ReadMetricPoint(*s, 1, k));
      }
      CAIRN_RETURN_IF_ERROR(s->status());
    }
    for (const std::string& k : param_keys) {
      if (auto it = narrowed.params.find(k); it != narrowed.params.end()) {
        for (auto& [key, v] : it->second) {
          if (Run* r = run_at(key)) r->data.params.push_back({k, std::move(v)});
        }
        continue;
      }
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT run, value FROM params WHERE key = ?"));
      s->Bind(1, k);
      while (s->Step()) {
        if (Run* r = run_at(s->Int(0))) r->data.params.push_back({k, s->Str(1)});
      }
      CAIRN_RETURN_IF_ERROR(s->status());
    }
    for (const std::string& k : tag_keys) {
      if (auto it = narrowed.tags.find(k); it != narrowed.tags.end()) {
        for (auto& [key, v] : it->second) {
          if (Run* r = run_at(key)) r->data.tags.push_back({k, std::move(v)});
        }
        continue;
      }
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT run, value FROM tags WHERE key = ?"));
      s->Bind(1, k);
      while (s->Step()) {
        if (Run* r = run_at(s->Int(0))) r->data.tags.push_back({k, s->Str(1)});
      }
      CAIRN_RETURN_IF_ERROR(s->status());
    }
    if (need_inputs) {
      CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT i.run, d.name, d.digest, t.value FROM "
                                                 "inputs i JOIN datasets d ON d.id = i.dataset "
                                                 "LEFT JOIN input_tags t ON t.run = i.run AND "
                                                 "t.dataset = i.dataset AND t.key = "
                                                 "'mlflow.data.context'"));
      while (s->Step()) {
        Run* r = run_at(s->Int(0));
        if (r == nullptr) continue;
        core::DatasetInput input;
        input.dataset.name = s->Str(1);
        input.dataset.digest = s->Str(2);
        if (!s->IsNull(3)) input.tags.push_back({std::string(core::kDatasetContextTag), s->Str(3)});
        r->inputs.push_back(std::move(input));
      }
      CAIRN_RETURN_IF_ERROR(s->status());
    }
    if (!query.filter.empty()) {
      runs.erase(std::remove_if(runs.begin(), runs.end(),
                                [&](const Run& run) { return !core::RunMatches(run, query.filter); }),
                 runs.end());
    }
    return runs;
  }

  // Artifact files whose path starts with `prefix` ("" selects all), in path order.
  Result<Stmt*> SelectUnder(Connection& c, const std::string& prefix) {
    CAIRN_ASSIGN_OR_RETURN(Stmt * s, c.Prepare("SELECT path, digest, size FROM artifacts WHERE "
                                               "path >= ? AND (? OR path < ?) ORDER BY path"));
    std::string upper = prefix;
    if (!upper.empty()) upper.back() = static_cast<char>(upper.back() + 1);
    s->Bind(1, prefix).Bind(2, prefix.empty() ? 1 : 0).Bind(3, upper);
    return s;
  }

  std::string path_;
  StoreOptions options_;
  std::unique_ptr<Connection> writer_;
  std::thread writer_thread_;
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::unique_ptr<WriteOp>> queue_;
  bool stop_ = false;
  int64_t logged_points_ = kCompactPoints;  // writer thread only; compact once at start
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

}  // namespace

Result<std::unique_ptr<MetadataStore>> OpenSqliteMetadataStore(const std::string& path,
                                                               const StoreOptions& options) {
  auto store = std::make_unique<SqliteStore>(path, options);
  CAIRN_RETURN_IF_ERROR(store->Init().WithContext("opening " + path));
  return std::unique_ptr<MetadataStore>(std::move(store));
}

}  // namespace cairn::store
