#include "client/run_journal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "fakes/http_test_server.h"
#include "util/hash.h"

namespace cairn::client {
namespace {

namespace fs = std::filesystem;

class RunJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("cairn-journal-" + RandomHex(8))).string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(RunJournalTest, RecordsSurviveReopenAndAPartialLastLineIsDropped) {
  {
    auto j = RunJournal::Open(dir_, "r1");
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    ASSERT_TRUE((*j)->AppendBatch({{"loss", 0.5, 1, 0}}, {{"lr", "0.1"}}, {}).ok());
    ASSERT_TRUE((*j)->AppendLog({{0, core::ConsoleStream::kStdout, 1, "hi\n"}}).ok());
    EXPECT_EQ((*j)->pending(), 2u);
    EXPECT_FALSE((*j)->complete());
  }
  // A crash in the middle of writing a third record.
  std::ofstream(fs::path(dir_) / "r1.journal", std::ios::app) << R"({"op":"end","sta)";
  auto j = RunJournal::Open(dir_, "r1");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)->pending(), 2u);
  EXPECT_FALSE((*j)->complete());  // the torn end record does not count
  ASSERT_TRUE((*j)->AppendEnd(core::RunStatus::kFinished, 99).ok());
  EXPECT_EQ((*j)->pending(), 3u);
  EXPECT_EQ(RunJournal::List(dir_), std::vector<std::string>{"r1"});
}

TEST_F(RunJournalTest, AFileArtifactKeepsTheBytesItHadWhenAppendedUntilRemoved) {
  fs::create_directories(dir_);
  const fs::path file = fs::path(dir_) / "weights.bin";
  std::ofstream(file) << "first";
  auto j = RunJournal::Open(dir_, "r5");
  ASSERT_TRUE(j.ok());
  Result<int64_t> size = (*j)->AppendArtifactFile("", "outputs/weights.bin", file.string());
  ASSERT_TRUE(size.ok()) << size.status().ToString();
  EXPECT_EQ(*size, 5);
  ASSERT_TRUE((*j)->AppendRegister("clf", "runs:/r5/outputs/weights.bin", "candidate",
                                   {{"outputs/weights.bin", 5}})
                  .ok());
  EXPECT_EQ((*j)->pending(), 2u);
  // The step's next run removes its outputs and writes new ones.
  fs::remove(file);
  std::ofstream(file) << "second";
  std::vector<std::string> kept;
  for (const auto& e : fs::directory_iterator(fs::path(dir_) / "r5.files")) {
    std::ifstream in(e.path());
    kept.push_back(std::string(std::istreambuf_iterator<char>(in), {}));
  }
  EXPECT_EQ(kept, std::vector<std::string>{"first"});
  EXPECT_FALSE((*j)->AppendArtifactFile("", "x", (fs::path(dir_) / "missing").string()).ok());
  ASSERT_TRUE((*j)->Remove().ok());
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "r5.files"));
}

TEST_F(RunJournalTest, AJournalDirectoryOthersCanWriteIsRefused) {
  ASSERT_TRUE(RunJournal::Open(dir_, "r6").ok());
  EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all)
      << "made private";
  fs::permissions(dir_, fs::perms::others_write, fs::perm_options::add);
  Result<std::unique_ptr<RunJournal>> shared = RunJournal::Open(dir_, "r7");
  EXPECT_EQ(shared.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(shared.status().message(), ::testing::HasSubstr("can be written by other users"));
  const std::string link = dir_ + "-link";
  fs::create_directory_symlink(dir_, link);
  EXPECT_EQ(RunJournal::Open(link, "r8").status().code(), StatusCode::kFailedPrecondition);
  fs::remove(link);
}

TEST_F(RunJournalTest, AJournalInUseCannotBeOpenedTwice) {
  auto first = RunJournal::Open(dir_, "r2");
  ASSERT_TRUE(first.ok());
  auto second = RunJournal::Open(dir_, "r2");
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  first->reset();
  EXPECT_TRUE(RunJournal::Open(dir_, "r2").ok());
}

TEST_F(RunJournalTest, UnreachableServerLeavesEverythingPending) {
  ClientOptions options;
  options.tracking_uri = "http://127.0.0.1:9";  // nothing listens there
  options.retries = 0;
  auto client = TrackingClient::Create(options);
  ASSERT_TRUE(client.ok());
  auto j = RunJournal::Open(dir_, "r3");
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE((*j)->AppendBatch({}, {{"a", "1"}}, {}).ok());
  ASSERT_TRUE((*j)->AppendEnd(core::RunStatus::kFailed, 5).ok());
  Status s = (*j)->Deliver(**client);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ((*j)->pending(), 2u);
  EXPECT_FALSE((*j)->complete());
  size_t reported = 0;
  j->reset();
  SyncResult result = SyncJournals(
      {dir_}, **client, [&](const std::string& run, size_t delivered, size_t left, const Status&) {
        EXPECT_EQ(run, "r3");
        EXPECT_EQ(delivered, 0u);
        EXPECT_EQ(left, 2u);
        ++reported;
      });
  EXPECT_EQ(result.pending, 2u);
  EXPECT_TRUE(result.elsewhere.empty());
  EXPECT_EQ(reported, 1u);
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "r3.journal"));
}

TEST_F(RunJournalTest, RecordsGoOnlyToTheServerTheRunWasStartedAgainst) {
  {
    auto j = RunJournal::Open(dir_, "r4", "http://127.0.0.1:8");
    ASSERT_TRUE(j.ok());
    ASSERT_TRUE((*j)->AppendBatch({}, {{"a", "1"}}, {}).ok());
    EXPECT_EQ((*j)->pending(), 1u);  // the header is not a record
  }
  auto reopened = RunJournal::Open(dir_, "r4", "http://elsewhere:1");
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->tracking_uri(), "http://127.0.0.1:8");  // kept from the header
  EXPECT_EQ((*reopened)->pending(), 1u);
  reopened->reset();
  // A journal without a header (written before journals named their server) goes anywhere.
  std::ofstream(fs::path(dir_) / "r5.journal") << R"({"op":"batch","metrics":[],"params":[],)"
                                               << R"("tags":[]})"
                                               << "\n";

  ClientOptions options;
  options.tracking_uri = "http://127.0.0.1:9";  // nothing listens there
  options.retries = 0;
  auto client = TrackingClient::Create(options);
  ASSERT_TRUE(client.ok());
  std::vector<std::string> delivered_to;
  SyncResult result =
      SyncJournals({dir_}, **client, [&](const std::string& run, size_t, size_t, const Status& s) {
        EXPECT_EQ(s.code(), StatusCode::kUnavailable);
        delivered_to.push_back(run);
      });
  EXPECT_EQ(delivered_to, std::vector<std::string>{"r5"});
  EXPECT_EQ(result.pending, 1u);
  EXPECT_EQ(result.elsewhere, (std::map<std::string, size_t>{{"http://127.0.0.1:8", 1}}));
}

// A tracking server that takes batches of records (POST /api/cairn/v1/runs/records) and the
// calls a record of another kind goes through, remembering what arrived.
class RecordsServer {
 public:
  RecordsServer() {
    server_.http().Post(
        "/api/cairn/v1/runs/records", [this](const httplib::Request& req, httplib::Response& res) {
          if (!batches) {
            res.status = 404;
            res.set_content(R"({"error_code":"ENDPOINT_NOT_FOUND","message":"no"})",
                            "application/json");
            return;
          }
          nlohmann::json body = nlohmann::json::parse(req.body);
          std::lock_guard<std::mutex> lock(mu);
          batch_sizes.push_back(body["records"].size());
          nlohmann::json failures = nlohmann::json::array();
          for (size_t i = 0; i < body["records"].size(); ++i) {
            const nlohmann::json& r = body["records"][i];
            arrived.push_back(r["run_id"].get<std::string>() + " " + r["op"].get<std::string>());
            if (auto f = fail.find(arrived.size() - 1); f != fail.end()) {
              failures.push_back({{"index", i}, {"error_code", f->second}, {"message", "no"}});
            }
          }
          res.set_content(nlohmann::json({{"failures", failures}}).dump(), "application/json");
        });
    server_.http().Post(R"(/api/cairn/v1/runs/([0-9a-f]+)/log)",
                        [this](const httplib::Request& req, httplib::Response& res) {
                          std::lock_guard<std::mutex> lock(mu);
                          arrived.push_back(req.matches[1].str() + " log alone");
                          res.set_content(R"({"length":1})", "application/json");
                        });
    server_.http().Post("/api/2.0/mlflow/runs/log-batch", [this](const httplib::Request& req,
                                                                 httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu);
      arrived.push_back(nlohmann::json::parse(req.body)["run_id"].get<std::string>() +
                        " batch alone");
      res.set_content("{}", "application/json");
    });
    server_.http().Post(
        "/api/2.0/mlflow/runs/update", [this](const httplib::Request& req, httplib::Response& res) {
          std::lock_guard<std::mutex> lock(mu);
          arrived.push_back(nlohmann::json::parse(req.body)["run_id"].get<std::string>() +
                            " end alone");
          res.set_content("{}", "application/json");
        });
    server_.Start();
  }

  std::unique_ptr<TrackingClient> Client() {
    ClientOptions options;
    options.tracking_uri = server_.Url("");
    options.retries = 0;
    Result<std::unique_ptr<TrackingClient>> c = TrackingClient::Create(options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  std::mutex mu;
  bool batches = true;
  std::map<size_t, std::string> fail;  // the n-th record to arrive: its error code
  std::vector<std::string> arrived;    // "RUN OP", in order
  std::vector<size_t> batch_sizes;
  fakes::HttpTestServer server_;
};

TEST_F(RunJournalTest, RecordsOfManyRunsGoInOrderInBatchesAndALargeOneAlone) {
  const std::string own = std::string(32, 'a'), step = std::string(32, 'b');
  RecordsServer server;
  std::unique_ptr<TrackingClient> client = server.Client();
  ASSERT_NE(client, nullptr);
  auto j = RunJournal::Open(dir_, own);
  ASSERT_TRUE(j.ok());
  RunJournal::Records other = (*j)->ForRun(step);
  EXPECT_EQ(other.run_id(), step);
  ASSERT_TRUE((*j)->AppendCreate("exp", "pipeline", 1, {}).ok());
  ASSERT_TRUE(other.AppendCreate("exp", "step", 1, {{"k", "v"}}, /*scheduled=*/true).ok());
  ASSERT_TRUE(other.AppendStart(2).ok());
  ASSERT_TRUE(other.AppendArtifact("", "cairn/outputs.json", "[]").ok());
  ASSERT_TRUE(
      other.AppendLog({{0, core::ConsoleStream::kStdout, 1, std::string(2 << 20, 'x')}}).ok());
  ASSERT_TRUE(other.AppendEnd(core::RunStatus::kFinished, 3).ok());
  ASSERT_TRUE((*j)->AppendEnd(core::RunStatus::kFinished, 4).ok());
  EXPECT_TRUE((*j)->complete() == false && (*j)->pending() == 7u);
  ASSERT_TRUE((*j)->Deliver(*client).ok());
  EXPECT_TRUE((*j)->complete()) << "the step's end does not end the journal's own run early";
  EXPECT_EQ(server.arrived,
            (std::vector<std::string>{own + " create", step + " create", step + " start",
                                      step + " artifact", step + " log alone", step + " end",
                                      own + " end"}));
  EXPECT_EQ(server.batch_sizes, (std::vector<size_t>{4, 2}));
  EXPECT_EQ((*j)->acknowledged(), 7u);
}

TEST_F(RunJournalTest, ARecordRefusedForGoodIsSkippedAndOneToRetryStopsTheDelivery) {
  const std::string own = std::string(32, 'c');
  RecordsServer server;
  server.fail = {{1, "INVALID_PARAMETER_VALUE"}, {3, "INTERNAL_ERROR"}};
  std::unique_ptr<TrackingClient> client = server.Client();
  ASSERT_NE(client, nullptr);
  auto j = RunJournal::Open(dir_, own);
  ASSERT_TRUE(j.ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE((*j)->AppendBatch({}, {}, {{"k", "v"}}).ok());
  ASSERT_TRUE((*j)->AppendEnd(core::RunStatus::kFinished, 4).ok());
  Status s = (*j)->Deliver(*client);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ((*j)->acknowledged(), 3u) << "up to the record the server could not take";
  EXPECT_EQ((*j)->pending(), 2u);
  server.fail.clear();
  ASSERT_TRUE((*j)->Deliver(*client).ok());
  EXPECT_TRUE((*j)->complete());
  EXPECT_EQ(server.arrived.size(), 7u) << "the two after the failure were sent again";
}

TEST_F(RunJournalTest, AServerWithoutBatchesGetsRecordsOneByOne) {
  const std::string own = std::string(32, 'd');
  RecordsServer server;
  server.batches = false;
  std::unique_ptr<TrackingClient> client = server.Client();
  ASSERT_NE(client, nullptr);
  auto j = RunJournal::Open(dir_, own);
  ASSERT_TRUE(j.ok());
  ASSERT_TRUE((*j)->ForRun(std::string(32, 'e')).AppendBatch({}, {}, {{"k", "v"}}).ok());
  ASSERT_TRUE((*j)->AppendEnd(core::RunStatus::kFinished, 4).ok());
  ASSERT_TRUE((*j)->Deliver(*client).ok());
  EXPECT_TRUE((*j)->complete());
  EXPECT_EQ(server.arrived,
            (std::vector<std::string>{std::string(32, 'e') + " batch alone", own + " end alone"}));
}

}  // namespace
}  // namespace cairn::client
