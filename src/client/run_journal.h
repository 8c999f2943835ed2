// The local journal of a run: everything `cairn run` has to tell the server about a run
// (parameters, metrics, console output, artifacts, how it ended) is first appended here, on
// disk, and then delivered in order. When the server is unreachable or goes away mid-run,
// nothing is lost: records wait in the journal until a later delivery (the wrapper keeps
// trying while the command runs; `cairn sync`, or the next `cairn run`, finishes the job).
//
// Layout, under <data dir>/journal/ (0700; a directory other users can write is refused):
// <run_id>.journal starts with a header line naming the
// tracking server the run belongs to, {"cairn_journal": 1, "tracking_uri": "..."}, so that
// its records go to that server only, and then holds one JSON record per line, written
// before Append returns (so a killed wrapper loses nothing) and flushed to disk with
// fdatasync as soon as a delivery fails (records that must wait survive a crash of the
// machine too; records the server takes at once need not); <run_id>.sent holds how many
// records the server has acknowledged; <run_id>.files/ holds the files artifact_file records
// upload. A record delivered twice (acknowledged, but the count not yet saved when the process
// died) does no harm: metric points are deduplicated, params and tags are set to the same
// values, console chunks carry their offsets, artifacts are replaced by the same bytes, and a
// register finds the version its first delivery made.
//
// Records: {"op": "batch", "metrics": [...], "params": [...], "tags": [...]},
// {"op": "log", "chunks": [{"offset", "stream", "timestamp", "data"}]},
// {"op": "artifact", "artifact_uri", "path", "content"} (an empty artifact_uri is looked up
// when delivered), {"op": "artifact_file", "artifact_uri", "path", "file"} (the file's bytes
// kept in <run_id>.files/<file>), {"op": "register", "model", "source", "alias", "files":
// [{"path", "size"}]},
// {"op": "blobs", "files": [{"path", "sha256", "size", "file"}]} (files sent into the content
// store unless the server has them, then named as the run's artifacts; BlobFile),
// {"op": "end", "status", "end_time"}, and first, for a run started while the server was
// unreachable, {"op": "create", "experiment_name", "run_name", "start_time", "tags"} (the run
// id is the journal's), with "status": "SCHEDULED" for a run made before it starts, which
// {"op": "start", "start_time"} then starts.
//
// A journal may also hold the records of other runs, each starting with {"run_id": "...":
// the step runs of a pipeline share the pipeline run's journal, so that a pipeline of any
// size keeps one file open and delivers its records in order. Consecutive records of these
// kinds (create, batch, log, start, end) go to a cairn server in batches, one request for up
// to 1,000 records (POST /api/cairn/v1/runs/records); the others go one by one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "client/tracking_client.h"
#include "core/model.h"
#include "util/status.h"

namespace cairn::client {

// An artifact a registered version is made of: its path in the run's artifacts and its size.
struct RegisteredFile {
  std::string path;
  int64_t size = 0;
};

// What blobs records delivered: files named as artifacts, and of those the ones sent (the
// others the server had).
struct BlobTotals {
  size_t files = 0;
  size_t sent = 0;
  int64_t sent_bytes = 0;
};

// A file of the run's artifacts sent into the server's content store by its digest, from a
// local file named by that digest (a pipeline's cached output, objects/ab/cdef...[.x]).
struct BlobFile {
  std::string path;    // in the run's artifacts
  std::string sha256;  // of its bytes
  int64_t size = 0;
  std::string file;  // the local file: its directory and name spell the digest
};

class RunJournal {
 public:
  // Opens the journal of `run_id` under `dir` (created when missing), keeping what an earlier
  // process left there, and holds it locked until destroyed; kFailedPrecondition when another
  // process holds it. A new journal is for the server at `tracking_uri`; an existing one keeps
  // the server it was written for.
  static Result<std::unique_ptr<RunJournal>> Open(const std::string& dir, std::string run_id,
                                                  const std::string& tracking_uri = "");
  ~RunJournal();

  const std::string& run_id() const { return run_id_; }
  // The server the records are for; empty when the journal does not say (any server).
  const std::string& tracking_uri() const { return tracking_uri_; }

  // The records of run `run_id` in this journal (another run's, or its own), appended as the
  // journal's own methods append theirs. Valid while the journal is.
  class Records {
   public:
    Records(RunJournal* journal, std::string run_id)
        : journal_(journal), run_id_(std::move(run_id)) {}
    const std::string& run_id() const { return run_id_; }
    // As RunJournal's methods of the same names.
    Status AppendCreate(const std::string& experiment_name, const std::string& run_name,
                        int64_t start_time, const std::vector<core::Tag>& tags,
                        bool scheduled = false);
    // A run created SCHEDULED starts: RUNNING, from `start_time`.
    Status AppendStart(int64_t start_time);
    Status AppendBatch(const std::vector<core::Metric>& metrics,
                       const std::vector<core::Param>& params, const std::vector<core::Tag>& tags);
    Status AppendLog(const std::vector<core::ConsoleChunk>& chunks);
    Status AppendArtifact(const std::string& artifact_uri, const std::string& path,
                          const std::string& content);
    Result<int64_t> AppendArtifactFile(const std::string& artifact_uri, const std::string& path,
                                       const std::string& local_path);
    Status AppendRegister(const std::string& model, const std::string& source,
                          const std::string& alias, const std::vector<RegisteredFile>& files);
    Status AppendEnd(core::RunStatus status, int64_t end_time);
    // Files for the run's artifacts, sent by digest (BlobFile) when delivered.
    Status AppendBlobs(const std::vector<BlobFile>& files);

   private:
    RunJournal* journal_;
    std::string run_id_;
  };
  Records ForRun(std::string run_id) { return Records(this, std::move(run_id)); }

  // Appends a record durably. Thread-safe.
  Status AppendBatch(const std::vector<core::Metric>& metrics,
                     const std::vector<core::Param>& params, const std::vector<core::Tag>& tags);
  Status AppendLog(const std::vector<core::ConsoleChunk>& chunks);
  Status AppendArtifact(const std::string& artifact_uri, const std::string& path,
                        const std::string& content);
  // The file at `local_path` as the artifact at `path`; returns its size. The file is kept
  // beside the journal now, hard-linked where it can be (removing or replacing the file later
  // keeps these bytes; writing into it in place does not), else copied.
  Result<int64_t> AppendArtifactFile(const std::string& artifact_uri, const std::string& path,
                                     const std::string& local_path);
  // A new version of the registered model `model` (created when missing) from `source`, one
  // of this run's artifacts (runs:/RUN_ID/PATH), with `alias` (optional) moved to it unless it
  // names a newer version. Made only when every one of `files` reached the server whole.
  Status AppendRegister(const std::string& model, const std::string& source,
                        const std::string& alias, const std::vector<RegisteredFile>& files);
  // The datasets the run used (runs/log-inputs).
  Status AppendInputs(const std::vector<core::DatasetInput>& inputs);
  Status AppendEnd(core::RunStatus status, int64_t end_time);
  // The run's creation, for a run started while the server was unreachable: the first record.
  Status AppendCreate(const std::string& experiment_name, const std::string& run_name,
                      int64_t start_time, const std::vector<core::Tag>& tags);

  // Told what a delivered record did, for a person ("registered model m version 3"). By
  // default such notes go to stderr.
  using Notice = std::function<void(const std::string&)>;
  void SetNotice(Notice notice);

  // Delivers the records not yet acknowledged, in order, stopping at the first that fails
  // (its error is returned). One delivery at a time; thread-safe.
  Status Deliver(TrackingClient& client);
  // Makes the records survive a crash of the machine (fdatasync, once), as a failed delivery
  // does: for records left to wait without a delivery being tried.
  Status Keep();
  // Records appended but not yet acknowledged.
  size_t pending() const;
  // What the blobs records delivered by this process came to.
  BlobTotals blob_totals() const;
  // Records appended, and of those acknowledged, over the journal's life.
  size_t appended() const;
  size_t acknowledged() const;
  // True once every record is acknowledged and the run's end is among them: the journal's
  // files can go.
  bool complete() const;
  // Removes the journal's files (after complete()).
  Status Remove();

  // Run ids with a journal under `dir`.
  static std::vector<std::string> List(const std::string& dir);

 private:
  RunJournal(std::string dir, std::string run_id);
  // Appends `record` (a JSON object) for run `run`.
  Status Append(const std::string& run, const std::string& record);
  // Sends records_[from, to) (all of the batchable kinds) in one request; returns how many
  // the server took (those it refused for good count as taken), and the error that stopped
  // it there.
  std::pair<size_t, Status> DeliverBatch(TrackingClient& client, size_t from, size_t to);
  // Writes whole lines at the end of the file (mu_ held, or before the journal is shared).
  Status Write(const std::string& lines);

  const std::string dir_;
  const std::string run_id_;
  std::string tracking_uri_;
  int fd_ = -1;
  mutable std::mutex mu_;                             // guards the fields below and appends
  std::vector<std::pair<uint64_t, size_t>> records_;  // (offset, length) of each record
  uint64_t end_ = 0;                                  // the file's length
  size_t sent_ = 0;
  bool ended_ = false;
  bool synced_ = true;  // everything written is on disk
  bool batches_ = true;  // the server takes batches of records (an older one does not)
  BlobTotals blob_totals_;
  Notice notice_ = [](const std::string& text) {
    std::fprintf(stderr, "cairn: %s\n", text.c_str());
  };
  std::mutex deliver_mu_;  // one delivery at a time
};

// What SyncJournals left behind.
struct SyncResult {
  size_t pending = 0;  // records of this server's runs still pending
  // Journals kept for other tracking servers: how many per tracking URI.
  std::map<std::string, size_t> elsewhere;
};

// Delivers every journal under `dirs` that has records pending for the client's server,
// removing the ones that are complete; journals of other servers are left alone. Reports each
// run delivered to through `progress` (run id, delivered, still pending, error).
SyncResult SyncJournals(
    const std::vector<std::string>& dirs, TrackingClient& client,
    const std::function<void(const std::string&, size_t, size_t, const Status&)>& progress);

// <data dir>/journal, the data dir being $CAIRN_HOME or ./.cairn, as for the server.
std::string DefaultJournalDir();
// Where a run's journal goes when the data directory is not writable: cairn-journal-<uid> in
// the temporary directory.
std::string FallbackJournalDir();
// Both, the places `cairn sync` looks.
std::vector<std::string> JournalDirs();

}  // namespace cairn::client
