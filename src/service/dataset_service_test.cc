#include "service/dataset_service.h"

#include <gtest/gtest.h>

#include "blob/memory/memory_store.h"
#include "fakes/fake_clock.h"
#include "store/memory/memory_store.h"
#include "util/hash.h"

namespace cairn::service {
namespace {

using core::FileEntry;
using core::kModeFile;

class DatasetServiceTest : public ::testing::Test {
 protected:
  DatasetServiceTest()
      : store_(store::NewMemoryMetadataStore({})),
        blobs_(blob::NewMemoryContentStore()),
        artifacts_(store_.get(), blobs_.get()),
        svc_(store_.get(), blobs_.get(), &artifacts_, nullptr, &clock_) {
    alice_.username = "alice";
    bob_.username = "bob";
  }

  // Stores `bytes` as `who` sending it would; returns the digest.
  std::string Send(const core::Principal& who, const std::string& bytes) {
    auto info = blob::PutBytes(*blobs_, bytes);
    EXPECT_TRUE(info.ok());
    EXPECT_TRUE(svc_.BlobSent(who.username, info->digest).ok());
    return info->digest;
  }
  // A manifest of files named by their contents; sent by `who` with the files when `send`.
  std::string Manifest(const core::Principal& who,
                       const std::vector<std::pair<std::string, std::string>>& files,
                       bool send_files = true) {
    std::vector<FileEntry> entries;
    for (const auto& [path, bytes] : files) {
      const std::string digest = send_files ? Send(who, bytes) : Sha256Hex(bytes);
      entries.push_back(FileEntry{path, static_cast<int64_t>(bytes.size()), kModeFile, digest});
    }
    return Send(who, core::ManifestJson(entries));
  }
  Result<CreatedDataVersion> Create(const core::Principal& who, const std::string& name,
                                    const std::string& digest, bool may_edit = true) {
    NewDataVersion req;
    req.name = name;
    req.digest = digest;
    req.message = "m";
    return svc_.CreateVersion(who, req, /*may_read=*/true, may_edit);
  }

  fakes::FakeClock clock_{1000};
  std::unique_ptr<store::MetadataStore> store_;
  std::unique_ptr<blob::ContentStore> blobs_;
  ArtifactService artifacts_;
  DatasetService svc_;
  core::Principal alice_;
  core::Principal bob_;
};

TEST_F(DatasetServiceTest, AVersionIsOneManifestRowAndItsFilesAreReadThroughIt) {
  const std::string m = Manifest(alice_, {{"a.csv", "1,2\n"}, {"sub/b.bin", "bb"}});
  auto v = Create(alice_, "mnist", m);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->version.version, 1);
  EXPECT_EQ(v->version.files, 2);
  EXPECT_EQ(v->version.bytes, 6);
  EXPECT_EQ(v->version.creator, "alice");
  EXPECT_EQ(v->version.digest, m);
  // The index holds the manifest only; the files are read through it.
  EXPECT_TRUE(store_->GetArtifact("datasets/mnist/" + m + ".json").ok());
  EXPECT_EQ(store_->GetArtifact("datasets/mnist/" + m + "/a.csv").status().code(),
            StatusCode::kNotFound);
  auto read = [&](const std::string& path) -> std::string {
    auto d = artifacts_.Open(path);
    if (!d.ok()) return "error: " + d.status().ToString();
    auto bytes = blob::ReadAllBytes(*d->reader, path);
    return bytes.ok() ? *bytes : "error: " + bytes.status().ToString();
  };
  EXPECT_EQ(read("datasets/mnist/" + m + "/a.csv"), "1,2\n");
  EXPECT_EQ(read("datasets/mnist/" + m + "/sub/b.bin"), "bb");
  for (const std::string& absent :
       {"datasets/mnist/" + m + "/sub", "datasets/mnist/" + m + "/nope",
        "datasets/other/" + m + "/a.csv", "datasets/mnist/" + std::string(64, 'a') + "/a.csv"}) {
    EXPECT_EQ(artifacts_.Open(absent).status().code(), StatusCode::kNotFound) << absent;
  }
  // Listed as if the files were rows: the version's directory beside its manifest.
  auto names = [&](const std::string& dir) {
    std::vector<std::string> out;
    auto entries = artifacts_.List(dir);
    EXPECT_TRUE(entries.ok()) << entries.status().ToString();
    if (entries.ok()) {
      for (const store::ArtifactEntry& e : *entries) {
        out.push_back(e.name + (e.is_dir ? "/" : ":" + std::to_string(e.size)));
      }
    }
    return out;
  };
  EXPECT_EQ(names("datasets/mnist"),
            (std::vector<std::string>{
                m + "/", m + ".json:" + std::to_string(blob::ReadAllBytes(*blobs_, m)->size())}));
  EXPECT_EQ(names("datasets/mnist/" + m), (std::vector<std::string>{"a.csv:4", "sub/"}));
  EXPECT_EQ(names("datasets/mnist/" + m + "/sub"), (std::vector<std::string>{"b.bin:2"}));
  EXPECT_TRUE(names("datasets/mnist/" + std::string(64, 'a')).empty());
  // Nothing a version names is collectable, also once the upload ledger forgot the blobs.
  auto gc = artifacts_.CollectGarbage(0, false, clock_.NowMillis() + 2 * kUploadLedgerMs);
  ASSERT_TRUE(gc.ok());
  EXPECT_EQ(gc->collected, 0);
  EXPECT_EQ(read("datasets/mnist/" + m + "/sub/b.bin"), "bb");
}

TEST_F(DatasetServiceTest, TheSameContentAgainAddsNoVersion) {
  const std::string m = Manifest(alice_, {{"a", "x"}});
  ASSERT_TRUE(Create(alice_, "d", m).ok());
  auto again = Create(alice_, "d", m);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->unchanged);
  EXPECT_EQ(again->version.version, 1);
  auto next = Create(alice_, "d", Manifest(alice_, {{"a", "y"}}));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->version.version, 2);
  EXPECT_EQ(next->version.parent, 1);
}

TEST_F(DatasetServiceTest, ABlobKnownOnlyByItsDigestCannotBeNamed) {
  // Alice's secret is on the server, as another dataset's file.
  ASSERT_TRUE(Create(alice_, "private", Manifest(alice_, {{"secret", "s3cr3t"}})).ok());
  // Bob names it in a manifest he sends, without sending the file.
  const std::string m = Manifest(bob_, {{"stolen", "s3cr3t"}}, /*send_files=*/false);
  auto v = Create(bob_, "mine", m);
  EXPECT_EQ(v.status().code(), StatusCode::kFailedPrecondition) << v.status().ToString();
  EXPECT_NE(v.status().message().find(Sha256Hex("s3cr3t")), std::string::npos);
  // And the server tells him to send it, though it holds it.
  auto missing = svc_.MissingBlobs("bob", "mine", true, {Sha256Hex("s3cr3t")});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->size(), 1u);
  // Sending the bytes proves he has them.
  Send(bob_, "s3cr3t");
  EXPECT_TRUE(Create(bob_, "mine", m).ok());
}

TEST_F(DatasetServiceTest, ALatestVersionsBlobsNeedNotBeSentAgain) {
  const std::string m1 = Manifest(alice_, {{"a", "aaa"}, {"b", "bbb"}});
  ASSERT_TRUE(Create(alice_, "d", m1).ok());
  // Bob may read and edit the dataset: its files count as his to name.
  auto missing = svc_.MissingBlobs("bob", "d", true, {Sha256Hex("aaa"), Sha256Hex("new")});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(*missing, std::vector<std::string>{Sha256Hex("new")});
  // Without read permission, they do not.
  auto blind = svc_.MissingBlobs("bob", "d", false, {Sha256Hex("aaa")});
  ASSERT_TRUE(blind.ok());
  EXPECT_EQ(blind->size(), 1u);
  const std::string m2 = Manifest(bob_, {{"a", "aaa"}, {"c", "new"}}, false);
  Send(bob_, "new");
  auto v2 = Create(bob_, "d", m2);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->version.version, 2);
}

TEST_F(DatasetServiceTest, AddingToAnotherOnesDatasetNeedsEdit) {
  ASSERT_TRUE(Create(alice_, "d", Manifest(alice_, {{"a", "1"}})).ok());
  auto v = Create(bob_, "d", Manifest(bob_, {{"a", "2"}}), /*may_edit=*/false);
  EXPECT_EQ(v.status().code(), StatusCode::kPermissionDenied);
}

TEST_F(DatasetServiceTest, RefusesBadNamesDigestsAndManifests) {
  EXPECT_EQ(Create(alice_, "../x", Sha256Hex("m")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Create(alice_, "d", "abc").status().code(), StatusCode::kInvalidArgument);
  const std::string not_manifest = Send(alice_, "{\"files\": 3}");
  EXPECT_EQ(Create(alice_, "d", not_manifest).status().code(), StatusCode::kInvalidArgument);
  const std::string link =
      Send(alice_, core::ManifestJson({FileEntry{"l", 3, core::kModeSymlink, Sha256Hex("abc")}}));
  Send(alice_, "abc");
  auto v = Create(alice_, "d", link);
  EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v.status().message().find("symbolic link"), std::string::npos);
  auto many = svc_.MissingBlobs("alice", "d", true, {"not-a-digest"});
  EXPECT_EQ(many.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DatasetServiceTest, ASentBlobIsKeptWhileTheLedgerRemembersIt) {
  const std::string d = Send(alice_, "sent, not yet named");
  const int64_t hour = 3'600'000;
  auto soon = artifacts_.CollectGarbage(0, false, clock_.NowMillis() + hour);
  ASSERT_TRUE(soon.ok());
  EXPECT_EQ(soon->collected, 0);
  EXPECT_TRUE(*blobs_->Has(d));
  // A day later the ledger forgets it, and nothing names it.
  auto later = artifacts_.CollectGarbage(0, false, clock_.NowMillis() + 25 * hour);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->collected, 1);
  EXPECT_FALSE(*blobs_->Has(d));
}

TEST_F(DatasetServiceTest, ADeletedBlobIsMissingAgain) {
  const std::string d = Send(alice_, "gone");
  ASSERT_TRUE(blobs_->Delete(d).ok());
  auto missing = svc_.MissingBlobs("alice", "x", true, {d});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->size(), 1u);
}

}  // namespace
}  // namespace cairn::service
