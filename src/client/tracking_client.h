// The C++ client of a tracking server: the calls the CLI and users' C++ training code make,
// over the MLflow REST API, so it logs to cairn or to any MLflow server. Failures come back as
// Status: the server's MLflow error code mapped to a StatusCode with its message, or
// kUnavailable when the server cannot be reached (after the retries below).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "util/status.h"

namespace cairn::client {

struct ClientOptions {
  // http://host:port, optionally with a path prefix (http://host/mlflow).
  std::string tracking_uri = "http://127.0.0.1:5000";
  int timeout_seconds = 30;
  // Connection failures and 5xx answers are retried this many times, with backoff.
  int retries = 3;
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

  // The id of the experiment with this name, created when there is none.
  Result<std::string> GetOrCreateExperiment(const std::string& name);
  Result<core::Experiment> GetExperiment(const std::string& experiment_id);

  // Creates a run in RUNNING state; `tags` include mlflow.runName when a name is wanted.
  Result<core::RunInfo> CreateRun(const std::string& experiment_id, const std::string& run_name,
                                  int64_t start_time, const std::vector<core::Tag>& tags);
  Result<core::Run> GetRun(const std::string& run_id);
  Status LogBatch(const std::string& run_id, const std::vector<core::Metric>& metrics,
                  const std::vector<core::Param>& params, const std::vector<core::Tag>& tags);
  Status SetTag(const std::string& run_id, const std::string& key, const std::string& value);
  Status UpdateRun(const std::string& run_id, core::RunStatus status,
                   std::optional<int64_t> end_time);
  // Appends chunks to the run's console log (cairn API; see docs/api/cairn.md); returns the
  // log's length. Idempotent: chunks the server already holds are skipped.
  Result<int64_t> AppendRunLog(const std::string& run_id,
                               const std::vector<core::ConsoleChunk>& chunks);
  struct LogPage {
    std::string text;         // the log's bytes from the offset asked for
    int64_t next_offset = 0;  // where the next read continues
    core::RunStatus run_status = core::RunStatus::kRunning;
  };
  Result<LogPage> ReadRunLog(const std::string& run_id, int64_t offset);

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
