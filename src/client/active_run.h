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
//
// An attached run need not be on the server yet: when the server was unreachable as `cairn
// run` started, the wrapper chose the run id itself and creates the run once the server is
// back (at its next heartbeat). Start then attaches all the same, and what is logged waits in
// the queue, in order, until the run exists.
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
  // Attaching looks the run up once, without retries; when the server cannot be reached or
  // has no such run yet, the run is attached with what the environment tells (experiment_id
  // from $MLFLOW_EXPERIMENT_ID, no artifact URI) and Start succeeds. Attaching ignores
  // experiment and run_name. Other errors (a bad tracking URI, an experiment that cannot be
  // created) fail Start.
  static Result<std::unique_ptr<ActiveRun>> Start(const Options& options);
  // Ends the run FINISHED unless End was called.
  ~ActiveRun();
  ActiveRun(const ActiveRun&) = delete;
  ActiveRun& operator=(const ActiveRun&) = delete;

  const std::string& run_id() const { return info_.run_id; }
  // As of Start: empty when attached to a run the server did not have yet and
  // $MLFLOW_EXPERIMENT_ID was unset.
  const std::string& experiment_id() const { return info_.experiment_id; }
  // True when the run belongs to `cairn run` (it ends the run, not this object).
  bool attached() const { return attached_; }

  // Queue one value; the timestamp is now. Thread-safe, never blocks on the network.
  void LogMetric(const std::string& key, double value, int64_t step = 0);
  void LogParam(const std::string& key, const std::string& value);
  void SetTag(const std::string& key, const std::string& value);
  // Uploads a file as an artifact now (after sending what is queued). An attached run that
  // is not on the server yet is NotFound (try again later); its queued data is kept.
  Status LogArtifact(const std::string& local_path, const std::string& artifact_path);
  // Sends everything queued. Returns the first refusal from the server since the last Flush
  // (that data is dropped), else why data is still queued: the server unreachable
  // (Unavailable), or an attached run not on the server yet (NotFound). Queued data is tried
  // again every second while this object lives.
  Status Flush();
  // Flushes and, unless attached, ends the run with `status`. Idempotent.
  Status End(core::RunStatus status = core::RunStatus::kFinished);

 private:
  ActiveRun(std::unique_ptr<TrackingClient> client, core::RunInfo info, bool attached);
  void Loop();
  // Sends one batch of what is queued; false when the queue was empty or the batch was kept
  // for a later try.
  bool SendSome(std::unique_lock<std::mutex>& lock);

  std::unique_ptr<TrackingClient> client_;
  const core::RunInfo info_;  // as of Start
  bool attached_;
  bool ended_ = false;

  std::mutex mu_;
  std::condition_variable cv_;        // wakes the sender
  std::condition_variable drained_;   // wakes Flush once the queue is sent
  std::deque<core::Metric> metrics_;
  std::deque<core::Param> params_;
  std::deque<core::Tag> tags_;
  std::string artifact_uri_;  // info_.artifact_uri, or learnt later by LogArtifact
  int sending_ = 0;  // batches in flight
  bool flush_ = false;  // Flush waits: send now
  Status undelivered_;  // why the last send kept its batch queued; ok once one is delivered
  uint64_t passes_ = 0;  // sending passes completed
  bool stop_ = false;
  Status error_;  // the first refusal since the last Flush
  std::thread thread_;
};

}  // namespace cairn::client
