#include "client/active_run.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "fakes/scoped_env.h"
#include "server/server.h"
#include "util/clock.h"
#include "util/hash.h"

namespace cairn::client {
namespace {

using fakes::ScopedEnv;

namespace fs = std::filesystem;

// Under `cairn run` with the server away at its start, the wrapper hands the command a run id
// it chose itself and creates the run later; the command must be able to attach meanwhile.
class ActiveRunAttachTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions options;
    options.port = 0;
    options.backend_store_uri = "memory:";
    options.artifacts_destination = "memory:";
    options.threads = 4;
    auto opened = server::Server::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    server_ = std::move(opened).value();
    serving_ = std::thread([this] { server_->Serve(); });
    ClientOptions client_options;
    client_options.tracking_uri = server_->url();
    auto client = TrackingClient::Create(client_options);
    ASSERT_TRUE(client.ok());
    client_ = std::move(client).value();
    // The server is answering before a test starts, so Stop() finds it serving.
    for (int i = 0; i < 100 && !client_->GetExperiment("0").ok(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    dir_ = fs::temp_directory_path() / ("cairn-active-run-" + RandomHex(8));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    client_.reset();  // Stop waits for open keep-alive connections
    if (server_ != nullptr) server_->Stop();
    if (serving_.joinable()) serving_.join();
    fs::remove_all(dir_);
  }

  std::unique_ptr<server::Server> server_;
  std::thread serving_;
  std::unique_ptr<TrackingClient> client_;
  fs::path dir_;
  const std::string run_id_ = RandomHex(16);
  ScopedEnv cairn_run_id_{"CAIRN_RUN_ID", run_id_};
  ScopedEnv mlflow_run_id_{"MLFLOW_RUN_ID", run_id_};
  ScopedEnv experiment_id_{"MLFLOW_EXPERIMENT_ID", std::nullopt};
};

TEST_F(ActiveRunAttachTest, LogsIntoARunTheServerDoesNotHaveYet) {
  ActiveRun::Options options;
  options.tracking_uri = server_->url();
  options.experiment = "never-created";  // attaching ignores it
  options.params = {{"lr", "0.1"}};
  auto run = ActiveRun::Start(options);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE((*run)->attached());
  EXPECT_EQ((*run)->run_id(), run_id_);
  EXPECT_EQ((*run)->experiment_id(), "");  // $MLFLOW_EXPERIMENT_ID is unset

  for (int step = 0; step < 5; ++step) (*run)->LogMetric("loss", 1.0 / (step + 1), step);
  (*run)->SetTag("phase", "train");
  Status early = (*run)->Flush();
  EXPECT_EQ(early.code(), StatusCode::kNotFound) << early.ToString();
  EXPECT_NE(early.message().find("not on the tracking server yet"), std::string::npos)
      << early.ToString();
  const std::string weights = (dir_ / "weights.txt").string();
  std::ofstream(weights) << "w 3\n";
  EXPECT_EQ((*run)->LogArtifact(weights, "model/weights.txt").code(), StatusCode::kNotFound);
  (*run)->LogMetric("loss", 0.1, 5);  // queued behind the batch that was kept

  // The wrapper creates the run once the server is reachable.
  auto created =
      client_->CreateRunWithId(run_id_, "", "late", "wrapper", SystemClock()->NowMillis(), {});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Status flushed = (*run)->Flush();
  EXPECT_TRUE(flushed.ok()) << flushed.ToString();
  Status uploaded = (*run)->LogArtifact(weights, "model/weights.txt");
  EXPECT_TRUE(uploaded.ok()) << uploaded.ToString();
  EXPECT_TRUE((*run)->End().ok());

  auto got = client_->GetRun(run_id_);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->info.status, core::RunStatus::kRunning);  // the wrapper ends it, not the client
  EXPECT_EQ(got->info.experiment_id, created->experiment_id);
  ASSERT_NE(got->FindParam("lr"), nullptr);
  EXPECT_EQ(got->FindParam("lr")->value, "0.1");
  ASSERT_NE(got->FindTag("phase"), nullptr);
  EXPECT_EQ(got->FindTag("phase")->value, "train");
  // The latest point is the one logged last, after the kept batch: the order held.
  const core::Metric* loss = got->FindMetric("loss");
  ASSERT_NE(loss, nullptr);
  EXPECT_EQ(loss->step, 5);
  EXPECT_DOUBLE_EQ(loss->value, 0.1);
  auto listed = client_->ListArtifacts(run_id_, "model");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].path, "model/weights.txt");
}

TEST_F(ActiveRunAttachTest, TakesTheExperimentFromTheEnvironmentAndAttachesAtOnceWhenUnreachable) {
  ScopedEnv experiment{"MLFLOW_EXPERIMENT_ID", "7"};
  ActiveRun::Options options;
  options.tracking_uri = "http://127.0.0.1:9";  // nothing listens there
  const auto start = std::chrono::steady_clock::now();
  auto run = ActiveRun::Start(options);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE((*run)->attached());
  EXPECT_EQ((*run)->run_id(), run_id_);
  EXPECT_EQ((*run)->experiment_id(), "7");
  // One lookup without the client's retries (which back off for 2.8 s).
  EXPECT_LT(took, std::chrono::seconds(2));
}

}  // namespace
}  // namespace cairn::client
