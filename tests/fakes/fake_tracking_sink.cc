#include "fakes/fake_tracking_sink.h"

#include <deque>
#include <functional>

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
                      const std::vector<core::Tag>& tags) override {
    return Append([=](Server& s, FakeRun& run) {
      auto [it, added] =
          s.experiments.emplace(experiment, std::to_string(s.experiments.size() + 1));
      run.experiment = experiment;
      run.experiment_id = it->second;
      run.run_name = run_name;
      run.start_ms = start_ms;
      for (const core::Tag& t : tags) run.tags[t.key] = t.value;
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
  Status AppendEnd(core::RunStatus status, int64_t) override {
    return Append([=](Server&, FakeRun& run) { run.status = status; }, /*end=*/true);
  }

  Status Keep() override {
    std::lock_guard<std::mutex> lock(server_->mu);
    ++server_->kept;
    return Status::Ok();
  }

  Status Deliver() override {
    std::lock_guard<std::mutex> lock(server_->mu);
    ++server_->deliveries;
    if (!server_->up) return Unavailable("the fake tracking server is down");
    while (!records_.empty()) {
      FakeRun& run = server_->runs[run_id_];
      run.run_id = run_id_;
      records_.front()(*server_, run);
      records_.pop_front();
      --server_->pending[run_id_];
    }
    return Status::Ok();
  }

  bool complete() const override {
    std::lock_guard<std::mutex> lock(server_->mu);
    return ended_ && records_.empty();
  }

  Status Remove() override {
    std::lock_guard<std::mutex> lock(server_->mu);
    server_->removed.push_back(run_id_);
    return Status::Ok();
  }

 private:
  using Record = std::function<void(Server&, FakeRun&)>;

  Status Append(Record record, bool end = false) {
    std::lock_guard<std::mutex> lock(server_->mu);
    ended_ = ended_ || end;
    records_.push_back(std::move(record));
    ++server_->pending[run_id_];
    return Status::Ok();
  }

  const std::string run_id_;
  std::shared_ptr<Server> server_;
  std::deque<Record> records_;  // guarded by server_->mu
  bool ended_ = false;          // guarded by server_->mu
};

}  // namespace

FakeTrackingSink::FakeTrackingSink() : server_(std::make_shared<Server>()) {}
FakeTrackingSink::~FakeTrackingSink() = default;

Result<std::unique_ptr<pipeline::RunRecords>> FakeTrackingSink::OpenRun(const std::string& run_id) {
  return std::unique_ptr<pipeline::RunRecords>(new FakeRecords(run_id, server_));
}

Result<std::string> FakeTrackingSink::ExperimentOf(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(server_->mu);
  if (!server_->up) return Unavailable("the fake tracking server is down");
  auto it = server_->runs.find(run_id);
  if (it == server_->runs.end()) return NotFound("no run " + run_id);
  return it->second.experiment_id;
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
  size_t n = 0;
  for (const auto& [id, count] : pending) n += count;
  return n;
}

std::vector<std::string> Server::Removed() {
  std::lock_guard<std::mutex> lock(mu);
  return removed;
}

}  // namespace cairn::fakes
