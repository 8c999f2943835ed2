#include "pipeline/slurm_executor.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <map>
#include <thread>

#include "util/file.h"
#include "util/process.h"
#include "util/strings.h"

namespace cairn::pipeline {
namespace {

// "CANCELLED by 0" -> "CANCELLED".
std::string BareState(std::string_view state) {
  std::string s(Trim(state));
  if (size_t space = s.find(' '); space != std::string::npos) s.resize(space);
  return s;
}

// "3:0" -> code 3, signal 0.
bool ParseExit(std::string_view text, SlurmJobState* out) {
  const std::string trimmed(Trim(text));
  std::vector<std::string_view> parts = Split(trimmed, ':');
  if (parts.size() != 2) return false;
  try {
    out->exit_code = std::stoi(std::string(parts[0]));
    out->signal = std::stoi(std::string(parts[1]));
  } catch (...) {
    return false;
  }
  out->has_exit = true;
  return true;
}

class RealCommands : public SlurmCommands {
 public:
  explicit RealCommands(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  Result<env::CommandOutput> Run(const std::vector<std::string>& argv) override {
    return env::RealHostProbe()->RunCommand(argv, timeout_);
  }

 private:
  std::chrono::milliseconds timeout_;
};

class SlurmExecutor : public Executor {
 public:
  SlurmExecutor(std::unique_ptr<SlurmCommands> commands, SlurmOptions options, Clock* clock)
      : commands_(std::move(commands)),
        options_(std::move(options)),
        clock_(clock != nullptr ? clock : SystemClock()) {}

  ~SlurmExecutor() override {
    // Jobs still queued or running when the runner goes are cancelled.
    for (const auto& [step, job] : jobs_) (void)commands_->Run({"scancel", job.id});
  }

  std::string name() const override { return "slurm"; }
  Clock& clock() override { return *clock_; }

  Status Start(const StepJob& job) override {
    // The batch script: the environment, the directory, then the command.
    std::string script = "#!/bin/sh\n";
    // sbatch passes on the environment it runs in, where the commands' runner set LC_ALL=C
    // for their output: the job gets this process's own.
    const char* lc_all = std::getenv("LC_ALL");
    script += lc_all != nullptr ? "export LC_ALL=" + ShellQuote(lc_all) + "\n" : "unset LC_ALL\n";
    for (const auto& [name, value] : job.env) {
      script += "export " + name + "=" + ShellQuote(value) + "\n";
    }
    script += "cd " + ShellQuote(job.cwd) + " || exit 1\n";
    script += "exec /bin/sh -c " + ShellQuote(job.command) + "\n";
    const std::string script_path = job.log_path + ".sbatch";
    CAIRN_RETURN_IF_ERROR(WriteFileAtomic(script_path, script, Sync::kNoSync));

    // Named after the pipeline run, so that a resume finds what a killed runner left queued.
    std::string name_prefix = options_.job_name_prefix;
    if (name_prefix.empty()) {
      auto run = job.env.find("CAIRN_PIPELINE_RUN");
      name_prefix = "cairn-" + (run != job.env.end() ? run->second.substr(0, 8) + "-" : "");
    }
    std::vector<std::string> argv = {
        "sbatch", "--parsable", "--job-name=" + name_prefix + job.id,
        // sbatch reads '%' in the path as a pattern; "%%" is a '%'.
        "--output=" + EscapePercent(job.log_path), "--open-mode=append", "--chdir=" + job.cwd,
        "--cpus-per-task=" +
            std::to_string(static_cast<int>(std::ceil(std::max(1.0, job.resources.cpus))))};
    if (job.resources.memory_mib > 0) {
      argv.push_back("--mem=" + std::to_string(job.resources.memory_mib) + "M");
    }
    if (job.resources.gpus > 0) argv.push_back("--gres=gpu:" + std::to_string(job.resources.gpus));
    if (job.timeout_ms > 0) {
      // Slurm counts whole minutes; cairn's own timeout (from submission) is the precise one.
      argv.push_back("--time=" + std::to_string((job.timeout_ms + 59'999) / 60'000 + 1));
    }
    argv.insert(argv.end(), options_.sbatch_args.begin(), options_.sbatch_args.end());
    argv.push_back(script_path);
    CAIRN_ASSIGN_OR_RETURN(env::CommandOutput out, commands_->Run(argv));
    if (out.exit_code != 0) {
      return FailedPrecondition(
          "sbatch refused the job: " +
          std::string(Trim(out.error_output.empty() ? out.output : out.error_output)));
    }
    CAIRN_ASSIGN_OR_RETURN(std::string id, ParseSbatchParsable(out.output));
    jobs_[job.step] = {id};
    return Status::Ok();
  }

  Result<std::optional<JobResult>> Wait(int64_t deadline_ms) override {
    for (;;) {
      if (!ended_.empty()) {
        JobResult r = ended_.front();
        ended_.erase(ended_.begin());
        return std::optional<JobResult>(r);
      }
      int64_t now = clock_->NowMillis();
      // squeue at most every poll_ms, however often the builder looks.
      if (!jobs_.empty() && now - last_poll_ms_ >= options_.poll_ms) {
        last_poll_ms_ = now;
        CAIRN_RETURN_IF_ERROR(Poll());
        if (!ended_.empty()) continue;
      }
      now = clock_->NowMillis();
      if (now >= deadline_ms) return std::optional<JobResult>();
      const int64_t wait =
          std::max<int64_t>(1, std::min(deadline_ms, last_poll_ms_ + options_.poll_ms) - now);
      std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    }
  }

  void Kill(size_t step) override {
    auto it = jobs_.find(step);
    if (it == jobs_.end()) return;
    if (it->second.killed_ms < 0) it->second.killed_ms = clock_->NowMillis();
    (void)commands_->Run({"scancel", it->second.id});
  }

 private:
  struct Job {
    std::string id;
    int64_t killed_ms = -1;  // when scancel was sent, or -1
  };

  static std::string EscapePercent(const std::string& path) {
    std::string out;
    for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
    return out;
  }

  // Asks squeue about every job; the ended ones move to ended_.
  Status Poll() {
    std::string ids;
    for (const auto& [step, job] : jobs_) ids += (ids.empty() ? "" : ",") + job.id;
    Result<env::CommandOutput> polled =
        commands_->Run({"squeue", "-h", "-t", "all", "-j", ids, "-o", "%i|%T|%r"});
    const int64_t now = clock_->NowMillis();
    if (!polled.ok()) {
      if (failing_since_ms_ < 0) failing_since_ms_ = now;
      if (now - failing_since_ms_ >= options_.give_up_ms) {
        return polled.status().WithContext("asking Slurm about the pipeline's jobs");
      }
      // Cancelled jobs are not waited for past a grace period: Ctrl-C and timeouts must end.
      for (auto it = jobs_.begin(); it != jobs_.end();) {
        if (it->second.killed_ms < 0 || now - it->second.killed_ms < options_.cancel_grace_ms) {
          ++it;
          continue;
        }
        JobResult r;
        r.step = it->first;
        r.signaled = true;
        r.exit_code = 128 + 9;
        r.error = "cancelled Slurm job " + it->second.id +
                  " (Slurm could not be asked how it ended: " + polled.status().message() + ")";
        ended_.push_back(r);
        it = jobs_.erase(it);
      }
      return Status::Ok();  // ask again at the next poll
    }
    failing_since_ms_ = -1;
    const env::CommandOutput& out = *polled;
    std::map<std::string, SlurmJobState> known;
    if (out.exit_code == 0) {
      for (SlurmJobState& s : ParseSqueue(out.output)) known[s.job_id] = s;
    }
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      auto k = known.find(it->second.id);
      // Still queued or running.
      if (k != known.end() && !SlurmStateIsFinal(k->second.state)) {
        ++it;
        continue;
      }
      // Ended, or unknown to squeue (forgotten, or squeue failed): ask for the end.
      Result<SlurmJobState> end = EndOf(it->second.id);
      if (!end.ok()) {
        if (k == known.end() && out.exit_code == 0) {
          JobResult r;
          r.step = it->first;
          r.exit_code = -1;
          r.error = "Slurm job " + it->second.id + " vanished: " + end.status().message();
          ended_.push_back(r);
          it = jobs_.erase(it);
          continue;
        }
        ++it;  // try again at the next poll
        continue;
      }
      if (!SlurmStateIsFinal(end->state)) {
        ++it;
        continue;
      }
      ended_.push_back(SlurmResult(it->first, *end));
      it = jobs_.erase(it);
    }
    return Status::Ok();
  }

  // The job's state and exit code: scontrol while slurmctld remembers it, else sacct.
  Result<SlurmJobState> EndOf(const std::string& id) {
    Result<env::CommandOutput> scontrol = commands_->Run({"scontrol", "show", "job", "-o", id});
    if (scontrol.ok() && scontrol->exit_code == 0) {
      Result<SlurmJobState> s = ParseScontrolJob(scontrol->output);
      if (s.ok()) return s;
    }
    CAIRN_ASSIGN_OR_RETURN(
        env::CommandOutput sacct,
        commands_->Run({"sacct", "-n", "-P", "-X", "-j", id, "-o", "JobID,State,ExitCode"}));
    if (sacct.exit_code != 0) {
      return Unavailable("neither scontrol nor sacct knows it: " +
                         std::string(Trim(sacct.error_output)));
    }
    return ParseSacct(sacct.output);
  }

  std::unique_ptr<SlurmCommands> commands_;
  SlurmOptions options_;
  Clock* clock_;
  std::map<size_t, Job> jobs_;
  std::vector<JobResult> ended_;
  int64_t last_poll_ms_ = 0;
  int64_t failing_since_ms_ = -1;  // when squeue first failed to run, or -1
};

}  // namespace

std::unique_ptr<SlurmCommands> RealSlurmCommands(std::chrono::milliseconds timeout) {
  return std::make_unique<RealCommands>(timeout);
}

std::unique_ptr<Executor> NewSlurmExecutor(std::unique_ptr<SlurmCommands> commands,
                                           SlurmOptions options, Clock* clock) {
  return std::make_unique<SlurmExecutor>(std::move(commands), std::move(options), clock);
}

Result<int> CancelLeftoverSlurmJobs(SlurmCommands& commands, const std::string& run_id) {
  return CancelSlurmJobsNamed(commands, "cairn-" + run_id.substr(0, 8) + "-");
}

Result<int> CancelSlurmJobsNamed(SlurmCommands& commands, const std::string& prefix,
                                 const std::function<bool(std::string_view)>& rest) {
  CAIRN_ASSIGN_OR_RETURN(
      env::CommandOutput out,
      commands.Run({"squeue", "-h", "-u", std::to_string(getuid()), "-o", "%i|%j"}));
  if (out.exit_code != 0) {
    return Unavailable("squeue failed: " + std::string(Trim(out.error_output)));
  }
  int cancelled = 0;
  for (std::string_view line : Split(out.output, '\n')) {
    const std::string trimmed(Trim(line));
    std::vector<std::string_view> f = Split(trimmed, '|');
    if (f.size() < 2 || !f[1].starts_with(prefix)) continue;
    if (rest && !rest(f[1].substr(prefix.size()))) continue;
    (void)commands.Run({"scancel", std::string(f[0])});
    ++cancelled;
  }
  return cancelled;
}

Result<std::string> ParseSbatchParsable(std::string_view output) {
  std::string line(Trim(output));
  if (size_t nl = line.rfind('\n'); nl != std::string::npos) {
    line = std::string(Trim(line.substr(nl + 1)));
  }
  if (size_t semi = line.find(';'); semi != std::string::npos) line.resize(semi);
  if (line.empty() || !std::all_of(line.begin(), line.end(), ::isdigit)) {
    return Internal("sbatch printed no job id: '" + std::string(Trim(output)) + "'");
  }
  return line;
}

std::vector<SlurmJobState> ParseSqueue(std::string_view output) {
  std::vector<SlurmJobState> out;
  for (std::string_view line : Split(output, '\n')) {
    const std::string trimmed(Trim(line));
    std::vector<std::string_view> f = Split(trimmed, '|');
    if (f.size() < 2 || Trim(f[0]).empty()) continue;
    SlurmJobState s;
    s.job_id = std::string(Trim(f[0]));
    s.state = BareState(f[1]);
    out.push_back(s);
  }
  return out;
}

Result<SlurmJobState> ParseScontrolJob(std::string_view output) {
  SlurmJobState s;
  const std::string trimmed(Trim(output));
  for (std::string_view field : Split(trimmed, ' ')) {
    size_t eq = field.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = field.substr(0, eq);
    std::string_view value = field.substr(eq + 1);
    if (key == "JobId") s.job_id = std::string(value);
    if (key == "JobState") s.state = BareState(value);
    if (key == "ExitCode") ParseExit(value, &s);
  }
  if (s.job_id.empty() || s.state.empty()) {
    return Internal("scontrol printed no job: '" + std::string(Trim(output)).substr(0, 200) + "'");
  }
  return s;
}

Result<SlurmJobState> ParseSacct(std::string_view output) {
  for (std::string_view line : Split(output, '\n')) {
    const std::string trimmed(Trim(line));
    std::vector<std::string_view> f = Split(trimmed, '|');
    if (f.size() < 3 || Trim(f[0]).empty() || f[0].find('.') != std::string_view::npos) continue;
    SlurmJobState s;
    s.job_id = std::string(Trim(f[0]));
    s.state = BareState(f[1]);
    ParseExit(f[2], &s);
    return s;
  }
  return NotFound("sacct printed no job line");
}

bool SlurmStateIsFinal(std::string_view state) {
  static const char* const kFinal[] = {"COMPLETED",     "FAILED",    "CANCELLED",   "TIMEOUT",
                                       "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",   "BOOT_FAIL",
                                       "DEADLINE",      "REVOKED",   "SPECIAL_EXIT"};
  return std::any_of(std::begin(kFinal), std::end(kFinal),
                     [state](const char* s) { return state == s; });
}

JobResult SlurmResult(size_t step, const SlurmJobState& s) {
  JobResult r;
  r.step = step;
  if (s.signal > 0) {
    r.signaled = true;
    r.exit_code = 128 + s.signal;
  } else {
    r.exit_code = s.exit_code;
  }
  if (s.state == "COMPLETED") return r;
  if (s.state == "FAILED" && (s.exit_code != 0 || s.signal != 0)) return r;
  if (s.state == "CANCELLED") {
    r.signaled = true;
    r.exit_code = 128 + 15;
    return r;
  }
  static const std::map<std::string, std::string> kWhy = {
      {"TIMEOUT", "Slurm's time limit was reached"},
      {"OUT_OF_MEMORY", "out of memory (Slurm's --mem limit)"},
      {"NODE_FAIL", "the node running it failed"},
      {"PREEMPTED", "preempted by Slurm"},
      {"BOOT_FAIL", "the node did not boot"},
      {"DEADLINE", "Slurm's deadline passed"},
  };
  auto it = kWhy.find(s.state);
  r.error = "Slurm job " + s.job_id + " ended " +
            (it != kWhy.end() ? it->second
                              : s.state + " (exit " + std::to_string(s.exit_code) + ":" +
                                    std::to_string(s.signal) + ")");
  if (r.exit_code == 0 && !r.signaled) r.exit_code = -1;
  return r;
}

}  // namespace cairn::pipeline
