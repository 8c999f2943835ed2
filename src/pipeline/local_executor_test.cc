#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <set>

#include "pipeline/executor.h"
#include "util/file.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;

class LocalExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cairn-local-exec-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  StepJob Job(size_t step, const std::string& command) {
    StepJob job;
    job.step = step;
    job.id = "s" + std::to_string(step);
    job.command = command;
    job.cwd = dir_.string();
    job.log_path = (dir_ / (job.id + ".log")).string();
    job.env["GREETING"] = "hello";
    return job;
  }

  fs::path dir_;
};

TEST_F(LocalExecutorTest, RunsCommandsInTheirDirectoryWithOutputInTheLog) {
  std::unique_ptr<Executor> e = NewLocalExecutor();
  ASSERT_TRUE(e->Start(Job(0, "echo $GREETING; pwd; echo oops >&2; exit 3")).ok());
  ASSERT_TRUE(e->Start(Job(1, "true")).ok());
  std::set<size_t> seen;
  const int64_t deadline = SystemClock()->NowMillis() + 10'000;
  while (seen.size() < 2) {
    Result<std::optional<JobResult>> r = e->Wait(deadline);
    ASSERT_TRUE(r.ok() && r->has_value()) << "both end well before the deadline";
    const JobResult& result = **r;
    seen.insert(result.step);
    EXPECT_EQ(result.exit_code, result.step == 0 ? 3 : 0);
    EXPECT_FALSE(result.signaled);
  }
  Result<std::string> log = ReadFile((dir_ / "s0.log").string());
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(*log, "hello\n" + dir_.string() + "\noops\n");
}

// CPU time this process has used, in ms.
int64_t CpuMillis() {
  rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000 +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000;
}

class LocalExecutorWaitTest : public LocalExecutorTest,
                              public ::testing::WithParamInterface<bool> {};

TEST_P(LocalExecutorWaitTest, WaitReturnsAtTheDeadlineAndKillTakesTheWholeGroup) {
  LocalExecutorOptions options;
  options.use_pidfd = GetParam();
  std::unique_ptr<Executor> e = NewLocalExecutor(options);
  // The shell starts a child that would outlive it if only the shell were killed.
  ASSERT_TRUE(e->Start(Job(7, "sleep 30 & echo $! > child.pid; wait")).ok());
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t cpu0 = CpuMillis();
  Result<std::optional<JobResult>> r = e->Wait(SystemClock()->NowMillis() + 300);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
  EXPECT_LT(CpuMillis() - cpu0, 150) << "waiting sleeps rather than spins";
  // Past the deadline, a wait returns at once.
  r = e->Wait(SystemClock()->NowMillis() - 1);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  e->Kill(7);
  r = e->Wait(SystemClock()->NowMillis() + 10'000);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_TRUE((*r)->signaled);
  EXPECT_EQ((*r)->exit_code, 128 + 9);
  Result<std::string> pid = ReadFile((dir_ / "child.pid").string());
  ASSERT_TRUE(pid.ok());
  const pid_t child = std::stoi(*pid);
  // The orphaned sleep is gone too: no such process, or a zombie its new parent has not
  // reaped yet (give the kernel a moment to deliver the signal).
  auto alive = [child] {
    Result<std::string> stat = ReadFile("/proc/" + std::to_string(child) + "/stat");
    if (!stat.ok()) return false;
    size_t paren = stat->rfind(')');
    return paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] != 'Z';
  };
  for (int i = 0; i < 100 && alive(); ++i) usleep(10'000);
  EXPECT_FALSE(alive());
}

INSTANTIATE_TEST_SUITE_P(PidfdOrPolling, LocalExecutorWaitTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Pidfd") : std::string("Polling");
                         });

TEST_F(LocalExecutorTest, AMissingDirectoryIsAStartError) {
  std::unique_ptr<Executor> e = NewLocalExecutor();
  StepJob job = Job(0, "true");
  job.cwd = (dir_ / "nope").string();
  Status s = e->Start(job);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace cairn::pipeline
