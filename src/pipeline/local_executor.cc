// The local executor: each job is `/bin/sh -c COMMAND` in its own process group, with its
// output appended to the job's log file. Waiting polls a pidfd per running job, so that the
// builder sleeps until a job ends or its next deadline, whichever comes first.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string_view>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "pipeline/executor.h"
#include "util/file.h"
#include "util/process.h"

namespace cairn::pipeline {
namespace {

int PidFdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

class LocalExecutor : public Executor {
 public:
  explicit LocalExecutor(const LocalExecutorOptions& options) : options_(options) {}
  ~LocalExecutor() override {
    for (auto& [step, job] : jobs_) {
      job.process.SignalGroup(SIGKILL);
      if (job.pidfd >= 0) close(job.pidfd);
    }
  }

  std::string name() const override { return "local"; }
  Clock& clock() override { return *SystemClock(); }

  Status Start(const StepJob& job) override {
    SpawnOptions options;
    options.argv = {"/bin/sh", "-c", job.command};
    options.cwd = job.cwd;
    options.output_path = job.log_path;
    for (const auto& [name, value] : job.env) options.env.push_back({name, value});
    CAIRN_ASSIGN_OR_RETURN(Process process, Process::Spawn(options));
    const int pidfd = options_.use_pidfd ? PidFdOpen(process.pid()) : -1;
    jobs_.emplace(job.step, Running{std::move(process), pidfd});
    return Status::Ok();
  }

  Result<std::optional<JobResult>> Wait(int64_t deadline_ms) override {
    for (;;) {
      // A job that has ended already (or cannot be polled) is reported first.
      std::vector<pollfd> fds;
      std::vector<size_t> steps;
      for (auto& [step, job] : jobs_) {
        if (job.pidfd < 0) {
          Result<std::optional<ExitStatus>> ended = job.process.TryWait();
          if (!ended.ok()) return ended.status();
          if (ended->has_value()) return Reap(step, **ended);
          continue;
        }
        fds.push_back({job.pidfd, POLLIN, 0});
        steps.push_back(step);
      }
      int64_t wait = std::max<int64_t>(0, deadline_ms - SystemClock()->NowMillis());
      // Jobs without a pidfd (an old kernel, a seccomp filter) are looked at every 10 ms.
      if (fds.size() != jobs_.size()) wait = std::min<int64_t>(wait, 10);
      if (fds.empty()) {
        if (wait > 0) usleep(static_cast<useconds_t>(std::min<int64_t>(wait, 1000) * 1000));
      } else {
        int n = poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(wait, 1 << 30)));
        if (n < 0 && errno != EINTR) return Internal("poll: " + std::string(strerror(errno)));
        for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
          if (fds[i].revents == 0) continue;
          Running& job = jobs_.at(steps[i]);
          Result<ExitStatus> status = job.process.Wait();
          if (!status.ok()) return status.status();
          return Reap(steps[i], *status);
        }
      }
      if (SystemClock()->NowMillis() >= deadline_ms) return std::optional<JobResult>();
    }
  }

  void Kill(size_t step) override {
    auto it = jobs_.find(step);
    if (it != jobs_.end()) it->second.process.SignalGroup(SIGKILL);
  }

 private:
  struct Running {
    Process process;
    int pidfd = -1;
  };

  std::optional<JobResult> Reap(size_t step, const ExitStatus& status) {
    auto it = jobs_.find(step);
    if (it->second.pidfd >= 0) close(it->second.pidfd);
    // Whatever the command left running in its group goes with it.
    it->second.process.SignalGroup(SIGKILL);
    jobs_.erase(it);
    JobResult r;
    r.step = step;
    r.signaled = status.signaled;
    r.exit_code = status.ShellCode();
    return r;
  }

  LocalExecutorOptions options_;
  std::map<size_t, Running> jobs_;
};

}  // namespace

std::unique_ptr<Executor> NewLocalExecutor(const LocalExecutorOptions& options) {
  return std::make_unique<LocalExecutor>(options);
}

int KillLeftoverSteps(const std::string& run_id) {
  const std::string marker = "CAIRN_PIPELINE_RUN=" + run_id;
  std::set<pid_t> groups;
  std::error_code ec;
  for (const std::filesystem::directory_entry& e :
       std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const pid_t pid = std::stoi(name);
    if (pid == getpid()) continue;
    Result<std::string> environ = ReadFile(e.path() / "environ");
    if (!environ.ok()) continue;
    // NUL-separated NAME=value entries.
    size_t pos = 0;
    bool found = false;
    while (pos < environ->size() && !found) {
      size_t end = environ->find('\0', pos);
      if (end == std::string::npos) end = environ->size();
      found = std::string_view(*environ).substr(pos, end - pos) == marker;
      pos = end + 1;
    }
    if (!found) continue;
    const pid_t group = getpgid(pid);
    if (group > 0 && group != getpgrp()) groups.insert(group);
  }
  for (pid_t group : groups) kill(-group, SIGKILL);
  return static_cast<int>(groups.size());
}

}  // namespace cairn::pipeline
