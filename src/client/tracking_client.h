// The C++ client of a tracking server: the calls the CLI and users' C++ training code make,
// over the MLflow REST API, so it logs to cairn or to any MLflow server. Failures come back as
// Status: the server's MLflow error code mapped to a StatusCode with its message, or
// kUnavailable when the server cannot be reached (after the retries below).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/registry.h"
#include "util/status.h"

namespace cairn::client {

// `s` with every byte but letters, digits and -_.~ percent-encoded: a query value or a path
// segment.
std::string PercentEncode(std::string_view s);

struct ClientOptions {
  // http://host:port or https://host:port, optionally with a path prefix (http://host/mlflow).
  std::string tracking_uri = "http://127.0.0.1:5000";
  // PEM file of the certificate authorities an https server's certificate must chain to;
  // empty: $CAIRN_CA_BUNDLE when set, else the system's store.
  std::string ca_cert;
  // Connecting, and any stall of a request (no byte moving), may take at most this long.
  int timeout_seconds = 30;
  // Connection failures and 5xx answers are retried this many times, with backoff.
  int retries = 3;
  // The Authorization header's value; empty: found as client/credentials.h says ($CAIRN_TOKEN,
  // MLflow's variables, the credentials file).
  std::string authorization;
};

// The tracking URI a command uses: the flag when given, else $CAIRN_TRACKING_URI, else
// $MLFLOW_TRACKING_URI, else http://127.0.0.1:5000.
std::string ResolveTrackingUri(const std::string& flag);

class TrackingClient {
 public:
  // Checks the URI's form; no request is made yet.
  static Result<std::unique_ptr<TrackingClient>> Create(const ClientOptions& options);
  ~TrackingClient();

  const std::string& tracking_uri() const;
  // Any JSON call: `method` on `path` (from the root of the API, e.g. "/api/cairn/v1/tokens",
  // with any query), `body` a JSON text for writes ("" for GET). Returns the answer's JSON text.
  Result<std::string> CallJson(const std::string& method, const std::string& path,
                               const std::string& body);
  // PUT: the file at `local_path` as the raw body of a request to `path` (as for CallJson).
  // Returns the answer's JSON text.
  Result<std::string> PutFile(const std::string& path, const std::string& local_path);
  // The same as a POST, which stops where it is once `cancel` (optional) is set: then
  // kFailedPrecondition, and the request is not retried.
  Result<std::string> PostFile(const std::string& path, const std::string& local_path,
                               const std::atomic<bool>* cancel = nullptr);
  // GET: the answer to `path` (as for CallJson) written into the file at `local_path`, which is
  // replaced; an error answer leaves what it held undefined. With `sha256`, it is set to the
  // SHA-256 (hex) of the bytes written, hashed as they arrive.
  Status GetToFile(const std::string& path, const std::string& local_path,
                   std::string* sha256 = nullptr);
  // The Authorization header it sends ("" for none).
  const std::string& authorization() const;

  // The id of the experiment with this name, created when there is none.
  Result<std::string> GetOrCreateExperiment(const std::string& name);
  Result<core::Experiment> GetExperiment(const std::string& experiment_id);

  // Creates a run in RUNNING state; `tags` include mlflow.runName when a name is wanted.
  Result<core::RunInfo> CreateRun(const std::string& experiment_id, const std::string& run_name,
                                  int64_t start_time, const std::vector<core::Tag>& tags);
  // Creates a run under an id the client chose (cairn API, POST /api/cairn/v1/runs): in the
  // experiment `experiment_id`, else the one named `experiment_name` (created when missing),
  // else Default. A run that exists already is returned as it is. Fills run_id,
  // experiment_id and artifact_uri. `scheduled`: the run starts SCHEDULED, not RUNNING.
  Result<core::RunInfo> CreateRunWithId(const std::string& run_id, const std::string& experiment_id,
                                        const std::string& experiment_name,
                                        const std::string& run_name, int64_t start_time,
                                        const std::vector<core::Tag>& tags,
                                        bool scheduled = false);
  Result<core::Run> GetRun(const std::string& run_id);
  // Every value of the run's metric `key` (metrics/get-history, all pages), as the server
  // orders them.
  Result<std::vector<core::Metric>> GetMetricHistory(const std::string& run_id,
                                                     const std::string& key);

  // --- Model registry ----------------------------------------------------------------------
  // Registered models matching MLflow's filter, up to max_results (paging as needed).
  Result<std::vector<core::RegisteredModel>> SearchRegisteredModels(const std::string& filter,
                                                                    int64_t max_results);
  // With its latest version in each stage and its aliases.
  Result<core::RegisteredModel> GetRegisteredModel(const std::string& name);
  Result<core::ModelVersion> GetModelVersion(const std::string& name, const std::string& version);
  Result<core::ModelVersion> GetModelVersionByAlias(const std::string& name,
                                                    const std::string& alias);
  // One page of versions matching the filter, in the server's default order (newest first).
  Result<std::vector<core::ModelVersion>> SearchModelVersions(const std::string& filter,
                                                              int64_t max_results);
  // AlreadyExists when a model has that name.
  Status CreateRegisteredModel(const std::string& name);
  // A new version of `name` made from `source` (runs:/RUN_ID/PATH), linked to `run_id`.
  Result<core::ModelVersion> CreateModelVersion(const std::string& name, const std::string& source,
                                                const std::string& run_id);
  Status SetModelAlias(const std::string& name, const std::string& alias,
                       const std::string& version);
  // cairn's rollback: the version the alias names afterwards (nullopt: none).
  Result<std::optional<int64_t>> RollbackModelAlias(const std::string& name,
                                                    const std::string& alias);
  // Every move of the alias ("" for all of the model's), oldest first.
  Result<std::vector<core::AliasMove>> ModelAliasHistory(const std::string& name,
                                                         const std::string& alias);
  Status LogBatch(const std::string& run_id, const std::vector<core::Metric>& metrics,
                  const std::vector<core::Param>& params, const std::vector<core::Tag>& tags);
  Status SetTag(const std::string& run_id, const std::string& key, const std::string& value);
  // kNotFound when the run has no such tag (MLflow's RESOURCE_DOES_NOT_EXIST).
  Status DeleteTag(const std::string& run_id, const std::string& key);
  // Records the datasets the run used (runs/log-inputs).
  Status LogInputs(const std::string& run_id, const std::vector<core::DatasetInput>& inputs);
  Status UpdateRun(const std::string& run_id, core::RunStatus status,
                   std::optional<int64_t> end_time);
  // Appends chunks to the run's console log (cairn API; see docs/api/cairn.md); returns the
  // log's length. Idempotent: chunks the server already holds are skipped.
  // Many runs' records in one request (cairn's POST runs/records; the records are JSON
  // objects, each with run_id and op), applied in order. Returns the records the server did
  // not take, by index, with why.
  // Of `digests` (at most 100,000), the blobs this caller must send before naming them in a
  // run's artifacts (cairn's POST blobs/missing).
  Result<std::vector<std::string>> MissingBlobs(const std::vector<std::string>& digests);
  // Sends the file at `local_path`, whose SHA-256 is `digest`, into the server's content store.
  Status SendBlob(const std::string& digest, const std::string& local_path);
  struct RecordFailure {
    size_t index = 0;
    Status status;
  };
  Result<std::vector<RecordFailure>> ApplyRunRecords(const std::vector<std::string>& records);
  Result<int64_t> AppendRunLog(const std::string& run_id,
                               const std::vector<core::ConsoleChunk>& chunks);
  struct LogPage {
    std::string text;         // the log's bytes from the offset asked for
    int64_t next_offset = 0;  // where the next read continues
    core::RunStatus run_status = core::RunStatus::kRunning;
  };
  Result<LogPage> ReadRunLog(const std::string& run_id, int64_t offset);

  // One page of experiments/search. `max_results` 0 leaves the page size to the server
  // (MLflow's default is 1000); an empty `page_token` asks for the first page.
  struct ExperimentSearch {
    std::string filter;  // MLflow's experiment filter language, passed through unchanged
    core::ViewType view = core::ViewType::kActiveOnly;
    std::vector<std::string> order_by;
    int64_t max_results = 0;
    std::string page_token;
  };
  struct ExperimentPage {
    std::vector<core::Experiment> experiments;
    std::string next_page_token;  // empty on the last page
  };
  // A bad filter or order_by is InvalidArgument with the server's message, which quotes it.
  Result<ExperimentPage> SearchExperiments(const ExperimentSearch& search);
  // The experiment with this name; NotFound when there is none. Unlike GetOrCreateExperiment
  // it never creates one.
  Result<core::Experiment> GetExperimentByName(const std::string& name);

  // One page of runs/search over `experiment_ids` (runs of other experiments never match; an
  // empty list matches nothing). Runs carry their params, tags and the latest value of each
  // metric. Errors as for SearchExperiments.
  struct RunSearch {
    std::vector<std::string> experiment_ids;
    std::string filter;  // MLflow's run filter language, passed through unchanged
    core::ViewType view = core::ViewType::kActiveOnly;
    std::vector<std::string> order_by;
    int64_t max_results = 0;  // 0: the server's default page size
    std::string page_token;
  };
  struct RunPage {
    std::vector<core::Run> runs;
    std::string next_page_token;  // empty on the last page
  };
  Result<RunPage> SearchRuns(const RunSearch& search);

  // The entries directly under `path` (relative, '/'-separated; empty for the root) of the
  // run's artifacts, as artifacts/list gives them: paths relative to the artifact root, so
  // they can be passed back as `path` or to DownloadArtifact. A path that is a file or does
  // not exist lists nothing; an unknown run is NotFound.
  struct ArtifactFile {
    std::string path;
    bool is_dir = false;
    int64_t file_size = 0;  // 0 for directories
  };
  Result<std::vector<ArtifactFile>> ListArtifacts(const std::string& run_id,
                                                  const std::string& path);
  // The content of the artifact at `artifact_path` of the run whose artifact URI is
  // `artifact_uri`, through the server's artifact proxy. Held in memory: meant for the small
  // records cairn writes (host.json, pylock.toml), not for model files. NotFound when the run
  // has no such artifact; Unimplemented when the URI is not served by the tracking server.
  Result<std::string> DownloadArtifact(const std::string& artifact_uri,
                                       const std::string& artifact_path);

  // Uploads `content` as the artifact at `artifact_path` (relative, '/'-separated) of the run
  // whose artifact URI is `artifact_uri`, through the server's artifact proxy.
  Status UploadArtifact(const std::string& artifact_uri, const std::string& artifact_path,
                        const std::string& content);
  // Same, streaming the file at `local_path`.
  Status UploadArtifactFile(const std::string& artifact_uri, const std::string& artifact_path,
                            const std::string& local_path);

 private:
  struct Impl;
  explicit TrackingClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cairn::client
