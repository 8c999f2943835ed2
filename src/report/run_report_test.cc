#include "report/run_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "env/host_facts.h"
#include "env/python_env.h"
#include "env/standards/pep440.h"

namespace cairn::report {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kNow = 1715947200000;  // 2024-05-17 12:00:00 UTC
constexpr int64_t kMinute = 60 * 1000;

// Times print in local time; the tests pin it to UTC and put the caller's zone back after.
class RunReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    if (tz != nullptr) saved_tz_ = tz;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (saved_tz_) {
      setenv("TZ", saved_tz_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::optional<std::string> saved_tz_;
};

core::Run MakeRun(std::string id_start, std::string name, core::RunStatus status, int64_t start,
                  std::optional<int64_t> end) {
  core::Run run;
  run.info.run_id = id_start + std::string(32 - id_start.size(), '0');
  run.info.run_name = std::move(name);
  run.info.experiment_id = "1";
  run.info.status = status;
  run.info.start_time = start;
  run.info.end_time = end;
  return run;
}

void Metric(core::Run* run, std::string key, double value) {
  run->data.metrics.push_back({std::move(key), value, 1, 0});
}

// Four runs whose params and metrics vary by different amounts:
//   lr: 3 values on all 4 runs; opt: the same on all; seed: 3 values, missing on one;
//   loss: 4 values (one NaN) on all; acc: 2 values on 2 runs; system/cpu: 3 values.
std::vector<core::Run> SampleRuns() {
  using core::RunStatus;
  core::Run a = MakeRun("a1b2c3d4", "baseline", RunStatus::kFinished, kNow - 120 * kMinute,
                        kNow - 120 * kMinute + 65'000);
  a.data.params = {{"lr", "0.1"}, {"opt", "adam"}, {"seed", "1"}};
  Metric(&a, "loss", 0.25);
  Metric(&a, "acc", 0.9);
  Metric(&a, "system/cpu", 10);
  core::Run b = MakeRun("b2c3d4e5", "bigger-learning-rate", RunStatus::kFinished,
                        kNow - 90 * kMinute, kNow - 90 * kMinute + 3'723'000);
  b.data.params = {{"lr", "0.5"}, {"opt", "adam"}, {"seed", "2"}};
  Metric(&b, "loss", 0.5);
  Metric(&b, "acc", 0.8);
  Metric(&b, "system/cpu", 20);
  core::Run c = MakeRun("c3d4e5f6", "no-seed", RunStatus::kFailed, kNow - 60 * kMinute,
                        kNow - 60 * kMinute + 999);
  c.data.params = {{"lr", "0.1"}, {"opt", "adam"}};
  Metric(&c, "loss", std::nan(""));
  Metric(&c, "system/cpu", 30);
  core::Run d = MakeRun("d4e5f6a7", "running", RunStatus::kRunning, kNow - kMinute, std::nullopt);
  d.data.params = {{"lr", "0.01"}, {"opt", "adam"}, {"seed", "3"}};
  Metric(&d, "loss", 0.125);
  return {a, b, c, d};
}

std::vector<std::string> Names(const std::vector<RunColumn>& columns) {
  std::vector<std::string> out;
  for (const RunColumn& c : columns) {
    switch (c.kind) {
      case RunColumn::Kind::kParam:
        out.push_back("params." + c.key);
        break;
      case RunColumn::Kind::kMetric:
        out.push_back("metrics." + c.key);
        break;
      case RunColumn::Kind::kTag:
        out.push_back("tags." + c.key);
        break;
      default:
        out.push_back("fixed");
        break;
    }
  }
  return out;
}

// --- values ----------------------------------------------------------------------------------

TEST_F(RunReportTest, FormatsTimesDurationsMetricsAndSizes) {
  EXPECT_EQ(FormatCompactTime(kNow - 120 * kMinute, kNow), "05-17 10:00");
  EXPECT_EQ(FormatCompactTime(kNow - 400LL * 24 * 60 * kMinute, kNow), "2023-04-13");
  EXPECT_EQ(FormatCompactTime(0, kNow), "-");
  EXPECT_EQ(FormatFullTime(kNow + 5'000), "2024-05-17 12:00:05");
  EXPECT_EQ(FormatDuration(850), "850ms");
  EXPECT_EQ(FormatDuration(42'000), "42s");
  EXPECT_EQ(FormatDuration(185'000), "3m05s");
  EXPECT_EQ(FormatDuration(7'620'000), "2h07m");
  EXPECT_EQ(FormatDuration(273'600'000), "3d04h");
  EXPECT_EQ(FormatDuration(-1), "-");
  EXPECT_EQ(FormatMetric(0.1234567), "0.123457");
  EXPECT_EQ(FormatMetric(1.5e-7), "1.5e-07");
  EXPECT_EQ(FormatMetric(42), "42");
  EXPECT_EQ(FormatMetric(std::nan("")), "NaN");
  EXPECT_EQ(FormatMetric(-INFINITY), "-inf");
  EXPECT_EQ(FormatSize(812), "812 B");
  EXPECT_EQ(FormatSize(1229), "1.2 KiB");
  EXPECT_EQ(FormatSize(5LL << 30), "5.0 GiB");
  EXPECT_EQ(ShortRunId("0123456789abcdef"), "01234567");
}

TEST_F(RunReportTest, TruncatesByCodePointsAndNeutralisesControlCharacters) {
  EXPECT_EQ(Truncate("abcdef", 6), "abcdef");
  EXPECT_EQ(Truncate("abcdef", 4), "abc…");
  EXPECT_EQ(Truncate("ééééé", 3), "éé…");
  EXPECT_EQ(DisplayWidth("é…x"), 3u);
  // A run name from the server must not move the cursor or recolour the terminal.
  core::Run run;
  run.info.run_id = "0123456789abcdef";
  run.info.run_name = "a\nb\x1b[31mc\xc2\x9b";
  const std::vector<core::Run> runs = {run};
  const std::string table = FormatRunTable(runs, DefaultRunColumns(), RunListOptions{});
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
  EXPECT_THAT(table, HasSubstr("a b [31mc "));
}

// --- tables ----------------------------------------------------------------------------------

TEST_F(RunReportTest, TableShrinksTheWidestShrinkableColumnToFitTheTerminal) {
  Table table;
  table.columns = {{"id", false, false, 2}, {"name", false, true, 4}, {"n", true, false, 1}};
  table.rows = {{"1", "a-rather-long-name", "7"}, {"22", "short", "123"}};
  // Natural widths 2 + 18 + 3 and two gaps of 2 make 27; at 20 the name column gives up 7.
  OutputStyle tty{.width = 20, .truncate = true, .color = false};
  EXPECT_EQ(RenderTable(table, tty),
            "id  name           n\n"
            "1   a-rather-l…    7\n"
            "22  short        123\n");
  // Off a terminal nothing is cut, whatever the width.
  OutputStyle pipe{.width = 20, .truncate = false, .color = false};
  EXPECT_EQ(RenderTable(table, pipe),
            "id  name                  n\n"
            "1   a-rather-long-name    7\n"
            "22  short               123\n");
  // Columns that may not shrink are kept whole even when the table cannot fit.
  OutputStyle tiny{.width = 5, .truncate = true, .color = false};
  EXPECT_EQ(RenderTable(table, tiny),
            "id  name    n\n"
            "1   a-r…    7\n"
            "22  sho…  123\n");
}

TEST_F(RunReportTest, HighlightedRowsAreColouredOnlyWithColour) {
  Table table;
  table.columns = {{"k", false, false, 1}, {"v", false, true, 1}};
  table.rows = {{"a", "1"}, {"b", "2"}};
  table.highlight = {false, true};
  OutputStyle colour{.width = 80, .truncate = true, .color = true};
  EXPECT_EQ(RenderTable(table, colour), "k  v\na  1\n\x1b[33mb  2\x1b[0m\n");
  colour.color = false;
  EXPECT_EQ(RenderTable(table, colour), "k  v\na  1\nb  2\n");
}

// --- run lists -------------------------------------------------------------------------------

TEST_F(RunReportTest, ParseRunColumnsAcceptsFixedAndKeyedColumns) {
  auto columns = ParseRunColumns(" name,status , params.lr,metrics.loss,tags.team,tag.mlflow.user");
  ASSERT_TRUE(columns.ok()) << columns.status().ToString();
  EXPECT_THAT(*columns, ElementsAre(RunColumn{RunColumn::Kind::kName, ""},
                                    RunColumn{RunColumn::Kind::kStatus, ""},
                                    RunColumn{RunColumn::Kind::kParam, "lr"},
                                    RunColumn{RunColumn::Kind::kMetric, "loss"},
                                    RunColumn{RunColumn::Kind::kTag, "team"},
                                    RunColumn{RunColumn::Kind::kTag, "mlflow.user"}));
  auto unknown = ParseRunColumns("name,bogus");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("'bogus'"));
  EXPECT_FALSE(ParseRunColumns("params.").ok());
  EXPECT_FALSE(ParseRunColumns(" , ").ok());
}

TEST_F(RunReportTest, RankVaryingColumnsPutsTheMostDistinctFirstAndDropsConstants) {
  std::vector<core::Run> runs = SampleRuns();
  // loss and seed both have 4 "values" (seed's fourth is "missing"); loss is on more runs.
  // opt is "adam" everywhere and tells nothing; the system metric comes last though it varies.
  EXPECT_THAT(
      Names(RankVaryingColumns(runs)),
      ElementsAre("metrics.loss", "params.seed", "params.lr", "metrics.acc", "metrics.system/cpu"));
  // A single run has nothing to tell apart: every key is a candidate.
  std::vector<core::Run> one = {runs[0]};
  EXPECT_THAT(Names(RankVaryingColumns(one)),
              ElementsAre("params.lr", "params.opt", "params.seed", "metrics.acc", "metrics.loss",
                          "metrics.system/cpu"));
}

TEST_F(RunReportTest, RunTableAddsVaryingColumnsWhileTheyFit) {
  std::vector<core::Run> runs = SampleRuns();
  RunListOptions options;
  options.now_millis = kNow;
  options.style = {.width = 80, .truncate = true, .color = false};
  // The fixed columns take 8+20+8+11+8 and four gaps = 63 cells; loss (5) and seed (4) fit in
  // 80 with their gaps, lr (4) would make 82.
  EXPECT_THAT(
      Names(ChooseRunColumns(runs, options)),
      ElementsAre("fixed", "fixed", "fixed", "fixed", "fixed", "metrics.loss", "params.seed"));
  EXPECT_EQ(FormatRunTable(runs, {}, options),
            "run       name                  status    start        duration   loss  seed\n"
            "a1b2c3d4  baseline              FINISHED  05-17 10:00     1m05s   0.25  1\n"
            "b2c3d4e5  bigger-learning-rate  FINISHED  05-17 10:30     1h02m    0.5  2\n"
            "c3d4e5f6  no-seed               FAILED    05-17 11:00     999ms    NaN  -\n"
            "d4e5f6a7  running               RUNNING   05-17 11:59     1m00s  0.125  3\n");

  // At 60 cells on a terminal no varying column fits and the name gives up 3 cells.
  options.style.width = 60;
  EXPECT_EQ(FormatRunTable(runs, {}, options),
            "run       name               status    start        duration\n"
            "a1b2c3d4  baseline           FINISHED  05-17 10:00     1m05s\n"
            "b2c3d4e5  bigger-learning-…  FINISHED  05-17 10:30     1h02m\n"
            "c3d4e5f6  no-seed            FAILED    05-17 11:00     999ms\n"
            "d4e5f6a7  running            RUNNING   05-17 11:59     1m00s\n");
  // Piped, the same width picks the same columns but cuts nothing.
  options.style.truncate = false;
  EXPECT_THAT(FormatRunTable(runs, {}, options), HasSubstr("bigger-learning-rate  FINISHED"));
}

TEST_F(RunReportTest, RunTableShowsExplicitColumnsAndQualifiesClashingKeys) {
  std::vector<core::Run> runs = SampleRuns();
  runs[0].data.tags.push_back({"lr", "tagged"});
  RunListOptions options;
  options.now_millis = kNow;
  options.style = {.width = 20, .truncate = false, .color = false};
  auto columns = ParseRunColumns("id,params.lr,tags.lr,metrics.acc");
  ASSERT_TRUE(columns.ok());
  EXPECT_EQ(FormatRunTable(runs, *columns, options),
            "run       params.lr  tags.lr  acc\n"
            "a1b2c3d4  0.1        tagged   0.9\n"
            "b2c3d4e5  0.5        -        0.8\n"
            "c3d4e5f6  0.1        -          -\n"
            "d4e5f6a7  0.01       -          -\n");
}

TEST_F(RunReportTest, RunsJsonLinesAreMlflowRunsOnePerLine) {
  std::vector<core::Run> runs = SampleRuns();
  std::string text = RunsJsonLines(runs);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  EXPECT_THAT(text, HasSubstr("{\"info\":{\"run_uuid\":\"a1b2c3d4000000000000000000000000\""));
  EXPECT_THAT(text, HasSubstr("{\"key\":\"loss\",\"value\":\"NaN\""));
}

// --- one run ---------------------------------------------------------------------------------

TEST_F(RunReportTest, TagsAreGroupedByWhatTheyDescribe) {
  EXPECT_EQ(GroupOfTag("team"), TagGroup::kUser);
  EXPECT_EQ(GroupOfTag("mlflow.source.git.commit"), TagGroup::kCode);
  EXPECT_EQ(GroupOfTag("cairn.git.dirty"), TagGroup::kCode);
  EXPECT_EQ(GroupOfTag("cairn.host.glibc"), TagGroup::kHost);
  EXPECT_EQ(GroupOfTag("cairn.gpu.driver"), TagGroup::kHost);
  EXPECT_EQ(GroupOfTag("cairn.env.hash"), TagGroup::kEnvironment);
  EXPECT_EQ(GroupOfTag("cairn.python.version"), TagGroup::kEnvironment);
  EXPECT_EQ(GroupOfTag("mlflow.runName"), TagGroup::kSystem);
  EXPECT_EQ(GroupOfTag("cairn.command"), TagGroup::kSystem);
  EXPECT_EQ(GroupOfTag("mlflowish"), TagGroup::kUser);
}

TEST_F(RunReportTest, RunDetailsListSectionsAndArtifacts) {
  RunDetails details;
  details.run = SampleRuns()[0];
  details.run.data.tags = {{"team", "vision"},
                           {"mlflow.source.git.commit", "abc123"},
                           {"cairn.host.glibc", "2.36"},
                           {"cairn.env.hash", "feed"},
                           {"cairn.failure_reason", "line one\nline two"}};
  details.experiment_name = "mnist";
  details.artifacts = {{"cairn/host.json", false, 1229}, {"model.bin", false, 5LL << 20}};
  OutputStyle style{.width = 80, .truncate = false, .color = false};
  std::string text = FormatRunDetails(details, style, kNow);
  EXPECT_THAT(text, HasSubstr("experiment    mnist (1)\n"));
  EXPECT_THAT(text, HasSubstr("end           2024-05-17 10:01:05 (1m05s)\n"));
  EXPECT_THAT(text, HasSubstr("\nparams\n  lr    0.1\n  opt   adam\n  seed  1\n"));
  EXPECT_THAT(text, HasSubstr("\ntags\n  team  vision\n"));
  EXPECT_THAT(text, HasSubstr("\ncode\n  mlflow.source.git.commit  abc123\n"));
  EXPECT_THAT(text, HasSubstr("\nenvironment\n  cairn.env.hash  feed\n"));
  EXPECT_THAT(text, HasSubstr("\nhost\n  cairn.host.glibc  2.36\n"));
  // A multi-line value continues under itself.
  EXPECT_THAT(text,
              HasSubstr("  cairn.failure_reason  line one\n                        line two\n"));
  EXPECT_THAT(
      text,
      HasSubstr("artifacts (2 files)\n  cairn/host.json  1.2 KiB\n  model.bin        5.0 MiB\n"));
  std::string json = RunDetailsJson(details);
  EXPECT_THAT(json, HasSubstr("\"experiment_name\":\"mnist\""));
  EXPECT_THAT(json, HasSubstr("{\"path\":\"model.bin\",\"file_size\":5242880}"));
}

TEST_F(RunReportTest, RunDetailsNameThePipelineRunAndStepThatMadeTheRun) {
  RunDetails details;
  details.run = SampleRuns()[0];
  OutputStyle style{.width = 80, .truncate = false, .color = false};
  EXPECT_THAT(FormatRunDetails(details, style, kNow), Not(HasSubstr("pipeline")));
  details.run.data.tags = {{"cairn.pipeline.name", "train-eval"},
                           {"cairn.pipeline.run", "20240517-100000-ab12"},
                           {"cairn.step.id", "train[small]"}};
  EXPECT_THAT(FormatRunDetails(details, style, kNow),
              HasSubstr("pipeline      train-eval run 20240517-100000-ab12, step train[small]\n"));
}

// --- comparison ------------------------------------------------------------------------------

const CompareRow* FindRow(const std::vector<CompareRow>& rows, std::string_view section,
                          std::string_view label) {
  for (const CompareRow& r : rows) {
    if (r.section == section && r.label == label) return &r;
  }
  return nullptr;
}

TEST_F(RunReportTest, CompareMarksRowsWhereRunsDisagree) {
  std::vector<core::Run> all = SampleRuns();
  std::vector<core::Run> runs = {all[0], all[1]};
  const std::string commit(40, 'c');
  runs[0].data.tags = {{"mlflow.source.git.commit", commit},
                       {"cairn.git.dirty", "false"},
                       {"cairn.env.hash", std::string(64, 'a')},
                       {"team", "vision"},
                       {"cairn.host.glibc", "2.36"}};
  runs[1].data.tags = {{"mlflow.source.git.commit", commit},
                       {"cairn.git.dirty", "true"},
                       {"cairn.env.hash", std::string(64, 'b')},
                       {"cairn.host.glibc", "2.36"}};
  std::vector<CompareRow> rows = CompareRuns(runs, kNow);
  auto differs = [&](std::string_view section, std::string_view label) {
    const CompareRow* r = FindRow(rows, section, label);
    EXPECT_NE(r, nullptr) << section << " " << label;
    return r != nullptr && r->differs;
  };
  EXPECT_FALSE(differs("run", "status"));
  EXPECT_FALSE(differs("run", "start"));  // always differs, so never marked
  EXPECT_TRUE(differs("params", "lr"));
  EXPECT_FALSE(differs("params", "opt"));
  EXPECT_TRUE(differs("metrics", "loss"));
  EXPECT_FALSE(differs("system metrics", "system/cpu"));
  EXPECT_TRUE(differs("tags", "team"));  // a value against none
  EXPECT_FALSE(differs("code", "commit"));
  EXPECT_TRUE(differs("code", "dirty"));
  EXPECT_TRUE(differs("environment", "env hash"));
  EXPECT_FALSE(differs("host", "glibc"));
  EXPECT_EQ(FindRow(rows, "host", "gpu"), nullptr);  // no run has it
  EXPECT_EQ(FindRow(rows, "code", "commit")->values[0], std::string(12, 'c'));
  EXPECT_EQ(FindRow(rows, "tags", "team")->values[1], "-");

  OutputStyle style{.width = 80, .truncate = false, .color = false};
  std::string only = FormatComparison(runs, rows, /*only_diff=*/true, style);
  EXPECT_EQ(only,
            "             a1b2c3d4      b2c3d4e5\n"
            "  name       baseline      bigger-learning-rate\n"
            "params\n"
            "* lr         0.1           0.5\n"
            "* seed       1             2\n"
            "metrics\n"
            "* acc        0.9           0.8\n"
            "* loss       0.25          0.5\n"
            "tags\n"
            "* team       vision        -\n"
            "code\n"
            "* dirty      false         true\n"
            "environment\n"
            "* env hash   aaaaaaaaaaaa  bbbbbbbbbbbb\n");
  std::string full = FormatComparison(runs, rows, /*only_diff=*/false, style);
  EXPECT_THAT(full, HasSubstr("\n  opt           adam          adam\n"));
  EXPECT_THAT(full, HasSubstr("\n  start         05-17 10:00   05-17 10:30\n"));
  EXPECT_THAT(full, HasSubstr("\nsystem metrics\n  system/cpu    10            20\n"));
  EXPECT_THAT(full, HasSubstr("\n  commit        cccccccccccc  cccccccccccc\n"));
  // Side by side, long values are cut to the width even off a terminal: 11 + 12 + 20 cells
  // and two gaps are 47, so at 40 the widest column gives up 7.
  style.width = 40;
  EXPECT_THAT(FormatComparison(runs, rows, true, style),
              HasSubstr("\n  name       baseline      bigger-learn…\n"));

  std::vector<core::Run> same = {all[0], all[0]};
  EXPECT_THAT(FormatComparison(same, CompareRuns(same, kNow), true, style),
              HasSubstr("no differences\n"));
}

}  // namespace
}  // namespace cairn::report
