// Where the pipeline tracker (tracker.h) sends its records: one journal per pipeline run,
// holding the records of the pipeline's run and of each of its step runs, in order, until a
// tracking server acknowledges them, so that a server that is down or goes away loses nothing.
// The records are those of the MLflow run model the tracker uses: a run's creation with its
// tags, a start, parameters and tags, console log pieces, artifacts, a model version
// registered from the run, and the run's end with its status.
//
// The real sink keeps the records in a run journal (client/run_journal.h; `cairn sync`
// delivers what is left) and delivers them with the tracking client, in batches; tests use an
// in-memory fake (tests/fakes/fake_tracking_sink.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/run_journal.h"
#include "core/model.h"
#include "util/status.h"

namespace cairn::pipeline {

// The records of one tracking run, appended to the sink's journal. Appends are durable when
// they return Ok; every method is thread safe (a delivery may run on another thread while
// records are appended).
class RunRecords {
 public:
  virtual ~RunRecords() = default;

  virtual const std::string& run_id() const = 0;

  // The run's creation in the experiment named `experiment` (created when missing): the first
  // record of a new run. A `scheduled` run waits for AppendStart.
  virtual Status AppendCreate(const std::string& experiment, const std::string& run_name,
                              int64_t start_ms, const std::vector<core::Tag>& tags,
                              bool scheduled) = 0;
  // A scheduled run starts now: RUNNING, from `start_ms`.
  virtual Status AppendStart(int64_t start_ms) = 0;
  virtual Status AppendBatch(const std::vector<core::Param>& params,
                             const std::vector<core::Tag>& tags) = 0;
  virtual Status AppendLog(const std::vector<core::ConsoleChunk>& chunks) = 0;
  // An artifact of the run at `path`, with its whole content.
  virtual Status AppendArtifact(const std::string& path, const std::string& content) = 0;
  // The file at `local_path` as the artifact at `path`, kept as it is now; returns its size.
  virtual Result<int64_t> AppendArtifactFile(const std::string& path,
                                             const std::string& local_path) = 0;
  // A new version of the registered model `model` (created when missing) from `source`, one of
  // this run's artifacts (runs:/RUN_ID/PATH), with `alias` (optional) moved to it unless it
  // names a newer version; made only when every one of `files` reached the server whole.
  virtual Status AppendRegister(const std::string& model, const std::string& source,
                                const std::string& alias,
                                const std::vector<client::RegisteredFile>& files) = 0;
  virtual Status AppendEnd(core::RunStatus status, int64_t end_ms) = 0;
  // Files for the run's artifacts, sent into the server's content store unless it has them
  // (client::BlobFile).
  virtual Status AppendBlobs(const std::vector<client::BlobFile>& files) = 0;
};

class TrackingSink {
 public:
  virtual ~TrackingSink() = default;

  // The server records are delivered to, for messages.
  virtual const std::string& tracking_uri() const = 0;
  // The records of `run_id` in the journal.
  virtual std::unique_ptr<RunRecords> Run(const std::string& run_id) = 0;

  // Delivers the records not yet acknowledged, in order, stopping at the first the server
  // cannot take (its error is returned; the rest stay for later).
  virtual Status Deliver() = 0;
  // Makes the records not yet acknowledged durable without trying to deliver them (records
  // left for later must survive a crash of the machine).
  virtual Status Keep() = 0;
  // Records appended, and of those acknowledged, since the journal was opened (an earlier
  // process's count among them).
  virtual size_t appended() const = 0;
  virtual size_t acknowledged() const = 0;
  // Every record acknowledged, the pipeline run's end among them.
  virtual bool complete() const = 0;
  // What the blobs records delivered came to.
  virtual client::BlobTotals blob_totals() const = 0;
  // Forgets the records (after complete()).
  virtual Status Remove() = 0;
  // The experiment id of a run the server knows; NotFound for one it does not, another error
  // when it cannot be asked.
  virtual Result<std::string> ExperimentOf(const std::string& run_id) = 0;
  // The tags of a run the server knows (as ExperimentOf).
  virtual Result<std::map<std::string, std::string>> TagsOf(const std::string& run_id) = 0;
};

// The journal of the pipeline run `run_id` under client::DefaultJournalDir() (or the fallback
// directory when that cannot be written), with what an earlier process kept in it, delivered
// to the tracking server at `tracking_uri`. `notice` (optional) is told what a delivered
// record did, for a person ("registered model m version 3").
Result<std::unique_ptr<TrackingSink>> NewJournalSink(
    const std::string& tracking_uri, const std::string& run_id,
    std::function<void(const std::string&)> notice = nullptr);

}  // namespace cairn::pipeline
