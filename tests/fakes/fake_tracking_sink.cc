#include "fakes/fake_tracking_sink.h"

#include "util/file.h"

namespace cairn::fakes {
namespace {

using Server = FakeTrackingSink::Server;

class FakeRecords : public pipeline::RunRecords {
 public:
  FakeRecords(std::string run_id, std::shared_ptr<Server> server)
      : run_id_(std::move(run_id)), server_(std::move(server)) {}

  const std::string& run_id() const override { return run_id_; }

  Status AppendCreate(const std::string& experiment, const std::string& run_name, int64_t start_ms,
                      const std::vector<core::Tag>& tags, bool scheduled) override {
    return Append([=](Server& s, FakeRun& run) {
      auto [it, added] =
          s.experiments.emplace(experiment, std::to_string(s.experiments.size() + 1));
      run.experiment = experiment;
      run.experiment_id = it->second;
      run.run_name = run_name;
      run.start_ms = start_ms;
      run.status = scheduled ? core::RunStatus::kScheduled : core::RunStatus::kRunning;
      for (const core::Tag& t : tags) run.tags[t.key] = t.value;
    });
  }
  Status AppendStart(int64_t start_ms) override {
    return Append([=](Server&, FakeRun& run) {
      run.start_ms = start_ms;
      run.status = core::RunStatus::kRunning;
    });
  }
  Status AppendBatch(const std::vector<core::Param>& params,
                     const std::vector<core::Tag>& tags) override {
    return Append([=](Server&, FakeRun& run) {
      for (const core::Param& p : params) run.params[p.key] = p.value;
      for (const core::Tag& t : tags) run.tags[t.key] = t.value;
    });
  }
  Status AppendLog(const std::vector<core::ConsoleChunk>& chunks) override {
    return Append([=](Server&, FakeRun& run) {
      for (const core::ConsoleChunk& c : chunks) run.console += c.data;
    });
  }
  Status AppendArtifact(const std::string& path, const std::string& content) override {
    return Append([=](Server&, FakeRun& run) { run.artifacts[path] = content; });
  }
  Result<int64_t> AppendArtifactFile(const std::string& path,
                                     const std::string& local_path) override {
    CAIRN_ASSIGN_OR_RETURN(std::string content, ReadFile(local_path));  // kept as it is now
    CAIRN_RETURN_IF_ERROR(AppendArtifact(path, content));
    return static_cast<int64_t>(content.size());
  }
  Status AppendRegister(const std::string& model, const std::string& source,
                        const std::string& alias,
                        const std::vector<client::RegisteredFile>& files) override {
    return Append([=](Server&, FakeRun& run) {
      run.registered.push_back({model, source, alias, files});
    });
  }
  Status AppendBlobs(const std::vector<client::BlobFile>& files) override {
    for (const client::BlobFile& f : files) {
      CAIRN_ASSIGN_OR_RETURN(std::string content, ReadFile(f.file));
      CAIRN_RETURN_IF_ERROR(Append([=](Server& s, FakeRun& run) {
        run.artifacts[f.path] = content;
        ++s.blob_totals.files;
        if (s.blobs.insert(f.sha256).second) {
          ++s.blob_totals.sent;
          s.blob_totals.sent_bytes += f.size;
        }
      }));
    }
    return Status::Ok();
  }
  Status AppendEnd(core::RunStatus status, int64_t) override {
    return Append([=](Server&, FakeRun& run) { run.status = status; }, /*end=*/true);
  }

 private:
  Status Append(Server::Record record, bool end = false) {
    std::lock_guard<std::mutex> lock(server_->mu);
    if (end && run_id_ == server_->own_run) server_->own_ended = true;
    server_->journal.emplace_back(run_id_, std::move(record));
    ++server_->appended;
    return Status::Ok();
  }

  const std::string run_id_;
  std::shared_ptr<Server> server_;
};

}  // namespace

FakeTrackingSink::FakeTrackingSink() : server_(std::make_shared<Server>()) {}
FakeTrackingSink::~FakeTrackingSink() = default;

std::unique_ptr<pipeline::RunRecords> FakeTrackingSink::Run(const std::string& run_id) {
  {
    std::lock_guard<std::mutex> lock(server_->mu);
    // The first run asked for is the pipeline run's: the journal's own.
    if (server_->own_run.empty()) server_->own_run = run_id;
  }
  return std::make_unique<FakeRecords>(run_id, server_);
}

Status FakeTrackingSink::Deliver() {
  std::lock_guard<std::mutex> lock(server_->mu);
  ++server_->deliveries;
  if (!server_->up) return Unavailable("the fake tracking server is down");
  while (!server_->journal.empty()) {
    auto& [run_id, record] = server_->journal.front();
    FakeRun& run = server_->runs[run_id];
    run.run_id = run_id;
    record(*server_, run);
    server_->journal.pop_front();
    ++server_->acknowledged;
  }
  return Status::Ok();
}

Status FakeTrackingSink::Keep() {
  std::lock_guard<std::mutex> lock(server_->mu);
  ++server_->kept;
  return Status::Ok();
}

size_t FakeTrackingSink::appended() const {
  std::lock_guard<std::mutex> lock(server_->mu);
  return server_->appended;
}

size_t FakeTrackingSink::acknowledged() const {
  std::lock_guard<std::mutex> lock(server_->mu);
  return server_->acknowledged;
}

bool FakeTrackingSink::complete() const {
  std::lock_guard<std::mutex> lock(server_->mu);
  return server_->own_ended && server_->journal.empty();
}

client::BlobTotals FakeTrackingSink::blob_totals() const {
  std::lock_guard<std::mutex> lock(server_->mu);
  return server_->blob_totals;
}

Status FakeTrackingSink::Remove() {
  std::lock_guard<std::mutex> lock(server_->mu);
  server_->removed = true;
  return Status::Ok();
}

Result<std::string> FakeTrackingSink::ExperimentOf(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(server_->mu);
  if (!server_->up) return Unavailable("the fake tracking server is down");
  auto it = server_->runs.find(run_id);
  if (it == server_->runs.end()) return NotFound("no run " + run_id);
  return it->second.experiment_id;
}

Result<std::map<std::string, std::string>> FakeTrackingSink::TagsOf(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(server_->mu);
  if (!server_->up) return Unavailable("the fake tracking server is down");
  auto it = server_->runs.find(run_id);
  if (it == server_->runs.end()) return NotFound("no run " + run_id);
  return it->second.tags;
}

void Server::SetUp(bool is_up) {
  std::lock_guard<std::mutex> lock(mu);
  up = is_up;
}

std::map<std::string, FakeRun> Server::Runs() {
  std::lock_guard<std::mutex> lock(mu);
  return runs;
}

size_t Server::Pending() {
  std::lock_guard<std::mutex> lock(mu);
  return journal.size();
}

bool Server::Removed() {
  std::lock_guard<std::mutex> lock(mu);
  return removed;
}

}  // namespace cairn::fakes
