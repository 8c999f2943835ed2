// MetadataStore: where experiments, runs, their logged values and the artifact index live.
//
// Backends (memory, SQLite; PostgreSQL later) implement this interface and pass one conformance
// suite (metadata_store_conformance_test.cc). Contracts common to every method:
//  - Thread safety: every method may be called from many threads at once.
//  - Durability: a method that returns OK has committed its effect; a crash afterwards does not
//    lose it.
//  - Errors: kNotFound when a named experiment or run does not exist, kAlreadyExists on a
//    duplicate name, kInvalidArgument when the request conflicts with stored data (a changed
//    param value), kUnavailable when the backend cannot be reached or written.
// Validation of user input (sizes, key names, lifecycle rules) belongs to the services in
// core/; stores only enforce what they must to stay consistent.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/model.h"
#include "core/search.h"
#include "store/dataset_store.h"
#include "store/identity_store.h"
#include "store/queue_store.h"
#include "store/registry_store.h"
#include "util/status.h"

namespace cairn::store {

struct RunSearchQuery {
  std::vector<std::string> experiment_ids;
  core::ViewType view = core::ViewType::kActiveOnly;
  std::vector<core::Clause> filter;
  std::vector<core::OrderKey> order;
  int64_t offset = 0;
  int64_t max_results = 1000;
};

struct MetricHistoryQuery {
  std::string run_id;
  std::string key;
  // Inclusive step range; unset means unbounded.
  std::optional<int64_t> min_step;
  std::optional<int64_t> max_step;
  // Only points after this one in (step, timestamp, value) order: how a long history is read
  // in batches without re-skipping what was read. The offset counts from there.
  std::optional<core::Metric> after;
  int64_t offset = 0;
  // At most this many points; 0 means all.
  int64_t max_results = 0;
};

// An artifact file as the index records it: where its bytes are in the ContentStore.
struct ArtifactFile {
  std::string path;  // full artifact path, e.g. "1/<run>/artifacts/model/weights.bin"
  std::string digest;
  int64_t size = 0;
};

// One entry of a directory listing: an immediate child of the listed directory.
struct ArtifactEntry {
  std::string name;  // the child's name, without the directory
  bool is_dir = false;
  int64_t size = 0;  // files only
};

// A dataset some run of an experiment used, with the context its input gave it ("" when none):
// what MLflow's UI lists for an experiment (experiments/search-datasets).
struct DatasetSummary {
  std::string experiment_id;
  std::string name;
  std::string digest;
  std::string context;
  bool operator==(const DatasetSummary&) const = default;
};

// What an experiment's active runs add up to (deleted runs are left out).
struct ExperimentRunStats {
  std::string experiment_id;
  int64_t runs = 0;
  int64_t running = 0;        // with status RUNNING
  int64_t last_activity = 0;  // the latest start or end time among them, in ms
};

class MetadataStore {
 public:
  virtual ~MetadataStore() = default;

  // --- Experiments -------------------------------------------------------------------------
  // Assigns the next id. An empty artifact_location becomes "<default root>/<id>".
  virtual Result<std::string> CreateExperiment(const core::Experiment& experiment) = 0;
  virtual Result<core::Experiment> GetExperiment(std::string_view experiment_id) = 0;
  // Looks up among active and deleted experiments.
  virtual Result<core::Experiment> GetExperimentByName(std::string_view name) = 0;
  virtual Result<std::vector<core::Experiment>> ListExperiments(core::ViewType view) = 0;
  virtual Status RenameExperiment(std::string_view experiment_id, std::string_view new_name,
                                  int64_t now) = 0;
  // Deleting an experiment also marks its runs deleted; restoring restores them.
  virtual Status SetExperimentStage(std::string_view experiment_id, core::LifecycleStage stage,
                                    int64_t now) = 0;
  virtual Status SetExperimentTag(std::string_view experiment_id, const core::Tag& tag) = 0;
  // kNotFound when the tag does not exist.
  virtual Status DeleteExperimentTag(std::string_view experiment_id, std::string_view key) = 0;

  // --- Runs --------------------------------------------------------------------------------
  // Stores run.info and run.data.tags (and params, metrics if any). kNotFound when the
  // experiment does not exist, kAlreadyExists when the run id is taken.
  virtual Status CreateRun(const core::Run& run) = 0;
  // The run with its latest metrics, params, tags and dataset inputs.
  virtual Result<core::Run> GetRun(std::string_view run_id) = 0;
  // Just the run's info: cheaper than GetRun when only its state is needed.
  virtual Result<core::RunInfo> GetRunInfo(std::string_view run_id) = 0;
  // Updates status, end_time and run_name where given; the run name also sets the
  // mlflow.runName tag.
  virtual Status UpdateRun(std::string_view run_id, std::optional<core::RunStatus> status,
                           std::optional<int64_t> end_time,
                           std::optional<std::string> run_name) = 0;
  // What UpdateRunAsync changes: each field that is given.
  struct RunUpdate {
    std::optional<core::RunStatus> status;
    std::optional<int64_t> start_time;
    std::optional<int64_t> end_time;
    std::string drop_tag;  // a tag to remove, when the run has it
  };
  // The writes of a server's batch of run records (the records endpoint): each without
  // waiting, as LogBatchAsync, so that a batch commits as one group. The defaults run the
  // waiting call and then `done`.
  virtual void CreateRunAsync(core::Run run, std::function<void(Status)> done) {
    done(CreateRun(run));
  }
  // kNotFound when the run does not exist.
  virtual void UpdateRunAsync(std::string run_id, RunUpdate update,
                              std::function<void(Status)> done) = 0;
  virtual void AppendRunLogAsync(std::string run_id, std::vector<core::ConsoleChunk> chunks,
                                 std::function<void(Status)> done) {
    done(AppendRunLog(run_id, chunks).status());
  }
  virtual Status SetRunStage(std::string_view run_id, core::LifecycleStage stage) = 0;
  // One entry for each experiment that has active runs, in experiment id order (numeric).
  virtual Result<std::vector<ExperimentRunStats>> RunStatsByExperiment() = 0;

  // Appends metrics (exact duplicates dropped), adds params, upserts tags, all or nothing.
  // A param already stored with another value, or a run that is not active, is
  // kInvalidArgument and nothing is written.
  virtual Status LogBatch(std::string_view run_id, const std::vector<core::Metric>& metrics,
                          const std::vector<core::Param>& params,
                          const std::vector<core::Tag>& tags) = 0;
  // LogBatch without waiting for it: `done` gets the same outcome once the batch has committed,
  // on whatever thread commits it, and must neither block nor call into the store. A server
  // answers many writers this way without a thread waiting on each. The default runs LogBatch
  // and calls `done` at once.
  virtual void LogBatchAsync(std::string run_id, std::vector<core::Metric> metrics,
                             std::vector<core::Param> params, std::vector<core::Tag> tags,
                             std::function<void(Status)> done) {
    done(LogBatch(run_id, metrics, params, tags));
  }
  // kNotFound when the run or the tag does not exist.
  virtual Status DeleteRunTag(std::string_view run_id, std::string_view key) = 0;
  // Records dataset inputs; a dataset is identified by (experiment, name, digest) and an input
  // already recorded for the run is not duplicated.
  virtual Status LogInputs(std::string_view run_id,
                           const std::vector<core::DatasetInput>& inputs) = 0;

  // The distinct datasets the experiments' runs used, by experiment, name, digest and context,
  // at most `limit`.
  virtual Result<std::vector<DatasetSummary>> SearchDatasets(
      const std::vector<std::string>& experiment_ids, int64_t limit) = 0;

  // The runs (ids, at most `limit`, in no set order) that recorded an input of the dataset
  // `name` with digest `digest`, in any experiment.
  virtual Result<std::vector<std::string>> RunsUsingDataset(std::string_view name,
                                                            std::string_view digest,
                                                            int64_t limit) = 0;

  // Calls `visit` with each point of the query's page in (step, timestamp, value) order;
  // stops early, with OK, when `visit` returns false. `visit` must not call into the store.
  virtual Status ScanMetricHistory(const MetricHistoryQuery& query,
                                   const std::function<bool(const core::Metric&)>& visit) = 0;
  // The page as a vector (ScanMetricHistory collected).
  Result<std::vector<core::Metric>> GetMetricHistory(const MetricHistoryQuery& query);
  // Runs matching the query, in order, at most max_results from offset.
  virtual Result<std::vector<core::Run>> SearchRuns(const RunSearchQuery& query) = 0;

  // --- Console log of a run -----------------------------------------------------------------
  // Appends chunks, in order, to the run's console log. A chunk names the offset it starts
  // at: a chunk at the log's end is appended; the part of a chunk the log already holds is
  // skipped (a retried upload), so appends are idempotent; a chunk that starts past the end is
  // kFailedPrecondition (a gap) and nothing of the call is written. Returns the
  // log's length afterwards. kNotFound when the run does not exist; the run's state does not
  // matter (a log may arrive after its run ended).
  virtual Result<int64_t> AppendRunLog(std::string_view run_id,
                                       const std::vector<core::ConsoleChunk>& chunks) = 0;
  // The chunks holding the log's bytes from `offset` on, in order, until at least `max_bytes`
  // of data or the end; the first may start before `offset`. Empty at or past the end.
  virtual Result<std::vector<core::ConsoleChunk>> ReadRunLog(std::string_view run_id,
                                                             int64_t offset, int64_t max_bytes) = 0;

  // --- Artifact index ----------------------------------------------------------------------
  // Records (or replaces) the file at file.path; returns the entry it replaced, if any, so
  // that its blob can be collected. kFailedPrecondition when file.path is a directory (files
  // lie under it) or lies under a file.
  virtual Result<std::optional<ArtifactFile>> PutArtifact(const ArtifactFile& file) = 0;
  // PutArtifact for each of `files` in one commit, all or none: the first refusal fails the
  // call and nothing is recorded. Returns every entry replaced.
  virtual Result<std::vector<ArtifactFile>> PutArtifacts(
      const std::vector<ArtifactFile>& files) = 0;
  // kNotFound when no file is recorded at path.
  virtual Result<ArtifactFile> GetArtifact(std::string_view path) = 0;
  // Immediate children of directory `dir` ("" is the root), sorted by name. Empty when the
  // directory holds nothing.
  virtual Result<std::vector<ArtifactEntry>> ListArtifacts(std::string_view dir) = 0;
  // Removes the file at path, or every file under it when it is a directory. Returns the
  // removed files so their blobs can be collected; kNotFound when nothing was there.
  virtual Result<std::vector<ArtifactFile>> DeleteArtifacts(std::string_view path) = 0;
  // Whether any artifact file still references the blob, or the upload ledger
  // (dataset_store.h) remembers it being sent.
  virtual Result<bool> BlobReferenced(std::string_view digest) = 0;
  // BlobReferenced for each of `digests`, read as one snapshot where the backend has them.
  virtual Result<std::vector<bool>> BlobsReferenced(const std::vector<std::string>& digests) {
    std::vector<bool> out;
    out.reserve(digests.size());
    for (const std::string& d : digests) {
      CAIRN_ASSIGN_OR_RETURN(bool referenced, BlobReferenced(d));
      out.push_back(referenced);
    }
    return out;
  }
  // The bytes the metadata itself takes on disk (SQLite: the database file with its WAL);
  // -1 when the backend cannot say.
  virtual int64_t StoredBytes() { return -1; }
  // Every recorded file, a page at a time: up to `limit` files whose paths sort after `after`
  // ("" for the first page), in path order. A walk of the whole index holds no lock between
  // pages.
  virtual Result<std::vector<ArtifactFile>> ListArtifactFiles(std::string_view after,
                                                              int64_t limit) = 0;
  // Calls `visit` with every recorded file, in path order, reading ListArtifactFiles a page at
  // a time, until it returns an error, which this returns.
  Status ForEachArtifactFile(const std::function<Status(ArtifactFile&)>& visit);

  // --- Identity ----------------------------------------------------------------------------
  // Accounts, tokens, permissions and the audit log, kept in the same database; lives as long
  // as this store.
  virtual IdentityStore& identity() = 0;

  // --- Model registry ----------------------------------------------------------------------
  // Registered models, their versions and aliases, in the same database; lives as long as this
  // store.
  virtual RegistryStore& registry() = 0;

  // --- Queues, tasks and agents ----------------------------------------------------------
  // The store's queues (queue_store.h), in the same database.
  virtual QueueStore& queue() = 0;

  // --- Datasets ------------------------------------------------------------------------------
  // Datasets' versions and the upload ledger (dataset_store.h), in the same database.
  virtual DatasetStore& datasets() = 0;
};

struct StoreOptions {
  // Default artifact root for new experiments, e.g. "mlflow-artifacts:".
  std::string default_artifact_root = "mlflow-artifacts:";
  // SQLite: fsync every commit (survives power loss) instead of only at checkpoints (survives
  // a killed process; a power loss may drop the last commits).
  bool sync_every_commit = false;
};

// Opens a store by URI: "memory:" or "sqlite:///path/cairn.db". A SQLite URI may end in
// "?synchronous=full" to fsync every commit (StoreOptions::sync_every_commit).
Result<std::unique_ptr<MetadataStore>> OpenMetadataStore(std::string_view uri,
                                                         const StoreOptions& options);

}  // namespace cairn::store
