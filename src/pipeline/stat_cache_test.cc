#include "pipeline/stat_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "fakes/fake_clock.h"
#include "fakes/pattern_bytes.h"
#include "fakes/temp_dir.h"
#include "util/file.h"
#include "util/hash.h"
#include "fakes/files.h"

namespace cairn::pipeline {
namespace {
using fakes::kShaAbc;
using fakes::kShaEmpty;

namespace fs = std::filesystem;


struct stat FakeStat(uint64_t ino, int64_t size, int64_t mtime_nanos, int64_t ctime_nanos) {
  struct stat st {};
  st.st_dev = 42;
  st.st_ino = ino;
  st.st_size = size;
  st.st_mtim = {static_cast<time_t>(mtime_nanos / 1'000'000'000), mtime_nanos % 1'000'000'000};
  st.st_ctim = {static_cast<time_t>(ctime_nanos / 1'000'000'000), ctime_nanos % 1'000'000'000};
  return st;
}

constexpr int64_t kNow = 1'800'000'000'000;  // ms since the epoch
constexpr int64_t kNowNanos = kNow * 1'000'000;
constexpr int64_t kOld = kNowNanos - 3'600'000'000'123;  // an hour ago, fine-grained

TEST(StatCacheTest, AnEntryAnswersOnlyTheExactStat) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  auto cache = StatCache::Open(state / "cache", &clock);
  ASSERT_TRUE(cache.ok());
  StatCache& c = **cache;
  struct stat st = FakeStat(7, 3, kOld, kOld);
  EXPECT_EQ(c.Lookup(st), std::nullopt);
  c.Update(st, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(st), kShaAbc);
  struct stat other = st;
  other.st_size = 4;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  other = st;
  other.st_mtim.tv_nsec += 1;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  other = st;
  other.st_ctim.tv_sec += 1;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  other = st;
  other.st_ino = 8;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  other = st;
  other.st_dev = 43;
  EXPECT_EQ(c.Lookup(other), std::nullopt);
  // A new hash for the same inode replaces the old one.
  struct stat rewritten = FakeStat(7, 3, kOld + 5, kOld + 5);
  c.Update(rewritten, kShaEmpty, kNowNanos);
  EXPECT_EQ(c.Lookup(rewritten), kShaEmpty);
  EXPECT_EQ(c.Lookup(st), std::nullopt);
  EXPECT_EQ(c.size(), 1u);
}

TEST(StatCacheTest, RacyStatsAreNeitherRecordedNorAnswered) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  auto cache = StatCache::Open(state / "cache", &clock);
  ASSERT_TRUE(cache.ok());
  StatCache& c = **cache;
  // Fine timestamps (non-zero nanoseconds): a 100 ms window.
  struct stat recent = FakeStat(1, 3, kNowNanos - 50'000'001, kNowNanos - 50'000'001);
  c.Update(recent, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(recent), std::nullopt);
  struct stat settled = FakeStat(2, 3, kNowNanos - 150'000'001, kNowNanos - 150'000'001);
  c.Update(settled, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(settled), kShaAbc);
  // An old mtime does not help when the inode changed recently (touch -d, tar, cp -p).
  struct stat restored = FakeStat(3, 3, kOld, kNowNanos - 1'000'001);
  c.Update(restored, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(restored), std::nullopt);
  // Whole-second timestamps: the filesystem may be that coarse, so a 2 s window.
  struct stat coarse = FakeStat(4, 3, kNowNanos - 1'000'000'000, kNowNanos - 1'000'000'000);
  c.Update(coarse, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(coarse), std::nullopt);
  struct stat coarse_old = FakeStat(5, 3, kNowNanos - 3'000'000'000, kNowNanos - 3'000'000'000);
  c.Update(coarse_old, kShaAbc, kNowNanos);
  EXPECT_EQ(c.Lookup(coarse_old), kShaAbc);
  // The window is measured from when the stat was taken, not from when Update is called: a
  // stat taken at the file's write, then a long read, is still racy.
  struct stat slow = FakeStat(6, 3, kNowNanos - 10'000'000'000, kNowNanos - 10'000'000'000);
  c.Update(slow, kShaAbc, kNowNanos - 10'000'000'000);
  EXPECT_EQ(c.Lookup(slow), std::nullopt);
  EXPECT_EQ(c.size(), 2u);
}

TEST(StatCacheTest, SaveAndOpenRoundTrip) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  std::string path = state / "sub/dir/cache";
  {
    auto cache = StatCache::Open(path, &clock);
    ASSERT_TRUE(cache.ok());
    EXPECT_EQ((*cache)->size(), 0u);
    for (uint64_t i = 0; i < 1000; ++i) {
      (*cache)->Update(FakeStat(i, static_cast<int64_t>(i), kOld - static_cast<int64_t>(i), kOld),
                       Sha256Hex(std::to_string(i)), kNowNanos);
    }
    ASSERT_TRUE((*cache)->Save().ok());
  }
  auto cache = StatCache::Open(path, &clock);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->size(), 1000u);
  for (uint64_t i = 0; i < 1000; ++i) {
    EXPECT_EQ((*cache)->Lookup(
                  FakeStat(i, static_cast<int64_t>(i), kOld - static_cast<int64_t>(i), kOld)),
              Sha256Hex(std::to_string(i)));
  }
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& e : fs::directory_iterator(state / "sub/dir")) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(StatCacheTest, ACorruptFileIsAnEmptyCache) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  std::string path = state / "cache";
  {
    auto cache = StatCache::Open(path, &clock);
    ASSERT_TRUE(cache.ok());
    (*cache)->Update(FakeStat(1, 3, kOld, kOld), kShaAbc, kNowNanos);
    ASSERT_TRUE((*cache)->Save().ok());
  }
  Result<std::string> good = ReadFile(path);
  ASSERT_TRUE(good.ok());
  std::string flipped = *good;
  flipped[30] ^= 1;  // inside the record: only the checksum can tell
  std::string truncated = good->substr(0, good->size() - 1);
  std::string longer = *good + "x";
  for (const std::string& bytes :
       {std::string("garbage"), std::string(), flipped, truncated, longer, fakes::PatternBytes(100, 1)}) {
    ASSERT_TRUE(WriteFileAtomic(path, bytes).ok());
    auto cache = StatCache::Open(path, &clock);
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    EXPECT_EQ((*cache)->size(), 0u);
    EXPECT_EQ((*cache)->Lookup(FakeStat(1, 3, kOld, kOld)), std::nullopt);
  }
  ASSERT_TRUE(WriteFileAtomic(path, *good).ok());
  auto cache = StatCache::Open(path, &clock);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->Lookup(FakeStat(1, 3, kOld, kOld)), kShaAbc);
  // A path that exists but cannot be read as a file is an error, not an empty cache.
  EXPECT_FALSE(StatCache::Open(state.path(), &clock).ok());
}

TEST(StatCacheTest, SaveDropsUnusedEntriesPastTheBound) {
  fakes::TempDir state;
  fakes::FakeClock clock(kNow);
  std::string path = state / "cache";
  {
    auto cache = StatCache::Open(path, &clock);
    ASSERT_TRUE(cache.ok());
    for (uint64_t i = 0; i < 10; ++i) {
      (*cache)->Update(FakeStat(i, 1, kOld, kOld), kShaAbc, kNowNanos);
    }
    ASSERT_TRUE((*cache)->Save().ok());
  }
  auto cache = StatCache::Open(path, &clock);
  ASSERT_TRUE(cache.ok());
  (*cache)->TEST_SetMaxEntries(5);
  EXPECT_EQ((*cache)->Lookup(FakeStat(0, 1, kOld, kOld)), kShaAbc);
  EXPECT_EQ((*cache)->Lookup(FakeStat(1, 1, kOld, kOld)), kShaAbc);
  (*cache)->Update(FakeStat(100, 1, kOld, kOld), kShaAbc, kNowNanos);
  ASSERT_TRUE((*cache)->Save().ok());
  EXPECT_EQ((*cache)->size(), 3u);
  auto reopened = StatCache::Open(path, &clock);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->size(), 3u);
  EXPECT_EQ((*reopened)->Lookup(FakeStat(1, 1, kOld, kOld)), kShaAbc);
  EXPECT_EQ((*reopened)->Lookup(FakeStat(2, 1, kOld, kOld)), std::nullopt);
  EXPECT_EQ((*reopened)->Lookup(FakeStat(100, 1, kOld, kOld)), kShaAbc);
}

}  // namespace
}  // namespace cairn::pipeline
