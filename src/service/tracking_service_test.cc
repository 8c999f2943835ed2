#include "service/tracking_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "fakes/fake_clock.h"
#include "store/memory/memory_store.h"
#include "util/hash.h"
#include "util/json_reader.h"

namespace cairn::service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

constexpr int64_t kNow = 1'700'000'000'000;

class TrackingServiceTest : public ::testing::Test {
 protected:
  std::string NewExperiment(const std::string& name) {
    Result<std::string> id = svc_.CreateExperiment(name, "", {});
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : "";
  }

  core::Run NewRun(const std::string& experiment_id, std::optional<int64_t> start_time = {}) {
    CreateRunRequest request;
    request.experiment_id = experiment_id;
    request.start_time = start_time;
    Result<core::Run> run = svc_.CreateRun(request);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    return run.ok() ? *run : core::Run{};
  }

  core::Run Reread(const core::Run& run) { return *svc_.GetRun(run.info.run_id); }

  std::vector<core::Metric> History(const std::string& run_id, const std::string& key) {
    store::MetricHistoryQuery query;
    query.run_id = run_id;
    query.key = key;
    return *store_->GetMetricHistory(query);
  }

  // The message of a status that must be kInvalidArgument.
  static std::string Refusal(const Status& s) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    return s.message();
  }

  std::unique_ptr<store::MetadataStore> store_ = store::NewMemoryMetadataStore({});
  fakes::FakeClock clock_{kNow};
  TrackingService svc_{store_.get(), &clock_};
};

// --- Experiments -----------------------------------------------------------------------------

TEST_F(TrackingServiceTest, CreateExperimentFillsIdTimesAndArtifactLocation) {
  EXPECT_EQ(NewExperiment("first"), "1");
  clock_.Advance(5);
  EXPECT_EQ(NewExperiment("second"), "2");
  Result<core::Experiment> e = svc_.GetExperimentByName("second");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->experiment_id, "2");
  EXPECT_EQ(e->creation_time, kNow + 5);
  EXPECT_EQ(e->last_update_time, kNow + 5);
  EXPECT_EQ(e->artifact_location, "mlflow-artifacts:/2");
  EXPECT_EQ(Refusal(svc_.CreateExperiment("", "", {}).status()),
            "Invalid experiment name: ''. Name must not be empty.");
  EXPECT_EQ(Refusal(svc_.CreateExperiment("tagged", "", {{"a//b", "v"}}).status()),
            "Invalid tag name: 'a//b'. Names must not resolve to other names when treated as "
            "file paths.");
  EXPECT_EQ(svc_.GetExperimentByName("tagged").status().code(), StatusCode::kNotFound);
}

TEST_F(TrackingServiceTest, ExperimentNamesStayTakenWhileDeleted) {
  const std::string id = NewExperiment("taken");
  Status dup = svc_.CreateExperiment("taken", "", {}).status();
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(dup.message(), "Experiment(name=taken) already exists.");
  ASSERT_TRUE(svc_.DeleteExperiment(id).ok());
  EXPECT_EQ(svc_.CreateExperiment("taken", "", {}).status().code(), StatusCode::kAlreadyExists);
  NewExperiment("other");
  ASSERT_TRUE(svc_.RestoreExperiment(id).ok());
  EXPECT_EQ(svc_.RenameExperiment(id, "other").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Refusal(svc_.RenameExperiment(id, "")),
            "Invalid experiment name: ''. Name must not be empty.");
  clock_.Advance(7);
  ASSERT_TRUE(svc_.RenameExperiment(id, "renamed").ok());
  EXPECT_EQ(svc_.GetExperiment(id)->name, "renamed");
  EXPECT_EQ(svc_.GetExperiment(id)->last_update_time, kNow + 7);
}

TEST_F(TrackingServiceTest, DeletedExperimentTakesItsRunsAndRefusesChangesUntilRestored) {
  const std::string id = NewExperiment("exp");
  const core::Run run = NewRun(id);
  clock_.Advance(3);
  ASSERT_TRUE(svc_.DeleteExperiment(id).ok());
  EXPECT_EQ(svc_.GetExperiment(id)->lifecycle_stage, core::LifecycleStage::kDeleted);
  EXPECT_EQ(svc_.GetExperiment(id)->last_update_time, kNow + 3);
  EXPECT_EQ(Reread(run).info.lifecycle_stage, core::LifecycleStage::kDeleted);

  CreateRunRequest request;
  request.experiment_id = id;
  EXPECT_EQ(Refusal(svc_.CreateRun(request).status()),
            "The experiment " + id + " must be in the 'active' state. Current state is deleted.");
  EXPECT_EQ(Refusal(svc_.SetExperimentTag(id, {"k", "v"})),
            "The experiment " + id + " must be in the 'active' state. Current state is deleted.");
  EXPECT_EQ(Refusal(svc_.RenameExperiment(id, "new")), "Cannot rename a non-active experiment.");
  EXPECT_EQ(
      Refusal(svc_.LogParam(run.info.run_id, {"p", "1"})),
      "The run " + run.info.run_id + " must be in the 'active' state. Current state is deleted.");

  ASSERT_TRUE(svc_.RestoreExperiment(id).ok());
  EXPECT_EQ(Reread(run).info.lifecycle_stage, core::LifecycleStage::kActive);
  EXPECT_TRUE(svc_.LogParam(run.info.run_id, {"p", "1"}).ok());
  EXPECT_TRUE(svc_.SetExperimentTag(id, {"k", "v"}).ok());
  EXPECT_EQ(svc_.DeleteExperiment("404").code(), StatusCode::kNotFound);
}

TEST_F(TrackingServiceTest, DefaultExperimentCannotBeDeleted) {
  EXPECT_EQ(Refusal(svc_.DeleteExperiment("0")),
            "Cannot delete the default experiment '0'. This is an internally reserved "
            "experiment.");
  EXPECT_EQ(svc_.GetExperiment("0")->lifecycle_stage, core::LifecycleStage::kActive);
}

TEST_F(TrackingServiceTest, ExperimentTagsAreValidatedSetAndDeleted) {
  const std::string id = NewExperiment("exp");
  EXPECT_EQ(Refusal(svc_.SetExperimentTag(id, {"k", std::string(8001, 'v')})),
            "Tag value '" + std::string(40, 'v') +
                "...' for key 'k' had length 8001, which exceeded length limit of 8000");
  ASSERT_TRUE(svc_.SetExperimentTag(id, {"k", "one"}).ok());
  ASSERT_TRUE(svc_.SetExperimentTag(id, {"k", "two"}).ok());
  EXPECT_THAT(svc_.GetExperiment(id)->tags, ElementsAre(core::Tag{"k", "two"}));
  ASSERT_TRUE(svc_.DeleteExperimentTag(id, "k").ok());
  EXPECT_EQ(svc_.DeleteExperimentTag(id, "k").code(), StatusCode::kNotFound);
}

TEST_F(TrackingServiceTest, SearchExperimentsPagesWithTokensAndViews) {
  for (const char* name : {"a", "b", "c", "d", "e"}) NewExperiment(name);
  ASSERT_TRUE(svc_.DeleteExperiment("5").ok());
  ExperimentSearchRequest request;
  request.order_by = {"name ASC"};
  request.max_results = 3;
  Result<ExperimentPage> first = svc_.SearchExperiments(request);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  std::vector<std::string> names;
  for (const core::Experiment& e : first->experiments) names.push_back(e.name);
  EXPECT_THAT(names, ElementsAre("Default", "a", "b"));
  EXPECT_EQ(first->next_page_token, EncodePageToken(3));

  request.page_token = first->next_page_token;
  Result<ExperimentPage> second = svc_.SearchExperiments(request);
  ASSERT_TRUE(second.ok());
  names.clear();
  for (const core::Experiment& e : second->experiments) names.push_back(e.name);
  EXPECT_THAT(names, ElementsAre("c", "d"));  // "e" is deleted
  EXPECT_EQ(second->next_page_token, "");

  ExperimentSearchRequest deleted;
  deleted.view = core::ViewType::kDeletedOnly;
  Result<ExperimentPage> gone = svc_.SearchExperiments(deleted);
  ASSERT_TRUE(gone.ok());
  ASSERT_EQ(gone->experiments.size(), 1u);
  EXPECT_EQ(gone->experiments[0].name, "e");

  ExperimentSearchRequest filtered;
  filtered.filter = "name = 'c'";
  ASSERT_EQ(svc_.SearchExperiments(filtered)->experiments.size(), 1u);
  filtered.filter = "name ==";
  EXPECT_EQ(svc_.SearchExperiments(filtered).status().code(), StatusCode::kInvalidArgument);
}

// --- Paging ----------------------------------------------------------------------------------

TEST_F(TrackingServiceTest, MaxResultsMustBePositiveAndAtMostFiftyThousand) {
  const std::string message =
      " for parameter 'max_results' supplied. It must be a positive integer at most 50000";
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{50001}}) {
    ExperimentSearchRequest experiments;
    experiments.max_results = bad;
    EXPECT_EQ(Refusal(svc_.SearchExperiments(experiments).status()),
              "Invalid value " + std::to_string(bad) + message);
    RunSearchRequest runs;
    runs.experiment_ids = {"0"};
    runs.max_results = bad;
    EXPECT_EQ(Refusal(svc_.SearchRuns(runs).status()),
              "Invalid value " + std::to_string(bad) + message);
  }
  RunSearchRequest most;
  most.experiment_ids = {"0"};
  most.max_results = 50000;
  EXPECT_TRUE(svc_.SearchRuns(most).ok());
}

TEST(PageTokenTest, RoundTripsAndRefusesWhatThisServerNeverWrote) {
  EXPECT_EQ(*DecodePageToken(""), 0);
  for (int64_t offset : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{1} << 53}) {
    Result<int64_t> back = DecodePageToken(EncodePageToken(offset));
    ASSERT_TRUE(back.ok()) << offset;
    EXPECT_EQ(*back, offset);
  }
  // MLflow's own stores write the same token.
  EXPECT_EQ(*DecodePageToken(Base64Encode("{\"offset\": 42}")), 42);
  const std::string bad[] = {"not base64!",
                             Base64Encode("{}"),
                             Base64Encode("{\"offset\": -1}"),
                             Base64Encode("{\"offset\": \"7\"}"),
                             Base64Encode("{\"offset\"}"),
                             Base64Encode("{\"offset\": 9007199254740993}")};
  for (const std::string& token : bad) {
    Result<int64_t> r = DecodePageToken(token);
    ASSERT_FALSE(r.ok()) << token;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "Invalid page token: '" + token + "'");
  }
}

TEST_F(TrackingServiceTest, SearchRunsPagesAndCountsEachExperimentOnce) {
  const std::string id = NewExperiment("exp");
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(NewRun(id, kNow + i).info.run_id);
  RunSearchRequest request;
  request.experiment_ids = {id, "0" + id, id, "not-an-id"};
  request.order_by = {"attributes.start_time ASC"};
  request.max_results = 2;
  std::vector<std::string> seen;
  std::vector<std::string> tokens;
  for (;;) {
    Result<RunPage> page = svc_.SearchRuns(request);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const core::Run& r : page->runs) seen.push_back(r.info.run_id);
    if (page->next_page_token.empty()) break;
    tokens.push_back(page->next_page_token);
    request.page_token = page->next_page_token;
  }
  EXPECT_EQ(seen, ids);
  EXPECT_THAT(tokens, ElementsAre(EncodePageToken(2), EncodePageToken(4)));

  request.page_token = "garbage";
  EXPECT_EQ(Refusal(svc_.SearchRuns(request).status()), "Invalid page token: 'garbage'");
  request.page_token = "";
  request.filter = "metrics.loss <";
  EXPECT_EQ(svc_.SearchRuns(request).status().code(), StatusCode::kInvalidArgument);
}

// --- Runs ------------------------------------------------------------------------------------

TEST_F(TrackingServiceTest, CreateRunFillsWhatTheRequestLeavesOut) {
  const std::string id = NewExperiment("exp");
  CreateRunRequest request;
  request.experiment_id = id;
  request.user_id = "ada";
  request.tags = {{"team", "vision"}};
  Result<core::Run> run = svc_.CreateRun(request);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_THAT(run->info.run_id, MatchesRegex("[0-9a-f]{32}"));
  EXPECT_EQ(run->info.experiment_id, id);
  EXPECT_EQ(run->info.user_id, "ada");
  EXPECT_EQ(run->info.status, core::RunStatus::kRunning);
  EXPECT_EQ(run->info.start_time, kNow);
  EXPECT_FALSE(run->info.end_time.has_value());
  EXPECT_EQ(run->info.artifact_uri,
            "mlflow-artifacts:/" + id + "/" + run->info.run_id + "/artifacts");
  EXPECT_THAT(run->info.run_name, MatchesRegex("[a-z]+-[a-z]+-[0-9]{1,3}"));
  ASSERT_NE(run->FindTag(core::kRunNameTag), nullptr);
  EXPECT_EQ(run->FindTag(core::kRunNameTag)->value, run->info.run_name);
  ASSERT_NE(run->FindTag("team"), nullptr);
  EXPECT_EQ(run->FindTag("team")->value, "vision");
  EXPECT_NE(NewRun(id).info.run_id, run->info.run_id);

  request.experiment_id = "404";
  EXPECT_EQ(svc_.CreateRun(request).status().code(), StatusCode::kNotFound);
  request.experiment_id = id;
  request.tags = {{"bad key*", "v"}};
  EXPECT_THAT(Refusal(svc_.CreateRun(request).status()),
              HasSubstr("Invalid tag name: 'bad key*'. Names may only contain alphanumerics"));
}

TEST_F(TrackingServiceTest, RandomRunNamesUseTheWholeVocabulary) {
  const std::string id = NewExperiment("exp");
  std::set<std::string> adjectives, nouns;
  // 16 words each: 400 names miss one with a chance of about 1e-10.
  for (int i = 0; i < 400; ++i) {
    const std::string name = NewRun(id).info.run_name;
    const size_t first = name.find('-'), second = name.find('-', first + 1);
    adjectives.insert(name.substr(0, first));
    nouns.insert(name.substr(first + 1, second - first - 1));
  }
  EXPECT_EQ(adjectives.size(), 16u);
  EXPECT_EQ(nouns.size(), 16u);
}

TEST_F(TrackingServiceTest, CreateRunWithClientIdIsIdempotent) {
  const std::string id = NewExperiment("exp");
  CreateRunRequest request;
  request.run_id = std::string(32, 'a');
  request.experiment_id = id;
  request.start_time = 1234;
  request.run_name = "journal";
  Result<core::Run> first = svc_.CreateRun(request);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->info.run_id, request.run_id);
  EXPECT_EQ(first->info.start_time, 1234);
  ASSERT_TRUE(svc_.LogParam(request.run_id, {"lr", "0.1"}).ok());

  // A repeated upload gets the run as it is, whatever else it asks.
  request.start_time = 99;
  request.run_name = "other";
  request.tags = {{"new", "tag"}};
  Result<core::Run> again = svc_.CreateRun(request);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->info.start_time, 1234);
  EXPECT_EQ(again->info.run_name, "journal");
  EXPECT_EQ(again->FindTag("new"), nullptr);
  ASSERT_NE(again->FindParam("lr"), nullptr);

  for (const std::string& bad : {std::string(32, 'A'), std::string(31, 'a'), std::string("xyz")}) {
    request.run_id = bad;
    EXPECT_EQ(Refusal(svc_.CreateRun(request).status()),
              "Invalid value '" + bad + "' for 'run_id': expected 32 lowercase hexadecimal digits");
  }
}

TEST_F(TrackingServiceTest, RunNameComesFromTheArgumentOrTheTag) {
  const std::string id = NewExperiment("exp");
  CreateRunRequest request;
  request.experiment_id = id;
  request.run_name = "by-argument";
  Result<core::Run> by_argument = svc_.CreateRun(request);
  ASSERT_TRUE(by_argument.ok());
  EXPECT_EQ(by_argument->info.run_name, "by-argument");
  EXPECT_EQ(by_argument->FindTag(core::kRunNameTag)->value, "by-argument");

  request.run_name = "";
  request.tags = {{std::string(core::kRunNameTag), "by-tag"}};
  Result<core::Run> by_tag = svc_.CreateRun(request);
  ASSERT_TRUE(by_tag.ok());
  EXPECT_EQ(by_tag->info.run_name, "by-tag");

  request.run_name = "by-tag";
  EXPECT_TRUE(svc_.CreateRun(request).ok());
  request.run_name = "different";
  EXPECT_EQ(Refusal(svc_.CreateRun(request).status()),
            "Both 'run_name' argument and 'mlflow.runName' tag are specified, but with different "
            "values (run_name='different', mlflow.runName='by-tag').");
}

TEST_F(TrackingServiceTest, UpdateRunSetsStatusEndTimeAndName) {
  const core::Run run = NewRun(NewExperiment("exp"));
  const std::string& id = run.info.run_id;
  Result<core::RunInfo> info = svc_.UpdateRun(id, core::RunStatus::kFinished, kNow + 60, "");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->status, core::RunStatus::kFinished);
  EXPECT_EQ(info->end_time, kNow + 60);
  EXPECT_EQ(info->run_name, run.info.run_name);  // an empty name leaves the name alone

  info = svc_.UpdateRun(id, std::nullopt, std::nullopt, "renamed");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->status, core::RunStatus::kFinished);
  EXPECT_EQ(info->run_name, "renamed");
  EXPECT_EQ(Reread(run).FindTag(core::kRunNameTag)->value, "renamed");
  EXPECT_EQ(svc_.UpdateRun(std::string(32, 'f'), core::RunStatus::kFailed, {}, {}).status().code(),
            StatusCode::kNotFound);
}

TEST_F(TrackingServiceTest, DeletedRunRefusesWritesAndLeavesSearchUntilRestored) {
  const std::string exp = NewExperiment("exp");
  const core::Run run = NewRun(exp);
  const std::string& id = run.info.run_id;
  ASSERT_TRUE(svc_.SetTag(id, {"k", "v"}).ok());
  ASSERT_TRUE(svc_.DeleteRun(id).ok());
  const std::string not_active =
      "The run " + id + " must be in the 'active' state. Current state is deleted.";
  EXPECT_EQ(Refusal(svc_.LogMetric(id, {"loss", 1, kNow, 0})), not_active);
  EXPECT_EQ(Refusal(svc_.UpdateRun(id, core::RunStatus::kFinished, {}, {}).status()), not_active);
  EXPECT_EQ(Refusal(svc_.DeleteTag(id, "k")), not_active);
  EXPECT_EQ(Refusal(svc_.LogInputs(id, {})), not_active);

  RunSearchRequest search;
  search.experiment_ids = {exp};
  EXPECT_TRUE(svc_.SearchRuns(search)->runs.empty());
  search.view = core::ViewType::kDeletedOnly;
  EXPECT_EQ(svc_.SearchRuns(search)->runs.size(), 1u);

  ASSERT_TRUE(svc_.RestoreRun(id).ok());
  EXPECT_TRUE(svc_.DeleteTag(id, "k").ok());
  EXPECT_EQ(svc_.DeleteTag(id, "k").code(), StatusCode::kNotFound);
  EXPECT_EQ(svc_.DeleteRun(std::string(32, 'f')).code(), StatusCode::kNotFound);
}

// --- Logging ---------------------------------------------------------------------------------

TEST_F(TrackingServiceTest, LogBatchKeepsMlflowCountLimits) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  auto metrics = [](size_t n) { return std::vector<core::Metric>(n, {"m", 1, kNow, 0}); };
  auto params = [](size_t n) {
    std::vector<core::Param> out;
    for (size_t i = 0; i < n; ++i) out.push_back({"p" + std::to_string(i), "v"});
    return out;
  };
  auto tags = [](size_t n) {
    std::vector<core::Tag> out;
    for (size_t i = 0; i < n; ++i) out.push_back({"t" + std::to_string(i), "v"});
    return out;
  };
  EXPECT_EQ(Refusal(svc_.LogBatch(id, metrics(1001), {}, {})),
            "A batch logging request can contain at most 1000 metrics. Got 1001 metrics. Please "
            "split up metrics across multiple requests and try again.");
  EXPECT_EQ(Refusal(svc_.LogBatch(id, {}, params(101), {})),
            "A batch logging request can contain at most 100 params. Got 101 params. Please "
            "split up params across multiple requests and try again.");
  EXPECT_EQ(Refusal(svc_.LogBatch(id, {}, {}, tags(101))),
            "A batch logging request can contain at most 100 tags. Got 101 tags. Please split "
            "up tags across multiple requests and try again.");
  EXPECT_EQ(Refusal(svc_.LogBatch(id, metrics(1000), params(1), {})),
            "A batch logging request can contain at most 1000 total metrics, params, and tags. "
            "Got 1001 total metrics, params, and tags. Please split up total metrics, params, "
            "and tags across multiple requests and try again.");
  core::Run before = *svc_.GetRun(id);
  EXPECT_TRUE(before.data.params.empty());
  EXPECT_TRUE(History(id, "m").empty());

  ASSERT_TRUE(svc_.LogBatch(id, metrics(800), params(100), tags(100)).ok());
  core::Run after = *svc_.GetRun(id);
  EXPECT_EQ(after.data.params.size(), 100u);
  EXPECT_EQ(History(id, "m").size(), 1u);  // 800 identical points are one point
}

TEST_F(TrackingServiceTest, LogBatchKeepsKeyAndValueLengthLimits) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  EXPECT_TRUE(svc_.LogParam(id, {std::string(250, 'k'), "v"}).ok());
  EXPECT_EQ(Refusal(svc_.LogParam(id, {std::string(251, 'k'), "v"})),
            "param name '" + std::string(40, 'k') +
                "...' had length 251, which exceeded length limit of 250");
  EXPECT_EQ(Refusal(svc_.LogMetric(id, {std::string(251, 'm'), 1, kNow, 0})),
            "metric name '" + std::string(40, 'm') +
                "...' had length 251, which exceeded length limit of 250");
  EXPECT_TRUE(svc_.LogParam(id, {"long", std::string(6000, 'v')}).ok());
  EXPECT_EQ(Refusal(svc_.LogParam(id, {"longer", std::string(6001, 'v')})),
            "Param value '" + std::string(40, 'v') +
                "...' for key 'longer' had length 6001, which exceeded length limit of 6000");
  EXPECT_TRUE(svc_.SetTag(id, {"long", std::string(8000, 'v')}).ok());
  EXPECT_EQ(Refusal(svc_.SetTag(id, {"longer", std::string(8001, 'v')})),
            "Tag value '" + std::string(40, 'v') +
                "...' for key 'longer' had length 8001, which exceeded length limit of 8000");
}

TEST_F(TrackingServiceTest, KeysAreNamesThatCannotBecomeOtherPaths) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  for (const char* good : {"train/loss", "a b.c-d_e:f", "caf\xc3\xa9", "..x", "x/.y"}) {
    EXPECT_TRUE(svc_.LogMetric(id, {good, 1, kNow, 0}).ok()) << good;
  }
  EXPECT_EQ(Refusal(svc_.LogParam(id, {"", "v"})),
            "Missing value for required parameter 'key'. See the API docs for more "
            "information about request parameters.");
  EXPECT_EQ(Refusal(svc_.LogMetric(id, {"a*b", 1, kNow, 0})),
            "Invalid metric name: 'a*b'. Names may only contain alphanumerics, underscores (_), "
            "dashes (-), periods (.), spaces ( ), colons (:) and slashes (/).");
  for (const char* escape : {"/abs", "a/", "a//b", "./a", "a/../b", "..", "."}) {
    EXPECT_EQ(Refusal(svc_.SetTag(id, {escape, "v"})),
              "Invalid tag name: '" + std::string(escape) +
                  "'. Names must not resolve to other names when treated as file paths.");
  }
  EXPECT_THAT(Refusal(svc_.LogParam(id, {"a\\b", "v"})), HasSubstr("Names may only contain"));
}

TEST_F(TrackingServiceTest, ParamsAreWrittenOnce) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  ASSERT_TRUE(svc_.LogParam(id, {"lr", "0.1"}).ok());
  EXPECT_TRUE(svc_.LogParam(id, {"lr", "0.1"}).ok());
  EXPECT_EQ(Refusal(svc_.LogBatch(id, {{"loss", 1, kNow, 0}}, {{"lr", "0.2"}}, {{"t", "v"}})),
            "Changing param values is not allowed. Param with key='lr' was already logged with "
            "value='0.1' for run ID='" +
                id + "'. Attempted logging new value '0.2'.");
  EXPECT_EQ(Refusal(svc_.LogBatch(id, {}, {{"bs", "1"}, {"bs", "1"}}, {})),
            "Duplicate parameter keys have been submitted: ['bs']. Please ensure the request "
            "contains only one param value per param key.");
  // A refused batch writes nothing of itself.
  core::Run run = *svc_.GetRun(id);
  EXPECT_THAT(run.data.params, ElementsAre(core::Param{"lr", "0.1"}));
  EXPECT_EQ(run.FindTag("t"), nullptr);
  EXPECT_TRUE(History(id, "loss").empty());
}

TEST_F(TrackingServiceTest, LatestMetricIsTheLargestStepThenTimeThenValue) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  ASSERT_TRUE(svc_.LogMetric(id, {"loss", 1.0, kNow + 100, 5}).ok());
  ASSERT_TRUE(svc_.LogMetric(id, {"loss", 9.0, kNow + 200, 3}).ok());  // later, lower step
  EXPECT_EQ(svc_.GetRun(id)->FindMetric("loss")->value, 1.0);
  ASSERT_TRUE(svc_.LogMetric(id, {"loss", 0.5, kNow + 50, 5}).ok());  // same step, earlier
  EXPECT_EQ(svc_.GetRun(id)->FindMetric("loss")->value, 1.0);
  ASSERT_TRUE(svc_.LogMetric(id, {"loss", 2.0, kNow + 100, 5}).ok());  // a tie: larger value
  EXPECT_EQ(svc_.GetRun(id)->FindMetric("loss")->value, 2.0);
  // NaN counts above every number, as in MLflow.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE(svc_.LogMetric(id, {"loss", nan, kNow + 100, 5}).ok());
  EXPECT_TRUE(std::isnan(svc_.GetRun(id)->FindMetric("loss")->value));
  // The same point logged again is one point.
  ASSERT_TRUE(svc_.LogMetric(id, {"loss", nan, kNow + 100, 5}).ok());
  EXPECT_EQ(History(id, "loss").size(), 5u);
}

TEST_F(TrackingServiceTest, NonFiniteAndNegativeStepMetricsAreKept) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  const double inf = std::numeric_limits<double>::infinity();
  ASSERT_TRUE(svc_.LogBatch(id,
                            {{"x", inf, kNow, 0},
                             {"x", -inf, kNow, 1},
                             {"x", std::nan(""), kNow, 2},
                             {"x", 1.5, -1, -7}},
                            {}, {})
                  .ok());
  std::vector<core::Metric> h = History(id, "x");
  ASSERT_EQ(h.size(), 4u);
  EXPECT_EQ(h[0].step, -7);
  EXPECT_EQ(h[0].timestamp, -1);
  EXPECT_EQ(h[1].value, inf);
  EXPECT_EQ(h[2].value, -inf);
  EXPECT_TRUE(std::isnan(h[3].value));
}

TEST_F(TrackingServiceTest, LogBatchAsyncRefusesAnInvalidBatchAtOnce) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  std::optional<Status> outcome;
  svc_.LogBatchAsync(id, {}, {{"", "v"}}, {}, [&](Status s) { outcome = std::move(s); });
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(Refusal(*outcome),
            "Missing value for required parameter 'key'. See the API docs for more "
            "information about request parameters.");
  outcome.reset();
  svc_.LogBatchAsync(id, {{"m", 1, kNow, 0}}, {}, {}, [&](Status s) { outcome = std::move(s); });
  ASSERT_TRUE(outcome.has_value());  // the memory store commits at once
  EXPECT_TRUE(outcome->ok());
  EXPECT_EQ(History(id, "m").size(), 1u);
}

TEST_F(TrackingServiceTest, LogModelAppendsToTheHistoryTag) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  const std::string model = R"({"artifact_path": "model", "flavors": {"python_function": {}},
      "run_id": ")" + id + R"(", "utc_time_created": "2026-12-04 10:00:00.000000"})";
  ASSERT_TRUE(svc_.LogModel(id, model).ok());
  ASSERT_TRUE(svc_.LogModel(id, model).ok());
  auto run = svc_.GetRun(id);
  ASSERT_TRUE(run.ok());
  const core::Tag* history = run->FindTag(core::kLoggedModelsTag);
  ASSERT_NE(history, nullptr);
  auto parsed = JsonDocument::Parse(history->value, 64);
  ASSERT_TRUE(parsed.ok()) << history->value;
  ASSERT_EQ(parsed->root().size(), 2u);
  EXPECT_EQ((*parsed->root().begin()).Find("artifact_path").str(), "model");
  EXPECT_EQ(Refusal(svc_.LogModel(id, "{not json")),
            "Malformed model info. \n {not json \n is not a valid JSON.");
  EXPECT_EQ(Refusal(svc_.LogModel(id, R"({"artifact_path": "m", "flavors": {}})")),
            "Model json is missing mandatory fields: {'run_id', 'utc_time_created'}");
  // A long history keeps its newest entries within a tag's limit.
  const std::string big = R"({"artifact_path": ")" + std::string(3000, 'a') +
                          R"(", "flavors": {}, "run_id": "r", "utc_time_created": "t"})";
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(svc_.LogModel(id, big).ok());
  run = svc_.GetRun(id);
  parsed = JsonDocument::Parse(run->FindTag(core::kLoggedModelsTag)->value, 64);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->root().size(), 2u);
}

TEST_F(TrackingServiceTest, LogInputsNeedsNamedAndDigestedDatasets) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  core::DatasetInput in;
  in.dataset.digest = "abc";
  EXPECT_EQ(Refusal(svc_.LogInputs(id, {in})), "Dataset name cannot be empty");
  in.dataset.name = "mnist";
  in.dataset.digest = "";
  EXPECT_EQ(Refusal(svc_.LogInputs(id, {in})), "Dataset digest cannot be empty");
  in.dataset.digest = std::string(37, 'a');
  EXPECT_EQ(Refusal(svc_.LogInputs(id, {in})), "Dataset digest exceeds the maximum length of 36");
  in.dataset.digest = "abc";
  in.tags = {{"mlflow.data.context", std::string(501, 'x')}};
  EXPECT_EQ(Refusal(svc_.LogInputs(id, {in})), "InputTag value exceeds the maximum length of 500");
  in.tags = {{"mlflow.data.context", "train"}};
  ASSERT_TRUE(svc_.LogInputs(id, {in}).ok());
  ASSERT_TRUE(svc_.LogInputs(id, {in}).ok());
  EXPECT_EQ(svc_.GetRun(id)->inputs.size(), 1u);
}

// --- Metric histories ------------------------------------------------------------------------

TEST_F(TrackingServiceTest, MetricHistoryPagesWithTokens) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  for (int step = 0; step < 5; ++step) {
    ASSERT_TRUE(svc_.LogMetric(id, {"loss", 10.0 - step, kNow, step}).ok());
  }
  std::vector<std::vector<int64_t>> pages;
  std::string token;
  do {
    Result<MetricHistoryCursor> cursor = svc_.OpenMetricHistory(id, "loss", 2, token);
    ASSERT_TRUE(cursor.ok()) << cursor.status().ToString();
    pages.emplace_back();
    ASSERT_TRUE(svc_.StreamMetricHistory(
                        *cursor,
                        [&](const core::Metric& m) {
                          pages.back().push_back(m.step);
                          return true;
                        },
                        &token)
                    .ok());
  } while (!token.empty());
  EXPECT_THAT(pages, ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3), ElementsAre(4)));

  // Everything at once, and a visitor that stops early.
  Result<MetricHistoryCursor> all = svc_.OpenMetricHistory(id, "loss", 0, "");
  ASSERT_TRUE(all.ok());
  int visited = 0;
  ASSERT_TRUE(svc_.StreamMetricHistory(
                      *all, [&](const core::Metric&) { return ++visited < 3; }, &token)
                  .ok());
  EXPECT_EQ(visited, 3);
  EXPECT_EQ(token, "");

  EXPECT_EQ(Refusal(svc_.OpenMetricHistory(id, "loss", -1, "").status()),
            "Invalid value -1 for parameter 'max_results'");
  EXPECT_EQ(Refusal(svc_.OpenMetricHistory(id, "loss", 2, "bad").status()),
            "Invalid page token: 'bad'");
  EXPECT_EQ(svc_.OpenMetricHistory(std::string(32, 'f'), "loss", 2, "").status().code(),
            StatusCode::kNotFound);
}

TEST_F(TrackingServiceTest, BulkIntervalPicksEvenlySpreadStepsKeepingTheEnds) {
  const std::string exp = NewExperiment("exp");
  const std::string a = NewRun(exp).info.run_id, b = NewRun(exp).info.run_id;
  for (int step = 0; step < 10; ++step) {
    ASSERT_TRUE(svc_.LogMetric(a, {"acc", step * 0.1, kNow, step}).ok());
    if (step % 2 == 0) {
      ASSERT_TRUE(svc_.LogMetric(b, {"acc", step * 0.2, kNow, step}).ok());
    }
  }
  Result<std::vector<RunMetric>> picked =
      svc_.GetMetricHistoryBulkInterval({b, a, a}, "acc", std::nullopt, std::nullopt, 4);
  ASSERT_TRUE(picked.ok()) << picked.status().ToString();
  std::map<std::string, std::vector<int64_t>> steps;
  for (const RunMetric& m : *picked) steps[m.run_id].push_back(m.metric.step);
  EXPECT_THAT(steps[a], ElementsAre(0, 3, 6, 9));  // spread over the steps of both runs
  EXPECT_THAT(steps[b], ElementsAre(0, 6));
  EXPECT_EQ(steps.size(), 2u);  // a run asked for twice is answered once

  picked = svc_.GetMetricHistoryBulkInterval({a}, "acc", 2, 5, 100);
  ASSERT_TRUE(picked.ok());
  std::vector<int64_t> in_range;
  for (const RunMetric& m : *picked) in_range.push_back(m.metric.step);
  EXPECT_THAT(in_range, ElementsAre(2, 3, 4, 5));

  EXPECT_EQ(Refusal(svc_.GetMetricHistoryBulkInterval({}, "acc", {}, {}, 4).status()),
            "Missing value for required parameter 'run_ids'. See the API docs for more "
            "information about request parameters.");
  EXPECT_EQ(
      Refusal(svc_.GetMetricHistoryBulkInterval(std::vector<std::string>(101, a), "acc", {}, {}, 4)
                  .status()),
      "GetMetricHistoryBulkInterval request must specify at most 100 run_ids. Received "
      "101 run_ids. See the API docs for more information about request parameters.");
  EXPECT_EQ(Refusal(svc_.GetMetricHistoryBulkInterval({a}, "", {}, {}, 4).status()),
            "Missing value for required parameter 'metric_key'. See the API docs for more "
            "information about request parameters.");
  for (int64_t bad : {0, 2501}) {
    EXPECT_EQ(Refusal(svc_.GetMetricHistoryBulkInterval({a}, "acc", {}, {}, bad).status()),
              "max_results must be between 1 and 2500. See the API docs for more information "
              "about request parameters.");
  }
  EXPECT_EQ(Refusal(svc_.GetMetricHistoryBulkInterval({a}, "acc", 1, {}, 4).status()),
            "If either start step or end step are specified, both must be specified.");
  EXPECT_EQ(Refusal(svc_.GetMetricHistoryBulkInterval({a}, "acc", 5, 2, 4).status()),
            "end_step must be greater than start_step. Found start_step=5 and end_step=2.");
}

TEST_F(TrackingServiceTest, HistoryBulkListsRunsByIdAndEachByTime) {
  const std::string a = NewRun(NewExperiment("bulk")).info.run_id;
  const std::string b = NewRun(NewExperiment("bulk2")).info.run_id;
  ASSERT_TRUE(svc_.LogBatch(a, {{"m", 1, 30, 0}, {"m", 2, 10, 1}, {"m", 3, 20, 2}}, {}, {}).ok());
  ASSERT_TRUE(svc_.LogBatch(b, {{"m", 4, 5, 0}}, {}, {}).ok());
  auto rows = svc_.GetMetricHistoryBulk({b, a}, "m", 25000);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::vector<std::pair<std::string, int64_t>> seen;
  for (const RunMetric& r : *rows) seen.emplace_back(r.run_id, r.metric.timestamp);
  const std::string first = std::min(a, b);
  std::vector<std::pair<std::string, int64_t>> want =
      first == a ? std::vector<std::pair<std::string, int64_t>>{{a, 10}, {a, 20}, {a, 30}, {b, 5}}
                 : std::vector<std::pair<std::string, int64_t>>{{b, 5}, {a, 10}, {a, 20}, {a, 30}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(svc_.GetMetricHistoryBulk({a, b}, "m", 2)->size(), 2u);
  EXPECT_EQ(Refusal(svc_.GetMetricHistoryBulk({}, "m", 10).status()),
            "GetMetricHistoryBulk request must specify at least one run_id.");
  EXPECT_EQ(Refusal(svc_.GetMetricHistoryBulk({a}, "", 10).status()),
            "GetMetricHistoryBulk request must specify a metric_key.");
}

TEST_F(TrackingServiceTest, MetricSeriesThinsToAtMostNPointsKeepingPeaksAndTroughs) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  std::vector<core::Metric> batch;
  for (int step = 0; step < 3000; ++step) {
    double value = std::sin(step * 0.01);
    if (step == 1234) value = 100;   // a spike
    if (step == 2345) value = -100;  // a dip
    batch.push_back({"loss", value, kNow + step, step});
    if (batch.size() == kMaxMetricsPerBatch) {
      ASSERT_TRUE(svc_.LogBatch(id, batch, {}, {}).ok());
      batch.clear();
    }
  }
  Result<MetricSeries> series = svc_.GetMetricSeries(id, "loss", 10);
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  EXPECT_EQ(series->total_points, 3000);
  ASSERT_LE(series->values.size(), 10u);
  ASSERT_EQ(series->steps.size(), series->values.size());
  ASSERT_EQ(series->timestamps.size(), series->values.size());
  EXPECT_EQ(series->steps.front(), 0);
  EXPECT_EQ(series->steps.back(), 2999);
  EXPECT_TRUE(std::is_sorted(series->steps.begin(), series->steps.end()));
  EXPECT_EQ(series->timestamps[1] - series->steps[1], kNow);
  EXPECT_EQ(*std::max_element(series->values.begin(), series->values.end()), 100);
  EXPECT_EQ(*std::min_element(series->values.begin(), series->values.end()), -100);

  // A short history comes back whole.
  ASSERT_TRUE(svc_.LogMetric(id, {"short", 1, kNow, 0}).ok());
  Result<MetricSeries> whole = svc_.GetMetricSeries(id, "short", 4);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->total_points, 1);
  EXPECT_THAT(whole->values, ElementsAre(1));
  EXPECT_EQ(svc_.GetMetricSeries(id, "never-logged", 4)->total_points, 0);

  for (int64_t bad : {3, 100001}) {
    EXPECT_EQ(
        Refusal(svc_.GetMetricSeries(id, "loss", bad).status()),
        "Invalid value " + std::to_string(bad) + " for parameter 'points': expected 4 to 100000");
  }
  EXPECT_EQ(Refusal(svc_.GetMetricSeries(id, "", 10).status()),
            "Missing value for required parameter 'key'. See the API docs for more "
            "information about request parameters.");
  EXPECT_EQ(svc_.GetMetricSeries(std::string(32, 'f'), "loss", 10).status().code(),
            StatusCode::kNotFound);
}

// --- Console logs ----------------------------------------------------------------------------

TEST_F(TrackingServiceTest, ConsoleLogAppendsAreIdempotentAndRefuseGaps) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  core::ConsoleChunk hello{0, core::ConsoleStream::kStdout, kNow, "hello "};
  EXPECT_EQ(*svc_.AppendRunLog(id, {hello}), 6);
  EXPECT_EQ(*svc_.AppendRunLog(id, {hello}), 6);  // a retried upload
  // Overlapping what is there: only the new part is added.
  EXPECT_EQ(*svc_.AppendRunLog(id, {{3, core::ConsoleStream::kStderr, kNow, "lo world"}}), 11);

  Status gap = svc_.AppendRunLog(id, {{20, core::ConsoleStream::kStdout, kNow, "late"}}).status();
  EXPECT_EQ(gap.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(gap.message(), "console log chunk at offset 20 leaves a gap: the log holds 11 bytes");
  // A gap anywhere in the call writes nothing of it.
  EXPECT_EQ(svc_.AppendRunLog(id, {{11, core::ConsoleStream::kStdout, kNow, "!"},
                                   {30, core::ConsoleStream::kStdout, kNow, "?"}})
                .status()
                .code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      Refusal(svc_.AppendRunLog(id, {{-1, core::ConsoleStream::kStdout, kNow, "x"}}).status()),
      "Console log chunk offset must not be negative");
  EXPECT_EQ(Refusal(svc_.AppendRunLog(id, {{11, core::ConsoleStream::kStdout, kNow, ""}}).status()),
            "Console log chunk data must not be empty");
  std::vector<core::ConsoleChunk> many(TrackingService::kMaxLogChunks + 1,
                                       {0, core::ConsoleStream::kStdout, kNow, "h"});
  EXPECT_EQ(Refusal(svc_.AppendRunLog(id, many).status()),
            "A console log upload may hold at most 10000 chunks, got 10001");
  EXPECT_EQ(
      Refusal(svc_.AppendRunLog(id, {{0, core::ConsoleStream::kStdout, kNow,
                                      std::string(TrackingService::kMaxLogAppendBytes + 1, 'x')}})
                  .status()),
      "A console log upload may hold at most 8388608 bytes, got 8388609");

  // The log of an ended run still takes what its wrapper sends late.
  ASSERT_TRUE(svc_.UpdateRun(id, core::RunStatus::kFinished, kNow, {}).ok());
  EXPECT_EQ(*svc_.AppendRunLog(id, {{11, core::ConsoleStream::kStdout, kNow, "!"}}), 12);
  EXPECT_EQ(svc_.AppendRunLog(std::string(32, 'f'), {hello}).status().code(),
            StatusCode::kNotFound);
}

TEST_F(TrackingServiceTest, ReadRunLogStartsExactlyAtTheOffset) {
  const std::string id = NewRun(NewExperiment("exp")).info.run_id;
  ASSERT_TRUE(svc_.AppendRunLog(id, {{0, core::ConsoleStream::kStdout, kNow, "hello "},
                                     {6, core::ConsoleStream::kStderr, kNow + 1, "world"}})
                  .ok());
  Result<std::vector<core::ConsoleChunk>> all = svc_.ReadRunLog(id, 0, 0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].stream, core::ConsoleStream::kStderr);
  EXPECT_EQ((*all)[1].timestamp, kNow + 1);

  Result<std::vector<core::ConsoleChunk>> tail = svc_.ReadRunLog(id, 3, 0);
  ASSERT_TRUE(tail.ok());
  ASSERT_EQ(tail->size(), 2u);
  EXPECT_EQ((*tail)[0].offset, 3);
  EXPECT_EQ((*tail)[0].data, "lo ");
  EXPECT_EQ((*tail)[1].data, "world");

  // max_bytes stops after the chunk that reaches it.
  Result<std::vector<core::ConsoleChunk>> little = svc_.ReadRunLog(id, 0, 1);
  ASSERT_TRUE(little.ok());
  EXPECT_EQ(little->size(), 1u);
  EXPECT_TRUE(svc_.ReadRunLog(id, 11, 0)->empty());
  EXPECT_TRUE(svc_.ReadRunLog(id, 500, 0)->empty());
  EXPECT_EQ(Refusal(svc_.ReadRunLog(id, -1, 0).status()),
            "Console log offset must not be negative");
  EXPECT_EQ(Refusal(svc_.ReadRunLog(id, 0, -1).status()), "max_bytes must not be negative");
  EXPECT_EQ(svc_.ReadRunLog(std::string(32, 'f'), 0, 0).status().code(), StatusCode::kNotFound);
}

// --- Run state ------------------------------------------------------------------------------

TEST_F(TrackingServiceTest, RunStatsCountActiveRunsByExperiment) {
  const std::string one = NewExperiment("one"), two = NewExperiment("two"),
                    three = NewExperiment("three");
  const core::Run finished = NewRun(one, kNow - 100);
  NewRun(one, kNow - 50);
  ASSERT_TRUE(
      svc_.UpdateRun(finished.info.run_id, core::RunStatus::kFinished, kNow + 500, {}).ok());
  NewRun(two, kNow);
  const core::Run deleted = NewRun(three, kNow);
  ASSERT_TRUE(svc_.DeleteRun(deleted.info.run_id).ok());

  Result<std::vector<store::ExperimentRunStats>> stats = svc_.RunStatsByExperiment();
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 2u);  // "three" has no active run
  EXPECT_EQ((*stats)[0].experiment_id, one);
  EXPECT_EQ((*stats)[0].runs, 2);
  EXPECT_EQ((*stats)[0].running, 1);
  EXPECT_EQ((*stats)[0].last_activity, kNow + 500);
  EXPECT_EQ((*stats)[1].experiment_id, two);
  EXPECT_EQ((*stats)[1].runs, 1);
  EXPECT_EQ((*stats)[1].running, 1);
  EXPECT_EQ((*stats)[1].last_activity, kNow);
}

TEST_F(TrackingServiceTest, StaleHeartbeatFailsTheRunUntilItsOwnerEndsIt) {
  const std::string exp = NewExperiment("exp");
  const std::string stale = NewRun(exp).info.run_id, fresh = NewRun(exp).info.run_id,
                    silent = NewRun(exp).info.run_id, ended = NewRun(exp).info.run_id;
  const int64_t last_beat = kNow - 10 * 60 * 1000;
  const std::string heartbeat(TrackingService::kHeartbeatTag);
  ASSERT_TRUE(svc_.SetTag(stale, {heartbeat, std::to_string(last_beat)}).ok());
  ASSERT_TRUE(svc_.SetTag(fresh, {heartbeat, std::to_string(kNow - 1000)}).ok());
  ASSERT_TRUE(svc_.SetTag(ended, {heartbeat, std::to_string(last_beat)}).ok());
  ASSERT_TRUE(svc_.UpdateRun(ended, core::RunStatus::kFinished, kNow, {}).ok());

  EXPECT_EQ(*svc_.FailStaleRuns(60'000), 1);
  core::Run failed = *svc_.GetRun(stale);
  EXPECT_EQ(failed.info.status, core::RunStatus::kFailed);
  EXPECT_EQ(failed.info.end_time, last_beat);
  const core::Tag* reason = failed.FindTag(TrackingService::kFailureReasonTag);
  ASSERT_NE(reason, nullptr);
  EXPECT_EQ(reason->value,
            "no heartbeat from cairn run for 600 s (timeout 60 s): the wrapper or its host "
            "stopped without ending the run");
  for (const std::string& untouched : {fresh, silent}) {
    EXPECT_EQ(svc_.GetRunInfo(untouched)->status, core::RunStatus::kRunning);
  }
  EXPECT_EQ(svc_.GetRunInfo(ended)->status, core::RunStatus::kFinished);
  EXPECT_EQ(*svc_.FailStaleRuns(60'000), 0);  // failed runs are not failed again

  // The wrapper was only cut off, and ends its run after all: the reason goes.
  ASSERT_TRUE(svc_.UpdateRun(stale, core::RunStatus::kFinished, kNow, {}).ok());
  EXPECT_EQ(svc_.GetRun(stale)->FindTag(TrackingService::kFailureReasonTag), nullptr);
  EXPECT_EQ(svc_.GetRunInfo(stale)->status, core::RunStatus::kFinished);
}

}  // namespace
}  // namespace cairn::service
