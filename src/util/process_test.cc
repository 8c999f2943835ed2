#include "util/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fakes/temp_dir.h"
#include "util/file.h"

namespace cairn {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(ProcessTest, CapturesOutputWithEnvAndWorkingDirectory) {
  SpawnOptions o;
  o.argv = {"sh", "-c", "echo \"$CAIRN_PROCESS_TEST\"; pwd; echo oops >&2; exit 7"};
  o.env = {{"CAIRN_PROCESS_TEST", "from-parent"}};
  o.cwd = "/";
  o.capture_output = true;
  auto p = Process::Spawn(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(ReadAll(p->stdout_fd()), "from-parent\n/\n");
  EXPECT_EQ(ReadAll(p->stderr_fd()), "oops\n");
  auto exit = p->Wait();
  ASSERT_TRUE(exit.ok());
  EXPECT_FALSE(exit->signaled);
  EXPECT_EQ(exit->code, 7);
  EXPECT_EQ(exit->ShellCode(), 7);
}

TEST(ProcessTest, RunsInItsOwnGroupAndTheGroupCanBeSignalled) {
  SpawnOptions o;
  o.argv = {"sleep", "30"};
  auto p = Process::Spawn(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(getpgid(p->pid()), p->pid());
  auto running = p->TryWait();
  ASSERT_TRUE(running.ok());
  EXPECT_FALSE(running->has_value());
  p->SignalGroup(SIGTERM);
  auto exit = p->Wait();
  ASSERT_TRUE(exit.ok());
  EXPECT_TRUE(exit->signaled);
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_EQ(exit->ShellCode(), 128 + SIGTERM);
  EXPECT_NE(exit->ToString().find("signal 15"), std::string::npos);
}

TEST(ProcessTest, DestroyingAProcessNotWaitedForEndsAndReapsIt) {
  pid_t pid = -1;
  {
    SpawnOptions o;
    o.argv = {"sleep", "30"};
    auto p = Process::Spawn(o);
    ASSERT_TRUE(p.ok());
    pid = p->pid();
  }
  // Reaped: no such child any more (a zombie would still be there to wait for).
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(kill(pid, 0), -1);
}

TEST(ProcessTest, MissingCommandAndDirectoryAreNotFound) {
  SpawnOptions o;
  o.argv = {"cairn-no-such-command"};
  EXPECT_EQ(Process::Spawn(o).status().code(), StatusCode::kNotFound);
  o.argv = {"true"};
  o.cwd = "/no/such/dir";
  EXPECT_FALSE(Process::Spawn(o).ok());
  o.argv.clear();
  EXPECT_EQ(Process::Spawn(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(RunAndCaptureTest, KeepsBothOutputsAndTheExitStatus) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "printf out; printf err >&2; exit 3"};
  Result<CapturedRun> run = RunAndCapture(o, CaptureLimits{});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->output, "out");
  EXPECT_EQ(run->error_output, "err");
  EXPECT_FALSE(run->timed_out);
  EXPECT_FALSE(run->exit.signaled);
  EXPECT_EQ(run->exit.code, 3);
}

TEST(RunAndCaptureTest, CapsEachOutputAndDrainsTheRest) {
  SpawnOptions o;
  // 1 MiB on each stream: more than a pipe holds, so a reader of one stream alone would hang.
  o.argv = {"/bin/sh", "-c", "head -c 1048576 /dev/zero >&2; head -c 1048576 /dev/zero"};
  CaptureLimits limits;
  limits.max_output = 10;
  limits.max_error_output = 20;
  Result<CapturedRun> run = RunAndCapture(o, limits);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->output.size(), 10u);
  EXPECT_EQ(run->error_output.size(), 20u);
  EXPECT_TRUE(run->output_overflowed);
  EXPECT_EQ(run->exit.code, 0);
}

TEST(RunAndCaptureTest, KillsWhatOutlivesItsTimeoutOrItsOutput) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "printf started; exec sleep 30"};
  CaptureLimits limits;
  limits.timeout = std::chrono::milliseconds(200);
  auto start = std::chrono::steady_clock::now();
  Result<CapturedRun> run = RunAndCapture(o, limits);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->timed_out);
  EXPECT_EQ(run->output, "started");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  o.argv = {"/bin/sh", "-c", "exec yes"};
  limits.timeout = std::chrono::seconds(60);
  limits.max_output = 1000;
  limits.kill_on_overflow = true;
  start = std::chrono::steady_clock::now();
  run = RunAndCapture(o, limits);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->output_overflowed);
  EXPECT_FALSE(run->timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RunAndCaptureTest, AMissingCommandIsNotFound) {
  SpawnOptions o;
  o.argv = {"/nonexistent/cairn-no-such-command"};
  Result<CapturedRun> run = RunAndCapture(o, CaptureLimits{});
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), StatusCode::kNotFound);
}

TEST(ProcessTest, AForkedCopyRunsAFunctionAsACommandWouldRun) {
  fakes::TempDir dir;
  SpawnOptions options;
  options.cwd = dir.path().string();
  options.output_path = (dir / "out.log").string();
  options.env = {{"CAIRN_FORK_TEST", "set"}};
  const pid_t parent_group = getpgrp();
  Result<Process> child = Process::Fork(options, [parent_group] {
    std::printf("in %s with %s, own group %d\n", std::filesystem::current_path().c_str(),
                std::getenv("CAIRN_FORK_TEST"), getpgrp() != parent_group ? 1 : 0);
    return 7;
  });
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  Result<ExitStatus> exit = child->Wait();
  ASSERT_TRUE(exit.ok());
  EXPECT_FALSE(exit->signaled);
  EXPECT_EQ(exit->code, 7);
  Result<std::string> out = ReadFile(dir / "out.log");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "in " + std::filesystem::canonical(dir.path()).string() + " with set, own group 1\n");
  EXPECT_EQ(std::getenv("CAIRN_FORK_TEST"), nullptr) << "the parent's environment is its own";
}

}  // namespace
}  // namespace cairn
