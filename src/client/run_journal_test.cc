#include "client/run_journal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

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

}  // namespace
}  // namespace cairn::client
