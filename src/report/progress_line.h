// The progress of a pipeline run as the command line prints it: each step event on a line of
// its own ("  started   train"), and the last lines of a failed step's log under its event.
// On a terminal, a status line below them says how many steps have finished and which are
// running, for how long, longest first; it is redrawn when that changes and every second,
// and cleared before anything else is printed, so that it never mixes with the event lines.
// It shows from Begin (after the run's heading) to Finish (before its summary).
//
// Thread safety: every method may be called from any thread (the tracker's thread reports
// warnings while the builder's reports events).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "util/clock.h"

namespace cairn::report {

// The time a run took, as its summary line says it: "4.2 s" under a minute, "3m05s" above.
std::string FormatElapsed(int64_t ms);

struct ProgressLineOptions {
  std::FILE* out = stdout;  // events and the status line
  std::FILE* err = stderr;  // warnings
  bool live = false;        // draw the status line (a terminal that takes "\r\033[K")
  size_t width = 100;       // the terminal's columns: the status line keeps within them
  Clock* clock = nullptr;   // default: the system clock
};

class ProgressLine {
 public:
  // Options for this process's stdout: live on a terminal whose TERM is not "dumb".
  static ProgressLineOptions ForStdout();

  ProgressLine(size_t steps, ProgressLineOptions options);
  ~ProgressLine();  // calls Finish
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // "started", "done", "cached", "failed", "retry", ... for `step`; every event but
  // "started" and "retry" counts the step as finished.
  void Event(const std::string& what, const std::string& step, const std::string& detail);
  // The path of a failed step's log and its last lines, so that the reason is on screen.
  void FailedLog(const std::string& log_path);
  void Warning(const std::string& text);
  // A line of its own, indented like the events: something done on the side.
  void Note(const std::string& text);
  // Redraws the running times when the line is more than a second old.
  void Tick();
  void Begin();
  void Finish();

 private:
  void ClearStatus();
  void DrawStatus();

  const size_t steps_;
  const ProgressLineOptions options_;
  Clock* const clock_;
  bool began_ = false;
  bool shown_ = false;
  int64_t drawn_ms_ = 0;
  size_t finished_ = 0;
  std::map<std::string, int64_t> running_;  // step -> when it started
  std::mutex mu_;
};

}  // namespace cairn::report
