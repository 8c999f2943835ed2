#include "util/process.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

extern char** environ;

namespace cairn {
namespace {

Status Errno(const std::string& what) { return Internal(what + ": " + strerror(errno)); }

// Closes both ends of the pipes made so far when Spawn fails part way.
struct Pipes {
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  ~Pipes() {
    for (int fd : {out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) close(fd);
    }
  }
};

// The file `program` names: itself when it has a '/', else the first executable of that name
// in a directory of `path` (an empty entry is the working directory), as execvp looks. Empty when
// there is none: the caller says "not found" without starting a process that could only fail.
std::string FindProgram(const std::string& program, const char* path) {
  if (program.find('/') != std::string::npos) return program;
  const std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
  size_t start = 0;
  for (;;) {
    const size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? colon : colon - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string::npos) return "";
    start = colon + 1;
  }
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (!signaled) return "exit code " + std::to_string(code);
  const char* name = sigdescr_np(signal);
  return "signal " + std::to_string(signal) +
         (name != nullptr ? std::string(" (") + name + ")" : "");
}

std::string ShellQuote(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out += "'";
  return out;
}

Result<Process> Process::Spawn(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return InvalidArgument("no command to run");
  }
  std::vector<char*> argv;
  for (const std::string& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [name, value] : options.env) env[name] = value;
  std::vector<std::string> env_entries;
  for (const auto& [name, value] : env) env_entries.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& e : env_entries) envp.push_back(e.data());
  envp.push_back(nullptr);

  Pipes pipes;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  struct Cleanup {
    posix_spawn_file_actions_t* a;
    posix_spawnattr_t* t;
    ~Cleanup() {
      posix_spawn_file_actions_destroy(a);
      posix_spawnattr_destroy(t);
    }
  } cleanup{&actions, &attr};

  if (options.capture_output) {
    if (pipe2(pipes.out, O_CLOEXEC) != 0 || pipe2(pipes.err, O_CLOEXEC) != 0) {
      return Errno("creating output pipes");
    }
    posix_spawn_file_actions_adddup2(&actions, pipes.out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipes.err[1], STDERR_FILENO);
  } else if (!options.output_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, options.output_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  // Its own process group, so that signals reach the command and everything it started; and
  // default signal handling and an empty mask whatever this process has set up.
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  // Looked up on the PATH the command gets.
  auto path = env.find("PATH");
  const std::string program =
      FindProgram(options.argv[0], path != env.end() ? path->second.c_str() : nullptr);
  if (program.empty()) return NotFound("command not found: " + options.argv[0]);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), envp.data());
  if (rc != 0) {
    std::string reason = strerror(rc);
    if (rc == ENOENT) return NotFound("command not found: " + options.argv[0]);
    if (!options.cwd.empty() && rc == ENOTDIR) {
      return NotFound("working directory not found: " + options.cwd);
    }
    return FailedPrecondition("cannot run " + options.argv[0] + ": " + reason);
  }
  Process p(pid, pipes.out[0], pipes.err[0]);
  pipes.out[0] = pipes.err[0] = -1;  // owned by p now; the write ends close with `pipes`
  return p;
}

Result<Process> Process::Fork(const SpawnOptions& options, const std::function<int()>& child) {
  int output = -1;
  if (!options.output_path.empty()) {
    output = ::open(options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (output < 0) return Errno("opening " + options.output_path);
  }
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    Status s = Errno("forking");
    if (output >= 0) ::close(output);
    return s;
  }
  if (pid > 0) {
    if (output >= 0) ::close(output);
    ::setpgid(pid, pid);  // also in the child: whichever runs first
    return Process(pid, -1, -1);
  }
  // The child.
  ::setpgid(0, 0);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (output >= 0) {
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::dup2(output, STDOUT_FILENO);
    ::dup2(output, STDERR_FILENO);
  }
  if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0) {
    std::fprintf(stderr, "cannot enter %s: %s\n", options.cwd.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  for (const auto& [name, value] : options.env) ::setenv(name.c_str(), value.c_str(), 1);
  int code = 1;
  try {
    code = child();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
  std::fflush(nullptr);
  ::_exit(code);
}

Process::Process(Process&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      group_(std::exchange(other.group_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      err_fd_(std::exchange(other.err_fd_, -1)) {}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    CloseFds();
    pid_ = std::exchange(other.pid_, -1);
    group_ = std::exchange(other.group_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    err_fd_ = std::exchange(other.err_fd_, -1);
  }
  return *this;
}

Process::~Process() {
  CloseFds();
  // Never leave a child behind unsupervised and unreaped: an owner that gives up on it (an
  // error while following it) ends it.
  if (pid_ > 0) {
    kill(-group_, SIGKILL);
    // A process stuck in the kernel (a hung driver) cannot die until it returns: wait a
    // second at most rather than hang the owner.
    for (int i = 0; i < 100 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(10'000);
  }
}

void Process::CloseFds() {
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
  out_fd_ = err_fd_ = -1;
}

void Process::SignalGroup(int sig) const {
  if (group_ > 0) kill(-group_, sig);
}

namespace {

ExitStatus DecodeWaitStatus(int status) {
  ExitStatus exit;
  if (WIFSIGNALED(status)) {
    exit.signaled = true;
    exit.signal = WTERMSIG(status);
  } else {
    exit.code = WEXITSTATUS(status);
  }
  return exit;
}

}  // namespace

Result<ExitStatus> Process::Wait() {
  if (pid_ <= 0) return FailedPrecondition("no process to wait for");
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) return Errno("waiting for process " + std::to_string(pid_));
  }
  pid_ = -1;
  return DecodeWaitStatus(status);
}

Result<std::optional<ExitStatus>> Process::TryWait(int* stopped_by) {
  if (pid_ <= 0) return FailedPrecondition("no process to wait for");
  if (stopped_by != nullptr) *stopped_by = 0;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG | (stopped_by != nullptr ? WUNTRACED : 0));
  if (r == 0) return std::optional<ExitStatus>();
  if (r < 0) {
    if (errno == EINTR) return std::optional<ExitStatus>();
    return Errno("waiting for process " + std::to_string(pid_));
  }
  if (WIFSTOPPED(status)) {
    *stopped_by = WSTOPSIG(status);
    return std::optional<ExitStatus>();
  }
  pid_ = -1;
  return std::optional<ExitStatus>(DecodeWaitStatus(status));
}

void NameThisThread(const char* name) {
  char shortened[16] = {};
  strncpy(shortened, name, sizeof shortened - 1);
  pthread_setname_np(pthread_self(), shortened);
}

namespace {

// Kills the command's group and reaps it if it dies within a second (see RunAndCapture).
void Abandon(Process& process) {
  process.SignalGroup(SIGKILL);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < give_up) {
    Result<std::optional<ExitStatus>> exit = process.TryWait();
    if (!exit.ok() || exit->has_value()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

Result<CapturedRun> RunAndCapture(SpawnOptions options, const CaptureLimits& limits) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + limits.timeout;
  options.capture_output = true;
  options.output_path.clear();
  CAIRN_ASSIGN_OR_RETURN(Process process, Process::Spawn(options));
  const std::string name = options.argv.empty() ? std::string("command") : options.argv[0];

  CapturedRun run;
  struct Stream {
    int fd;
    std::string* sink;
    size_t cap;
  };
  std::vector<Stream> open = {{process.stdout_fd(), &run.output, limits.max_output},
                              {process.stderr_fd(), &run.error_output, limits.max_error_output}};
  while (!open.empty()) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      break;
    }
    std::vector<pollfd> fds;
    for (const Stream& s : open) fds.push_back({s.fd, POLLIN, 0});
    int ready = poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) {
      Status failed = Errno("waiting for output of " + name);
      Abandon(process);
      return failed;
    }
    if (ready <= 0) continue;
    for (size_t i = fds.size(); i-- > 0;) {
      if (fds[i].revents == 0) continue;
      char buf[1 << 14];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));  // Process closes it
        continue;
      }
      Stream& s = open[i];
      const size_t room = s.cap - std::min(s.sink->size(), s.cap);
      s.sink->append(buf, std::min(static_cast<size_t>(n), room));
      if (s.sink == &run.output && static_cast<size_t>(n) > room) run.output_overflowed = true;
    }
    if (run.output_overflowed && limits.kill_on_overflow) break;
  }
  // The pipes are closed (or given up on): the command is ending or has ended.
  std::chrono::microseconds pause(100);
  while (!run.timed_out && !(run.output_overflowed && limits.kill_on_overflow)) {
    CAIRN_ASSIGN_OR_RETURN(std::optional<ExitStatus> exit, process.TryWait());
    if (exit) {
      run.exit = *exit;
      return run;
    }
    if (Clock::now() >= deadline) {
      run.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
  Abandon(process);
  return run;
}

}  // namespace cairn
