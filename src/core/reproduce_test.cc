#include "core/reproduce.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace cairn::core {
namespace {

using ::testing::HasSubstr;

std::vector<core::Metric> Series(const std::string& key, std::vector<double> values,
                                 int64_t first_step = 0) {
  std::vector<core::Metric> out;
  for (size_t i = 0; i < values.size(); ++i) {
    out.push_back(
        {key, values[i], 1000 + static_cast<int64_t>(i), first_step + static_cast<int64_t>(i)});
  }
  return out;
}

MetricHistories Losses(std::vector<double> loss, std::vector<double> acc) {
  return {{"loss", Series("loss", std::move(loss))}, {"acc", Series("acc", std::move(acc))}};
}

constexpr core::RunStatus kFinished = core::RunStatus::kFinished;

TEST(ReproduceTest, EqualBitsAreIdentical) {
  MetricHistories a = Losses({0.9, 0.5, 0.25}, {0.1, 0.6, std::nan("")});
  a["system/cpu_utilization_percentage"] = Series("system/cpu_utilization_percentage", {30});
  MetricHistories b = Losses({0.9, 0.5, 0.25}, {0.1, 0.6, std::nan("")});
  b["system/cpu_utilization_percentage"] = Series("system/cpu_utilization_percentage", {99});
  Verdict v = CompareReproduction(a, b, {}, kFinished);
  EXPECT_EQ(v.kind, VerdictKind::kIdentical) << v.summary;
  EXPECT_EQ(v.summary, "identical: 2 metric(s), 6 value(s), bit for bit");
  ASSERT_EQ(v.metrics.size(), 2u);  // system metrics are not compared
}

TEST(ReproduceTest, SmallNoiseIsWithinAToleranceAndDivergesWithoutOne) {
  MetricHistories a = Losses({0.9, 0.5, 0.25}, {0.1, 0.6, 0.7});
  MetricHistories b = Losses({0.9, 0.5002, 0.25}, {0.1, 0.6, 0.7});
  ReproduceOptions loose;
  loose.tolerance.rtol = 1e-3;
  Verdict within = CompareReproduction(a, b, loose, kFinished);
  EXPECT_EQ(within.kind, VerdictKind::kWithinTolerance) << within.summary;
  EXPECT_THAT(within.summary, HasSubstr("the largest difference is"));
  EXPECT_THAT(within.summary, HasSubstr("in loss"));

  Verdict strict = CompareReproduction(a, b, {}, kFinished);
  EXPECT_EQ(strict.kind, VerdictKind::kDiverged);
  EXPECT_EQ(strict.summary, "diverged at step 1: loss 0.5002 (original 0.5)");

  // A tolerance for loss alone does it too; an absolute one as well.
  ReproduceOptions per;
  per.per_metric["loss"] = {0, 1e-3};
  EXPECT_EQ(CompareReproduction(a, b, per, kFinished).kind, VerdictKind::kWithinTolerance);
}

TEST(ReproduceTest, APartialSeriesThatAgreesSoFarIsIncompleteAndOneThatDivergedIsNot) {
  MetricHistories a = Losses({0.9, 0.5, 0.25}, {0.1, 0.6, 0.7});
  MetricHistories b = Losses({0.9, 0.5, 0.25}, {0.1, 0.65, 0.7});
  PartialSeries partial = {{"loss", "only the first 3 values were compared"},
                           {"acc", "only the first 3 values were compared"},
                           {"f1", "not compared: over the limit"}};
  ReproduceOptions options;
  options.metrics = {"acc", "f1", "loss"};
  Verdict v = CompareReproduction(a, b, options, kFinished, partial);
  ASSERT_EQ(v.metrics.size(), 3u);
  EXPECT_EQ(v.metrics[0].kind, VerdictKind::kDiverged) << "a divergence seen is a divergence";
  EXPECT_EQ(v.metrics[1].kind, VerdictKind::kIncomplete);
  EXPECT_EQ(v.metrics[1].note, "not compared: over the limit");
  EXPECT_EQ(v.metrics[2].kind, VerdictKind::kIncomplete);
  EXPECT_EQ(v.metrics[2].note, "only the first 3 values were compared");
  EXPECT_EQ(v.kind, VerdictKind::kIncomplete);
  // Out of order as given: compared in step order all the same.
  MetricHistories shuffled = a;
  std::reverse(shuffled["loss"].begin(), shuffled["loss"].end());
  EXPECT_EQ(CompareReproduction(a, shuffled, {}, kFinished).kind, VerdictKind::kIdentical);
}

TEST(ReproduceTest, TheFirstStepBeyondToleranceIsNamedAcrossMetrics) {
  MetricHistories a = Losses({1, 2, 3, 4, 5}, {1, 2, 3, 4, 5});
  MetricHistories b = Losses({1, 2, 3, 4, 6}, {1, 2, 3.5, 4, 5});
  Verdict v = CompareReproduction(a, b, {}, kFinished);
  EXPECT_EQ(v.kind, VerdictKind::kDiverged);
  EXPECT_EQ(v.summary, "diverged at step 2: acc 3.5 (original 3)");
  EXPECT_EQ(v.metrics[1].key, "loss");
  EXPECT_EQ(v.metrics[1].step, 4);
}

TEST(ReproduceTest, MissingShortOrFailedRunsAreIncomplete) {
  MetricHistories a = Losses({1, 2, 3}, {1, 2, 3});
  MetricHistories no_acc = {{"loss", Series("loss", {1, 2, 3})}};
  EXPECT_EQ(CompareReproduction(a, no_acc, {}, kFinished).summary,
            "incomplete: acc: the new run logged none of it");
  MetricHistories short_run = Losses({1, 2}, {1, 2, 3});
  EXPECT_EQ(CompareReproduction(a, short_run, {}, kFinished).summary,
            "incomplete: loss: 2 of 3 values; none from step 2 on");
  EXPECT_EQ(CompareReproduction(a, a, {}, core::RunStatus::kFailed).summary,
            "incomplete: the new run ended FAILED");
  EXPECT_EQ(CompareReproduction({}, {}, {}, kFinished).summary,
            "incomplete: the original run has no metrics to compare");
  ReproduceOptions named;
  named.metrics = {"f1"};
  EXPECT_EQ(CompareReproduction(a, a, named, kFinished).kind, VerdictKind::kIncomplete);
}

TEST(ReproduceTest, ExtraValuesOrOtherStepsDiverge) {
  MetricHistories a = Losses({1, 2}, {1, 2});
  MetricHistories longer = Losses({1, 2, 3}, {1, 2});
  Verdict v = CompareReproduction(a, longer, {}, kFinished);
  EXPECT_EQ(v.kind, VerdictKind::kDiverged);
  EXPECT_THAT(v.summary, HasSubstr("1 more value(s), from step 2"));
  MetricHistories shifted = {{"loss", Series("loss", {1, 2}, 1)}, {"acc", Series("acc", {1, 2})}};
  EXPECT_EQ(CompareReproduction(a, shifted, {}, kFinished).kind, VerdictKind::kDiverged);
}

TEST(ReproduceTest, TheRecordNamesBothRunsTheVerdictAndTheDifferences) {
  core::Run original, reproduced;
  original.info.run_id = "a";
  reproduced.info.run_id = "b";
  original.data.tags = {{"cairn.code.snapshot", std::string(64, '1')}};
  reproduced.data.tags = {{"cairn.code.snapshot", std::string(64, '2')},
                          {"cairn.env.hash", "e"},
                          {"cairn.env.lock", "l"}};
  original.inputs = {{{}, {"mnist", "d1", "", "", "", ""}}};
  reproduced.inputs = {{{}, {"mnist", "d2", "", "", "", ""}}};
  ReproductionDifferences d = CompareRunRecords(original, reproduced);
  ASSERT_EQ(d.code.size(), 1u);
  EXPECT_EQ(d.code[0], "code snapshot 111111111111 -> 222222222222");
  ASSERT_EQ(d.datasets.size(), 1u);
  EXPECT_EQ(d.datasets[0], "dataset mnist: digest d1 -> d2");

  MetricHistories h = Losses({1}, {1});
  Verdict v = CompareReproduction(h, h, {}, kFinished);
  std::string json = ReproductionJson(original, reproduced, {}, v, d, R"({"os":"linux"})");
  EXPECT_THAT(json, HasSubstr(R"("original":"a","reproduced":"b","verdict":"identical")"));
  EXPECT_THAT(
      json,
      HasSubstr(R"("environment":{"lock_hash":"l","snapshot_hash":"e","host":{"os":"linux"}})"));
  EXPECT_THAT(json, HasSubstr(R"("code":["code snapshot 111111111111 -> 222222222222"])"));
}

TEST(ReproduceOptionsTest, RoundTripAndRefuseBadTolerances) {
  ReproduceOptions options;
  options.tolerance = {1e-3, 0};
  options.per_metric["loss"] = {0.25, 1e-6};
  options.metrics = {"loss"};
  Result<ReproduceOptions> back = ParseReproduceOptions(ReproduceOptionsJson(options));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tolerance.rtol, 1e-3);
  EXPECT_EQ(back->per_metric.at("loss").rtol, 0.25);
  EXPECT_EQ(back->per_metric.at("loss").atol, 1e-6);
  EXPECT_EQ(back->metrics, options.metrics);

  // A per-metric tolerance given one field keeps the other of every metric.
  Result<ReproduceOptions> partial =
      ParseReproduceOptions(R"({"atol": 0.5, "per_metric": {"acc": {"rtol": 0.1}}})");
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->per_metric.at("acc").atol, 0.5);
  EXPECT_EQ(partial->per_metric.at("acc").rtol, 0.1);

  for (const char* bad : {R"({"rtol": -1})", R"({"atol": "1"})", R"({"per_metric": []})",
                          R"({"per_metric": {"x": {"rtol": -0.5}}})", R"({"metrics": [1]})",
                          R"({"metrics": "loss"})", "[]", "{"}) {
    Result<ReproduceOptions> refused = ParseReproduceOptions(bad);
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(ParseReproduceOptions(R"({"per_metric": {"x": {"rtol": -0.5}}})").status().message(),
              ::testing::HasSubstr("options.per_metric.x.rtol"));
}

}  // namespace
}  // namespace cairn::core
