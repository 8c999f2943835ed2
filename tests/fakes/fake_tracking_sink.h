// A TrackingSink in memory, for tests of the pipeline tracker: records wait in each run's
// RunRecords until delivered, and delivery applies them to an in-memory "server" whose runs a
// test reads. The server can be taken down (deliveries fail, records wait) and brought back.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "pipeline/tracking_sink.h"

namespace cairn::fakes {

// A run as the server has it.
struct FakeRun {
  std::string run_id;
  std::string experiment;
  std::string experiment_id;
  std::string run_name;
  int64_t start_ms = 0;
  std::map<std::string, std::string> tags;
  std::map<std::string, std::string> params;
  std::string console;
  std::map<std::string, std::string> artifacts;  // path -> content
  struct Registered {
    std::string model, source, alias;
    std::vector<client::RegisteredFile> files;
  };
  std::vector<Registered> registered;     // model versions made from the run, in order
  std::optional<core::RunStatus> status;  // set by the run's end
};

class FakeTrackingSink : public pipeline::TrackingSink {
 public:
  struct Server;

  FakeTrackingSink();
  ~FakeTrackingSink() override;

  const std::string& tracking_uri() const override { return uri_; }
  Result<std::unique_ptr<pipeline::RunRecords>> OpenRun(const std::string& run_id) override;
  Result<std::string> ExperimentOf(const std::string& run_id) override;

  // A handle on the server that stays valid after the sink is handed to a Tracker.
  std::shared_ptr<Server> server() const { return server_; }

 private:
  std::string uri_ = "fake://tracking";
  std::shared_ptr<Server> server_;
};

struct FakeTrackingSink::Server {
  void SetUp(bool up);
  // The runs delivered so far, by run id.
  std::map<std::string, FakeRun> Runs();
  // Records appended but not delivered, over every run.
  size_t Pending();
  // Runs whose records were removed (delivered and done with).
  std::vector<std::string> Removed();

  std::mutex mu;
  bool up = true;
  std::map<std::string, FakeRun> runs;
  std::map<std::string, std::string> experiments;  // name -> id
  std::map<std::string, size_t> pending;           // run id -> records not delivered
  std::vector<std::string> removed;
  size_t deliveries = 0;  // calls of Deliver, up or down
  size_t kept = 0;        // calls of Keep
};

}  // namespace cairn::fakes
