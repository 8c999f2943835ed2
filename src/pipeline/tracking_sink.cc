#include "pipeline/tracking_sink.h"

#include "client/run_journal.h"
#include "client/tracking_client.h"

namespace cairn::pipeline {
namespace {

using client::RunJournal;
using client::TrackingClient;

class JournalRecords : public RunRecords {
 public:
  JournalRecords(std::unique_ptr<RunJournal> journal, TrackingClient& client)
      : journal_(std::move(journal)), client_(client) {}

  const std::string& run_id() const override { return journal_->run_id(); }
  Status AppendCreate(const std::string& experiment, const std::string& run_name, int64_t start_ms,
                      const std::vector<core::Tag>& tags) override {
    return journal_->AppendCreate(experiment, run_name, start_ms, tags);
  }
  Status AppendBatch(const std::vector<core::Param>& params,
                     const std::vector<core::Tag>& tags) override {
    return journal_->AppendBatch({}, params, tags);
  }
  Status AppendLog(const std::vector<core::ConsoleChunk>& chunks) override {
    return journal_->AppendLog(chunks);
  }
  Status AppendArtifact(const std::string& path, const std::string& content) override {
    return journal_->AppendArtifact("", path, content);
  }
  Result<int64_t> AppendArtifactFile(const std::string& path,
                                     const std::string& local_path) override {
    return journal_->AppendArtifactFile("", path, local_path);
  }
  Status AppendRegister(const std::string& model, const std::string& source,
                        const std::string& alias,
                        const std::vector<client::RegisteredFile>& files) override {
    return journal_->AppendRegister(model, source, alias, files);
  }
  Status AppendEnd(core::RunStatus status, int64_t end_ms) override {
    return journal_->AppendEnd(status, end_ms);
  }
  Status Deliver() override { return journal_->Deliver(client_); }
  Status Keep() override { return journal_->Keep(); }
  bool complete() const override { return journal_->complete(); }
  Status Remove() override { return journal_->Remove(); }

 private:
  std::unique_ptr<RunJournal> journal_;
  TrackingClient& client_;
};

class JournalSink : public TrackingSink {
 public:
  JournalSink(std::unique_ptr<TrackingClient> client, RunJournal::Notice notice)
      : client_(std::move(client)), notice_(std::move(notice)) {}

  const std::string& tracking_uri() const override { return client_->tracking_uri(); }

  Result<std::unique_ptr<RunRecords>> OpenRun(const std::string& run_id) override {
    Result<std::unique_ptr<RunJournal>> j =
        RunJournal::Open(client::DefaultJournalDir(), run_id, client_->tracking_uri());
    if (!j.ok()) {
      j = RunJournal::Open(client::FallbackJournalDir(), run_id, client_->tracking_uri());
    }
    if (!j.ok()) return j.status();
    if (notice_) (*j)->SetNotice(notice_);
    return std::unique_ptr<RunRecords>(new JournalRecords(std::move(*j), *client_));
  }

  Result<std::string> ExperimentOf(const std::string& run_id) override {
    CAIRN_ASSIGN_OR_RETURN(core::Run run, client_->GetRun(run_id));
    return run.info.experiment_id;
  }

 private:
  std::unique_ptr<TrackingClient> client_;
  RunJournal::Notice notice_;
};

}  // namespace

Result<std::unique_ptr<TrackingSink>> NewJournalSink(
    const std::string& tracking_uri, std::function<void(const std::string&)> notice) {
  client::ClientOptions options;
  options.tracking_uri = tracking_uri;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TrackingClient> client, TrackingClient::Create(options));
  return std::unique_ptr<TrackingSink>(new JournalSink(std::move(client), std::move(notice)));
}

}  // namespace cairn::pipeline
