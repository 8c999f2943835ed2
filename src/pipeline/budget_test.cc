#include "pipeline/budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace cairn::pipeline {
namespace {

using ::testing::HasSubstr;

Pipeline WithSteps(std::vector<Resources> resources) {
  Pipeline p;
  p.name = "p";
  for (size_t i = 0; i < resources.size(); ++i) {
    Step s;
    s.id = "s" + std::to_string(i);
    s.resources = resources[i];
    p.steps.push_back(s);
  }
  return p;
}

Machine FourCores(int* gpu_probes = nullptr) {
  Machine m;
  m.cores = 4;
  m.memory_mib = 8192;
  m.gpus = [gpu_probes] {
    if (gpu_probes != nullptr) ++*gpu_probes;
    return 2;
  };
  return m;
}

TEST(BudgetTest, LocallyTheMachinesCoresAndMemoryWithoutAskingForGpus) {
  int probes = 0;
  Result<Budget> b = SizeBudget(WithSteps({{}}), {}, "local", FourCores(&probes));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->jobs, 4);
  EXPECT_EQ(b->cpus, 4);
  EXPECT_EQ(b->memory_mib, 8192);
  EXPECT_EQ(b->gpus, 0);
  EXPECT_EQ(probes, 0) << "nvidia-smi runs only when a step wants a GPU";
}

TEST(BudgetTest, LocallyAStepWantingAGpuGetsTheMachinesGpus) {
  int probes = 0;
  Result<Budget> b = SizeBudget(WithSteps({{1, 0, 1}}), {}, "local", FourCores(&probes));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->gpus, 2);
  EXPECT_EQ(probes, 1);
}

TEST(BudgetTest, FlagsOverrideTheMachine) {
  BudgetRequest request;
  request.cpus = 1.5;
  request.memory = "2G";
  request.gpus = 0;
  Result<Budget> b = SizeBudget(WithSteps({{}}), request, "local", FourCores());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->cpus, 1.5);
  EXPECT_EQ(b->jobs, 1) << "one job per whole cpu, at least one";
  EXPECT_EQ(b->memory_mib, 2048);
  request.jobs = 3;
  EXPECT_EQ(SizeBudget(WithSteps({{}}), request, "local", FourCores())->jobs, 3);
}

TEST(BudgetTest, OnSlurmOnlyWhatIsAskedForLimits) {
  BudgetRequest request;
  Result<Budget> b = SizeBudget(WithSteps({{64, 100'000, 8}}), request, "slurm", FourCores());
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->jobs, 100);
  EXPECT_GE(b->cpus, 1e9);
  EXPECT_EQ(b->memory_mib, 0) << "not limited";
  EXPECT_GE(b->gpus, 8);
  request.jobs = 7;
  EXPECT_EQ(SizeBudget(WithSteps({{}}), request, "slurm", FourCores())->jobs, 7);
}

TEST(BudgetTest, ABadMemoryIsAnInvalidArgument) {
  BudgetRequest request;
  request.memory = "lots";
  Result<Budget> b = SizeBudget(WithSteps({{}}), request, "local", FourCores());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(b.status().message(), HasSubstr("--memory: 'lots'"));
}

TEST(BudgetTest, AStepThatCanNeverRunIsNamed) {
  BudgetRequest request;
  request.gpus = 0;
  Result<Budget> b = SizeBudget(WithSteps({{1, 0, 1}}), request, "local", FourCores());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(b.status().message(), HasSubstr("steps cannot run on this machine:\n  s0"));
  EXPECT_THAT(b.status().message(), HasSubstr("\n(--gpus and --memory set the budget"));
}

}  // namespace
}  // namespace cairn::pipeline
