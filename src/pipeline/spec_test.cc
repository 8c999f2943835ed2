#include "pipeline/spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "pipeline/session.h"

namespace cairn::pipeline {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// Paths that exist "on disk" for these tests.
bool FakeExists(const std::string&, const std::string& path) {
  static const std::set<std::string> kFiles = {"raw", "raw/a.csv", "prep.py", "train.py"};
  return kFiles.count(path) != 0;
}

constexpr const char* kRecsys = R"(
name: recsys
params: {lr: 0.01, epochs: 3}
steps:
  prepare:
    run: python prep.py --out data/
    inputs: [raw/]
    outputs: [data/]
  train:
    needs: [prepare]
    run: python train.py --data data/ --lr ${params.lr} --epochs ${params.epochs}
    outputs: [model.pt]
    resources: {cpus: 2, memory: 4G, gpus: 1}
    retries: {limit: 2, backoff: 10s}
    timeout: 1h30m
  evaluate:
    needs: [train]
    run: python eval.py --model model.pt > metrics.json
    outputs: [metrics.json]
    cache: false
    variables: {PYTHONHASHSEED: "0", HOME_COPY: "${HOME}"}
)";

Pipeline Expand(const std::string& yaml, std::vector<std::string>* problems,
                const std::map<std::string, std::string>& overrides = {}) {
  Result<PipelineSpec> spec = ParsePipelineSpec(yaml, "pipeline.yaml", problems);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  if (!spec.ok()) return {};
  return ExpandPipeline(*spec, overrides, "/project", FakeExists, problems);
}

TEST(PipelineSpecTest, TheIssueExampleReadsAsWritten) {
  std::vector<std::string> problems;
  Pipeline p = Expand(kRecsys, &problems);
  ASSERT_THAT(problems, IsEmpty());
  EXPECT_EQ(p.name, "recsys");
  ASSERT_EQ(p.steps.size(), 3u);
  const Step& train = p.steps[1];
  EXPECT_EQ(train.id, "train");
  EXPECT_EQ(train.command, "python train.py --data data/ --lr 0.01 --epochs 3");
  EXPECT_THAT(train.deps, ElementsAre(0u));
  EXPECT_EQ(train.resources.cpus, 2);
  EXPECT_EQ(train.resources.memory_mib, 4096);
  EXPECT_EQ(train.resources.gpus, 1);
  EXPECT_EQ(train.retries.limit, 2);
  EXPECT_EQ(train.retries.backoff_ms, 10'000);
  EXPECT_EQ(train.timeout_ms, 5'400'000);
  EXPECT_EQ(train.params, (std::map<std::string, std::string>{{"epochs", "3"}, {"lr", "0.01"}}));
  EXPECT_TRUE(p.steps[0].params.empty()) << "prepare uses no parameter";
  EXPECT_THAT(p.steps[0].inputs, ElementsAre("raw"));
  EXPECT_THAT(p.steps[0].outputs, ElementsAre("data"));
  const Step& evaluate = p.steps[2];
  EXPECT_FALSE(evaluate.cache);
  EXPECT_EQ(evaluate.variables.at("HOME_COPY"), "${HOME}") << "other ${...} are the shell's";
  EXPECT_EQ(p.Find("evaluate"), 2);
  EXPECT_EQ(p.Find("nope"), -1);
}

TEST(PipelineSpecTest, OverridesReplaceParameters) {
  std::vector<std::string> problems;
  Pipeline p = Expand(kRecsys, &problems, {{"lr", "0.1"}, {"nope", "1"}});
  EXPECT_THAT(problems, ElementsAre("-p nope: the pipeline has no parameter nope"));
  EXPECT_EQ(p.steps[1].command, "python train.py --data data/ --lr 0.1 --epochs 3");
}

TEST(PipelineSpecTest, AnInputInsideAnotherStepsOutputIsADependency) {
  std::vector<std::string> problems;
  Pipeline p = Expand(R"(
name: x
steps:
  report:
    run: cat data/train.csv out/a.txt
    inputs: [data/train.csv, out/]
  prepare:
    run: python prep.py
    inputs: [raw/a.csv, prep.py]
    outputs: [./data//]
  write:
    run: echo > out/a.txt
    outputs: [out/a.txt]
)",
                      &problems);
  ASSERT_THAT(problems, IsEmpty());
  // Dependency order: prepare and write before report.
  ASSERT_EQ(p.steps.size(), 3u);
  EXPECT_EQ(p.steps[0].id, "prepare");
  EXPECT_EQ(p.steps[1].id, "write");
  EXPECT_EQ(p.steps[2].id, "report");
  EXPECT_THAT(p.steps[2].deps, ElementsAre(0u, 1u));
}

TEST(PipelineSpecTest, InputsNameDatasetsByVersionWithTheirDirectories) {
  std::vector<std::string> problems;
  Pipeline p = Expand(R"(
name: x
params: {v: 3}
steps:
  train:
    run: python train.py
    inputs:
      - train.py
      - data: mnist@${params.v}
      - {data: labels, path: ./extra//labels}
)",
                      &problems);
  ASSERT_THAT(problems, IsEmpty());
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_THAT(p.steps[0].inputs, ElementsAre("train.py"));
  EXPECT_THAT(p.steps[0].data, ElementsAre(DataInput{"mnist", 3, "data/mnist"},
                                           DataInput{"labels", 0, "extra/labels"}));
  EXPECT_EQ(p.steps[0].params.count("v"), 1u);  // the version is part of the step's parameters
}

TEST(PipelineSpecTest, ACheckpointIsADirectoryOutsideTheOutputs) {
  std::vector<std::string> problems;
  Pipeline p = Expand(R"(
name: x
steps:
  a: {run: a, checkpoint: ./state/}
  b: {run: b, checkpoint: {path: ckpt, every: 30s}, outputs: [model/]}
)",
                      &problems);
  EXPECT_THAT(problems, IsEmpty());
  ASSERT_TRUE(p.steps[0].checkpoint.has_value());
  EXPECT_EQ(p.steps[0].checkpoint->path, "state");
  EXPECT_EQ(p.steps[0].checkpoint->every_ms, 10'000) << "the default";
  EXPECT_EQ(p.steps[1].checkpoint->path, "ckpt");
  EXPECT_EQ(p.steps[1].checkpoint->every_ms, 30'000);
  EXPECT_EQ(Session::CanonicalDefinition(p.steps[0]).find("state"), std::string::npos)
      << "not part of the cache key";

  problems.clear();
  Expand(R"(
name: x
steps:
  a: {run: a, checkpoint: model/ckpt, outputs: [model/]}
  b: {run: b, checkpoint: {every: 1s}}
  c: {run: c, checkpoint: {path: c, every: never}}
  d: {run: d, checkpoint: ../elsewhere}
  e: {run: e, checkpoint: {path: e, often: 1s}}
)",
         &problems);
  EXPECT_THAT(problems, Contains(HasSubstr("model/ckpt overlaps the output model")));
  EXPECT_THAT(problems, Contains(HasSubstr("steps.b.checkpoint.path: is missing")));
  EXPECT_THAT(problems, Contains(HasSubstr("steps.c.checkpoint.every")));
  EXPECT_THAT(problems, Contains(HasSubstr("steps.d.checkpoint")));
  EXPECT_THAT(problems, Contains(HasSubstr("often")));
}

TEST(PipelineSpecTest, AnApprovalNamesWhoApproves) {
  std::vector<std::string> problems;
  Pipeline p = Expand(R"(
name: x
params: {team: ml-leads}
steps:
  a: {run: a, approve: alice}
  b: {run: b, approve: {by: "${params.team}"}}
  c: {run: c}
)",
                      &problems);
  EXPECT_THAT(problems, IsEmpty());
  ASSERT_TRUE(p.steps[0].approval && p.steps[1].approval);
  EXPECT_EQ(p.steps[0].approval->by, "alice");
  EXPECT_EQ(p.steps[1].approval->by, "ml-leads");
  EXPECT_FALSE(p.steps[2].approval.has_value());
  EXPECT_EQ(p.steps[1].params.count("team"), 0u) << "not part of the cache key";
  problems.clear();
  Expand("name: x\nsteps:\n  a: {run: a, approve: {who: bob}}\n  b: {run: b, approve: {}}\n",
         &problems);
  EXPECT_THAT(problems, Contains(HasSubstr("who")));
  EXPECT_THAT(problems, Contains(HasSubstr("steps.b.approve.by: is missing")));
}

TEST(PipelineSpecTest, DatasetInputsThatCannotWorkAreProblems) {
  std::vector<std::string> problems;
  Expand(R"(
name: x
steps:
  a:
    run: a
    inputs: [{data: "bad name"}, {data: m@x}, {path: p}, {data: m, extra: 1}]
  b:
    run: b
    inputs: [{data: m@1, path: shared}, {data: n, path: out/n}]
    outputs: [out/]
  c:
    run: c
    inputs: [{data: m@2, path: shared}, {data: m, path: /elsewhere}]
)",
         &problems);
  EXPECT_THAT(problems, Contains(HasSubstr("Invalid dataset name 'bad name'")));
  EXPECT_THAT(problems, Contains(HasSubstr("'x' is not a version of dataset m")));
  EXPECT_THAT(problems, Contains(HasSubstr("names no dataset")));
  EXPECT_THAT(problems, Contains(HasSubstr("extra")));
  EXPECT_THAT(problems, Contains(HasSubstr("dataset n goes in out/n, which step b writes")));
  EXPECT_THAT(problems, Contains(HasSubstr("shared holds m@1 for step b and m@2 for step c")));
  EXPECT_THAT(problems, Contains(HasSubstr("/elsewhere is outside the pipeline's directory")));
}

TEST(PipelineSpecTest, AnAbsolutePathIntoThePipelineIsTheRelativeOne) {
  std::vector<std::string> problems;
  Pipeline p = Expand(R"(
name: x
steps:
  train:
    run: python train.py
    inputs: [/project/data/train.csv, /project/sub/../raw]
  prepare:
    run: python prep.py
    outputs: [/project/data/, ../project/log.txt]
)",
                      &problems);
  ASSERT_THAT(problems, IsEmpty());
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].id, "prepare");
  EXPECT_THAT(p.steps[0].outputs, ElementsAre("data", "log.txt"));
  EXPECT_THAT(p.steps[1].inputs, ElementsAre("data/train.csv", "raw"));
  EXPECT_THAT(p.steps[1].deps, ElementsAre(0u));
}

TEST(PipelineSpecTest, AnInputInsideTheStepsOwnOutputIsAProblem) {
  // The output is removed before the step runs, and the input with it.
  std::vector<std::string> problems;
  Expand(R"(
name: x
steps:
  clean:
    run: sort raw/a.csv > raw/clean.csv
    inputs: [raw/a.csv]
    outputs: [raw/]
)",
         &problems);
  EXPECT_THAT(problems, ElementsAre("steps.clean.inputs: raw/a.csv is inside the step's own "
                                    "output raw, which cairn removes before the step runs"));
  // The other way round: the input's content would include the last output.
  problems.clear();
  Expand(R"(
name: x
steps:
  tidy:
    run: tidy raw
    inputs: [raw]
    outputs: [raw/tidy.csv]
)",
         &problems);
  EXPECT_THAT(problems, ElementsAre("steps.tidy.inputs: raw holds the step's own output "
                                    "raw/tidy.csv; name the input files apart from the output"));
}

TEST(PipelineSpecTest, ForeachFansOutOverAListOrAListParameter) {
  std::vector<std::string> problems;
  Pipeline p = Expand(R"(
name: fan
params: {seeds: [1, 2, 3], model: small}
steps:
  train:
    foreach: ${params.seeds}
    run: python train.py --seed ${item} --model ${params.model}
    outputs:
      - models/${item}.pt
  shard:
    foreach: [a, b]
    run: echo ${item}
  score:
    needs: [train]
    run: python score.py models/
    inputs: [models/]
)",
                      &problems);
  ASSERT_THAT(problems, IsEmpty());
  std::vector<std::string> ids;
  for (const Step& s : p.steps) ids.push_back(s.id);
  EXPECT_THAT(ids,
              ElementsAre("train[1]", "train[2]", "train[3]", "shard[a]", "shard[b]", "score"));
  EXPECT_EQ(p.steps[1].command, "python train.py --seed 2 --model small");
  EXPECT_THAT(p.steps[1].outputs, ElementsAre("models/2.pt"));
  EXPECT_THAT(p.steps[5].deps, ElementsAre(0u, 1u, 2u));
  EXPECT_EQ(p.steps[0].item, "1");

  problems.clear();
  Pipeline q = Expand(R"(
name: fan
params: {seeds: [1, 2, 3]}
steps:
  train:
    foreach: ${params.seeds}
    run: python train.py --seed ${item}
)",
                      &problems, {{"seeds", "7,8"}});
  ASSERT_THAT(problems, IsEmpty());
  ASSERT_EQ(q.steps.size(), 2u);
  EXPECT_EQ(q.steps[1].command, "python train.py --seed 8");
}

TEST(PipelineSpecTest, AnEmptyForeachHasNoInstancesAndNeedingItWaitsForNothing) {
  constexpr const char* kYaml = R"(
name: x
params: {seeds: [1, 2]}
steps:
  prepare: {run: prepare}
  train: {foreach: "${params.seeds}", run: "train ${item}", needs: [prepare]}
  report: {run: report, needs: [train]}
)";
  std::vector<std::string> problems;
  Pipeline p = Expand(kYaml, &problems, {{"seeds", ""}});
  ASSERT_THAT(problems, IsEmpty());
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].id, "prepare");
  EXPECT_EQ(p.steps[1].id, "report");
  // Through the empty fan-out, report still comes after what train needed.
  EXPECT_THAT(p.steps[1].deps, ElementsAre(0u));
}

TEST(PipelineSpecTest, ValidateNamesEveryProblemAtOnce) {
  std::vector<std::string> problems;
  Expand(R"(
name: broken
params: {lr: 0.1}
steps:
  a:
    needs: [c]
    run: step a ${params.lr}
  b:
    needs: [a, ghost]
    run: step b --rate ${params.rate}
    outputs: [out/model.pt]
  c:
    needs: [b]
    run: step c ${item}
    inputs: [missing.csv]
    outputs: [out/]
  d:
    run: step d
    outputs: [out/model.pt]
    retries: {limit: lots}
    timeout: soon
    resources: {cpus: 0, memory: 12 parsecs}
    colour: blue
)",
         &problems);
  EXPECT_THAT(problems,
              UnorderedElementsAre(
                  "steps.d.retries.limit: must be a whole number from 0 to 100, got 'lots'",
                  HasSubstr("steps.d.timeout: 'soon' is not a duration"),
                  "steps.d.resources.cpus: must be a number above 0, got '0'",
                  HasSubstr("steps.d.resources.memory: '12 parsecs' is not an amount of memory"),
                  HasSubstr("steps.d.colour: is not a known key"),
                  "steps.b.run: ${params.rate} names no parameter (parameters: lr)",
                  "steps.c.run: ${item} is only known in a step with foreach",
                  "steps b and c write overlapping outputs: out/model.pt is inside out",
                  "steps b and d both write out/model.pt",
                  "steps c and d write overlapping outputs: out/model.pt is inside out",
                  "steps.b.needs: no step is named ghost (steps: a, b, c, d)",
                  "steps.c.inputs: missing.csv does not exist and no step writes it",
                  "cycle: a -> b -> c -> a"));
}

TEST(PipelineSpecTest, ShapeProblems) {
  std::vector<std::string> problems;
  EXPECT_EQ(ParsePipelineSpec("[1, 2]", "p.yaml", &problems).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_THAT(ParsePipelineSpec("a: [", "p.yaml", &problems).status().message(),
              HasSubstr("not valid YAML at line"));
  problems.clear();
  ASSERT_TRUE(ParsePipelineSpec("params: {x: 1}\n", "p.yaml", &problems).ok());
  EXPECT_THAT(problems, ElementsAre("name: is missing: every pipeline has a name",
                                    "steps: must map step names to steps, and name at least one"));
  problems.clear();
  Expand("name: n\nsteps:\n  'bad name':\n    outputs: [../escape, /abs]\n", &problems);
  EXPECT_THAT(problems,
              UnorderedElementsAre(
                  "steps.bad name: a step name may hold letters, digits, '_', '-' and '.' only",
                  "steps.bad name.run: is missing: the command the step runs",
                  "steps.bad name.outputs: ../escape is outside the pipeline's directory; "
                  "outputs must be inside it",
                  "steps.bad name.outputs: /abs is outside the pipeline's directory; outputs "
                  "must be inside it"));
}

TEST(PipelineSpecTest, RegisterNamesAnOutputAndTakesParameters) {
  std::vector<std::string> problems;
  Pipeline p = Expand(R"(
name: n
params: {model: clf, alias: candidate, size: small}
steps:
  train:
    foreach: [a, b]
    run: python train.py --out out/${item}/
    outputs: ["out/${item}/"]
    register:
      model: ${params.model}-${item}
      path: ./out/${item}/weights
      alias: ${params.alias}
  plain:
    run: echo ${params.size} > size.txt
    outputs: [size.txt]
)",
                      &problems);
  ASSERT_THAT(problems, IsEmpty());
  ASSERT_EQ(p.steps.size(), 3u);
  ASSERT_TRUE(p.steps[1].registration.has_value());
  EXPECT_EQ(p.steps[1].registration->model, "clf-b");
  EXPECT_EQ(p.steps[1].registration->path, "out/b/weights");
  EXPECT_EQ(p.steps[1].registration->alias, "candidate");
  // Parameters used only by `register` stay out of the cache key.
  EXPECT_EQ(p.steps[1].params.count("model"), 0u);
  EXPECT_EQ(p.steps[1].params.count("alias"), 0u);
  EXPECT_FALSE(p.steps[2].registration.has_value());
}

TEST(PipelineSpecTest, RegisterProblems) {
  std::vector<std::string> problems;
  Expand(R"(
name: n
steps:
  a:
    run: x
    outputs: [model/]
    register: {model: m, path: other.pt, alias: latest}
  b:
    run: x
    register: {path: model.pt, colour: red}
  c:
    run: x
    outputs: [c.pt]
    register: {model: m, path: c.pt, alias: v2}
  d:
    run: x
    outputs: [d.pt]
    register: d.pt
)",
         &problems);
  EXPECT_THAT(problems,
              UnorderedElementsAre(
                  "steps.a.register.alias: 'latest' alias name (case insensitive) is reserved.",
                  "steps.a.register.path: other.pt is not among the step's outputs (model)",
                  "steps.b.register.colour: is not a known key (known: model, path, alias)",
                  "steps.b.register.model: is missing: the registered model the output becomes "
                  "a version of",
                  "steps.c.register.alias: Version alias name 'v2' is reserved.",
                  "steps.d.register: must be a mapping"));
}

TEST(PipelineSpecTest, DurationsAndMemory) {
  EXPECT_EQ(*ParseDuration("90"), 90'000);
  EXPECT_EQ(*ParseDuration("1.5"), 1'500);
  EXPECT_EQ(*ParseDuration("500ms"), 500);
  EXPECT_EQ(*ParseDuration("10s"), 10'000);
  EXPECT_EQ(*ParseDuration("2m"), 120'000);
  EXPECT_EQ(*ParseDuration("1h30m"), 5'400'000);
  EXPECT_EQ(*ParseDuration("1d"), 86'400'000);
  EXPECT_FALSE(ParseDuration("").ok());
  EXPECT_FALSE(ParseDuration("10 parsecs").ok());
  EXPECT_FALSE(ParseDuration("-1").ok());
  EXPECT_EQ(*ParseMemory("512"), 512);
  EXPECT_EQ(*ParseMemory("512M"), 512);
  EXPECT_EQ(*ParseMemory("4G"), 4096);
  EXPECT_EQ(*ParseMemory("4GB"), 4096);
  EXPECT_EQ(*ParseMemory("1.5GiB"), 1536);
  EXPECT_EQ(*ParseMemory("100K"), 1);
  EXPECT_EQ(*ParseMemory("1T"), 1024 * 1024);
  EXPECT_FALSE(ParseMemory("lots").ok());
  EXPECT_FALSE(ParseMemory("0").ok());
}

TEST(PipelineSpecTest, NormalisePath) {
  EXPECT_EQ(NormalisePath("./a//b/../c/"), "a/c");
  EXPECT_EQ(NormalisePath("data/"), "data");
  EXPECT_EQ(NormalisePath("."), ".");
  EXPECT_EQ(NormalisePath("/srv/data/"), "/srv/data");
  EXPECT_EQ(NormalisePath("../x"), "");
  EXPECT_EQ(NormalisePath(""), "");
}

}  // namespace
}  // namespace cairn::pipeline
