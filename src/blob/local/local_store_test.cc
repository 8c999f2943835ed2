// What the local content store does beyond the ContentStore contract: where it keeps a blob,
// and how it treats blobs kept as files by a store from before small blobs had a database.
#include "blob/local/local_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "util/hash.h"

namespace cairn::blob {
namespace {

namespace fs = std::filesystem;

class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cairn-local-" + RandomHex(8));
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  void Reopen() {
    store_.reset();
    auto opened = OpenLocalContentStore(dir_.string());
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(opened).value();
  }
  fs::path FileOf(const std::string& digest) const {
    return dir_ / digest.substr(0, 2) / digest.substr(2);
  }
  std::map<std::string, int64_t> Modified() {
    std::map<std::string, int64_t> out;
    EXPECT_TRUE(store_
                    ->ForEach([&](const BlobInfo& b) {
                      EXPECT_EQ(out.count(b.digest), 0u) << "listed twice: " << b.digest;
                      out[b.digest] = b.modified_ms;
                      return Status::Ok();
                    })
                    .ok());
    return out;
  }

  fs::path dir_;
  std::unique_ptr<ContentStore> store_;
};

TEST_F(LocalStoreTest, SmallBlobsAreRowsAndLargerOnesFiles) {
  auto small = PutBytes(*store_, std::string(64 << 10, 's'));
  auto large = PutBytes(*store_, std::string((64 << 10) + 1, 'l'));
  ASSERT_TRUE(small.ok() && large.ok());
  EXPECT_FALSE(fs::exists(FileOf(small->digest)));
  EXPECT_TRUE(fs::exists(dir_ / "small.db"));
  EXPECT_EQ(fs::file_size(FileOf(large->digest)), static_cast<uintmax_t>((64 << 10) + 1));
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
  // Both outlive the process that wrote them.
  Reopen();
  EXPECT_EQ(ReadAllBytes(*store_, small->digest)->size(), size_t{64 << 10});
  EXPECT_EQ(ReadAllBytes(*store_, large->digest)->size(), size_t{(64 << 10) + 1});
}

TEST_F(LocalStoreTest, ALargeWriteLeftUnfinishedLeavesNothing) {
  // Past the size where the rest is staged and written beside: a writer dropped while a stage
  // may still be on its way to the disk removes its file, and the store holds nothing.
  {
    auto w = store_->NewWriter();
    ASSERT_TRUE(w.ok());
    const std::string piece(3 << 20, 'p');
    for (int i = 0; i < 6; ++i) ASSERT_TRUE((*w)->Write(piece).ok());
  }
  EXPECT_TRUE(fs::is_empty(dir_ / "tmp"));
  int64_t blobs = 0;
  ASSERT_TRUE(store_
                  ->ForEach([&](const BlobInfo&) {
                    ++blobs;
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(blobs, 0);
}

TEST_F(LocalStoreTest, WritingASmallBlobAgainRenewsItsTime) {
  auto first = PutBytes(*store_, "again");
  ASSERT_TRUE(first.ok());
  const int64_t before = Modified().at(first->digest);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(PutBytes(*store_, "again").ok());
  const auto after = Modified();
  EXPECT_EQ(after.size(), 1u);
  EXPECT_GT(after.at(first->digest), before);
}

TEST_F(LocalStoreTest, ASmallBlobKeptAsAFileStaysTheOneCopy) {
  const std::string bytes = "written before small blobs had a database";
  const std::string digest = Sha256Hex(bytes);
  fs::create_directories(FileOf(digest).parent_path());
  std::ofstream(FileOf(digest), std::ios::binary) << bytes;
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(FileOf(digest), old);

  EXPECT_EQ(*ReadAllBytes(*store_, digest), bytes);
  auto again = PutBytes(*store_, bytes);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->digest, digest);
  EXPECT_GT(fs::last_write_time(FileOf(digest)), old) << "its time is renewed";
  EXPECT_EQ(Modified().size(), 1u) << "and it is not copied into the database";
  ASSERT_TRUE(store_->DeleteMany({digest}).ok());
  EXPECT_FALSE(fs::exists(FileOf(digest)));
  EXPECT_FALSE(*store_->Has(digest));
}

// Writers on several threads are committed together; every one of them is kept.
TEST_F(LocalStoreTest, SmallBlobsWrittenAtOnceAreAllKept) {
  constexpr int kThreads = 8, kEach = 150;
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        if (!PutBytes(*store_, "blob " + std::to_string(t) + "/" + std::to_string(i)).ok()) {
          ++failed;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  Reopen();
  EXPECT_EQ(Modified().size(), static_cast<size_t>(kThreads * kEach));
  for (int t = 0; t < kThreads; ++t) {
    const std::string bytes = "blob " + std::to_string(t) + "/" + std::to_string(kEach - 1);
    EXPECT_EQ(*ReadAllBytes(*store_, Sha256Hex(bytes)), bytes);
  }
}

// A listing runs in pages with nothing held between them, so the visitor may remove blobs.
TEST_F(LocalStoreTest, AListingMayRemoveWhatItVisits) {
  std::set<std::string> put;
  for (int i = 0; i < 5000; ++i) put.insert(PutBytes(*store_, "n" + std::to_string(i))->digest);
  std::set<std::string> seen;
  ASSERT_TRUE(store_
                  ->ForEach([&](const BlobInfo& b) {
                    seen.insert(b.digest);
                    return store_->Delete(b.digest);
                  })
                  .ok());
  EXPECT_EQ(seen, put);
  EXPECT_TRUE(Modified().empty());
}

// Runs `sql` on the store's database from a connection of its own.
void OnDatabase(const fs::path& dir, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "small.db").c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// A write the database refuses fails, alone; the writes after it go in.
TEST_F(LocalStoreTest, ARefusedWriteFailsAndTheNextOnesGoIn) {
  const std::string refused = Sha256Hex("refused");
  OnDatabase(dir_, "CREATE TRIGGER refuse BEFORE INSERT ON blobs WHEN NEW.digest = '" + refused +
                       "' BEGIN SELECT RAISE(ABORT, 'no'); END");
  EXPECT_FALSE(PutBytes(*store_, "refused").ok());
  EXPECT_FALSE(*store_->Has(refused));
  auto next = PutBytes(*store_, "accepted");
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(*ReadAllBytes(*store_, next->digest), "accepted");
  // The bytes' table refusing every row: the write fails rather than trying numbers forever.
  OnDatabase(dir_,
             "CREATE TRIGGER refuse_bytes BEFORE INSERT ON contents "
             "BEGIN SELECT RAISE(ABORT, 'no'); END");
  EXPECT_FALSE(PutBytes(*store_, "no room").ok());
  OnDatabase(dir_, "DROP TRIGGER refuse_bytes");
  EXPECT_TRUE(PutBytes(*store_, "room again").ok());
}

// Writing bytes again puts them back: a damaged row is mended, as a file written again would
// be replaced.
TEST_F(LocalStoreTest, WritingASmallBlobAgainMendsItsRow) {
  auto info = PutBytes(*store_, "good bytes");
  ASSERT_TRUE(info.ok());
  OnDatabase(dir_, "UPDATE contents SET bytes = x'00'");
  EXPECT_NE(*ReadAllBytes(*store_, info->digest), "good bytes");
  ASSERT_TRUE(PutBytes(*store_, "good bytes").ok());
  EXPECT_EQ(*ReadAllBytes(*store_, info->digest), "good bytes");
}

// A file at a small blob's path that does not hold its bytes gives way to a row.
TEST_F(LocalStoreTest, ADamagedOrLinkedFileGivesWayToARow) {
  for (const bool link : {false, true}) {
    const std::string bytes = link ? "behind a link" : "damaged on disk";
    const std::string digest = Sha256Hex(bytes);
    fs::create_directories(FileOf(digest).parent_path());
    if (link) {
      std::ofstream(dir_ / "elsewhere", std::ios::binary) << bytes;
      fs::create_symlink(dir_ / "elsewhere", FileOf(digest));
    } else {
      std::ofstream(FileOf(digest), std::ios::binary) << std::string(bytes.size(), '?');
    }
    ASSERT_TRUE(PutBytes(*store_, bytes).ok());
    EXPECT_FALSE(fs::exists(fs::symlink_status(FileOf(digest)))) << bytes;
    EXPECT_EQ(*ReadAllBytes(*store_, digest), bytes);
    EXPECT_EQ(Modified().count(digest), 1u);
  }
}

// A digest that is both a row and a file is one blob: listed once, removed whole.
TEST_F(LocalStoreTest, ARowAndAFileOfOneDigestAreOneBlob) {
  auto info = PutBytes(*store_, "twice kept");
  ASSERT_TRUE(info.ok());
  fs::create_directories(FileOf(info->digest).parent_path());
  std::ofstream(FileOf(info->digest), std::ios::binary) << "twice kept";
  EXPECT_EQ(Modified().size(), 1u);
  ASSERT_TRUE(store_->Delete(info->digest).ok());
  EXPECT_FALSE(fs::exists(FileOf(info->digest)));
  EXPECT_FALSE(*store_->Has(info->digest));
  EXPECT_TRUE(Modified().empty());
}

// The row of a blob's bytes is numbered by the digest's first 60 bits; a number already taken
// (two digests sharing them) moves the bytes to the next free one.
TEST_F(LocalStoreTest, BytesWhoseRowNumberIsTakenGoToTheNextOne) {
  const std::string bytes = "a blob whose number is taken";
  const int64_t id = static_cast<int64_t>(std::stoull(Sha256Hex(bytes).substr(0, 15), nullptr, 16));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "small.db").c_str(), &db), SQLITE_OK);
  const std::string squat = "INSERT INTO contents (id, bytes) VALUES (" + std::to_string(id) +
                            ", x'00'), (" + std::to_string(id + 1) + ", x'01')";
  ASSERT_EQ(sqlite3_exec(db, squat.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  auto info = PutBytes(*store_, bytes);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(*ReadAllBytes(*store_, info->digest), bytes);
  ASSERT_EQ(sqlite3_open((dir_ / "small.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT content FROM blobs", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(s, 0), id + 2);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

}  // namespace
}  // namespace cairn::blob
