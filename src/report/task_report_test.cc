#include "report/task_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cairn::report {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kTaskNow = 1'715'940'000'000;

core::Task Sample(core::TaskState state) {
  core::Task t;
  t.id = "0123456789abcdef0123456789abcdef";
  t.queue = "gpu";
  t.priority = 2;
  t.state = state;
  t.needs = {2, 4, 8192};
  t.owner = "alice";
  t.attempt = state == core::TaskState::kQueued ? 0 : 1;
  t.max_attempts = 3;
  t.created_time = kTaskNow - 65'000;
  t.spec = R"({"command":["python","train.py"]})";
  return t;
}

TEST(TaskReportTest, TheTableSaysWhatEachTaskIsDoing) {
  core::Task waiting = Sample(core::TaskState::kQueued);
  waiting.reason = "over the team's GPU quota";
  core::Task running = Sample(core::TaskState::kRunning);
  running.agent = "gpu-host-1";
  running.start_time = kTaskNow - 130'000;
  running.cancel_requested = true;
  core::Task failed = Sample(core::TaskState::kFailed);
  failed.reason = "agent lost";
  failed.end_time = kTaskNow - 1000;
  const core::Task tasks[] = {waiting, running, failed};
  OutputStyle style{.width = 200, .truncate = false, .color = false};
  const std::string text = FormatTaskTable(tasks, style, kTaskNow);
  EXPECT_THAT(text, HasSubstr("TASK      QUEUE  STATE"));
  EXPECT_THAT(text, HasSubstr("01234567  gpu    queued"));
  EXPECT_THAT(text, HasSubstr("waiting 1m05s (over the team's GPU quota)"));
  EXPECT_THAT(text, HasSubstr("on gpu-host-1 for 2m10s (cancelling)"));
  EXPECT_THAT(text, HasSubstr("failed "));
  EXPECT_THAT(text, HasSubstr("(agent lost)"));
  EXPECT_THAT(text, HasSubstr("1/3"));
  EXPECT_EQ(FormatTaskTable({}, style, kTaskNow), "no tasks\n");
}

TEST(TaskReportTest, DetailsAndJsonLines) {
  core::Task t = Sample(core::TaskState::kQueued);
  t.requirements = R"({"cuda":"12"})";
  const std::string text = FormatTaskDetails(t, kTaskNow);
  EXPECT_THAT(text, HasSubstr("needs       2 GPU(s), 4 CPU(s), 8192 MiB\n"));
  EXPECT_THAT(text, HasSubstr("host needs  {\"cuda\":\"12\"}\n"));
  EXPECT_THAT(text, HasSubstr("attempt     0 of 3\n"));
  const core::Task one[] = {t};
  EXPECT_THAT(TasksJsonLines(one), HasSubstr(R"("spec":{"command":["python","train.py"]})"));
  client::QueueSummary q{{"gpu", "the A100s", 5, 1}, 3, 1};
  const client::QueueSummary queues[] = {q};
  OutputStyle style{.width = 200, .truncate = false, .color = false};
  EXPECT_THAT(FormatQueueTable(queues, style),
              HasSubstr("gpu          3        1         5  the A100s"));
}

}  // namespace
}  // namespace cairn::report
