#include "report/progress_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "fakes/fake_clock.h"
#include "fakes/temp_dir.h"

namespace cairn::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A FILE* whose bytes the test can read.
class Captured {
 public:
  Captured() : file_(open_memstream(&data_, &size_)) {}
  ~Captured() {
    std::fclose(file_);
    std::free(data_);
  }
  std::FILE* file() { return file_; }
  std::string text() {
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
};

struct Fixture {
  explicit Fixture(bool live, size_t width = 100) : clock(1'000'000) {
    options.out = out.file();
    options.err = err.file();
    options.live = live;
    options.width = width;
    options.clock = &clock;
  }
  Captured out;
  Captured err;
  fakes::FakeClock clock;
  ProgressLineOptions options;
};

TEST(ProgressLineTest, OffATerminalPrintsOneLinePerEventAndNoStatusLine) {
  Fixture f(/*live=*/false);
  {
    ProgressLine progress(2, f.options);
    progress.Begin();
    progress.Event("started", "prepare", "");
    f.clock.Advance(5'000);
    progress.Tick();
    progress.Event("done", "prepare", "in 5.0 s");
    progress.Finish();
  }
  EXPECT_EQ(f.out.text(),
            "  started   prepare                  \n"
            "  done      prepare                  in 5.0 s\n");
}

TEST(ProgressLineTest, OnATerminalTheStatusLineCountsAndTimesRunningSteps) {
  Fixture f(/*live=*/true);
  ProgressLine progress(3, f.options);
  progress.Begin();
  progress.Event("started", "a", "");
  f.clock.Advance(2'000);
  progress.Event("started", "b", "");
  f.clock.Advance(1'000);
  progress.Tick();
  progress.Event("done", "a", "");
  progress.Finish();
  const std::string text = f.out.text();
  EXPECT_THAT(text, HasSubstr("[0/3] running: a 0s"));
  // Longest running first, each with its own time.
  EXPECT_THAT(text, HasSubstr("\r\033[K[0/3] running: a 3s, b 1s"));
  EXPECT_THAT(text, HasSubstr("  done      a"));
  EXPECT_THAT(text, HasSubstr("[1/3] running: b 1s"));
  // Cleared before the summary that follows Finish.
  EXPECT_TRUE(text.ends_with("\r\033[K")) << text;
}

TEST(ProgressLineTest, ARetryIsNotFinishedAndTheLineIsNotRedrawnWithinASecond) {
  Fixture f(/*live=*/true);
  ProgressLine progress(1, f.options);
  progress.Begin();
  progress.Event("started", "a", "");
  progress.Event("retry", "a", "in 1 s");
  progress.Event("started", "a", "");
  const size_t before = f.out.text().size();
  f.clock.Advance(500);
  progress.Tick();
  EXPECT_EQ(f.out.text().size(), before) << "redrawn within a second";
  EXPECT_THAT(f.out.text(), Not(HasSubstr("[1/1]")));
}

TEST(ProgressLineTest, TheStatusLineKeepsWithinTheWidth) {
  Fixture f(/*live=*/true, /*width=*/20);
  ProgressLine progress(1, f.options);
  progress.Begin();
  progress.Event("started", "a-step-with-a-very-long-name", "");
  const std::string text = f.out.text();
  const std::string status = text.substr(text.rfind('\n') + 1);
  EXPECT_THAT(status, HasSubstr("[0/1]"));
  EXPECT_LE(status.size(), 19u + 3u) << status;  // 19 cells; "…" is three bytes
}

TEST(ProgressLineTest, AFailedLogShowsItsPathAndLastLines) {
  fakes::TempDir dir("progress");
  const std::string log = (dir / "train.log").string();
  {
    std::ofstream f(log);
    for (int i = 1; i <= 9; ++i) f << "line " << i << "\n";
  }
  Fixture f(/*live=*/false);
  ProgressLine progress(1, f.options);
  progress.FailedLog(log);
  const std::string text = f.out.text();
  EXPECT_THAT(text, HasSubstr("            log: " + log + "\n"));
  EXPECT_THAT(text, HasSubstr("            | line 4\n"));
  EXPECT_THAT(text, HasSubstr("            | line 9\n"));
  EXPECT_THAT(text, Not(HasSubstr("line 3")));
}

TEST(ProgressLineTest, WarningsGoToTheErrorStreamAndClearTheStatusLineFirst) {
  Fixture f(/*live=*/true);
  ProgressLine progress(1, f.options);
  progress.Begin();
  progress.Event("started", "a", "");
  progress.Warning("the server is down");
  EXPECT_EQ(f.err.text(), "warning: the server is down\n");
  EXPECT_THAT(f.out.text(), HasSubstr("running: a 0s\r\033[K[0/1] running: a 0s"));
}

TEST(ProgressLineTest, ElapsedTimeInSecondsThenMinutes) {
  EXPECT_EQ(FormatElapsed(4'240), "4.2 s");
  EXPECT_EQ(FormatElapsed(59'900), "59.9 s");
  EXPECT_EQ(FormatElapsed(185'000), "3m05s");
}

}  // namespace
}  // namespace cairn::report
