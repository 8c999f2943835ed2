#include "pipeline/tracking_sink.h"

#include "client/run_journal.h"
#include "client/tracking_client.h"

namespace cairn::pipeline {
namespace {

using client::RunJournal;
using client::TrackingClient;

class JournalRecords : public RunRecords {
 public:
  explicit JournalRecords(RunJournal::Records records) : records_(std::move(records)) {}

  const std::string& run_id() const override { return records_.run_id(); }
  Status AppendCreate(const std::string& experiment, const std::string& run_name, int64_t start_ms,
                      const std::vector<core::Tag>& tags, bool scheduled) override {
    return records_.AppendCreate(experiment, run_name, start_ms, tags, scheduled);
  }
  Status AppendStart(int64_t start_ms) override { return records_.AppendStart(start_ms); }
  Status AppendBatch(const std::vector<core::Param>& params,
                     const std::vector<core::Tag>& tags) override {
    return records_.AppendBatch({}, params, tags);
  }
  Status AppendLog(const std::vector<core::ConsoleChunk>& chunks) override {
    return records_.AppendLog(chunks);
  }
  Status AppendArtifact(const std::string& path, const std::string& content) override {
    return records_.AppendArtifact("", path, content);
  }
  Result<int64_t> AppendArtifactFile(const std::string& path,
                                     const std::string& local_path) override {
    return records_.AppendArtifactFile("", path, local_path);
  }
  Status AppendRegister(const std::string& model, const std::string& source,
                        const std::string& alias,
                        const std::vector<client::RegisteredFile>& files) override {
    return records_.AppendRegister(model, source, alias, files);
  }
  Status AppendEnd(core::RunStatus status, int64_t end_ms) override {
    return records_.AppendEnd(status, end_ms);
  }
  Status AppendBlobs(const std::vector<client::BlobFile>& files) override {
    return records_.AppendBlobs(files);
  }

 private:
  RunJournal::Records records_;
};

class JournalSink : public TrackingSink {
 public:
  JournalSink(std::unique_ptr<TrackingClient> client, std::unique_ptr<RunJournal> journal)
      : client_(std::move(client)), journal_(std::move(journal)) {}

  const std::string& tracking_uri() const override { return client_->tracking_uri(); }
  std::unique_ptr<RunRecords> Run(const std::string& run_id) override {
    return std::make_unique<JournalRecords>(journal_->ForRun(run_id));
  }
  Status Deliver() override { return journal_->Deliver(*client_); }
  Status Keep() override { return journal_->Keep(); }
  size_t appended() const override { return journal_->appended(); }
  size_t acknowledged() const override { return journal_->acknowledged(); }
  bool complete() const override { return journal_->complete(); }
  client::BlobTotals blob_totals() const override { return journal_->blob_totals(); }
  Status Remove() override { return journal_->Remove(); }
  Result<std::string> ExperimentOf(const std::string& run_id) override {
    CAIRN_ASSIGN_OR_RETURN(core::Run run, client_->GetRun(run_id));
    return run.info.experiment_id;
  }
  Result<std::map<std::string, std::string>> TagsOf(const std::string& run_id) override {
    CAIRN_ASSIGN_OR_RETURN(core::Run run, client_->GetRun(run_id));
    std::map<std::string, std::string> tags;
    for (const core::Tag& t : run.data.tags) tags[t.key] = t.value;
    return tags;
  }

 private:
  std::unique_ptr<TrackingClient> client_;
  std::unique_ptr<RunJournal> journal_;
};

}  // namespace

Result<std::unique_ptr<TrackingSink>> NewJournalSink(
    const std::string& tracking_uri, const std::string& run_id,
    std::function<void(const std::string&)> notice) {
  client::ClientOptions options;
  options.tracking_uri = tracking_uri;
  // One retry, not the default three: records that cannot go wait in the journal, and the
  // tracker tries again on its own (every 10 s while the server is away), so a server that is
  // down costs a pipeline well under a second rather than seconds at its start and end.
  options.retries = 1;
  CAIRN_ASSIGN_OR_RETURN(std::unique_ptr<TrackingClient> client, TrackingClient::Create(options));
  Result<std::unique_ptr<RunJournal>> j =
      RunJournal::Open(client::DefaultJournalDir(), run_id, client->tracking_uri());
  if (!j.ok()) j = RunJournal::Open(client::FallbackJournalDir(), run_id, client->tracking_uri());
  if (!j.ok()) return j.status();
  if (notice) (*j)->SetNotice(std::move(notice));
  return std::unique_ptr<TrackingSink>(new JournalSink(std::move(client), std::move(*j)));
}

}  // namespace cairn::pipeline
