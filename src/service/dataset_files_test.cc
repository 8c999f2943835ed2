#include "service/dataset_files.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "blob/memory/memory_store.h"
#include "util/hash.h"

namespace cairn::service {
namespace {

TEST(DatasetFilesTest, PathsOfManifestsAndFilesAreTold) {
  const std::string d = Sha256Hex("m");
  auto m = DatasetManifestOf("datasets/mnist/" + d + ".json");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->name, "mnist");
  EXPECT_EQ(m->digest, d);
  for (const std::string& not_manifest :
       std::vector<std::string>{"datasets/mnist/" + d, "datasets/mnist/x.json",
                                "datasets/" + d + ".json", "datasets/mnist/sub/" + d + ".json",
                                "runs/mnist/" + d + ".json", std::string("datasets")}) {
    EXPECT_FALSE(DatasetManifestOf(not_manifest).has_value()) << not_manifest;
  }
  const std::string path = "datasets/mnist/" + d + "/train/a.csv";  // the parts view into it
  auto f = DatasetFileOf(path);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->name, "mnist");
  EXPECT_EQ(f->digest, d);
  EXPECT_EQ(f->file, "train/a.csv");
  const std::string dir = "datasets/mnist/" + d;
  auto top = DatasetFileOf(dir);
  ASSERT_TRUE(top.has_value());
  EXPECT_EQ(top->file, "");
  for (const std::string& not_file : std::vector<std::string>{
           "datasets/mnist/" + d + ".json", "datasets/mnist/abc/x", "datasets/mnist",
           "datasetsX/mnist/" + d + "/x", "datasets//" + d + "/x"}) {
    EXPECT_FALSE(DatasetFileOf(not_file).has_value()) << not_file;
  }
}

TEST(DatasetFilesTest, FindsAFileInASortedManifest) {
  const std::string a(64, 'a');
  const std::vector<core::FileEntry> files = {
      {"a", 1, core::kModeFile, a}, {"b/c", 2, core::kModeFile, a}, {"d", 3, core::kModeFile, a}};
  ASSERT_NE(FindManifestFile(files, "b/c"), nullptr);
  EXPECT_EQ(FindManifestFile(files, "b/c")->size, 2);
  EXPECT_EQ(FindManifestFile(files, "b"), nullptr);
  EXPECT_EQ(FindManifestFile(files, "e"), nullptr);
  EXPECT_EQ(FindManifestFile({}, "a"), nullptr);
}

class ManifestCacheTest : public ::testing::Test {
 protected:
  std::string PutManifest(int files) {
    std::vector<core::FileEntry> entries;
    for (int i = 0; i < files; ++i) {
      entries.push_back({"f" + std::to_string(1000 + i), i, core::kModeFile, Sha256Hex("x")});
    }
    return blob::PutBytes(*blobs_, core::ManifestJson(entries)).value().digest;
  }
  std::unique_ptr<blob::ContentStore> blobs_ = blob::NewMemoryContentStore();
  ManifestCache cache_;
};

TEST_F(ManifestCacheTest, AManifestIsReadOnceAndSharedByRequestsAtOnce) {
  const std::string m = PutManifest(3);
  std::vector<ManifestCache::Files> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] { got[i] = cache_.Get(*blobs_, m).value(); });
  }
  for (std::thread& t : threads) t.join();
  for (const ManifestCache::Files& f : got) {
    EXPECT_EQ(f, got[0]) << "one read, one parsed copy";
  }
  EXPECT_EQ(got[0]->size(), 3u);
  EXPECT_EQ(cache_.Get(*blobs_, m).value(), got[0]);
}

TEST_F(ManifestCacheTest, AFailedReadIsNotKept) {
  std::vector<core::FileEntry> entries = {{"a", 1, core::kModeFile, Sha256Hex("x")}};
  const std::string text = core::ManifestJson(entries);
  const std::string digest = Sha256Hex(text);
  EXPECT_EQ(cache_.Get(*blobs_, digest).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(blob::PutBytes(*blobs_, text).ok());
  auto files = cache_.Get(*blobs_, digest);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ((*files)->size(), 1u);
  const std::string not_manifest = blob::PutBytes(*blobs_, "[]").value().digest;
  EXPECT_EQ(cache_.Get(*blobs_, not_manifest).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ManifestCacheTest, TheLeastRecentlyUsedGoFirst) {
  std::vector<std::string> digests;
  for (int i = 1; i <= 17; ++i) digests.push_back(PutManifest(i));
  const ManifestCache::Files first = cache_.Get(*blobs_, digests[0]).value();
  const ManifestCache::Files second = cache_.Get(*blobs_, digests[1]).value();
  for (size_t i = 2; i < digests.size(); ++i) {
    ASSERT_TRUE(cache_.Get(*blobs_, digests[i]).ok());
    if (i == 8) {
      EXPECT_EQ(cache_.Get(*blobs_, digests[1]).value(), second);  // used again
    }
  }
  // Seventeen read, sixteen kept: the first went; the second, used since, stayed.
  EXPECT_EQ(cache_.Get(*blobs_, digests[1]).value(), second);
  EXPECT_NE(cache_.Get(*blobs_, digests[0]).value(), first);
}

}  // namespace
}  // namespace cairn::service
