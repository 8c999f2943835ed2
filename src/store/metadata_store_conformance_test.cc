// The MetadataStore contract, run against every backend. A new backend adds a factory to
// kBackends' typed list and must pass unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "fakes/store_backends.h"
#include "store/metadata_store.h"
#include "util/hash.h"

namespace cairn::store {
namespace {

using core::Experiment;
using core::Metric;
using core::Run;

using fakes::MemoryBackend;
using fakes::SqliteBackend;

template <typename Backend>
class MetadataStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("cairn-store-" + RandomHex(8));
    std::filesystem::create_directories(dir_);
    store_ = Backend::Open(dir_.string());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string NewExperiment(const std::string& name) {
    Experiment e;
    e.name = name;
    e.creation_time = e.last_update_time = 1000;
    auto id = store_->CreateExperiment(e);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return *id;
  }

  std::string NewRun(const std::string& experiment_id, int64_t start_time = 1) {
    core::Run run;
    run.info.run_id = RandomHex(16);
    run.info.experiment_id = experiment_id;
    run.info.run_name = "run-" + run.info.run_id.substr(0, 4);
    run.info.start_time = start_time;
    run.info.artifact_uri = "mlflow-artifacts:/" + experiment_id + "/" + run.info.run_id;
    run.data.tags.push_back({"mlflow.runName", run.info.run_name});
    EXPECT_TRUE(store_->CreateRun(run).ok());
    return run.info.run_id;
  }

  std::filesystem::path dir_;
  std::unique_ptr<MetadataStore> store_;
};

using Backends = ::testing::Types<MemoryBackend, SqliteBackend>;
TYPED_TEST_SUITE(MetadataStoreTest, Backends);

TYPED_TEST(MetadataStoreTest, NewStoreHoldsDefaultExperiment) {
  auto e = this->store_->GetExperiment("0");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->name, "Default");
  EXPECT_EQ(e->artifact_location, "mlflow-artifacts:/0");
  EXPECT_EQ(e->lifecycle_stage, core::LifecycleStage::kActive);
}

TYPED_TEST(MetadataStoreTest, CreateExperimentAssignsIdsAndRejectsDuplicateNames) {
  std::string a = this->NewExperiment("a");
  std::string b = this->NewExperiment("b");
  EXPECT_EQ(a, "1");
  EXPECT_EQ(b, "2");
  Experiment dup;
  dup.name = "a";
  EXPECT_EQ(this->store_->CreateExperiment(dup).status().code(), StatusCode::kAlreadyExists);
  auto byname = this->store_->GetExperimentByName("b");
  ASSERT_TRUE(byname.ok());
  EXPECT_EQ(byname->experiment_id, "2");
  EXPECT_EQ(byname->artifact_location, "mlflow-artifacts:/2");
  EXPECT_EQ(this->store_->GetExperimentByName("zzz").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->store_->GetExperiment("99").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->store_->GetExperiment("abc").status().code(), StatusCode::kNotFound);
}

TYPED_TEST(MetadataStoreTest, ExperimentTagsRenameAndLifecycle) {
  std::string id = this->NewExperiment("tagged");
  ASSERT_TRUE(this->store_->SetExperimentTag(id, {"k", "v1"}).ok());
  ASSERT_TRUE(this->store_->SetExperimentTag(id, {"k", "v2"}).ok());
  auto e = this->store_->GetExperiment(id);
  ASSERT_EQ(e->tags.size(), 1u);
  EXPECT_EQ(e->tags[0].value, "v2");
  EXPECT_TRUE(this->store_->DeleteExperimentTag(id, "k").ok());
  EXPECT_EQ(this->store_->DeleteExperimentTag(id, "k").code(), StatusCode::kNotFound);

  this->NewExperiment("other");
  EXPECT_EQ(this->store_->RenameExperiment(id, "other", 5).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(this->store_->RenameExperiment(id, "renamed", 5).ok());
  EXPECT_EQ(this->store_->GetExperiment(id)->name, "renamed");
  EXPECT_EQ(this->store_->GetExperiment(id)->last_update_time, 5);

  std::string run = this->NewRun(id);
  ASSERT_TRUE(this->store_->SetExperimentStage(id, core::LifecycleStage::kDeleted, 6).ok());
  EXPECT_EQ(this->store_->GetRun(run)->info.lifecycle_stage, core::LifecycleStage::kDeleted);
  auto active = this->store_->ListExperiments(core::ViewType::kActiveOnly);
  auto deleted = this->store_->ListExperiments(core::ViewType::kDeletedOnly);
  auto all = this->store_->ListExperiments(core::ViewType::kAll);
  EXPECT_EQ(active->size(), 2u);  // Default and "other"
  ASSERT_EQ(deleted->size(), 1u);
  EXPECT_EQ((*deleted)[0].name, "renamed");
  EXPECT_EQ(all->size(), 3u);
  ASSERT_TRUE(this->store_->SetExperimentStage(id, core::LifecycleStage::kActive, 7).ok());
  EXPECT_EQ(this->store_->GetRun(run)->info.lifecycle_stage, core::LifecycleStage::kActive);
}

TYPED_TEST(MetadataStoreTest, RunRoundTripsInfoAndRejectsUnknownExperiment) {
  std::string exp = this->NewExperiment("runs");
  std::string id = this->NewRun(exp, 42);
  auto run = this->store_->GetRun(id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->info.experiment_id, exp);
  EXPECT_EQ(run->info.start_time, 42);
  EXPECT_FALSE(run->info.end_time.has_value());
  EXPECT_EQ(run->info.status, core::RunStatus::kRunning);
  EXPECT_EQ(this->store_->GetRun("nope").status().code(), StatusCode::kNotFound);

  core::Run orphan;
  orphan.info.run_id = RandomHex(16);
  orphan.info.experiment_id = "77";
  EXPECT_EQ(this->store_->CreateRun(orphan).code(), StatusCode::kNotFound);

  ASSERT_TRUE(this->store_->UpdateRun(id, core::RunStatus::kFinished, 99, "renamed").ok());
  run = this->store_->GetRun(id);
  EXPECT_EQ(run->info.status, core::RunStatus::kFinished);
  EXPECT_EQ(run->info.end_time, 99);
  EXPECT_EQ(run->info.run_name, "renamed");
  EXPECT_EQ(run->FindTag("mlflow.runName")->value, "renamed");
}

TYPED_TEST(MetadataStoreTest, RunStatsCountActiveRunsPerExperiment) {
  std::string a = this->NewExperiment("a");
  std::string b = this->NewExperiment("b");
  this->NewExperiment("no runs");
  std::string a1 = this->NewRun(a, 100);
  this->NewRun(a, 300);
  std::string a3 = this->NewRun(a, 900);
  std::string b1 = this->NewRun(b, 50);
  ASSERT_TRUE(this->store_->UpdateRun(a1, core::RunStatus::kFinished, 500, std::nullopt).ok());
  ASSERT_TRUE(this->store_->UpdateRun(b1, core::RunStatus::kFailed, 70, std::nullopt).ok());
  // A deleted run counts for nothing, not even its later start.
  ASSERT_TRUE(this->store_->SetRunStage(a3, core::LifecycleStage::kDeleted).ok());
  auto stats = this->store_->RunStatsByExperiment();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(stats->size(), 2u);
  EXPECT_EQ((*stats)[0].experiment_id, a);
  EXPECT_EQ((*stats)[0].runs, 2);
  EXPECT_EQ((*stats)[0].running, 1);
  EXPECT_EQ((*stats)[0].last_activity, 500);
  EXPECT_EQ((*stats)[1].experiment_id, b);
  EXPECT_EQ((*stats)[1].runs, 1);
  EXPECT_EQ((*stats)[1].running, 0);
  EXPECT_EQ((*stats)[1].last_activity, 70);
}

TYPED_TEST(MetadataStoreTest, LogBatchKeepsParamsImmutableAndTagsLastValue) {
  std::string run = this->NewRun(this->NewExperiment("batch"));
  ASSERT_TRUE(this->store_->LogBatch(run, {}, {{"lr", "0.1"}}, {{"t", "a"}}).ok());
  EXPECT_TRUE(this->store_->LogBatch(run, {}, {{"lr", "0.1"}}, {{"t", "b"}}).ok());
  Status changed = this->store_->LogBatch(run, {{"m", 1, 1, 0}}, {{"lr", "0.2"}}, {{"t", "c"}});
  EXPECT_EQ(changed.code(), StatusCode::kInvalidArgument);
  auto r = this->store_->GetRun(run);
  EXPECT_EQ(r->FindParam("lr")->value, "0.1");
  // The failed batch wrote nothing: neither its tag nor its metric.
  EXPECT_EQ(r->FindTag("t")->value, "b");
  EXPECT_EQ(r->FindMetric("m"), nullptr);
  EXPECT_EQ(this->store_->LogBatch("missing", {}, {}, {}).code(), StatusCode::kNotFound);
}

TYPED_TEST(MetadataStoreTest, LogBatchRejectsDeletedRun) {
  std::string run = this->NewRun(this->NewExperiment("deleted"));
  ASSERT_TRUE(this->store_->SetRunStage(run, core::LifecycleStage::kDeleted).ok());
  Status s = this->store_->LogBatch(run, {{"m", 1, 1, 0}}, {}, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("must be in the 'active' state"), std::string::npos);
  ASSERT_TRUE(this->store_->SetRunStage(run, core::LifecycleStage::kActive).ok());
  EXPECT_EQ(this->store_->GetRun(run)->FindMetric("m"), nullptr);
  EXPECT_TRUE(this->store_->LogBatch(run, {{"m", 1, 1, 0}}, {}, {}).ok());
}

TYPED_TEST(MetadataStoreTest, LatestMetricIsLargestStepTimestampValue) {
  std::string run = this->NewRun(this->NewExperiment("latest"));
  std::vector<Metric> points = {{"loss", 5, 100, 2}, {"loss", 9, 50, 1}, {"loss", 3, 100, 2},
                                {"loss", 4, 90, 2}};
  ASSERT_TRUE(this->store_->LogBatch(run, points, {}, {}).ok());
  auto loaded = this->store_->GetRun(run);
  ASSERT_TRUE(loaded.ok());
  const Metric* latest = loaded->FindMetric("loss");
  ASSERT_NE(latest, nullptr);
  EXPECT_EQ(latest->step, 2);
  EXPECT_EQ(latest->timestamp, 100);
  EXPECT_EQ(latest->value, 5);
  // A later batch with an older point does not replace the latest value.
  ASSERT_TRUE(this->store_->LogBatch(run, {{"loss", 1, 1, 0}}, {}, {}).ok());
  EXPECT_EQ(this->store_->GetRun(run)->FindMetric("loss")->value, 5);
}

TYPED_TEST(MetadataStoreTest, MetricHistoryIsOrderedPagedAndDropsExactDuplicates) {
  std::string run = this->NewRun(this->NewExperiment("history"));
  std::vector<Metric> points;
  for (int i = 9; i >= 0; --i) points.push_back({"acc", i * 0.1, 1000 + i, i});
  points.push_back({"acc", 0.5, 1005, 5});  // exact duplicate
  points.push_back({"acc", std::nan(""), 2000, 10});
  points.push_back({"acc", INFINITY, 2001, 11});
  ASSERT_TRUE(this->store_->LogBatch(run, points, {}, {}).ok());
  MetricHistoryQuery q;
  q.run_id = run;
  q.key = "acc";
  auto all = this->store_->GetMetricHistory(q);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 12u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ((*all)[i].step, static_cast<int64_t>(i));
  EXPECT_TRUE(std::isnan((*all)[10].value));
  EXPECT_TRUE(std::isinf((*all)[11].value));
  q.offset = 3;
  q.max_results = 4;
  auto page = this->store_->GetMetricHistory(q);
  ASSERT_EQ(page->size(), 4u);
  EXPECT_EQ((*page)[0].step, 3);
  q = {};
  q.run_id = run;
  q.key = "acc";
  q.min_step = 2;
  q.max_step = 4;
  EXPECT_EQ(this->store_->GetMetricHistory(q)->size(), 3u);
  q.key = "absent";
  EXPECT_TRUE(this->store_->GetMetricHistory(q)->empty());
}

TYPED_TEST(MetadataStoreTest, LongHistoryPagesInOrderWithoutDuplicates) {
  // Enough points for the SQLite store to hold some in its clustered table and some in its
  // log; duplicates of points on either side must appear once.
  std::string run = this->NewRun(this->NewExperiment("long"));
  auto batch = [](int from, int to) {
    std::vector<Metric> points;
    for (int i = from; i < to; ++i) points.push_back({"x", i * 0.5, 1000 + i, i});
    return points;
  };
  for (int start = 0; start < 24000; start += 1000) {
    ASSERT_TRUE(this->store_->LogBatch(run, batch(start, start + 1000), {}, {}).ok());
  }
  ASSERT_TRUE(this->store_->LogBatch(run, batch(23500, 25000), {}, {}).ok());
  ASSERT_TRUE(this->store_->LogBatch(run, batch(100, 200), {}, {}).ok());
  MetricHistoryQuery q;
  q.run_id = run;
  q.key = "x";
  q.max_results = 7000;
  int64_t expected_step = 0;
  for (q.offset = 0; q.offset < 25000; q.offset += q.max_results) {
    auto page = this->store_->GetMetricHistory(q);
    ASSERT_TRUE(page.ok());
    ASSERT_EQ(page->size(), static_cast<size_t>(std::min<int64_t>(7000, 25000 - q.offset)));
    for (const Metric& m : *page) ASSERT_EQ(m.step, expected_step++);
  }
  EXPECT_EQ(expected_step, 25000);
  // Reading in batches after the last point read gives the same sequence.
  q = {};
  q.run_id = run;
  q.key = "x";
  q.max_results = 6000;
  expected_step = 0;
  for (;;) {
    auto batch = this->store_->GetMetricHistory(q);
    ASSERT_TRUE(batch.ok());
    for (const Metric& m : *batch) ASSERT_EQ(m.step, expected_step++);
    if (batch->size() < 6000) break;
    q.after = batch->back();
  }
  EXPECT_EQ(expected_step, 25000);
  int seen = 0;
  q = {};
  q.run_id = run;
  q.key = "x";
  ASSERT_TRUE(this->store_->ScanMetricHistory(q, [&](const Metric&) { return ++seen < 10; }).ok());
  EXPECT_EQ(seen, 10);
}

TYPED_TEST(MetadataStoreTest, DeleteRunTag) {
  std::string run = this->NewRun(this->NewExperiment("tags"));
  ASSERT_TRUE(this->store_->LogBatch(run, {}, {}, {{"a", "1"}}).ok());
  EXPECT_TRUE(this->store_->DeleteRunTag(run, "a").ok());
  EXPECT_EQ(this->store_->GetRun(run)->FindTag("a"), nullptr);
  EXPECT_EQ(this->store_->DeleteRunTag(run, "a").code(), StatusCode::kNotFound);
}

TYPED_TEST(MetadataStoreTest, LogInputsRecordsDatasetsOnce) {
  std::string run = this->NewRun(this->NewExperiment("inputs"));
  core::DatasetInput in;
  in.dataset = {"train", "abc123", "local", "/data/train.csv", "{\"cols\":1}", "{\"rows\":10}"};
  in.tags = {{"mlflow.data.context", "training"}};
  ASSERT_TRUE(this->store_->LogInputs(run, {in}).ok());
  ASSERT_TRUE(this->store_->LogInputs(run, {in}).ok());
  auto r = this->store_->GetRun(run);
  ASSERT_EQ(r->inputs.size(), 1u);
  EXPECT_EQ(r->inputs[0].dataset.source, "/data/train.csv");
  EXPECT_EQ(r->inputs[0].dataset.profile, "{\"rows\":10}");
  ASSERT_EQ(r->inputs[0].tags.size(), 1u);
  EXPECT_EQ(r->inputs[0].tags[0].value, "training");
}

TYPED_TEST(MetadataStoreTest, RunsUsingADatasetAcrossExperiments) {
  core::DatasetInput v1;
  v1.dataset = {"mnist", "d1", "cairn", "{}", "", ""};
  core::DatasetInput v2 = v1;
  v2.dataset.digest = "d2";
  const std::string a = this->NewRun(this->NewExperiment("use-a"));
  const std::string b = this->NewRun(this->NewExperiment("use-b"));
  const std::string c = this->NewRun(this->NewExperiment("use-c"));
  ASSERT_TRUE(this->store_->LogInputs(a, {v1}).ok());
  ASSERT_TRUE(this->store_->LogInputs(b, {v1, v2}).ok());
  ASSERT_TRUE(this->store_->LogInputs(c, {v2}).ok());
  auto used = this->store_->RunsUsingDataset("mnist", "d1", 100);
  ASSERT_TRUE(used.ok()) << used.status().ToString();
  EXPECT_EQ(std::set<std::string>(used->begin(), used->end()), (std::set<std::string>{a, b}));
  EXPECT_EQ(this->store_->RunsUsingDataset("mnist", "d2", 1)->size(), 1u);
  EXPECT_TRUE(this->store_->RunsUsingDataset("other", "d1", 100)->empty());
}

TYPED_TEST(MetadataStoreTest, SearchDatasetsListsEachDatasetOfTheExperimentsOnce) {
  const std::string exp = this->NewExperiment("datasets");
  const std::string other = this->NewExperiment("other-datasets");
  core::DatasetInput train;
  train.dataset = {"train", "d1", "local", "/t", "", ""};
  train.tags = {{"mlflow.data.context", "training"}};
  core::DatasetInput eval;
  eval.dataset = {"eval", "d2", "local", "/e", "", ""};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(this->store_->LogInputs(this->NewRun(exp), {train, eval}).ok());
  }
  ASSERT_TRUE(this->store_->LogInputs(this->NewRun(other), {train}).ok());
  auto found = this->store_->SearchDatasets({exp}, 1000);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, (std::vector<DatasetSummary>{{exp, "eval", "d2", ""},
                                                 {exp, "train", "d1", "training"}}));
  auto both = this->store_->SearchDatasets({exp, other, "nope"}, 1000);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 3u);
  EXPECT_EQ(this->store_->SearchDatasets({exp, other}, 2)->size(), 2u);
}

TYPED_TEST(MetadataStoreTest, SearchRunsFiltersOrdersAndPages) {
  std::string exp = this->NewExperiment("search");
  std::string other = this->NewExperiment("elsewhere");
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    std::string id = this->NewRun(exp, 100 + i);
    std::vector<Metric> m;
    if (i != 5) m.push_back({"loss", 1.0 / (i + 1), 1, 0});
    ASSERT_TRUE(this->store_->LogBatch(id, m, {{"opt", i % 2 ? "adam" : "sgd"}}, {}).ok());
    ids.push_back(id);
  }
  this->NewRun(other);
  ASSERT_TRUE(this->store_->SetRunStage(ids[0], core::LifecycleStage::kDeleted).ok());

  RunSearchQuery q;
  q.experiment_ids = {exp};
  q.filter = core::ParseRunFilter("params.opt = 'sgd'").value();
  auto sgd = this->store_->SearchRuns(q);
  ASSERT_TRUE(sgd.ok());
  EXPECT_EQ(sgd->size(), 2u);  // runs 2 and 4; run 0 is deleted

  q.filter = core::ParseRunFilter("metrics.loss > 0.3 and params.opt != 'x'").value();
  auto high = this->store_->SearchRuns(q);
  ASSERT_TRUE(high.ok());
  EXPECT_EQ(high->size(), 2u);  // 0.5 and 0.333; run 0 (1.0) is deleted
  q.filter = core::ParseRunFilter("metrics.loss <= 0.25 and params.opt = 'adam'").value();
  ASSERT_EQ(this->store_->SearchRuns(q)->size(), 1u);  // run 3 (0.25, adam); run 4 is sgd
  EXPECT_EQ((*this->store_->SearchRuns(q))[0].info.run_id, ids[3]);
  q.filter = core::ParseRunFilter("metrics.loss = 0.25").value();
  ASSERT_EQ(this->store_->SearchRuns(q)->size(), 1u);

  q.filter.clear();
  q.order = core::ParseRunOrderBy({"metrics.loss ASC"}).value();
  auto ordered = this->store_->SearchRuns(q);
  ASSERT_EQ(ordered->size(), 5u);
  EXPECT_EQ((*ordered)[0].info.run_id, ids[4]);
  EXPECT_EQ((*ordered)[3].info.run_id, ids[1]);
  EXPECT_EQ((*ordered)[4].info.run_id, ids[5]);  // lacks the metric: last
  // Returned runs are complete, not just the fields the query used.
  EXPECT_NE((*ordered)[0].FindParam("opt"), nullptr);
  EXPECT_NE((*ordered)[0].FindTag("mlflow.runName"), nullptr);

  q.offset = 2;
  q.max_results = 2;
  auto page = this->store_->SearchRuns(q);
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].info.run_id, ids[2]);

  q = {};
  q.experiment_ids = {exp, exp};  // a repeated id does not repeat runs
  EXPECT_EQ(this->store_->SearchRuns(q)->size(), 5u);
  q.view = core::ViewType::kDeletedOnly;
  auto deleted = this->store_->SearchRuns(q);
  ASSERT_EQ(deleted->size(), 1u);
  EXPECT_EQ((*deleted)[0].info.run_id, ids[0]);
}

// Every store must answer exactly what the core matcher and sort give over complete runs,
// whatever shortcuts it takes: ties, NaN, infinities, missing keys, deleted runs, two
// experiments and pages at every depth.
TYPED_TEST(MetadataStoreTest, SearchRunsAgreesWithCoreOnEveryPage) {
  std::string a = this->NewExperiment("a");
  std::string b = this->NewExperiment("b");
  std::vector<std::string> ids;
  const double kLoss[] = {0.5, 0.25, 0.25, -0.0, 0.0, 1.0, std::nan(""), INFINITY, -INFINITY};
  uint32_t seed = 7;
  auto next = [&seed](uint32_t n) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 8) % n;
  };
  for (int i = 0; i < 240; ++i) {
    std::string id = this->NewRun(i % 3 == 0 ? b : a, 100 + next(20));
    std::vector<Metric> m;
    if (next(6) != 0) m.push_back({"loss", kLoss[next(9)], 1, 0});
    if (next(5) != 0) m.push_back({"acc", next(100) / 100.0, 1, 0});
    std::vector<core::Param> params;
    if (next(4) != 0) params.push_back({"opt", next(2) ? "adam" : "sgd"});
    ASSERT_TRUE(
        this->store_->LogBatch(id, m, params, {{"team", "t" + std::to_string(next(3))}}).ok());
    if (next(10) == 0) {
      ASSERT_TRUE(this->store_->SetRunStage(id, core::LifecycleStage::kDeleted).ok());
    }
    ids.push_back(id);
  }
  std::vector<Run> all;
  for (const std::string& id : ids) all.push_back(*this->store_->GetRun(id));

  const char* filters[] = {"", "metrics.acc > 0.2 and params.opt = 'adam'",
                           "metrics.acc >= 0.9", "tags.team = 't1'", "params.opt != 'sgd'",
                           "metrics.loss <= 0.25", "attributes.status = 'RUNNING'"};
  const std::vector<std::vector<std::string>> orders = {
      {"metrics.loss DESC"}, {"metrics.loss ASC"}, {"metrics.acc DESC", "params.opt ASC"},
      {"metrics.loss DESC", "metrics.acc ASC"}, {}, {"params.opt DESC"}};
  const std::pair<int64_t, int64_t> pages[] = {{0, 1}, {0, 5}, {3, 7}, {0, 1000}, {150, 20}};
  for (const char* filter : filters) {
    for (const auto& order : orders) {
      for (auto view : {core::ViewType::kActiveOnly, core::ViewType::kAll}) {
        for (auto [offset, max] : pages) {
          RunSearchQuery q;
          q.experiment_ids = {a};
          if (offset == 3) q.experiment_ids.push_back(b);
          q.view = view;
          q.filter = core::ParseRunFilter(filter).value();
          q.order = core::ParseRunOrderBy(order).value();
          q.offset = offset;
          q.max_results = max;
          std::vector<Run> expected;
          for (const Run& run : all) {
            bool in = std::find(q.experiment_ids.begin(), q.experiment_ids.end(),
                                run.info.experiment_id) != q.experiment_ids.end();
            if (in && core::StageVisible(run.info.lifecycle_stage, view) &&
                core::RunMatches(run, q.filter)) {
              expected.push_back(run);
            }
          }
          core::SortRuns(&expected, q.order, expected.size());
          std::vector<std::string> want;
          for (size_t i = offset; i < expected.size() && i < size_t(offset + max); ++i) {
            want.push_back(expected[i].info.run_id);
          }
          auto got = this->store_->SearchRuns(q);
          ASSERT_TRUE(got.ok()) << got.status().ToString();
          std::vector<std::string> have;
          for (const Run& run : *got) have.push_back(run.info.run_id);
          EXPECT_EQ(have, want) << "filter '" << filter << "' order "
                                << (order.empty() ? "" : order[0]) << " offset " << offset
                                << " max " << max;
          for (const Run& run : *got) {  // complete runs, not the parts the search used
            EXPECT_NE(run.FindTag("mlflow.runName"), nullptr);
          }
        }
      }
    }
  }
}

TYPED_TEST(MetadataStoreTest, RunLogAppendsInOrderIdempotentlyAndRefusesGaps) {
  std::string run = this->NewRun("0");
  using core::ConsoleChunk;
  using core::ConsoleStream;
  auto chunk = [](int64_t offset, std::string data, ConsoleStream s = ConsoleStream::kStdout) {
    return ConsoleChunk{offset, s, 1000 + offset, std::move(data)};
  };
  auto len = this->store_->AppendRunLog(run, {chunk(0, "hello "), chunk(6, "world\n")});
  ASSERT_TRUE(len.ok()) << len.status().ToString();
  EXPECT_EQ(*len, 12);
  // A retried upload (same chunks, or one overlapping the end) adds only what is new.
  EXPECT_EQ(*this->store_->AppendRunLog(run, {chunk(6, "world\n")}), 12);
  EXPECT_EQ(*this->store_->AppendRunLog(run, {chunk(6, "world\nerr\n", ConsoleStream::kStderr)}),
            16);
  // A gap is refused, and nothing of that call is written.
  auto gap = this->store_->AppendRunLog(run, {chunk(16, "a"), chunk(30, "b")});
  EXPECT_EQ(gap.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(*this->store_->AppendRunLog(run, {}), 16);
  // Binary-safe: bytes in, the same bytes out.
  std::string bytes("\0\xff\x80z", 4);
  EXPECT_EQ(*this->store_->AppendRunLog(run, {chunk(16, bytes)}), 20);

  auto all = this->store_->ReadRunLog(run, 0, 1 << 20);
  ASSERT_TRUE(all.ok());
  std::string text;
  for (const ConsoleChunk& c : *all) {
    EXPECT_EQ(c.offset, static_cast<int64_t>(text.size()));
    text += c.data;
  }
  EXPECT_EQ(text, "hello world\nerr\n" + bytes);
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[2].stream, ConsoleStream::kStderr);
  EXPECT_EQ((*all)[2].offset, 12);
  EXPECT_EQ((*all)[2].timestamp, 1006);  // the chunk's own time, trimmed or not

  // From the middle of a chunk: that chunk first; max_bytes stops after reaching it.
  auto mid = this->store_->ReadRunLog(run, 8, 1);
  ASSERT_TRUE(mid.ok());
  ASSERT_EQ(mid->size(), 1u);
  EXPECT_EQ((*mid)[0].offset, 6);
  EXPECT_TRUE(this->store_->ReadRunLog(run, 20, 100)->empty());
  EXPECT_TRUE(this->store_->ReadRunLog(run, 99, 100)->empty());
  EXPECT_EQ(this->store_->AppendRunLog("nope", {chunk(0, "x")}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(this->store_->ReadRunLog("nope", 0, 1).status().code(), StatusCode::kNotFound);
}

TYPED_TEST(MetadataStoreTest, EveryArtifactFileIsListedInPathOrderPageByPage) {
  for (const char* path : {"2/r/artifacts/b", "1/r/artifacts/a", "models/m/1/w", "1/r/artifacts/c"}) {
    ASSERT_TRUE(this->store_->PutArtifact({path, std::string(64, 'a'), 1}).ok());
  }
  std::vector<std::string> walked;
  std::string after;
  for (;;) {
    auto page = this->store_->ListArtifactFiles(after, 3);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    if (page->empty()) break;
    EXPECT_LE(page->size(), 3u);
    for (const store::ArtifactFile& f : *page) walked.push_back(f.path);
    after = page->back().path;
  }
  EXPECT_EQ(walked, (std::vector<std::string>{"1/r/artifacts/a", "1/r/artifacts/c",
                                              "2/r/artifacts/b", "models/m/1/w"}));
}

TYPED_TEST(MetadataStoreTest, PutArtifactsRecordsAllOrNone) {
  const std::string a(64, 'a'), b(64, 'b');
  ASSERT_TRUE(this->store_->PutArtifact({"d/x", a, 1}).ok());
  auto put = this->store_->PutArtifacts({{"d/x", b, 2}, {"d/y", a, 3}});
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  ASSERT_EQ(put->size(), 1u);
  EXPECT_EQ((*put)[0].digest, a);  // the entry d/x replaced
  EXPECT_EQ(this->store_->GetArtifact("d/x")->digest, b);
  EXPECT_EQ(this->store_->GetArtifact("d/y")->size, 3);

  // "d/y/z" lies under the file d/y: the whole batch is refused, its first puts undone.
  auto refused = this->store_->PutArtifacts({{"e/1", a, 1}, {"d/x", a, 9}, {"d/y/z", a, 1}});
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->store_->GetArtifact("e/1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->store_->GetArtifact("d/x")->digest, b);
  EXPECT_EQ(this->store_->GetArtifact("d/x")->size, 2);
}

TYPED_TEST(MetadataStoreTest, ArtifactIndexListsDirectoriesAndDeletesTrees) {
  ASSERT_TRUE(this->store_->PutArtifact({"1/r/artifacts/a.txt", std::string(64, 'a'), 3}).ok());
  ASSERT_TRUE(this->store_->PutArtifact({"1/r/artifacts/d/x", std::string(64, 'b'), 4}).ok());
  ASSERT_TRUE(this->store_->PutArtifact({"1/r/artifacts/d/y/z", std::string(64, 'b'), 5}).ok());
  ASSERT_TRUE(this->store_->PutArtifact({"1/r/artifacts.bak", std::string(64, 'd'), 7}).ok());
  auto replaced = this->store_->PutArtifact({"1/r/artifacts.bak", std::string(64, 'c'), 6});
  ASSERT_TRUE(replaced.ok());
  ASSERT_TRUE(replaced->has_value());
  EXPECT_EQ((*replaced)->digest, std::string(64, 'd'));
  auto root = this->store_->ListArtifacts("1/r/artifacts");
  ASSERT_TRUE(root.ok());
  ASSERT_EQ(root->size(), 2u);
  EXPECT_EQ((*root)[0].name, "a.txt");
  EXPECT_FALSE((*root)[0].is_dir);
  EXPECT_EQ((*root)[0].size, 3);
  EXPECT_EQ((*root)[1].name, "d");
  EXPECT_TRUE((*root)[1].is_dir);
  EXPECT_TRUE(this->store_->ListArtifacts("1/r/artifacts/a.txt")->empty());
  EXPECT_EQ(this->store_->ListArtifacts("")->size(), 1u);

  // A file cannot shadow a directory, nor a directory a file.
  EXPECT_EQ(this->store_->PutArtifact({"1/r/artifacts/d", std::string(64, 'e'), 1}).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      this->store_->PutArtifact({"1/r/artifacts/a.txt/x", std::string(64, 'e'), 1}).status().code(),
      StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->store_->GetArtifact("1/r/artifacts/d/x")->size, 4);
  EXPECT_EQ(this->store_->GetArtifact("1/r/artifacts/d").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(*this->store_->BlobReferenced(std::string(64, 'b')));
  auto removed = this->store_->DeleteArtifacts("1/r/artifacts/d");
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->size(), 2u);
  EXPECT_FALSE(*this->store_->BlobReferenced(std::string(64, 'b')));
  EXPECT_EQ(this->store_->DeleteArtifacts("1/r/artifacts/d").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(this->store_->GetArtifact("1/r/artifacts.bak")->size, 6);
}

TYPED_TEST(MetadataStoreTest, ConcurrentWritersAllSucceed) {
  std::string exp = this->NewExperiment("concurrent");
  std::vector<std::string> runs;
  for (int i = 0; i < 8; ++i) runs.push_back(this->NewRun(exp));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::vector<Metric> batch;
        for (int k = 0; k < 10; ++k) batch.push_back({"m", double(k), i, i * 10 + k});
        if (!this->store_->LogBatch(runs[t], batch, {}, {{"i", std::to_string(i)}}).ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  MetricHistoryQuery q;
  q.key = "m";
  for (const std::string& r : runs) {
    q.run_id = r;
    EXPECT_EQ(this->store_->GetMetricHistory(q)->size(), 500u);
  }
}

TYPED_TEST(MetadataStoreTest, CommittedDataSurvivesReopen) {
  if (!TypeParam::kPersistent) GTEST_SKIP() << "backend keeps nothing across restarts";
  std::string exp = this->NewExperiment("durable");
  std::string run = this->NewRun(exp);
  ASSERT_TRUE(this->store_->LogBatch(run, {{"m", 1.5, 7, 3}}, {{"p", "v"}}, {}).ok());
  this->store_.reset();
  this->store_ = TypeParam::Open(this->dir_.string());
  auto r = this->store_->GetRun(run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->FindMetric("m")->value, 1.5);
  EXPECT_EQ(r->FindParam("p")->value, "v");
  EXPECT_EQ(this->store_->GetExperimentByName("durable")->experiment_id, exp);
}

}  // namespace
}  // namespace cairn::store
