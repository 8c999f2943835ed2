#include "service/store_check.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "blob/local/local_store.h"
#include "core/tree_manifest.h"
#include "store/memory/memory_store.h"
#include "util/hash.h"

namespace cairn::service {
namespace {

namespace fs = std::filesystem;

class StoreCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cairn-store-check-" + RandomHex(8));
    blobs_ = std::move(blob::OpenLocalContentStore(dir_.string()).value());
    metadata_ = store::NewMemoryMetadataStore({});
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A file of the artifact index with its blob.
  std::string Put(const std::string& path, const std::string& bytes) {
    blob::BlobInfo info = blob::PutBytes(*blobs_, bytes).value();
    EXPECT_TRUE(metadata_->PutArtifact({path, info.digest, info.size}).ok());
    return info.digest;
  }
  // Overwrites byte `at` of a small blob where the local store keeps it, its database
  // (docs/formats/content-store.md), as a failing disk might.
  void Damage(const std::string& digest, int at, char byte) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "small.db").c_str(), &db), SQLITE_OK);
    const std::string sql =
        "UPDATE contents SET bytes = CAST(substr(bytes, 1, " + std::to_string(at) + ") || x'" +
        HexEncode(std::string(1, byte)) + "' || substr(bytes, " + std::to_string(at + 2) +
        ") AS BLOB) WHERE id = (SELECT content " + "FROM blobs WHERE digest = '" + digest + "')";
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_changes(db), 1);
    sqlite3_close(db);
  }

  fs::path dir_;
  std::unique_ptr<blob::ContentStore> blobs_;
  std::unique_ptr<store::MetadataStore> metadata_;
};

TEST_F(StoreCheckTest, StoresThatAgreeAreOk) {
  Put("1/r/artifacts/a", "alpha");
  Put("1/r/artifacts/b", "alpha");  // one blob, two files
  Put("models/m/1/w", "weights");
  ASSERT_TRUE(blob::PutBytes(*blobs_, "nobody's").ok());
  std::vector<std::string> phases;
  StoreCheckOptions options;
  options.progress = [&](const StoreCheckProgress& p) { phases.push_back(p.phase); };
  Result<StoreCheck> check = CheckStores(*metadata_, *blobs_, options);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_TRUE(check->ok());
  EXPECT_EQ(check->blobs, 3);
  EXPECT_EQ(check->bytes, 5 + 7 + 8);
  EXPECT_EQ(check->references, 3);
  EXPECT_EQ(check->unreferenced, 1);
  EXPECT_EQ(check->unreferenced_bytes, 8);
  EXPECT_EQ(phases.back(), "references") << "the end of each phase is reported";
}

TEST_F(StoreCheckTest, AFlippedByteAMissingBlobAndAWrongSizeAreFound) {
  const std::string flipped = Put("1/r/artifacts/model.bin", "weights of a model");
  const std::string gone = Put("1/r/artifacts/gone.txt", "deleted behind the index's back");
  Put("1/r/artifacts/ok.txt", "fine");
  ASSERT_TRUE(metadata_->PutArtifact({"1/r/artifacts/short.txt", Sha256Hex("fine"), 99}).ok());
  Damage(flipped, 3, 'W');
  ASSERT_TRUE(blobs_->Delete(gone).ok());  // behind the index's back

  Result<StoreCheck> check = CheckStores(*metadata_, *blobs_);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_FALSE(check->ok());
  ASSERT_EQ(check->corrupt.size(), 1u);
  EXPECT_EQ(check->corrupt[0].digest, flipped);
  EXPECT_EQ(check->corrupt[0].what, "its bytes hash to " + Sha256Hex("weiWhts of a model"));
  ASSERT_EQ(check->missing.size(), 3u);  // in path order
  EXPECT_EQ(check->missing[0].file.path, "1/r/artifacts/gone.txt");
  EXPECT_EQ(check->missing[0].what, "no such blob");
  EXPECT_EQ(check->missing[1].file.path, "1/r/artifacts/model.bin");
  EXPECT_EQ(check->missing[1].what, "its blob is corrupt");
  EXPECT_EQ(check->missing[2].file.path, "1/r/artifacts/short.txt");
  EXPECT_EQ(check->missing[2].what, "the blob holds 4 bytes, the index says 99");
  EXPECT_EQ(check->references, 4);
}

TEST_F(StoreCheckTest, ADatasetVersionsFilesAreCheckedThroughItsManifest) {
  // A version as the dataset service records it: its manifest in the index, its files' blobs
  // noted among the dataset blobs.
  const blob::BlobInfo a = blob::PutBytes(*blobs_, "alpha").value();
  const std::string gone = Sha256Hex("never stored");
  const std::string manifest = core::ManifestJson(
      {{"a.csv", 5, core::kModeFile, a.digest}, {"b.csv", 12, core::kModeFile, gone}});
  const std::string m = Put("datasets/d/" + Sha256Hex(manifest) + ".json", manifest);
  ASSERT_TRUE(metadata_->datasets().NoteDataBlobs({a.digest, gone}).ok());
  const std::string not_manifest = Put("datasets/e/" + Sha256Hex("{}") + ".json", "{}");

  Result<StoreCheck> check = CheckStores(*metadata_, *blobs_);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_EQ(check->references, 4);  // two manifests, two files
  EXPECT_EQ(check->unreferenced, 0);
  ASSERT_EQ(check->missing.size(), 2u);
  EXPECT_EQ(check->missing[0].file.path, "datasets/d/" + m + "/b.csv");
  EXPECT_EQ(check->missing[0].what, "no such blob");
  EXPECT_EQ(check->missing[1].file.path, "datasets/e/" + not_manifest + ".json");
  EXPECT_NE(check->missing[1].what.find("its files cannot be listed"), std::string::npos)
      << check->missing[1].what;
}

TEST_F(StoreCheckTest, ABlobADatasetNotesIsNotUnreferenced) {
  const blob::BlobInfo kept = blob::PutBytes(*blobs_, "a dataset's file").value();
  ASSERT_TRUE(blob::PutBytes(*blobs_, "nobody's").ok());
  ASSERT_TRUE(metadata_->datasets().NoteDataBlobs({kept.digest}).ok());
  Result<StoreCheck> check = CheckStores(*metadata_, *blobs_);
  ASSERT_TRUE(check.ok()) << check.status().ToString();
  EXPECT_TRUE(check->ok());
  EXPECT_EQ(check->unreferenced, 1);
  EXPECT_EQ(check->unreferenced_bytes, 8);
}

}  // namespace
}  // namespace cairn::service
