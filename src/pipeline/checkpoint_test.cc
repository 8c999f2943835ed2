#include "pipeline/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "fakes/shell.h"
#include "fakes/temp_dir.h"
#include "pipeline/cache_gc.h"
#include "util/clock.h"
#include "util/hash.h"

namespace cairn::pipeline {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class CheckpointTest : public ::testing::Test {
 protected:
  CheckpointTest() : dir_("checkpoint"), cache_((dir_ / "cache").string(), nullptr) {
    fs::create_directories(dir_ / "run");
  }
  CheckpointStore Store() { return CheckpointStore((dir_ / "run").string(), &cache_); }
  std::string Work() const { return (dir_ / "work" / "ckpt").string(); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((fs::path(Work()) / rel).parent_path());
    std::ofstream(fs::path(Work()) / rel, std::ios::trunc) << text;
  }
  // Makes a file look written `ms` ago.
  void Age(const std::string& rel, int64_t ms) {
    const fs::path p = fs::path(Work()) / rel;
    fs::last_write_time(p, fs::last_write_time(p) - std::chrono::milliseconds(ms));
  }

  fakes::TempDir dir_;
  StepCache cache_;
};

TEST_F(CheckpointTest, ARestoredCheckpointIsTheDirectoryAsSavedWhateverCameAfter) {
  CheckpointStore store = Store();
  Write("epoch", "3");
  Write("weights/layer1.bin", "w3");
  Age("epoch", 5000);
  Age("weights/layer1.bin", 5000);
  ASSERT_EQ(*store.Save("train", Work(), /*settle_ms=*/100), 2u);
  // The step goes on, overwriting a file in place and adding another, then dies.
  std::ofstream(fs::path(Work()) / "weights/layer1.bin", std::ios::trunc) << "w4-partial";
  Write("junk.tmp", "x");
  Result<std::optional<size_t>> restored = store.Restore("train", Work());
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ(**restored, 2u);
  EXPECT_EQ(fakes::Slurp(fs::path(Work()) / "epoch"), "3");
  EXPECT_EQ(fakes::Slurp(fs::path(Work()) / "weights/layer1.bin"), "w3")
      << "writing into the step's file in place did not reach the stored copy";
  EXPECT_FALSE(fs::exists(fs::path(Work()) / "junk.tmp"));
  // Restored files are the step's to write into.
  std::ofstream(fs::path(Work()) / "epoch", std::ios::trunc) << "4";
  EXPECT_EQ(fakes::Slurp(fs::path(Work()) / "epoch"), "4");
}

TEST_F(CheckpointTest, AFileStillBeingWrittenKeepsItsEarlierCopy) {
  CheckpointStore store = Store();
  Write("epoch", "1");
  Age("epoch", 5000);
  ASSERT_TRUE(store.Save("train", Work(), 1000).ok());
  Write("epoch", "2");  // just written: not settled
  Write("new.bin", "n");
  ASSERT_EQ(*store.Save("train", Work(), 1000), 1u) << "the new file waits too";
  Result<std::optional<std::vector<CheckpointFile>>> saved = store.Load("train");
  ASSERT_TRUE(saved.ok() && saved->has_value());
  ASSERT_EQ((*saved)->size(), 1u);
  EXPECT_EQ((*saved)->front().entry.path, "epoch");
  // At the attempt's end every file counts as it is.
  ASSERT_EQ(*store.Save("train", Work(), 0), 2u);
  ASSERT_TRUE(store.Restore("train", Work()).ok());
  EXPECT_EQ(fakes::Slurp(fs::path(Work()) / "epoch"), "2");
  EXPECT_EQ(fakes::Slurp(fs::path(Work()) / "new.bin"), "n");
}

TEST_F(CheckpointTest, WithoutACheckpointTheDirectoryStartsEmpty) {
  CheckpointStore store = Store();
  Write("left-over", "from another run");
  Result<std::optional<size_t>> restored = store.Restore("train", Work());
  ASSERT_TRUE(restored.ok());
  EXPECT_FALSE(restored->has_value());
  EXPECT_TRUE(fs::is_directory(Work()));
  EXPECT_TRUE(fs::is_empty(Work()));
  EXPECT_EQ(*store.Save("other", (dir_ / "missing").string(), 0), 0u) << "an empty checkpoint";
}

TEST_F(CheckpointTest, AnUnchangedFileIsNotCopiedAgainAndTheExecutableBitIsKept) {
  CheckpointStore store = Store();
  Write("run.sh", "#!/bin/sh\n");
  fs::permissions(fs::path(Work()) / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
  ASSERT_TRUE(store.Save("s", Work(), 0).ok());
  const std::string object = cache_.ObjectPath(Sha256Hex("#!/bin/sh\n"), /*executable=*/true);
  ASSERT_TRUE(fs::exists(object));
  fs::remove(object);  // were it copied again, it would come back
  ASSERT_TRUE(store.Save("s", Work(), 0).ok());
  EXPECT_FALSE(fs::exists(object)) << "unchanged since the last save: not copied";
  Write("run.sh", "#!/bin/sh\necho 2\n");
  fs::permissions(fs::path(Work()) / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
  ASSERT_TRUE(store.Save("s", Work(), 0).ok());
  ASSERT_TRUE(store.Restore("s", Work()).ok());
  EXPECT_TRUE((fs::status(fs::path(Work()) / "run.sh").permissions() & fs::perms::owner_exec) !=
              fs::perms::none);
  EXPECT_EQ(fakes::Slurp(fs::path(Work()) / "run.sh"), "#!/bin/sh\necho 2\n");
}

TEST_F(CheckpointTest, TheCachesCollectionKeepsACheckpointAsItKeepsOutputs) {
  CheckpointStore store = Store();
  Write("epoch", "7");
  Write("tools/run.sh", "#!/bin/sh\n");
  fs::permissions(fs::path(Work()) / "tools/run.sh", fs::perms::owner_exec, fs::perm_options::add);
  ASSERT_TRUE(store.Save("train", Work(), 0).ok());
  Write("epoch", "8");  // the copy of "7" is still named by the checkpoint
  CacheGcOptions gc;
  gc.grace_ms = 0;
  Result<CacheGcReport> kept = CollectStepCache(cache_.root(), gc);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->entries_kept, 1);
  EXPECT_EQ(kept->objects_removed, 0);
  ASSERT_TRUE(store.Restore("train", Work()).ok());
  EXPECT_EQ(fakes::Slurp(fs::path(Work()) / "epoch"), "7");
  EXPECT_EQ(fakes::Slurp(fs::path(Work()) / "tools/run.sh"), "#!/bin/sh\n");
  // An old checkpoint goes as an old entry does.
  gc.now_ms = SystemClock()->NowMillis() + 40LL * 24 * 3600 * 1000;
  Result<CacheGcReport> old = CollectStepCache(cache_.root(), gc);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->entries_removed, 1);
  EXPECT_EQ(old->objects_removed, 3) << "its two files and its manifest";
}

TEST_F(CheckpointTest, AManifestNamingAPathOutsideIsRefused) {
  fs::create_directories(dir_ / "run" / "checkpoints");
  std::ofstream(dir_ / "run" / "checkpoints" / "s.json")
      << R"({"files": [{"path": "../../escape", "size": 1, "mode": 33188, "sha256": ")"
      << std::string(64, 'a') << R"("}]})";
  CheckpointStore store = Store();
  Result<std::optional<size_t>> restored = store.Restore("s", Work());
  ASSERT_FALSE(restored.ok());
  EXPECT_THAT(restored.status().message(), HasSubstr("names a file it may not"));
  EXPECT_FALSE(fs::exists(dir_ / "escape"));
}

}  // namespace
}  // namespace cairn::pipeline
