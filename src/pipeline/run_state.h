// The record of a pipeline run on disk, which `status`, `ls` and `resume` read. Under
// <project>/.cairn/pipelines/<run id>/:
//   run.json      name, spec file, parameters after overrides, executor, start time and the
//                 tracking run, written once when the run starts
//   spec.yaml     the spec as the run started with it: `resume` runs that, not a file edited
//                 since
//   events.jsonl  one JSON line per step event (started, done, cached, failed, ...), appended
//                 with a single write each, so a runner killed with SIGKILL loses nothing it
//                 had recorded; a torn last line is ignored
//   keys.jsonl    each step's cache key parts, one JSON line per computation (the last wins)
//   logs/         each step's output, <step id>.log
//   runner.lock   locked (flock) by the process running the run, holding its pid: `resume`
//                 refuses a run that is still running, `status` and `ls` say it runs
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "util/status.h"

namespace cairn::pipeline {

struct RunInfo {
  std::string id;
  std::string name;       // the pipeline's
  std::string spec_file;  // as given on the command line, absolute
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> overrides;  // the -p values
  std::string executor;
  bool no_cache = false;  // --no-cache: a resume runs every step too
  int64_t started_ms = 0;
  std::string tracking_uri;     // empty: not tracked
  std::string tracking_run_id;  // the parent run
  std::string dir;              // the run's directory (not stored)
};

struct StepEvent {
  std::string step;
  std::string state;  // "started", or a StepStateName
  int attempt = 0;
  int64_t time_ms = 0;
  std::string reason;
  int exit_code = 0;
  std::string run_id;       // the step's tracking run
  std::string cached_from;  // for "cached": the pipeline run whose outputs were reused
  std::string cache_key;
};

class RunState {
 public:
  // The directory runs live in: <project>/.cairn/pipelines.
  static std::string RootOf(const std::string& project_dir);
  // Starts the record of a new run (info.id must be set).
  static Result<std::unique_ptr<RunState>> Create(const std::string& root, RunInfo info,
                                                  const std::string& spec_text);
  // The run whose id is `id_or_prefix` or starts with it. NotFound when none does,
  // InvalidArgument when several do.
  static Result<std::unique_ptr<RunState>> Open(const std::string& root,
                                                const std::string& id_or_prefix);
  // Every run under `root`, newest first.
  static std::vector<RunInfo> List(const std::string& root);

  ~RunState();
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  const RunInfo& info() const { return info_; }
  std::string spec_path() const { return info_.dir + "/spec.yaml"; }
  std::string log_dir() const { return info_.dir + "/logs"; }

  // Marks this process as the run's runner until the RunState goes away (released by the
  // kernel if the process dies). FailedPrecondition, with the runner's pid, when another
  // process runs it.
  Status LockRunner();
  // The pid of the process running the run; 0 when none does, -1 when one does whose pid is
  // not written yet.
  pid_t Runner() const;

  Status Append(const StepEvent& event);
  // Records the cache key parts (KeyParts::ToJson) computed for a step.
  Status AppendKeyParts(const std::string& step, const std::string& parts_json);
  // The last key parts recorded for a step; NotFound when none were.
  Result<std::string> KeyParts(const std::string& step) const;
  // Every event, in order (a torn last line skipped).
  std::vector<StepEvent> Events() const;
  // The last event of each step.
  std::map<std::string, StepEvent> Latest() const;

 private:
  explicit RunState(RunInfo info) : info_(std::move(info)) {}
  // One write per line on a descriptor kept open: a line is never torn by a crash of this
  // process, and a thousand steps do not open the file a thousand times.
  Status AppendLine(int* fd, const std::string& file, const std::string& line);

  RunInfo info_;
  int events_fd_ = -1;
  int keys_fd_ = -1;
  int lock_fd_ = -1;
};

}  // namespace cairn::pipeline
