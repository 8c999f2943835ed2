#include "core/retention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace cairn::core {
namespace {

using ::testing::HasSubstr;

TEST(RetentionTest, GlobsMatchWithinAndAcrossSegments) {
  EXPECT_TRUE(GlobMatches("checkpoints/*", "checkpoints/epoch_1.pt"));
  EXPECT_FALSE(GlobMatches("checkpoints/*", "checkpoints/a/b.pt"));
  EXPECT_FALSE(GlobMatches("checkpoints/*", "checkpoints"));
  EXPECT_TRUE(GlobMatches("**", "a/b/c"));
  EXPECT_TRUE(GlobMatches("**/*.pt", "x.pt"));
  EXPECT_TRUE(GlobMatches("**/*.pt", "a/b/x.pt"));
  EXPECT_TRUE(GlobMatches("ckpt-??", "ckpt-07"));
  EXPECT_FALSE(GlobMatches("ckpt-??", "ckpt-7"));
  EXPECT_TRUE(GlobMatches("*step*", "a_step_3"));
}

TEST(RetentionTest, AUnitIsTheShortestMatchingPrefix) {
  EXPECT_EQ(RetentionUnit("checkpoints/*", "checkpoints/step_100/model.bin"),
            "checkpoints/step_100");
  EXPECT_EQ(RetentionUnit("checkpoints/*", "checkpoints/e1.pt"), "checkpoints/e1.pt");
  EXPECT_EQ(RetentionUnit("checkpoints/*", "model.pt"), "");
  EXPECT_EQ(RetentionUnit("**", "a/b"), "a");
}

TEST(RetentionTest, NaturalOrderComparesNumbersAsNumbers) {
  std::vector<std::string> v = {"e10", "e9", "e100", "e1", "d2"};
  std::sort(v.begin(), v.end(), NaturalLess);
  EXPECT_EQ(v, (std::vector<std::string>{"d2", "e1", "e9", "e10", "e100"}));
  EXPECT_TRUE(NaturalLess("step_09", "step_10"));
  EXPECT_FALSE(NaturalLess("a", "a"));
}

TEST(RetentionTest, ParsesEveryKindAndWritesItBack) {
  auto rules = ParseRetentionRules(R"([
    {"keep_last": 10, "artifacts": "checkpoints/*"},
    {"keep_best": 3, "by": "metrics.val_loss"},
    {"keep_best": 1, "by": "acc", "order": "max", "artifacts": "model/**"},
    {"max_age": "90d", "status": "FAILED"},
    {"purge_deleted_after": "12h"}])");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  ASSERT_EQ(rules->size(), 5u);
  EXPECT_EQ((*rules)[0].kind, RetentionKind::kKeepLast);
  EXPECT_EQ((*rules)[0].count, 10);
  EXPECT_EQ((*rules)[1].metric, "val_loss");
  EXPECT_TRUE((*rules)[1].lower_is_better);
  EXPECT_FALSE((*rules)[2].lower_is_better);
  EXPECT_EQ((*rules)[3].age_ms, 90LL * 86'400'000);
  EXPECT_EQ((*rules)[4].age_ms, 12LL * 3'600'000);
  EXPECT_EQ((*rules)[0].Text(), R"({"keep_last":10,"artifacts":"checkpoints/*"})");
  EXPECT_EQ((*rules)[3].Text(), R"({"max_age":"90d","status":"FAILED","artifacts":"**"})");
  for (const RetentionRule& r : *rules) {
    auto again = ParseRetentionRules("[" + r.Text() + "]");
    ASSERT_TRUE(again.ok()) << r.Text();
    EXPECT_EQ((*again)[0].Text(), r.Text());
  }
}

TEST(RetentionTest, RefusesRulesThatCannotBeMeant) {
  for (const char* bad :
       {"{}", "[1]", R"([{}])", R"([{"keep_last": 1, "keep_best": 2}])", R"([{"keep_last": -1}])",
        R"([{"keep_last": "10"}])", R"([{"keep_best": 2}])", R"([{"max_age": "soon"}])",
        R"([{"max_age": "1d", "status": "RUNNING"}])", R"([{"keep_last": 1, "status": "FAILED"}])",
        R"([{"keep_last": 1, "by": "loss"}])", R"([{"keep_last": 1, "artifacts": "/abs"}])",
        R"([{"keep_last": 1, "colour": "blue"}])"}) {
    EXPECT_FALSE(ParseRetentionRules(bad).ok()) << bad;
  }
  EXPECT_THAT(ParseRetentionRules(R"([{"keep_last": 1}, {"max_age": 3}])").status().message(),
              HasSubstr("retention rule 1: max_age takes an age"));
}

}  // namespace
}  // namespace cairn::core
