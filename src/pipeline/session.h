// Session: what happens around each step of one pipeline run, as StepHooks for the Builder.
//
//  - At the start: the datasets steps read are put in their directories (data_source.h).
//  - Reuse: a step completed in the session being resumed is kept; otherwise its cache key is
//    computed (step_cache.h) now that its inputs are final, and a cache hit restores its
//    outputs instead of running it. The key's parts are written to the run's directory
//    (keys.jsonl) for `cairn pipeline explain`.
//  - Before each attempt: the step's declared outputs are removed, so that it writes new
//    files; its Python environment (the project's active one, or the one built from its
//    lock) goes first on PATH.
//  - After a successful attempt: the outputs go into the cache (a declared output that was
//    not written fails the step).
//  - A step that must be approved waits, once ready, for a decision: from the tracking
//    server (the step's run) when the run is tracked, else from the run's directory.
//  - A step with a checkpoint directory gets its last checkpoint back before each attempt
//    (an empty directory in a new run); while it runs, and when an attempt ends, the
//    directory's files are stored (checkpoint.h).
//  - Every event is appended to the run's state (run_state.h) and reported to a Progress.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "pipeline/builder.h"
#include "pipeline/checkpoint.h"
#include "pipeline/data_source.h"
#include "pipeline/run_state.h"
#include "pipeline/spec.h"
#include "pipeline/step_cache.h"
#include "pipeline/tracker.h"
#include "util/parallel.h"

namespace cairn::pipeline {

// Where progress goes (the terminal, for the CLI).
class Progress {
 public:
  virtual ~Progress() = default;
  // One event: "started", "done", "cached", "failed", "retry", "kept", ... with the step's id
  // and a detail ("exit code 3 after 1.2 s").
  virtual void Event(const std::string& what, const std::string& step,
                     const std::string& detail) = 0;
  // A failed step's log file.
  virtual void FailedLog(const std::string& step, const std::string& log_path) {}
  virtual void Warning(const std::string& text) = 0;
  // Something done on the side, for a person: "registered model m version 3, alias a".
  virtual void Note(const std::string& text) {}
  // Called while steps run, at least every 100 ms: a moment to redraw a live display.
  virtual void Tick() {}
};

// Which output files of a step that ran its tracking run records as artifacts (under
// outputs/, sent into the server's content store unless it has them): none, files up to
// kSmallOutputBytes, or all.
enum class UploadOutputs { kNever, kSmall, kAlways };
inline constexpr int64_t kSmallOutputBytes = int64_t{100} << 20;
// "never", "small" or "always".
Result<UploadOutputs> ParseUploadOutputs(std::string_view text);

struct SessionOptions {
  std::string workdir;     // the pipeline's directory, where steps run
  bool use_cache = true;   // --no-cache: run every step (its outputs are still stored)
  std::string cache_root;  // default: StepCache::DefaultRoot()
  // Steps completed in the run being resumed (their last events), kept as they are.
  std::map<std::string, StepEvent> completed;
  // Records the run and its steps in the tracking store; optional.
  Tracker* tracker = nullptr;
  UploadOutputs upload_outputs = UploadOutputs::kSmall;
  int64_t small_output_bytes = kSmallOutputBytes;  // what kSmall takes
  // Puts the datasets steps read in place; needed only when a step reads one.
  DataSource* data = nullptr;
};

class Session : public StepHooks {
 public:
  // Reads the code state (once, for every step that declares no code paths) and opens the
  // cache. Never fails on a missing git repository: the code part is then left out, with a
  // warning.
  static Result<std::unique_ptr<Session>> Create(const Pipeline& pipeline, RunState& state,
                                                 SessionOptions options, Progress& progress);
  ~Session() override;

  Result<bool> Reuse(size_t step) override;
  ApprovalState Approve(size_t step) override;
  void Prepare(StepJob* job) override;
  void AttemptStarted(const StepJob& job) override;
  Status Succeeded(const StepJob& job) override;
  void AttemptEnded(const StepJob& job, const JobResult& result, const std::string& reason,
                    int64_t retry_in_ms) override;
  void StepEnded(size_t step, StepState state, const std::string& reason) override;
  void BeforeWait() override;

  // Steps by outcome: "done", "cached", "failed", "skipped", "cancelled", "kept".
  const std::map<std::string, int>& counts() const { return counts_; }

  // The key parts of `step` computed in this session, or in the run's earlier sessions.
  static Result<KeyParts> ReadKeyParts(const RunState& state, const std::string& step_id);
  // The canonical definition of a step: command, parameters used, variables, outputs.
  static std::string CanonicalDefinition(const Step& step);

 private:
  Session(const Pipeline& pipeline, RunState& state, SessionOptions options, Progress& progress);
  Result<KeyParts> ComputeKeyParts(const Step& step);
  // Puts every dataset a step reads in its directory, once per directory.
  Status PlaceData(const std::string& workdir);
  // How a dataset input is named among a step's key parts.
  static std::string DataKey(const DataInput& d);
  // The environment a step runs in: its lock hash ("none" without one) and its prefix.
  Result<std::pair<std::string, std::string>> EnvironmentOf(const Step& step);
  void Record(StepEvent event);
  // The step's checkpoint directory, absolute.
  std::string CheckpointDir(const Step& step) const;
  // Stores the checkpoint of a step that runs (`settle_ms` as CheckpointStore::Save) on the
  // checkpoint thread, so that copying a large one does not hold up the steps; `wait` waits
  // for a save in hand first, else a save in hand makes this one skip its turn.
  void SaveCheckpoint(size_t step, int64_t settle_ms, bool wait);
  // Says what the checkpoint thread could not store.
  void ReportCheckpointErrors();
  void FlushCache();
  // Where the output `step` registers lies, resolved; "" (with a warning) when it leads out
  // of the pipeline's directory.
  std::string RegisteredOutput(const Step& step);
  static std::string OutputsJson(const std::vector<CachedOutput>& outputs);
  // The files of a step's stored outputs its run records as artifacts (upload_outputs), but
  // those of the output it registers, which go up with the registration.
  std::vector<client::BlobFile> OutputFiles(const Step& step,
                                            const std::vector<CachedOutput>& outputs);

  const Pipeline& pipeline_;
  RunState& state_;
  SessionOptions options_;
  Progress& progress_;
  std::unique_ptr<StatCache> stat_cache_;
  std::unique_ptr<StepCache> cache_;
  std::unique_ptr<CheckpointStore> checkpoints_;
  std::map<size_t, int64_t> checkpoint_saved_;   // running steps with a checkpoint: last save
  std::map<size_t, int64_t> next_ask_;           // steps waiting for approval: when to look again
  std::mutex checkpoint_mu_;                     // guards checkpoint_errors_
  std::vector<std::string> checkpoint_errors_;   // from the checkpoint thread, to report
  std::atomic<bool> checkpoint_busy_{false};     // a save is in hand
  std::map<std::string, std::string> git_code_;  // KeyParts::code of git; empty outside git
  std::map<std::string, PlacedData> data_;       // by directory: the datasets put in place
  std::map<std::string, std::pair<std::string, std::string>> envs_;  // env spec -> hash, prefix
  std::map<size_t, std::string> keys_;                               // step -> key (cache on)
  std::map<size_t, KeyParts> parts_;
  std::map<size_t, std::string> cached_from_;      // step -> pipeline run that produced it
  std::map<size_t, std::string> cached_from_run_;  // step -> tracking run that produced it
  std::map<size_t, std::string> outputs_json_;     // step -> its outputs, for the tracker
  std::map<size_t, std::vector<client::BlobFile>> output_files_;  // of steps that ran
  std::map<size_t, std::string> run_ids_;          // step -> its tracking run
  std::set<size_t> kept_;
  std::map<size_t, int64_t> started_;
  std::map<size_t, int> last_exit_;
  std::map<std::string, int> counts_;
  // Last: destroyed first, finishing its save while what it uses is still there.
  std::unique_ptr<SideThread> checkpoint_thread_;
};

}  // namespace cairn::pipeline
