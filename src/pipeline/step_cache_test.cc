#include "pipeline/step_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "util/file.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class StepCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("cairn-step-cache-" + std::to_string(getpid()));
    fs::remove_all(root_);
    work_ = (root_ / "work").string();
    fs::create_directories(work_);
  }
  void TearDown() override {
    // Stored objects are read-only.
    for (auto& e : fs::recursive_directory_iterator(root_)) {
      chmod(e.path().c_str(), 0755);
    }
    fs::remove_all(root_);
  }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories((fs::path(work_) / path).parent_path());
    ASSERT_TRUE(WriteFileAtomic(fs::path(work_) / path, text).ok());
  }
  std::string Read(const std::string& path) {
    Result<std::string> r = ReadFile(fs::path(work_) / path);
    return r.ok() ? *r : "<missing>";
  }

  fs::path root_;
  std::string work_;
  std::string cache_dir() const { return (root_ / "cache").string(); }
};

KeyParts Parts(const std::string& command) {
  KeyParts p;
  p.definition = R"({"command":")" + command + R"(","params":{"lr":"0.1"}})";
  p.inputs = {{"raw", std::string(64, 'a')}};
  p.code = {{"git", "abc:def"}};
  p.env = "none";
  return p;
}

TEST_F(StepCacheTest, StoresLooksUpAndRestoresOutputs) {
  StepCache cache(cache_dir(), nullptr);
  Write("model.pt", "weights");
  Write("data/a.csv", "1,2\n");
  Write("data/sub/b.csv", "3,4\n");
  ASSERT_EQ(::chmod((fs::path(work_) / "data/sub/b.csv").c_str(), 0755), 0);
  const KeyParts parts = Parts("train");
  const std::string key = parts.Key();

  Result<std::optional<CacheEntry>> miss = cache.Lookup(key);
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->has_value());

  CacheEntry meta;
  meta.pipeline_run = "run1";
  meta.step = "train";
  Result<CacheEntry> stored = cache.Store(work_, key, parts, {"model.pt", "data"}, meta);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->outputs.size(), 2u);
  EXPECT_FALSE(stored->outputs[0].is_directory);
  EXPECT_TRUE(stored->outputs[1].is_directory);

  Result<std::optional<CacheEntry>> hit = cache.Lookup(key);
  ASSERT_TRUE(hit.ok() && hit->has_value());
  EXPECT_EQ((*hit)->pipeline_run, "run1");
  EXPECT_EQ((*hit)->parts.ToJson(), parts.ToJson());

  // Up to date: nothing to restore.
  Result<int> restored = cache.Restore(work_, **hit);
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(*restored, 0);

  // Gone or changed: restored from the store, as links to it.
  fs::remove_all(fs::path(work_) / "data");
  fs::remove(fs::path(work_) / "model.pt");
  Write("model.pt", "other weights");
  restored = cache.Restore(work_, **hit);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(*restored, 2);
  EXPECT_EQ(Read("model.pt"), "weights");
  EXPECT_EQ(Read("data/a.csv"), "1,2\n");
  EXPECT_EQ(Read("data/sub/b.csv"), "3,4\n");
  struct stat st {};
  ASSERT_EQ(stat((fs::path(work_) / "data/sub/b.csv").c_str(), &st), 0);
  EXPECT_NE(st.st_mode & S_IXUSR, 0u) << "the executable bit survives";
  EXPECT_EQ(st.st_nlink, 2u) << "a hard link to the store, not a copy";
}

TEST_F(StepCacheTest, AnEntryIsSeenAtOnceAndByOthersOnceFlushed) {
  Write("model.pt", "weights");
  const KeyParts parts = Parts("train");
  StepCache writer(cache_dir(), nullptr);
  StepCache other(cache_dir(), nullptr);
  CacheEntry meta;
  meta.step = "train";
  ASSERT_TRUE(writer.Store(work_, parts.Key(), parts, {"model.pt"}, meta).ok());
  // The storing cache sees its entry before writing it; another (another process) after.
  ASSERT_TRUE(writer.Lookup(parts.Key())->has_value());
  EXPECT_FALSE(other.Lookup(parts.Key())->has_value());
  ASSERT_TRUE(writer.Flush().ok());
  Result<std::optional<CacheEntry>> seen = other.Lookup(parts.Key());
  ASSERT_TRUE(seen.ok() && seen->has_value()) << seen.status().ToString();
  EXPECT_EQ((*seen)->step, "train");
  ASSERT_EQ((*seen)->outputs.size(), 1u);
  EXPECT_EQ((*seen)->outputs[0].path, "model.pt");

  // What is still unwritten when the cache goes away is written then.
  const KeyParts eval = Parts("eval");
  {
    StepCache last(cache_dir(), nullptr);
    ASSERT_TRUE(last.Store(work_, eval.Key(), eval, {"model.pt"}, meta).ok());
  }
  EXPECT_TRUE(other.Lookup(eval.Key())->has_value());
}

TEST_F(StepCacheTest, AnUnwritableCacheFailsTheFlushNamingIt) {
  Write("cache", "a file where the cache directory should be");
  const std::string root = (fs::path(work_) / "cache" / "sub").string();
  StepCache cache(root, nullptr);
  const KeyParts parts = Parts("check");
  // A step without outputs puts nothing into the object store: only its entry is written.
  ASSERT_TRUE(cache.Store(work_, parts.Key(), parts, {}, {}).ok());
  Status flushed = cache.Flush();
  EXPECT_FALSE(flushed.ok());
  EXPECT_THAT(flushed.message(), HasSubstr(root));
  EXPECT_TRUE(cache.Flush().ok()) << "a failed entry is dropped, not retried forever";
}

TEST_F(StepCacheTest, AMissingOutputFailsAndAShortObjectIsAMiss) {
  StepCache cache(cache_dir(), nullptr);
  Write("model.pt", "weights");
  const KeyParts parts = Parts("train");
  Result<CacheEntry> missing = cache.Store(work_, parts.Key(), parts, {"model.pt", "nope.txt"}, {});
  EXPECT_EQ(missing.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(), HasSubstr("did not write its output nope.txt"));

  ASSERT_TRUE(cache.Store(work_, parts.Key(), parts, {"model.pt"}, {}).ok());
  ASSERT_TRUE(cache.Lookup(parts.Key())->has_value());
  // The stored object loses bytes (a crash before they reached the disk): a miss, not a
  // wrong restore. The object and the working file are one inode here.
  ASSERT_EQ(::chmod((fs::path(work_) / "model.pt").c_str(), 0644), 0);
  ASSERT_EQ(::truncate((fs::path(work_) / "model.pt").c_str(), 3), 0);
  EXPECT_FALSE(cache.Lookup(parts.Key())->has_value());
}

TEST_F(StepCacheTest, AnOutputThatIsALinkIsStoredByCopyOfWhatItPointsTo) {
  Write("data/source.csv", "1,2\n");
  Write("shared/a.txt", "a");
  const fs::path work(work_);
  fs::create_symlink("data/source.csv", work / "latest.csv");
  fs::create_symlink(work / "shared", work / "view");
  StepCache cache(cache_dir(), nullptr);
  const KeyParts parts = Parts("link");
  ASSERT_TRUE(cache.Store(work_, parts.Key(), parts, {"latest.csv", "view"}, {}).ok());
  // What the links point to is the user's: still writable, not linked into the store.
  for (const char* path : {"data/source.csv", "shared/a.txt"}) {
    struct stat st {};
    ASSERT_EQ(::stat((work / path).c_str(), &st), 0);
    EXPECT_NE(st.st_mode & S_IWUSR, 0u) << path;
    EXPECT_EQ(st.st_nlink, 1u) << path;
  }
  // The store holds the content: changing the source does not change the cached output.
  Write("data/source.csv", "9,9\n");
  fs::remove(work / "latest.csv");
  fs::remove(work / "view");
  Result<std::optional<CacheEntry>> hit = cache.Lookup(parts.Key());
  ASSERT_TRUE(hit.ok() && hit->has_value());
  ASSERT_TRUE(cache.Restore(work_, **hit).ok());
  EXPECT_EQ(Read("latest.csv"), "1,2\n");
  EXPECT_EQ(Read("view/a.txt"), "a");
}

TEST_F(StepCacheTest, RemoveOutputs) {
  Write("out/a.txt", "a");
  Write("b.txt", "b");
  ASSERT_TRUE(StepCache::RemoveOutputs(work_, {"out", "b.txt", "never-there"}).ok());
  EXPECT_FALSE(fs::exists(fs::path(work_) / "out"));
  EXPECT_FALSE(fs::exists(fs::path(work_) / "b.txt"));
}

TEST(KeyPartsTest, TheKeyCoversEveryPartAndExplainNamesWhatChanged) {
  KeyParts a = Parts("python train.py");
  EXPECT_EQ(a.Key(), Parts("python train.py").Key());
  KeyParts b = a;
  b.definition = R"({"command":"python train.py","params":{"lr":"0.5"}})";
  b.inputs["raw"] = std::string(64, 'b');
  b.inputs["extra.csv"] = std::string(64, 'c');
  b.code["git"] = "abc:xyz";
  b.env = std::string(64, 'e');
  EXPECT_NE(a.Key(), b.Key());
  EXPECT_THAT(ExplainChanges(a, b), ElementsAre(R"(params changed: {"lr":"0.1"} -> {"lr":"0.5"})",
                                                "input extra.csv is new",
                                                "input raw changed (aaaaaaaaaaaa -> bbbbbbbbbbbb)",
                                                "code git changed (abc:def -> abc:xyz)",
                                                "environment changed (none -> eeeeeeeeeeee)"));
  EXPECT_THAT(ExplainChanges(a, a), IsEmpty());
  Result<KeyParts> round = KeyParts::FromJson(b.ToJson());
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->Key(), b.Key());
  KeyParts definition = a, inputs = a, code = a, env = a;
  definition.definition += " ";
  inputs.inputs.clear();
  code.code.clear();
  env.env = "other";
  for (const KeyParts* changed : {&definition, &inputs, &code, &env}) {
    EXPECT_NE(changed->Key(), a.Key());
  }
}

}  // namespace
}  // namespace cairn::pipeline
