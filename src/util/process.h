// Child processes: spawn a command in its own process group, optionally with its stdout and
// stderr on pipes, signal the whole group and wait for how it ended.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace cairn {

// How a process ended: an exit code, or the signal that killed it.
struct ExitStatus {
  bool signaled = false;
  int code = 0;    // the exit code when !signaled
  int signal = 0;  // the signal when signaled
  // The code a shell reports for it: the exit code, or 128 + the signal.
  int ShellCode() const { return signaled ? 128 + signal : code; }
  std::string ToString() const;
};

// Names the calling thread as `top -H`, ps and debuggers show it (at most 15 characters kept).
void NameThisThread(const char* name);

// `s` single-quoted for a POSIX shell: it reaches the command as one word, unchanged.
std::string ShellQuote(std::string_view s);

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up on the child's PATH when it has no '/'
  // Variables set (or replaced) in the child's environment, on top of this process's.
  std::vector<std::pair<std::string, std::string>> env;
  std::string cwd;              // empty: this process's working directory
  bool capture_output = false;  // stdout and stderr on pipes instead of inherited
  // When set (and not capture_output): stdout and stderr appended to this file, created when
  // missing, and stdin from /dev/null.
  std::string output_path;
};

class Process {
 public:
  // Starts the command as the leader of a new process group.
  static Result<Process> Spawn(const SpawnOptions& options);
  // Runs `child` in a copy of this process (fork without exec), set up as Spawn sets up a
  // command: a new process group, default signal handling and an empty mask, options.cwd,
  // options.env and options.output_path (argv and capture_output are not used). The copy ends
  // with `child`'s return value as its exit code, running no destructors or atexit handlers.
  // It spares a new program's loading and linking; call it only while this process has one
  // thread, as the copy has only the caller's, and have `child` use no connection or lock of
  // the parent's.
  static Result<Process> Fork(const SpawnOptions& options, const std::function<int()>& child);

  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  // A child not yet waited for is killed (its whole group) and reaped.
  ~Process();

  pid_t pid() const { return pid_; }
  // Read ends of the output pipes when capture_output, else -1. The caller reads them to the
  // end; Process closes them.
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }

  // Sends `sig` to the child's whole process group (also after the child itself has ended).
  void SignalGroup(int sig) const;
  // Waits for the child to end (retrying on EINTR).
  Result<ExitStatus> Wait();
  // How the child ended, or nullopt while it is still running. With `stopped_by`, a child
  // that has stopped (Ctrl-Z, SIGTTIN) is reported there by its stop signal (else 0).
  Result<std::optional<ExitStatus>> TryWait(int* stopped_by = nullptr);

 private:
  Process(pid_t pid, int out_fd, int err_fd)
      : pid_(pid), group_(pid), out_fd_(out_fd), err_fd_(err_fd) {}
  void CloseFds();

  pid_t pid_ = -1;    // -1 once reaped
  pid_t group_ = -1;  // the process group, which may outlive its leader
  int out_fd_ = -1;
  int err_fd_ = -1;
};

// What a command printed and how it ended, from RunAndCapture.
struct CapturedRun {
  std::string output;        // stdout, its first `max_output` bytes
  std::string error_output;  // stderr, its first `max_error_output` bytes
  bool output_overflowed = false;  // stdout went past max_output
  bool timed_out = false;          // still running at the deadline, and killed
  ExitStatus exit;                 // how it ended; not meaningful when timed_out
};

struct CaptureLimits {
  std::chrono::milliseconds timeout{30000};
  size_t max_output = 4 << 20;
  size_t max_error_output = 4 << 20;
  // Kill the command as soon as its stdout passes max_output (for commands whose answer is
  // small, so that one that prints without end is not waited for until the timeout).
  bool kill_on_overflow = false;
};

// Runs a command with both outputs on pipes (read together, so that a full pipe cannot
// deadlock it), keeping what the limits allow and draining the rest, until it ends or the
// timeout passes. A command still running at the deadline (or past its output with
// kill_on_overflow) has its process group killed; one stuck in the kernel, which SIGKILL does
// not end at once, is left unreaped after a second rather than hanging the caller. Fails only
// when the command cannot be started (NotFound when it does not exist) or its pipes fail.
Result<CapturedRun> RunAndCapture(SpawnOptions options, const CaptureLimits& limits);

}  // namespace cairn
