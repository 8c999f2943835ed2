// The contract of executor.h, run against every executor: a started job's command runs in its
// directory with its variables, its output goes to its log, Wait reports each job's exit code
// once and returns at its deadline while jobs run, Kill stops a job (which still comes through
// Wait), and a job that cannot start is a Start error.
//
// The Slurm executor runs against SimulatedSlurm: sbatch, squeue, scontrol, sacct and scancel
// answered as Slurm 22.05 answers them (tests/data/slurm), for batch scripts run as child
// processes of this one, so that its scripts are executed as a cluster would.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "pipeline/executor.h"
#include "pipeline/slurm_executor.h"
#include "util/file.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A cluster of one node: each sbatch runs its script as a child process, in its own process
// group, with its output appended to --output.
class SimulatedSlurm : public SlurmCommands {
 public:
  ~SimulatedSlurm() override {
    for (auto& [id, job] : jobs_) {
      if (!job.ended) {
        kill(-job.pid, SIGKILL);
        waitpid(job.pid, nullptr, 0);
      }
    }
  }

  Result<env::CommandOutput> Run(const std::vector<std::string>& argv) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (argv[0] == "sbatch") return Submit(argv);
    if (argv[0] == "squeue") return Squeue(argv);
    if (argv[0] == "scontrol" || argv[0] == "sacct") {
      Job* job = Find(argv[argv[0] == "scontrol" ? 4 : 5]);
      if (job == nullptr) return env::CommandOutput{1, "", "Invalid job id specified\n"};
      Reap(*job);
      const std::string code = std::to_string(job->exit_code) + ":" + std::to_string(job->signal);
      if (argv[0] == "sacct")
        return env::CommandOutput{0, job->id + "|" + State(*job) + "|" + code + "\n", ""};
      return env::CommandOutput{
          0, "JobId=" + job->id + " JobState=" + State(*job) + " ExitCode=" + code + "\n", ""};
    }
    if (argv[0] == "scancel") {
      if (Job* job = Find(argv[1]); job != nullptr && !job->ended) {
        job->cancelled = true;
        kill(-job->pid, SIGKILL);
      }
      return env::CommandOutput{0, "", ""};
    }
    return env::CommandOutput{1, "", argv[0] + ": not simulated"};
  }

 private:
  struct Job {
    std::string id;
    pid_t pid = 0;
    bool ended = false;
    bool cancelled = false;
    int exit_code = 0;
    int signal = 0;
  };

  Result<env::CommandOutput> Submit(const std::vector<std::string>& argv) {
    std::string output = "/dev/null";
    for (const std::string& a : argv) {
      if (a.starts_with("--output=")) output = a.substr(9);
    }
    // sbatch expands %-patterns in --output; "%%" is a literal '%'.
    for (size_t p = output.find("%%"); p != std::string::npos; p = output.find("%%", p + 1)) {
      output.erase(p, 1);
    }
    const std::string script = argv.back();
    pid_t pid = fork();
    if (pid < 0) return Internal("fork failed");
    if (pid == 0) {
      setpgid(0, 0);
      int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      execl("/bin/sh", "sh", script.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(pid, pid);
    Job job;
    job.id = std::to_string(next_id_++);
    job.pid = pid;
    jobs_[job.id] = job;
    return env::CommandOutput{0, job.id + "\n", ""};
  }

  Result<env::CommandOutput> Squeue(const std::vector<std::string>& argv) {
    std::string ids;
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "-j") ids = argv[i + 1];
    }
    std::string out;
    for (auto& [id, job] : jobs_) {
      if (!ids.empty() && ("," + ids + ",").find("," + id + ",") == std::string::npos) continue;
      Reap(job);
      out += id + "|" + State(job) + "|None\n";
    }
    return env::CommandOutput{0, out, ""};
  }

  Job* Find(const std::string& id) {
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : &it->second;
  }

  static void Reap(Job& job) {
    if (job.ended) return;
    int status = 0;
    if (waitpid(job.pid, &status, WNOHANG) != job.pid) return;
    job.ended = true;
    if (WIFSIGNALED(status)) job.signal = WTERMSIG(status);
    if (WIFEXITED(status)) job.exit_code = WEXITSTATUS(status);
  }

  static std::string State(const Job& job) {
    if (!job.ended) return "RUNNING";
    if (job.cancelled) return "CANCELLED";
    return job.exit_code == 0 && job.signal == 0 ? "COMPLETED" : "FAILED";
  }

  std::mutex mu_;
  std::map<std::string, Job> jobs_;
  int next_id_ = 100;
};

struct LocalBackend {
  static std::unique_ptr<Executor> Make() { return NewLocalExecutor(); }
};

struct SlurmBackend {
  static std::unique_ptr<Executor> Make() {
    SlurmOptions options;
    options.poll_ms = 5;
    return NewSlurmExecutor(std::make_unique<SimulatedSlurm>(), options);
  }
};

template <typename Backend>
class ExecutorConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cairn-executor-conformance-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    executor_ = Backend::Make();
  }
  void TearDown() override {
    executor_.reset();
    fs::remove_all(dir_);
  }

  StepJob Job(size_t step, const std::string& command) {
    StepJob job;
    job.step = step;
    job.id = "s" + std::to_string(step);
    job.command = command;
    job.cwd = dir_.string();
    job.log_path = (dir_ / (job.id + ".log")).string();
    job.env["GREETING"] = "hello 'world'";
    return job;
  }

  // The next result, within 20 s.
  JobResult Next() {
    Result<std::optional<JobResult>> r = executor_->Wait(SystemClock()->NowMillis() + 20'000);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r.ok() && r->has_value()) << "no job ended within 20 s";
    return r.ok() && r->has_value() ? **r : JobResult{.error = "none"};
  }

  std::string Log(size_t step) {
    Result<std::string> text = ReadFile((dir_ / ("s" + std::to_string(step) + ".log")).string());
    return text.ok() ? *text : "";
  }

  fs::path dir_;
  std::unique_ptr<Executor> executor_;
};

using Backends = ::testing::Types<LocalBackend, SlurmBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, LocalBackend> ? "Local" : "Slurm";
  }
};
TYPED_TEST_SUITE(ExecutorConformanceTest, Backends, BackendNames);

TYPED_TEST(ExecutorConformanceTest, RunsTheCommandInItsDirectoryWithItsVariables) {
  ASSERT_TRUE(this->executor_->Start(this->Job(0, "echo \"$GREETING\"; pwd; echo oops >&2")).ok());
  JobResult r = this->Next();
  EXPECT_EQ(r.step, 0u);
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(this->Log(0), "hello 'world'\n" + this->dir_.string() + "\noops\n")
      << "stdout and stderr in the log";
}

TYPED_TEST(ExecutorConformanceTest, ReportsEachJobsExitCodeOnce) {
  ASSERT_TRUE(this->executor_->Start(this->Job(0, "exit 3")).ok());
  ASSERT_TRUE(this->executor_->Start(this->Job(1, "true")).ok());
  std::map<size_t, JobResult> results;
  for (int i = 0; i < 2; ++i) {
    JobResult r = this->Next();
    EXPECT_EQ(results.count(r.step), 0u) << "step " << r.step << " reported twice";
    results[r.step] = r;
  }
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].exit_code, 3);
  EXPECT_FALSE(results[0].ok()) << "a non-zero exit is a failure";
  EXPECT_FALSE(results[0].signaled);
  EXPECT_TRUE(results[1].ok());
}

TYPED_TEST(ExecutorConformanceTest, WaitReturnsAtTheDeadlineWhileJobsRun) {
  ASSERT_TRUE(this->executor_->Start(this->Job(0, "sleep 30")).ok());
  Result<std::optional<JobResult>> r = this->executor_->Wait(SystemClock()->NowMillis() + 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->has_value());
  this->executor_->Kill(0);
  this->Next();
}

TYPED_TEST(ExecutorConformanceTest, KillStopsTheJobWhichStillEndsThroughWait) {
  ASSERT_TRUE(this->executor_->Start(this->Job(5, "echo started; sleep 30; echo finished")).ok());
  // Until its first line is out, the job may not have started its command yet.
  for (int i = 0; i < 2000 && this->Log(5).empty(); ++i) usleep(5'000);
  this->executor_->Kill(5);
  JobResult r = this->Next();
  EXPECT_EQ(r.step, 5u);
  EXPECT_TRUE(r.signaled);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(this->Log(5), Not(HasSubstr("finished")));
  this->executor_->Kill(5);  // safe for a job that has ended
}

TYPED_TEST(ExecutorConformanceTest, AJobThatCannotStartIsAStartErrorOrAFailure) {
  StepJob job = this->Job(0, "true");
  job.cwd = (this->dir_ / "nope").string();
  Status s = this->executor_->Start(job);
  if (s.ok()) {
    // A batch system learns of a missing directory only when the job runs.
    EXPECT_FALSE(this->Next().ok());
  }
}

TYPED_TEST(ExecutorConformanceTest, ItsClockIsTheOneDeadlinesAreMeasuredOn) {
  const int64_t now = this->executor_->clock().NowMillis();
  EXPECT_NEAR(now, SystemClock()->NowMillis(), 1'000);
  EXPECT_FALSE(this->executor_->name().empty());
}

}  // namespace
}  // namespace cairn::pipeline
