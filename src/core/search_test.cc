#include "core/search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace cairn::core {
namespace {

// Runs are spelled core::Run throughout: inside a TEST body the bare name Run means
// testing::Test::Run.

// --- Helpers ---------------------------------------------------------------------------------

Clause ParseOne(std::string_view filter) {
  Result<std::vector<Clause>> clauses = ParseRunFilter(filter);
  EXPECT_TRUE(clauses.ok()) << filter << ": " << clauses.status().ToString();
  if (!clauses.ok()) return Clause{};
  EXPECT_EQ(clauses->size(), 1u) << filter;
  return clauses->empty() ? Clause{} : clauses->front();
}

// The message of the error that parsing `filter` gives; fails the test if parsing succeeds.
std::string RunFilterError(std::string_view filter) {
  Result<std::vector<Clause>> clauses = ParseRunFilter(filter);
  EXPECT_FALSE(clauses.ok()) << "accepted: " << filter;
  if (clauses.ok()) return "";
  EXPECT_EQ(clauses.status().code(), StatusCode::kInvalidArgument) << filter;
  return clauses.status().message();
}

std::string RunOrderError(const std::vector<std::string>& order_by) {
  Result<std::vector<OrderKey>> keys = ParseRunOrderBy(order_by);
  EXPECT_FALSE(keys.ok()) << "accepted order_by";
  if (keys.ok()) return "";
  EXPECT_EQ(keys.status().code(), StatusCode::kInvalidArgument);
  return keys.status().message();
}

core::Run MakeRun(std::string run_id, int64_t start_time = 0) {
  core::Run run;
  run.info.run_id = std::move(run_id);
  run.info.start_time = start_time;
  return run;
}

core::Run WithMetric(core::Run run, std::string key, double value) {
  run.data.metrics.push_back(Metric{std::move(key), value, 0, 0});
  return run;
}

core::Run WithParam(core::Run run, std::string key, std::string value) {
  run.data.params.push_back(Param{std::move(key), std::move(value)});
  return run;
}

core::Run WithTag(core::Run run, std::string key, std::string value) {
  run.data.tags.push_back(Tag{std::move(key), std::move(value)});
  return run;
}

bool Matches(const core::Run& run, std::string_view filter) {
  Result<std::vector<Clause>> clauses = ParseRunFilter(filter);
  EXPECT_TRUE(clauses.ok()) << filter << ": " << clauses.status().ToString();
  return clauses.ok() && RunMatches(run, *clauses);
}

std::vector<std::string> SortedIds(std::vector<core::Run> runs,
                                   const std::vector<std::string>& order) {
  Result<std::vector<OrderKey>> keys = ParseRunOrderBy(order);
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  if (!keys.ok()) return {};
  SortRuns(&runs, *keys);
  std::vector<std::string> ids;
  ids.reserve(runs.size());
  for (const core::Run& run : runs) ids.push_back(run.info.run_id);
  return ids;
}

Experiment MakeExperiment(std::string id, std::string name, int64_t creation_time) {
  Experiment experiment;
  experiment.experiment_id = std::move(id);
  experiment.name = std::move(name);
  experiment.creation_time = creation_time;
  experiment.last_update_time = creation_time;
  return experiment;
}

bool ExperimentMatchesFilter(const Experiment& experiment, std::string_view filter) {
  Result<std::vector<Clause>> clauses = ParseExperimentFilter(filter);
  EXPECT_TRUE(clauses.ok()) << filter << ": " << clauses.status().ToString();
  return clauses.ok() && ExperimentMatches(experiment, *clauses);
}

std::vector<std::string> SortedExperimentIds(std::vector<Experiment> experiments,
                                             const std::vector<std::string>& order) {
  Result<std::vector<OrderKey>> keys = ParseExperimentOrderBy(order);
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  if (!keys.ok()) return {};
  SortExperiments(&experiments, *keys);
  std::vector<std::string> ids;
  ids.reserve(experiments.size());
  for (const Experiment& experiment : experiments) ids.push_back(experiment.experiment_id);
  return ids;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// --- Parsing run filters ---------------------------------------------------------------------

TEST(RunFilterTest, EmptyOrBlankFilterHasNoClauses) {
  for (std::string_view filter : {"", "   ", "\t\n"}) {
    Result<std::vector<Clause>> clauses = ParseRunFilter(filter);
    ASSERT_TRUE(clauses.ok()) << clauses.status().ToString();
    EXPECT_TRUE(clauses->empty());
  }
}

TEST(RunFilterTest, ParsesMetricComparison) {
  Clause clause = ParseOne("metrics.acc > 0.5");
  EXPECT_EQ(clause.type, EntityType::kMetric);
  EXPECT_EQ(clause.key, "acc");
  EXPECT_EQ(clause.op, Comparator::kGt);
  EXPECT_DOUBLE_EQ(clause.number, 0.5);
}

TEST(RunFilterTest, AcceptsEveryEntityPrefix) {
  struct Case {
    std::string prefix;
    EntityType type;
    std::string value;
  };
  const std::vector<Case> cases = {
      {"metric", EntityType::kMetric, "1"},     {"metrics", EntityType::kMetric, "1"},
      {"param", EntityType::kParam, "'v'"},     {"params", EntityType::kParam, "'v'"},
      {"parameter", EntityType::kParam, "'v'"}, {"parameters", EntityType::kParam, "'v'"},
      {"tag", EntityType::kTag, "'v'"},         {"tags", EntityType::kTag, "'v'"},
      {"dataset", EntityType::kDataset, "'v'"}, {"datasets", EntityType::kDataset, "'v'"},
  };
  for (const Case& c : cases) {
    const std::string key = c.type == EntityType::kDataset ? "name" : "k";
    Clause clause = ParseOne(c.prefix + "." + key + " = " + c.value);
    EXPECT_EQ(clause.type, c.type) << c.prefix;
    EXPECT_EQ(clause.key, key) << c.prefix;
  }
  for (std::string prefix : {"attribute", "attributes", "attr", "run"}) {
    Clause clause = ParseOne(prefix + ".status = 'FINISHED'");
    EXPECT_EQ(clause.type, EntityType::kAttribute) << prefix;
    EXPECT_EQ(clause.key, "status") << prefix;
    EXPECT_EQ(clause.text, "FINISHED") << prefix;
  }
}

TEST(RunFilterTest, UnprefixedKeyIsAttribute) {
  Clause clause = ParseOne("user_id = 'alice'");
  EXPECT_EQ(clause.type, EntityType::kAttribute);
  EXPECT_EQ(clause.key, "user_id");
  EXPECT_EQ(clause.text, "alice");
}

TEST(RunFilterTest, CanonicalizesEveryAttributeAndAlias) {
  struct Case {
    std::string identifier;
    std::string key;
    bool numeric;
  };
  const std::vector<Case> cases = {
      {"attributes.run_id", "run_id", false},
      {"attributes.run_name", "run_name", false},
      {"attributes.user_id", "user_id", false},
      {"attributes.status", "status", false},
      {"attributes.artifact_uri", "artifact_uri", false},
      {"attributes.start_time", "start_time", true},
      {"attributes.end_time", "end_time", true},
      {"attributes.created", "start_time", true},
      {"Created", "start_time", true},
      {"attributes.\"run name\"", "run_name", false},
      {"attributes.`Run name`", "run_name", false},
      {"attributes.`Run Name`", "run_name", false},
  };
  for (const Case& c : cases) {
    Clause clause = ParseOne(c.identifier + (c.numeric ? " >= 10" : " = 'x'"));
    EXPECT_EQ(clause.type, EntityType::kAttribute) << c.identifier;
    EXPECT_EQ(clause.key, c.key) << c.identifier;
    if (c.numeric) {
      EXPECT_DOUBLE_EQ(clause.number, 10) << c.identifier;
    } else {
      EXPECT_EQ(clause.text, "x") << c.identifier;
    }
  }
}

TEST(RunFilterTest, AcceptsQuotedKeys) {
  Clause tag = ParseOne("tags.\"mlflow.source.name\" = 'train.py'");
  EXPECT_EQ(tag.type, EntityType::kTag);
  EXPECT_EQ(tag.key, "mlflow.source.name");
  EXPECT_EQ(tag.text, "train.py");

  Clause metric = ParseOne("metrics.`my metric` > 1");
  EXPECT_EQ(metric.type, EntityType::kMetric);
  EXPECT_EQ(metric.key, "my metric");

  Clause param = ParseOne("`params`.`learning-rate` = '0.1'");
  EXPECT_EQ(param.type, EntityType::kParam);
  EXPECT_EQ(param.key, "learning-rate");
}

TEST(RunFilterTest, BareDottedKeyKeepsItsDots) {
  Clause clause = ParseOne("tags.mlflow.user = 'bob'");
  EXPECT_EQ(clause.type, EntityType::kTag);
  EXPECT_EQ(clause.key, "mlflow.user");
  EXPECT_EQ(ParseOne("metrics.1st_loss < 2").key, "1st_loss");
}

TEST(RunFilterTest, ParsesEveryNumericComparator) {
  const std::vector<std::pair<std::string, Comparator>> cases = {
      {"=", Comparator::kEq},  {"!=", Comparator::kNe}, {"<", Comparator::kLt},
      {"<=", Comparator::kLe}, {">", Comparator::kGt},  {">=", Comparator::kGe},
  };
  for (const auto& [text, op] : cases) {
    EXPECT_EQ(ParseOne("metrics.m " + text + " 3").op, op) << text;
    EXPECT_EQ(ParseOne("metrics.m" + text + "3").op, op) << text << " without spaces";
    EXPECT_EQ(ParseOne("attributes.end_time " + text + " 3").op, op) << text;
  }
}

TEST(RunFilterTest, ParsesStringComparatorsCaseInsensitively) {
  EXPECT_EQ(ParseOne("params.p LIKE 'a%'").op, Comparator::kLike);
  EXPECT_EQ(ParseOne("params.p like 'a%'").op, Comparator::kLike);
  EXPECT_EQ(ParseOne("tags.t ILIKE 'a%'").op, Comparator::kILike);
  EXPECT_EQ(ParseOne("tags.t iLike 'a%'").op, Comparator::kILike);
  EXPECT_EQ(ParseOne("tags.t != 'a'").op, Comparator::kNe);
  EXPECT_EQ(ParseOne("attributes.artifact_uri LIKE 's3://%'").text, "s3://%");
}

TEST(RunFilterTest, ParsesNumericLiterals) {
  EXPECT_DOUBLE_EQ(ParseOne("metrics.m > -1").number, -1);
  EXPECT_DOUBLE_EQ(ParseOne("metrics.m > 2.5").number, 2.5);
  EXPECT_DOUBLE_EQ(ParseOne("metrics.m > 1e3").number, 1000);
  EXPECT_DOUBLE_EQ(ParseOne("metrics.m > -1.5E-2").number, -0.015);
  EXPECT_DOUBLE_EQ(ParseOne("metrics.m > .5").number, 0.5);
  EXPECT_DOUBLE_EQ(ParseOne("metrics.m > +4").number, 4);
  EXPECT_DOUBLE_EQ(ParseOne("attributes.start_time >= 1700000000000").number, 1.7e12);
}

TEST(RunFilterTest, AcceptsDoubleQuotedStringValues) {
  Clause clause = ParseOne("params.lr = \"0.1\"");
  EXPECT_EQ(clause.type, EntityType::kParam);
  EXPECT_EQ(clause.text, "0.1");
}

TEST(RunFilterTest, KeepsSpacesAndPercentInStringValues) {
  EXPECT_EQ(ParseOne("tags.note = ' two  words '").text, " two  words ");
  EXPECT_EQ(ParseOne("tags.note = ''").text, "");
}

TEST(RunFilterTest, ParsesInAndNotInLists) {
  Clause in = ParseOne("attributes.run_id IN ('a', 'b',\"c\")");
  EXPECT_EQ(in.op, Comparator::kIn);
  EXPECT_EQ(in.key, "run_id");
  EXPECT_EQ(in.list, (std::vector<std::string>{"a", "b", "c"}));

  Clause not_in = ParseOne("run_id not in ('x')");
  EXPECT_EQ(not_in.op, Comparator::kNotIn);
  EXPECT_EQ(not_in.list, std::vector<std::string>{"x"});

  Clause dataset = ParseOne("datasets.digest NOT IN ('d1','d2')");
  EXPECT_EQ(dataset.type, EntityType::kDataset);
  EXPECT_EQ(dataset.key, "digest");
  EXPECT_EQ(dataset.op, Comparator::kNotIn);
  EXPECT_EQ(dataset.list.size(), 2u);
}

TEST(RunFilterTest, JoinsClausesWithCaseInsensitiveAnd) {
  Result<std::vector<Clause>> clauses =
      ParseRunFilter("metrics.a > 1 AND params.b = 'x' and tags.c != 'y' And status = 'FAILED'");
  ASSERT_TRUE(clauses.ok()) << clauses.status().ToString();
  ASSERT_EQ(clauses->size(), 4u);
  EXPECT_EQ((*clauses)[0].type, EntityType::kMetric);
  EXPECT_EQ((*clauses)[1].type, EntityType::kParam);
  EXPECT_EQ((*clauses)[2].type, EntityType::kTag);
  EXPECT_EQ((*clauses)[3].type, EntityType::kAttribute);
}

TEST(RunFilterTest, RejectsOr) {
  EXPECT_EQ(RunFilterError("metrics.a > 1 or metrics.b < 2"),
            "Invalid clause(s) in filter string: 'or'");
  EXPECT_EQ(RunFilterError("metrics.a > 1 OR metrics.b < 2"),
            "Invalid clause(s) in filter string: 'OR'");
}

TEST(RunFilterTest, RejectsParentheses) {
  EXPECT_EQ(RunFilterError("(metrics.a > 1)"),
            "Invalid clause(s) in filter string: '(metrics.a > 1)'");
  EXPECT_EQ(RunFilterError("metrics.a > 1 and (params.x = 'y' or params.x = 'z')"),
            "Invalid clause(s) in filter string: '(params.x = 'y' or params.x = 'z')'");
}

TEST(RunFilterTest, RejectsUnquotedStringValue) {
  std::string message = RunFilterError("params.lr = 0.1");
  EXPECT_NE(message.find("Expected a quoted string value"), std::string::npos) << message;
  EXPECT_NE(message.find("0.1"), std::string::npos) << message;
  message = RunFilterError("tags.owner = alice");
  EXPECT_NE(message.find("Expected a quoted string value"), std::string::npos) << message;
  EXPECT_NE(message.find("alice"), std::string::npos) << message;
  message = RunFilterError("attributes.status = FINISHED");
  EXPECT_NE(message.find("Expected a quoted string value"), std::string::npos) << message;
  message = RunFilterError("datasets.name = `train`");
  EXPECT_NE(message.find("Expected a quoted string value"), std::string::npos) << message;
}

TEST(RunFilterTest, RejectsMetricComparedToString) {
  std::string message = RunFilterError("metrics.acc = '0.9'");
  EXPECT_NE(message.find("Expected numeric value type for metric 'acc'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'0.9'"), std::string::npos) << message;
  message = RunFilterError("attributes.start_time > 'yesterday'");
  EXPECT_NE(message.find("Expected numeric value type for attribute 'start_time'"),
            std::string::npos)
      << message;
}

TEST(RunFilterTest, RejectsComparatorsThatDoNotFitTheKey) {
  std::string message = RunFilterError("metrics.acc LIKE '0.%'");
  EXPECT_NE(message.find("Invalid comparator 'LIKE' for metric 'acc'"), std::string::npos)
      << message;
  message = RunFilterError("params.lr > '0.1'");
  EXPECT_NE(message.find("Invalid comparator '>' for parameter 'lr'"), std::string::npos)
      << message;
  message = RunFilterError("tags.t IN ('a')");
  EXPECT_NE(message.find("Invalid comparator 'IN' for tag 't'"), std::string::npos) << message;
  message = RunFilterError("attributes.start_time LIKE '1%'");
  EXPECT_NE(message.find("Invalid comparator 'LIKE'"), std::string::npos) << message;
  message = RunFilterError("datasets.name > 'a'");
  EXPECT_NE(message.find("Invalid comparator '>'"), std::string::npos) << message;
}

TEST(RunFilterTest, RejectsInOnAttributeOtherThanRunId) {
  std::string message = RunFilterError("attributes.status IN ('FINISHED', 'FAILED')");
  EXPECT_NE(message.find("Only the 'run_id' attribute supports comparison with a list"),
            std::string::npos)
      << message;
  message = RunFilterError("attributes.user_id NOT IN ('a')");
  EXPECT_NE(message.find("Only the 'run_id' attribute"), std::string::npos) << message;
}

TEST(RunFilterTest, RejectsListWithoutInAndInWithoutList) {
  EXPECT_NE(RunFilterError("run_id = ('a')").find("a list needs IN or NOT IN"), std::string::npos);
  EXPECT_NE(RunFilterError("run_id IN 'a'").find("parenthesized list"), std::string::npos);
  EXPECT_NE(RunFilterError("run_id IN ()").find("non-empty list"), std::string::npos);
  EXPECT_NE(RunFilterError("run_id IN ('a', 1)").find("non-empty list of quoted strings"),
            std::string::npos);
  EXPECT_NE(RunFilterError("run_id IN ('a' 'b')").find("',' or ')'"), std::string::npos);
  EXPECT_NE(RunFilterError("run_id NOT ('a')").find("IN after NOT"), std::string::npos);
}

TEST(RunFilterTest, RejectsUnknownEntityType) {
  std::string message = RunFilterError("metricz.acc > 1");
  EXPECT_NE(message.find("Invalid entity type 'metricz'"), std::string::npos) << message;
  // The entity type is case-sensitive, as in MLflow.
  EXPECT_NE(RunFilterError("METRICS.acc > 1").find("Invalid entity type 'METRICS'"),
            std::string::npos);
}

TEST(RunFilterTest, RejectsUnknownAttributeAndDatasetKey) {
  std::string message = RunFilterError("attributes.color = 'red'");
  EXPECT_NE(message.find("Invalid attribute key 'color'"), std::string::npos) << message;
  EXPECT_NE(message.find("'run_id'"), std::string::npos) << message;
  message = RunFilterError("lifecycle = 'active'");
  EXPECT_NE(message.find("Invalid attribute key 'lifecycle'"), std::string::npos) << message;
  message = RunFilterError("datasets.schema = 'x'");
  EXPECT_NE(message.find("Invalid dataset key 'schema'"), std::string::npos) << message;
}

TEST(RunFilterTest, RejectsMalformedFilters) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"metrics.a >", "expected a value, found end of input"},
      {"metrics.a 1", "expected a comparison operator"},
      {"metrics.a", "expected a comparison operator"},
      {"metrics.a > 1 and", "expected a comparison after the last AND"},
      {"metrics.a > 1 metrics.b < 2", "Invalid clause(s) in filter string: 'metrics.b'"},
      {"= 1", "Invalid clause(s) in filter string: '='"},
      {"params.a = 'x", "Unterminated quoted text at position 11"},
      {"tags.\"a = 'x'", "Unterminated quoted text"},
      {"metrics.a >= 1abc", "Invalid number '1abc'"},
      {"metrics.a == 1", "expected a value, found '='"},
      {"metrics.a <> 1", "expected a value, found '>'"},
      {"metrics.a ! 1", "Unexpected character '!'"},
      {"metrics.a > 1; params.b = 'x'", "Unexpected character ';'"},
      {"metrics. > 1", "Expected a key after '.'"},
      {"metrics.\"\" > 1", "the key is empty"},
      {"tags.a.\"b\" = 'x'", "quote the whole key"},
      {"not metrics.a > 1", "Invalid clause(s) in filter string: 'not'"},
  };
  for (const auto& [filter, expected] : cases) {
    std::string message = RunFilterError(filter);
    EXPECT_NE(message.find(expected), std::string::npos)
        << "filter: " << filter << "\nmessage: " << message;
  }
}

// --- Matching runs -----------------------------------------------------------------------------

TEST(RunMatchTest, EmptyFilterMatchesEveryRun) { EXPECT_TRUE(RunMatches(MakeRun("r"), {})); }

TEST(RunMatchTest, ComparesMetricsNumerically) {
  const core::Run run = WithMetric(MakeRun("r"), "acc", 0.7);
  EXPECT_TRUE(Matches(run, "metrics.acc = 0.7"));
  EXPECT_FALSE(Matches(run, "metrics.acc = 0.8"));
  EXPECT_TRUE(Matches(run, "metrics.acc != 0.8"));
  EXPECT_FALSE(Matches(run, "metrics.acc != 0.7"));
  EXPECT_TRUE(Matches(run, "metrics.acc > 0.5"));
  EXPECT_FALSE(Matches(run, "metrics.acc > 0.7"));
  EXPECT_TRUE(Matches(run, "metrics.acc >= 0.7"));
  EXPECT_TRUE(Matches(run, "metrics.acc < 1"));
  EXPECT_FALSE(Matches(run, "metrics.acc < 0.7"));
  EXPECT_TRUE(Matches(run, "metrics.acc <= 0.7"));
  EXPECT_TRUE(Matches(run, "metrics.acc > -1e9"));
}

TEST(RunMatchTest, MissingKeyNeverMatchesEvenWithNotEqual) {
  const core::Run run = MakeRun("r");  // running: no end_time, no metrics, params, tags or inputs
  EXPECT_FALSE(Matches(run, "metrics.acc != 1"));
  EXPECT_FALSE(Matches(run, "params.lr != 'x'"));
  EXPECT_FALSE(Matches(run, "tags.t != 'x'"));
  EXPECT_FALSE(Matches(run, "attributes.end_time != 0"));
  EXPECT_FALSE(Matches(run, "attributes.end_time > 0"));
  EXPECT_FALSE(Matches(run, "datasets.name != 'x'"));
  EXPECT_FALSE(Matches(run, "datasets.name NOT IN ('x')"));
  EXPECT_FALSE(Matches(run, "attributes.run_name != 'x'"));  // no tag and no name
}

TEST(RunMatchTest, NaNMetricMatchesOnlyNotEqual) {
  const core::Run run = WithMetric(MakeRun("r"), "loss", kNaN);
  EXPECT_TRUE(Matches(run, "metrics.loss != 0"));
  for (std::string op : {"=", "<", "<=", ">", ">="}) {
    EXPECT_FALSE(Matches(run, "metrics.loss " + op + " 0")) << op;
  }
}

TEST(RunMatchTest, ComparesParamsAndTagsAsExactStrings) {
  const core::Run run = WithTag(WithParam(MakeRun("r"), "lr", "0.10"), "team", "Vision");
  EXPECT_TRUE(Matches(run, "params.lr = '0.10'"));
  EXPECT_FALSE(Matches(run, "params.lr = '0.1'"));  // strings, not numbers
  EXPECT_TRUE(Matches(run, "params.lr != '0.1'"));
  EXPECT_TRUE(Matches(run, "tags.team = 'Vision'"));
  EXPECT_FALSE(Matches(run, "tags.team = 'vision'"));
}

TEST(RunMatchTest, LikeIsCaseSensitiveAndILikeIsNot) {
  const core::Run run = WithParam(MakeRun("r"), "model", "ResNet_50");
  EXPECT_TRUE(Matches(run, "params.model LIKE 'Res%'"));
  EXPECT_FALSE(Matches(run, "params.model LIKE 'res%'"));
  EXPECT_TRUE(Matches(run, "params.model ILIKE 'res%'"));
  EXPECT_TRUE(Matches(run, "params.model LIKE '%50'"));
  EXPECT_TRUE(Matches(run, "params.model LIKE '%Net%'"));
  EXPECT_TRUE(Matches(run, "params.model LIKE 'ResNet__0'"));
  EXPECT_FALSE(Matches(run, "params.model LIKE 'ResNet_'"));
  EXPECT_FALSE(Matches(run, "params.model LIKE 'Net%'"));  // anchored at both ends
  EXPECT_TRUE(Matches(run, "params.model ILIKE '%NET%'"));
  EXPECT_FALSE(Matches(run, "params.model ILIKE '%nets%'"));
}

TEST(RunMatchTest, RunNamePrefersTagAndFallsBackToInfo) {
  core::Run tagged = WithTag(MakeRun("a"), "mlflow.runName", "from-tag");
  tagged.info.run_name = "from-info";
  EXPECT_TRUE(Matches(tagged, "attributes.run_name = 'from-tag'"));
  EXPECT_FALSE(Matches(tagged, "attributes.run_name = 'from-info'"));
  EXPECT_TRUE(Matches(tagged, "attributes.`Run name` LIKE 'from-%'"));

  core::Run untagged = MakeRun("b");
  untagged.info.run_name = "from-info";
  EXPECT_TRUE(Matches(untagged, "run_name = 'from-info'"));
  EXPECT_TRUE(Matches(untagged, "attributes.\"run name\" ILIKE 'FROM-INFO'"));
}

TEST(RunMatchTest, MatchesRunInfoAttributes) {
  core::Run run = MakeRun("abc123", 1000);
  run.info.user_id = "alice";
  run.info.status = RunStatus::kFinished;
  run.info.end_time = 2000;
  run.info.artifact_uri = "s3://bucket/abc123/artifacts";
  EXPECT_TRUE(Matches(run, "attributes.run_id = 'abc123'"));
  EXPECT_TRUE(Matches(run, "user_id = 'alice'"));
  EXPECT_TRUE(Matches(run, "attributes.status = 'FINISHED'"));
  EXPECT_FALSE(Matches(run, "attributes.status = 'RUNNING'"));
  EXPECT_TRUE(Matches(run, "attributes.artifact_uri LIKE 's3://bucket/%'"));
  EXPECT_TRUE(Matches(run, "attributes.start_time = 1000"));
  EXPECT_TRUE(Matches(run, "attributes.created < 1001"));
  EXPECT_FALSE(Matches(run, "attributes.created > 1000"));
  EXPECT_TRUE(Matches(run, "attributes.end_time >= 2000"));
  EXPECT_FALSE(Matches(run, "attributes.end_time < 2000"));
}

TEST(RunMatchTest, MatchesRunIdLists) {
  const core::Run run = MakeRun("b");
  EXPECT_TRUE(Matches(run, "attributes.run_id IN ('a', 'b')"));
  EXPECT_FALSE(Matches(run, "attributes.run_id IN ('a', 'c')"));
  EXPECT_TRUE(Matches(run, "attributes.run_id NOT IN ('a', 'c')"));
  EXPECT_FALSE(Matches(run, "attributes.run_id NOT IN ('b')"));
}

TEST(RunMatchTest, DatasetClauseMatchesWhenAnyInputSatisfiesIt) {
  core::Run run = MakeRun("r");
  DatasetInput train;
  train.dataset.name = "train-set";
  train.dataset.digest = "d1";
  train.tags.push_back(Tag{"mlflow.data.context", "training"});
  DatasetInput eval;
  eval.dataset.name = "eval-set";
  eval.dataset.digest = "d2";  // no context tag
  run.inputs = {train, eval};

  EXPECT_TRUE(Matches(run, "datasets.name = 'eval-set'"));
  EXPECT_TRUE(Matches(run, "datasets.name = 'train-set'"));
  EXPECT_FALSE(Matches(run, "datasets.name = 'test-set'"));
  EXPECT_TRUE(Matches(run, "datasets.name != 'train-set'"));  // eval-set differs
  EXPECT_TRUE(Matches(run, "datasets.digest IN ('d2', 'd9')"));
  EXPECT_TRUE(Matches(run, "dataset.name LIKE '%-set'"));
  EXPECT_TRUE(Matches(run, "datasets.context = 'training'"));
  EXPECT_FALSE(Matches(run, "datasets.context = 'evaluation'"));
  // Only the training input has a context, and it is 'training'.
  EXPECT_FALSE(Matches(run, "datasets.context != 'training'"));
  EXPECT_TRUE(Matches(run, "datasets.context ILIKE 'TRAIN%'"));
}

TEST(RunMatchTest, RequiresEveryClause) {
  const core::Run run = WithParam(WithMetric(MakeRun("r"), "acc", 0.9), "lr", "0.1");
  EXPECT_TRUE(Matches(run, "metrics.acc > 0.5 and params.lr = '0.1'"));
  EXPECT_FALSE(Matches(run, "metrics.acc > 0.5 and params.lr = '0.2'"));
  EXPECT_FALSE(Matches(run, "metrics.acc > 0.95 and params.lr = '0.1'"));
}

// --- LIKE ---------------------------------------------------------------------------------------

TEST(LikeMatchTest, PercentMatchesAnySequence) {
  EXPECT_TRUE(LikeMatch("abc", "a%", false));
  EXPECT_TRUE(LikeMatch("abc", "%c", false));
  EXPECT_TRUE(LikeMatch("abc", "%b%", false));
  EXPECT_TRUE(LikeMatch("abc", "%", false));
  EXPECT_TRUE(LikeMatch("", "%", false));
  EXPECT_TRUE(LikeMatch("abc", "a%%c", false));
  EXPECT_TRUE(LikeMatch("ac", "a%c", false));
  EXPECT_FALSE(LikeMatch("abc", "%d%", false));
  EXPECT_FALSE(LikeMatch("", "a%", false));
}

TEST(LikeMatchTest, UnderscoreMatchesExactlyOneCharacter) {
  EXPECT_TRUE(LikeMatch("abc", "a_c", false));
  EXPECT_TRUE(LikeMatch("abc", "___", false));
  EXPECT_FALSE(LikeMatch("abc", "__", false));
  EXPECT_FALSE(LikeMatch("abc", "____", false));
  EXPECT_FALSE(LikeMatch("", "_", false));
  EXPECT_TRUE(LikeMatch("caf\xC3\xA9", "caf_", false));  // é is one character of two bytes
}

TEST(LikeMatchTest, WithoutWildcardsRequiresEquality) {
  EXPECT_TRUE(LikeMatch("abc", "abc", false));
  EXPECT_FALSE(LikeMatch("abc", "ab", false));
  EXPECT_FALSE(LikeMatch("abc", "abcd", false));
  EXPECT_TRUE(LikeMatch("", "", false));
}

TEST(LikeMatchTest, FoldsCaseOnlyWhenAsked) {
  EXPECT_FALSE(LikeMatch("ABC", "abc", false));
  EXPECT_TRUE(LikeMatch("ABC", "abc", true));
  EXPECT_TRUE(LikeMatch("aBc", "A%C", true));
  EXPECT_FALSE(LikeMatch("aBc", "A%C", false));
}

TEST(LikeMatchTest, BacktracksAcrossRepeatedPrefixes) {
  EXPECT_TRUE(LikeMatch("aaab", "%ab", false));
  EXPECT_TRUE(LikeMatch("abcabd", "%ab_", false));
  EXPECT_TRUE(LikeMatch("xaybzc", "%a%b%c", false));
  EXPECT_FALSE(LikeMatch("xaybz", "%a%b%c", false));
  EXPECT_TRUE(LikeMatch("mississippi", "m%iss%ppi", false));
}

// --- Parsing order_by ---------------------------------------------------------------------------

TEST(RunOrderByTest, ParsesKeysAndDirections) {
  Result<std::vector<OrderKey>> keys = ParseRunOrderBy(
      {"metrics.acc DESC", "params.lr asc", "tags.team", "created Desc", "attributes.run_id"});
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 5u);
  EXPECT_EQ((*keys)[0].type, EntityType::kMetric);
  EXPECT_EQ((*keys)[0].key, "acc");
  EXPECT_FALSE((*keys)[0].ascending);
  EXPECT_EQ((*keys)[1].type, EntityType::kParam);
  EXPECT_TRUE((*keys)[1].ascending);
  EXPECT_EQ((*keys)[2].type, EntityType::kTag);
  EXPECT_TRUE((*keys)[2].ascending);  // ascending by default
  EXPECT_EQ((*keys)[3].type, EntityType::kAttribute);
  EXPECT_EQ((*keys)[3].key, "start_time");
  EXPECT_FALSE((*keys)[3].ascending);
  EXPECT_EQ((*keys)[4].key, "run_id");
}

TEST(RunOrderByTest, AcceptsQuotedKeys) {
  Result<std::vector<OrderKey>> keys = ParseRunOrderBy(
      {"metrics.`my metric` DESC", "tags.\"mlflow.source.name\"", "attributes.`Run name` ASC"});
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ((*keys)[0].key, "my metric");
  EXPECT_FALSE((*keys)[0].ascending);
  EXPECT_EQ((*keys)[1].key, "mlflow.source.name");
  EXPECT_EQ((*keys)[2].key, "run_name");
}

TEST(RunOrderByTest, RejectsDuplicateKey) {
  std::string message = RunOrderError({"metrics.acc", "metric.acc DESC"});
  EXPECT_NE(message.find("duplicate"), std::string::npos) << message;
  EXPECT_NE(message.find("'metric.acc DESC'"), std::string::npos) << message;
  message = RunOrderError({"created", "attributes.start_time DESC"});
  EXPECT_NE(message.find("duplicate"), std::string::npos) << message;
  // The same key name in different entities is not a duplicate.
  EXPECT_TRUE(ParseRunOrderBy({"metrics.x", "params.x", "tags.x"}).ok());
}

TEST(RunOrderByTest, RejectsMalformedEntries) {
  EXPECT_NE(RunOrderError({"metrics.acc up"}).find("Invalid ordering key"), std::string::npos);
  EXPECT_NE(RunOrderError({""}).find("Could not be parsed"), std::string::npos);
  EXPECT_NE(RunOrderError({"metrics.acc DESC extra"}).find("Could not be parsed"),
            std::string::npos);
  EXPECT_NE(RunOrderError({"metrics.a, metrics.b"}).find("Could not be parsed"), std::string::npos);
  EXPECT_NE(RunOrderError({"attributes.color"}).find("Invalid attribute key 'color'"),
            std::string::npos);
  EXPECT_NE(RunOrderError({"foo.bar"}).find("Invalid entity type 'foo'"), std::string::npos);
  EXPECT_NE(RunOrderError({"datasets.name"}).find("runs are ordered by"), std::string::npos);
}

// --- Sorting runs -------------------------------------------------------------------------------

TEST(SortRunsTest, DefaultOrderIsStartTimeDescendingThenRunId) {
  std::vector<core::Run> runs = {MakeRun("b", 1), MakeRun("c", 3), MakeRun("a", 1),
                                 MakeRun("d", 2)};
  EXPECT_EQ(SortedIds(runs, {}), (std::vector<std::string>{"c", "d", "a", "b"}));
}

TEST(SortRunsTest, MetricAscendingPutsNaNThenMissingLast) {
  std::vector<core::Run> runs = {
      MakeRun("missing"),
      WithMetric(MakeRun("nan"), "m", kNaN),
      WithMetric(MakeRun("high"), "m", 5),
      WithMetric(MakeRun("low"), "m", -2),
      WithMetric(MakeRun("inf"), "m", std::numeric_limits<double>::infinity()),
  };
  EXPECT_EQ(SortedIds(runs, {"metrics.m ASC"}),
            (std::vector<std::string>{"low", "high", "inf", "nan", "missing"}));
}

TEST(SortRunsTest, MetricDescendingStillPutsNaNThenMissingLast) {
  std::vector<core::Run> runs = {
      MakeRun("missing"),
      WithMetric(MakeRun("nan"), "m", kNaN),
      WithMetric(MakeRun("high"), "m", 5),
      WithMetric(MakeRun("low"), "m", -2),
  };
  EXPECT_EQ(SortedIds(runs, {"metrics.m DESC"}),
            (std::vector<std::string>{"high", "low", "nan", "missing"}));
}

TEST(SortRunsTest, ParamsAndTagsCompareAsStrings) {
  std::vector<core::Run> runs = {WithParam(MakeRun("nine"), "n", "9"),
                                 WithParam(MakeRun("ten"), "n", "10"), MakeRun("none")};
  EXPECT_EQ(SortedIds(runs, {"params.n"}), (std::vector<std::string>{"ten", "nine", "none"}));
  EXPECT_EQ(SortedIds(runs, {"params.n DESC"}), (std::vector<std::string>{"nine", "ten", "none"}));

  std::vector<core::Run> tagged = {WithTag(MakeRun("b"), "t", "beta"), MakeRun("none"),
                                   WithTag(MakeRun("a"), "t", "alpha")};
  EXPECT_EQ(SortedIds(tagged, {"tags.t DESC"}), (std::vector<std::string>{"b", "a", "none"}));
}

TEST(SortRunsTest, TiesBreakOnStartTimeDescendingThenRunId) {
  std::vector<core::Run> runs = {
      WithMetric(MakeRun("b", 10), "m", 1), WithMetric(MakeRun("a", 10), "m", 1),
      WithMetric(MakeRun("c", 20), "m", 1), WithMetric(MakeRun("z", 5), "m", 0)};
  EXPECT_EQ(SortedIds(runs, {"metrics.m"}), (std::vector<std::string>{"z", "c", "a", "b"}));
  // Missing values tie with each other too, and break ties the same way.
  std::vector<core::Run> missing = {MakeRun("y", 1), MakeRun("x", 1), MakeRun("w", 2)};
  EXPECT_EQ(SortedIds(missing, {"metrics.m DESC"}), (std::vector<std::string>{"w", "x", "y"}));
}

TEST(SortRunsTest, StartTimeKeyReplacesTheStartTimeTieBreak) {
  std::vector<core::Run> runs = {MakeRun("b", 1), MakeRun("c", 2), MakeRun("a", 1)};
  EXPECT_EQ(SortedIds(runs, {"attributes.start_time ASC"}),
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(SortedIds(runs, {"created DESC"}), (std::vector<std::string>{"c", "a", "b"}));
}

TEST(SortRunsTest, EndTimeOfRunningRunsSortsLastInBothDirections) {
  core::Run done_early = MakeRun("early");
  done_early.info.end_time = 100;
  core::Run done_late = MakeRun("late");
  done_late.info.end_time = 200;
  std::vector<core::Run> runs = {MakeRun("running"), done_late, done_early};
  EXPECT_EQ(SortedIds(runs, {"end_time"}), (std::vector<std::string>{"early", "late", "running"}));
  EXPECT_EQ(SortedIds(runs, {"end_time DESC"}),
            (std::vector<std::string>{"late", "early", "running"}));
}

TEST(SortRunsTest, AppliesKeysInOrder) {
  std::vector<core::Run> runs = {
      WithMetric(WithParam(MakeRun("a"), "opt", "sgd"), "acc", 0.5),
      WithMetric(WithParam(MakeRun("b"), "opt", "adam"), "acc", 0.7),
      WithMetric(WithParam(MakeRun("c"), "opt", "sgd"), "acc", 0.9),
      WithMetric(WithParam(MakeRun("d"), "opt", "adam"), "acc", 0.6),
  };
  EXPECT_EQ(SortedIds(runs, {"params.opt", "metrics.acc DESC"}),
            (std::vector<std::string>{"b", "d", "c", "a"}));
}

TEST(SortRunsTest, OrdersByRunNameAndStatus) {
  core::Run b = WithTag(MakeRun("1"), "mlflow.runName", "bravo");
  core::Run a = MakeRun("2");
  a.info.run_name = "alpha";
  a.info.status = RunStatus::kFinished;
  core::Run nameless = MakeRun("3");
  nameless.info.status = RunStatus::kFailed;
  EXPECT_EQ(SortedIds({b, nameless, a}, {"attributes.run_name"}),
            (std::vector<std::string>{"2", "1", "3"}));
  EXPECT_EQ(SortedIds({b, nameless, a}, {"status DESC"}),
            (std::vector<std::string>{"1", "2", "3"}));  // RUNNING, FINISHED, FAILED
}

// --- Experiments ------------------------------------------------------------------------------

TEST(ExperimentFilterTest, ParsesAttributesWithOrWithoutPrefixAndTags) {
  Result<std::vector<Clause>> clauses = ParseExperimentFilter(
      "name = 'a' and attribute.name LIKE 'b%' and creation_time > 5 and "
      "attributes.last_update_time <= 6 and tags.team ILIKE 'x' and tag.`a b` != 'y'");
  ASSERT_TRUE(clauses.ok()) << clauses.status().ToString();
  ASSERT_EQ(clauses->size(), 6u);
  EXPECT_EQ((*clauses)[0].key, "name");
  EXPECT_EQ((*clauses)[1].op, Comparator::kLike);
  EXPECT_EQ((*clauses)[2].key, "creation_time");
  EXPECT_DOUBLE_EQ((*clauses)[2].number, 5);
  EXPECT_EQ((*clauses)[3].key, "last_update_time");
  EXPECT_EQ((*clauses)[4].type, EntityType::kTag);
  EXPECT_EQ((*clauses)[4].key, "team");
  EXPECT_EQ((*clauses)[5].key, "a b");
}

TEST(ExperimentFilterTest, RejectsWhatOnlyRunsAccept) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"metrics.acc > 1", "Invalid entity type 'metrics'"},
      {"params.lr = 'x'", "Invalid entity type 'params'"},
      {"run_id = 'x'", "Invalid attribute key 'run_id'"},
      {"experiment_id = '1'", "Invalid attribute key 'experiment_id'"},
      {"name IN ('a')", "Invalid comparator 'IN' for attribute 'name'"},
      {"name > 'a'", "Invalid comparator '>'"},
      {"creation_time LIKE '1%'", "Invalid comparator 'LIKE'"},
      {"creation_time > 'x'", "Expected numeric value type"},
      {"name = abc", "Expected a quoted string value"},
      {"name = 'a' or name = 'b'", "Invalid clause(s) in filter string: 'or'"},
  };
  for (const auto& [filter, expected] : cases) {
    Result<std::vector<Clause>> clauses = ParseExperimentFilter(filter);
    ASSERT_FALSE(clauses.ok()) << filter;
    EXPECT_EQ(clauses.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(clauses.status().message().find(expected), std::string::npos)
        << "filter: " << filter << "\nmessage: " << clauses.status().message();
  }
}

TEST(ExperimentFilterTest, MatchesNamesTimesAndTags) {
  Experiment experiment = MakeExperiment("1", "Churn-Model", 1000);
  experiment.last_update_time = 2000;
  experiment.tags.push_back(Tag{"team", "growth"});
  EXPECT_TRUE(ExperimentMatchesFilter(experiment, "name = 'Churn-Model'"));
  EXPECT_FALSE(ExperimentMatchesFilter(experiment, "name = 'churn-model'"));
  EXPECT_TRUE(ExperimentMatchesFilter(experiment, "name ILIKE 'churn%'"));
  EXPECT_FALSE(ExperimentMatchesFilter(experiment, "name LIKE 'churn%'"));
  EXPECT_TRUE(ExperimentMatchesFilter(experiment, "creation_time >= 1000"));
  EXPECT_FALSE(ExperimentMatchesFilter(experiment, "creation_time > 1000"));
  EXPECT_TRUE(ExperimentMatchesFilter(experiment, "last_update_time = 2000"));
  EXPECT_TRUE(ExperimentMatchesFilter(experiment, "tags.team = 'growth'"));
  EXPECT_TRUE(ExperimentMatchesFilter(experiment, "tags.team != 'search'"));
  EXPECT_FALSE(ExperimentMatchesFilter(experiment, "tags.owner != 'x'"));  // missing tag
  EXPECT_TRUE(
      ExperimentMatchesFilter(experiment, "name LIKE 'Churn%' and tags.team LIKE 'g_owth'"));
}

TEST(ExperimentOrderTest, DefaultIsCreationTimeDescendingThenIdAscending) {
  std::vector<Experiment> experiments = {MakeExperiment("2", "b", 10), MakeExperiment("1", "a", 10),
                                         MakeExperiment("3", "c", 30)};
  EXPECT_EQ(SortedExperimentIds(experiments, {}), (std::vector<std::string>{"3", "1", "2"}));
}

TEST(ExperimentOrderTest, ExplicitKeysTieBreakOnIdAscending) {
  std::vector<Experiment> experiments = {MakeExperiment("5", "same", 1),
                                         MakeExperiment("4", "same", 2),
                                         MakeExperiment("6", "other", 3)};
  EXPECT_EQ(SortedExperimentIds(experiments, {"name DESC"}),
            (std::vector<std::string>{"4", "5", "6"}));
  EXPECT_EQ(SortedExperimentIds(experiments, {"attribute.name"}),
            (std::vector<std::string>{"6", "4", "5"}));
  EXPECT_EQ(SortedExperimentIds(experiments, {"creation_time"}),
            (std::vector<std::string>{"5", "4", "6"}));
  EXPECT_EQ(SortedExperimentIds(experiments, {"last_update_time DESC"}),
            (std::vector<std::string>{"6", "4", "5"}));
}

TEST(ExperimentOrderTest, OrdersIntegerIdsNumericallyAndOthersAsStrings) {
  std::vector<Experiment> numeric = {MakeExperiment("10", "a", 0), MakeExperiment("9", "b", 0),
                                     MakeExperiment("0", "c", 0)};
  EXPECT_EQ(SortedExperimentIds(numeric, {"experiment_id"}),
            (std::vector<std::string>{"0", "9", "10"}));
  EXPECT_EQ(SortedExperimentIds(numeric, {"experiment_id DESC"}),
            (std::vector<std::string>{"10", "9", "0"}));
  std::vector<Experiment> mixed = {MakeExperiment("b7", "a", 0), MakeExperiment("a9", "b", 0),
                                   MakeExperiment("10", "c", 0)};
  EXPECT_EQ(SortedExperimentIds(mixed, {"experiment_id"}),
            (std::vector<std::string>{"10", "a9", "b7"}));
}

TEST(ExperimentOrderTest, RejectsUnknownAndNonAttributeKeys) {
  for (const std::string& entry : {std::string("tags.team"), std::string("metrics.acc"),
                                   std::string("start_time"), std::string("name sideways")}) {
    Result<std::vector<OrderKey>> keys = ParseExperimentOrderBy({entry});
    ASSERT_FALSE(keys.ok()) << entry;
    EXPECT_EQ(keys.status().code(), StatusCode::kInvalidArgument) << entry;
  }
  EXPECT_NE(ParseExperimentOrderBy({"tags.team"}).status().message().find("attributes only"),
            std::string::npos);
}

}  // namespace
}  // namespace cairn::core

namespace cairn::core {
namespace {

TEST(RunOrderTest, LimitKeepsThePrefixOfTheFullOrder) {
  std::vector<core::Run> runs;
  for (int i = 0; i < 200; ++i) {
    core::Run run = MakeRun("run" + std::to_string(1000 + (i * 37) % 200), i % 7);
    if (i % 11 == 0) {
      run = WithMetric(std::move(run), "loss", std::nan(""));
    } else if (i % 13 != 0) {
      run = WithMetric(std::move(run), "loss", (i * 17) % 23);  // many ties
    }
    runs.push_back(std::move(run));
  }
  for (bool ascending : {true, false}) {
    std::vector<OrderKey> order = {{EntityType::kMetric, "loss", ascending}};
    std::vector<core::Run> full = runs, top = runs;
    SortRuns(&full, order);
    SortRuns(&top, order, 25);
    ASSERT_EQ(top.size(), 25u);
    for (size_t i = 0; i < top.size(); ++i) {
      EXPECT_EQ(top[i].info.run_id, full[i].info.run_id) << "position " << i;
    }
    std::vector<core::Run> all = runs;
    SortRuns(&all, order, 1000);  // a limit past the end keeps everything
    EXPECT_EQ(all.size(), runs.size());
  }
}

}  // namespace
}  // namespace cairn::core

namespace cairn::core {
namespace {

TEST(RegistryFilterTest, ModelsFilterOnNameAndTagsOnly) {
  auto clauses = ParseRegisteredModelFilter("name ILIKE 'fraud%' AND tags.team = 'ml'");
  ASSERT_TRUE(clauses.ok()) << clauses.status().ToString();
  ASSERT_EQ(clauses->size(), 2u);
  EXPECT_EQ((*clauses)[0].op, Comparator::kILike);
  EXPECT_EQ((*clauses)[1].type, EntityType::kTag);
  EXPECT_EQ((*clauses)[1].key, "team");
  Status bad = ParseRegisteredModelFilter("run_id = 'x'").status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("Invalid attribute key 'run_id'"), std::string::npos);
  EXPECT_FALSE(ParseRegisteredModelFilter("name IN ('a')").ok());
  EXPECT_FALSE(ParseRegisteredModelFilter("metrics.x > 1").ok());
}

TEST(RegistryFilterTest, VersionsTakeNumbersForVersionAndListsForRunIdOnly) {
  auto clauses = ParseModelVersionFilter("version_number >= 3 AND run_id IN ('a', 'b')");
  ASSERT_TRUE(clauses.ok()) << clauses.status().ToString();
  EXPECT_EQ((*clauses)[0].number, 3);
  EXPECT_EQ((*clauses)[1].list, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(ParseModelVersionFilter("version_number = '3'").ok());
  Status list = ParseModelVersionFilter("name IN ('a')").status();
  EXPECT_EQ(list.message(),
            "Only the 'run_id' attribute supports comparison with a list of quoted string values.");
  EXPECT_TRUE(ParseModelVersionFilter("source_path LIKE 'runs:/%'").ok());
}

TEST(RegistryOrderTest, TimestampIsLastUpdatedAndTieBreaksFollowMlflow) {
  auto keys = ParseRegisteredModelOrderBy({"timestamp DESC"});
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ((*keys)[0].key, "last_updated_timestamp");
  EXPECT_FALSE(ParseRegisteredModelOrderBy({"name", "name DESC"}).ok());
  EXPECT_FALSE(ParseRegisteredModelOrderBy({"tags.x"}).ok());
  std::vector<OrderKey> order = ModelVersionOrder({});
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0].key, "last_updated_timestamp");
  EXPECT_FALSE(order[0].ascending);
  EXPECT_EQ(order[1].key, "name");
  EXPECT_EQ(order[2].key, "version_number");
  EXPECT_FALSE(order[2].ascending);
  auto by_version = ParseModelVersionOrderBy({"version_number ASC"});
  ASSERT_TRUE(by_version.ok());
  EXPECT_EQ(ModelVersionOrder(*by_version).size(), 2u);  // name added, version kept ascending
}

TEST(AliasRollbackTest, RollbacksWalkBackRatherThanSwing) {
  auto move = [](AliasMoveKind kind, std::optional<int64_t> v) {
    AliasMove m;
    m.kind = kind;
    m.version = v;
    return m;
  };
  const auto all = [](int64_t) { return true; };
  using Target = std::optional<std::optional<int64_t>>;
  std::vector<AliasMove> moves = {move(AliasMoveKind::kSet, 1)};
  EXPECT_FALSE(AliasRollbackTarget(moves, all).has_value());
  moves.push_back(move(AliasMoveKind::kSet, 2));
  moves.push_back(move(AliasMoveKind::kSet, 3));
  EXPECT_EQ(AliasRollbackTarget(moves, all), Target(2));
  moves.push_back(move(AliasMoveKind::kRollback, 2));
  EXPECT_EQ(AliasRollbackTarget(moves, all), Target(1));
  moves.push_back(move(AliasMoveKind::kRollback, 1));
  EXPECT_FALSE(AliasRollbackTarget(moves, all).has_value());
  // A delete stacks "no version"; rolling it back restores what was there.
  moves.push_back(move(AliasMoveKind::kDelete, std::nullopt));
  EXPECT_EQ(AliasRollbackTarget(moves, all), Target(1));
}

TEST(AliasRollbackTest, SettingTheSameVersionAgainIsOneStep) {
  auto set = [](int64_t v) {
    AliasMove m;
    m.version = v;
    return m;
  };
  const auto all = [](int64_t) { return true; };
  // A pipeline that sets champion on every run: 1, 2, 2, 2. One rollback reaches 1.
  EXPECT_EQ(AliasRollbackTarget({set(1), set(2), set(2), set(2)}, all),
            (std::optional<std::optional<int64_t>>(1)));
}

TEST(AliasRollbackTest, DeletedVersionsArePassedOver) {
  auto set = [](int64_t v) {
    AliasMove m;
    m.version = v;
    return m;
  };
  const auto not_two = [](int64_t v) { return v != 2; };
  EXPECT_EQ(AliasRollbackTarget({set(1), set(2), set(3)}, not_two),
            (std::optional<std::optional<int64_t>>(1)));
  EXPECT_FALSE(AliasRollbackTarget({set(2), set(3)}, not_two).has_value());
}

TEST(ModelStageTest, ParsesAnyCaseAndNamesCanonically) {
  ModelStage stage = ModelStage::kNone;
  ASSERT_TRUE(ParseModelStage("production", &stage));
  EXPECT_EQ(stage, ModelStage::kProduction);
  EXPECT_EQ(ModelStageName(stage), "Production");
  EXPECT_TRUE(ParseModelStage("NONE", &stage));
  EXPECT_FALSE(ParseModelStage("Deleted_Internal", &stage));
}

}  // namespace
}  // namespace cairn::core
