// A TrackingSink in memory, for tests of the pipeline tracker: records wait in one journal
// until delivered, and delivery applies them in order to an in-memory "server" whose runs a
// test reads. The server can be taken down (deliveries fail, records wait) and brought back.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
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
  std::unique_ptr<pipeline::RunRecords> Run(const std::string& run_id) override;
  Status Deliver() override;
  Status Keep() override;
  size_t appended() const override;
  size_t acknowledged() const override;
  bool complete() const override;
  client::BlobTotals blob_totals() const override;
  Status Remove() override;
  Result<std::string> ExperimentOf(const std::string& run_id) override;
  Result<std::map<std::string, std::string>> TagsOf(const std::string& run_id) override;

  // A handle on the server that stays valid after the sink is handed to a Tracker.
  std::shared_ptr<Server> server() const { return server_; }

 private:
  std::string uri_ = "fake://tracking";
  std::shared_ptr<Server> server_;
};

struct FakeTrackingSink::Server {
  using Record = std::function<void(Server&, FakeRun&)>;

  void SetUp(bool up);
  // The runs delivered so far, by run id.
  std::map<std::string, FakeRun> Runs();
  // Records appended but not delivered.
  size_t Pending();
  // Whether the journal was removed (delivered and done with).
  bool Removed();

  std::mutex mu;
  bool up = true;
  std::map<std::string, FakeRun> runs;
  std::map<std::string, std::string> experiments;  // name -> id
  std::deque<std::pair<std::string, Record>> journal;  // run id, record: not delivered
  size_t appended = 0;
  size_t acknowledged = 0;
  std::string own_run;     // the journal's run, whose end completes it
  bool own_ended = false;  // its end is among the records appended
  bool removed = false;
  size_t deliveries = 0;  // calls of Deliver, up or down
  size_t kept = 0;        // calls of Keep
  std::set<std::string> blobs;  // digests sent so far
  client::BlobTotals blob_totals;
};

}  // namespace cairn::fakes
