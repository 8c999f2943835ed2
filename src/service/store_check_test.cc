#include "service/store_check.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "blob/local/local_store.h"
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

}  // namespace
}  // namespace cairn::service
