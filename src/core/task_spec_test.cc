#include "core/task_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cairn::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TaskSpecTest, WritesAndReadsEveryField) {
  TaskSpec spec;
  spec.command = {"python", "train.py", "--lr", "${params.lr}"};
  spec.params = {{"lr", "0.1"}, {"epochs", "3"}};
  spec.code = {"ab" + std::string(62, '0'), std::string(32, '1'), "src", 12, 4096, "c0ffee",
               "main", "https://example.com/r.git", true};
  spec.environment = {std::string(32, '2'), std::string(64, '3')};
  spec.reproduce.of = std::string(32, '4');
  spec.reproduce.options.tolerance = {1e-3, 0};
  spec.reproduce.options.per_metric["loss"] = {0.5, 1e-9};
  spec.reproduce.options.metrics = {"loss", "acc"};
  Result<TaskSpec> back = ParseTaskSpec(TaskSpecJson(spec));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->command, spec.command);
  EXPECT_EQ(back->params, spec.params);
  EXPECT_EQ(back->code.snapshot, spec.code.snapshot);
  EXPECT_EQ(back->code.cwd, "src");
  EXPECT_EQ(back->code.files, 12);
  EXPECT_EQ(back->code.bytes, 4096);
  EXPECT_EQ(back->code.remote_url, spec.code.remote_url);
  EXPECT_TRUE(back->code.dirty);
  EXPECT_EQ(back->environment.run_id, spec.environment.run_id);
  EXPECT_EQ(back->environment.lock_hash, spec.environment.lock_hash);
  EXPECT_EQ(back->reproduce.of, spec.reproduce.of);
  EXPECT_EQ(back->reproduce.options.tolerance.rtol, 1e-3);
  EXPECT_EQ(back->reproduce.options.per_metric.at("loss").atol, 1e-9);
  EXPECT_EQ(back->reproduce.options.metrics, spec.reproduce.options.metrics);
}

TEST(TaskSpecTest, NamesTheRunsItReadsEvenWhenMalformed) {
  EXPECT_EQ(TaskSpecRuns(R"({"code": {"run_id": "a"}, "environment": {"run_id": "b"},
                             "reproduce": {"of": "c"}})"),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(TaskSpecRuns(R"({"reproduce": {"of": "c"}})"), (std::vector<std::string>{"c"}))
      << "no command, but a run named all the same";
  EXPECT_TRUE(TaskSpecRuns(R"({"code": {"run_id": 3}, "reproduce": "c"})").empty());
  EXPECT_TRUE(TaskSpecRuns("not json").empty());
}

TEST(TaskSpecTest, AMinimalSpecIsACommand) {
  Result<TaskSpec> spec = ParseTaskSpec(R"({"command": ["true"]})");
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->code.snapshot.empty());
  EXPECT_TRUE(spec->environment.run_id.empty());
  EXPECT_EQ(TaskSpecJson(*spec), R"({"command":["true"],"params":{}})");
}

TEST(TaskSpecTest, RefusesWhatAnAgentCannotRun) {
  for (const char* bad :
       {"", "[]", "{}", R"({"command": []})", R"({"command": ["a", 1]})",
        R"({"command": ["a"], "params": {"n": 3}})",
        R"({"command": ["a"], "code": {"run_id": "r"}})",
        R"({"command": ["a"], "reproduce": {"of": "r", "options": {"rtol": -1}}})",
        R"({"command": ["a"], "reproduce": {"options": {"rtol": 1}}})",
        R"({"command": ["a"], "environment": {"lock_hash": "h"}})"}) {
    EXPECT_EQ(ParseTaskSpec(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(ParseTaskSpec(R"({"command": []})").status().message(), HasSubstr("no command"));
}

TEST(TaskSpecTest, ParametersAreSubstitutedOnceAndUnknownOnesKept) {
  std::map<std::string, std::string> params = {{"lr", "0.1"}, {"tricky", "${params.lr}"}};
  EXPECT_THAT(SubstituteParams({"--lr=${params.lr}", "${params.lr}${params.lr}",
                                "${params.tricky}", "${params.missing}", "${params.", "plain"},
                               params),
              ElementsAre("--lr=0.1", "0.10.1", "${params.lr}", "${params.missing}", "${params.",
                          "plain"));
}

TEST(TaskSpecTest, ParameterVariablesAreUpperCaseWithUnderscores) {
  EXPECT_EQ(ParamVariable("lr"), "CAIRN_PARAM_LR");
  EXPECT_EQ(ParamVariable("batch-size.v2"), "CAIRN_PARAM_BATCH_SIZE_V2");
}

}  // namespace
}  // namespace cairn::core
