#include "pipeline/cache_gc.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "pipeline/step_cache.h"
#include "util/clock.h"
#include "util/file.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

constexpr int64_t kDay = 24LL * 3600 * 1000;

class CacheGcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("cairn-cache-gc-" + std::to_string(getpid()));
    fs::remove_all(root_);
    work_ = (root_ / "work").string();
    fs::create_directories(work_);
  }
  void TearDown() override {
    for (auto& e : fs::recursive_directory_iterator(root_)) chmod(e.path().c_str(), 0755);
    fs::remove_all(root_);
  }
  std::string cache_dir() const { return (root_ / "cache").string(); }

  // Stores a step whose outputs are `files` (path -> content) and dates its entry's last use
  // `age_days` before `now_`.
  std::string StoreStep(const std::string& step, const std::map<std::string, std::string>& files,
                        int64_t age_days) {
    std::vector<std::string> outputs;
    for (const auto& [path, text] : files) {
      fs::create_directories((fs::path(work_) / path).parent_path());
      fs::remove(fs::path(work_) / path);
      EXPECT_TRUE(WriteFileAtomic(fs::path(work_) / path, text).ok());
      outputs.push_back(path.substr(0, path.find('/')));
    }
    std::sort(outputs.begin(), outputs.end());
    outputs.erase(std::unique(outputs.begin(), outputs.end()), outputs.end());
    KeyParts parts;
    parts.definition = R"({"command":")" + step + R"("})";
    parts.env = "none";
    {
      StepCache cache(cache_dir(), nullptr);
      CacheEntry meta;
      meta.step = step;
      meta.pipeline_run = "run-" + step;
      EXPECT_TRUE(cache.Store(work_, parts.Key(), parts, outputs, meta).ok());
    }
    const std::string key = parts.Key();
    const std::string entry = cache_dir() + "/steps/" + key.substr(0, 2) + "/" + key + ".json";
    const int64_t when = now_ - age_days * kDay;
    struct timespec times[2] = {{when / 1000, 0}, {when / 1000, 0}};
    EXPECT_EQ(utimensat(AT_FDCWD, entry.c_str(), times, 0), 0);
    for (const auto& [path, text] : files) fs::remove_all(fs::path(work_) / path);
    return key;
  }
  bool Cached(const std::string& key) {
    StepCache cache(cache_dir(), nullptr);
    Result<std::optional<CacheEntry>> hit = cache.Lookup(key);
    return hit.ok() && hit->has_value();
  }
  int64_t ObjectCount() {
    int64_t n = 0;
    for (auto& e : fs::recursive_directory_iterator(cache_dir() + "/objects")) {
      n += e.is_regular_file() ? 1 : 0;
    }
    return n;
  }
  CacheGcOptions Options() {
    CacheGcOptions options;
    options.now_ms = now_;
    return options;
  }

  fs::path root_;
  std::string work_;
  // Far enough ahead that every object is past its grace window.
  int64_t now_ = SystemClock()->NowMillis() + 100 * kDay;
};

TEST_F(CacheGcTest, RemovesEntriesUnusedForTooLongAndTheObjectsOnlyTheyName) {
  const std::string old_key =
      StoreStep("old", {{"model.pt", std::string(1000, 'o')}, {"shared.txt", "same"}}, 40);
  const std::string new_key =
      StoreStep("new", {{"data/a.csv", std::string(500, 'n')}, {"shared.txt", "same"}}, 2);
  ASSERT_EQ(ObjectCount(), 4);  // model.pt, shared.txt, a.csv, data's manifest

  std::vector<std::string> seen;
  CacheGcOptions dry = Options();
  dry.dry_run = true;
  dry.on_remove = [&](const std::string& step, const std::string& run, int64_t last_used) {
    seen.push_back(step + " " + run + " " + std::to_string((now_ - last_used) / kDay));
  };
  Result<CacheGcReport> report = CollectStepCache(cache_dir(), dry);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_THAT(seen, ElementsAre("old run-old 40"));
  EXPECT_EQ(report->entries_removed, 1);
  EXPECT_EQ(report->entries_kept, 1);
  EXPECT_EQ(report->objects_removed, 1);
  EXPECT_EQ(report->bytes_freed, 1000);
  EXPECT_TRUE(Cached(old_key)) << "a dry run removes nothing";
  EXPECT_EQ(ObjectCount(), 4);

  report = CollectStepCache(cache_dir(), Options());
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->objects_removed, 1);
  EXPECT_EQ(report->bytes_freed, 1000);
  EXPECT_FALSE(Cached(old_key));
  EXPECT_TRUE(Cached(new_key)) << "the shared file and the directory's objects stay";
  EXPECT_EQ(ObjectCount(), 3);

  // Nothing more to do (the lookups above used the entry today).
  CacheGcOptions tomorrow = Options();
  tomorrow.now_ms = SystemClock()->NowMillis() + kDay;
  report = CollectStepCache(cache_dir(), tomorrow);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entries_removed, 0);
  EXPECT_EQ(report->objects_removed, 0);
}

TEST_F(CacheGcTest, ASizeLimitRemovesTheLeastRecentlyUsedFirst) {
  const std::string a = StoreStep("a", {{"a.bin", std::string(1000, 'a')}}, 3);
  const std::string b = StoreStep("b", {{"b.bin", std::string(1000, 'b')}}, 1);
  const std::string c = StoreStep("c", {{"c.bin", std::string(1000, 'c')}}, 2);
  CacheGcOptions options = Options();
  options.max_bytes = 2500;
  Result<CacheGcReport> report = CollectStepCache(cache_dir(), options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->entries_removed, 1);
  EXPECT_EQ(report->bytes_kept, 2000);
  EXPECT_FALSE(Cached(a));
  EXPECT_TRUE(Cached(b));
  EXPECT_TRUE(Cached(c));
}

TEST_F(CacheGcTest, ALookupCountsAsUse) {
  const std::string key = StoreStep("s", {{"out.txt", "x"}}, 40);
  // Found by a run today (the clock's today, which `now_` is 100 days after).
  ASSERT_TRUE(Cached(key));
  CacheGcOptions options = Options();
  options.now_ms = SystemClock()->NowMillis() + 2 * 3600 * 1000;
  Result<CacheGcReport> report = CollectStepCache(cache_dir(), options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entries_removed, 0);
  EXPECT_TRUE(Cached(key));
}

TEST_F(CacheGcTest, RemovesTornEntriesAndStaleTemporariesButNotWhatIsInFlight) {
  const std::string torn = StoreStep("torn", {{"gone.txt", "gone"}}, 1);
  const std::string whole = StoreStep("whole", {{"kept.txt", "kept"}}, 1);
  // Someone removed an object by hand: the entry can only miss.
  for (auto& e : fs::recursive_directory_iterator(cache_dir() + "/objects")) {
    Result<std::string> text = e.is_regular_file() ? ReadFile(e.path()) : Result<std::string>("");
    if (text.ok() && *text == "gone") {
      chmod(e.path().parent_path().c_str(), 0755);
      fs::remove(e.path());
    }
  }
  fs::create_directories(cache_dir() + "/objects/ab");
  ASSERT_TRUE(WriteFileAtomic(cache_dir() + "/objects/ab/cdef.tmpdead", "partial").ok());
  CacheGcOptions options = Options();
  Result<CacheGcReport> report = CollectStepCache(cache_dir(), options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->entries_removed, 1);
  EXPECT_FALSE(fs::exists(cache_dir() + "/steps/" + torn.substr(0, 2) + "/" + torn + ".json"));
  EXPECT_FALSE(fs::exists(cache_dir() + "/objects/ab/cdef.tmpdead"));
  EXPECT_TRUE(Cached(whole));

  // Objects entered within the grace window stay even when no entry names them yet: a runner
  // stores a step's objects before its entry.
  StoreStep("fresh", {{"fresh.txt", "fresh"}}, 200);
  options.now_ms = SystemClock()->NowMillis();
  const int64_t before = ObjectCount();
  report = CollectStepCache(cache_dir(), options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->entries_removed, 1) << "its entry is old";
  EXPECT_EQ(report->objects_removed, 0);
  EXPECT_EQ(ObjectCount(), before);
}

}  // namespace
}  // namespace cairn::pipeline
