#include "service/backup.h"

#include <gtest/gtest.h>

#include "blob/memory/memory_store.h"
#include "core/tree_manifest.h"
#include "store/memory/memory_store.h"

namespace cairn::service {
namespace {

TEST(BackupTest, CopiesTheNamedBlobsTheDestinationLacks) {
  auto meta = store::NewMemoryMetadataStore({});
  auto from = blob::NewMemoryContentStore();
  auto to = blob::NewMemoryContentStore();
  auto a = blob::PutBytes(*from, "aaaa");
  auto b = blob::PutBytes(*from, "bb");
  auto stray = blob::PutBytes(*from, "nobody names me");
  ASSERT_TRUE(a.ok() && b.ok() && stray.ok());
  ASSERT_TRUE(meta->PutArtifact({"1/r/artifacts/a", a->digest, 4}).ok());
  ASSERT_TRUE(meta->PutArtifact({"1/r/artifacts/a-copy", a->digest, 4}).ok());
  ASSERT_TRUE(meta->PutArtifact({"datasets/d/x/b", b->digest, 2}).ok());
  ASSERT_TRUE(blob::PutBytes(*to, "bb").ok());  // an earlier backup's

  auto copy = CopyNamedBlobs(*meta, *from, *to);
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_TRUE(copy->ok());
  EXPECT_EQ(copy->files, 3);
  EXPECT_EQ(copy->blobs, 2);
  EXPECT_EQ(copy->copied, 1);
  EXPECT_EQ(copy->bytes_copied, 4);
  EXPECT_EQ(*blob::ReadAllBytes(*to, a->digest), "aaaa");
  EXPECT_FALSE(*to->Has(stray->digest));

  auto again = CopyNamedBlobs(*meta, *from, *to);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->copied, 0);
}

TEST(BackupTest, ADatasetVersionsFilesAreCopiedWithItsManifest) {
  auto meta = store::NewMemoryMetadataStore({});
  auto from = blob::NewMemoryContentStore();
  auto to = blob::NewMemoryContentStore();
  auto a = blob::PutBytes(*from, "alpha");
  auto b = blob::PutBytes(*from, "beta!");
  auto noted = blob::PutBytes(*from, "noted, in no manifest");
  ASSERT_TRUE(a.ok() && b.ok() && noted.ok());
  const std::string manifest = core::ManifestJson(
      {{"a", 5, core::kModeFile, a->digest}, {"dir/b", 5, core::kModeFile, b->digest}});
  auto m = blob::PutBytes(*from, manifest);
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE(meta->PutArtifact({"datasets/d/" + m->digest + ".json", m->digest, m->size}).ok());
  ASSERT_TRUE(meta->datasets().NoteDataBlobs({a->digest, b->digest, noted->digest}).ok());

  auto copy = CopyNamedBlobs(*meta, *from, *to);
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_TRUE(copy->ok());
  EXPECT_EQ(copy->files, 3);  // the manifest and its two files
  EXPECT_EQ(copy->blobs, 4);
  EXPECT_EQ(copy->copied, 4);
  for (const auto& info : {*a, *b, *noted, *m}) EXPECT_TRUE(*to->Has(info.digest));
}

TEST(BackupTest, ABlobGoneFromTheSourceIsReported) {
  auto meta = store::NewMemoryMetadataStore({});
  auto from = blob::NewMemoryContentStore();
  auto to = blob::NewMemoryContentStore();
  auto a = blob::PutBytes(*from, "gone soon");
  ASSERT_TRUE(meta->PutArtifact({"1/r/artifacts/a", a->digest, 9}).ok());
  ASSERT_TRUE(from->Delete(a->digest).ok());
  auto copy = CopyNamedBlobs(*meta, *from, *to);
  ASSERT_TRUE(copy.ok());
  EXPECT_FALSE(copy->ok());
  EXPECT_EQ(copy->lost, std::vector<std::string>{a->digest});
}

}  // namespace
}  // namespace cairn::service
