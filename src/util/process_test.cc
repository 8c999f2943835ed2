#include "util/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

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

}  // namespace
}  // namespace cairn
