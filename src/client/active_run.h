// The C++ client for training code: start (or attach to) a run and log into it.
//
//   cairn::client::ActiveRun::Options options;
//   options.experiment = "mnist";
//   auto run = cairn::client::ActiveRun::Start(options);
//   for (int step = 0; step < steps; ++step) (*run)->LogMetric("loss", loss, step);
//   (*run)->End();  // FINISHED; the destructor ends it too
//
// Metrics, params and tags are queued and sent by a background thread in log-batch requests
// within MLflow's limits (1000 metrics, 100 params, 100 tags), about once a second and
// whenever 1000 items wait, so logging never waits for the network. Under `cairn run`
// (CAIRN_RUN_ID or MLFLOW_RUN_ID set) Start attaches to the wrapper's run instead of creating
// one, and End only flushes: the wrapper ends the run by the command's exit code.
// Errors from the server are kept and returned by the next Flush or End.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/tracking_client.h"
#include "core/model.h"
#include "util/status.h"

namespace cairn::client {

class ActiveRun {
 public:
  struct Options {
    std::string tracking_uri;  // empty: ResolveTrackingUri("")
    std::string experiment;    // a name, created when missing; empty: Default ("0")
    std::string run_name;
    std::vector<core::Param> params;
    std::vector<core::Tag> tags;
  };

  // Creates the run (or attaches to the run of `cairn run`) and starts the sending thread.
  static Result<std::unique_ptr<ActiveRun>> Start(const Options& options);
  // Ends the run FINISHED unless End was called.
  ~ActiveRun();
  ActiveRun(const ActiveRun&) = delete;
  ActiveRun& operator=(const ActiveRun&) = delete;

  const std::string& run_id() const { return info_.run_id; }
  const std::string& experiment_id() const { return info_.experiment_id; }
  // True when the run belongs to `cairn run` (it ends the run, not this object).
  bool attached() const { return attached_; }

  // Queue one value; the timestamp is now. Thread-safe, never blocks on the network.
  void LogMetric(const std::string& key, double value, int64_t step = 0);
  void LogParam(const std::string& key, const std::string& value);
  void SetTag(const std::string& key, const std::string& value);
  // Uploads a file as an artifact now (after sending what is queued).
  Status LogArtifact(const std::string& local_path, const std::string& artifact_path);
  // Sends everything queued; the first error since the last Flush, if any.
  Status Flush();
  // Flushes and, unless attached, ends the run with `status`. Idempotent.
  Status End(core::RunStatus status = core::RunStatus::kFinished);

 private:
  ActiveRun(std::unique_ptr<TrackingClient> client, core::RunInfo info, bool attached);
  void Loop();
  // Sends one batch of what is queued; false when the queue was empty.
  bool SendSome(std::unique_lock<std::mutex>& lock);

  std::unique_ptr<TrackingClient> client_;
  core::RunInfo info_;
  bool attached_;
  bool ended_ = false;

  std::mutex mu_;
  std::condition_variable cv_;        // wakes the sender
  std::condition_variable drained_;   // wakes Flush once the queue is sent
  std::deque<core::Metric> metrics_;
  std::deque<core::Param> params_;
  std::deque<core::Tag> tags_;
  int sending_ = 0;  // batches in flight
  bool flush_ = false;  // Flush waits: send now
  uint64_t passes_ = 0;  // sending passes completed
  bool stop_ = false;
  Status error_;
  std::thread thread_;
};

}  // namespace cairn::client
