#include "pipeline/slurm_executor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "util/file.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;

// tests/data/slurm: outputs of Slurm 22.05 (Debian 12) recorded by tests/data/slurm/record.sh.
fs::path DataDir() {
  fs::path from_source = fs::path(__FILE__).parent_path() / "../../tests/data/slurm";
  if (fs::is_directory(from_source)) return from_source.lexically_normal();
  for (fs::path dir = fs::current_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_directory(dir / "tests/data/slurm")) return dir / "tests/data/slurm";
    if (dir == dir.parent_path()) break;
  }
  return from_source;
}

std::string Recorded(const std::string& name) {
  Result<std::string> text = ReadFile(DataDir() / name);
  EXPECT_TRUE(text.ok()) << "missing recorded output " << name;
  return text.ok() ? *text : "";
}

TEST(SlurmParseTest, RecordedOutputs) {
  EXPECT_EQ(*ParseSbatchParsable(Recorded("exit3.sbatch.out")), "3");
  EXPECT_EQ(*ParseSbatchParsable("42;cluster-a\n"), "42");
  EXPECT_FALSE(ParseSbatchParsable("Submitted batch job\n").ok());

  std::vector<SlurmJobState> running = ParseSqueue(Recorded("ok.squeue-running.out"));
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].job_id, "2");
  EXPECT_EQ(running[0].state, "RUNNING");
  EXPECT_FALSE(SlurmStateIsFinal(running[0].state));
  EXPECT_TRUE(ParseSqueue(Recorded("exit3.squeue-done.out")).empty());

  Result<SlurmJobState> ok = ParseScontrolJob(Recorded("ok.scontrol.out"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->state, "COMPLETED");
  EXPECT_TRUE(SlurmResult(0, *ok).ok());

  Result<SlurmJobState> exit3 = ParseScontrolJob(Recorded("exit3.scontrol.out"));
  ASSERT_TRUE(exit3.ok());
  JobResult r3 = SlurmResult(0, *exit3);
  EXPECT_EQ(r3.exit_code, 3);
  EXPECT_FALSE(r3.signaled);
  EXPECT_TRUE(r3.error.empty());

  Result<SlurmJobState> sacct = ParseSacct(Recorded("exit3.sacct-steps.out"));
  ASSERT_TRUE(sacct.ok());
  EXPECT_EQ(sacct->job_id, "3") << "the job's line, not its steps'";
  EXPECT_EQ(sacct->exit_code, 3);

  JobResult killed = SlurmResult(0, *ParseSacct(Recorded("signal.sacct-X.out")));
  EXPECT_TRUE(killed.signaled);
  EXPECT_EQ(killed.exit_code, 128 + 9);

  Result<SlurmJobState> cancelled = ParseSacct(Recorded("cancel.sacct-X.out"));
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state, "CANCELLED") << "without ' by 0'";
  EXPECT_TRUE(SlurmResult(0, *cancelled).signaled);

  JobResult timeout = SlurmResult(0, *ParseScontrolJob(Recorded("timeout.scontrol.out")));
  EXPECT_THAT(timeout.error, HasSubstr("time limit"));
  EXPECT_FALSE(timeout.ok());
}

// Plays recorded answers: each command's argv[0] takes the next of its queue.
class FakeCommands : public SlurmCommands {
 public:
  std::map<std::string, std::deque<env::CommandOutput>> answers;
  std::vector<std::vector<std::string>> calls;

  std::map<std::string, int> failures;  // runs of a command that fail before it answers

  Result<env::CommandOutput> Run(const std::vector<std::string>& argv) override {
    calls.push_back(argv);
    if (int& left = failures[argv[0]]; left != 0) {
      if (left > 0) --left;
      return Unavailable(argv[0] + " timed out");
    }
    std::deque<env::CommandOutput>& q = answers[argv[0]];
    if (q.empty()) return env::CommandOutput{1, "", "no answer recorded for " + argv[0]};
    env::CommandOutput out = q.front();
    if (q.size() > 1) q.pop_front();
    return out;
  }
};

class SlurmExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cairn-slurm-exec-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  StepJob Job() {
    StepJob job;
    job.step = 4;
    job.id = "train[a]";
    job.command = "python train.py --name 'x y'";
    job.cwd = dir_.string();
    job.log_path = (dir_ / "train.log").string();
    job.env["MLFLOW_RUN_ID"] = "abc";
    job.resources.cpus = 1.5;
    job.resources.memory_mib = 4096;
    job.resources.gpus = 2;
    job.timeout_ms = 90'000;
    return job;
  }

  fs::path dir_;
};

TEST_F(SlurmExecutorTest, SubmitsFollowsAndReportsTheExitCode) {
  auto commands = std::make_unique<FakeCommands>();
  FakeCommands& fake = *commands;
  fake.answers["sbatch"] = {{0, Recorded("exit3.sbatch.out"), ""}};
  fake.answers["squeue"] = {{0, "3|RUNNING|None\n", ""}, {0, "3|FAILED|NonZeroExitCode\n", ""}};
  fake.answers["scontrol"] = {{0, Recorded("exit3.scontrol.out"), ""}};
  SlurmOptions options;
  options.poll_ms = 1;
  options.sbatch_args = {"--partition=gpu"};
  std::unique_ptr<Executor> e = NewSlurmExecutor(std::move(commands), options);
  ASSERT_TRUE(e->Start(Job()).ok());

  const std::vector<std::string>& sbatch = fake.calls[0];
  EXPECT_THAT(sbatch, Contains("--cpus-per-task=2"));
  EXPECT_THAT(sbatch, Contains("--mem=4096M"));
  EXPECT_THAT(sbatch, Contains("--gres=gpu:2"));
  EXPECT_THAT(sbatch, Contains("--time=3")) << "90 s: two whole minutes and one to spare";
  EXPECT_THAT(sbatch, Contains("--output=" + (dir_ / "train.log").string()));
  EXPECT_THAT(sbatch, Contains("--partition=gpu"));
  Result<std::string> script = ReadFile(sbatch.back());
  ASSERT_TRUE(script.ok());
  EXPECT_THAT(*script, HasSubstr("export MLFLOW_RUN_ID='abc'\n"));
  EXPECT_THAT(*script, HasSubstr("exec /bin/sh -c 'python train.py --name '\\''x y'\\'''\n"));

  Result<std::optional<JobResult>> r = e->Wait(SystemClock()->NowMillis() + 10'000);
  ASSERT_TRUE(r.ok() && r->has_value()) << r.status().ToString();
  EXPECT_EQ((*r)->step, 4u);
  EXPECT_EQ((*r)->exit_code, 3);
}

TEST_F(SlurmExecutorTest, AJobSlurmForgotIsAskedOfSacctAndARefusalIsAStartError) {
  auto commands = std::make_unique<FakeCommands>();
  FakeCommands& fake = *commands;
  fake.answers["sbatch"] = {{0, "7\n", ""}};
  fake.answers["squeue"] = {{1, "", Recorded("unknown.squeue.err")}};
  fake.answers["scontrol"] = {{1, "", Recorded("unknown.scontrol.err")}};
  fake.answers["sacct"] = {{0, "7|COMPLETED|0:0\n", ""}};
  SlurmOptions options;
  options.poll_ms = 1;
  std::unique_ptr<Executor> e = NewSlurmExecutor(std::move(commands), options);
  ASSERT_TRUE(e->Start(Job()).ok());
  Result<std::optional<JobResult>> r = e->Wait(SystemClock()->NowMillis() + 10'000);
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_TRUE((*r)->ok());

  auto refusing = std::make_unique<FakeCommands>();
  refusing->answers["sbatch"] = {{1, "", Recorded("gpu.sbatch.err")}};
  std::unique_ptr<Executor> e2 = NewSlurmExecutor(std::move(refusing), options);
  Status s = e2->Start(Job());
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("Requested node configuration is not available"));
}

TEST_F(SlurmExecutorTest, SqueueFailingToRunIsRetriedUntilItHasFailedTooLong) {
  auto commands = std::make_unique<FakeCommands>();
  FakeCommands& fake = *commands;
  fake.answers["sbatch"] = {{0, "3\n", ""}};
  fake.failures["squeue"] = 2;
  fake.answers["squeue"] = {{0, "3|FAILED|NonZeroExitCode\n", ""}};
  fake.answers["scontrol"] = {{0, Recorded("exit3.scontrol.out"), ""}};
  SlurmOptions options;
  options.poll_ms = 1;
  std::unique_ptr<Executor> e = NewSlurmExecutor(std::move(commands), options);
  ASSERT_TRUE(e->Start(Job()).ok());
  Result<std::optional<JobResult>> r = e->Wait(SystemClock()->NowMillis() + 10'000);
  ASSERT_TRUE(r.ok() && r->has_value()) << r.status().ToString();
  EXPECT_EQ((*r)->exit_code, 3);

  auto hung = std::make_unique<FakeCommands>();
  hung->answers["sbatch"] = {{0, "3\n", ""}};
  hung->failures["squeue"] = -1;  // always
  options.give_up_ms = 50;
  std::unique_ptr<Executor> e2 = NewSlurmExecutor(std::move(hung), options);
  ASSERT_TRUE(e2->Start(Job()).ok());
  r = e2->Wait(SystemClock()->NowMillis() + 10'000);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("squeue timed out"));

  // A job cancelled meanwhile ends after the grace period, long before giving up.
  auto cancelled = std::make_unique<FakeCommands>();
  cancelled->answers["sbatch"] = {{0, "3\n", ""}};
  cancelled->failures["squeue"] = -1;
  options.give_up_ms = 60'000;
  options.cancel_grace_ms = 20;
  std::unique_ptr<Executor> e3 = NewSlurmExecutor(std::move(cancelled), options);
  ASSERT_TRUE(e3->Start(Job()).ok());
  e3->Kill(4);
  r = e3->Wait(SystemClock()->NowMillis() + 10'000);
  ASSERT_TRUE(r.ok() && r->has_value()) << r.status().ToString();
  EXPECT_TRUE((*r)->signaled);
  EXPECT_THAT((*r)->error, HasSubstr("Slurm could not be asked how it ended"));
}

TEST_F(SlurmExecutorTest, APercentInTheLogPathIsNotAPattern) {
  auto commands = std::make_unique<FakeCommands>();
  FakeCommands& fake = *commands;
  fake.answers["sbatch"] = {{0, "3\n", ""}};
  std::unique_ptr<Executor> e = NewSlurmExecutor(std::move(commands), {});
  StepJob job = Job();
  job.log_path = (dir_ / "s[a%2Fb].log").string();
  ASSERT_TRUE(e->Start(job).ok());
  EXPECT_THAT(fake.calls[0], Contains("--output=" + (dir_ / "s[a%%2Fb].log").string()));
}

TEST_F(SlurmExecutorTest, KillCancelsTheJob) {
  auto commands = std::make_unique<FakeCommands>();
  FakeCommands& fake = *commands;
  fake.answers["sbatch"] = {{0, "5\n", ""}};
  fake.answers["squeue"] = {{0, "5|RUNNING|None\n", ""}};
  SlurmOptions options;
  options.poll_ms = 1;
  std::unique_ptr<Executor> e = NewSlurmExecutor(std::move(commands), options);
  ASSERT_TRUE(e->Start(Job()).ok());
  Result<std::optional<JobResult>> r = e->Wait(SystemClock()->NowMillis() + 20);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value()) << "still running at the deadline";
  e->Kill(4);
  EXPECT_EQ(fake.calls.back(), (std::vector<std::string>{"scancel", "5"}));
}

TEST_F(SlurmExecutorTest, TheJobGetsThisProcesssLocaleNotTheRunnersC) {
  auto commands = std::make_unique<FakeCommands>();
  FakeCommands& fake = *commands;
  fake.answers["sbatch"] = {{0, "7\n", ""}};
  std::unique_ptr<Executor> e = NewSlurmExecutor(std::move(commands), {});
  const char* saved = std::getenv("LC_ALL");
  const std::string kept = saved != nullptr ? saved : "";
  setenv("LC_ALL", "en_US.UTF-8", 1);
  ASSERT_TRUE(e->Start(Job()).ok());
  std::ifstream script(fake.calls[0].back());
  std::string text((std::istreambuf_iterator<char>(script)), {});
  EXPECT_THAT(text, HasSubstr("export LC_ALL='en_US.UTF-8'\n"));
  unsetenv("LC_ALL");
  StepJob second = Job();
  second.step = 5;
  second.log_path = (dir_ / "second.log").string();
  fake.answers["sbatch"] = {{0, "8\n", ""}};
  ASSERT_TRUE(e->Start(second).ok());
  std::ifstream script2(fake.calls[1].back());
  EXPECT_THAT(std::string((std::istreambuf_iterator<char>(script2)), {}),
              HasSubstr("unset LC_ALL\n"));
  if (saved != nullptr) setenv("LC_ALL", kept.c_str(), 1);
}

TEST_F(SlurmExecutorTest, JobsAreNamedWithTheGivenPrefix) {
  auto commands = std::make_unique<FakeCommands>();
  FakeCommands& fake = *commands;
  fake.answers["sbatch"] = {{0, "6\n", ""}};
  SlurmOptions options;
  options.job_name_prefix = "cairn-agent-gpu1-";
  std::unique_ptr<Executor> e = NewSlurmExecutor(std::move(commands), options);
  ASSERT_TRUE(e->Start(Job()).ok());
  EXPECT_THAT(fake.calls[0], Contains("--job-name=cairn-agent-gpu1-" + Job().id));
}

TEST_F(SlurmExecutorTest, CancelsOnlyThisUsersJobsWithThePrefix) {
  FakeCommands fake;
  fake.answers["squeue"] = {
      {0, "10|cairn-agent-a-1f2e3d4c-1\n11|cairn-agent-ab-99\n12|train\n13|cairn-agent-a-x\n", ""}};
  fake.answers["scancel"] = {{0, "", ""}};
  Result<int> cancelled = CancelSlurmJobsNamed(fake, "cairn-agent-a-");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_EQ(*cancelled, 2);
  // With a rule for the rest of the name, agent "a" leaves agent "a-b"'s jobs alone.
  FakeCommands strict;
  strict.answers["squeue"] = {{0, "20|cairn-agent-a-1f2e3d4c-1\n21|cairn-agent-a-b-1f2e3d4c-1\n", ""}};
  strict.answers["scancel"] = {{0, "", ""}};
  auto task_and_attempt = [](std::string_view rest) { return rest.find('-') == 8; };
  ASSERT_EQ(*CancelSlurmJobsNamed(strict, "cairn-agent-a-", task_and_attempt), 1);
  EXPECT_EQ(strict.calls[1], (std::vector<std::string>{"scancel", "20"}));
  EXPECT_EQ(fake.calls[0], (std::vector<std::string>{"squeue", "-h", "-u", std::to_string(getuid()),
                                                     "-o", "%i|%j"}));
  EXPECT_EQ(fake.calls[1], (std::vector<std::string>{"scancel", "10"}));
  EXPECT_EQ(fake.calls[2], (std::vector<std::string>{"scancel", "13"}));

  FakeCommands failing;
  failing.answers["squeue"] = {{1, "", "slurm_load_jobs error: Unable to contact controller"}};
  Result<int> refused = CancelSlurmJobsNamed(failing, "cairn-agent-a-");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("Unable to contact controller"));
}

}  // namespace
}  // namespace cairn::pipeline
