#include "service/artifact_service.h"

#include <gtest/gtest.h>

#include <map>

#include "blob/memory/memory_store.h"
#include "store/memory/memory_store.h"
#include "util/hash.h"

namespace cairn::service {
namespace {

TEST(ArtifactPathTest, AcceptsPlainRelativePaths) {
  EXPECT_EQ(*NormalizeArtifactPath("1/abc/artifacts/model/w.bin", false),
            "1/abc/artifacts/model/w.bin");
  EXPECT_EQ(*NormalizeArtifactPath("dir/", false), "dir");
  EXPECT_EQ(*NormalizeArtifactPath("", true), "");
  EXPECT_EQ(*NormalizeArtifactPath("name with spaces/..hidden", false),
            "name with spaces/..hidden");
}

TEST(ArtifactPathTest, RejectsEveryEscape) {
  const char* corpus[] = {"..",          "../x",       "a/../../x", "/etc/passwd", "a\\..\\b",
                          "./../x",      "a/./../../b", "a//b",      "a/.",        ".",
                          "a/..",        "\\etc",      "C:\\x",     "/"};
  for (const char* p : corpus) {
    auto r = NormalizeArtifactPath(p, true);
    EXPECT_FALSE(r.ok()) << p;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << p;
  }
  EXPECT_FALSE(NormalizeArtifactPath(std::string("a\0b", 3), true).ok());
  EXPECT_FALSE(NormalizeArtifactPath("a\nb", true).ok());
  EXPECT_FALSE(NormalizeArtifactPath("", false).ok());
  EXPECT_FALSE(NormalizeArtifactPath("a/\xff.txt", false).ok());       // not UTF-8
  EXPECT_FALSE(NormalizeArtifactPath("a/\xc0\xaf", false).ok());        // overlong '/'
  EXPECT_FALSE(NormalizeArtifactPath("a/\xed\xa0\x80", false).ok());   // surrogate
  EXPECT_FALSE(NormalizeArtifactPath("a/\xe2\x82", false).ok());        // cut short
  EXPECT_TRUE(NormalizeArtifactPath("mod\xc3\xa8le/\xe2\x82\xac/\xf0\x9f\x93\x88.png", false).ok());
}

TEST(ArtifactPathTest, ProxyPathOfUri) {
  EXPECT_EQ(*ProxyPathOfUri("mlflow-artifacts:/1/r/artifacts"), "1/r/artifacts");
  EXPECT_EQ(*ProxyPathOfUri("mlflow-artifacts://host:5000/1/r/artifacts"), "1/r/artifacts");
  EXPECT_EQ(ProxyPathOfUri("s3://bucket/x").status().code(), StatusCode::kUnimplemented);
  EXPECT_FALSE(ProxyPathOfUri("mlflow-artifacts:/1/../../x").ok());
}

TEST(ArtifactServiceTest, OverwriteCollectsTheReplacedBlob) {
  auto store = store::NewMemoryMetadataStore({});
  auto blobs = blob::NewMemoryContentStore();
  ArtifactService svc(store.get(), blobs.get());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/a", "first").ok());
  std::string first = store->GetArtifact("1/r/artifacts/a")->digest;
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/a", "second").ok());
  EXPECT_FALSE(*blobs->Has(first));
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/a", "second").ok());  // same bytes: blob stays
  EXPECT_TRUE(*blobs->Has(store->GetArtifact("1/r/artifacts/a")->digest));
}

TEST(ArtifactServiceTest, ListRunFilesWalksTheRunsTreeWithDigests) {
  auto store = store::NewMemoryMetadataStore({});
  auto blobs = blob::NewMemoryContentStore();
  ArtifactService svc(store.get(), blobs.get());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/model/w.bin", "weights").ok());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/model/deep/x", "x").ok());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/log.txt", "log").ok());
  ASSERT_TRUE(svc.PutBytes("1/other/artifacts/not-mine", "no").ok());
  Result<std::vector<store::ArtifactFile>> files =
      svc.ListRunFiles("mlflow-artifacts:/1/r/artifacts", 10);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  std::map<std::string, std::string> by_path;
  for (const store::ArtifactFile& f : *files) by_path[f.path] = f.digest;
  EXPECT_EQ(by_path, (std::map<std::string, std::string>{{"log.txt", Sha256Hex("log")},
                                                         {"model/deep/x", Sha256Hex("x")},
                                                         {"model/w.bin", Sha256Hex("weights")}}));
  EXPECT_EQ(svc.ListRunFiles("mlflow-artifacts:/1/r/artifacts", 2).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(svc.ListRunFiles("s3://bucket/1/r", 10)->empty()) << "not on this server";
}

TEST(ArtifactServiceTest, CollectGarbageRemovesOnlyOldBlobsNothingNames) {
  auto store = store::NewMemoryMetadataStore({});
  auto blobs = blob::NewMemoryContentStore();  // its blobs carry no time: all count as old
  ArtifactService svc(store.get(), blobs.get());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/kept", "kept").ok());
  ASSERT_TRUE(blob::PutBytes(*blobs, "orphan").ok());
  auto dry = svc.CollectGarbage(0, /*dry_run=*/true, 1000);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->blobs, 2);
  EXPECT_EQ(dry->collected, 1);
  EXPECT_EQ(dry->bytes_freed, 6);
  EXPECT_TRUE(*blobs->Has(Sha256Hex("orphan")));
  auto young = svc.CollectGarbage(2000, false, 1000);  // written after now - grace
  ASSERT_TRUE(young.ok());
  EXPECT_EQ(young->collected, 0);
  EXPECT_EQ(young->in_grace, 1);
  auto done = svc.CollectGarbage(0, false, 1000);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->collected, 1);
  EXPECT_FALSE(*blobs->Has(Sha256Hex("orphan")));
  EXPECT_TRUE(*blobs->Has(Sha256Hex("kept")));
}

TEST(ArtifactServiceTest, UsageCountsFilesByTheirRootAndBlobsOnce) {
  auto store = store::NewMemoryMetadataStore({});
  auto blobs = blob::NewMemoryContentStore();
  ArtifactService svc(store.get(), blobs.get());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/a", "shared").ok());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/b", "12345678").ok());
  ASSERT_TRUE(svc.PutBytes("2/s/artifacts/a", "shared").ok());
  ASSERT_TRUE(store->PutArtifact({"models/m/1/w", Sha256Hex("12345678"), 8}).ok());
  ASSERT_TRUE(blob::PutBytes(*blobs, "orphan").ok());
  auto usage = svc.MeasureUsage();
  ASSERT_TRUE(usage.ok()) << usage.status().ToString();
  ASSERT_EQ(usage->by_root.size(), 3u);
  EXPECT_EQ(usage->by_root["1"].files, 2);
  EXPECT_EQ(usage->by_root["1"].bytes, 14);
  EXPECT_EQ(usage->by_root["2"].bytes, 6);
  EXPECT_EQ(usage->by_root["models"].files, 1);
  EXPECT_EQ(usage->blobs.files, 3);
  EXPECT_EQ(usage->blobs.bytes, 6 + 8 + 6);
  EXPECT_EQ(usage->unreferenced.files, 1);
  EXPECT_EQ(usage->unreferenced.bytes, 6);
}

TEST(ArtifactServiceTest, RefusedUploadLeavesNoBlob) {
  auto store = store::NewMemoryMetadataStore({});
  auto blobs = blob::NewMemoryContentStore();
  ArtifactService svc(store.get(), blobs.get());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/d/f", "in a directory").ok());
  Status s = svc.PutBytes("1/r/artifacts/d", "would hide the directory");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_FALSE(*blobs->Has(Sha256Hex("would hide the directory")));
}

TEST(ArtifactServiceTest, DeleteCollectsBlobsNoLongerReferenced) {
  auto store = store::NewMemoryMetadataStore({});
  auto blobs = blob::NewMemoryContentStore();
  ArtifactService svc(store.get(), blobs.get());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/a", "shared").ok());
  ASSERT_TRUE(svc.PutBytes("1/r/artifacts/b", "shared").ok());
  auto opened = svc.Open("1/r/artifacts/a");
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened->file_name, "a");
  EXPECT_EQ(opened->size, 6);
  std::string digest = store->GetArtifact("1/r/artifacts/a")->digest;
  ASSERT_TRUE(svc.Delete("1/r/artifacts/a").ok());
  EXPECT_TRUE(*blobs->Has(digest));  // still referenced by b
  ASSERT_TRUE(svc.Delete("1/r/artifacts").ok());
  EXPECT_FALSE(*blobs->Has(digest));
  EXPECT_EQ(svc.Open("1/r/artifacts/b").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace cairn::service
