#include "service/backup.h"

#include <gtest/gtest.h>

#include "blob/memory/memory_store.h"
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
